"""Ollama's HTTP API client (ruledrift/ollama/api.py) against the in-process loopback fake:
model names, pulls with progress, and every way a pull fails."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from ruledrift.errors import AdapterError
from ruledrift.ollama.api import PullProgress, ensure_model, has_model, pull_model
from tests.support.ollama_fake import PULL_MISSING, FakeOllama, Fault

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
        (Fault("invalid_json"), "failed: a progress line is not JSON: '<html><body>502"),
        (Fault("disconnect"), "failed to pull qwen3:1.7b: Server disconnected"),
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
