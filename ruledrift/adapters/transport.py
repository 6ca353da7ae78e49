"""The HTTP transport of the adapters and of the Ollama client (ruledrift/ollama/): JSON requests
over one httpx client with a deadline per call, bounded retries of transient failures, streamed
JSON lines, and the translation of every httpx exception and error body into an AdapterError that
names the cause and the fix. Nothing else in RuleDrift imports httpx.

Every message names the server and what was being done (`could not connect to Ollama at URL to
list its models: …`, `Ollama at URL could not list its models: boom (HTTP 500)`). No message
holds a request header, and every message is scrubbed of the secrets the adapter names (an API
key a server echoes back in its error is replaced by ***).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

import ruledrift
from ruledrift.errors import AdapterError

RETRY_STATUSES = frozenset({503})  # the server is busy or starting: worth another try


@dataclass(frozen=True)
class Retry:
    """Connect errors and HTTP 503 are tried `attempts` times in all, waiting `base_delay_s`
    before the second try, twice that before the third, and so on. Nothing else is retried."""

    attempts: int = 3
    base_delay_s: float = 0.5

    def delay_s(self, retry: int) -> float:
        return self.base_delay_s * 2.0 ** (retry - 1)


DEFAULT_RETRY = Retry()


@dataclass(frozen=True)
class Server:
    """How messages name a server, and the hints for the usual mistakes."""

    name: str  # "Ollama"
    base_url: str
    timeout_ms: int
    not_running: str  # after "could not connect to NAME at URL: "
    wrong_url: str  # after an answer that is no answer of this kind of server
    too_slow: str = (  # after "NAME at URL did not answer … within N s"
        'raise "timeoutMs" in the adapter configuration if the model is slow. Time spent '
        "waiting in the server's queue counts too (lower --concurrency)"
    )


Explain = Callable[[int, str], str | None]  # (HTTP status, error text) → message, or None


def no_explanation(status: int, text: str) -> str | None:
    return None


class JsonClient:
    """JSON over HTTP to one server. Every method returns parsed JSON or raises AdapterError;
    each call (retries and their waits included) ends within the server's `timeout_ms`.

    `doing` names the operation in messages ("list its models"); without it a message names the
    method and path."""

    def __init__(
        self,
        server: Server,
        *,
        headers: Mapping[str, str] | None = None,
        secrets: Sequence[str] = (),
        retry: Retry = DEFAULT_RETRY,
        explain: Explain = no_explanation,
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

    @property
    def where(self) -> str:
        return f"{self.server.name} at {self.server.base_url}"

    async def get(self, path: str, *, missing_ok: bool = False, doing: str | None = None) -> Any:
        """GET `path`; with `missing_ok`, a 404 returns None."""
        return await self._call("GET", path, None, missing_ok, doing)

    async def post(self, path: str, body: Mapping[str, object], *, doing: str | None = None) -> Any:
        return await self._call("POST", path, body, False, doing)

    async def status(self, path: str, timeout_s: float) -> int | str:
        """One GET of `path` within `timeout_s`, no retry: the HTTP status, or what went wrong
        (`All connection attempts failed`). For "does a server answer there?" questions."""
        try:
            response = await self._client.get(path, timeout=timeout_s)
        except httpx.HTTPError as error:
            return describe_error(error)
        return response.status_code

    async def stream_lines(
        self,
        path: str,
        body: Mapping[str, object],
        *,
        doing: str,
        failed: str,
        idle_timeout_s: float,
    ) -> AsyncIterator[str]:
        """POST `body` and yield the answer's non-empty lines as they arrive (Ollama's streamed
        progress), allowing `idle_timeout_s` of silence between two. A non-2xx answer raises
        AdapterError `{failed}: {the server's error text} (HTTP status)`."""
        timeout = httpx.Timeout(self.server.timeout_ms / 1000, read=idle_timeout_s)
        try:
            async with self._client.stream("POST", path, json=body, timeout=timeout) as response:
                if response.is_error:
                    await response.aread()
                    status, text = response.status_code, error_text(response)
                    raise self.error(f"{failed}: {text} (HTTP {status})")
                async for line in response.aiter_lines():
                    if line.strip():
                        yield line
        except httpx.ConnectError as error:
            raise self._connect_error(error, doing, attempts=1) from None
        except httpx.HTTPError as error:
            raise self._broken(error, "POST", path, doing) from None

    async def aclose(self) -> None:
        await self._client.aclose()

    def error(self, message: str) -> AdapterError:
        """An AdapterError with the secrets scrubbed from `message`."""
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return AdapterError(message)

    async def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | None,
        missing_ok: bool,
        doing: str | None,
    ) -> Any:
        limit_s = self.server.timeout_ms / 1000
        try:
            async with asyncio.timeout(limit_s):
                response = await self._send(method, path, body, doing)
        except (TimeoutError, httpx.TimeoutException):
            raise self.error(
                f"{self.where} did not answer {method} {path} within {limit_s:g} s "
                f"(timeoutMs is {self.server.timeout_ms}): {self.server.too_slow}"
            ) from None
        if missing_ok and response.status_code == 404:
            return None
        if response.is_error:
            raise self._status_error(response, method, path, doing)
        try:
            return response.json()
        except ValueError:
            # not quoted: the body may carry model output, which stays out of reports
            kind = response.headers.get("content-type", "no Content-Type")
            raise self.error(
                f"{self.where} answered {method} {path} with a body that is not JSON ({kind}, "
                f"{len(response.content)} bytes): {self.server.wrong_url}"
            ) from None

    async def _send(
        self, method: str, path: str, body: Mapping[str, object] | None, doing: str | None
    ) -> httpx.Response:
        """The response, after up to `attempts` tries of connect errors and HTTP 503."""
        for attempt in range(1, self._retry.attempts + 1):
            last = attempt == self._retry.attempts
            try:
                response = await self._client.request(method, path, json=body)
            except httpx.ConnectError as error:
                if last:
                    raise self._connect_error(error, doing, self._retry.attempts) from None
            except httpx.TimeoutException:
                raise  # the deadline is the caller's
            except httpx.HTTPError as error:
                raise self._broken(error, method, path, doing) from None
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return response
            await asyncio.sleep(self._retry.delay_s(attempt))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _connect_error(
        self, error: httpx.ConnectError, doing: str | None, attempts: int
    ) -> AdapterError:
        purpose = f" to {doing}" if doing else ""
        tries = f"; tried {attempts} times" if attempts > 1 else ""
        return self.error(
            f"could not connect to {self.where}{purpose}: {self.server.not_running} "
            f"({describe_error(error)}{tries})"
        )

    def _broken(
        self, error: httpx.HTTPError, method: str, path: str, doing: str | None
    ) -> AdapterError:
        if doing:
            return self.error(f"{self.where} failed to {doing}: {describe_error(error)}")
        return self.error(
            f"the connection to {self.where} failed during {method} {path}: {describe_error(error)}"
        )

    def _status_error(
        self, response: httpx.Response, method: str, path: str, doing: str | None = None
    ) -> AdapterError:
        status, text = response.status_code, error_text(response)
        explained = self._explain(status, text)
        if explained is None and doing:
            explained = f"{self.where} could not {doing}: {text} (HTTP {status})"
        if explained is None:
            explained = f"{self.where} answered HTTP {status} to {method} {path}: {text}"
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


def url_problem(url: str) -> str | None:
    """What is wrong with a server URL from a suite or an option, or None. Never echoes the
    URL: it may hold a password."""
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError as error:
        return f"not a valid URL ({error})"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434"
    if parts.username is not None or parts.password is not None:
        return (
            "URLs with embedded credentials are rejected: keep secrets out of the config "
            "(remove the user:password@ part)"
        )
    return None


def base_url_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """An adapter type's `problems` check of its `baseUrl` setting."""
    url = settings.get("baseUrl")
    problem = url_problem(url) if isinstance(url, str) else None
    if problem:
        yield "/baseUrl", problem


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
