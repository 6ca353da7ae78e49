"""Walking a suite document that may not be valid yet: the objects of a list (anything else
skipped: the schema reports it), and every assertion object of a probe."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def objects(value: object) -> list[tuple[int, dict[str, Any]]]:
    """(index, item) of each object in `value` (nothing when it is not a list)."""
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def probe_assertions(probe: dict[str, Any]) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(where relative to the probe: "" or "/control", index, assertion) of every assertion
    object of a probe and of its control."""
    control = probe.get("control")
    for where, assertions in (
        ("", probe.get("assertions")),
        ("/control", control.get("assertions") if isinstance(control, dict) else None),
    ):
        for a_index, assertion in objects(assertions):
            yield where, a_index, assertion
