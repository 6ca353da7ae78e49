"""The OpenAI-compatible adapter: `POST {baseUrl}/chat/completions`, not streamed, for vLLM,
llama.cpp's server, LM Studio, Ollama's /v1 and hosted APIs. See docs/openai.md.

The API key comes from the environment variable `apiKeyEnv` names, never from the file; it is
sent as a Bearer token and scrubbed from every message (servers echo keys in their errors).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
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
from ruledrift.data import Message, TargetInfo
from ruledrift.errors import UsageError
from ruledrift.jsondoc.schema_messages import show
from ruledrift.text import json_kind, preview

_REPORTED = {
    "prompt_tokens": "promptTokens",
    "completion_tokens": "completionTokens",
    "finish_reason": "finishReason",
}


DEFAULT_TIMEOUT_MS = 120_000
RESERVED_BODY_FIELDS = ("model", "messages", "stream")


@dataclass(frozen=True)
class OpenAIAdapterConfig:
    model: str
    base_url: str
    api_key_env: str | None
    timeout_ms: int
    options: Mapping[str, object] = field(default_factory=dict)
    extra_body: Mapping[str, object] = field(default_factory=dict)
    type: Literal["openai"] = "openai"


def parse_config(settings: Mapping[str, Any], suite_dir: Path) -> OpenAIAdapterConfig:
    return OpenAIAdapterConfig(
        model=settings["model"],
        base_url=settings["baseUrl"].rstrip("/"),
        api_key_env=settings.get("apiKeyEnv"),
        timeout_ms=settings.get("timeoutMs", DEFAULT_TIMEOUT_MS),
        options=dict(settings.get("options", {})),
        extra_body=dict(settings.get("extraBody", {})),
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
        body = self.request_body(messages, context.run)
        answer = await self._http.post("/chat/completions", body, on_resend=context.on_resend)
        choice = _first_choice(answer)
        message = choice.get("message") if choice is not None else None
        if not isinstance(message, dict):
            raise self._http.error(
                f'the answer to /chat/completions has no "choices[0].message": '
                f"{self._http.server.wrong_url}"
            )
        content = message.get("content")
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
        return Completion(self._http.scrub(content), metadata)  # a key echoed in an answer

    async def aclose(self) -> None:
        await self._http.aclose()

    def request_body(self, messages: Sequence[Message], run: int = 0) -> dict[str, object]:
        """The /chat/completions body; run r of a repeated scenario sends `seed` + r."""
        body: dict[str, object] = {
            "model": self._config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            **self._config.options,
            **self._config.extra_body,  # the config loader keeps model, messages, stream out
            "stream": False,
        }
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


def _first_choice(answer: Any) -> Mapping[str, Any] | None:
    choices = answer.get("choices") if isinstance(answer, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


ADAPTER_TYPE = AdapterType(
    parse=parse_config, create=OpenAIAdapter, problems=settings_problems, retarget=retarget_http
)
