"""The HTTP transport of the adapters and of the Ollama client (ruledrift/ollama/): JSON requests
over one HTTP client (http_client.Client, on aiohttp) with a deadline per call, bounded retries
of transient failures, streamed JSON lines, and the translation of every HTTP error and error
body into an AdapterError that names the cause and the fix. Nothing else in RuleDrift talks HTTP.

A server is trusted with nothing:

- a body is read as it arrives and decoded (gzip, deflate) a bounded step at a time, so an answer
  never grows past `max_body_bytes` (10,000,000 decoded bytes, as the command adapter's stdout) nor
  a streamed line past `max_line_bytes`: a gzip bomb or an endless body is an error, not memory;
- a body that is not JSON, or is nested too deeply for Python's parser, is an error of that call;
- a redirect (3xx) is an error naming where it points (its query hidden), never followed;
- a server that cannot be reached is a connect error, also when `timeoutMs` ends the tries.

Every message names the server and what was being done (`could not connect to Ollama at URL to
list its models: …`, `Ollama at URL could not list its models: boom (HTTP 500)`) and holds no
request header. An error body is quoted only when it is an error object (`{"error": …}` and its
kin): any other body of a non-2xx answer may be the model's answer, so it is described by size
and type. The secrets (an API key a server echoes back, and any piece of 12 or more of its
characters; a proxy's credentials) become *** before anything is cut, if they are at least
MIN_SECRET_CHARS long; the server's own words are cut to 300 characters, a message to 2,000,
and control characters are shown as escapes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import zlib
from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import ruledrift
from ruledrift.boundary import http_client
from ruledrift.errors import AdapterError, UsageError
from ruledrift.text import preview

RETRY_STATUSES = frozenset({503})  # the server is busy or starting: worth another try
MAX_BODY_BYTES = 10_000_000  # one answer, decoded: as the command adapter's stdout limit
MAX_LINE_BYTES = 65_536  # one streamed line, decoded (Ollama's pull progress lines: ~150 bytes)
MESSAGE_CHARS = 2_000  # an error message, after scrubbing
SERVER_TEXT_CHARS = 300  # a server's own words (its error text, a header) inside a message
CONNECT_MARGIN_S = 0.05  # connecting stops this long before a call's deadline (or 1/10 of it)
FRAGMENT_CHARS = 12  # this many consecutive characters of a secret are scrubbed like all of it
MIN_SECRET_CHARS = 8  # a shorter secret (a key "k" on a test server) is not scrubbed: every "k"
# of every message would become ***
ACCEPT_ENCODING = "gzip, deflate"  # the encodings this module decodes with a bounded output


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


@dataclass(frozen=True)
class Reply:
    """A whole answer: status, headers and the decoded body (within the client's limit)."""

    status: int
    reason: str
    headers: http_client.Headers
    body: bytes
    tries: int = 1  # how many requests it took (HTTP 503 is tried again)


Explain = Callable[[int, str], str | None]  # (HTTP status, error text) → message, or None


def no_explanation(status: int, text: str) -> str | None:
    return None


OnResend = Callable[[], None]


class _Sends:
    """Counts the sends of one call; each after the first is told to `on_resend`."""

    def __init__(self, on_resend: OnResend | None) -> None:
        self._on_resend = on_resend
        self.count = 0

    def __call__(self) -> None:
        if self.count and self._on_resend is not None:
            self._on_resend()  # before counting: it may refuse the send
        self.count += 1


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
        max_body_bytes: int = MAX_BODY_BYTES,
        max_line_bytes: int = MAX_LINE_BYTES,
    ) -> None:
        self.server = server
        self._secrets = tuple(s for s in secrets if len(s) >= MIN_SECRET_CHARS)
        self._retry = retry
        self._explain = explain
        self._max_body = max_body_bytes
        self._max_line = max_line_bytes
        sent = {
            "User-Agent": f"ruledrift/{ruledrift.__version__}",
            "Accept": "application/json",
            "Accept-Encoding": ACCEPT_ENCODING,
            **(headers or {}),
        }
        try:
            self._http = http_client.Client(server.base_url, sent)
        except ValueError as problem:  # a header that cannot be sent, an unusable proxy
            message = safe_text(
                f"cannot talk to {self.where}: {problem}", self._secrets, MESSAGE_CHARS
            )
            raise UsageError(message) from None
        proxy_secrets = (s for s in self._http.secrets if len(s) >= MIN_SECRET_CHARS)
        self._secrets = (*self._secrets, *proxy_secrets)

    @property
    def where(self) -> str:
        return f"{self.server.name} at {self.server.base_url}"

    async def get(self, path: str, *, missing_ok: bool = False, doing: str | None = None) -> Any:
        """GET `path`; with `missing_ok`, a 404 returns None."""
        return await self._call("GET", path, None, missing_ok, doing)

    async def post(
        self,
        path: str,
        body: Mapping[str, object],
        *,
        doing: str | None = None,
        on_resend: OnResend | None = None,
    ) -> Any:
        """POST `body` as JSON. `on_resend` is called before the request goes out again (after
        HTTP 503, or on a new connection when the first closed before answering): a model call
        counts it, and may stop it by raising AdapterError (--max-calls)."""
        return await self._call("POST", path, body, False, doing, on_resend)

    async def status(self, path: str, timeout_s: float) -> int | str:
        """One GET of `path` within `timeout_s`, the body unread: the HTTP status, or what went
        wrong (`connection refused`). For "does a server answer there?". Not retried (it is
        sent a second time only when its connection closed before any answer, as every
        request is)."""
        try:
            async with asyncio.timeout(timeout_s):
                response = await self._http.send(
                    "GET", path, connect_timeout_s=timeout_s, read_timeout_s=timeout_s
                )
                await response.aclose()
                return response.status
        except TimeoutError:
            return "timed out"
        except http_client.HTTPError as error:
            return self.server_text(describe_error(error))

    async def stream_lines(
        self,
        path: str,
        body: Mapping[str, object],
        *,
        doing: str,
        failed: str,
        idle_timeout_s: float,
    ) -> AsyncGenerator[str, None]:
        """POST `body` and yield the answer's non-empty lines as they arrive (Ollama's streamed
        progress), allowing `idle_timeout_s` of silence between two. A non-2xx answer raises
        AdapterError `{failed}: {the server's error text} (HTTP status)`; so does a line longer
        than `max_line_bytes`. Parse the lines with `parse_json`."""
        connect_s = self.server.timeout_ms / 1000
        what = f"POST {path}"
        try:
            response = await self._http.send(
                "POST",
                path,
                json_body(body),
                connect_timeout_s=connect_s,
                read_timeout_s=idle_timeout_s,
            )
            try:
                if not 200 <= response.status < 300:
                    reply = await self._receive(response, what)
                    if is_redirect(reply.status):
                        raise self._redirect_error(reply, what)
                    raise self.error(f"{failed}: {self._error_text(reply)} (HTTP {reply.status})")
                decoder, lines = self._decoder(response, what), _Lines(self._max_line)
                async for raw in response.chunks():
                    decoder.feed(raw)
                    while chunk := self._decoded(decoder, self._max_line + 1, what):
                        for line in self._split(lines, chunk, failed):
                            yield line
                for line in lines.end():
                    yield line
            finally:
                await response.aclose()
        except http_client.ConnectError as error:
            within_s = connect_s if isinstance(error, http_client.ConnectTimeout) else None
            raise self._connect_error(error, doing, 1, within_s) from None
        except http_client.HTTPError as error:
            raise self._broken(error, "POST", path, doing) from None

    async def aclose(self) -> None:
        await self._http.aclose()

    def error(self, message: str) -> AdapterError:
        """An AdapterError with `message` scrubbed of the secrets, then made terminal-safe and
        cut to MESSAGE_CHARS."""
        return AdapterError(safe_text(message, self._secrets, MESSAGE_CHARS))

    def scrub(self, text: str) -> str:
        """`text` with the secrets (and pieces of them) replaced by ***; nothing else changed."""
        return scrub(text, self._secrets)

    def server_text(self, text: str) -> str:
        """A server's own words, ready to quote in a message: scrubbed, terminal-safe, short."""
        return safe_text(text, self._secrets, SERVER_TEXT_CHARS)

    async def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | None,
        missing_ok: bool,
        doing: str | None,
        on_resend: OnResend | None = None,
    ) -> Any:
        limit_s = self.server.timeout_ms / 1000
        try:
            async with asyncio.timeout(limit_s):
                reply = await self._send(method, path, body, doing, limit_s, _Sends(on_resend))
        except TimeoutError:
            # connecting never meets the deadline (_send): the server has the request
            raise self.error(
                f"{self.where} did not answer {method} {path} within {limit_s:g} s "
                f"(timeoutMs is {self.server.timeout_ms}): {self.server.too_slow}"
            ) from None
        if missing_ok and reply.status == 404:
            return None
        if reply.status >= 300:
            raise self._status_error(reply, method, path, doing)
        try:
            return parse_json(reply.body)
        except ValueError as problem:
            # not quoted: the body may carry model output, which stays out of reports
            kind = self.server_text(reply.headers.get("content-type", "no Content-Type"))
            raise self.error(
                f"{self.where} answered {method} {path} with a body that is {problem} ({kind}, "
                f"{len(reply.body)} bytes): {self.server.wrong_url}"
            ) from None

    async def _send(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | None,
        doing: str | None,
        limit_s: float,
        sends: _Sends,
    ) -> Reply:
        """The reply, after up to `attempts` tries of connect errors and HTTP 503. Connecting
        never runs into the call's deadline: each try may connect until just before it, and a
        retry whose wait would reach it is not made. So a server that cannot be reached is a
        connect error, however short `timeoutMs`, and the deadline means "did not answer"."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + limit_s - min(CONNECT_MARGIN_S, limit_s / 10)
        for tries in range(1, self._retry.attempts + 1):
            last, delay_s = tries == self._retry.attempts, self._retry.delay_s(tries)
            connect_s = max(deadline - loop.time(), 0.001)
            try:
                reply = await self._exchange(method, path, body, connect_s, sends, tries)
            except http_client.ConnectError as error:
                timed_out = isinstance(error, http_client.ConnectTimeout)
                late = timed_out or loop.time() + delay_s >= deadline
                if last or late:
                    within_s = limit_s if late else None
                    raise self._connect_error(error, doing, tries, within_s) from None
            except http_client.HTTPError as error:
                raise self._broken(error, method, path, doing) from None
            else:
                if reply.status not in RETRY_STATUSES or last or loop.time() + delay_s >= deadline:
                    return reply
            await asyncio.sleep(delay_s)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _exchange(
        self,
        method: str,
        path: str,
        body: Mapping[str, object] | None,
        connect_s: float,
        sends: _Sends,
        tries: int,
    ) -> Reply:
        """One request and its whole reply (the `tries`-th of its call)."""
        data = None if body is None else json_body(body)
        response = await self._http.send(
            method, path, data, connect_timeout_s=connect_s, on_send=sends
        )
        try:
            return await self._receive(response, f"{method} {path}", tries)
        finally:
            await response.aclose()

    async def _receive(self, response: http_client.Response, what: str, tries: int = 1) -> Reply:
        """The reply with its body decoded as it arrives; more than `max_body_bytes` decoded
        bytes stop the reading and raise AdapterError."""
        decoder = self._decoder(response, what)
        chunks: list[bytes] = []
        size = 0
        async for raw in response.chunks():
            decoder.feed(raw)
            while chunk := self._decoded(decoder, self._max_body - size + 1, what):
                size += len(chunk)
                if size > self._max_body:
                    raise self.error(
                        f"{self.where} answered {what} with a body of more than "
                        f"{self._max_body:,} bytes (decoded), the limit for one answer: the "
                        "rest was not read. Is the server misbehaving, or baseUrl pointing at "
                        "something else?"
                    )
                chunks.append(chunk)
        body = b"".join(chunks)
        return Reply(response.status, response.reason, response.headers, body, tries)

    def _split(self, lines: _Lines, chunk: bytes, failed: str) -> list[str]:
        try:
            return lines.split(chunk)
        except ValueError:
            raise self.error(
                f"{failed}: {self.where} sent a line of more than {self._max_line:,} bytes, the "
                "limit for one streamed line"
            ) from None

    def _decoder(self, response: http_client.Response, what: str) -> _Decoder:
        encoding = content_encoding(response.headers)
        if encoding is None:
            shown = self.server_text(response.headers.get("content-encoding", ""))
            raise self.error(
                f'{self.where} answered {what} with Content-Encoding "{shown}", which RuleDrift '
                f"did not ask for (it accepts {ACCEPT_ENCODING}): is a proxy in between?"
            )
        return _Decoder(encoding)

    def _decoded(self, decoder: _Decoder, most: int, what: str) -> bytes:
        try:
            return decoder.take(most)
        except zlib.error as error:
            raise self.error(
                f"{self.where} answered {what} with a body that could not be decoded "
                f"({decoder.encoding}: {error})"
            ) from None

    def _connect_error(
        self,
        error: http_client.HTTPError,
        doing: str | None,
        tries: int,
        within_s: float | None = None,
    ) -> AdapterError:
        """`within_s`: the time limit that ended the tries, if it did."""
        purpose = f" to {doing}" if doing else ""
        limit = "" if within_s is None else f" within {within_s:g} s"
        timeout_ms = "" if within_s is None else f"timeoutMs is {self.server.timeout_ms}; "
        tried = f"; tried {tries} times" if tries > 1 else ""
        return self.error(
            f"could not connect to {self.where}{purpose}{limit}: {self.server.not_running} "
            f"({timeout_ms}{describe_error(error)}{tried})"
        )

    def _broken(
        self, error: http_client.HTTPError, method: str, path: str, doing: str | None
    ) -> AdapterError:
        if doing:
            return self.error(f"{self.where} failed to {doing}: {describe_error(error)}")
        return self.error(
            f"the connection to {self.where} failed during {method} {path}: {describe_error(error)}"
        )

    def _status_error(
        self, reply: Reply, method: str, path: str, doing: str | None = None
    ) -> AdapterError:
        if is_redirect(reply.status):
            return self._redirect_error(reply, f"{method} {path}")
        status, text = reply.status, self._error_text(reply)
        explained = self._explain(status, text)
        if explained is None and doing:
            explained = f"{self.where} could not {doing}: {text} (HTTP {status})"
        if explained is None:
            explained = f"{self.where} answered HTTP {status} to {method} {path}: {text}"
            if status == 404:
                explained += f" ({self.server.wrong_url})"
        if reply.tries > 1:
            explained += f" (tried {reply.tries} times)"
        return self.error(explained)

    def _redirect_error(self, reply: Reply, what: str) -> AdapterError:
        location = reply.headers.get("location")
        target = f"to {self.server_text(shown_location(location))}" if location else "(no Location)"
        return self.error(
            f"{self.where} answered {what} with a redirect (HTTP {reply.status}) {target}: "
            "redirects are not followed (the request and its key would go to another address), "
            "so set baseUrl to the address the server redirects to"
        )

    def _error_text(self, reply: Reply) -> str:
        return self.server_text(error_text(reply))


class _Lines:
    """Cuts decoded bytes into non-empty lines of at most `limit` bytes (a longer one is a
    ValueError), keeping the unfinished last line for the next chunk."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._pending = b""

    def split(self, chunk: bytes) -> list[str]:
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        if any(len(line) > self._limit for line in [*lines, self._pending]):
            raise ValueError("a line is too long")
        return [_text(line) for line in lines if line.strip()]

    def end(self) -> list[str]:
        return [_text(self._pending)] if self._pending.strip() else []


