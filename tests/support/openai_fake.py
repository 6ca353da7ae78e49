"""A loopback OpenAI-compatible server for adapter tests: GET /v1/models and
POST /v1/chat/completions, answered like llama.cpp's server (including its 400
`exceed_context_size_error`), with an optional API key that it echoes in its 401 (as hosted APIs
do, so tests can prove the adapter scrubs it), and scripted answers that take precedence: a
(status, JSON or text) pair, or a `RawReply` written as it is (any headers, a gzip bomb, an
endless chunked body). `ignores_model` answers like llama.cpp's server, which lists only its
alias and answers any model name with the model it serves; `rewrite` changes each answer (a
server echoing a key in its fields).

Tools: a scripted `ToolAnswer` asks for tool calls (`FakeCall`: parallel calls, ids given, made
up by the server or absent, arguments as a string, as an object or bad JSON, or any entry sent
as it is), and `act` makes the fake a model that uses tools: given each request that offers
tools, it returns the calls to ask for (none: the text answer). A request that breaks OpenAI's
rules for tools is refused with HTTP 400 as OpenAI refuses it, before any scripted answer: a
malformed `tools` entry, a `tool_choice` without tools or naming no offered tool, an assistant
message whose `tool_calls` lack an id or string arguments, a call not answered by a `tool`
message, or a `tool` message that answers no call.

    with FakeOpenAI(api_key="sk-test") as server:
        server.script.append((503, {"error": {"message": "loading model"}}))
        server.script.append(ToolAnswer([FakeCall("refund", '{"amount": 250}')]))
        ...  # server.base_url ends in /v1; server.requests holds every request
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
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


class Id(Enum):
    AUTO = "auto"  # the server numbers the call (`call_1`, `call_2`, … over its life), as OpenAI
    ABSENT = "absent"  # no `id` field, as Ollama-style servers answer


@dataclass(frozen=True)
class FakeCall:
    """A tool call a fake answer asks for. `arguments`: a string is sent as it is (OpenAI's
    shape; it may be bad JSON), any other value as that JSON value (an object, as some servers
    send). `id`: `Id.AUTO`, `Id.ABSENT`, or any value sent as it is (a string, 7, None)."""

    name: str
    arguments: Any = "{}"
    id: Any = Id.AUTO


@dataclass(frozen=True)
class ToolAnswer:
    """A scripted answer that asks for `calls` (a `FakeCall`, or any entry sent as it is: a
    malformed one), with `content` (null by default, as OpenAI sends it) and `finish`."""

    calls: Sequence[FakeCall | Any]
    content: str | None = None
    finish: str = "tool_calls"


Scripted = tuple[int, Any] | RawReply | ToolAnswer
Act = Callable[[dict[str, Any]], Sequence[FakeCall]]
CHOICE_WORDS = ("auto", "none", "required")


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
    # A model that uses tools: the calls to ask for, given a request that offers tools (not
    # asked when `tool_choice` is "none"); no calls: the text answer.
    act: Act | None = None
    ids: int = 0  # the call ids the server made up (Id.AUTO) so far

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

    def messages(self, chat: int = -1) -> list[dict[str, Any]]:
        """The messages of a chat request (the latest by default), as sent."""
        return list(self.chats()[chat]["messages"])

    def handle(self, method: str, path: str, headers: dict[str, str], body: Any) -> Scripted:
        self.requests.append(RecordedRequest(method, path, headers, body))
        if (method, path) == ("POST", "/v1/chat/completions") and isinstance(body, dict):
            problem = tool_problem(body)
            if problem is not None:
                return 400, _error(problem, "invalid_request_error")
        if self.script:
            scripted = self.script.pop(0)
            return self.tool_answer(scripted) if isinstance(scripted, ToolAnswer) else scripted
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
        prompt = count_prompt(counted(messages))
        if prompt > self.n_ctx:
            error = _error(
                f"request ({prompt} tokens) exceeds the available context size "
                f"({self.n_ctx} tokens), try increasing it",
                "exceed_context_size_error",
            )
            error["error"] |= {"code": 400, "n_prompt_tokens": prompt, "n_ctx": self.n_ctx}
            return 400, error
        calls = self._calls(body)
        if calls:
            return self.tool_answer(ToolAnswer(calls), served, prompt)
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

    def _calls(self, body: dict[str, Any]) -> Sequence[FakeCall]:
        if self.act is None or not body.get("tools") or body.get("tool_choice") == "none":
            return ()
        return self.act(body)

    def tool_answer(
        self, scripted: ToolAnswer, model: str = "local-model", prompt: int = 10
    ) -> tuple[int, Any]:
        """The completion of a ToolAnswer: its calls as OpenAI sends them."""
        calls = [self._wire_call(c) if isinstance(c, FakeCall) else c for c in scripted.calls]
        message = {"role": "assistant", "content": scripted.content, "tool_calls": calls}
        return 200, {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": scripted.finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 1 + len(calls)},
        }

    def _wire_call(self, call: FakeCall) -> dict[str, Any]:
        entry: dict[str, Any] = {}
        if call.id is Id.AUTO:
            self.ids += 1
            entry["id"] = f"call_{self.ids}"
        elif call.id is not Id.ABSENT:
            entry["id"] = call.id
        function = {"name": call.name, "arguments": call.arguments}
        return entry | {"type": "function", "function": function}


def counted(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the prompt counts them: a null content is no text, and an assistant's calls
    are rendered as their names and arguments."""
    view = []
    for message in messages:
        text = message.get("content") or ""
        for call in message.get("tool_calls") or ():
            function = call.get("function", {}) if isinstance(call, dict) else {}
            text += f" {function.get('name', '')} {function.get('arguments', '')}"
        view.append({"role": message.get("role"), "content": text})
    return view


