"""A small HTTP/1.1 client on asyncio streams: what transport.JsonClient sends its requests
through. One `Client` talks to one origin (scheme, host, port) over a pool of keep-alive
connections, through an http:// proxy from the environment when it is asked to trust it.

It does as little as a JSON client needs, and does it for a server that is trusted with nothing:
status lines and headers are read with a cap on each line and on their number, bodies are framed
by Content-Length, chunked encoding or the end of the connection, and are handed out raw (still
content-encoded) a piece at a time, so the caller decides how much to keep. Header values sent
are checked for line breaks. Redirects, cookies and authentication are not this module's job.

Errors are `HTTPError`s: `ConnectError` (no connection: refused, name not found, TLS, proxy),
`ConnectTimeout`, `ReadTimeout` (an idle limit between two pieces of a body) and `ProtocolError`
(the server broke HTTP or closed the connection early). A connection that was kept alive and
turns out closed when it is reused is replaced once, transparently.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import re
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import TypeVar, overload
from urllib.parse import SplitResult, unquote, urlsplit

T = TypeVar("T")
LINE_LIMIT = 65_536  # one status or header line, and one chunk-size line
MAX_HEADERS = 256  # header lines in one answer
READ_SIZE = 65_536  # the most one read of a body asks for
MAX_IDLE = 64  # connections kept alive for later requests


class HTTPError(Exception):
    """Anything that went wrong between RuleDrift and the server."""


class ConnectError(HTTPError):
    """No connection could be opened (or tunnelled, or secured)."""


class ConnectTimeout(ConnectError):
    """Opening the connection took longer than its limit."""


class ReadTimeout(HTTPError):
    """The server was silent for longer than the idle limit while sending a body."""


class ProtocolError(HTTPError):
    """The server answered with something that is not HTTP/1.1, or closed the connection early."""


class Headers:
    """A reply's headers: names without case, values in order, repeats kept."""

    def __init__(self, items: list[tuple[str, str]]) -> None:
        self._items = [(name.lower(), value) for name, value in items]

    @overload
    def get(self, name: str) -> str | None: ...

    @overload
    def get(self, name: str, default: str) -> str: ...

    def get(self, name: str, default: str | None = None) -> str | None:
        """Every value of `name`, joined with ", " (as HTTP folds repeats), or `default`."""
        values = [v for n, v in self._items if n == name.lower()]
        return ", ".join(values) if values else default

    def get_list(self, name: str) -> list[str]:
        """Every value of `name`, comma-separated ones split."""
        return [part.strip() for n, v in self._items if n == name.lower() for part in v.split(",")]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and any(n == name.lower() for n, _ in self._items)


@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str  # without brackets
    port: int

    @property
    def authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def _origin(parts: SplitResult) -> _Origin:
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL with a host")
    host = parts.hostname
    if not host.isascii():  # an international name travels as its IDNA (punycode) form
        host = host.encode("idna").decode("ascii")
    return _Origin(scheme, host, parts.port or (443 if scheme == "https" else 80))


@dataclass(frozen=True)
class _Proxy:
    origin: _Origin
    authorization: str | None  # a Proxy-Authorization value, from user:password@ in its URL

    @property
    def shown(self) -> str:
        """How messages name the proxy: never with its credentials."""
        return f"http://{self.origin.authority}"


def environment_proxy(url: str, environ: Mapping[str, str] | None = None) -> _Proxy | None:
    """The proxy the environment sets for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY;
    the lower-case name wins, as with curl and httpx), or None. ValueError for a proxy URL this
    client cannot use (only http:// proxies are)."""
    found = _proxy_variables(os.environ if environ is None else environ)
    origin = _origin(urlsplit(url))
    value = found.get(origin.scheme) or found.get("all")
    no_proxy = found.get("no")
    if not value or (no_proxy and _bypassed(origin, no_proxy)):
        return None
    if "://" not in value:
        value = f"http://{value}"
    try:
        proxy = urlsplit(value)
        port = proxy.port
    except ValueError:
        proxy, port = None, None
    if proxy is None or proxy.scheme.lower() != "http" or not proxy.hostname:
        raise ValueError(
            f"the proxy set in the environment for {origin.scheme}:// URLs is not an http:// "
            "proxy URL (RuleDrift talks to a proxy in plain HTTP and tunnels https through it)"
        )
    authorization = None
    if proxy.username is not None:
        pair = f"{unquote(proxy.username)}:{unquote(proxy.password or '')}"
        authorization = "Basic " + base64.b64encode(pair.encode()).decode("ascii")
    return _Proxy(_Origin("http", proxy.hostname, port or 80), authorization)


