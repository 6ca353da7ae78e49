"""The configuration schema itself: valid draft 2020-12, closed objects, one copy."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ruledrift.checks.assertions import CHECKS
from ruledrift.checks.language import SUPPORTED_LANGUAGES
from ruledrift.data import LanguageAssertion
from ruledrift.suite.load import schema_text

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schema" / "rule-drift.schema.json").read_text(encoding="utf-8"))
# maps passed through to a server as they are, and maps whose keys are the suite's own (a tool's
# parameters schema and a call's arguments; conditions keyed by argument names)
OPEN_MAPS = {
    "/$defs/ollamaAdapter/properties/options",
    "/$defs/openaiAdapter/properties/extraBody",
    "/$defs/tool/properties/parameters",
    "/$defs/scriptedCall/properties/arguments",
    "/$defs/conditions",
}
TOOL_ASSERTIONS = {"calls", "notCalls", "noCalls", "callsBefore", "validCalls"}
# objects that only dispatch on "type" to a closed branch (if/then)
DISPATCHERS = {"/$defs/adapter", "/$defs/assertion"}


def object_schemas(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        if node.get("type") == "object":
            yield pointer, node
        for key, value in node.items():
            yield from object_schemas(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from object_schemas(value, f"{pointer}/{index}")


def test_schema_is_valid_2020_12_with_an_id() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"].endswith("/schema/rule-drift.schema.json")


def test_every_object_is_closed_except_pass_through_maps() -> None:
    found = dict(object_schemas(SCHEMA))
    assert set(found) >= OPEN_MAPS | DISPATCHERS
    for pointer, schema in found.items():
        if pointer in OPEN_MAPS:
            assert "additionalProperties" not in schema, pointer
        elif pointer in DISPATCHERS:
            for branch in schema["allOf"]:
                target = branch["then"]["$ref"].removeprefix("#")
                assert found[target]["additionalProperties"] is False, target
        else:
            assert schema.get("additionalProperties") is False, pointer


def test_the_package_ships_the_same_schema() -> None:
    assert schema_text() == (ROOT / "schema" / "rule-drift.schema.json").read_text(encoding="utf-8")


def test_top_level_accepts_dollar_schema_for_editors() -> None:
    assert SCHEMA["properties"]["$schema"] == {
        "type": "string",
        "description": SCHEMA["properties"]["$schema"]["description"],
    }


def test_every_assertion_type_has_a_branch_and_a_check() -> None:
    types = SCHEMA["$defs"]["assertion"]["properties"]["type"]["enum"]
    branches = [
        b["if"]["properties"]["type"]["const"] for b in SCHEMA["$defs"]["assertion"]["allOf"]
    ]
    assert types == branches
    assert (
        set(types) == set(CHECKS) | {"matches", "notMatches", "command", "judge"} | TOOL_ASSERTIONS
    )


def test_a_language_is_one_of_the_identifiers_iso_codes() -> None:
    language = SCHEMA["$defs"]["languageAssertion"]["properties"]
    assert language["value"]["enum"] == sorted(SUPPORTED_LANGUAGES)
    assert language["minConfidence"]["default"] == LanguageAssertion("en").min_confidence


def test_after_turn_is_an_integer_a_list_of_distinct_boundaries_or_a_search() -> None:
    after = SCHEMA["$defs"]["probe"]["properties"]["afterTurn"]
    assert after["type"] == ["integer", "array", "object"]
    assert (after["minItems"], after["uniqueItems"]) == (1, True)
    assert after["items"] == {"type": "integer", "minimum": 0, "maximum": after["maximum"]}
    assert (after["required"], after["additionalProperties"]) == (["search"], False)
    search = after["properties"]["search"]
    assert (search["minItems"], search["maxItems"], search["items"]) == (2, 2, after["items"])
