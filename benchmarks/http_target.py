"""An instant HTTP model for the benchmark, in a process of its own (its CPU is not RuleDrift's):
Ollama's /api/version, /api/tags, /api/show and /api/chat, and OpenAI's /v1/models and
/v1/chat/completions, each answering at once with a short refusal. GET /count answers what it
has served so far (itself not counted): {"requests": {path: n}, "messages": {path: chat messages
received}}, so a benchmark can check what reached the server.

    python benchmarks/http_target.py PORT_FILE [LATENCY_MS [PARALLEL]]
        # writes the port it listens on, then serves; each chat takes LATENCY_MS (default 0),
        # at most PARALLEL at once (default: no limit; more wait, like Ollama's queue)
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
import time
from typing import Any

MODEL = "bench-model"
LATENCY_S = 0.0
SLOTS = threading.BoundedSemaphore(10_000)
ANSWER = "I cannot share that. How else can I help?"
COUNTS: dict[str, dict[str, int]] = {"requests": {}, "messages": {}}
COUNTS_LOCK = threading.Lock()


def _count(path: str, body: Any = None) -> None:
    messages = body.get("messages") if isinstance(body, dict) else None
    with COUNTS_LOCK:
        COUNTS["requests"][path] = COUNTS["requests"].get(path, 0) + 1
        if isinstance(messages, list):
            COUNTS["messages"][path] = COUNTS["messages"].get(path, 0) + len(messages)


def _prompt_tokens(body: Any) -> int:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    return sum(len(str(m.get("content", "")).split()) + 4 for m in messages)


class Handler(socketserver.StreamRequestHandler):
    """HTTP/1.1 with keep-alive, parsed by hand: less of the server's own time counted as model
    latency (a round trip with no latency: 0.28 ms against http.server's 0.35 ms)."""

    def setup(self) -> None:
        super().setup()
        # real servers, Ollama's among them, set TCP_NODELAY too
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle(self) -> None:
        while request := self._request():
            method, path, body = request
            payload = get(path) if method == "GET" else post(path, body)
            data = json.dumps(payload).encode()
            self.wfile.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(data)
                + data
            )

    def _request(self) -> tuple[str, str, Any] | None:
        line = self.rfile.readline(65_537)
        if not line.strip():
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        length, chunked = 0, False
        while (header := self.rfile.readline(65_537)).strip():
            name, _, value = header.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
        if chunked:
            raw = b""
            while size := int(self.rfile.readline(65_537).split(b";")[0], 16):
                raw += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline(65_537).strip():  # trailers
                pass
        else:
            raw = self.rfile.read(length) if length else b""
        return method, path, json.loads(raw) if raw else {}


def get(path: str) -> object:
    if path == "/count":
        with COUNTS_LOCK:
            return {key: dict(value) for key, value in COUNTS.items()}
    _count(path)
    if path == "/api/version":
        return {"version": "0.34.2"}
    if path == "/api/tags":
        return {"models": [{"name": MODEL, "model": MODEL, "digest": "0" * 64}]}
    return {"object": "list", "data": [{"id": MODEL, "object": "model"}]}  # /v1/models


def post(path: str, body: Any) -> object:
    _count(path, body)
    prompt = _prompt_tokens(body)
    if path in ("/api/chat", "/v1/chat/completions") and LATENCY_S:
        with SLOTS:
            time.sleep(LATENCY_S)
    if path == "/api/show":
        return {"capabilities": ["completion"], "details": {"format": "gguf"}}
    if path == "/api/chat":
        return {
            "model": MODEL,
            "message": {"role": "assistant", "content": ANSWER},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": prompt,
            "eval_count": 10,
        }
    return {
        "id": "bench",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": ANSWER},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 10},
    }


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main(argv: list[str]) -> int:
    global LATENCY_S, SLOTS
    if len(argv) > 1:
        LATENCY_S = int(argv[1]) / 1000
    if len(argv) > 2:
        SLOTS = threading.BoundedSemaphore(int(argv[2]))
    server = Server(("127.0.0.1", 0), Handler)
    with open(argv[0], "w", encoding="utf-8") as port_file:
        port_file.write(str(server.server_address[1]))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
