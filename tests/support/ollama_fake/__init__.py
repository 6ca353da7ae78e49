"""A loopback Ollama written to Ollama's contract (server.py) and an `ollama` stand-in
executable (bin/ollama) that serves it, for adapter and sidecar tests."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.ollama_fake.server import (
    BUSY,
    PULL_MISSING,
    RUNNER_STOPPED,
    FakeModel,
    FakeOllama,
    Fault,
    RecordedRequest,
    calls_from_prompt,
    count_prompt,
    echo_answer,
    full_name,
)

OLLAMA_BIN = Path(__file__).resolve().parent / "bin" / "ollama"


def free_port() -> int:
    """A loopback port nobody listens on (for connection-refused tests and OLLAMA_HOST)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


__all__ = [
    "BUSY",
    "OLLAMA_BIN",
    "PULL_MISSING",
    "RUNNER_STOPPED",
    "FakeModel",
    "FakeOllama",
    "Fault",
    "RecordedRequest",
    "calls_from_prompt",
    "count_prompt",
    "echo_answer",
    "free_port",
    "full_name",
]