def _text(line: bytes) -> str:
    return line.decode("utf-8", "replace").rstrip("\r")


class _Decoder:
    """Undoes a Content-Encoding (identity, gzip, deflate) a bounded step at a time: `feed` the
    raw bytes, then `take` decoded bytes until it returns b"" (it wants more input)."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._input = b""
        self._zlib = None if encoding == "identity" else zlib.decompressobj(_WBITS[encoding])
        self._maybe_raw = encoding == "deflate"  # some servers send raw deflate, no zlib header

    def feed(self, data: bytes) -> None:
        self._input += data

    def take(self, most: int) -> bytes:
        """At most `most` decoded bytes. Raises zlib.error for a corrupt body."""
        if self._zlib is None and len(self._input) <= most:
            data, self._input = self._input, b""
            return data
        if self._zlib is None:
            data, self._input = self._input[:most], self._input[most:]
            return data
        try:
            data = self._zlib.decompress(self._input, most)
        except zlib.error:
            if not self._maybe_raw:
                raise
            self._zlib, self._maybe_raw = zlib.decompressobj(-zlib.MAX_WBITS), False
            return self.take(most)
        self._maybe_raw = False
        self._input = self._zlib.unconsumed_tail
        return data


_WBITS = {"gzip": zlib.MAX_WBITS | 16, "x-gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


def content_encoding(headers: http_client.Headers) -> str | None:
    """The one Content-Encoding of a reply that `_Decoder` undoes ("identity" when none), or
    None for an encoding it does not (br, zstd, several stacked)."""
    values = [v.strip().lower() for v in headers.get_list("content-encoding")]
    encodings = [v for v in values if v not in ("", "identity")]
    if not encodings:
        return "identity"
    if len(encodings) == 1 and encodings[0] in _WBITS:
        return encodings[0]
    return None


def is_redirect(status: int) -> bool:
    return 300 <= status < 400


def parse_json(data: bytes | str) -> Any:
    """The JSON value of `data`, or ValueError saying why not: `not JSON` (bad syntax or
    encoding, an integer of over 4,300 digits) or `JSON nested too deeply to read` (a server's
    `[[[[…` is Python's RecursionError, which must fail the call, not the run)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None
    except ValueError:
        raise ValueError("not JSON") from None


def error_text(reply: Reply) -> str:
    """The error a server put in its body: `{"error": "..."}` (Ollama), `{"error": {"message":
    ..., "type": ...}}` (OpenAI, llama.cpp), Ollama's `{"error": "<that as a JSON string>"}`
    (v0.30+ passing on llama-server's error), `{"message": ..., "type": ...}` (vLLM) or
    `{"detail": ...}`. Any other body is described by size and type, never quoted: a non-2xx
    answer can carry the model's answer, which stays out of messages and reports. Raw: quote it
    through `JsonClient.server_text`."""
    try:
        data = parse_json(reply.body)
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, str) and error.startswith("{"):
        try:
            inner = parse_json(error)
        except ValueError:
            inner = None
        if isinstance(inner, dict) and "error" in inner:
            error = inner["error"]
    if error is None and isinstance(data, dict) and isinstance(data.get("message"), str):
        error = data  # vLLM: the error object is the body
    if isinstance(error, dict):
        message, kind = error.get("message"), error.get("type") or error.get("code")
        if isinstance(message, str) and isinstance(kind, str) and kind not in message:
            return f"{message} ({kind})"
        if isinstance(message, str):
            return message
    if isinstance(error, str) and error:
        return error
    detail = data.get("detail") if isinstance(data, dict) else None
    if isinstance(detail, str) and detail:
        return detail
    return described_body(reply)


