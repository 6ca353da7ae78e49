"""ADAPTERS: the adapter types a suite can name, each a factory from its validated config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ruledrift.adapters.base import Adapter
from ruledrift.adapters.command import CommandAdapter
from ruledrift.adapters.ollama import OllamaAdapter
from ruledrift.adapters.openai import OpenAIAdapter
from ruledrift.errors import UsageError
from ruledrift.model import AdapterConfig

ADAPTERS: dict[str, Callable[[Any], Adapter]] = {
    "command": CommandAdapter,
    "ollama": OllamaAdapter,
    "openai": OpenAIAdapter,
}


def create_adapter(config: AdapterConfig) -> Adapter:
    try:
        factory = ADAPTERS[config.type]
    except KeyError:
        valid = ", ".join(sorted(ADAPTERS))
        raise UsageError(f"unknown adapter type {config.type!r} (valid: {valid})") from None
    return factory(config)
