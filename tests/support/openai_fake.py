"""A loopback OpenAI-compatible server for adapter tests: GET /v1/models and
POST /v1/chat/completions, answered like llama.cpp's server (including its 400
`exceed_context_size_error`), with an optional API key that it echoes in its 401 (as hosted APIs
do, so tests can prove the adapter scrubs it), and scripted answers that take precedence.

    with FakeOpenAI(api_key="sk-test") as server:
        server.script.append((503, {"error": {"message": "loading model"}}))
        ...  # server.base_url ends in /v1; server.requests holds every request
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.ollama_fake.server import (
    Answer,
    RecordedRequest,
    count_prompt,
    echo_answer,
    tokens,
)


@dataclass
class FakeOpenAI:
    models: Sequence[str] | None = ("local-model",)  # None: GET /v1/models answers 404
    api_key: str | None = None
    answer: Answer = echo_answer
    n_ctx: int = 4096
    script: list[tuple[int, Any]] = field(default_factory=list)  # (status, JSON or raw text)
    requests: list[RecordedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.fake = self  # type: ignore[attr-defined]

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def chats(self) -> list[Any]:
        return [r.body for r in self.requests if r.path == "/v1/chat/completions"]

    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[int, Any]:
        self.requests.append(RecordedRequest(method, path, headers, body))
        if self.script:
            return self.script.pop(0)
        if self.api_key is not None and headers.get("authorization") != f"Bearer {self.api_key}":
            given = headers.get("authorization", "").removeprefix("Bearer ")
            return 401, _error(f"Incorrect API key provided: {given}", "invalid_request_error")
        if (method, path) == ("GET", "/v1/models") and self.models is not None:
            return 200, {
                "object": "list",
                "data": [{"id": m, "object": "model"} for m in self.models],
            }
        if (method, path) == ("POST", "/v1/chat/completions"):
            return self._complete(body)
        return 404, _error(f"File Not Found: {path}", "not_found_error")

    def _complete(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.models is not None and body.get("model") not in self.models:
            return 404, _error(f"The model `{body.get('model')}` does not exist", "not_found_error")
        messages = body["messages"]
        prompt = count_prompt(messages)
        if prompt > self.n_ctx:
            error = _error(
                f"request ({prompt} tokens) exceeds the available context size "
                f"({self.n_ctx} tokens), try increasing it",
                "exceed_context_size_error",
            )
            error["error"] |= {"code": 400, "n_prompt_tokens": prompt, "n_ctx": self.n_ctx}
            return 400, error
        content, finish = self.answer(messages), "stop"
        limit = body.get("max_tokens")
        if isinstance(limit, int) and len(tokens(content)) > limit:
            content, finish = " ".join(tokens(content)[:limit]), "length"
        completion = len(tokens(content))
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": f"{body['model']}-q4",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _error(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake: FakeOpenAI = self.server.fake  # type: ignore[attr-defined]
        status, value = fake.handle(self.command, self.path, headers, json.loads(raw or b"null"))
        data = value.encode() if isinstance(value, str) else json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
