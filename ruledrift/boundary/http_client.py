"""HTTP for transport.JsonClient, on aiohttp: one `Client` talks to one origin (scheme, host,
port) over keep-alive connections, through the http:// proxy the environment sets when it is
asked to trust it. aiohttp does the protocol (its C parser frames and checks every answer, yarl
encodes host names with IDNA 2008 and percent-encodes paths); this module adds RuleDrift's
policy on top:

- which proxy, if any (`environment_proxy`: curl's variables, NO_PROXY with CIDR entries, never
  a proxy for loopback in any spelling), decided once per client;
- a header value that would forge another header is refused before anything is sent;
- a kept-alive connection that received anything while it sat idle (an answer to no request: a
  `408`, one response too many, bytes past a body's end) is closed, never reused: its bytes
  would be read as the next request's answer;
- a request is sent again at most once, on a new connection, and only when nothing of its
  answer arrived (the connection was closed or reset first); `on_send` hears of every send, so
  the caller can count it;
- every failure is one of the errors below, in words: `ConnectError` (no connection: refused,
  name not found, TLS, proxy), `ConnectTimeout`, `ReadTimeout` (the server was silent for longer
  than the read limit) and `ProtocolError` (the server broke HTTP/1.1 or closed the connection
  early).

Bodies are handed out raw (still content-encoded) a piece at a time, so the caller decides how
much to keep. Redirects, cookies and authentication are not this module's job. aiohttp is
imported when the first `Client` is made, so commands that never talk HTTP (`validate`, the
command adapter) do not pay for loading it.
"""

from __future__ import annotations

import base64
import contextvars
import errno
import functools
import ipaddress
import math
import os
import re
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload
from urllib.parse import SplitResult, unquote, urlsplit

if TYPE_CHECKING:
    import aiohttp
    from multidict import CIMultiDictProxy

LINE_LIMIT = 65_536  # one status or header line (aiohttp's max_line_size and max_field_size)
MAX_HEADERS = 256  # header lines in one answer, trailers included
READ_SIZE = 65_536  # the most one piece of a body holds
_CONNECT_TRIES = 1_024  # connections looked at for one request (idle ones are at most
# --concurrency, 256): past that, a server that talks before it is asked (see _connector)

OnSend = Callable[[], None]
# Who hears of the send under way: set by `Client.send` around aiohttp's request, read by the
# connector when it hands that request a connection (the moment the request is sent).
_ON_SEND: contextvars.ContextVar[OnSend | None] = contextvars.ContextVar(
    "ruledrift_on_send", default=None
)


class HTTPError(Exception):
    """Anything that went wrong between RuleDrift and the server."""


class ConnectError(HTTPError):
    """No connection could be opened (or tunnelled, or secured)."""


class ConnectTimeout(ConnectError):
    """Opening the connection took longer than its limit."""


class ReadTimeout(HTTPError):
    """The server was silent for longer than the read limit."""


class ProtocolError(HTTPError):
    """The server answered with something that is not HTTP/1.1, or closed the connection early."""


class Headers:
    """A reply's headers: names without case, values in order, repeats kept."""

    def __init__(self, items: CIMultiDictProxy[str] | list[tuple[str, str]]) -> None:
        self._items = items if not isinstance(items, list) else _multidict(items)

    @overload
    def get(self, name: str) -> str | None: ...

    @overload
    def get(self, name: str, default: str) -> str: ...

    def get(self, name: str, default: str | None = None) -> str | None:
        """Every value of `name`, joined with ", " (as HTTP folds repeats), or `default`."""
        values = self._items.getall(name, [])
        return ", ".join(values) if values else default

    def get_list(self, name: str) -> list[str]:
        """Every value of `name`, comma-separated ones split."""
        return [part.strip() for value in self._items.getall(name, []) for part in value.split(",")]

    def __contains__(self, name: object) -> bool:
        return name in self._items


def _multidict(items: list[tuple[str, str]]) -> CIMultiDictProxy[str]:
    from multidict import CIMultiDict, CIMultiDictProxy

    return CIMultiDictProxy(CIMultiDict(items))


# --- the proxy: RuleDrift's policy, decided before aiohttp is handed one ----------------------


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
    return _Origin(scheme, parts.hostname, parts.port or (443 if scheme == "https" else 80))


