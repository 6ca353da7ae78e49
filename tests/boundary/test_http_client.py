"""The HTTP client (aiohttp with RuleDrift's policy on top) against real servers on 127.0.0.1
that answer byte for byte what each test scripts: framing (length, chunked, until close),
keep-alive and its stale connections, answers to no request (a desync), resends and their
count, broken answers, header checks, read limits, proxies (plain and CONNECT tunnels, NO_PROXY)
and TLS."""

from __future__ import annotations

import asyncio
import base64
import socket
import ssl
import struct
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trustme

from ruledrift.boundary import http_client
from ruledrift.boundary.http_client import Client, environment_proxy

pytestmark = pytest.mark.process

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
T = TypeVar("T")
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


class Served:
    """A server's address and what it saw: connections opened and request heads read."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.connections = 0
        self.heads: list[bytes] = []


@asynccontextmanager
async def serve(
    answer: Callable[[Served, int], bytes | None] | None = None,
    *,
    handler: Handler | None = None,
    tls: ssl.SSLContext | None = None,
    close_after: bool = False,
) -> AsyncIterator[Served]:
    """A server that reads each request head (and its Content-Length body) and writes
    `answer(served, n)` for the n-th request on the connection; None closes the connection, and
    so does every answer with `close_after`."""
    served = Served(0)

    async def scripted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.connections += 1
        try:
            for n in range(1000):
                head = await reader.readuntil(b"\r\n\r\n")
                served.heads.append(head)
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":")[1]))
                data = answer(served, n) if answer else OK
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handler or scripted, "127.0.0.1", 0, ssl=tls)
    served.port = server.sockets[0].getsockname()[1]
    served.url = f"{'https' if tls else 'http'}://127.0.0.1:{served.port}"
    async with server:
        yield served


async def body_of(client: Client, method: str = "GET", path: str = "/x", **kw: object) -> bytes:
    response = await client.send(method, path, connect_timeout_s=2, **kw)  # type: ignore[arg-type]
    try:
        return b"".join([chunk async for chunk in response.chunks()])
    finally:
        await response.aclose()


class Sends:
    """An `on_send` that counts."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine, 20))


def test_keep_alive_reuses_one_connection_and_sends_the_head_it_should() -> None:
    async def scenario() -> Served:
        async with serve() as served:
            client = Client(served.url + "/v1/", {"Authorization": "Bearer k"}, trust_env=False)
            assert await body_of(client, "POST", "/chat", body=b'{"a":1}') == b"ok"
            assert await body_of(client) == b"ok"
            await client.aclose()
            return served

    served = run(scenario())
    assert served.connections == 1
    first = served.heads[0].decode()
    assert first.startswith("POST /v1/chat HTTP/1.1\r\n")
    lines = first.split("\r\n")[1:-2]
    assert sorted(lines) == sorted(
        [
            f"Host: 127.0.0.1:{served.port}",
            "Authorization: Bearer k",
            "Content-Type: application/json",
            "Content-Length: 7",
        ]
    )  # what the caller asked for, nothing of aiohttp's own (Accept, User-Agent, …)
    assert served.heads[1].decode().startswith("GET /v1/x HTTP/1.1\r\n")


@pytest.mark.parametrize(
    ("answer", "body"),
    [
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nab\r\n1\r\nc\r\n"
            b"0\r\nX-Trailer: t\r\n\r\n",
            b"abc",
        ),
        (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nxyz", b"xyz"),
        (b"HTTP/1.1 204 No Content\r\n\r\n", b""),
    ],
)
def test_bodies_are_framed_as_the_server_says(answer: bytes, body: bytes) -> None:
    async def scenario() -> tuple[bytes, bytes, int]:
        async with serve(lambda s, n: answer) as served:
            client = Client(served.url, {}, trust_env=False)
            first, second = await body_of(client), await body_of(client)
            await client.aclose()
            return first, second, served.connections

    assert run(scenario()) == (body, body, 1)


def test_a_body_that_ends_with_the_connection_is_read_whole_and_never_reused() -> None:
    async def scenario() -> tuple[bytes, int]:
        ends = b"HTTP/1.1 200 OK\r\n\r\nto the end"
        async with serve(lambda s, n: ends, close_after=True) as served:
            client = Client(served.url, {}, trust_env=False)
            body = await body_of(client)
            await body_of(client)
            await client.aclose()
            return body, served.connections

    assert run(scenario()) == (b"to the end", 2)


