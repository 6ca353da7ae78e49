"""The OpenAI-compatible adapter: `POST {baseUrl}/chat/completions`, not streamed, for vLLM,
llama.cpp's server, LM Studio, Ollama's /v1 and hosted APIs. See docs/openai.md.

The API key comes from the environment variable `apiKeyEnv` names, never from the file; it is
sent as a Bearer token and scrubbed from every message (servers echo keys in their errors).

Tools: when a call offers tools (`CallContext.tools`), the request carries `tools` and
`tool_choice`, and the answer's `message.tool_calls` become `Completion.tool_calls`. The adapter
only translates; the runner runs the mocks and calls again. Without tools nothing changes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ruledrift.adapters.base import (
    AdapterType,
    CallContext,
    Completion,
    answer_metadata,
    reported_count,
    reported_text,
    retarget_http,
    seed_for_run,
)
from ruledrift.adapters.context_window import PromptGrowth, overflow_message
from ruledrift.boundary.http import (
    DEFAULT_RETRY,
    JsonClient,
    Retry,
    Server,
    base_url_problems,
)
from ruledrift.data import Message, TargetInfo, ToolCall, ToolOffer
from ruledrift.data.tools import canonical_json, function_entry
from ruledrift.errors import UsageError
from ruledrift.jsondoc.schema_messages import show
from ruledrift.text import json_kind, preview, repair_surrogates

_REPORTED = {
    "prompt_tokens": "promptTokens",
    "completion_tokens": "completionTokens",
    "finish_reason": "finishReason",
}


DEFAULT_TIMEOUT_MS = 120_000
RESERVED_BODY_FIELDS = ("model", "messages", "stream", "tools", "tool_choice")
CHOICE_WORDS = ("auto", "none", "required")  # any other tool_choice names a tool
# One answer's tool calls. A real agent asks for a few at once (parallel calls); 32 leaves room
# for a fan-out ("look up these 20 orders") while a model stuck repeating a call, or a hostile
# server, cannot make one answer into thousands of mock runs, report records and tool messages
# that every later request of the conversation carries again.
MAX_CALLS_PER_ANSWER = 32
# One call's arguments, as JSON text: real arguments are ids, amounts, a paragraph; 100,000
# characters is far above them, while 32 such calls (3.2 million characters) still leave every
# later request of the conversation a sendable size.
MAX_ARGUMENT_CHARS = 100_000
MAX_NAME_CHARS = 200  # a tool name the answer gives (the suite's names are much shorter)
MAX_ID_CHARS = 200  # a call id the server gave; a longer one is replaced by a made-up one


@dataclass(frozen=True)
class OpenAIAdapterConfig:
    model: str
    base_url: str
    api_key_env: str | None
    timeout_ms: int
    options: Mapping[str, object] = field(default_factory=dict)
    extra_body: Mapping[str, object] = field(default_factory=dict)
    # `toolResults`: "tool" sends each tool result as a `role: tool` message; "user" as a user
    # message naming the call, for servers whose chat template drops tool messages.
    tool_results: Literal["tool", "user"] = "tool"
    type: Literal["openai"] = "openai"


def parse_config(settings: Mapping[str, Any], suite_dir: Path) -> OpenAIAdapterConfig:
    return OpenAIAdapterConfig(
        model=settings["model"],
        base_url=settings["baseUrl"].rstrip("/"),
        api_key_env=settings.get("apiKeyEnv"),
        timeout_ms=settings.get("timeoutMs", DEFAULT_TIMEOUT_MS),
        options=dict(settings.get("options", {})),
        extra_body=dict(settings.get("extraBody", {})),
        tool_results=settings.get("toolResults", "tool"),
    )


def settings_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    yield from base_url_problems(settings)
    extra = settings.get("extraBody")
    if isinstance(extra, dict):
        for key in RESERVED_BODY_FIELDS:
            if key in extra:
                yield f"/extraBody/{key}", f"{show(key)} is set by RuleDrift; remove it"


class OpenAIAdapter:
    def __init__(
        self,
        config: OpenAIAdapterConfig,
        *,
        retry: Retry = DEFAULT_RETRY,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._config = config
        key = _api_key(config, os.environ if environ is None else environ)
        server = Server(
            name="the OpenAI-compatible server",
            base_url=config.base_url,
            timeout_ms=config.timeout_ms,
            not_running="is the server running, and is baseUrl right?",
            wrong_url="baseUrl usually ends in /v1, e.g. http://127.0.0.1:8000/v1",
        )
        self._http = JsonClient(
            server,
            headers={"Authorization": f"Bearer {key}"} if key else None,
            secrets=(key,) if key else (),
            retry=retry,
            explain=self._explain,
        )
        self._growth = PromptGrowth()
        self._served_model: str | None = None  # the `model` of the latest answer
        self._listed_model: str | None = None  # the one model listed, when it is not `model`

    async def open(self, *, tools: bool = False) -> None:
        """Check that the server answers, and that it serves the model if it lists models
        (servers without GET /models are fine). A name matches with or without `:latest`
        (Ollama's /v1 lists `qwen3:latest` for `qwen3`). A server that lists exactly one other
        model is let through and that model recorded as `listedModel`: llama.cpp's server lists
        only its alias and answers every request with the model it serves."""
        listing = await self._http.get("/models", missing_ok=True)
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            return
        served = [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]
        if not served or any(same_model(self._config.model, name) for name in served):
            return
        if len(served) == 1:
            self._listed_model = reported_text(served[0], self._http.scrub) or "(a long name)"
            return
        shown = ", ".join(preview(name, 80) for name in served[:10])
        raise self._http.error(
            f"the server at {self._config.base_url} does not serve model "
            f'"{self._config.model}" (it serves: {shown}{", ..." if len(served) > 10 else ""}): '
            'fix "model" in the adapter configuration'
        )

    def target_info(self) -> TargetInfo:
        details: dict[str, object] = {
            "baseUrl": self._config.base_url,
            "options": dict(self._config.options),
            "servedModel": self._served_model,
        }
        if self._listed_model is not None:
            details["listedModel"] = self._listed_model
        if self._config.extra_body:
            details["extraBody"] = dict(self._config.extra_body)
        return TargetInfo(adapter="openai", model=self._config.model, details=details)

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        body = self.request_body(messages, context.run, context.tools)
        answer = await self._http.post("/chat/completions", body, on_resend=context.on_resend)
        choice = _first_choice(answer)
        message = choice.get("message") if choice is not None else None
        if not isinstance(message, dict):
            raise self._http.error(
                f'the answer to /chat/completions has no "choices[0].message": '
                f"{self._http.server.wrong_url}"
            )
        calls = self._tool_calls(message, context) if context.tools is not None else ()
        content = message.get("content")
        if content is None and calls:
            content = ""  # a tool call's answer: its text is null
        finish = choice.get("finish_reason") if choice else None
        if not isinstance(content, str):
            raise self._http.error(
                f"the server answered without text (message.content is {json_kind(content)}, "
                f"finish_reason {self._shown_reason(finish)}): the model may have made a tool "
                "call or refused"
            )
        usage = answer.get("usage") if isinstance(answer.get("usage"), dict) else {}
        prompt_tokens = reported_count(usage.get("prompt_tokens"))
        cut = self._growth.check(context, len(messages), prompt_tokens)
        if cut is not None:
            raise self._http.error(f"{cut}. {_OVERFLOW_FIX}")
        served = reported_text(answer.get("model"), self._http.scrub)
        if served is not None:
            self._served_model = served
        reported = {**usage, "finish_reason": finish}
        thinking = message.get("reasoning_content") or message.get("reasoning")
        metadata = answer_metadata(
            reported, _REPORTED, cut=finish == "length", thinking=thinking, scrub=self._http.scrub
        )
        if isinstance(body.get("seed"), int):
            metadata["seed"] = body["seed"]
        # scrubbed: a key echoed in an answer
        return Completion(self._http.scrub(content), metadata, tool_calls=calls)

    def _tool_calls(self, message: Mapping[str, Any], context: CallContext) -> tuple[ToolCall, ...]:
        """The answer's `message.tool_calls`, read by `read_tool_calls`; a malformed one is an
        error of this call that says what the server sent wrong, never quoting the arguments."""
        try:
            return read_tool_calls(message.get("tool_calls"), context.round, self._http.scrub)
        except ToolCallProblem as problem:
            raise self._http.error(
                f"the answer to /chat/completions has tool calls RuleDrift cannot use: {problem}"
            ) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    def request_body(
        self, messages: Sequence[Message], run: int = 0, tools: ToolOffer | None = None
    ) -> dict[str, object]:
        """The /chat/completions body; run r of a repeated scenario sends `seed` + r. `tools`
        adds `tools` and `tool_choice` (None, or no tools: neither is sent)."""
        body: dict[str, object] = {
            "model": self._config.model,
            "messages": [wire_message(m, self._config.tool_results) for m in messages],
            **self._config.options,
            **self._config.extra_body,  # the loader keeps RESERVED_BODY_FIELDS out of it
            "stream": False,
        }
        if tools is not None and tools.tools:
            body["tools"] = [function_entry(tool) for tool in tools.tools]
            body["tool_choice"] = wire_choice(tools.choice)
        seed = seed_for_run(body, run)
        if seed is not None:
            body["seed"] = seed
        return body

    def _shown_reason(self, finish: object) -> str:
        reason = reported_text(finish, self._http.scrub)
        return f'"{reason}"' if reason is not None else json_kind(finish)

    def _explain(self, status: int, text: str) -> str | None:
        variable = self._config.api_key_env
        if status in (401, 403):
            fix = (
                f"check the key in ${variable}"
                if variable
                else 'the server wants a key: set "apiKeyEnv" to the variable that holds it'
            )
            return f"the server refused the request (HTTP {status}: {text}): {fix}"
        overflow = overflow_message(text, _OVERFLOW_FIX)
        if overflow is not None:
            return overflow
        if status == 404 and "model" in text:
            return (
                f'the server has no model "{self._config.model}" (HTTP 404: {text}): fix "model" '
                f"in the adapter configuration, or baseUrl ({self._http.server.wrong_url})"
            )
        if status == 429:
            return (
                f"the server is rate limiting (HTTP 429: {text}): lower --concurrency or run "
                "later (4xx answers are not retried)"
            )
        if status == 503:
            return f"the server is busy or still loading the model (HTTP 503: {text})"
        return None


_OVERFLOW_FIX = (
    "Give the server a larger context (llama.cpp: --ctx-size; vLLM: --max-model-len; LM Studio: "
    "the model's context length) or use a model with a longer one. Ollama's /v1 cannot set it: "
    'use the "ollama" adapter with options.num_ctx'
)


def _api_key(config: OpenAIAdapterConfig, environ: Mapping[str, str]) -> str | None:
    variable = config.api_key_env
    if variable is None:
        return None
    key = environ.get(variable, "").strip()
    if not key:
        raise UsageError(
            f"the API key variable {variable} (adapter apiKeyEnv) is unset or empty: set it in "
            f'the environment, or remove "apiKeyEnv" for a server that needs no key'
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in key):
        raise UsageError(
            f"the API key in {variable} (adapter apiKeyEnv) holds a line break or another "
            "control character, so it cannot be sent in a header: check how the secret was stored"
        )
    return key


def same_model(wanted: str, listed: str) -> bool:
    """Whether a listed name is the model asked for, `name` being `name:latest` (Ollama)."""
    return wanted.removesuffix(":latest") == listed.removesuffix(":latest")


# --- Tools on the wire ----------------------------------------------------------------------


class ToolCallProblem(Exception):
    """What is wrong with an answer's tool calls: what the server sent, never the arguments."""


def wire_choice(choice: str) -> object:
    """`tool_choice`: "auto", "none" and "required" as they are; any other word names a tool."""
    if choice in CHOICE_WORDS:
        return choice
    return {"type": "function", "function": {"name": choice}}


def wire_message(
    message: Message, tool_results: Literal["tool", "user"] = "tool"
) -> dict[str, object]:
    """A message as /chat/completions takes it: `{role, content}`; an assistant message with
    calls also carries them (ids included: servers pair each call with its result), its content
    a string even when empty (llama-cpp-python's server refuses a null one); a tool message
    carries the id of the call it answers (with `tool_results` "user": a user message that
    names the call, for a chat template that drops tool messages)."""
    if message.role == "assistant" and message.tool_calls:
        calls = [wire_call(call) for call in message.tool_calls]
        return {"role": "assistant", "content": message.content, "tool_calls": calls}
    if message.role == "tool" and tool_results == "user":
        call = f"{message.tool_name or 'a tool'} (call {message.tool_call_id})"
        return {"role": "user", "content": f"The result of {call}: {message.content}"}
    if message.role == "tool" and message.tool_call_id is not None:
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    return {"role": message.role, "content": message.content}


def wire_call(call: ToolCall) -> dict[str, object]:
    function = {"name": call.name, "arguments": call.arguments}
    return {"id": call.id, "type": "function", "function": function}


def read_tool_calls(
    entries: object, round_: int, scrub: Callable[[str], str] = str
) -> tuple[ToolCall, ...]:
    """An answer's `message.tool_calls` (absent or null: none) as ToolCalls: arguments as the
    text the server sent (OpenAI sends a string; any other JSON value, such as an object, is
    serialised as canonical JSON text; absent: `{}`), each id unique within the answer (one that
    is absent, not a string, empty, too long or a repeat is made up: `call_<round>_<index>`),
    names and arguments scrubbed with `scrub`. Raises ToolCallProblem, saying what the server sent
    wrong without quoting any argument, for a malformed list or call and past the caps."""
    if entries is None:
        return ()
    if not isinstance(entries, list):
        raise ToolCallProblem(f"message.tool_calls is {json_kind(entries)}, not an array")
    if len(entries) > MAX_CALLS_PER_ANSWER:
        raise ToolCallProblem(
            f"message.tool_calls holds {len(entries):,} calls, more than the "
            f"{MAX_CALLS_PER_ANSWER} RuleDrift accepts in one answer: the model may be stuck "
            'repeating a call (to ask for one call at a time, set "parallel_tool_calls": false in '
            '"extraBody")'
        )
    read = [_read_call(entry, f"message.tool_calls[{i}]", scrub) for i, entry in enumerate(entries)]
    ids = unique_ids([server_id for server_id, _, _ in read], round_, scrub)
    return tuple(
        ToolCall(id_, name, arguments) for id_, (_, name, arguments) in zip(ids, read, strict=True)
    )


def _read_call(entry: object, where: str, scrub: Callable[[str], str]) -> tuple[object, str, str]:
    """One entry of `tool_calls`: (its id as sent, the tool name, the arguments' text)."""
    if not isinstance(entry, dict):
        raise ToolCallProblem(f"{where} is {json_kind(entry)}, not an object")
    kind = entry.get("type", "function")
    if kind != "function":
        shown = f'"{reported_text(kind, scrub)}"' if reported_text(kind) else json_kind(kind)
        raise ToolCallProblem(f'{where} is of type {shown}, not "function"')
    function = entry.get("function")
    if not isinstance(function, dict):
        raise ToolCallProblem(f'{where} has no "function" object')
    name = _call_name(function.get("name"), f"{where}.function.name")
    arguments = _arguments_text(function.get("arguments", {}))
    if len(arguments) > MAX_ARGUMENT_CHARS:
        raise ToolCallProblem(
            f'{where}.function.arguments (a call of "{name}") hold {len(arguments):,} '
            f"characters, more than the {MAX_ARGUMENT_CHARS:,} RuleDrift accepts for one call"
        )
    return entry.get("id"), repair_surrogates(scrub(name)), scrub(arguments)


def _call_name(name: object, where: str) -> str:
    if not isinstance(name, str):
        raise ToolCallProblem(f"{where} is {json_kind(name)}, not a string")
    if not name:
        raise ToolCallProblem(f"{where} is empty")
    if len(name) > MAX_NAME_CHARS:
        raise ToolCallProblem(
            f"{where} has {len(name):,} characters, more than the {MAX_NAME_CHARS} a tool name "
            "may have"
        )
    return name


def _arguments_text(arguments: object) -> str:
    """Arguments as received: a string as it is, any other JSON value as canonical text."""
    return arguments if isinstance(arguments, str) else canonical_json(arguments)


def unique_ids(
    given: Sequence[object], round_: int, scrub: Callable[[str], str] = str
) -> list[str]:
    """The calls' ids: each id the server gave that is a usable string (not empty, at most
    MAX_ID_CHARS, not a repeat of an earlier one) as it is, the others made up as
    `call_<round>_<index>` (with a suffix if the server already used that)."""
    kept: list[str | None] = []
    for value in given:
        usable = isinstance(value, str) and 0 < len(value) <= MAX_ID_CHARS
        id_ = scrub(value) if isinstance(value, str) and usable else None
        kept.append(id_ if id_ not in kept else None)
    taken = {id_ for id_ in kept if id_ is not None}
    ids = []
    for index, id_ in enumerate(kept):
        if id_ is None:
            id_ = _made_up(f"call_{round_}_{index}", taken)
            taken.add(id_)
        ids.append(id_)
    return ids


def _made_up(base: str, taken: set[str]) -> str:
    suffix = 1
    made = base
    while made in taken:
        suffix += 1
        made = f"{base}_{suffix}"
    return made


def _first_choice(answer: Any) -> Mapping[str, Any] | None:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


ADAPTER_TYPE = AdapterType(
    parse=parse_config, create=OpenAIAdapter, problems=settings_problems, retarget=retarget_http
)