@dataclass(frozen=True)
class Proxy:
    url: str  # http://host:port, without credentials
    username: str | None  # from user:password@ in its URL, percent-decoded
    password: str | None
    tunnel_to: str  # host:port of the server, as a CONNECT names it

    @property
    def shown(self) -> str:
        """How messages name the proxy: never with its credentials."""
        return self.url

    @property
    def authorization(self) -> str | None:
        """The `Proxy-Authorization` value of user:password@ in its URL."""
        if self.username is None:
            return None
        pair = f"{self.username}:{self.password or ''}"
        return "Basic " + base64.b64encode(pair.encode()).decode("ascii")

    @property
    def secrets(self) -> tuple[str, ...]:
        """What scrubbing must hide: the password, the user:password pair, and the base64
        token of `Proxy-Authorization: Basic` that carries them."""
        if self.authorization is None:
            return ()
        pair = f"{self.username}:{self.password or ''}"
        token = self.authorization.removeprefix("Basic ")
        return tuple(dict.fromkeys(s for s in (pair, self.password, token) if s))


def environment_proxy(url: str, environ: Mapping[str, str] | None = None) -> Proxy | None:
    """The proxy the environment sets for `url` (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY;
    the lower-case name wins, as with curl), or None: always None for a loopback host, however
    it is spelled. ValueError for a proxy URL RuleDrift cannot use (only http:// proxies are)."""
    found = _proxy_variables(os.environ if environ is None else environ)
    origin = _origin(urlsplit(url))
    value = found.get(origin.scheme) or found.get("all")
    no_proxy = found.get("no")
    if not value or is_loopback_host(origin.host) or (no_proxy and _bypassed(origin, no_proxy)):
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
    shown = _Origin("http", proxy.hostname, port or 80)
    username = None if proxy.username is None else unquote(proxy.username)
    password = None if proxy.password is None else unquote(proxy.password)
    host = f"[{origin.host}]" if ":" in origin.host else origin.host
    return Proxy(f"http://{shown.authority}", username, password, f"{host}:{origin.port}")


def _bypassed(origin: _Origin, no_proxy: str) -> bool:
    """Whether NO_PROXY names the origin: `*`, a host or domain (`example.com` and `.example.com`
    take its subdomains too), an address or a CIDR block (`10.0.0.0/8`, `fd00::/8`), each
    optionally with `:port`."""
    host = origin.host.lower().rstrip(".")
    address = ip_address(host)
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if entry == "*":
            return True
        name, port = _split_port(entry)
        name = name.lstrip(".").rstrip(".")
        if not name or (port and port != str(origin.port)):
            continue
        if host == name or host.endswith("." + name) or _in_block(address, name):
            return True
    return False


def _split_port(entry: str) -> tuple[str, str]:
    """`host:port`, `[::1]:8080`, `fd00::/8` (an IPv6 address or block has no port)."""
    if entry.startswith("["):
        name, _, port = entry[1:].partition("]")
        return name, port.removeprefix(":")
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, port
    return entry, ""


def _in_block(address: ipaddress.IPv4Address | ipaddress.IPv6Address | None, entry: str) -> bool:
    if address is None:
        return False
    try:
        block = ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False
    return address.version == block.version and address in block


def ip_address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host literal names, in any spelling the resolver accepts (`127.1`,
    `0x7f.0.0.1`, `2130706433`; an IPv4-mapped IPv6 address as its IPv4 address), or None for
    a name."""
    host = host.strip("[]").lower()
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        try:  # the legacy forms inet_aton (and so getaddrinfo) reads
            return ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_legacy_ipv4(host: str) -> bool:
    """Whether a host is an IPv4 address in a spelling other than four decimal parts (`127.1`,
    `2130706433`, `0x7f.0.0.1`): the resolver reads it as an address, aiohttp refuses it."""
    try:
        ipaddress.ip_address(host.strip("[]").partition("%")[0])
    except ValueError:
        return ip_address(host) is not None
    return False


def is_loopback_host(host: str) -> bool:
    """Whether a host is this machine's loopback: `localhost` (and `*.localhost`), 127.0.0.0/8
    and ::1, in any spelling."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    address = ip_address(name)
    return address is not None and address.is_loopback


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


