"""What the HTTP adapters (ollama.py, openai.py) share: JSON requests over one httpx client with
a deadline per call, bounded retries of transient failures, the translation of every httpx
exception and error body into an AdapterError that names the cause and the fix, and the check
that catches a server which silently dropped messages to fit its context window.

No message built here holds a request header, and every message is scrubbed of the secrets the
adapter names (an API key a server echoes back in its error is replaced by ***).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

import ruledrift
from ruledrift.adapters.base import AdapterError, CallContext

RETRY_STATUSES = frozenset({503})  # the server is busy or starting: worth another try
_OVERFLOW_WORDS = re.compile(r"exceed|maximum|longer than|too long|too large", re.IGNORECASE)
_CONTEXT_WORDS = re.compile(r"context[ _-]?(length|size|window)", re.IGNORECASE)


@dataclass(frozen=True)
class Retry:
    """Connect errors and HTTP 503 are tried `attempts` times in all, waiting `base_delay_s`
    before the second try, twice that before the third, and so on. Nothing else is retried."""

    attempts: int = 3
    base_delay_s: float = 0.5

    def delay_s(self, retry: int) -> float:
        return self.base_delay_s * 2.0 ** (retry - 1)


NO_DELAY = Retry(base_delay_s=0.0)
DEFAULT_RETRY = Retry()


@dataclass(frozen=True)
class Server:
    """How messages name a server, and the hints for the usual mistakes."""

    name: str  # "Ollama"
    base_url: str
    timeout_ms: int
    not_running: str  # after "could not connect to NAME at URL: "
    wrong_url: str  # after an answer that is no answer of this kind of server


Explain = Callable[[int, str], str | None]  # (HTTP status, error text) → message, or None


def _no_explanation(status: int, text: str) -> str | None:
    return None


class JsonClient:
    """JSON over HTTP to one server. Every method returns parsed JSON or raises AdapterError;
    each call (retries and their waits included) ends within the server's `timeout_ms`."""

    def __init__(
        self,
        server: Server,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
        retry: Retry = DEFAULT_RETRY,
        explain: Explain = _no_explanation,
    ) -> None:
        self.server = server
        self._secrets = tuple(s for s in secrets if s)
        self._retry = retry
        self._explain = explain
        limit_s = server.timeout_ms / 1000
        self._client = httpx.AsyncClient(
            base_url=server.base_url,
            headers={"User-Agent": f"ruledrift/{ruledrift.__version__}", **(headers or {})},
            timeout=httpx.Timeout(limit_s + 1),  # a backstop: the deadline is `limit_s`
            trust_env=not is_loopback(server.base_url),  # no proxy between us and a local server
        )

    async def get(self, path: str, *, missing_ok: bool = False) -> Any:
        """GET `path`; with `missing_ok`, a 404 returns None."""
        return await self._call("GET", path, None, missing_ok)

    async def post(self, path: str, body: Mapping[str, object]) -> Any:
        return await self._call("POST", path, body, False)

    async def aclose(self) -> None:
        await self._client.aclose()

    def error(self, message: str) -> AdapterError:
        """An AdapterError with the secrets scrubbed from `message`."""
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return AdapterError(message)

    async def _call(
        self, method: str, path: str, body: Mapping[str, object] | None, missing_ok: bool
    ) -> Any:
        limit_s = self.server.timeout_ms / 1000
        try:
            async with asyncio.timeout(limit_s):
                response = await self._send(method, path, body)
        except (TimeoutError, httpx.TimeoutException):
            raise self.error(
                f"{self.server.name} at {self.server.base_url} did not answer {method} {path} "
                f"within {limit_s:g} s (timeoutMs is {self.server.timeout_ms}): raise "
                '"timeoutMs" in the adapter configuration if the model is slow. Time spent '
                "waiting in the server's queue counts too (lower --concurrency)"
            ) from None
        if missing_ok and response.status_code == 404:
            return None
        if response.is_error:
            raise self._status_error(response, method, path)
        try:
            return response.json()
        except ValueError:
            # not quoted: the body may carry model output, which stays out of reports
            kind = response.headers.get("content-type", "no Content-Type")
            raise self.error(
                f"{self.server.name} at {self.server.base_url} answered {method} {path} with a "
                f"body that is not JSON ({kind}, {len(response.content)} bytes): "
                f"{self.server.wrong_url}"
            ) from None

    async def _send(
        self, method: str, path: str, body: Mapping[str, object] | None
    ) -> httpx.Response:
        """The response, after up to `attempts` tries of connect errors and HTTP 503."""
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                response = await self._client.request(method, path, json=body)
            except httpx.ConnectError as error:
                if last:
                    raise self._connect_error(error) from None
            except httpx.TimeoutException:
                raise  # the deadline is the caller's
            except httpx.HTTPError as error:
                raise self.error(
                    f"the connection to {self.server.name} at {self.server.base_url} failed "
                    f"during {method} {path}: {describe_error(error)}"
                ) from None
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return response
            await asyncio.sleep(self._retry.delay_s(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _connect_error(self, error: httpx.ConnectError) -> AdapterError:
        return self.error(
            f"could not connect to {self.server.name} at {self.server.base_url}: "
            f"{self.server.not_running} ({describe_error(error)}; "
            f"tried {self._retry.attempts} times)"
        )

    def _status_error(self, response: httpx.Response, method: str, path: str) -> AdapterError:
        status, text = response.status_code, error_text(response)
        explained = self._explain(status, text)
        if explained is None:
            where = f"{self.server.name} at {self.server.base_url}"
            explained = f"{where} answered HTTP {status} to {method} {path}: {text}"
            if status == 404:
                explained += f" ({self.server.wrong_url})"
        if status in RETRY_STATUSES:
            explained += f" (tried {self._retry.attempts} times)"
        return self.error(explained)


def error_text(response: httpx.Response) -> str:
    """The error a server put in its body: `{"error": "..."}` (Ollama), `{"error": {"message":
    ..., "type": ...}}` (OpenAI, llama.cpp, vLLM), Ollama's `{"error": "<that as a JSON
    string>"}` (v0.30+ passing on llama-server's error), or the text itself."""
    try:
        error: Any = response.json().get("error")
    except (ValueError, AttributeError):
        return response.text.strip()[:300] or response.reason_phrase
    if isinstance(error, str) and error.startswith("{"):
        with contextlib.suppress(ValueError, AttributeError):
            error = json.loads(error).get("error", error)
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type") or error.get("code")
        text = str(message) if message is not None else json.dumps(error)
        return f"{text} ({kind})" if isinstance(kind, str) and kind not in text else text
    return str(error) if error is not None else response.text.strip()[:300]


def overflow_message(text: str, fix: str) -> str | None:
    """The message for an error that says the prompt did not fit the context window (llama.cpp's
    exceed_context_size_error, vLLM's and OpenAI's "maximum context length"), or None."""
    if _CONTEXT_WORDS.search(text) and _OVERFLOW_WORDS.search(text):
        return f"the conversation no longer fits the model's context window ({text}). {fix}"
    return None


@dataclass
class PromptGrowth:
    """Catches a server that silently dropped the oldest messages to fit its context window
    (Ollama does, unless `truncate: false` is honoured; so does Ollama's /v1). Within one
    scenario every call extends the conversation of the latest turn, so the prompt tokens the
    server reports must grow; if a call with more messages used no more tokens, messages were
    cut and the answer says nothing about drift."""

    _turns: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)

    def check(self, context: CallContext, messages: int, tokens: object) -> str | None:
        """A description of the cut, or None. Remembers turn calls (probes branch off them)."""
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            return None
        key = (context.suite, context.scenario)
        latest = self._turns.get(key)
        if latest is not None:
            turn, before_messages, before_tokens = latest
            if messages > before_messages and tokens <= before_tokens:
                call = (
                    f"turn {context.turn}" if context.kind == "turn" else f'probe "{context.probe}"'
                )
                return (
                    f'the server dropped messages of scenario "{context.scenario}" to fit its '
                    f"context window: {call} sent {messages} messages, but its prompt used "
                    f"{tokens} tokens, no more than the {before_messages} messages of turn "
                    f"{turn} ({before_tokens} tokens)"
                )
        if context.kind == "turn":
            self._turns[key] = (context.turn or 0, messages, tokens)
        return None


def is_loopback(url: str) -> bool:
    """Whether the URL's host is loopback (proxy variables never apply to it)."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def describe_error(error: httpx.HTTPError) -> str:
    if isinstance(error, httpx.TimeoutException) and not str(error):
        return "timed out"
    return str(error) or type(error).__name__


def answer_metadata(
    reported: Mapping[str, Any], names: Mapping[str, str], *, cut: bool, thinking: object
) -> dict[str, object]:
    """A Completion's metadata: what the server reported (`names` maps its keys to ours), `cut`
    when a length limit cut the answer, and the length of any thinking text, never the text
    (metadata goes into every report)."""
    metadata = {
        ours: reported[theirs] for theirs, ours in names.items() if reported.get(theirs) is not None
    }
    if isinstance(thinking, str) and thinking:
        metadata["thinkingChars"] = len(thinking)
    if cut:
        metadata["cut"] = True
    return metadata
