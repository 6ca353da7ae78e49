"""A loopback HTTP server that answers every request with the same bytes, whatever they are (a
header no parser should accept, a status line from nowhere), and records each request's head.

    with RawServer(b"HTTP/1.1 200 OK\\r\\nContent-Length: \\xb2\\r\\n\\r\\nok") as server:
        ...  # server.url is http://127.0.0.1:PORT; server.heads holds the request heads
"""

from __future__ import annotations

import socket
import socketserver
import threading


class RawServer:
    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.heads: list[bytes] = []
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                connection: socket.socket = self.request
                received = b""
                while b"\r\n\r\n" not in received:
                    data = connection.recv(65_536)
                    if not data:
                        return
                    received += data
                owner.heads.append(received.partition(b"\r\n\r\n")[0])
                connection.sendall(owner.answer)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RawServer:
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
