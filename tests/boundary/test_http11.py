"""The HTTP/1.1 client against real servers on 127.0.0.1 that answer byte for byte what each
test scripts: framing (length, chunked, until close), keep-alive and its stale connections,
broken answers, header checks, idle limits, proxies (plain and CONNECT tunnels) and TLS."""

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

from ruledrift.boundary import http11
from ruledrift.boundary.http11 import Client, environment_proxy

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
    assert f"Host: 127.0.0.1:{served.port}\r\n" in first
    assert "Authorization: Bearer k\r\n" in first
    assert "Content-Type: application/json\r\nContent-Length: 7\r\n" in first
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
        (b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\nContent-Length: 1\r\n\r\nq", b"q"),
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
        (b"SSH-2.0-OpenSSH\r\n\r\n", "does not start with an HTTP/1.1 status line"),
        (b"HTTP/1.1 2000 OK\r\n\r\n", "does not start with an HTTP/1.1 status line"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70_000 + b"\r\n\r\n", "a line longer than 65,536"),
        (b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 300 + b"\r\n", "more than 256 header lines"),
        (b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n", "a malformed header line"),
        (b"HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n", "a malformed header line"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
            "invalid Content-Length",
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "7 bytes before the end"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "inside a chunk"),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            "longer than its size",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n",
            "before the end of its chunked answer",
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0",
            "middle of a line",
        ),
        (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", "switched protocols"),
    ],
)
def test_a_broken_answer_is_a_protocol_error_naming_what_broke(answer: bytes, problem: str) -> None:
    async def scenario() -> str:
        async with serve(lambda s, n: answer, close_after=True) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(http11.ProtocolError) as raised:
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
            response = await client.send("GET", "/", connect_timeout_s=1, head_timeout_s=1)
            chunks = response.chunks(idle_timeout_s=0.2)
            assert await anext(chunks) == b"ab"
            with pytest.raises(http11.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await anext(chunks)  # waiting for the next chunk's size line
            await response.aclose()
        async with serve(handler=mute) as served:
            client = Client(served.url, {}, trust_env=False)
            with pytest.raises(http11.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await client.send("GET", "/", connect_timeout_s=1, head_timeout_s=0.2)
            await client.aclose()
        async with serve(handler=stalls) as served:
            client = Client(served.url, {}, trust_env=False)
            response = await client.send("GET", "/", connect_timeout_s=1, head_timeout_s=1)
            pieces = response.chunks(idle_timeout_s=0.2)
            assert await anext(pieces) == b"ab"
            with pytest.raises(http11.ReadTimeout, match=r"sent nothing for 0\.2 s"):
                await anext(pieces)
            await response.aclose()
            await client.aclose()
            port = served.port
        refused = Client(f"http://127.0.0.1:{port}", {}, trust_env=False)
        with pytest.raises(http11.ConnectError, match="connection refused"):
            await refused.send("GET", "/", connect_timeout_s=1)

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


def tls_server(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(context)
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
            with pytest.raises(http11.ConnectError, match="TLS failed: CERTIFICATE_VERIFY_FAILED"):
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
        host, _, port = head.split(b" ")[1].decode().rpartition(":")
        if tunnels[-1].startswith(b"CONNECT 127.0.0.1:1 "):
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
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
        async with serve(tls=tls_server(ca)) as served, serve(handler=tunnel) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://u:pw@127.0.0.1:{proxy.port}")
            client = Client(served.url + "/v1", {}, trust_env=True)
            assert await body_of(client, "POST", "/chat", body=b"{}") == b"ok"
            assert await body_of(client, "POST", "/chat", body=b"{}") == b"ok"
            await client.aclose()
            assert served.heads[0].startswith(b"POST /v1/chat HTTP/1.1\r\n")  # origin form
            assert b"Proxy-Authorization" not in served.heads[0]  # the server never sees it
            assert len(tunnels) == 1
            connect = tunnels[0].decode()
            assert connect.startswith(f"CONNECT 127.0.0.1:{served.port} HTTP/1.1\r\n")
            assert f"Proxy-Authorization: Basic {base64.b64encode(b'u:pw').decode()}" in connect
            refused = Client("https://127.0.0.1:1", {}, trust_env=True)
            with pytest.raises(
                http11.ConnectError, match=r"refused the tunnel to 127\.0\.0\.1:1: HTTP 403"
            ):
                await body_of(refused)

    run(scenario())


def test_an_international_host_name_is_sent_as_punycode(monkeypatch: pytest.MonkeyPatch) -> None:
    async def scenario() -> Served:
        async with serve() as proxy:
            monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.port}")
            client = Client("http://bücher.example:8080", {}, trust_env=True)
            assert await body_of(client, path="/v1/models") == b"ok"
            await client.aclose()
            return proxy

    head = run(scenario()).heads[0].decode("ascii")
    assert head.startswith("GET http://xn--bcher-kva.example:8080/v1/models HTTP/1.1\r\n")
    assert "Host: xn--bcher-kva.example:8080\r\n" in head


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
            with pytest.raises(http11.ProtocolError, match="reset the connection"):
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
            with pytest.raises(http11.ProtocolError, match="more than 256 trailer lines"):
                await body_of(Client(served.url, {}, trust_env=False))

    run(scenario())


def test_a_proxy_that_answers_connect_with_garbage_broke_the_tunnel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def scenario() -> None:
        async with serve(lambda s, n: b"garbage\r\n\r\n", close_after=True) as proxy:
            monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{proxy.port}")
            client = Client("https://api.example.com/v1", {}, trust_env=True)
            with pytest.raises(http11.ConnectError, match=r"broke the tunnel: .* status line"):
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
    assert text in http11._os_error_text(error)


def test_headers_are_read_without_case_and_repeats_are_kept() -> None:
    headers = http11.Headers([("Content-Encoding", "gzip"), ("content-encoding", "br, zstd")])
    assert headers.get("CONTENT-ENCODING") == "gzip, br, zstd"
    assert headers.get_list("content-encoding") == ["gzip", "br", "zstd"]
    assert headers.get("location") is None
    assert headers.get("location", "none") == "none"
    assert "Content-encoding" in headers
