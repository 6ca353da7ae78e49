"""The HTTP transport (adapters/transport.py) against real loopback servers: a hostile server's
body, redirect, error text or silence is an AdapterError of that call, bounded, scrubbed and
terminal-safe; and the checks of a server URL."""

from __future__ import annotations

import asyncio
import base64
import gc
import itertools
import json
import socket
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ruledrift.boundary.http import (
    MESSAGE_CHARS,
    JsonClient,
    Retry,
    Server,
    is_loopback,
    parse_json,
    safe_text,
    scrub,
    url_problem,
)
from ruledrift.errors import AdapterError, ConfigError
from ruledrift.ollama.api import OllamaAPI
from ruledrift.suite.load import load_suite
from tests.support.ollama_fake import free_port
from tests.support.openai_fake import FakeOpenAI, RawReply
from tests.support.suites import base_suite, write_suite

KEY = "sk-proj-Xq7vR2mN9pL4wT8yB3cF6hJ1kD5gS0aZeUoIiYtRw"  # 49 characters, like a real key
FAST = Retry(attempts=3, base_delay_s=0.01)
ANSWER = {"choices": [{"message": {"role": "assistant", "content": "Hi"}}]}

Action = Callable[[JsonClient], Awaitable[Any]]


def server(url: str, timeout_ms: int = 5_000) -> Server:
    return Server("the test server", url, timeout_ms, "is it running?", "is baseUrl right?")


def call(url: str, action: Action, *, timeout_ms: int = 5_000, **options: Any) -> Any:
    """`action` on a JsonClient for `url` (with the KEY as its secret), in a fresh event loop."""

    async def run() -> Any:
        client = JsonClient(server(url, timeout_ms), secrets=(KEY,), **{"retry": FAST, **options})
        try:
            return await action(client)
        finally:
            await client.aclose()

    return asyncio.run(run())


def failure(url: str, action: Action, **options: Any) -> str:
    with pytest.raises(AdapterError) as raised:
        call(url, action, **options)
    return str(raised.value)


def get_models(client: JsonClient) -> Awaitable[Any]:
    return client.get("/models")


def pull_lines(client: JsonClient) -> Awaitable[list[str]]:
    async def lines() -> list[str]:
        stream = client.stream_lines(
            "/pull", {}, doing="pull it", failed="pulling failed", idle_timeout_s=5
        )
        return [line async for line in stream]

    return lines()


def fragments(secret: str, length: int = 12) -> Iterator[str]:
    return (secret[i : i + length] for i in range(len(secret) - length + 1))


def assert_safe(message: str) -> None:
    """No piece of the key, no control character, no lone surrogate, within the cap."""
    assert not any(piece in message for piece in fragments(KEY)), message
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F for c in message), message
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in message)
    assert len(message) <= MESSAGE_CHARS


