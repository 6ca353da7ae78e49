"""Loading a suite with tools (suite/tools.py, suite/matchers.py): the frozen tools, their mocks,
toolChoice, maxToolRounds, scripted turns and the tool assertions, each where the file says."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruledrift.data import (
    ArgumentCondition,
    CallsAssertion,
    CallsBeforeAssertion,
    Compare,
    Equal,
    Exists,
    Location,
    MockCase,
    MockResult,
    NoCallsAssertion,
    NotCallsAssertion,
    OneOf,
    Pattern,
    ScriptedCall,
    ScriptedTurn,
    Suite,
    TextAssertion,
    Tool,
    ValidCallsAssertion,
    json_value,
)
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, position_of, write_suite
from tests.support.tool_suites import tool_suite


def loaded(tmp_path: Path, data: dict[str, Any]) -> tuple[Suite, Path]:
    path = write_suite(tmp_path, data)
    return load_suite(path), path


def opening(path: Path, needle: str, occurrence: int = 1, back: int = 0) -> Location:
    """Where the object holding `needle` opens: `back` lines above it, at its brace."""
    line, _ = position_of(path, needle, occurrence)
    text = path.read_text(encoding="utf-8").splitlines()[line - 1 - back]
    return Location(line - back, text.index("{") + 1)


def test_a_suite_without_tools_keeps_its_defaults(tmp_path: Path) -> None:
    suite, _ = loaded(tmp_path, base_suite())
    assert (suite.tools, suite.tool_choice, suite.max_tool_rounds) == ((), "auto", 4)
    assert suite.scenarios[0].scripts == ()


def test_tools_load_with_their_mocks_and_places(tmp_path: Path) -> None:
    suite, path = loaded(tmp_path, tool_suite())
    lookup, refund = suite.tools
    assert lookup == Tool(
        "lookup_order",
        "Look an order up by its id.",
        '{"additionalProperties":false,"properties":{"order_id":{"type":"string"}},'
        '"required":["order_id"],"type":"object"}',
        opening(path, '"name": "lookup_order"', back=1),
        result=MockResult(error="no such order"),
        cases=(
            MockCase(
                (ArgumentCondition("order_id", Equal('"A-1001"'), '"A-1001"'),),
                MockResult(value_json='{"status":"delivered","total":250}'),
                opening(path, '"when": {', 1, back=1),
            ),
            MockCase(
                (
                    ArgumentCondition(
                        "order_id",
                        Pattern("^a-\\d{4}$", "i"),
                        '{"matches":"^a-\\\\d{4}$","flags":"i"}',
                    ),
                ),
                MockResult(value_json='{"total":40}'),
                opening(path, '"when": {', 2, back=1),
            ),
        ),
    )
    assert (refund.name, refund.result, refund.cases) == (
        "refund",
        MockResult(value_json='"refunded"'),
        (),
    )
    assert json_value(refund.parameters_json) == tool_suite()["tools"][1]["parameters"]
    assert suite.tool("refund") is refund
    assert (suite.tool_choice, suite.max_tool_rounds) == ("auto", 4)


@pytest.mark.parametrize(
    ("mock", "result", "cases"),
    [
        ({"result": None}, MockResult(value_json="null"), 0),
        ({"result": [1, "ü"]}, MockResult(value_json='[1,"ü"]'), 0),
        ({"error": "down for maintenance"}, MockResult(error="down for maintenance"), 0),
        ({"results": [{"error": "always"}]}, None, 1),
    ],
)
def test_each_kind_of_mock(tmp_path: Path, mock: dict[str, Any], result: Any, cases: int) -> None:
    data = tool_suite()
    tool = data["tools"][1]
    del tool["result"], tool["description"]
    tool.update(mock)
    suite, _ = loaded(tmp_path, data)
    refund = suite.tools[1]
    assert (refund.description, refund.result, len(refund.cases)) == ("", result, cases)
    if cases:
        assert refund.cases[0].when == ()
        assert refund.cases[0].result == MockResult(error="always")


def test_tool_choice_and_max_tool_rounds(tmp_path: Path) -> None:
    data = tool_suite()
    data.update(toolChoice="refund", maxToolRounds=9)
    suite, _ = loaded(tmp_path, data)
    assert (suite.tool_choice, suite.max_tool_rounds) == ("refund", 9)
    assert suite.tool_choice_then == "auto"  # a word is the first call's choice only
    data.update(toolChoice="required")
    assert load_suite(write_suite(tmp_path, data)).tool_choice == "required"


def test_tool_choice_can_say_what_later_calls_may_do(tmp_path: Path) -> None:
    data = tool_suite()
    data.update(toolChoice={"first": "refund", "then": "none"})
    suite = load_suite(write_suite(tmp_path, data))
    assert (suite.tool_choice, suite.tool_choice_then) == ("refund", "none")
    data.update(toolChoice={"then": "required"})
    suite = load_suite(write_suite(tmp_path, data))
    assert (suite.tool_choice, suite.tool_choice_then) == ("auto", "required")


def test_scripted_turns_sit_beside_the_turns_and_repeat_with_them(tmp_path: Path) -> None:
    data = tool_suite()
    scenario = data["scenarios"][0]
    scenario["turns"][1]["calls"] += [
        {"tool": "refund", "arguments": {"amount": 20, "order_id": "A-1002"}, "result": 1},
        {"tool": "refund", "arguments": {"order_id": "A-1002", "amount": 500}, "error": "no"},
    ]
    del scenario["turns"][1]["answer"]
    scenario["repeatTurns"] = 2
    suite, path = loaded(tmp_path, data)
    scripted = ScriptedTurn(
        "What about order A-1002?",
        (
            ScriptedCall("lookup_order", '{"order_id":"A-1002"}'),
            ScriptedCall("refund", '{"amount":20,"order_id":"A-1002"}', MockResult(value_json="1")),
            ScriptedCall("refund", '{"amount":500,"order_id":"A-1002"}', MockResult(error="no")),
        ),
        None,
        opening(path, '"user": "What about order A-1002?"', back=1),
    )
    played = suite.scenarios[0]
    assert played.turns == ("hello", "What about order A-1002?") * 2
    assert played.scripts == (None, scripted) * 2
    assert [played.script(n) for n in (1, 2, 3, 4, 5)] == [None, scripted, None, scripted, None]
    assert played.turn(2) == ("What about order A-1002?", None)


def test_a_scripted_answer_is_kept(tmp_path: Path) -> None:
    suite, _ = loaded(tmp_path, tool_suite())
    script = suite.scenarios[0].script(2)
    assert script is not None
    assert script.answer == "Order A-1002 ($40) was delivered."


def test_the_five_tool_assertions_know_their_line(tmp_path: Path) -> None:
    data = tool_suite()
    probe = data["scenarios"][0]["probes"][0]
    probe["assertions"] += [
        {"type": "calls", "tool": "lookup_order", "min": 2, "max": 3},
        {"type": "noCalls"},
        {"type": "validCalls", "tool": "refund"},
        {"type": "contains", "value": "supervisor"},
    ]
    probe["control"] = {"prompt": "Look up A-1002.", "assertions": [{"type": "validCalls"}]}
    suite, path = loaded(tmp_path, data)
    made = suite.scenarios[0].probes[0]
    assert made.assertions == (
        NotCallsAssertion(
            "refund",
            (ArgumentCondition("amount", Compare((("gt", 100.0),)), '{"gt":100}'),),
            location=opening(path, '"type": "notCalls"', back=1),
        ),
        CallsAssertion("lookup_order", (), 2, 3, location=opening(path, '"min": 2', back=3)),
        NoCallsAssertion(location=opening(path, '"type": "noCalls"', back=1)),
        ValidCallsAssertion("refund", location=opening(path, '"tool": "refund"', 2, back=2)),
        TextAssertion("contains", "supervisor"),
    )
    assert made.control is not None
    assert made.control.assertions == (
        ValidCallsAssertion(location=opening(path, '"type": "validCalls"', 2, back=1)),
    )
    before = suite.scenarios[0].probes[1].assertions[0]
    assert before == CallsBeforeAssertion(
        "lookup_order", "refund", location=opening(path, '"type": "callsBefore"', back=1)
    )


def test_calls_defaults_to_at_least_once(tmp_path: Path) -> None:
    data = tool_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = [{"type": "calls", "tool": "refund"}]
    suite, _ = loaded(tmp_path, data)
    made = suite.scenarios[0].probes[0].assertions[0]
    assert isinstance(made, CallsAssertion)
    assert (made.min, made.max, made.where) == (1, None, ())


@pytest.mark.parametrize(
    ("written", "matcher"),
    [
        ("A-1", Equal('"A-1"')),
        (20, Equal("20")),
        ({"currency": "EUR", "value": 20}, Equal('{"currency":"EUR","value":20}')),
        ({}, Equal("{}")),
        ([1, 2], Equal("[1,2]")),
        (None, Equal("null")),
        ({"gte": 10, "lt": 100.5}, Compare((("gte", 10.0), ("lt", 100.5)))),
        ({"matches": "^A-"}, Pattern("^A-", "")),
        ({"exists": False}, Exists(False)),
        (
            {"oneOf": ["A-1", {"matches": "^B"}, {"oneOf": [{"exists": True}]}]},
            OneOf((Equal('"A-1"'), Pattern("^B"), OneOf((Exists(True),)))),
        ),
        ({"matches": "x", "extra": 1}, Equal('{"extra":1,"matches":"x"}')),
    ],
)
def test_each_matcher_is_built_and_quoted_as_written(
    tmp_path: Path, written: Any, matcher: Any
) -> None:
    data = tool_suite()
    properties = data["tools"][1]["parameters"]["properties"]
    properties["reason"] = {}  # any type: every literal may match it
    assertion = {"type": "notCalls", "tool": "refund", "where": {"reason": written}}
    data["scenarios"][0]["probes"][0]["assertions"] = [assertion]
    suite, _ = loaded(tmp_path, data)
    made = suite.scenarios[0].probes[0].assertions[0]
    assert isinstance(made, NotCallsAssertion)
    text = json.dumps(written, ensure_ascii=False, separators=(",", ":"))
    assert made.where == (ArgumentCondition("reason", matcher, text),)


def test_conditions_keep_the_suites_order_and_text(tmp_path: Path) -> None:
    data = tool_suite()
    where = {"supervisor": {"exists": False}, "amount": {"lte": 1e3, "gt": 100}, "reason": "ü"}
    data["scenarios"][0]["probes"][0]["assertions"][0]["where"] = where
    suite, _ = loaded(tmp_path, data)
    made = suite.scenarios[0].probes[0].assertions[0]
    assert isinstance(made, NotCallsAssertion)
    assert [(c.name, c.text) for c in made.where] == [
        ("supervisor", '{"exists":false}'),
        ("amount", '{"lte":1000.0,"gt":100}'),
        ("reason", '"ü"'),
    ]