# --- the client ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    body: bytes | None
    connect_timeout_s: float
    read_timeout_s: float | None
    content_type: str
    on_send: OnSend | None


class Response:
    """A reply whose head has been read. Read its body with `chunks()` (or not at all), then
    `aclose()` it: a connection whose body was read to its end goes back to the pool."""

    def __init__(
        self, response: aiohttp.ClientResponse, proxy: Proxy | None, read_timeout_s: float | None
    ) -> None:
        self.status = response.status
        self.reason = response.reason or ""
        self.headers = Headers(response.headers)
        self._response = response
        self._proxy = proxy
        self._read_timeout_s = read_timeout_s

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, raw, in pieces of at most READ_SIZE bytes. A silence longer
        than the request's `read_timeout_s` is a ReadTimeout."""
        import aiohttp

        content = self._response.content
        try:
            while data := await content.readany():
                yield data
        except aiohttp.ClientError as error:
            raise _http_error(error, self._proxy, self._read_timeout_s) from None

    async def aclose(self) -> None:
        self._response.release()


class Client:
    """Requests to one origin (`base_url`'s scheme, host and port; its path is a prefix of
    every request's). `trust_env`: use the proxy the environment sets (`environment_proxy`).
    https is verified against the system's certificates (SSL_CERT_FILE and SSL_CERT_DIR add
    others, as for OpenSSL). ValueError for a URL, header or proxy that cannot be used."""

    def __init__(
        self, base_url: str, headers: Mapping[str, str], *, trust_env: bool = True
    ) -> None:
        import aiohttp  # loaded here, not inside the first request's time limit

        del aiohttp
        parts = urlsplit(base_url)
        self._origin = _origin(parts)
        self._base = base_url.rstrip("/")
        for name, value in headers.items():
            check_header(name, value)
        self._proxy = environment_proxy(base_url) if trust_env else None
        authorization = self._proxy.authorization if self._proxy else None
        self._headers = dict(headers)
        self._proxy_headers: dict[str, str] | None = None  # for a CONNECT tunnel
        if authorization and self._origin.scheme == "http":  # to the proxy, with the request
            self._headers["Proxy-Authorization"] = authorization
        elif authorization:
            self._proxy_headers = {"Proxy-Authorization": authorization}
        self._urls: dict[str, Any] = {}
        self._session: aiohttp.ClientSession | None = None
        self._fresh: aiohttp.ClientSession | None = None  # new connections only (a resend)
        self._tls: ssl.SSLContext | None = None

    @property
    def proxy(self) -> str | None:
        return None if self._proxy is None else self._proxy.shown

    @property
    def secrets(self) -> tuple[str, ...]:
        """The proxy's credentials, in every form a message could show them."""
        return () if self._proxy is None else self._proxy.secrets

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        *,
        connect_timeout_s: float,
        read_timeout_s: float | None = None,
        content_type: str = "application/json",
        on_send: OnSend | None = None,
    ) -> Response:
        """Send one request and read the head of its reply (the body is the Response's).
        `read_timeout_s`: the longest silence allowed once the request is sent, for the head
        and between two pieces of the body (ReadTimeout). `on_send` is called each time the
        request is about to go out on a connection (twice when it is sent again); whatever it
        raises stops the request there."""
        request = _Request(
            method, path, body, connect_timeout_s, read_timeout_s, content_type, on_send
        )
        try:
            return await self._attempt(self._pool(), request)
        except _Unanswered:
            pass  # nothing of the answer arrived: once more, on a new connection
        try:
            return await self._attempt(self._new_connections(), request)
        except _Unanswered as unanswered:
            raise ProtocolError(str(unanswered)) from None

    async def aclose(self) -> None:
        sessions = (self._session, self._fresh)
        self._session = self._fresh = None
        for session in sessions:
            if session is not None:
                await session.close()

    async def _attempt(self, session: aiohttp.ClientSession, request: _Request) -> Response:
        import aiohttp

        headers = self._headers
        if request.body is not None:
            headers = {**headers, "Content-Type": request.content_type}
        read_timeout_s = request.read_timeout_s
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=request.connect_timeout_s,
            sock_read=read_timeout_s,
            ceil_threshold=math.inf,  # never rounded up to a whole second: the deadline holds
        )
        token = _ON_SEND.set(request.on_send)
        try:
            response = await session.request(
                request.method,
                self._url(request.path),
                data=request.body,
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
                proxy=self._proxy.url if self._proxy else None,
                proxy_headers=self._proxy_headers,
            )
        except (
            aiohttp.ServerDisconnectedError,
            aiohttp.ClientOSError,
            aiohttp.ClientConnectionResetError,
        ) as error:
            if _unanswered(error):
                raise _Unanswered(_http_error(error, self._proxy, read_timeout_s)) from None
            raise _http_error(error, self._proxy, read_timeout_s) from None
        except aiohttp.ClientError as error:
            raise _http_error(error, self._proxy, read_timeout_s) from None
        finally:
            _ON_SEND.reset(token)
        return _checked(Response(response, self._proxy, read_timeout_s))

    def _url(self, path: str) -> Any:
        url = self._urls.get(path)
        if url is None:
            from yarl import URL

            url = self._urls[path] = URL(self._base + path)  # percent-encodes what must be
        return url

    def _pool(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = self._new_session(keep_alive=True)
        return self._session

    def _new_connections(self) -> aiohttp.ClientSession:
        if self._fresh is None:
            self._fresh = self._new_session(keep_alive=False)
        return self._fresh

    def _new_session(self, *, keep_alive: bool) -> aiohttp.ClientSession:
        import aiohttp

        if self._origin.scheme == "https" and self._tls is None:
            self._tls = _tls_context()
        tls: ssl.SSLContext | bool = self._tls or True
        session = aiohttp.ClientSession(
            connector=_connector()(limit=0, force_close=not keep_alive, ssl=tls),
            auto_decompress=False,  # transport.py decodes, a bounded step at a time
            trust_env=False,  # the proxy is chosen here; never ~/.netrc credentials
            cookie_jar=aiohttp.DummyCookieJar(),  # a server's cookies are never sent back
            skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),  # only ours
            max_line_size=LINE_LIMIT,
            max_field_size=LINE_LIMIT,
            max_headers=MAX_HEADERS,
            read_bufsize=READ_SIZE,
        )
        # aiohttp sends an idempotent request again when a kept-alive connection fails, on any
        # connection and whatever arrived first; `send` does it instead, once and counted.
        session._retry_connection = False
        return session