def gzipped(*parts: bytes, repeat: bytes = b"", times: int = 0) -> bytes:
    """gzip of `parts[0]`, `repeat` `times` times, then the other parts: a bomb, cheaply."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head, *tail = parts
    packed = [packer.compress(head), *(packer.compress(repeat) for _ in range(times))]
    return b"".join([*packed, *map(packer.compress, tail), packer.flush()])


def json_bomb(mebibytes: int) -> bytes:
    """A valid chat completion whose content is `mebibytes` MiB of spaces, gzipped (~1 KiB a
    MiB)."""
    return gzipped(
        b'{"choices": [{"message": {"role": "assistant", "content": "',
        b'"}, "finish_reason": "stop"}]}',
        repeat=b" " * 1_048_576,
        times=mebibytes,
    )


# --- bodies the client cannot use ------------------------------------------------------------


@pytest.mark.process
def test_a_deeply_nested_body_is_an_error_of_the_call() -> None:
    with FakeOpenAI() as fake:
        fake.script += [(200, "[" * 200_000), (500, '{"error": ' + "[" * 200_000)]
        nested = failure(fake.base_url, get_models)
        nested_error = failure(fake.base_url, get_models)
    assert "with a body that is JSON nested too deeply to read" in nested
    assert "HTTP 500" in nested_error
    assert_safe(nested_error)


def test_parse_json_turns_every_unusable_text_into_value_error() -> None:
    assert parse_json(b'{"a": [1]}') == {"a": [1]}
    for text in ("[" * 200_000, "{", "1" * 5_000, b"\xff\xfe\xfd"):
        with pytest.raises(ValueError, match=r"not JSON|nested too deeply"):
            parse_json(text)


@pytest.mark.process
def test_a_gzip_bomb_stops_at_the_cap() -> None:
    body = json_bomb(2)  # 2 MiB of JSON in about 2 KiB
    with FakeOpenAI() as fake:
        fake.script.append(RawReply(200, [("Content-Encoding", "gzip")], body))
        message = failure(fake.base_url, get_models, max_body_bytes=100_000)
    assert "with a body of more than 100,000 bytes (decoded), the limit for one answer" in message


@pytest.mark.process
def test_an_endless_chunked_body_stops_at_the_cap() -> None:
    endless = RawReply(200, chunks=itertools.repeat(b"[" + b" " * 65_535))
    with FakeOpenAI() as fake:
        fake.script.append(endless)
        message = failure(fake.base_url, get_models, max_body_bytes=1_000_000)
    assert "with a body of more than 1,000,000 bytes" in message
    assert endless.sent[0] < 20_000_000  # the client stopped reading, so the server stopped


@pytest.mark.process
def test_a_status_check_does_not_read_the_body() -> None:
    endless = RawReply(200, chunks=itertools.repeat(b" " * 65_536))
    with FakeOpenAI() as fake:
        fake.script.append(endless)
        assert call(fake.base_url, lambda c: c.status("/version", 60.0)) == 200
    assert endless.sent[0] < 20_000_000  # what the sockets' buffers hold, not a body read


@pytest.mark.process
@pytest.mark.parametrize(
    ("encoding", "pack"),
    [
        ("gzip", lambda data: gzipped(data)),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw deflate
        ("identity", lambda data: data),
    ],
)
def test_encoded_bodies_are_read(encoding: str, pack: Callable[[bytes], bytes]) -> None:
    body = json.dumps({"data": ["x" * 5_000] * 20}).encode()
    with FakeOpenAI() as fake:
        fake.script.append(RawReply(200, [("Content-Encoding", encoding)], pack(body)))
        assert call(fake.base_url, get_models) == json.loads(body)


@pytest.mark.process
def test_an_encoding_not_asked_for_is_an_error() -> None:
    with FakeOpenAI() as fake:
        fake.script += [
            RawReply(200, [("Content-Encoding", "br")], b"\x1b\x00"),
            RawReply(200, [("Content-Encoding", "gzip")], b"not gzip at all"),
        ]
        brotli = failure(fake.base_url, get_models)
        corrupt = failure(fake.base_url, get_models)
        assert fake.requests[0].headers["accept-encoding"] == "gzip, deflate"
    assert 'with Content-Encoding "br", which RuleDrift did not ask for' in brotli
    assert "with a body that could not be decoded (gzip: " in corrupt


@pytest.mark.process
def test_streamed_lines_are_capped_and_decoded() -> None:
    progress = b'{"status": "pulling"}\r\n\n{"status": "success"}'
    long_line = b'{"status": "' + b"x" * 5_000_000 + b'"}\n'
    with FakeOpenAI() as fake:
        fake.script += [
            RawReply(200, [("Content-Encoding", "gzip")], gzipped(progress)),
            RawReply(200, chunks=[long_line[i : i + 65_536] for i in range(0, 5_000_000, 65_536)]),
        ]
        lines = call(fake.base_url, pull_lines, max_line_bytes=1_000)
        too_long = failure(fake.base_url, pull_lines, max_line_bytes=1_000)
    assert lines == ['{"status": "pulling"}', '{"status": "success"}']
    assert "pulling failed: the test server at" in too_long
    assert "sent a line of more than 1,000 bytes, the limit for one streamed line" in too_long


@pytest.mark.process
def test_a_caller_may_leave_the_stream_early() -> None:
    """The Ollama client leaves the stream at its first error line (or success line): the
    abandoned stream is finalized as the event loop ends, and that must go without an error."""
    errors: list[str] = []

    async def pull(url: str) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: errors.append(context["message"]))
        async with OllamaAPI(url) as api:
            await api.pull("m", lambda progress: None)

    with FakeOpenAI() as fake:
        fake.script.append(RawReply(200, body=b"not json\n"))
        gc.disable()  # a collection would close the stream early, by chance, and hide the case
        try:
            with pytest.raises(AdapterError, match="a progress line is not JSON"):
                asyncio.run(pull(fake.base_url.removesuffix("/v1")))
        finally:
            gc.enable()
    assert errors == []


@pytest.mark.process
def test_a_streamed_error_body_is_capped_too() -> None:
    with FakeOpenAI() as fake:
        fake.script.append(RawReply(500, [("Content-Encoding", "gzip")], json_bomb(2)))
        message = failure(fake.base_url, pull_lines, max_body_bytes=100_000)
    assert "with a body of more than 100,000 bytes" in message


# --- redirects -------------------------------------------------------------------------------


@pytest.mark.process
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_an_error_naming_where_it_points(status: int) -> None:
    location = f"https://user:pw-4711@elsewhere.example/v1/models?api_key={KEY}#frag"
    with FakeOpenAI() as fake:
        fake.script.append(RawReply(status, [("Location", location)], json.dumps(ANSWER).encode()))
        message = failure(fake.base_url, lambda c: c.post("/chat/completions", {}))
        fake.script.append(RawReply(status, [("Location", "/v1/")]))
        streamed = failure(fake.base_url, pull_lines)
        assert len(fake.requests) == 2  # never followed
    assert f"with a redirect (HTTP {status}) to https://elsewhere.example/v1/models?…" in message
    assert "redirects are not followed" in message
    assert "set baseUrl to the address the server redirects to" in message
    assert "pw-4711" not in message
    assert_safe(message)
    assert f"answered POST /pull with a redirect (HTTP {status}) to /v1/" in streamed


@pytest.mark.process
def test_a_redirect_without_location() -> None:
    with FakeOpenAI() as fake:
        fake.script.append(RawReply(302))
        assert "with a redirect (HTTP 302) (no Location)" in failure(fake.base_url, get_models)


# --- connecting ------------------------------------------------------------------------------


@pytest.mark.process
def test_a_refused_connection_within_a_short_deadline_says_could_not_connect() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    slow_retries = Retry(attempts=3, base_delay_s=0.5)  # the deadline passes while waiting
    message = failure(url, get_models, timeout_ms=300, retry=slow_retries)
    assert message.startswith(f"could not connect to the test server at {url} within 0.3 s: ")
    assert "is it running?" in message
    assert "did not answer" not in message


@pytest.fixture
def full_backlog() -> Iterator[str]:
    """A loopback port whose accept queue is full: a new connection hangs in its handshake."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(listener.getsockname())
        fillers.append(filler)
    time.sleep(0.1)
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    for sock in [listener, *fillers]:
        sock.close()


