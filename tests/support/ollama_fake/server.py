"""A loopback Ollama for tests, written to Ollama's contract as read from its source: see
CONTRACT.md beside this file for what it follows, from which source files and versions.

`FakeOllama` is a real HTTP/1.1 server on 127.0.0.1 (keep-alive, chunked NDJSON streaming) that
answers like `ollama serve`: /api/chat (streaming by default), /api/tags, /api/version,
/api/show, /api/pull, `GET|HEAD /`. It records every request, and it misbehaves on demand:

    with FakeOllama(num_ctx=64) as server:
        server.add_fault(Fault(status=503, times=2))   # the next two /api/chat answer 503
        server.latency_s = 0.2                         # every chat generation takes 0.2 s
        ...                                            # server.base_url, server.chats()

Tokens: one per word or punctuation mark; a message renders as TEMPLATE_TOKENS around its words,
and GENERATION_TOKENS open the answer (`prompt_tokens`, `count_prompt`). When a prompt exceeds
`num_ctx` (options.num_ctx, default `FakeOllama.num_ctx`), whole messages are dropped from the
front until it fits (system messages stay), silently (`truncate` true or omitted), or the request
fails with 400 (`truncate: false`, from v0.12.6 on). The `version` decides what the server does,
as the real releases do: before 0.12.6 `truncate` and `shift` are ignored, before 0.22.0
`"think": "max"` is refused, and 0.30.0 reports in `prompt_eval_count` only the prompt tokens its
prefix cache did not hold.

Tools: a request's `tools` need a model with the `tools` capability (every family but gemma3, or
`FakeModel(tools=…)`), else 400 `<full name> does not support tools`. The model's calls come
from `tool_calls(messages, tools)` (default `calls_from_prompt`: each `call NAME {json}` line of
the last user message); it answers them as Ollama does: `content` "", `message.tool_calls`
`[{"id"?, "function": {"index", "name", "arguments": {…}}}]`, the `id` only from v0.12.10 on
(`call_ids` overrides the version).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

DEFAULT_VERSION = "0.34.2"  # the release the image ships (Dockerfile): its fakes speak it
TRUNCATE_SINCE = (0, 12, 6)  # `truncate` and `shift` honoured
THINK_MAX_SINCE = (0, 22, 0)  # `"think": "max"` accepted
NEW_TOKENS_ONLY = (0, 30, 0)  # prompt_eval_count without the cached prefix (fixed in 0.30.1)
CALL_IDS_SINCE = (0, 12, 10)  # tool calls carry an `id` (809b9c68f, "Add Tool Call ID")
BUSY = "server busy, please try again.  maximum pending requests exceeded"
RUNNER_STOPPED = (
    "model runner has unexpectedly stopped, this may be due to resource limitations or an "
    "internal error, check ollama server logs for details"
)
PULL_MISSING = "pull model manifest: file does not exist"
SHIFT_OVERFLOW = (
    "the prompt is longer than the context length currently available to the model; shorten "
    "the prompt, adjust the context length in settings, or use a model with a longer context "
    "length"
)
TEMPLATE_TOKENS = 4  # per message: `<|start|>`, the role, `<|sep|>` … `<|end|>`
GENERATION_TOKENS = 3  # `<|start|>`, `assistant`, `<|sep|>`: the header that opens the answer
THINKING_FAMILIES = ("qwen3", "deepseek-r1", "gpt-oss", "magistral")
NO_TOOLS_FAMILIES = ("gemma3",)  # their templates never mention tools
CATALOGUE = ("qwen3:1.7b", "qwen3:0.6b", "llama3.2:1b", "smollm2:135m", "gemma3:270m")
THINK_LEVELS = ("low", "medium", "high", "max")
# The JSON type each option must have (api.Options), and Ollama's word for it in its HTTP 500.
OPTION_TYPES = {
    **dict.fromkeys(
        (
            "num_ctx",
            "num_batch",
            "num_gpu",
            "main_gpu",
            "num_thread",
            "draft_num_predict",
            "num_keep",
            "seed",
            "num_predict",
            "top_k",
            "repeat_last_n",
        ),
        "integer",
    ),
    **dict.fromkeys(
        (
            "top_p",
            "min_p",
            "typical_p",
            "temperature",
            "repeat_penalty",
            "presence_penalty",
            "frequency_penalty",
        ),
        "float32",
    ),
    "use_mmap": "boolean",
    "stop": "array",
}
_TOKEN = re.compile(r"\w+|[^\w\s]")
Messages = Sequence[Mapping[str, Any]]
Answer = Callable[[Messages], str]
Tools = Sequence[Mapping[str, Any]]
# The calls a model makes, given what it sees and the tools offered: (name, arguments) pairs,
# the arguments sent as they are (an object, as Ollama sends them); none: it answers in text.
ToolCalls = Callable[[Messages, Tools], Sequence[tuple[str, Any]]]
_CALL_LINE = re.compile(r"^call ([\w.-]+) (\{.*\})\s*$", re.MULTILINE)


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def render(message: Mapping[str, Any]) -> list[str]:
    """A message's tokens in the prompt: its words (and its tool calls' words) inside
    TEMPLATE_TOKENS markers."""
    words = tokens(str(message.get("content", "")))
    words += [word for call in message.get("tool_calls") or () for word in call_tokens(call)]
    return ["<|start|>", str(message.get("role")), "<|sep|>", *words, "<|end|>"]


def call_tokens(call: Mapping[str, Any]) -> list[str]:
    """A tool call's tokens, as a template writes it and as the model generates it."""
    function = call.get("function") or {}
    return tokens(f"{function.get('name')} {json.dumps(function.get('arguments') or {})}")