def test_connection_close_and_http_1_0_are_not_reused() -> None:
    answers = [
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    ]

    async def scenario(answer: bytes) -> int:
        async with serve(lambda s, n: answer if n == 0 else None) as served:
            client = Client(served.url, {}, trust_env=False)
            for _ in range(3):
                assert await body_of(client) == b"ok"
            await client.aclose()
            return served.connections

    for answer in answers:
        assert run(scenario(answer)) == 3


def test_a_kept_alive_connection_the_server_closed_is_replaced_once() -> None:
    async def scenario() -> int:
        # each connection answers one request and then closes without saying so
        async with serve(lambda s, n: OK if n == 0 else None) as served:
            client = Client(served.url, {}, trust_env=False)
            for _ in range(3):
                assert await body_of(client) == b"ok"
                await asyncio.sleep(0)  # a request may also race the close: both are covered
            await client.aclose()
            return served.connections

    assert run(scenario()) == 3


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"", "the server closed the connection without answering"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not valid HTTP/1.1: Bad status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "not valid HTTP/1.1: Bad status line"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "more than 65536 bytes"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 300 + b"\r\n", "Too many headers"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "Invalid header token"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "Duplicate Content-Length",
        ),
        (  # repeated, even with one value: a server that cannot frame its answers
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\nContent-Length: 1\r\n\r\nq",
            "Duplicate Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Invalid character in Content-Length"),
        (  # "²" is a digit to str.isdigit() and a ValueError to int(): it once crashed the run
            b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nok",  # one byte: ² in Latin-1
            "Invalid character in Content-Length",
        ),
        (  # both framings at once: which one the server meant cannot be known (RFC 9112 6.3)
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"2\r\nok\r\n0\r\n\r\n",
            "Transfer-Encoding can't be present with Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "before the end of its answer"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "Invalid character in chunk size",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            "before the end of its chunked answer",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            "Expected LF after chunk data",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n",
            "before the end of its chunked answer",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0",
            "before the end of its chunked answer",
        ),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"),
        (  # below 100: once taken for an interim answer, then waited on to the deadline
            b"HTTP/1.1 099 Odd\r\nContent-Length: 2\r\n\r\nok",
            "the status 99, which is not an HTTP status",
        ),
    ],
)
def test_a_broken_answer_is_a_protocol_error_naming_what_broke(answer: bytes, problem: str) -> None:
    async def scenario() -> str:
        async with serve(lambda s, n: answer, close_after=True) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(http_client.ProtocolError) as raised:
                await body_of(client)
            await client.aclose()
            return str(raised.value)

    assert problem in str(run(scenario()))


