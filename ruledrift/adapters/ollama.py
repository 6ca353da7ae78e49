"""The Ollama adapter: Ollama's native `POST /api/chat`, not streamed (`stream: false`: an error
then arrives as an HTTP status, never half-way through an answer). See docs/ollama.md.

Every request carries the same `options`, `keep_alive`, and `truncate: false` + `shift: false`,
so the model is loaded once per run and a prompt that outgrows `num_ctx` fails instead of
silently losing its oldest messages (Ollama v0.12.6+); `PromptGrowth` catches the servers too old
to honour that, except on v0.30.0, whose prompt token counts cannot be trusted. What protects a
run less than both is said in `target_info().details["overflowProtection"]`.

Tools (ruledrift/ollama/tools.py): a call with `context.tools` sends them as OpenAI's `tools`
array, and reads `message.tool_calls` back. Ollama has no `tool_choice`: "none" sends no tools,
"required" and a tool's name send them as "auto" does. `open(tools=True)` checks that the model's
capabilities list `tools` (TargetConfigError, exit 2, rather than HTTP 400 on every call).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ruledrift.adapters.base import (
    AdapterType,
    CallContext,
    Completion,
    TargetConfigError,
    answer_metadata,
    reported_count,
    retarget_http,
    seed_for_run,
)
from ruledrift.adapters.context_window import PromptGrowth, overflow_message
from ruledrift.boundary.http import DEFAULT_RETRY, Retry, base_url_problems
from ruledrift.data import Message, TargetInfo, ToolCall, ToolOffer
from ruledrift.ollama.api import (
    WRONG_URL,
    ModelEntry,
    OllamaAPI,
    counts_whole_prompt,
    find_model,
    honours_truncate,
    is_mlx,
    knows_think_max,
    release,
    reported_text,
)
from ruledrift.ollama.tools import ToolCallError, message_sent, read_tool_calls, tools_field
from ruledrift.text import json_kind

_REPORTED = {
    "prompt_eval_count": "promptEvalCount",
    "eval_count": "evalCount",
    "done_reason": "doneReason",
}
KEEP_ALIVE = "30m"  # constant for the run: the model (and its prompt cache) stays loaded
DEFAULT_NUM_CTX_NOTE = (
    "not set, so the server's default applies: 4096 on CPU or under 24 GiB of VRAM, more on "
    "bigger GPUs"
)


DEFAULT_BASE_URL = "http://127.0.0.1:11434"
DEFAULT_TIMEOUT_MS = 120_000
THINK_VALUES = 'true, false, "low", "medium", "high" or "max" (Ollama 0.22.0+)'
SHOWN_MODELS = 10  # models named when the suite's is missing
# The JSON type Ollama requires of each option it knows (api.Options in api/types.go); a value of
# another type is HTTP 500 `option "num_ctx" must be of type integer`. Integers may be any JSON
# number there (Go drops the fraction); null means "unset".
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
        "number",
    ),
    "use_mmap": "boolean",
    "stop": "array of strings",
}


@dataclass(frozen=True)
class OllamaAdapterConfig:
    model: str
    base_url: str
    think: bool | str | None
    timeout_ms: int
    options: Mapping[str, object] = field(default_factory=dict)
    type: Literal["ollama"] = "ollama"


def parse_config(settings: Mapping[str, Any], suite_dir: Path) -> OllamaAdapterConfig:
    return OllamaAdapterConfig(
        model=settings["model"],
        base_url=settings.get("baseUrl", DEFAULT_BASE_URL).rstrip("/"),
        think=settings.get("think"),
        timeout_ms=settings.get("timeoutMs", DEFAULT_TIMEOUT_MS),
        options=dict(settings.get("options", {})),
    )


class OllamaAdapter:
    def __init__(self, config: OllamaAdapterConfig, *, retry: Retry = DEFAULT_RETRY) -> None:
        self._config = config
        self._options = dict(config.options)
        self._api = OllamaAPI(
            config.base_url, timeout_ms=config.timeout_ms, retry=retry, explain=self._explain
        )
        self._growth = PromptGrowth()
        self._server_version: str | None = None
        self._digest: str | None = None
        self._fixed_context = False  # an MLX model: num_ctx cannot change its context
        self._can_think: bool | None = None  # from the model's capabilities; None: unknown

    async def open(self, *, tools: bool = False) -> None:
        """Record the server version, the model's digest and capabilities; fail early if the
        model is absent, cannot use tools while the suite offers them (`tools`:
        TargetConfigError), or cannot think while `think` asks for it."""
        self._server_version = await self._api.version()
        entry = self._find_model(await self._api.models())
        self._digest = entry.digest
        facts = await self._api.show(self._config.model)
        self._fixed_context = is_mlx(entry.format or facts.format)
        if facts.capabilities is not None:  # absent: a server too old to say
            self._can_think = "thinking" in facts.capabilities
            if tools and "tools" not in facts.capabilities:
                raise TargetConfigError(str(self._api.error(self._no_tools())))
        think = self._config.think
        if think in (None, False):
            return
        if self._can_think is False:
            raise self._api.error(self._no_thinking())
        if think == "max" and not knows_think_max(self._server_version):
            raise self._api.error(
                f'Ollama {self._server_version} does not know "think": "max" (Ollama 0.22.0 '
                'added it): upgrade Ollama, or set "think" to "high"'
            )

    def target_info(self) -> TargetInfo:
        details: dict[str, object] = {
            "baseUrl": self._config.base_url,
            "serverVersion": self._server_version,
            "modelDigest": self._digest,
            "options": self._options,
            "keepAlive": KEEP_ALIVE,
        }
        if self._config.think is not None:
            details["think"] = self._config.think
        protection = self._overflow_protection()
        if protection is not None:
            details["overflowProtection"] = protection
        return TargetInfo(adapter="ollama", model=self._config.model, details=details)

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        body = self.request_body(messages, context.run, tools=context.tools)
        answer = await self._api.chat(body, on_resend=context.on_resend)
        message = answer.get("message") if isinstance(answer, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(answer, dict) or not isinstance(message, dict):
            raise self._api.error(f'Ollama\'s answer to /api/chat has no "message": {WRONG_URL}')
        if not isinstance(content, str):
            raise self._api.error(
                f'Ollama\'s answer to /api/chat has no "message.content" string (it is '
                f"{json_kind(content)}): {WRONG_URL}"
            )
        calls = self._tool_calls(message, len(messages)) if "tools" in body else ()
        if counts_whole_prompt(self._server_version):
            # a call comes back rendered by the template, maybe shorter than it was generated
            kept = None if calls else self._kept_answer_tokens(answer)
            cut = self._growth.check(context, len(messages), answer.get("prompt_eval_count"), kept)
            if cut is not None:
                raise self._api.error(f"{cut}. {self._overflow_fix()}")
        metadata = _metadata(answer, message)
        seed = seed_for_run(self._options, context.run)
        if seed is not None:
            metadata["seed"] = seed
        scrub = self._api.http.scrub  # proxy credentials
        return Completion(scrub(content), metadata, tool_calls=calls)

    async def aclose(self) -> None:
        await self._api.aclose()

    def request_body(
        self, messages: Sequence[Message], run: int = 0, *, tools: ToolOffer | None = None
    ) -> dict[str, object]:
        """The /api/chat body; run r of a repeated scenario sends `options.seed` + r. `tools`:
        the call's offer, sent as `tools` (not at all for `tool_choice` "none")."""
        seed = seed_for_run(self._options, run)
        body: dict[str, object] = {
            "model": self._config.model,
            "messages": self._messages(messages),
            "stream": False,
            "options": self._options if seed is None else {**self._options, "seed": seed},
            "keep_alive": KEEP_ALIVE,  # overrides the server's OLLAMA_KEEP_ALIVE
            "truncate": False,  # overflow → HTTP 400, not silently dropped messages (v0.12.6+)
            "shift": False,
        }
        if self._config.think is not None:  # omitted, a thinking model thinks
            body["think"] = self._config.think
        offered = tools_field(tools)
        if offered is not None:
            body["tools"] = offered
        return body

    def _messages(self, messages: Sequence[Message]) -> list[dict[str, object]]:
        try:
            return [message_sent(message) for message in messages]
        except ToolCallError as problem:
            raise self._api.error(str(problem)) from None

    def _tool_calls(self, message: Mapping[str, Any], sent: int) -> tuple[ToolCall, ...]:
        """The calls the answer asks for (names and arguments scrubbed of proxy credentials,
        as its content is); a malformed or oversized entry fails the call."""
        try:
            calls = read_tool_calls(message.get("tool_calls"), sent)
        except ToolCallError as problem:
            raise self._api.error(f"Ollama's answer to /api/chat: {problem}") from None
        scrub = self._api.http.scrub
        return tuple(ToolCall(c.id, scrub(c.name), scrub(c.arguments)) for c in calls)

    def _kept_answer_tokens(self, answer: Mapping[str, Any]) -> object:
        """The answer's generated tokens when the next prompt holds them all again, or None:
        thinking tokens are counted in eval_count but never kept in the conversation."""
        message = answer["message"]
        thinks = self._config.think not in (None, False) or (
            self._config.think is None and self._can_think is not False
        )
        if thinks or message.get("thinking") or "</think>" in message["content"]:
            return None
        return answer.get("eval_count")

    def _overflow_protection(self) -> str | None:
        """How the run is protected from silently dropped messages, when it is less than
        `truncate: false` backed by the prompt-token check; None when it is not."""
        version = self._server_version
        if version is None:  # not opened
            return None
        if not counts_whole_prompt(version):
            return (
                f"truncate:false only (Ollama {version} counts only newly evaluated prompt "
                "tokens, so the prompt-token check is off)"
            )
        if release(version) is None:
            return (
                f'token check only (Ollama version "{version}" is not a release, e.g. a build '
                "from source, so truncate:false may be ignored)"
            )
        if not honours_truncate(version):
            return (
                f"token check only (Ollama {version} ignores truncate:false: upgrade to "
                "0.12.6 or later)"
            )
        return None

    def _find_model(self, models: list[ModelEntry]) -> ModelEntry:
        entry = find_model(models, self._config.model)
        if entry is None:
            shown = [model.shown_name for model in models[:SHOWN_MODELS]]
            more = f", and {len(models) - SHOWN_MODELS} more" if len(models) > SHOWN_MODELS else ""
            present = ", ".join(shown) + more if shown else "none"
            raise self._api.error(f"{self._missing_model()} (models present: {present})")
        return entry

    def _explain(self, status: int, text: str) -> str | None:
        model = self._config.model
        if status == 404 and "not found" in text and "model" in text:
            return self._missing_model()
        if status == 400 and "does not support thinking" in text:
            return self._no_thinking()
        if status == 400 and "does not support tools" in text:
            return self._no_tools()
        if status == 400 and "think" in text and ("invalid" in text or "must be" in text):
            return f'Ollama rejected the "think" setting ({text}): set it to {THINK_VALUES}'
        if "must be of type" in text or "must be of an array" in text:
            return (
                f"Ollama rejected an option (HTTP {status}: {text}): give it that type in the "
                'adapter\'s "options" (a number without quotes, "stop" as an array of strings)'
            )
        overflow = overflow_message(text, self._overflow_fix())
        if overflow is not None:
            return overflow
        if status == 503:
            return (
                f"Ollama is busy (HTTP 503: {text}): lower --concurrency, or raise "
                "OLLAMA_MAX_QUEUE / OLLAMA_NUM_PARALLEL on the server"
            )
        if status >= 500:
            return (
                f'Ollama failed to answer with model "{model}" (HTTP {status}: {text}): see the '
                "Ollama server log (out of memory?)"
            )
        return None

    def _missing_model(self) -> str:
        model = self._config.model
        return (
            f'Ollama at {self._config.base_url} has no model "{model}": run `ollama pull {model}`, '
            "or `ruledrift run --start-ollama`, which pulls it"
        )

    def _no_tools(self) -> str:
        model = self._config.model
        return (
            f'the suite offers tools, but model "{model}" does not support tools (its capabilities '
            f'in Ollama\'s /api/show lack "tools"): use a model that does (`ollama show {model}` '
            'lists its capabilities), or remove "tools" from the suite'
        )

    def _no_thinking(self) -> str:
        return (
            f'model "{self._config.model}" does not support thinking: set "think": false in the '
            'adapter configuration, or remove "think"'
        )

    def _overflow_fix(self) -> str:
        if self._fixed_context:
            return (
                f'Model "{self._config.model}" runs on MLX, whose context is fixed: "num_ctx" '
                "cannot raise it. Shorten the scenario (fewer or shorter turns), or use a GGUF "
                'build of the model with a larger "num_ctx"; see docs/ollama.md'
            )
        num_ctx = self._options.get("num_ctx")
        now = f"now {num_ctx}" if num_ctx is not None else DEFAULT_NUM_CTX_NOTE
        return (
            f'Raise "num_ctx" in the adapter\'s "options" ({now}) to hold the longest '
            "conversation plus its answer; see docs/ollama.md"
        )


