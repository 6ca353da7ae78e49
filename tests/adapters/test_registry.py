"""adapters/registry.py: every adapter type the schema allows has a factory, and an unknown
type is a usage error that lists the valid ones."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ruledrift.adapters.registry import ADAPTERS, create_adapter
from ruledrift.errors import ExitCode, UsageError
from ruledrift.model import CommandAdapterConfig

SCHEMA = Path(__file__).resolve().parents[2] / "schema" / "rule-drift.schema.json"


def test_every_schema_adapter_type_has_a_factory() -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert set(schema["$defs"]["adapter"]["properties"]["type"]["enum"]) == set(ADAPTERS)


def test_a_known_type_gets_its_adapter(tmp_path: Path) -> None:
    adapter = create_adapter(CommandAdapterConfig("python3", (), tmp_path, 1000))
    assert adapter.target_info().adapter == "command"


@dataclass(frozen=True)
class _Unknown:
    type: str = "carrier-pigeon"


def test_an_unknown_type_is_a_usage_error_listing_the_valid_ones() -> None:
    with pytest.raises(UsageError) as raised:
        create_adapter(_Unknown())  # type: ignore[arg-type]
    assert str(raised.value) == (
        "unknown adapter type 'carrier-pigeon' (valid: command, ollama, openai)"
    )
    assert raised.value.exit_code == ExitCode.USAGE