def prompt_tokens(messages: Messages, tools: Tools = ()) -> list[str]:
    """The tokens of a rendered chat, the header that opens the answer included. Tools offered
    render first, as one message of role `tools` holding their JSON."""
    offered = render({"role": "tools", "content": json.dumps(list(tools))}) if tools else []
    rendered = [token for message in messages for token in render(message)]
    return [*offered, *rendered, "<|start|>", "assistant", "<|sep|>"]


def count_prompt(messages: Messages, tools: Tools = ()) -> int:
    """Prompt tokens of a rendered chat: what `prompt_eval_count` reports when nothing is cut."""
    return len(prompt_tokens(messages, tools))


def release(version: str) -> tuple[int, int, int]:
    """`0.30.0-rc3` → (0, 30, 0); (0, 0, 0) for a version that is not one."""
    match = re.match(r"(\d+)\.(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else (0, 0, 0)


def last_user(messages: Messages) -> str:
    return next((str(m.get("content", "")) for m in reversed(messages) if m["role"] == "user"), "")


def echo_answer(messages: Messages) -> str:
    """The default answer: deterministic, from the last user message the model saw."""
    return f"You said: {last_user(messages)}"


def echo_thinking(messages: Messages) -> str:
    """The default thinking of a model that thinks."""
    return f"The user wrote: {last_user(messages)}. I will answer within my rules."


def calls_from_prompt(messages: Messages, tools: Tools) -> list[tuple[str, Any]]:
    """The default model's tool calls: one per line `call NAME {json arguments}` of the last
    message, when it is the user's and NAME an offered tool (several lines: parallel calls)."""
    if not messages or messages[-1].get("role") != "user":
        return []
    offered = {tool.get("function", {}).get("name") for tool in tools}
    found = _CALL_LINE.findall(str(messages[-1].get("content", "")))
    return [(name, json.loads(arguments)) for name, arguments in found if name in offered]


def full_name(name: str) -> str:
    """`qwen3:1.7b` → `registry.ollama.ai/library/qwen3:1.7b`, as Ollama's errors name a model."""
    parts = normalize(name).split("/")
    if len(parts) == 1:
        parts = ["library", *parts]
    if len(parts) == 2:
        parts = ["registry.ollama.ai", *parts]
    return "/".join(parts)


def normalize(name: str) -> str:
    """`qwen3` → `qwen3:latest`, as Ollama names models."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


@dataclass
class FakeModel:
    name: str
    thinking: bool | None = None  # None: from the family (qwen3, deepseek-r1, ... think)
    context_length: int = 40960  # trained length: num_ctx is capped at it
    parameters: str = "temperature 0.6\ntop_k 20\ntop_p 0.95"
    format: str = "gguf"  # "safetensors": an MLX model (fixed context, never truncated)
    tools: bool | None = None  # None: from the family (all but NO_TOOLS_FAMILIES use tools)

    def __post_init__(self) -> None:
        self.name = normalize(self.name)
        if self.thinking is None:
            self.thinking = self.family in THINKING_FAMILIES
        if self.tools is None:
            self.tools = self.family not in NO_TOOLS_FAMILIES

    @property
    def family(self) -> str:
        return self.name.rsplit("/", 1)[-1].split(":")[0]

    def layers(self) -> list[dict[str, Any]]:
        kinds = ("model", "template", "params")
        return [
            {
                "mediaType": f"application/vnd.ollama.image.{kind}",
                "digest": "sha256:" + hashlib.sha256(f"{self.name}/{kind}".encode()).hexdigest(),
                "size": 1000 * (len(self.name) + 7) if kind == "model" else 120,
            }
            for kind in kinds
        ]

    def manifest(self) -> bytes:
        return json.dumps({"schemaVersion": 2, "layers": self.layers()}, indent=1).encode()

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.manifest()).hexdigest()

    def capabilities(self) -> list[str]:
        """In Ollama's order: completion, tools, thinking (server/images.go)."""
        return ["completion"] + ["tools"] * bool(self.tools) + ["thinking"] * bool(self.thinking)

    @property
    def mlx(self) -> bool:
        return self.format == "safetensors"


@dataclass
class Fault:
    """A scripted misbehaviour for the next `times` requests to `path` ("*": any path;
    `times=None`: forever). Kinds: `status` (HTTP `status` with `{"error": error}`),
    `error_line` (a mid-stream `{"error"}` line with HTTP 200; 500 when not streaming),
    `eof` (the stream ends without `done: true`; a cut JSON body when not streaming),
    `invalid_json` (HTTP 200, an HTML body), `disconnect` (the connection closes, no answer),
    `delay` (wait `delay_s`, then answer normally), and for a hostile server: `json` (HTTP 200,
    `body` as the JSON answer, whatever its shape) and `lines` (HTTP 200, each item of `body` as
    an NDJSON line; `bytes` items as they are)."""

    kind: Literal[
        "status", "error_line", "eof", "invalid_json", "disconnect", "delay", "json", "lines"
    ] = "status"
    status: int = 503
    error: str = BUSY
    delay_s: float = 0.0
    path: str = "/api/chat"
    times: int | None = 1
    body: Any = None


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: Mapping[str, str]  # names in lower case
    body: Any  # parsed JSON, or the raw text when it was not JSON, or None when empty


class _Reply(Exception):
    """Ends a request with an HTTP error `{"error": message}`."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class FakeOllama:
    """See the module docstring. Attributes may be changed while the server runs."""

    def __init__(
        self,
        models: Iterable[FakeModel | str] = ("qwen3:1.7b", "llama3.2:1b"),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        version: str = DEFAULT_VERSION,
        answer: Answer = echo_answer,
        thinking: Answer = echo_thinking,
        tool_calls: ToolCalls = calls_from_prompt,
        call_ids: bool | None = None,
        num_ctx: int = 4096,
        latency_s: float = 0.0,
        num_parallel: int = 1,
        max_queue: int = 512,
        registry: Iterable[FakeModel | str] = CATALOGUE,
        store: Path | None = None,
        pull_step_s: float = 0.0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.version, self.answer, self.num_ctx = version, answer, num_ctx
        self.thinking = thinking
        self.tool_calls, self.call_ids = tool_calls, call_ids
        self._ids = random.Random()  # Ollama's call ids are random: call_ and 8 of [a-z0-9]
        self.latency_s, self.pull_step_s = latency_s, pull_step_s
        self.store, self.log = store, log
        self.models = {m.name: m for m in map(_model, models)}
        self.registry = {m.name: m for m in map(_model, registry)} | dict(self.models)
        if store is not None:
            self.models |= {m.name: m for m in _stored_models(store)}
        self.faults: list[Fault] = []
        self.requests: list[RecordedRequest] = []
        self.loads: list[tuple[str, int]] = []  # (model, num_ctx) each time a model (re)loads
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(num_parallel)
        self._max_queue, self._waiting = max_queue, 0
        self._num_parallel = num_parallel
        self._caches: list[list[str]] = []  # each slot's last prompt and answer (prefix cache)
        self._httpd = _Server((host, port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    # --- lifecycle and inspection ------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._httpd.server_address[:2]
        return str(host), int(port)

    @property
    def base_url(self) -> str:
        host, port = self.address
        return f"http://{host}:{port}"

    def start(self) -> FakeOllama:
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections()

    def __enter__(self) -> FakeOllama:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def honours_truncate(self) -> bool:
        """`truncate: false` and `shift: false` are obeyed (v0.12.6+); older servers ignore them."""
        return release(self.version) >= TRUNCATE_SINCE

    @property
    def think_levels(self) -> tuple[str, ...]:
        return THINK_LEVELS if release(self.version) >= THINK_MAX_SINCE else THINK_LEVELS[:3]

    @property
    def gives_call_ids(self) -> bool:
        """Tool calls carry an `id` (v0.12.10+, unless `call_ids` says otherwise)."""
        return release(self.version) >= CALL_IDS_SINCE if self.call_ids is None else self.call_ids

    @property
    def counts_new_tokens_only(self) -> bool:
        """v0.30.0 reports as `prompt_eval_count` only the tokens its prefix cache lacked."""
        return release(self.version) == NEW_TOKENS_ONLY

    def add_fault(self, *faults: Fault) -> None:
        with self._lock:
            self.faults.extend(faults)

    def fail_next(self, n: int, status: int = 503, error: str = BUSY) -> None:
        self.add_fault(Fault(status=status, error=error, times=n))

    def chats(self) -> list[dict[str, Any]]:
        """The bodies of every POST /api/chat, in arrival order."""
        with self._lock:
            return [r.body for r in self.requests if r.path == "/api/chat" and r.method == "POST"]

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def take_fault(self, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.path in (path, "*"):
                    if fault.times is not None:
                        fault.times -= 1
                        if fault.times <= 0:
                            self.faults.remove(fault)
                    return fault
        return None

    # --- models ------------------------------------------------------------------------------

    def model(self, name: object) -> FakeModel:
        if not isinstance(name, str) or not name:
            raise _Reply(400, "model is required")
        found = self.models.get(normalize(name))
        if found is None:
            raise _Reply(404, f"model '{name}' not found")
        return found

    def tags(self) -> dict[str, Any]:
        return {"models": [_tag(m) for m in self.models.values()]}

    def show(self, body: Mapping[str, Any]) -> dict[str, Any]:
        model = self.model(body.get("model") or body.get("name"))
        return {
            "license": "Apache License 2.0",
            "modelfile": f"FROM {model.name}\n"
            + "".join(f"PARAMETER {line}\n" for line in model.parameters.splitlines()),
            "parameters": model.parameters,
            "template": "{{- range .Messages }}<|start|>{{ .Role }}<|sep|>{{ .Content }}<|end|>"
            "{{ end }}<|start|>assistant<|sep|>",
            "details": _tag(model)["details"],
            "model_info": {
                "general.architecture": model.family,
                f"{model.family}.context_length": model.context_length,
            },
            "capabilities": model.capabilities(),
            "modified_at": "2025-01-01T00:00:00Z",
        }

    def pull(self, body: Mapping[str, Any], fault: Fault | None) -> Iterator[dict[str, Any]]:
        name = body.get("model") or body.get("name")
        if not isinstance(name, str) or not name:
            raise _Reply(400, "model is required")
        yield {"status": "pulling manifest"}
        model = self.registry.get(normalize(name))
        if model is None:
            yield {"error": PULL_MISSING}
            return
        present = model.name in self.models
        for number, layer in enumerate(model.layers()):
            if fault is not None and fault.kind in ("error_line", "eof") and number == 1:
                if fault.kind == "error_line":
                    yield {"error": fault.error}
                return
            status = f"pulling {layer['digest'][7:19]}"
            for done in (0, layer["size"]) if present else (0, layer["size"] // 2, layer["size"]):
                time.sleep(self.pull_step_s)
                yield {"status": status, "digest": layer["digest"], "total": layer["size"]} | (
                    {"completed": done} if done else {}
                )
        yield {"status": "verifying sha256 digest"}
        yield {"status": "writing manifest"}
        self._install(model)
        yield {"status": "success"}

    def _install(self, model: FakeModel) -> None:
        if self.store is not None:
            (self.store / "blobs").mkdir(parents=True, exist_ok=True)
            for layer in model.layers():
                blob = self.store / "blobs" / layer["digest"].replace(":", "-")
                blob.write_bytes(b"fake layer " + layer["digest"].encode())
            path = self.store / "manifests" / _manifest_path(model.name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(model.manifest())
        with self._lock:
            self.models[model.name] = model

    # --- chat --------------------------------------------------------------------------------

    def chat(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The full answer to a chat request (streaming splits it into lines)."""
        model = self.model(body.get("model"))
        think = body.get("think")
        _check_think(think, self.think_levels)
        if think not in (None, False) and not model.thinking:
            raise _Reply(400, f'"{body["model"]}" does not support thinking')
        messages = _messages(body.get("messages"))
        tools = _tools(body.get("tools"))
        if tools and not model.tools:  # server/images.go, CheckCapabilities
            raise _Reply(400, f"{full_name(model.name)} does not support tools")
        options = _options(body.get("options"))
        num_ctx = model.context_length  # MLX: fixed, whatever num_ctx says
        if not model.mlx:
            num_ctx = min(int(options.get("num_ctx") or self.num_ctx), model.context_length)
        load_s = self._load(model, num_ctx)
        if not messages:
            return self._response(model, {"content": ""}, "load", 0, 0, load_s)
        seen = self._fit(model, messages, tools, num_ctx, body)
        prompt = prompt_tokens(seen, tools)
        with self._slot():
            time.sleep(self.latency_s)
            calls = self._calls(seen, tools) if tools else []
            content = "" if calls else self.answer(seen)
        thinking = None
        if model.thinking and think in (None, True, *THINK_LEVELS):
            thinking = self.thinking(seen)
        honoured = self.honours_truncate or model.mlx
        room = num_ctx - len(prompt) if body.get("shift") is False and honoured else None
        content, reason = _limit(content, options, room)
        message: dict[str, Any] = {"content": content}
        message |= {"thinking": thinking} if thinking else {}
        message |= {"tool_calls": calls} if calls else {}
        called = [word for call in calls for word in call_tokens(call)]
        generated = [*tokens(thinking or ""), *tokens(content), *called]
        evaluated = self._evaluated(prompt, generated)
        return self._response(
            model, message, reason, min(evaluated, num_ctx), len(generated), load_s
        )

    def _calls(self, seen: Messages, tools: Tools) -> list[dict[str, Any]]:
        """The model's tool calls as Ollama sends them: `index` counts the answer's calls, and
        from v0.12.10 each has a random `id`."""
        calls = []
        for index, (name, arguments) in enumerate(self.tool_calls(seen, tools)):
            call: dict[str, Any] = {}
            if self.gives_call_ids:
                alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
                call["id"] = "call_" + "".join(self._ids.choices(alphabet, k=8))
            call["function"] = {"index": index, "name": name, "arguments": arguments}
            calls.append(call)
        return calls

    def _fit(
        self,
        model: FakeModel,
        messages: Messages,
        tools: Tools,
        num_ctx: int,
        body: Mapping[str, Any],
    ) -> Messages:
        """What the model sees: whole messages dropped from the front until the prompt fits,
        the system messages among them kept, and the tools always (server/prompt.go)."""
        needed = count_prompt(messages, tools)
        if needed <= num_ctx:
            return messages
        if model.mlx:  # never truncated (x/mlxrunner/pipeline.go)
            raise _Reply(
                400,
                f"input length ({needed} tokens) exceeds the model's maximum context length "
                f"({num_ctx} tokens)",
            )
        if body.get("truncate") is False and self.honours_truncate:
            detail = {
                "code": 400,
                "message": f"request ({needed} tokens) exceeds the available context size "
                f"({num_ctx} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": needed,
                "n_ctx": num_ctx,
            }
            raise _Reply(400, json.dumps({"error": detail}))
        start = next(
            (
                i
                for i in range(len(messages))
                if count_prompt(_kept(messages, i), tools) <= num_ctx or i == len(messages) - 1
            ),
            0,
        )
        seen = _kept(messages, start)
        too_long = count_prompt(seen, tools) > num_ctx
        if too_long and body.get("shift") is False and self.honours_truncate:
            raise _Reply(400, SHIFT_OVERFLOW)
        return seen

    def _evaluated(self, prompt: list[str], generated: list[str]) -> int:
        """The prompt tokens `prompt_eval_count` reports: all of them, or on v0.30.0 those the
        best slot's cache did not hold (at least one is always evaluated). The slot keeps the
        prompt and the answer."""
        with self._lock:
            shared = [_common_prefix(prompt, cache) for cache in self._caches]
            best = max(range(len(shared)), key=shared.__getitem__, default=None)
            if best is not None and shared[best] > 0:
                self._caches.pop(best)
            elif len(self._caches) >= self._num_parallel:
                self._caches.pop(0)
            self._caches.append([*prompt, *generated])
        cached = min(shared[best], len(prompt) - 1) if best is not None else 0
        return len(prompt) - cached if self.counts_new_tokens_only else len(prompt)

    def _load(self, model: FakeModel, num_ctx: int) -> float:
        """Seconds spent loading: none when the model is loaded with this num_ctx; else it
        (re)loads, and its prompt caches are gone."""
        with self._lock:
            if self.loads and self.loads[-1] == (model.name, num_ctx):
                return 0.0
            self.loads.append((model.name, num_ctx))
            self._caches.clear()
            return 0.5

    def _slot(self) -> _Slot:
        with self._lock:
            if self._waiting >= self._max_queue:
                raise _Reply(503, BUSY)
            self._waiting += 1
        return _Slot(self)

    def _response(
        self,
        model: FakeModel,
        message: Mapping[str, Any],
        reason: str,
        prompt: int,
        generated: int,
        load_s: float,
    ) -> dict[str, Any]:
        prompt_ns, eval_ns, load_ns = prompt * 1_000_000, generated * 20_000_000, int(load_s * 1e9)
        return {
            "model": model.name,
            "created_at": _now(),
            "message": {"role": "assistant", **message},
            "done": True,
            "done_reason": reason,
            "total_duration": load_ns + prompt_ns + eval_ns + int(self.latency_s * 1e9),
            "load_duration": load_ns,
            "prompt_eval_count": prompt,
            "prompt_eval_duration": prompt_ns,
            "eval_count": generated,
            "eval_duration": eval_ns,
        }


class _Slot:
    """One of OLLAMA_NUM_PARALLEL generation slots; a request waits for one (no error)."""

    def __init__(self, fake: FakeOllama) -> None:
        self._fake = fake

    def __enter__(self) -> None:
        self._fake._slots.acquire()
        with self._fake._lock:
            self._fake._waiting -= 1

    def __exit__(self, *exc_info: object) -> None:
        self._fake._slots.release()


def _kept(messages: Messages, start: int) -> list[Mapping[str, Any]]:
    """The messages from `start` on, after the system messages before it."""
    return [m for m in messages[:start] if m.get("role") == "system"] + list(messages[start:])


def _common_prefix(one: list[str], other: list[str]) -> int:
    count = 0
    for mine, theirs in zip(one, other, strict=False):
        if mine != theirs:
            break
        count += 1
    return count


def _messages(messages: object) -> list[Mapping[str, Any]]:
    """The request's messages as Go's encoding/json reads them into api.Message, or its 400:
    a call's `arguments` must be an object (ToolCallFunctionArguments), `tool_name` a string."""
    if messages is None:
        return []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _Reply(400, "json: cannot unmarshal messages: expected an array of objects")
    for message in messages:
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise _Reply(400, _unmarshal(calls, "Message.messages.tool_calls", "[]api.ToolCall"))
        for call in calls or []:
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict) or not _string_or_null(function.get("name")):
                raise _Reply(400, _unmarshal(call, "Message.messages.tool_calls", "api.ToolCall"))
            if function.get("arguments") is not None and not isinstance(
                function["arguments"], dict
            ):
                raise _Reply(400, _unmarshal(function["arguments"], "arguments", "map"))
        if not _string_or_null(message.get("tool_name")):
            raise _Reply(400, _unmarshal(message["tool_name"], "Message.tool_name", "string"))
    return messages