def _metadata(answer: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, object]:
    """What the server reported about the answer, each value of the right type or left out."""
    reason = answer.get("done_reason")
    reported = {
        "prompt_eval_count": _count(answer.get("prompt_eval_count")),
        "eval_count": _count(answer.get("eval_count")),
        "done_reason": reported_text(reason) if isinstance(reason, str) else None,
    }
    metadata = answer_metadata(
        reported, _REPORTED, cut=reason == "length", thinking=message.get("thinking")
    )
    for theirs, ours in (
        ("total_duration", "totalDurationMs"),
        ("load_duration", "loadDurationMs"),
    ):
        nanoseconds = _count(answer.get(theirs))
        if nanoseconds is not None:
            metadata[ours] = round(nanoseconds / 1_000_000)
    return metadata


def _count(value: object) -> int | None:
    """A count or a duration the server reported: an integer from 0 to 2**53 - 1 (a
    `total_duration` of 10**400 would overflow the conversion to milliseconds), else None."""
    return reported_count(value)


def option_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Options of a type Ollama refuses (with HTTP 500, at the first call), found at load."""
    options = settings.get("options")
    if not isinstance(options, Mapping):
        return
    for name, wanted in OPTION_TYPES.items():
        if name in options and options[name] is not None and not _has_type(options[name], wanted):
            yield (
                f"/options/{name}",
                f'Ollama requires option "{name}" to be {_article(wanted)} {wanted}, not '
                f"{json_kind(options[name])}; write it without quotes, e.g. "
                f"{_EXAMPLES[wanted]}",
            )


def _has_type(value: object, wanted: str) -> bool:
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "array of strings":
        return isinstance(value, list) and all(isinstance(item, str) for item in value)
    return isinstance(value, int | float) and not isinstance(value, bool)


def _article(wanted: str) -> str:
    return "an" if wanted[0] in "aeiou" else "a"


_EXAMPLES = {
    "integer": '"num_ctx": 8192',
    "number": '"temperature": 0.2',
    "boolean": '"use_mmap": true',
    "array of strings": '"stop": ["###"]',
}


def _problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    yield from base_url_problems(settings)
    yield from option_problems(settings)


ADAPTER_TYPE = AdapterType(
    parse=parse_config, create=OllamaAdapter, problems=_problems, retarget=retarget_http
)
