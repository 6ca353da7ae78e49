"""Ollama's HTTP API client (ruledrift/ollama/api.py) against the in-process loopback fake:
model names, pulls with progress, and every way a pull fails."""

from __future__ import annotations

import asyncio
import io
import socket
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from ruledrift.console.pull_progress import PullProgressPrinter
from ruledrift.errors import AdapterError
from ruledrift.ollama.api import (
    ModelEntry,
    ModelFacts,
    OllamaAPI,
    PullProgress,
    counts_whole_prompt,
    ensure_model,
    has_model,
    honours_truncate,
    knows_think_max,
    pull_model,
    release,
    server_answers,
)
from tests.support.ollama_fake import PULL_MISSING, FakeOllama, Fault
from tests.support.raw_server import RawServer

pytestmark = pytest.mark.process

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


# --- pulls against any server -------------------------------------------------------------------


def test_model_names_compare_as_in_ollama() -> None:
    async def scenario(url: str) -> list[bool]:
        names = [
            "qwen3:1.7b",
            "QWEN3:1.7B",
            "registry.ollama.ai/library/qwen3:1.7b",
            "library/qwen3:1.7b",
            "smollm2",
            "smollm2:latest",
            "someone/tool:v1",
            "qwen3",  # means qwen3:latest
            "qwen3:0.6b",
            "tool:v1",  # library/tool, not someone/tool
        ]
        return [await has_model(url, name) for name in names]

    with FakeOllama(["qwen3:1.7b", "smollm2", "someone/tool:v1"]) as fake:
        assert run(scenario(fake.base_url)) == [True] * 7 + [False] * 3


def test_pull_model_works_against_any_server_and_ensure_model_skips_present_models() -> None:
    events: list[PullProgress] = []
    with FakeOllama([]) as fake:
        assert run(ensure_model(fake.base_url, "smollm2:135m", events.append))
        assert events[-1] == PullProgress("success")
        assert not run(ensure_model(fake.base_url, "smollm2:135m", events.append))
        pulls = [r.body for r in fake.requests if r.path == "/api/pull"]
    assert pulls == [{"model": "smollm2:135m", "stream": True}]


def test_a_loopback_server_is_reached_around_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with FakeOllama(["qwen3:1.7b"]) as fake:
        assert run(has_model(fake.base_url, "qwen3:1.7b"))


@pytest.fixture
def fake() -> Iterator[FakeOllama]:
    with FakeOllama([]) as server:
        yield server


def pull_failure(fake: FakeOllama, model: str = "qwen3:1.7b") -> str:
    with pytest.raises(AdapterError) as raised:
        run(pull_model(fake.base_url, model, lambda _: None))
    return str(raised.value)


def test_a_model_the_registry_does_not_have(fake: FakeOllama) -> None:
    message = pull_failure(fake, "no-such-model:1b")
    assert (
        message == f"pulling no-such-model:1b from Ollama at {fake.base_url} failed: {PULL_MISSING}"
    )


@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        (Fault("eof"), "failed: the progress stream ended without a success line"),
        (Fault("error_line", error="disk full"), "failed: disk full"),
        (Fault(status=500, error="internal"), "failed: internal (HTTP 500)"),
        (Fault("invalid_json"), "failed: a progress line is not JSON: <html><body>502"),
        (  # twice: a request whose connection closed before any answer is sent once more
            Fault("disconnect", times=2),
            "failed to pull qwen3:1.7b: the server closed the connection without answering",
        ),
    ],
)
def test_a_failed_pull(fake: FakeOllama, fault: Fault, problem: str) -> None:
    fake.add_fault(Fault(**{**fault.__dict__, "path": "/api/pull"}))
    message = pull_failure(fake)
    assert message.startswith(f"pulling qwen3:1.7b from Ollama at {fake.base_url} failed") or (
        message.startswith(f"Ollama at {fake.base_url} failed to pull")
    )
    assert problem in message
    assert not run(has_model(fake.base_url, "qwen3:1.7b"))


def test_an_unreachable_server() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{unused.getsockname()[1]}"
        with pytest.raises(AdapterError) as raised:
            run(ensure_model(url, "qwen3:1.7b", lambda _: None))
    assert str(raised.value).startswith(f"could not connect to Ollama at {url} to list its models")


def test_a_server_that_lists_no_models(fake: FakeOllama) -> None:
    fake.add_fault(Fault(status=500, error="boom", path="/api/tags"))
    with pytest.raises(AdapterError, match=r"could not list its models: boom \(HTTP 500\)"):
        run(has_model(fake.base_url, "qwen3:1.7b"))


# --- what a server sends, of whatever type -----------------------------------------------------

HOSTILE = "\ud83d" + "x" * 5000  # a lone surrogate (half an emoji), then far too long


def test_a_model_list_of_the_wrong_types_is_kept_only_where_the_types_are_right(
    fake: FakeOllama,
) -> None:
    tags = {
        "models": [
            7,
            "qwen3:1.7b",
            {"name": 3, "model": ["x"], "digest": {"a": 1}, "details": "gguf"},
            {"name": "qwen3:1.7b", "digest": HOSTILE, "details": {"format": 5}},
            {"model": "mlx-model:4b", "details": {"format": "safetensors"}},
        ]
    }

    async def scenario() -> list[ModelEntry]:
        fake.add_fault(Fault("json", path="/api/tags", body=tags))
        async with OllamaAPI(fake.base_url) as api:
            return await api.models()

    unnamed, qwen, mlx = run(scenario())
    assert unnamed == ModelEntry(names=())
    assert unnamed.shown_name == "(a model without a name)"
    assert qwen.names == ("qwen3:1.7b",)
    assert qwen.format is None
    assert qwen.digest is not None
    assert len(qwen.digest) == 200
    assert qwen.digest.startswith("\ufffdxxx")
    assert qwen.digest.endswith("…")
    assert mlx == ModelEntry(names=("mlx-model:4b",), format="safetensors")


