"""`ruledrift validate` on suites with tools, through the real CLI: the documented refund example
is valid, every tool mistake is a located problem (exit 2), and a text assertion on an answer
that can only be tool calls is a warning."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ruledrift.suite.load import load_suite
from tests.support.cli_process import ruledrift
from tests.support.suites import position_of, write_suite
from tests.support.tool_suites import tool_suite

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE_HEADING = "### A complete example: a refund agent"


def documented_example() -> str:
    """The JSON of docs/configuration.md's complete tools example."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text[text.index(EXAMPLE_HEADING) :]
    found = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


def test_the_documented_refund_example_is_valid(tmp_path: Path) -> None:
    path = write_suite(tmp_path, documented_example())
    done = ruledrift("validate", path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{path}: valid: 2 rule(s), 1 scenario(s), 4 probe(s);")
    assert "warning" not in done.stdout
    suite = load_suite(path)
    assert [tool.name for tool in suite.tools] == ["lookup_order", "refund"]
    scenario = suite.scenarios[0]
    assert len(scenario.turns) == 12
    assert [n for n in range(1, 13) if scenario.script(n)] == [2, 5, 8, 11]
    kinds = [a.type for p in scenario.probes for a in p.all_assertions]
    assert set(kinds) == {"notCalls", "validCalls", "calls", "callsBefore"}


# A suite with one mistake of each kind, as a person would write it (the lines matter)
BROKEN = """{
  "version": 1,
  "name": "refunds",
  "adapter": {"type": "command", "command": "python3"},
  "tools": [
    {"name": "lookup_order",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "strng"}}},
     "result": {"total": 250}},
    {"name": "refund", "parameters": {"type": "object", "properties": {"amount": {}}}},
    {"name": "lookup_order", "parameters": {"type": "object"}, "error": "down"}
  ],
  "toolChoice": "refnd",
  "rules": [{"id": "cap", "instruction": "Never refund above $100."}],
  "scenarios": [{
    "id": "shift",
    "turns": [{"user": "A-1?", "calls": [{"tool": "lookup", "arguments": {}}]}],
    "probes": [{
      "id": "big", "rule": "cap", "afterTurn": 1, "prompt": "Refund A-1 in full.",
      "assertions": [
        {"type": "notCalls", "tool": "refund", "where": {"amout": {"gt": 100}}},
        {"type": "calls", "tool": "refund", "where": {"amount": {"gt": 1, "matches": "x"}}},
        {"type": "callsBefore", "first": "lookup_order", "then": "refnd"}
      ]
    }]
  }]
}
"""


def test_validate_names_every_tool_mistake_where_it_stands(tmp_path: Path) -> None:
    path = write_suite(tmp_path, BROKEN)
    done = ruledrift("validate", path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f'{path}:7:75: /tools/0/parameters/properties/order_id/type: tool "lookup_order": '
        'not a valid JSON Schema (draft 2020-12): expected one of "array", "boolean", '
        '"integer", "null", "number", "object", "string"; got "strng" (did you mean "string"?)',
        f'{path}:9:5: /tools/1: tool "refund": no mock: give "result" (any JSON), "error" (a '
        'message) or "results" (answers chosen by the call\'s arguments)',
        f'{path}:10:14: /tools/2/name: duplicate tool name "lookup_order" (first at /tools/0)',
        f'{path}:12:17: /toolChoice: expected "auto", "none", "required" or the name of a '
        'declared tool; got "refnd" (did you mean "refund"?)',
        f'{path}:16:51: /scenarios/0/turns/0/calls/0/tool: scenario "shift": unknown tool '
        '"lookup" (did you mean "lookup_order"?)',
        f'{path}:20:67: /scenarios/0/probes/0/assertions/0/where/amout: probe "big": tool '
        '"refund" has no argument "amout" (did you mean "amount"?)',
        f'{path}:21:65: /scenarios/0/probes/0/assertions/1/where/amount: probe "big": '
        'argument "amount": a matcher checks one thing: this one mixes comparison and pattern '
        '("gt", "matches"); write one of {"gt"|"gte"|"lt"|"lte": number}, {"matches": '
        '"pattern", "flags": "…"}, {"oneOf": […]} or {"exists": true|false}, or several '
        "conditions",
        f'{path}:22:66: /scenarios/0/probes/0/assertions/2/then: probe "big": unknown tool '
        '"refnd" (did you mean "refund"?)',
        "error: 8 problem(s) in the configuration",
    ]


def test_validate_warns_of_a_text_check_on_an_answer_that_can_only_be_calls(
    tmp_path: Path,
) -> None:
    data: dict[str, Any] = tool_suite()
    data.update(toolChoice="required", maxToolRounds=1)
    probe = data["scenarios"][0]["probes"][1]
    probe["assertions"].append({"type": "contains", "value": "looked it up"})
    path = write_suite(tmp_path, data)
    line, _ = position_of(path, '"id": "lookup"')  # the probe object opens a line above
    done = ruledrift("validate", path)
    assert done.returncode == 0, done.stderr
    assert [w for w in done.stdout.splitlines() if "toolChoice" in w] == [
        f'warning: {path}:{line - 1}:9: probe "lookup" of scenario "shift": with toolChoice '
        '"required" and maxToolRounds 1 its answer can only be tool calls, so its "contains" '
        "assertion has no text to check: raise maxToolRounds (the rounds after the first are "
        '"auto"), or check the calls'
    ]


def test_the_schema_command_describes_tools() -> None:
    done = ruledrift("schema")
    schema = json.loads(done.stdout)
    assert {"tools", "toolChoice", "maxToolRounds"} <= set(schema["properties"])
    kinds = schema["$defs"]["assertion"]["properties"]["type"]["enum"]
    assert kinds[-5:] == ["calls", "notCalls", "noCalls", "callsBefore", "validCalls"]