def _string_or_null(value: object) -> bool:
    """What Go reads into a string field: a string, or null (left empty)."""
    return value is None or isinstance(value, str)


def _tools(tools: object) -> list[Mapping[str, Any]]:
    """The request's `tools` as Go reads them into api.Tools, or its 400."""
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise _Reply(400, _unmarshal(tools, "ChatRequest.tools", "api.Tools"))
    for tool in tools:
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise _Reply(400, _unmarshal(tool, "ChatRequest.tools", "api.Tool"))
        parameters = function.get("parameters", {})
        if not isinstance(parameters, dict) or not isinstance(parameters.get("type", ""), str):
            raise _Reply(400, _unmarshal(parameters, "ToolFunction.parameters", "object"))
    return tools


def _unmarshal(value: object, field: str, go_type: str) -> str:
    kind = {bool: "bool", str: "string", list: "array", dict: "object"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go struct field {field} of type {go_type}"


def _options(options: object) -> Mapping[str, Any]:
    """The request's options, each of the type Ollama requires (api/types.go, FromMap), or the
    HTTP 500 Ollama answers (null means unset; unknown keys are ignored)."""
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise _Reply(
            400,
            "json: cannot unmarshal the options into Go struct field ChatRequest.options of "
            "type map[string]interface {}",
        )
    for name, value in options.items():
        wanted = OPTION_TYPES.get(name)
        if wanted is None or value is None:
            continue
        if wanted == "array" and isinstance(value, list):
            if not all(isinstance(item, str) for item in value):
                raise _Reply(500, f'option "{name}" must be of an array of strings')
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        fits = {"integer": number, "float32": number, "boolean": isinstance(value, bool)}
        if not fits.get(wanted, False):
            raise _Reply(500, f'option "{name}" must be of type {wanted}')
    return options


def _model(model: FakeModel | str) -> FakeModel:
    return model if isinstance(model, FakeModel) else FakeModel(model)


def _manifest_path(name: str) -> Path:
    repository, tag = name.rsplit(":", 1)
    namespace = "" if "/" in repository else "library/"
    return Path("registry.ollama.ai") / f"{namespace}{repository}" / tag


def _stored_models(store: Path) -> Iterator[FakeModel]:
    root = store / "manifests" / "registry.ollama.ai"
    for path in sorted(root.glob("*/*/*")) if root.is_dir() else []:
        namespace, repository, tag = path.relative_to(root).parts
        prefix = "" if namespace == "library" else f"{namespace}/"
        yield FakeModel(f"{prefix}{repository}:{tag}")


def _tag(model: FakeModel) -> dict[str, Any]:
    return {
        "name": model.name,
        "model": model.name,
        "modified_at": "2025-01-01T00:00:00Z",
        "size": sum(layer["size"] for layer in model.layers()),
        "digest": model.digest,
        "details": {
            "format": model.format,
            "family": model.family,
            "parameter_size": model.name.rsplit(":", 1)[-1].upper(),
            "quantization_level": "Q4_K_M",
        },
    }


def _check_think(think: object, levels: tuple[str, ...]) -> None:
    """The 400 of api.ThinkValue for a value the server's release does not know."""
    if think is None or isinstance(think, bool):
        return
    allowed = ", ".join(f'"{level}"' for level in reversed(levels[:3])) + (
        ', "max"' if "max" in levels else ""
    )
    if isinstance(think, str):
        if think not in levels:
            raise _Reply(400, f'invalid think value: "{think}" (must be {allowed}, true, or false)')
        return
    raise _Reply(400, f"think must be a boolean or string ({allowed}, true, or false)")


def _limit(content: str, options: Mapping[str, Any], room: int | None) -> tuple[str, str]:
    """The answer cut at a stop string (reason "stop"), at num_predict tokens or at the end of
    the context with shift off (reason "length")."""
    stops = options.get("stop") or []
    for stop in [stops] if isinstance(stops, str) else stops:
        if stop and stop in content:
            content = content[: content.index(stop)]
    limits = [n for n in (options.get("num_predict"), room) if isinstance(n, int) and n >= 0]
    spans = list(_TOKEN.finditer(content))
    if limits and len(spans) > min(limits):
        cut = min(limits)
        return (content[: spans[cut - 1].end()] if cut else ""), "length"
    return content, "stop"


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


# --- HTTP ------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeOllama

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is not the server's error: Ollama logs nothing for it."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def close_connections(self) -> None:
        """Ends idle keep-alive connections too: a stopped server answers nobody."""
        with self._connections_lock:
            for connection in list(self._connections):
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    def do_GET(self) -> None:
        self._dispatch()

    def do_HEAD(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if self.server.fake.log is not None:
            stamp = time.strftime("%Y/%m/%d - %H:%M:%S")
            path = self.path.split("?")[0]
            self.server.fake.log(
                f'[GIN] {stamp} | {code} | {self.client_address[0]} | {self.command} "{path}"'
            )

    def _dispatch(self) -> None:
        fake = self.server.fake
        path = self.path.split("?")[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = _parse(raw)
        fake.record(
            RecordedRequest(
                self.command, path, {k.lower(): v for k, v in self.headers.items()}, body
            )
        )
        fault = fake.take_fault(path)
        if fault is not None and fault.kind == "delay":
            time.sleep(fault.delay_s)
            fault = None
        try:
            if fault is not None and self._misbehave(fault):
                return
            self._route(path, raw, body, fault)
        except _Reply as reply:
            self._send_json(reply.status, {"error": str(reply)})

    def _misbehave(self, fault: Fault) -> bool:
        """Answers for a fault that does not depend on the endpoint; False: let it through."""
        if fault.kind == "status":
            raise _Reply(fault.status, fault.error)
        if fault.kind == "disconnect":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        if fault.kind == "invalid_json":
            self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
            return True
        if fault.kind == "json":
            self._send_json(200, fault.body)
            return True
        if fault.kind == "lines":
            self._stream(fault.body)
            return True
        return False  # error_line and eof: the endpoint plays them (chat and pull only)

    def _route(self, path: str, raw: bytes, body: Any, fault: Fault | None) -> None:
        fake = self.server.fake
        getters: dict[str, Callable[[], Any]] = {
            "/api/version": lambda: {"version": fake.version},
            "/api/tags": fake.tags,
        }
        if path == "/" and self.command in ("GET", "HEAD"):
            self._send(200, b"Ollama is running", "text/plain; charset=utf-8")
        elif path in getters and self.command == "GET":
            self._send_json(200, getters[path]())
        elif path in ("/api/chat", "/api/show", "/api/pull") and self.command == "POST":
            request = _request_object(raw, body)
            if path == "/api/show":
                self._send_json(200, fake.show(request))
            elif path == "/api/pull":
                self._pull(request, fault)
            else:
                self._chat(request, fault)
        elif path in getters or path in ("/api/chat", "/api/show", "/api/pull"):
            self._send(405, b"405 method not allowed", "text/plain")
        else:
            self._send(404, b"404 page not found", "text/plain")

    def _chat(self, request: Mapping[str, Any], fault: Fault | None) -> None:
        answer = self.server.fake.chat(request)
        if request.get("stream") is False:
            if fault is None:
                self._send_json(200, answer)
            elif fault.kind == "error_line":
                self._send_json(500, {"error": fault.error})
            else:  # eof: the body stops in the middle
                text = json.dumps(answer).encode()
                self._send(200, text[: len(text) // 2], "application/json; charset=utf-8")
            return
        self._stream(_chat_lines(answer, fault))

    def _pull(self, request: Mapping[str, Any], fault: Fault | None) -> None:
        lines = self.server.fake.pull(request, fault)
        if request.get("stream") is not False:
            self._stream(lines)
            return
        last = list(lines)[-1]
        self._send_json(500 if "error" in last else 200, last)

    def _stream(self, lines: Iterable[Mapping[str, Any] | bytes]) -> None:
        """NDJSON in HTTP/1.1 chunks (a `bytes` item is sent as it is, for lines no JSON encoder
        would write); an error before the first line is still a plain 4xx/5xx."""
        iterator = iter(lines)
        first = next(iterator, None)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for line in [first, *iterator] if first is not None else []:
            data = (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n"
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def _send_json(self, status: int, value: object) -> None:
        self._send(status, json.dumps(value).encode(), "application/json; charset=utf-8")

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)


def _parse(raw: bytes) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", errors="replace")


def _request_object(raw: bytes, body: Any) -> Mapping[str, Any]:
    """The JSON object of a POST, or the 400 Ollama (Go's encoding/json) answers."""
    if not raw:
        raise _Reply(400, "missing request body")
    if isinstance(body, str):
        raise _Reply(400, f"invalid character {body.strip()[:1]!r} looking for beginning of value")
    if not isinstance(body, dict):
        raise _Reply(400, "json: cannot unmarshal the request into Go value of type api.Request")
    return body


def _chat_lines(answer: Mapping[str, Any], fault: Fault | None) -> Iterator[dict[str, Any]]:
    head = {"model": answer["model"], "created_at": answer["created_at"]}
    message = answer["message"]
    pieces = [("thinking", p) for p in _pieces(message.get("thinking", ""))]
    pieces += [("content", p) for p in _pieces(message["content"])]
    pieces += [("tool_calls", message["tool_calls"])] if message.get("tool_calls") else []
    stop_at = len(pieces) // 2 if fault is not None else None
    for number, (kind, piece) in enumerate(pieces):
        if number == stop_at:
            break
        part = {"role": "assistant", "content": ""} | {kind: piece}
        yield head | {"message": part, "done": False}
    if fault is not None:
        if fault.kind == "error_line":
            yield {"error": fault.error}
        return  # eof: no done line
    final = {k: v for k, v in answer.items() if k not in ("model", "created_at", "message")}
    yield head | {"message": {"role": "assistant", "content": ""}} | final


def _pieces(text: str) -> list[str]:
    """Streaming chunks: each token with the whitespace before it (they join to the text)."""
    pieces: list[str] = re.findall(r"\s*(?:\w+|[^\w\s])", text)
    rest = text[len("".join(pieces)) :]
    return [*pieces, rest] if rest else pieces