def test_a_silent_server_is_a_read_timeout_and_a_refused_one_a_connect_error() -> None:
    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        await asyncio.sleep(5)

    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
        await asyncio.sleep(5)

    async def stalls_between_chunks(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n")
        await asyncio.sleep(5)

    async def scenario() -> None:
        async with serve(handler=stalls_between_chunks) as served:
            client = Client(served.url, {}, trust_env=False)
            response = await client.send("GET", "/", connect_timeout_s=1, read_timeout_s=0.2)
            chunks = response.chunks()
            assert await anext(chunks) == b"ab"
            with pytest.raises(http_client.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await anext(chunks)  # waiting for the next chunk's size line
            await response.aclose()
            await client.aclose()
        async with serve(handler=mute) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(http_client.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await client.send("GET", "/", connect_timeout_s=1, read_timeout_s=0.2)
            await client.aclose()
        async with serve(handler=stalls) as served:
            client = Client(served.url, {}, trust_env=False)
            response = await client.send("GET", "/", connect_timeout_s=1, read_timeout_s=0.2)
            pieces = response.chunks()
            assert await anext(pieces) == b"ab"
            with pytest.raises(http_client.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await anext(pieces)
            await response.aclose()
            await client.aclose()
            port = served.port
        refused = Client(f"http://127.0.0.1:{port}", {}, trust_env=False)
        with pytest.raises(http_client.ConnectError, match="connection refused"):
            await refused.send("GET", "/", connect_timeout_s=1)
        await refused.aclose()

    run(scenario())


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("Authorization", "Bearer k\r\nX-Evil: 1", "holds a line break"),
        ("Authorization", "Bearer k\n", "holds a line break"),
        ("Authorization", "Bearer \x00k", "control character"),
        ("X Evil", "v", "not a valid HTTP header name"),
        ("X:Evil", "v", "not a valid HTTP header name"),
        ("", "v", "not a valid HTTP header name"),
    ],
)
def test_a_header_that_would_forge_another_is_refused_without_its_value(
    name: str, value: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=problem) as raised:
        Client("http://127.0.0.1:1", {name: value}, trust_env=False)
    assert "Bearer" not in str(raised.value)


@pytest.mark.parametrize(
    ("environ", "url", "proxy"),
    [
        ({"HTTP_PROXY": "http://p:3128"}, "http://api.example.com/v1", "http://p:3128"),
        ({"HTTP_PROXY": "p:3128"}, "http://api.example.com/v1", "http://p:3128"),
        ({"HTTP_PROXY": "http://p:3128"}, "https://api.example.com/v1", None),
        ({"HTTPS_PROXY": "http://p"}, "https://api.example.com/v1", "http://p"),
        ({"ALL_PROXY": "http://a:1"}, "https://api.example.com", "http://a:1"),
        (
            {"HTTPS_PROXY": "http://upper:1", "https_proxy": "http://lower:1"},
            "https://x.io",
            "http://lower:1",
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "https://api.example.com", None),
        ({"HTTPS_PROXY": "http://p:1", "no_proxy": ".example.com"}, "https://example.com", None),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "ample.com"},
            "https://example.com",
            "http://p:1",
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "*"}, "https://example.com", None),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com:8443"},
            "https://example.com",
            "http://p:1",
        ),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "example.com:8443"},
            "https://example.com:8443",
            None,
        ),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.5, [fd00::1]"},
            "https://[fd00::1]/",
            None,
        ),
        ({"HTTPS_PROXY": "http://user:pw@p:1"}, "https://example.com", "http://p:1"),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, "https://10.1.2.3/", None),
        (
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"},
            "https://11.1.2.3/",
            "http://p:1",
        ),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "x.io, fd00::/8"}, "https://[fd12::1]/", None),
        ({"HTTPS_PROXY": "http://p:1", "NO_PROXY": "192.168.0.0/16"}, "https://h.io", "http://p:1"),
        ({"HTTP_PROXY": "http://p:1"}, "http://127.0.0.1:8080/v1", None),  # loopback: never
        ({"HTTP_PROXY": "http://p:1"}, "http://127.1:8080/v1", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://[::ffff:127.0.0.1]:8080", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://[::1]:8080", None),
        ({"HTTP_PROXY": "http://p:1"}, "http://localhost.:8080", None),
        ({"HTTPS_PROXY": ""}, "https://example.com", None),
    ],
)
def test_the_environment_chooses_the_proxy_as_curl_does(
    environ: dict[str, str], url: str, proxy: str | None
) -> None:
    found = environment_proxy(url, environ)
    assert (found.shown if found else None) == proxy


def test_a_proxy_that_is_not_http_is_refused_without_its_credentials() -> None:
    for value in ("socks5://user:secret@p:1080", "https://user:secret@p:443", "http://"):
        with pytest.raises(ValueError, match="not an http:// proxy URL") as raised:
            environment_proxy("https://example.com", {"HTTPS_PROXY": value})
        assert "secret" not in str(raised.value)


def test_plain_http_goes_to_the_proxy_in_absolute_form_with_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> tuple[Served, str | None]:
        async with serve() as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://us%40r:p%3Ass@127.0.0.1:{proxy.port}")
            client = Client("http://models.internal:8080/v1", {}, trust_env=True)
            assert await body_of(client, path="/models") == b"ok"
            await client.aclose()
            return proxy, client.proxy

    proxy, shown = run(scenario())
    head = proxy.heads[0].decode()
    assert head.startswith("GET http://models.internal:8080/v1/models HTTP/1.1\r\n")
    assert "Host: models.internal:8080\r\n" in head
    expected = base64.b64encode(b"us@r:p:ss").decode()
    assert f"Proxy-Authorization: Basic {expected}\r\n" in head
    assert shown == f"http://127.0.0.1:{proxy.port}"  # no credentials in what is shown


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def tls_server(ca: trustme.CA, name: str = "127.0.0.1") -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(context)
    return context


