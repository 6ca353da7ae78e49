"""Ollama model names, compared as Ollama compares them."""

from __future__ import annotations


def full_model_name(name: str) -> str:
    """`qwen3` → `registry.ollama.ai/library/qwen3:latest`; names compare case-insensitively."""
    name = name.strip().lower()
    if ":" not in name.rpartition("/")[2]:
        name += ":latest"
    parts = name.split("/")
    defaults = ["registry.ollama.ai", "library"]
    return "/".join([*defaults[: max(0, 3 - len(parts))], *parts])
