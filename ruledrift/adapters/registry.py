"""ADAPTERS: the adapter types a suite can name. Each is defined whole in its own module
(config dataclass, parsing, extra checks, the adapter); see adapters/base.AdapterType."""

from __future__ import annotations

from typing import Any

from ruledrift.adapters import command, ollama, openai
from ruledrift.adapters.base import Adapter, AdapterType
from ruledrift.data import AdapterConfig
from ruledrift.errors import UsageError

ADAPTERS: dict[str, AdapterType[Any]] = {
    "command": command.ADAPTER_TYPE,
    "ollama": ollama.ADAPTER_TYPE,
    "openai": openai.ADAPTER_TYPE,
}


def adapter_type(name: str) -> AdapterType[Any]:
    try:
        return ADAPTERS[name]
    except KeyError:
        valid = ", ".join(sorted(ADAPTERS))
        raise UsageError(f"unknown adapter type {name!r} (valid: {valid})") from None


def create_adapter(config: AdapterConfig) -> Adapter:
    return adapter_type(config.type).create(config)