def trusting(ca: trustme.CA, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trust `ca` as OpenSSL does for SSL_CERT_FILE (a corporate CA, say)."""
    path = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    monkeypatch.setenv("SSL_CERT_FILE", str(path))


def test_https_is_verified_against_the_trusted_certificates(
    ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> None:
        async with serve(tls=tls_server(ca)) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(
                http_client.ConnectError, match="TLS failed: CERTIFICATE_VERIFY_FAILED"
            ):
                await body_of(client)
            trusting(ca, tmp_path, monkeypatch)
            client = Client(served.url, {}, trust_env=False)
            assert await body_of(client) == b"ok"
            assert await body_of(client) == b"ok"
            await client.aclose()
            assert served.connections == 1  # kept alive (a failed handshake never connects)

    run(scenario())


def test_https_goes_through_the_proxy_in_a_connect_tunnel(
    ca: trustme.CA, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tunnels: list[bytes] = []

    async def tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        tunnels.append(head)
        _, _, port = head.split(b" ")[1].decode().rpartition(":")
        if tunnels[-1].startswith(b"CONNECT blocked.test:1 "):
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(
            pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True
        )

    async def scenario() -> None:
        trusting(ca, tmp_path, monkeypatch)
        # a name only the proxy knows (it tunnels every name to 127.0.0.1): loopback itself
        # never goes through a proxy
        async with serve(tls=tls_server(ca, "api.test")) as served, serve(handler=tunnel) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://u:pw@127.0.0.1:{proxy.port}")
            client = Client(f"https://api.test:{served.port}/v1", {}, trust_env=True)
            assert await body_of(client, "POST", "/chat", body=b"{}") == b"ok"
            assert await body_of(client, "POST", "/chat", body=b"{}") == b"ok"
            await client.aclose()
            assert served.heads[0].startswith(b"POST /v1/chat HTTP/1.1\r\n")  # origin form
            assert b"Proxy-Authorization" not in served.heads[0]  # the server never sees it
            assert len(tunnels) == 1
            connect = tunnels[0].decode()
            assert connect.startswith(f"CONNECT api.test:{served.port} HTTP/1.1\r\n")
            assert f"Proxy-Authorization: Basic {base64.b64encode(b'u:pw').decode()}" in connect
            refused = Client("https://blocked.test:1", {}, trust_env=True)
            with pytest.raises(
                http_client.ConnectError, match=r"refused the tunnel to blocked\.test:1: HTTP 403"
            ):
                await body_of(refused)
            await refused.aclose()

    run(scenario())


@pytest.mark.parametrize(
    ("host", "sent"),
    [
        ("bücher.example", "xn--bcher-kva.example"),
        ("faß.example", "xn--fa-hia.example"),  # IDNA 2008; IDNA 2003 made it fass.example
    ],
)
def test_an_international_host_name_is_sent_as_punycode(
    host: str, sent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def scenario() -> Served:
        async with serve() as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            client = Client(f"http://{host}:8080", {}, trust_env=True)
            assert await body_of(client, path="/v1/models") == b"ok"
            await client.aclose()
            return proxy

    head = run(scenario()).heads[0].decode("ascii")
    assert head.startswith(f"GET http://{sent}:8080/v1/models HTTP/1.1\r\n")
    assert f"Host: {sent}:8080\r\n" in head


def test_a_connection_reset_in_the_middle_of_a_body_is_a_protocol_error() -> None:
    async def resets(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab")
        await writer.drain()
        await asyncio.sleep(0.1)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # RST, not FIN

    async def scenario() -> None:
        async with serve(handler=resets) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(http_client.ProtocolError, match="reset the connection"):
                await body_of(client)

    run(scenario())


def test_a_body_in_a_transfer_coding_other_than_chunked_ends_with_the_connection() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw bytes"

    async def scenario() -> tuple[bytes, int]:
        async with serve(lambda s, n: answer, close_after=True) as served:
            client = Client(served.url, {}, trust_env=False)
            body = await body_of(client)
            await body_of(client)
            return body, served.connections

    assert run(scenario()) == (b"raw bytes", 2)


def test_endless_trailers_are_refused() -> None:
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n" + b"T: x\r\n" * 300

    async def scenario() -> None:
        async with serve(lambda s, n: answer, close_after=True) as served:
            with pytest.raises(http_client.ProtocolError, match="Too many headers"):
                await body_of(Client(served.url, {}, trust_env=False))

    run(scenario())


def test_a_proxy_that_answers_connect_with_garbage_broke_the_tunnel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serve(lambda s, n: b"garbage\r\n\r\n", close_after=True) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
            client = Client("https://api.example.com/v1", {}, trust_env=True)
            with pytest.raises(http_client.ConnectError, match=r"broke the tunnel: .* status line"):
                await body_of(client)

    run(scenario())


@pytest.mark.parametrize(
    ("error", "text"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "connection refused"),
        (socket.gaierror(-2, "Name or service not known"), "could not be resolved (Name or"),
        (ConnectionResetError(104, "reset"), "the server reset the connection"),
        (BrokenPipeError(32, "pipe"), "while the request was being sent"),
        (OSError(113, "No route to host"), "No route to host"),
        (OSError(), "OSError"),
    ],
)
def test_os_errors_are_told_in_words(error: OSError, text: str) -> None:
    assert text in http_client._os_error_text(error)


def test_headers_are_read_without_case_and_repeats_are_kept() -> None:
    headers = http_client.Headers([("Content-Encoding", "gzip"), ("content-encoding", "br, zstd")])
    assert headers.get("CONTENT-ENCODING") == "gzip, br, zstd"
    assert headers.get_list("content-encoding") == ["gzip", "br", "zstd"]
    assert headers.get("location") is None
    assert headers.get("location", "none") == "none"
    assert "Content-encoding" in headers


# --- answers to no request, resends and their count ---------------------------------------------


class Numbered:
    """A server that numbers requests across its connections (the answer to the n-th says
    `rn`) and writes `junk` after its first answer, `later` or with it."""

    def __init__(self, junk: bytes, *, later: bool) -> None:
        self.junk = junk
        self.later = later
        self.requests = 0
        self.connections = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                self.requests += 1
                first = self.requests == 1
                answer = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr%d" % self.requests
                writer.write(answer if self.later or not first else answer + self.junk)
                await writer.drain()
                if first and self.later:
                    await asyncio.sleep(0.05)  # the client has the answer and pools the connection
                    writer.write(self.junk)
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.mark.parametrize(
    "junk",
    [
        b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n",  # on an idle connection
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr0",  # one response too many
        b"past the end of the body",  # a body longer than its Content-Length said
        b"HTTP/1.1 2",  # the beginning of an answer to nothing
    ],
)
def test_what_arrives_on_an_idle_connection_is_never_read_as_the_next_answer(junk: bytes) -> None:
    async def scenario() -> tuple[list[bytes], int]:
        numbered = Numbered(junk, later=True)
        async with serve(handler=numbered) as served:
            client = Client(served.url, {}, trust_env=False)
            answers = []
            for _ in range(3):
                answers.append(await body_of(client))
                await asyncio.sleep(0.15)  # the junk arrives while the connection is idle
            await client.aclose()
            return answers, numbered.requests

    answers, requests = run(scenario())
    assert answers == [b"r1", b"r2", b"r3"]  # each request's own answer, never one behind
    assert requests == 3  # and nothing was sent twice


@pytest.mark.parametrize(
    ("junk", "first"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nr0", b"r1"),  # one too many, at once
        (b"past the end of the body", None),  # aiohttp's parser refuses the whole read
    ],
)
def test_an_answer_followed_by_more_bytes_never_shifts_the_later_answers(
    junk: bytes, first: bytes | None
) -> None:
    async def scenario() -> list[bytes | None]:
        async with serve(handler=Numbered(junk, later=False)) as served:
            client = Client(served.url, {}, trust_env=False)
            answers: list[bytes | None] = []
            for _ in range(3):
                try:
                    answers.append(await body_of(client))
                except http_client.ProtocolError:
                    answers.append(None)
            await client.aclose()
            return answers

    assert run(scenario()) == [first, b"r2", b"r3"]


class Hangs:
    """A server that answers until `dropping`, then closes each connection on the request it
    reads, without a byte of an answer (or with `partial` bytes of one)."""

    def __init__(self, partial: bytes = b"") -> None:
        self.partial = partial
        self.dropping = False
        self.requests = 0

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                self.requests += 1
                if self.dropping:
                    writer.write(self.partial)
                    await writer.drain()
                    break
                await asyncio.sleep(0.05)  # so that the requests below overlap
                writer.write(OK)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_a_request_is_sent_again_once_on_a_new_connection_and_each_send_is_told(
    method: str,
) -> None:
    async def scenario() -> tuple[int, int, str]:
        hangs = Hangs()
        async with serve(handler=hangs) as served:
            client = Client(served.url, {}, trust_env=False)
            await asyncio.gather(*(body_of(client) for _ in range(8)))  # 8 idle connections
            hangs.dropping, hangs.requests = True, 0
            sends = Sends()
            with pytest.raises(http_client.ProtocolError) as raised:
                await body_of(client, method, body=b"{}", on_send=sends)
            await client.aclose()
            return hangs.requests, sends.count, str(raised.value)

    requests, sends, problem = run(scenario())
    assert requests == 2  # not once per idle connection (it was 9 times)
    assert sends == 2
    assert problem == "the server closed the connection without answering"


def test_a_stale_kept_alive_connection_is_replaced_and_the_resend_told() -> None:
    async def scenario() -> tuple[bytes, int, int]:
        # every connection answers one request, then closes on the next without answering
        async with serve(lambda s, n: OK if n == 0 else None) as served:
            client = Client(served.url, {}, trust_env=False)
            assert await body_of(client) == b"ok"
            sends = Sends()
            body = await body_of(client, "POST", body=b"{}", on_send=sends)
            await client.aclose()
            return body, sends.count, served.connections

    # the server closes only once it has read the second request: always the race
    assert run(scenario()) == (b"ok", 2, 2)


def test_a_request_whose_answer_had_begun_is_not_sent_again() -> None:
    async def scenario() -> tuple[int, int, str]:
        hangs = Hangs(partial=b"HTTP/1.1 200 OK\r\nContent-Le")
        hangs.dropping = True
        async with serve(handler=hangs) as served:
            client = Client(served.url, {}, trust_env=False)
            sends = Sends()
            with pytest.raises(http_client.ProtocolError) as raised:
                await body_of(client, "POST", body=b"{}", on_send=sends)
            await client.aclose()
            return hangs.requests, sends.count, str(raised.value)

    requests, sends, problem = run(scenario())
    assert (requests, sends) == (1, 1)
    assert problem == "the server closed the connection in the middle of its answer's head"


def test_what_on_send_raises_stops_the_resend() -> None:
    class Refuses(Exception):
        pass

    def refuse_the_second() -> None:
        sends.count += 1
        if sends.count > 1:
            raise Refuses

    sends = Sends()

    async def scenario() -> int:
        hangs = Hangs()
        hangs.dropping = True
        async with serve(handler=hangs) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(Refuses):
                await body_of(client, "POST", body=b"{}", on_send=refuse_the_second)
            await client.aclose()
            return hangs.requests

    assert run(scenario()) == 1


def test_looking_at_connections_that_all_received_junk_has_an_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each idle connection that received junk is closed and the next one looked at, up to a
    cap (1,024; 2 here), then the request fails instead of trying forever."""
    monkeypatch.setattr(http_client, "_CONNECT_TRIES", 2)

    async def junk_after_each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(0.05)  # so that the three requests overlap
            writer.write(OK)
            await writer.drain()
            await asyncio.sleep(0.05)
            writer.write(b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            await reader.read()
        finally:
            writer.close()

    async def scenario() -> str:
        async with serve(handler=junk_after_each) as served:
            client = Client(served.url, {}, trust_env=False)
            await asyncio.gather(*(body_of(client) for _ in range(3)))  # 3 idle connections
            await asyncio.sleep(0.2)  # each receives its 408
            with pytest.raises(http_client.ProtocolError) as raised:
                await body_of(client)
            await client.aclose()
            return str(raised.value)

    assert run(scenario()) == "the server sent data no request asked for on every connection tried"


def test_a_cookie_a_server_sets_is_never_sent_back() -> None:
    sets_a_cookie = b"HTTP/1.1 200 OK\r\nSet-Cookie: session=s3cr3t\r\nContent-Length: 2\r\n\r\nok"

    async def scenario() -> list[bytes]:
        async with serve(lambda s, n: sets_a_cookie) as served:
            # a name: aiohttp's own jar would keep cookies of a name, never of an address
            client = Client(f"http://localhost:{served.port}", {}, trust_env=False)
            assert await body_of(client) == b"ok"
            assert await body_of(client) == b"ok"
            await client.aclose()
            return served.heads

    assert not any(b"cookie" in head.lower() for head in run(scenario()))