@pytest.mark.process
def test_a_connect_that_hangs_says_could_not_connect(full_backlog: str) -> None:
    started = time.monotonic()
    message = failure(full_backlog, get_models, timeout_ms=500)
    assert time.monotonic() - started < 30  # not the kernel's minutes of SYN retries
    assert message.startswith(f"could not connect to the test server at {full_backlog} within")
    assert "within 0.5 s: is it running? (timeoutMs is 500; timed out)" in message


@pytest.mark.process
def test_a_busy_server_within_a_short_deadline_says_busy() -> None:
    busy = (503, {"error": {"message": "loading model"}})
    slow_retries = Retry(attempts=3, base_delay_s=0.5)  # no time to wait for another try
    with FakeOpenAI() as fake:
        fake.script += [busy] * 3
        message = failure(fake.base_url, get_models, timeout_ms=300, retry=slow_retries)
        fast = failure(fake.base_url, get_models, timeout_ms=300, retry=Retry(2, 0.01))
    assert message.endswith("answered HTTP 503 to GET /models: loading model")
    assert fast.endswith("answered HTTP 503 to GET /models: loading model (tried 2 times)")


@pytest.mark.process
def test_a_server_that_never_answers_did_not_answer() -> None:
    with socket.create_server(("127.0.0.1", 0)) as silent:  # connects, never reads or answers
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        message = failure(url, get_models, timeout_ms=300)
    assert message.startswith(f"the test server at {url} did not answer GET /models within 0.3 s")


# --- what reaches a message ------------------------------------------------------------------