def _bypassed(origin: _Origin, no_proxy: str) -> bool:
    """Whether NO_PROXY names the origin: `*`, a host or domain (`example.com` and `.example.com`
    take its subdomains too), or an address, each optionally with `:port`."""
    host = origin.host.lower().rstrip(".")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        name, port = entry, ""
        if entry.startswith("["):  # [::1]:8080
            name, _, port = entry[1:].partition("]")
            port = port.removeprefix(":")
        elif entry.count(":") == 1:
            name, _, port = entry.partition(":")
        name = name.lstrip(".").rstrip(".")
        if not name or (port and port != str(origin.port)):
            continue
        if host == name or host.endswith("." + name):
            return True
    return False


def _proxy_variables(environ: Mapping[str, str]) -> dict[str, str]:
    """{"http": …, "https": …, "all": …, "no": …} from *_PROXY variables, lower case last."""
    found: dict[str, str] = {}
    for key in sorted(environ, key=str.islower):
        if key.lower().endswith("_proxy") and environ[key].strip():
            found[key.lower().removesuffix("_proxy")] = environ[key].strip()
    return found


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def check_header(name: str, value: str) -> None:
    """ValueError when a header could not be sent as it is (a line break in a value would start
    a header, or a request, of its own)."""
    if not _TOKEN.fullmatch(name):
        raise ValueError(f"the header name {name!r} is not a valid HTTP header name")
    if _CONTROL.search(value):
        raise ValueError(
            f"the value of the header {name} holds a line break or another control character"
        )


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def reusable(self) -> bool:
        return not (self.writer.is_closing() or self.reader.at_eof())

    def close(self) -> None:
        self.writer.close()