@pytest.mark.parametrize(
    ("body", "facts"),
    [
        (
            {"capabilities": ["completion", 3, "thinking"]},
            ModelFacts(frozenset({"completion", "thinking"})),
        ),
        ({"capabilities": "thinking", "details": []}, ModelFacts()),
        ({"details": {"format": "safetensors"}}, ModelFacts(format="safetensors")),
        ([1, 2], ModelFacts()),
        ("text", ModelFacts()),
    ],
)
def test_show_keeps_what_has_the_right_type(fake: FakeOllama, body: Any, facts: ModelFacts) -> None:
    async def scenario() -> ModelFacts:
        fake.add_fault(Fault("json", path="/api/show", body=body))
        async with OllamaAPI(fake.base_url) as api:
            return await api.show("qwen3:1.7b")

    assert run(scenario()) == facts


@pytest.mark.parametrize("version", [HOSTILE, 5, None])
def test_a_version_is_short_text_or_an_error(fake: FakeOllama, version: object) -> None:
    async def scenario() -> str:
        fake.add_fault(Fault("json", path="/api/version", body={"version": version}))
        async with OllamaAPI(fake.base_url) as api:
            return await api.version()

    if isinstance(version, str):
        said = run(scenario())
        assert len(said) == 200
        said.encode("utf-8")
    else:
        with pytest.raises(AdapterError, match="GET /api/version gave no version"):
            run(scenario())


def test_progress_lines_of_the_wrong_types_never_break_a_pull(fake: FakeOllama) -> None:
    lines = [
        {"status": {"nested": 1}, "digest": 5, "total": 10**400, "completed": -5},
        {"status": "pulling abc", "digest": HOSTILE, "total": 100, "completed": True},
        {"status": HOSTILE},
        {"status": "success"},
    ]
    fake.add_fault(Fault("lines", path="/api/pull", body=lines))
    events: list[PullProgress] = []
    printed = io.StringIO()
    printer = PullProgressPrinter(printed, tty=False)

    def on_progress(event: PullProgress) -> None:
        events.append(event)
        printer(event)

    run(pull_model(fake.base_url, "qwen3:1.7b", on_progress))
    printer.close()
    assert events[0] == PullProgress(status="")
    assert events[1].status == "pulling abc"
    assert (events[1].total, events[1].completed) == (100, None)
    assert events[1].digest is not None
    assert len(events[1].digest) == 200
    assert len(events[2].status) == 200
    assert events[3] == PullProgress("success")
    printed.getvalue().encode("utf-8")


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({"code": 1}, "failed: an error that is not text (an object)"),
        (None, "failed: an error that is not text (null)"),
        (HOSTILE, "failed: \ufffd" + "x" * 498 + "…"),
    ],
)
def test_a_pull_error_of_any_type_is_short_text(fake: FakeOllama, error: object, said: str) -> None:
    fake.add_fault(Fault("lines", path="/api/pull", body=[{"status": "pulling"}, {"error": error}]))
    message = pull_failure(fake)
    assert message.endswith(said)
    message.encode("utf-8")


# --- what changed between Ollama releases ------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "found", "truncate", "whole", "think_max"),
    [
        ("0.12.5", (0, 12, 5), False, True, False),
        ("0.12.6-rc0", (0, 12, 6), True, True, False),
        ("0.12.6", (0, 12, 6), True, True, False),
        ("0.21.2", (0, 21, 2), True, True, False),
        ("0.22.0", (0, 22, 0), True, True, True),
        ("0.29.1", (0, 29, 1), True, True, True),
        ("0.30.0-rc12", (0, 30, 0), True, False, True),
        ("0.30.0", (0, 30, 0), True, False, True),
        ("0.30.1", (0, 30, 1), True, True, True),
        ("0.34.2", (0, 34, 2), True, True, True),
        ("v1.2.3", (1, 2, 3), True, True, True),
        ("0.0.0", None, False, True, True),  # built from source: unknown
        ("nightly", None, False, True, True),
        (None, None, False, True, True),
    ],
)
def test_what_each_release_does(
    version: str | None,
    found: tuple[int, int, int] | None,
    truncate: bool,
    whole: bool,
    think_max: bool,
) -> None:
    assert release(version) == found
    assert honours_truncate(version) is truncate
    assert counts_whole_prompt(version) is whole
    assert knows_think_max(version) is think_max


def test_a_deeply_nested_progress_line_is_an_error_of_the_pull(fake: FakeOllama) -> None:
    """`[[[…` is too deep for Python's JSON parser: RecursionError must not escape `pull`."""
    fake.add_fault(Fault("lines", path="/api/pull", body=[b"[" * 20_000]))
    with pytest.raises(AdapterError, match="a progress line is not JSON: \\[\\[\\["):
        run(pull_model(fake.base_url, "qwen3:1.7b", lambda event: None))


def test_the_probe_of_a_server_with_a_content_length_no_parser_accepts_says_no() -> None:
    """The action asks `server_answers` before it starts Ollama: `Content-Length: ²` once
    crashed it (exit 4)."""
    answer = b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\nok"  # one byte: ² in Latin-1
    with RawServer(answer) as server:
        assert run(server_answers(server.url, 2.0)) is False
        assert len(server.heads) == 1
