"""Words for how a child process ended, shared by the command adapter and the Ollama sidecar."""

from __future__ import annotations

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