@pytest.mark.process
def test_a_key_at_the_cut_of_an_error_text_is_scrubbed_first() -> None:
    with FakeOpenAI() as fake:
        fake.script += [
            (500, {"error": "x" * 260 + KEY + " and more"}),  # the key across the 300-char cut
            (500, {"error": {"message": "y" * 280 + KEY[:30]}}),  # the server cut the key
        ]
        across_the_cut = failure(fake.base_url, get_models)
        cut_by_server = failure(fake.base_url, get_models)
    for message in (across_the_cut, cut_by_server):
        assert_safe(message)
        assert "***" in message


@pytest.mark.process
def test_error_text_is_terminal_safe_and_bounded() -> None:
    hostile = "\x1b]0;owned\x07\x1b[2J\ud800 bad \r\n" * 5_000
    with FakeOpenAI() as fake:
        fake.script += [
            (400, {"error": {"message": hostile, "type": "\x1b[31mred"}}),
            RawReply(200, [("Content-Type", "text/html\x1b[2J" + "z" * 9_000)], b"<h1>"),
        ]
        error = failure(fake.base_url, get_models)
        not_json = failure(fake.base_url, get_models)
    assert "\\x1b]0;owned\\x07" in error
    assert "HTTP 400" in error
    assert len(error) < 600  # the server's words are cut to 300 characters
    assert "with a body that is not JSON (text/html\\x1b[2Jzzz" in not_json
    assert not_json.endswith("4 bytes): is baseUrl right?")  # the hint survives a long header
    for message in (error, not_json):
        assert_safe(message)


def test_scrub_replaces_the_secret_and_its_pieces() -> None:
    assert scrub(f"key {KEY}, again {KEY}", [KEY]) == "key ***, again ***"
    assert scrub(f"cut: {KEY[:20]}", [KEY]) == "cut: ***"
    assert scrub(f"middle {KEY[10:30]} end", [KEY]) == "middle *** end"
    assert scrub(f"short {KEY[:11]} {KEY[-4:]}", [KEY]) == f"short {KEY[:11]} {KEY[-4:]}"
    assert scrub("nothing secret", [KEY, "short"]) == "nothing secret"
    assert scrub("a short key", ["short"]) == "a *** key"


@pytest.mark.parametrize("at", range(180, 205))
def test_safe_text_scrubs_before_it_cuts(at: int) -> None:
    text = "a" * at + KEY + "\x1b" + "b" * 300
    safe = safe_text(text, [KEY], 200)
    assert len(safe) <= 200
    assert not any(piece in safe for piece in fragments(KEY))
    assert "\x1b" not in safe


# --- server URLs -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:8000/v1?api_key={KEY}",
        "http://127.0.0.1:8000/v1?",
        f"https://api.example/v1#{KEY}",
        f"http://127.0.0.1:8000/v1/?key={KEY}#x",
    ],
)
def test_a_url_with_a_query_or_fragment_is_refused(url: str) -> None:
    problem = url_problem(url)
    assert problem is not None
    assert "query string (?…) or a fragment (#…) are rejected" in problem
    assert "apiKeyEnv" in problem
    assert KEY not in problem
    assert "127.0.0.1" not in problem


def test_a_suite_with_a_key_in_its_base_url_is_refused(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"] = {"type": "openai", "model": "m", "baseUrl": f"http://h/v1?api_key={KEY}"}
    with pytest.raises(ConfigError) as raised:
        load_suite(write_suite(tmp_path, data))
    message = str(raised.value)
    assert "/adapter/baseUrl" in message
    assert "query string" in message
    assert KEY not in message


def test_an_invalid_port_is_not_echoed() -> None:
    problem = url_problem("http://host:s3cr3t-pw/v1")
    assert problem is not None
    assert problem.startswith("not a valid URL")
    assert "s3cr3t" not in problem


def test_good_urls_pass() -> None:
    for url in ("http://127.0.0.1:11434", "https://api.example/v1", "http://[::1]:8080/v1/"):
        assert url_problem(url) is None


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.8.9.10", True),
        ("http://localhost:11434", True),
        ("http://[::1]:11434", True),
        ("http://[::ffff:127.0.0.1]:11434", True),  # IPv4-mapped
        ("http://[0:0:0:0:0:0:0:1]", True),
        ("http://127.1:11434", True),  # what the resolver makes of it (validate refuses it)
        ("http://LOCALHOST.:11434", True),
        ("http://api.localhost", True),
        ("http://[::ffff:10.0.0.5]", False),
        ("http://ollama:11434", False),
        ("http://10.0.0.5:11434", False),
        ("https://example.org", False),
        ("not a url", False),
    ],
)
def test_loopback_urls(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1\x00",  # NUL in the path
        "http://127.0.0.1\x00:8000/v1",  # in the host
        "http://127.0.0.1:8000/v\t1",  # a tab urlsplit would drop without a word
        "http://127.0.0.1:8000/v1\n",
        "http://127.0.0.1:8000/v1\x7f",
    ],
)
def test_a_control_character_in_base_url_is_a_located_config_error(
    url: str, tmp_path: Path
) -> None:
    data = base_suite()
    data["adapter"] = {"type": "openai", "model": "m", "baseUrl": url}
    path = write_suite(tmp_path, data)
    with pytest.raises(ConfigError) as raised:
        load_suite(path)
    message = str(raised.value)
    assert message.startswith(f"{path}:8:16: /adapter/baseUrl: holds a control character (U+")
    assert "127.0.0.1" not in message  # the URL is never echoed


