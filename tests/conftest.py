"""The `process` marker is kept honest: a test that starts a process, opens a server or connects
to one (anything but the quick, in-process kind) must carry `@pytest.mark.process`, so that
`pytest -m "not process"` is the fast loop a developer runs while working.

Python's audit hooks see every process start (`subprocess.Popen`, `os.fork`, `os.posix_spawn`,
`os.exec`) and every `bind` or `connect` of a network socket. During each unmarked test's setup,
call and teardown they are recorded, and such a test fails at teardown, naming what it did.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Generator
from typing import Any

import pytest

_PROCESS_EVENTS = ("subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec")
_SOCKET_EVENTS = ("socket.bind", "socket.connect")
_watching = False
_seen: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _watching or len(_seen) >= 3:
        return
    if event in _PROCESS_EVENTS:
        _seen.append(f"{event} {str(args[0])[:120]}")
    elif (
        event in _SOCKET_EVENTS
        and isinstance(args[0], socket.socket)
        and args[0].family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX)
    ):
        _seen.append(f"{event} {str(args[1])[:120]}")


sys.addaudithook(_audit)


def _watch(item: pytest.Item) -> bool:
    return item.get_closest_marker("process") is None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    global _watching
    _seen.clear()
    _watching = _watch(item)
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    global _watching
    try:
        return (yield)
    finally:
        _watching = False
        if _watch(item) and _seen:
            found = "; ".join(_seen)
            _seen.clear()
            pytest.fail(
                f"{item.nodeid} starts a process or a server ({found}): "
                "mark it @pytest.mark.process",
                pytrace=False,
            )
