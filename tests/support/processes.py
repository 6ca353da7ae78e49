"""Process helpers for tests: proving no process is left behind, finding installed tools."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest


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


def gone(*pids: int, within: float = 5.0) -> bool:
    """Whether every pid has exited within `within` seconds."""
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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