def described_body(reply: Reply) -> str:
    """A body that is no error object, by size and type: `a body of 1,234 bytes (text/html)
    that is no error object`; the reason phrase for an empty one."""
    if not reply.body.strip():
        return reply.reason or "no error text"
    kind = reply.headers.get("content-type", "no Content-Type")
    return f"a body of {len(reply.body):,} bytes ({kind}) that is no error object"


def shown_location(location: str) -> str:
    """A redirect's target as a message may show it: without user:password@, and with a query
    or fragment (where keys travel) replaced by `?…`."""
    try:
        parts = urlsplit(location)
    except ValueError:
        return "an address that is not a valid URL"
    hidden = "?…" if parts.query or parts.fragment or "?" in location or "#" in location else ""
    netloc = parts.netloc.rpartition("@")[2]
    return parts._replace(netloc=netloc, query="", fragment="").geturl() + hidden


def scrub(text: str, secrets: Sequence[str]) -> str:
    """`text` with each secret, and each run of FRAGMENT_CHARS or more consecutive characters
    of one (a key a server cut short, or showed in part), replaced by ***."""
    for secret in secrets:
        text = text.replace(secret, "***")
        if len(secret) > FRAGMENT_CHARS:
            text = _scrub_fragments(text, secret)
    return text


def _scrub_fragments(text: str, secret: str) -> str:
    pattern, starts = _fragments(secret)
    pieces, done = [], 0
    while (found := pattern.search(text, done)) is not None:
        at = found.start()
        length = max(_common_run(text, at, secret, start) for start in starts[found.group()])
        pieces += [text[done:at], "***"]
        done = at + length
    return "".join(pieces) + text[done:]