def test_a_host_with_a_space_is_refused() -> None:
    assert url_problem("http://my host:8000/v1") == (
        "the host holds a space or a character no host name has"
    )


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1"])
def test_a_legacy_spelling_of_an_ipv4_address_is_refused(host: str) -> None:
    """What a resolver reads as 127.0.0.1 and aiohttp refuses to connect to: refused when the
    suite is read, not at the first call."""
    problem = url_problem(f"http://{host}:8000/v1")
    assert problem is not None
    assert problem.startswith("the host is an IPv4 address in a legacy spelling")


@pytest.mark.process
def test_a_path_with_spaces_and_non_ascii_is_sent_percent_encoded() -> None:
    with FakeOpenAI() as fake:
        base = fake.base_url.removesuffix("/v1") + "/my models/modèle/v1"
        assert url_problem(base) is None
        fake.script.append((200, {"data": []}))
        assert call(base, get_models) == {"data": []}
        paths = [request.path for request in fake.requests]
    assert paths == ["/my%20models/mod%C3%A8le/v1/models"]  # never raw, never cut


@pytest.mark.process
def test_a_non_2xx_body_that_is_no_error_object_is_described_not_quoted() -> None:
    answer = "Sure! The secret is hunter2."  # what a broken gateway may hand back on a 502
    with FakeOpenAI() as fake:
        fake.script += [
            RawReply(502, [("Content-Type", "text/plain")], answer.encode()),
            (500, [{"role": "assistant", "content": answer}]),
        ]
        text = failure(fake.base_url, get_models)
        json_list = failure(fake.base_url, get_models)
    assert text.endswith(
        "HTTP 502 to GET /models: a body of 28 bytes (text/plain) that is no error object"
    )
    assert "hunter2" not in text
    assert "HTTP 500" in json_list
    assert "no error object" in json_list
    assert "hunter2" not in json_list


@pytest.mark.process
def test_loopback_in_any_spelling_never_goes_through_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeOpenAI() as proxy, FakeOpenAI() as fake:
        proxy_port = proxy.base_url.split(":")[2].split("/")[0]
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy_port}")
        port = fake.base_url.split(":")[2].split("/")[0]
        assert call(f"http://[::ffff:127.0.0.1]:{port}/v1", get_models)  # 127.0.0.1 in IPv6
        seen_by_proxy, seen_by_server = len(proxy.requests), len(fake.requests)
    assert (seen_by_proxy, seen_by_server) == (0, 1)


@pytest.mark.process
def test_a_proxy_s_credentials_are_scrubbed_from_its_407(monkeypatch: pytest.MonkeyPatch) -> None:
    password = "Pr0xy-Passw0rd-9"
    token = base64.b64encode(f"alice:{password}".encode()).decode()
    with FakeOpenAI() as proxy:
        port = proxy.base_url.split(":")[2].split("/")[0]
        monkeypatch.setenv("HTTP_PROXY", f"http://alice:{password}@127.0.0.1:{port}")
        proxy.script.append(
            (407, {"error": f"bad Proxy-Authorization: Basic {token} (alice:{password})"})
        )
        message = failure("http://models.internal:8080/v1", get_models)
        sent = proxy.requests[0].headers["proxy-authorization"]
    assert sent == f"Basic {token}"  # the proxy got them
    assert password not in message
    assert token not in message
    assert "bad Proxy-Authorization: Basic *** (***)" in message