def tool_problem(body: dict[str, Any]) -> str | None:
    """Why OpenAI would refuse this request's tool fields or tool messages (its words), or None."""
    tools = body.get("tools")
    names = []
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or tool.get("type") != "function":
            return 'Invalid value for \'tools\': each tool must be {"type": "function", ...}'
        if not isinstance(function.get("name"), str) or "parameters" not in function:
            return "Missing required parameter: 'tools[].function.name' or 'parameters'"
        names.append(function["name"])
    if tools is not None and not (isinstance(tools, list) and tools):
        return "Invalid 'tools': empty array. Expected an array with minimum length 1."
    return _choice_problem(body, names) or _pairing_problem(body.get("messages", []))


def _choice_problem(body: dict[str, Any], names: list[str]) -> str | None:
    if "tool_choice" not in body:
        return None
    choice = body["tool_choice"]
    if not names:
        return (
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified."
        )
    if choice in CHOICE_WORDS:
        return None
    named = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or choice.get("type") != "function" or named not in names:
        return "Invalid value for 'tool_choice': no function of that name in 'tools'."
    return None


def _pairing_problem(messages: list[Any]) -> str | None:
    """OpenAI's pairing rule: the calls of an assistant message are each answered by a `tool`
    message right after it, and a `tool` message answers a call of the one before it."""
    waiting: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                return (
                    "Invalid parameter: messages with role 'tool' must be a response to a "
                    "preceeding message with 'tool_calls'."
                )
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(waiting)}"
            )
        if role == "assistant" and message.get("tool_calls"):
            problem = _calls_problem(message["tool_calls"])
            if problem is not None:
                return problem
            waiting = [call["id"] for call in message["tool_calls"]]
    if waiting:
        return f"The following tool_call_ids did not have response messages: {', '.join(waiting)}"
    return None


def _calls_problem(calls: list[Any]) -> str | None:
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(call.get("id"), str):
            return f"Missing required parameter: 'messages[].tool_calls[{index}].id'."
        if not isinstance(function.get("arguments"), str):
            return (
                f"Invalid type for 'messages[].tool_calls[{index}].function.arguments': "
                "expected a string."
            )
    return None


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
        assert not isinstance(scripted, ToolAnswer)  # handle() sends it as JSON
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
