"""The Ollama adapter: Ollama's native `POST /api/chat`, not streamed (`stream: false`: an error
then arrives as an HTTP status, never half-way through an answer). See docs/ollama.md.

Every request carries the same `options`, `keep_alive`, and `truncate: false` + `shift: false`,
so the model is loaded once per run and a prompt that outgrows `num_ctx` fails instead of
silently losing its oldest messages; `PromptGrowth` catches servers too old to honour that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ruledrift.adapters.base import (
    AdapterType,
    CallContext,
    Completion,
    answer_metadata,
    retarget_http,
)
from ruledrift.adapters.context_window import PromptGrowth, overflow_message
from ruledrift.adapters.transport import DEFAULT_RETRY, Retry, base_url_problems
from ruledrift.model import Message, TargetInfo
from ruledrift.ollama.api import WRONG_URL, OllamaAPI, find_model

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

    async def open(self) -> None:
        """Record the server version and the model's digest; fail early if the model is absent
        or cannot think while `think` asks for it."""
        self._server_version = await self._api.version()
        self._digest = self._find_digest(await self._api.models())
        if self._config.think in (None, False):
            return
        show = await self._api.show(self._config.model)
        capabilities = show.get("capabilities") if isinstance(show, dict) else None
        if isinstance(capabilities, list) and "thinking" not in capabilities:  # absent: too old
            raise self._api.error(self._no_thinking())

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
        return TargetInfo(adapter="ollama", model=self._config.model, details=details)

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        answer = await self._api.chat(self.request_body(messages))
        message = answer.get("message") if isinstance(answer, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, str):
            raise self._api.error(
                f'Ollama\'s answer to /api/chat has no "message.content" string: {WRONG_URL}'
            )
        cut = self._growth.check(context, len(messages), answer.get("prompt_eval_count"))
        if cut is not None:
            raise self._api.error(f"{cut}. {self._overflow_fix()}")
        return Completion(content, _metadata(answer, message))

    async def aclose(self) -> None:
        await self._api.aclose()

    def request_body(self, messages: Sequence[Message]) -> dict[str, object]:
        body: dict[str, object] = {
            "model": self._config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": False,
            "options": self._options,
            "keep_alive": KEEP_ALIVE,
            "truncate": False,  # overflow → HTTP 400, not silently dropped messages (v0.12.4+)
            "shift": False,
        }
        if self._config.think is not None:  # omitted, a thinking model thinks
            body["think"] = self._config.think
        return body

    def _find_digest(self, models: list[Mapping[str, Any]]) -> str | None:
        entry = find_model(models, self._config.model)
        if entry is None:
            present = ", ".join(str(m.get("name")) for m in models) or "none"
            raise self._api.error(f"{self._missing_model()} (models present: {present})")
        digest = entry.get("digest")
        return digest if isinstance(digest, str) else None

    def _explain(self, status: int, text: str) -> str | None:
        model = self._config.model
        if status == 404 and "not found" in text and "model" in text:
            return self._missing_model()
        if status == 400 and "does not support thinking" in text:
            return self._no_thinking()
        if status == 400 and "think" in text and ("invalid" in text or "must be" in text):
            return (
                f'Ollama rejected the "think" setting ({text}): set it to true, false, "low", '
                '"medium" or "high"'
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

    def _no_thinking(self) -> str:
        return (
            f'model "{self._config.model}" does not support thinking: set "think": false in the '
            'adapter configuration, or remove "think"'
        )

    def _overflow_fix(self) -> str:
        num_ctx = self._options.get("num_ctx")
        now = f"now {num_ctx}" if num_ctx is not None else DEFAULT_NUM_CTX_NOTE
        return (
            f'Raise "num_ctx" in the adapter\'s "options" ({now}) to hold the longest '
            "conversation plus its answer; see docs/ollama.md"
        )


def _metadata(answer: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, object]:
    metadata = answer_metadata(
        answer,
        _REPORTED,
        cut=answer.get("done_reason") == "length",
        thinking=message.get("thinking"),
    )
    for theirs, ours in (
        ("total_duration", "totalDurationMs"),
        ("load_duration", "loadDurationMs"),
    ):
        if isinstance(answer.get(theirs), int):
            metadata[ours] = round(answer[theirs] / 1_000_000)  # nanoseconds
    return metadata


ADAPTER_TYPE = AdapterType(
    parse=parse_config, create=OllamaAdapter, problems=base_url_problems, retarget=retarget_http
)