@functools.cache
def _fragments(secret: str) -> tuple[re.Pattern[str], dict[str, list[int]]]:
    """A pattern of every FRAGMENT_CHARS-long piece of `secret`, and where each piece starts."""
    starts: dict[str, list[int]] = {}
    for start in range(len(secret) - FRAGMENT_CHARS + 1):
        starts.setdefault(secret[start : start + FRAGMENT_CHARS], []).append(start)
    return re.compile("|".join(map(re.escape, starts))), starts


def _common_run(text: str, at: int, secret: str, start: int) -> int:
    length = 0
    while at + length < len(text) and start + length < len(secret):
        if text[at + length] != secret[start + length]:
            break
        length += 1
    return length


def safe_text(text: str, secrets: Sequence[str], limit: int) -> str:
    """`text` scrubbed of `secrets` first (so no cut can leave part of one), then with control
    characters shown as escapes, and cut to `limit` characters."""
    longest = max(map(len, secrets), default=0)
    text = scrub(text[: limit + longest], secrets)  # a secret across `limit` is still whole
    return preview(text, limit)


_URL_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_BAD_HOST_CHARS = frozenset(' <>"{}|\\^`')


def url_problem(url: str) -> str | None:
    """What is wrong with a server URL from a suite or an option, or None. Never echoes the
    URL: it may hold a password or a key. Spaces and non-ASCII characters in the path are
    fine: they are percent-encoded when sent (a `%` that starts no escape becomes `%25`)."""
    control = _URL_CONTROL.search(url)
    if control is not None:  # urlsplit drops tabs and line breaks; others would go out raw
        return (
            f"holds a control character (U+{ord(control.group()):04X} at character "
            f"{control.start() + 1}), which no URL can carry: remove it"
        )
    try:
        parts = urlsplit(url)
        _ = parts.port
    except ValueError:
        return (
            "not a valid URL (a port is a number from 0 to 65535, an IPv6 host is written in "
            "[brackets])"
        )
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL with a host, e.g. http://127.0.0.1:11434"
    if any(c in _BAD_HOST_CHARS for c in parts.hostname):
        return "the host holds a space or a character no host name has"
    if http_client.is_legacy_ipv4(parts.hostname):
        return (
            "the host is an IPv4 address in a legacy spelling (127.1, 2130706433, 0x7f.0.0.1), "
            "which is refused: write its four decimal parts, e.g. 127.0.0.1"
        )
    if parts.username is not None or parts.password is not None:
        return (
            "URLs with embedded credentials are rejected: keep secrets out of the config "
            "(remove the user:password@ part)"
        )
    if "?" in url or "#" in url:
        return (
            "URLs with a query string (?…) or a fragment (#…) are rejected: the URL is shown in "
            "the output and the reports, and a query often carries a key. Remove that part (an "
            'API key goes in an environment variable named by the openai adapter\'s "apiKeyEnv")'
        )
    return None


def base_url_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """An adapter type's `problems` check of its `baseUrl` setting."""
    url = settings.get("baseUrl")
    problem = url_problem(url) if isinstance(url, str) else None
    if problem:
        yield "/baseUrl", problem


def is_loopback(url: str) -> bool:
    """Whether the URL's host is loopback in any spelling (`localhost`, `127.1`, `[::1]`,
    `[::ffff:127.0.0.1]`): proxy variables never apply to it."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return http_client.is_loopback_host(host)


def describe_error(error: http_client.HTTPError) -> str:
    return str(error) or type(error).__name__


def json_body(body: Mapping[str, object]) -> bytes:
    """A request body as JSON in UTF-8, compact."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