def _tls_context() -> ssl.SSLContext:
    context = ssl.create_default_context()  # the system's store; SSL_CERT_FILE as read now
    context.set_alpn_protocols(["http/1.1"])
    return context


@functools.cache
def _connector() -> type[aiohttp.TCPConnector]:
    """aiohttp's connector, with RuleDrift's two additions: an idle connection that received
    anything since its last answer is closed instead of reused (aiohttp would read those bytes
    as the next answer), and the request being sent is told (`_ON_SEND`)."""
    import aiohttp

    class Connector(aiohttp.TCPConnector):
        async def connect(self, *args: Any, **kwargs: Any) -> aiohttp.connector.Connection:
            for _ in range(_CONNECT_TRIES):
                connection = await super().connect(*args, **kwargs)
                protocol = connection.protocol
                if protocol is None or not protocol.should_close:
                    break
                connection.close()  # an answer to nothing, or bytes past an answer's end
            else:
                raise ProtocolError(
                    "the server sent data no request asked for on every connection tried"
                )
            on_send = _ON_SEND.get()
            if on_send is not None:
                try:
                    on_send()
                except BaseException:
                    connection.release()
                    raise
            return connection

    return Connector


class _Unanswered(Exception):
    """The connection was closed or reset before any byte of the answer arrived."""

    def __init__(self, error: HTTPError) -> None:
        super().__init__(str(error))


def _unanswered(error: aiohttp.ClientError) -> bool:
    import aiohttp

    if isinstance(error, aiohttp.ClientConnectorError):  # not connected: nothing was sent
        return False
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return isinstance(error.message, str)  # else: the part of the head that arrived
    return True  # reset, broken pipe: before the head, since the head had not been read


def _checked(response: Response) -> Response:
    if response.status == 101:
        response._response.close()
        raise ProtocolError("the server switched protocols, which RuleDrift never asked for")
    if response.status < 100:
        response._response.close()
        raise ProtocolError(
            f"the server's answer has the status {response.status}, which is not an HTTP status"
        )
    return response


