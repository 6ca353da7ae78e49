"""Process helpers for tests: proving no process is left behind, finding installed tools,
running the CLI as a process that a test can kill."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.support.cli_process import CI_VARIABLES

T = TypeVar("T")


def run_within(scenario: Coroutine[Any, Any, T], seconds: float = 120.0) -> T:
    """`asyncio.run(scenario)`, failing with TimeoutError past `seconds` (a deadline, generous
    for a loaded machine): a client that waits forever on a broken server fails the test."""
    return asyncio.run(asyncio.wait_for(scenario, seconds))


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie, dead but not yet reaped by its new parent, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def gone(*pids: int, within: float = 60.0) -> bool:
    """Whether every pid has exited within `within` seconds: a deadline, not a window (it
    returns as soon as they are gone), generous for a machine at a load of 10 (issue 21)."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def kill_survivors(*pids: int) -> None:
    """SIGKILL to those of `pids` still running: a failed test leaves nothing behind."""
    for pid in pids:
        if alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def wait_for_file(path: Path, within: float = 30.0) -> None:
    """Poll until `path` exists (written atomically by the process under test)."""
    deadline = time.monotonic() + within
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {within:g} s")
        time.sleep(0.02)


@contextlib.contextmanager
def ruledrift_process(*args: str | Path) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m ruledrift ARGS` running in the background, with a clean CI environment; it is
    killed and reaped when the block ends."""
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    with subprocess.Popen(
        [sys.executable, "-m", "ruledrift", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as process:
        try:
            yield process
        finally:
            process.kill()
            process.wait(timeout=30)


def tool(name: str, package: str) -> str:
    """A linter installed with the test extras: beside this Python, else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        pytest.fail(
            f"{name} is not installed: `pip install {package}` (it is in RuleDrift's test "
            f"extras: pip install -e '.[test]')"
        )
    return found


def interruptible() -> None:
    """A `preexec_fn` that gives the child Ctrl-C back: a shell that started the tests in the
    background left SIGINT ignored, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
