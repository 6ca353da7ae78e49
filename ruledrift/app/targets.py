"""What the front-ends ask about a suite's target before a run: whether to start a managed Ollama
server for it (the action's `start-ollama: auto`), and whether its URL is this machine, which
inside a container is the container itself."""

from __future__ import annotations

import asyncio
from typing import Literal
from urllib.parse import urlsplit

from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.boundary.http import is_loopback
from ruledrift.data import Suite
from ruledrift.ollama.api import server_answers

PROBE_TIMEOUT_S = 2.0  # how long an Ollama server may take to say it is there


def shown_url(url: str) -> str:
    """A URL for a log, without credentials."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def loopback_url(suite: Suite, base_url: str | None) -> str | None:
    """The target's URL (`base_url` when given, else the suite's), shown without credentials,
    when it names this machine; None otherwise or for a target without a URL."""
    url = base_url or getattr(suite.adapter, "base_url", None)
    if not isinstance(url, str) or not is_loopback(url):
        return None
    return shown_url(url)


def start_managed_server(
    start: Literal["auto", "true", "false"], suite: Suite | None, base_url: str | None
) -> tuple[bool, str]:
    """Whether to start a managed Ollama server, and why (for the log). Under "auto": for the
    ollama adapter at a loopback address where no server answers."""
    if start != "auto":
        return start == "true", f"start-ollama is {start}"
    if suite is None:
        return False, "start-ollama is auto and the suite does not load (the run says why)"
    adapter = suite.adapter
    if not isinstance(adapter, OllamaAdapterConfig):
        return False, f"start-ollama is auto and the suite uses the {adapter.type} adapter"
    url = base_url or adapter.base_url
    if not is_loopback(url):
        return False, f"start-ollama is auto and {shown_url(url)} is not a loopback address"
    if asyncio.run(server_answers(url, PROBE_TIMEOUT_S)):
        return False, f"start-ollama is auto and a server answers at {shown_url(url)}"
    return True, f"start-ollama is auto and nothing answers at {shown_url(url)}"
