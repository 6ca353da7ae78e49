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
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without this, Nagle's algorithm holds the body
        # back until the client acknowledges the headers, which it delays by up to 40 ms (real
        # servers, Ollama's among them, set TCP_NODELAY too)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path == "/count":
            with COUNTS_LOCK:
                counts = {key: dict(value) for key, value in COUNTS.items()}
            self._send(counts)
            return
        _count(self.path)
        if self.path == "/api/version":
            self._send({"version": "0.34.2"})
        elif self.path == "/api/tags":
            self._send({"models": [{"name": MODEL, "model": MODEL, "digest": "0" * 64}]})
        else:  # /v1/models
            self._send({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        _count(self.path, body)
        prompt = _prompt_tokens(body)
        if self.path in ("/api/chat", "/v1/chat/completions") and LATENCY_S:
            with SLOTS:
                time.sleep(LATENCY_S)
        if self.path == "/api/show":
            self._send({"capabilities": ["completion"], "details": {"format": "gguf"}})
        elif self.path == "/api/chat":
            self._send(
                {
                    "model": MODEL,
                    "message": {"role": "assistant", "content": ANSWER},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": prompt,
                    "eval_count": 10,
                }
            )
        else:
            self._send(
                {
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
            )


def main(argv: list[str]) -> int:
    global LATENCY_S, SLOTS
    if len(argv) > 1:
        LATENCY_S = int(argv[1]) / 1000
    if len(argv) > 2:
        SLOTS = threading.BoundedSemaphore(int(argv[2]))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(argv[0], "w", encoding="utf-8") as port_file:
        port_file.write(str(server.server_address[1]))
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