class Response:
    """A reply whose head has been read. Read its body with `chunks()` (or not at all), then
    `aclose()` it: a connection whose body was read to its end goes back to the pool."""

    def __init__(
        self,
        client: Client,
        connection: _Connection,
        status: int,
        reason: str,
        headers: Headers,
        framing: tuple[str, int],
        keep_alive: bool,
    ) -> None:
        self.status = status
        self.reason = reason
        self.headers = headers
        self._client = client
        self._connection: _Connection | None = connection
        self._framing = framing  # ("length", n), ("chunked", 0), ("close", 0)
        self._keep_alive = keep_alive
        self._done = framing == ("length", 0)

    async def chunks(self, idle_timeout_s: float | None = None) -> AsyncIterator[bytes]:
        """The body as it arrives, raw, in pieces of at most READ_SIZE bytes. `idle_timeout_s`:
        the longest silence allowed between two pieces (ReadTimeout)."""
        connection = self._connection
        if connection is None or self._done:
            return
        kind, length = self._framing
        reader = connection.reader
        try:
            if kind == "length":
                left = length
                while left:
                    data = await _read(reader, min(left, READ_SIZE), idle_timeout_s)
                    if not data:
                        raise ProtocolError(
                            f"the server closed the connection {left:,} bytes before the end of "
                            "its answer"
                        )
                    left -= len(data)
                    yield data
            elif kind == "chunked":
                async for data in _chunked(reader, idle_timeout_s):
                    yield data
            else:
                while data := await _read(reader, READ_SIZE, idle_timeout_s):
                    yield data
                self._keep_alive = False
            self._done = True
        except OSError as error:
            raise ProtocolError(_os_error_text(error)) from None

    async def aclose(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            self._client._release(connection, self._done and self._keep_alive)


async def _within(silence_s: float | None, step: Awaitable[T]) -> T:
    """`step`, or ReadTimeout when the server sends nothing for `silence_s` (None: no limit)."""
    if silence_s is None:
        return await step
    try:
        async with asyncio.timeout(silence_s):
            return await step
    except TimeoutError:
        raise ReadTimeout(f"the server sent nothing for {silence_s:g} s") from None


async def _read(reader: asyncio.StreamReader, most: int, idle_timeout_s: float | None) -> bytes:
    return await _within(idle_timeout_s, reader.read(most))


async def _chunked(
    reader: asyncio.StreamReader, idle_timeout_s: float | None
) -> AsyncIterator[bytes]:
    while True:
        size_text = (await _body_line(reader, idle_timeout_s)).split(b";", 1)[0].strip()
        if not size_text or len(size_text) > 16 or size_text.strip(_HEX):
            raise ProtocolError("the server sent a chunked body with a malformed chunk size")
        left = int(size_text, 16)
        if left == 0:
            for _ in range(MAX_HEADERS):  # trailers, then the empty line
                if not await _body_line(reader, idle_timeout_s):
                    return
            raise ProtocolError(f"the server sent more than {MAX_HEADERS} trailer lines")
        while left:
            data = await _read(reader, min(left, READ_SIZE), idle_timeout_s)
            if not data:
                raise ProtocolError("the server closed the connection inside a chunk of its answer")
            left -= len(data)
            yield data
        if await _body_line(reader, idle_timeout_s):
            raise ProtocolError("the server sent a chunk longer than its size said")


_HEX = b"0123456789abcdefABCDEF"


async def _body_line(reader: asyncio.StreamReader, idle_timeout_s: float | None) -> bytes:
    """A line of a chunked body (a chunk size, the end of a chunk, a trailer), awaited no
    longer than `idle_timeout_s` (ReadTimeout)."""
    try:
        return await _within(idle_timeout_s, _line(reader))
    except _Closed:
        raise ProtocolError(
            "the server closed the connection before the end of its chunked answer"
        ) from None


async def _line(reader: asyncio.StreamReader) -> bytes:
    """One line without its line break; EOF before a line break is a ProtocolError."""
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as error:
        if error.partial:
            raise ProtocolError(
                "the server closed the connection in the middle of a line"
            ) from None
        raise _Closed() from None
    except asyncio.LimitOverrunError:
        raise ProtocolError(f"the server sent a line longer than {LINE_LIMIT:,} bytes") from None
    return line.rstrip(b"\r\n")


class _Closed(ProtocolError):
    """The connection ended where a line should have started (nothing of it was received)."""

    def __init__(self) -> None:
        super().__init__("the server closed the connection without answering")


class Client:
    """Requests to one origin (`base_url`'s scheme, host and port; its path is a prefix of
    every request's). `trust_env`: use the proxy the environment sets (HTTP_PROXY, HTTPS_PROXY,
    ALL_PROXY, NO_PROXY). https is verified against the system's certificates (SSL_CERT_FILE
    and SSL_CERT_DIR add others, as for OpenSSL). ValueError for a URL, header or proxy that
    cannot be used."""

    def __init__(
        self, base_url: str, headers: Mapping[str, str], *, trust_env: bool = True
    ) -> None:
        parts = urlsplit(base_url)
        self._origin = _origin(parts)
        self._prefix = parts.path.rstrip("/")
        for name, value in headers.items():
            check_header(name, value)
        self._headers = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        self._proxy = environment_proxy(base_url) if trust_env else None
        self._tls: ssl.SSLContext | None = None
        self._idle: list[_Connection] = []
        self._closed = False

    @property
    def proxy(self) -> str | None:
        return None if self._proxy is None else self._proxy.shown

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        connect_timeout_s: float,
        head_timeout_s: float | None = None,
        content_type: str = "application/json",
    ) -> Response:
        """Send one request and read the head of its reply (the body is the Response's).
        `head_timeout_s`: how long the head may take once the request is sent (ReadTimeout)."""
        head = self._head(method, path, body, content_type)
        while True:
            connection = self._idle_connection()
            fresh = connection is None
            if connection is None:
                connection = await self._connect(connect_timeout_s)
            try:
                return await self._exchange(connection, method, head, body, head_timeout_s)
            except (_Closed, ConnectionResetError, BrokenPipeError) as error:
                connection.close()
                if fresh:  # a new connection the server closed at once: no retry
                    if isinstance(error, ProtocolError):
                        raise
                    raise ProtocolError(_os_error_text(error)) from None
                # a kept-alive connection the server had closed meanwhile: try a new one
            except OSError as error:
                connection.close()
                raise ProtocolError(_os_error_text(error)) from None
            except BaseException:
                connection.close()
                raise

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _head(self, method: str, path: str, body: bytes | None, content_type: str) -> bytes:
        target = self._prefix + path
        if self._proxy is not None and self._origin.scheme == "http":
            target = f"http://{self._origin.authority}{target}"  # absolute form, to a proxy
        lines = f"{method} {target} HTTP/1.1\r\nHost: {self._origin.authority}\r\n{self._headers}"
        if self._proxy is not None and self._proxy.authorization and self._origin.scheme == "http":
            lines += f"Proxy-Authorization: {self._proxy.authorization}\r\n"
        if body is not None:
            lines += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        return (lines + "\r\n").encode("utf-8")

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if connection.reusable():
                return connection
            connection.close()
        return None

    def _release(self, connection: _Connection, reusable: bool) -> None:
        if reusable and not self._closed and connection.reusable() and len(self._idle) < MAX_IDLE:
            self._idle.append(connection)
        else:
            connection.close()

    async def _exchange(
        self,
        connection: _Connection,
        method: str,
        head: bytes,
        body: bytes | None,
        head_timeout_s: float | None,
    ) -> Response:
        connection.writer.write(head + body if body else head)
        await connection.writer.drain()
        status, reason, version, headers = await _within(
            head_timeout_s, _read_head(connection.reader)
        )
        if status == 101:
            raise ProtocolError("the server switched protocols, which RuleDrift never asked for")
        keep_alive = version == "HTTP/1.1" and "close" not in (
            v.lower() for v in headers.get_list("connection")
        )
        framing = _framing(method, status, headers)
        if framing[0] == "close":
            keep_alive = False
        return Response(self, connection, status, reason, headers, framing, keep_alive)

    async def _connect(self, timeout_s: float) -> _Connection:
        target = self._origin if self._proxy is None else self._proxy.origin
        tls = self._origin.scheme == "https"
        try:
            async with asyncio.timeout(timeout_s):
                reader, writer = await asyncio.open_connection(
                    target.host,
                    target.port,
                    limit=LINE_LIMIT,
                    ssl=self._tls_context() if tls and self._proxy is None else None,
                    server_hostname=self._origin.host if tls and self._proxy is None else None,
                )
                connection = _Connection(reader, writer)
                if tls and self._proxy is not None:
                    await self._tunnel(connection)
                    await writer.start_tls(self._tls_context(), server_hostname=self._origin.host)
        except TimeoutError:
            raise ConnectTimeout("timed out") from None
        except ssl.SSLError as error:
            raise ConnectError(f"TLS failed: {error.reason or error}") from None
        except OSError as error:
            raise ConnectError(self._connect_failure(error)) from None
        sock = writer.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    async def _tunnel(self, connection: _Connection) -> None:
        assert self._proxy is not None
        host = f"[{self._origin.host}]" if ":" in self._origin.host else self._origin.host
        authority = f"{host}:{self._origin.port}"
        auth = self._proxy.authorization
        request = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
        if auth:
            request += f"Proxy-Authorization: {auth}\r\n"
        connection.writer.write((request + "\r\n").encode("utf-8"))
        await connection.writer.drain()
        try:
            status, _, _ = _status_line(await _line(connection.reader))
            await _headers(connection.reader)
        except ProtocolError as error:
            connection.close()
            raise ConnectError(f"the proxy {self._proxy.shown} broke the tunnel: {error}") from None
        if not 200 <= status < 300:
            connection.close()
            raise ConnectError(
                f"the proxy {self._proxy.shown} refused the tunnel to {authority}: HTTP {status}"
            )

    def _tls_context(self) -> ssl.SSLContext:
        if self._tls is None:
            self._tls = ssl.create_default_context()
            self._tls.set_alpn_protocols(["http/1.1"])
        return self._tls

    def _connect_failure(self, error: OSError) -> str:
        via = f" through the proxy {self._proxy.shown}" if self._proxy else ""
        return _os_error_text(error) + via


