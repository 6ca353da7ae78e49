"""Fixtures for the end-to-end tests: the SmolLM2 weights, two servers backed by them, and how
long a model call may take on this machine now (measured, not assumed).

A test marked `e2e` FAILS when the stack is missing (with how to install it), unless
RULEDRIFT_SKIP_E2E=1 is set, which skips it with that reason."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.stack import (
    call_timeout,
    gguf_path,
    llama_cpp_server,
    ollama_loopback_server,
    skip_reason,
    stack_problem,
    warm_up,
)

OPENAI_MODEL = "smollm2-135m"  # the alias llama_cpp.server serves the weights under
OLLAMA_MODEL = "smollm2:135m"


@pytest.fixture(scope="session")
def gguf() -> Path:
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    problem = stack_problem()
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    return gguf_path()


@pytest.fixture(autouse=True)
def _e2e_stack(request: pytest.FixtureRequest) -> None:
    """Every e2e test needs the stack, whether or not it asks for the weights."""
    if request.node.get_closest_marker("e2e") is not None:
        request.getfixturevalue("gguf")


@pytest.fixture(scope="session")
def openai_base_url(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama-cpp-server") / "server.log"
    with llama_cpp_server(gguf, log, alias=OPENAI_MODEL, n_ctx=2048) as url:
        yield url


@pytest.fixture(scope="session")
def tools_base_url(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server with its `chatml-function-calling` format: it constrains the
    model to a tool call when `tool_choice` names a tool (a grammar from the tool's schema)."""
    log = tmp_path_factory.mktemp("llama-cpp-tools") / "server.log"
    with llama_cpp_server(
        gguf, log, alias=OPENAI_MODEL, n_ctx=2048, chat_format="chatml-function-calling"
    ) as url:
        yield url


@pytest.fixture(scope="session")
def call_timeout_s(openai_base_url: str) -> float:
    """Seconds one model call may take: a multiple of a warm-up answer timed now, with a floor.
    Sizes each suite's timeoutMs and the subprocess timeouts around `ruledrift run`, so a
    machine slowed down by other work gets more time instead of failing."""
    return call_timeout(warm_up(openai_base_url, OPENAI_MODEL))


@pytest.fixture(scope="session")
def ollama_base_url(gguf: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("ollama-loopback") / "server.log"
    with ollama_loopback_server(gguf, log, name=OLLAMA_MODEL) as url:
        yield url
