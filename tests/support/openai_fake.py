"""A loopback OpenAI-compatible server for adapter tests: GET /v1/models and
POST /v1/chat/completions, answered like llama.cpp's server (including its 400
`exceed_context_size_error`), with an optional API key that it echoes in its 401 (as hosted APIs
do, so tests can prove the adapter scrubs it), and scripted answers that take precedence: a
(status, JSON or text) pair, or a `RawReply` written as it is (any headers, a gzip bomb, an
endless chunked body). `ignores_model` answers like llama.cpp's server, which lists only its
alias and answers any model name with the model it serves; `rewrite` changes each answer (a
server echoing a key in its fields).

    with FakeOpenAI(api_key="sk-test") as server:
        server.script.append((503, {"error": {"message": "loading model"}}))
        ...  # server.base_url ends in /v1; server.requests holds every request
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
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


@dataclass(frozen=True)
class RawReply:
    """An answer as it goes on the wire: `body` whole (with Content-Length), or `chunks` with
    Transfer-Encoding: chunked (an endless iterable is an endless body, written until the
    client hangs up). `sent` counts the body bytes written."""

    status: int
    headers: Sequence[tuple[str, str]] = ()
    body: bytes = b""
    chunks: Iterable[bytes] | None = None
    sent: list[int] = field(default_factory=lambda: [0])


Scripted = tuple[int, Any] | RawReply


@dataclass
class FakeOpenAI:
    models: Sequence[str] | None = ("local-model",)  # None: GET /v1/models answers 404
    api_key: str | None = None
    answer: Answer = echo_answer
    n_ctx: int = 4096
    ignores_model: bool = False  # llama.cpp: any model name gets models[0]
    rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None  # of each completion
    script: list[Scripted] = field(default_factory=list)  # before anything else
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

    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> Scripted:
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
            status, answer = self._complete(body)
            return status, self.rewrite(answer) if self.rewrite and status == 200 else answer
        return 404, _error(f"File Not Found: {path}", "not_found_error")

    def _complete(self, body: dict[str, Any]) -> tuple[int, Any]:
        served = self.models[0] if self.ignores_model and self.models else f"{body['model']}-q4"
        if self.models is not None and not self.ignores_model and body["model"] not in self.models:
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
            "model": served,
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
        scripted = fake.handle(self.command, self.path, headers, json.loads(raw or b"null"))
        if isinstance(scripted, RawReply):
            self._write_raw(scripted)
            return
        status, value = scripted
        data = value.encode() if isinstance(value, str) else json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _write_raw(self, reply: RawReply) -> None:
        self.close_connection = True
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        if reply.chunks is None:
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            reply.sent[0] += len(reply.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.chunks:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                reply.sent[0] += len(chunk)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:  # the client hung up: the end of an endless body
            pass
