"""Child process groups: how a child ended, in words, and signalling its whole group. Shared by
the command adapter and the managed Ollama server."""

from __future__ import annotations

import contextlib
import os
import signal


def describe_exit(code: int) -> str:
    """`exited with code 3`, or `was killed by signal SIGKILL` for asyncio's negative codes."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return f"was killed by signal {name}"


def signal_group(group: int, sig: signal.Signals) -> None:
    """Send `sig` to every process of `group`; nobody left there is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def kill_group(group: int) -> None:
    """SIGKILL to every process of `group` (a child and whatever it left running)."""
    signal_group(group, signal.SIGKILL)