def _http_error(error: Exception, proxy: Proxy | None, read_timeout_s: float | None) -> HTTPError:
    """aiohttp's error in RuleDrift's words and classes."""
    import aiohttp

    via = f" through the proxy {proxy.shown}" if proxy else ""
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return ConnectTimeout("timed out" + via)
    if isinstance(error, aiohttp.SocketTimeoutError):
        return ReadTimeout(f"the server sent nothing for {read_timeout_s or 0:g} s")
    if isinstance(error, aiohttp.ClientConnectorCertificateError):
        return ConnectError(f"TLS failed: {_tls_reason(error.certificate_error)}{via}")
    if isinstance(error, aiohttp.ClientConnectorSSLError | aiohttp.ClientSSLError):
        return ConnectError(f"TLS failed: {_tls_reason(error.os_error)}{via}")
    if isinstance(error, aiohttp.ClientHttpProxyError):
        return ConnectError(
            f"the proxy {proxy.shown if proxy else ''} refused the tunnel to "
            f"{proxy.tunnel_to if proxy else 'the server'}: HTTP {error.status}"
        )
    if isinstance(error, aiohttp.ClientConnectorError):
        return ConnectError(_os_error_text(error.os_error) + via)
    if isinstance(error, aiohttp.ServerDisconnectedError):
        if isinstance(error.message, str):
            return ProtocolError("the server closed the connection without answering")
        return ProtocolError("the server closed the connection in the middle of its answer's head")
    if isinstance(error, aiohttp.ClientPayloadError):
        return ProtocolError(_payload_problem(error))
    if isinstance(error, aiohttp.ClientResponseError) and error.request_info.method == "CONNECT":
        shown = proxy.shown if proxy else "in between"
        return ConnectError(f"the proxy {shown} broke the tunnel: {_parse_problem(error)}")
    if isinstance(error, aiohttp.ClientResponseError):
        return ProtocolError(f"the server's answer is not valid HTTP/1.1: {_parse_problem(error)}")
    if isinstance(error, OSError):
        return ProtocolError(_os_error_text(error))
    return ProtocolError(str(error) or type(error).__name__)


def _tls_reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    verify = getattr(error, "verify_message", None)
    if isinstance(reason, str) and isinstance(verify, str) and verify:
        return f"{reason} ({verify})"
    if isinstance(reason, str):
        return reason
    return str(error) or type(error).__name__


def _payload_problem(error: aiohttp.ClientPayloadError) -> str:
    import aiohttp

    cause, text = error.__cause__, str(error)
    if "ConnectionResetError" in text:  # aiohttp appends the error that ended the connection
        return "the server reset the connection"
    if isinstance(cause, aiohttp.http_exceptions.ContentLengthError):
        return "the server closed the connection before the end of its answer (Content-Length)"
    if isinstance(cause, aiohttp.http_exceptions.TransferEncodingError):
        return "the server closed the connection before the end of its chunked answer"
    if isinstance(cause, OSError):
        return _os_error_text(cause)
    return f"the answer's body broke off: {_first_words(text)}"


_QUOTED_BYTES = re.compile(r":?\s*b'.*", re.DOTALL)


def _parse_problem(error: aiohttp.ClientResponseError) -> str:
    """What aiohttp's parser objected to, without the bytes it quotes (the server's)."""
    cause = error.__cause__
    message = getattr(cause, "message", None) or error.message or "unreadable"
    return _first_words(str(message))


def _first_words(text: str) -> str:
    text = _QUOTED_BYTES.sub("", text)
    lines = [line.strip().rstrip(":") for line in text.split("\n") if line.strip()]
    return ": ".join(lines[:2]) or "unreadable"


def _os_error_text(error: OSError) -> str:
    if isinstance(error, socket.gaierror):
        return f"the host name could not be resolved ({error.strerror})"
    if isinstance(error, ConnectionRefusedError) or error.errno == errno.ECONNREFUSED:
        return "connection refused"
    if isinstance(error, ConnectionResetError) or error.errno == errno.ECONNRESET:
        return "the server reset the connection"
    if isinstance(error, BrokenPipeError) or error.errno == errno.EPIPE:
        return "the server closed the connection while the request was being sent"
    return error.strerror or str(error) or type(error).__name__