def _os_error_text(error: OSError) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"the host name could not be resolved ({error.strerror})"
    if isinstance(error, ConnectionResetError):
        return "the server reset the connection"
    if isinstance(error, BrokenPipeError):
        return "the server closed the connection while the request was being sent"
    return error.strerror or str(error) or type(error).__name__


async def _read_head(reader: asyncio.StreamReader) -> tuple[int, str, str, Headers]:
    """Status, reason, HTTP version and headers of the final answer (1xx ones skipped)."""
    while True:
        status, reason, version = _status_line(await _line(reader))
        headers = await _headers(reader)
        if status >= 200 or status == 101:
            return status, reason, version, headers


def _status_line(line: bytes) -> tuple[int, str, str]:
    version, _, rest = line.partition(b" ")
    code, _, reason = rest.partition(b" ")
    if version not in (b"HTTP/1.1", b"HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ProtocolError("the server's answer does not start with an HTTP/1.1 status line")
    return int(code), reason.decode("latin-1").strip(), version.decode("ascii")


async def _headers(reader: asyncio.StreamReader) -> Headers:
    items: list[tuple[str, str]] = []
    for _ in range(MAX_HEADERS + 1):
        line = await _line(reader)
        if not line:
            return Headers(items)
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise ProtocolError("the server sent a malformed header line")
        items.append((name.decode("latin-1"), value.strip().decode("latin-1")))
    raise ProtocolError(f"the server sent more than {MAX_HEADERS} header lines")


def _framing(method: str, status: int, headers: Headers) -> tuple[str, int]:
    """How the body ends: ("length", n), ("chunked", 0) or ("close", 0) (RFC 9112, 6.3)."""
    if method == "HEAD" or status in (204, 304):
        return ("length", 0)
    codings = [c.lower() for c in headers.get_list("transfer-encoding") if c]
    if codings:
        if codings[-1] != "chunked":
            return ("close", 0)
        return ("chunked", 0)
    lengths = set(headers.get_list("content-length"))
    if not lengths:
        return ("close", 0)
    if len(lengths) > 1 or not all(v.isdigit() and len(v) <= 18 for v in lengths):
        raise ProtocolError("the server sent an invalid Content-Length")
    return ("length", int(lengths.pop()))
