"""Where something stands in a configuration file."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """Where something stands in the configuration file (1-based line and column)."""

    line: int
    column: int
