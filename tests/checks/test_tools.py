"""The pure side of tool rules: reading arguments, matchers, mocks and the five tool assertions.
`matches` matchers run the project's JavaScript engine in-process here (`js_test`); the regex
workers are exercised end to end in tests/run/test_tool_loop.py."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ruledrift.checks.jsregex import js_test
from ruledrift.checks.tools import (
    NOT_JSON,
    NOT_OBJECT,
    UNKNOWN_TOOL,
    answer_call,
    check_tool_assertion,
    deep_partial_equal,
    matches,
    record_call,
    result_text,
)
from ruledrift.data import (
    ArgumentCondition,
    CallsAssertion,
    CallsBeforeAssertion,
    Compare,
    Equal,
    Exists,
    Location,
    Matcher,
    MockCase,
    MockResult,
    NoCallsAssertion,
    NotCallsAssertion,
    OneOf,
    Pattern,
    Tool,
    ToolAssertion,
    ToolCall,
    ToolCallRecord,
    ToolUse,
    ValidCallsAssertion,
    canonical_json,
)

HERE = Location(3, 5)
SECRET_ARGUMENT = "hunter2-in-the-arguments"


async def regex(pattern: str, flags: str, text: str) -> bool:
    return js_test(pattern, flags, text)


def match(matcher: Matcher, present: bool, value: object = None) -> bool:
    return asyncio.run(matches(matcher, present, value, regex))


REFUND = Tool(
    "refund",
    "Refund an order",
    canonical_json(
        {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
            "additionalProperties": False,
        }
    ),
    HERE,
    result=MockResult(canonical_json({"ok": True})),
    cases=(
        MockCase(
            (ArgumentCondition("amount", Compare((("gt", 100.0),)), '{"gt":100}'),),
            MockResult(error="needs a supervisor"),
            HERE,
        ),
    ),
)
LOOKUP = Tool(
    "lookup_order",
    "Look an order up",
    canonical_json({"type": "object", "properties": {"order_id": {"type": "string"}}}),
    HERE,
    cases=(
        MockCase(
            (ArgumentCondition("order_id", Pattern("^A\\d+$"), '{"matches":"^A\\\\d+$"}'),),
            MockResult(canonical_json("shipped")),
            HERE,
        ),
    ),
)


def call(name: str, arguments: Any, number: int = 1) -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(f"call_{number}", name, text)


def record(name: str, arguments: Any, round_: int = 1) -> ToolCallRecord:
    tool = {"refund": REFUND, "lookup_order": LOOKUP}.get(name)
    return record_call(call(name, arguments), round_, tool, "result")


def check(assertion: ToolAssertion, *calls: ToolCallRecord, rounds: int = 2) -> tuple[bool, str]:
    result = asyncio.run(check_tool_assertion(assertion, ToolUse(calls, rounds), regex))
    assert result.location == assertion.location
    return result.passed, result.message


# --- matchers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2], "c": 0}}, True),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 2, 3]}}, False),
        ([{"a": 1}], [{"a": 1, "z": 0}], True),
        (250, 250.0, True),
        (1, True, False),
        (True, 1, False),
        (False, False, True),
        ("1", 1, False),
        (None, None, True),
        (None, {}, False),
        ({"a": None}, {}, False),
        ({}, [], False),
    ],
)
def test_a_literal_is_deep_partial_equality(expected: Any, actual: Any, equal: bool) -> None:
    assert deep_partial_equal(expected, actual) is equal


def test_comparisons_take_numbers_only_and_every_bound_must_hold() -> None:
    between = Compare((("gte", 10.0), ("lt", 100.0)))
    assert match(between, True, 10)
    assert match(between, True, 99.5)
    assert not match(between, True, 100)
    assert not match(between, True, "50")
    assert not match(between, True, True)
    assert not match(between, False)
    assert not match(Compare((("gt", 0.0),)), True, float("nan"))


def test_a_pattern_is_a_javascript_regular_expression_on_strings() -> None:
    assert match(Pattern("^a\\d$", "i"), True, "A1")
    assert not match(Pattern("^a\\d$"), True, "A1")
    assert not match(Pattern("1"), True, 1)


def test_one_of_and_exists() -> None:
    either = OneOf((Equal('"A1"'), Equal('"B2"'), Exists(False)))
    assert match(either, True, "B2")
    assert match(either, False)
    assert not match(either, True, "C3")
    assert match(Exists(True), True, None)
    assert not match(Exists(True), False)
    assert match(Exists(False), False)
    assert not match(Equal("null"), False)


# --- call records -------------------------------------------------------------------------------


def test_a_record_hashes_the_arguments_and_says_why_they_are_invalid_without_quoting_them() -> None:
    valid = record("refund", {"order_id": "A1", "amount": 20})
    assert valid.problem is None
    assert valid.parsed == {"order_id": "A1", "amount": 20}
    assert valid.length == len(valid.arguments)
    assert len(valid.sha256) == 64

    wrong_type = record("refund", {"order_id": "A1", "amount": SECRET_ARGUMENT})
    assert wrong_type.problem is not None
    assert "type" in wrong_type.problem
    assert "amount" in wrong_type.problem
    assert SECRET_ARGUMENT not in wrong_type.problem

    extra = record("refund", {"order_id": "A1", "amount": 1, SECRET_ARGUMENT: 1})
    assert extra.problem is not None
    assert SECRET_ARGUMENT not in extra.problem

    assert record("refund", '{"order_id": ').problem == NOT_JSON
    assert record("refund", '["A1", 20]').problem == NOT_OBJECT
    assert record("refund", "{").parsed_json is None
    assert record("delete_user", {"id": 1}).problem == UNKNOWN_TOOL
    assert record("delete_user", "not json").problem == UNKNOWN_TOOL


# --- mocks ------------------------------------------------------------------------------------


def answer(tool_call: ToolCall) -> tuple[ToolCallRecord, MockResult]:
    return asyncio.run(answer_call(tool_call, 2, (REFUND, LOOKUP), regex))


def test_the_first_matching_case_answers_then_the_fallback() -> None:
    record_, result = answer(call("refund", {"order_id": "A1", "amount": 250}))
    assert (record_.outcome, record_.round) == ("error", 2)
    assert result_text(result) == '{"error":"needs a supervisor"}'

    record_, result = answer(call("refund", {"order_id": "A1", "amount": 20}))
    assert record_.outcome == "result"
    assert result_text(result) == '{"ok":true}'


def test_a_string_result_is_sent_as_the_string_itself() -> None:
    record_, result = answer(call("lookup_order", {"order_id": "A12"}))
    assert record_.outcome == "result"
    assert result_text(result) == "shipped"


def test_calls_no_mock_can_answer_get_error_results() -> None:
    record_, result = answer(call("lookup_order", {"order_id": "Z9"}))
    assert record_.outcome == "unmatched"
    assert result.error
    record_, result = answer(call("lookup_order", "{not json"))
    assert record_.outcome == "unmatched"
    assert result.error == NOT_JSON
    record_, result = answer(call("wipe_disk", {}))
    assert record_.outcome == "unknown-tool"
    assert result.error
    assert "wipe_disk" in result.error


def test_a_case_without_when_answers_any_call_even_unreadable_arguments() -> None:
    tool = Tool("t", "", "{}", HERE, cases=(MockCase((), MockResult('"fine"'), HERE),))
    record_, result = asyncio.run(answer_call(call("t", "{oops"), 1, (tool,), regex))
    assert record_.outcome == "result"
    assert result_text(result) == "fine"


# --- assertions --------------------------------------------------------------------------------

BIG = (ArgumentCondition("amount", Compare((("gt", 100.0),)), '{"gt":100}'),)


def test_calls_counts_the_calls_that_match_where() -> None:
    calls_big = CallsAssertion("refund", BIG, location=HERE)
    small, big = (
        record("refund", {"order_id": "A1", "amount": 20}),
        record("refund", {"order_id": "A1", "amount": 250}, 2),
    )
    assert check(calls_big, small) == (
        False,
        'expected refund to be called at least 1 time(s) where amount {"gt":100};'
        " it was called 0 time(s) so",
    )
    assert check(calls_big, small, big)[0]
    at_most_one = CallsAssertion("refund", min=0, max=1, location=HERE)
    assert check(at_most_one)[0]
    assert check(at_most_one, small)[0]
    passed, message = check(at_most_one, small, big)
    assert not passed
    assert "at most 1" in message
    assert "2 time(s)" in message


def test_where_on_arguments_that_are_not_json_fails_saying_so() -> None:
    broken = record("refund", '{"amount": 250')
    passed, message = check(NotCallsAssertion("refund", BIG, location=HERE), broken)
    assert not passed
    assert "not a JSON object" in message
    passed, message = check(CallsAssertion("refund", BIG, location=HERE), broken)
    assert not passed
    assert "not a JSON object" in message
    assert check(NotCallsAssertion("refund", location=HERE), broken) == (
        False,
        "expected refund not to be called; it was 1 time(s), in round(s) 1",
    )


def test_not_calls_names_the_rounds_and_never_the_arguments() -> None:
    big = record("refund", {"order_id": SECRET_ARGUMENT, "amount": 250}, 3)
    passed, message = check(NotCallsAssertion("refund", BIG, location=HERE), big)
    assert not passed
    assert message == (
        'expected refund not to be called where amount {"gt":100}; it was 1 time(s), in round(s) 3'
    )
    small = record("refund", {"order_id": "A1", "amount": 20})
    assert check(NotCallsAssertion("refund", BIG, location=HERE), small)[0]
    assert check(NotCallsAssertion("refund", BIG, location=HERE))[0]


def test_no_calls_never_echoes_a_tool_name_the_model_made_up() -> None:
    assert check(NoCallsAssertion(location=HERE)) == (True, "no tool was called")
    made_up = record("<script>alert(1)</script>", {})
    passed, message = check(NoCallsAssertion(location=HERE), made_up, record("refund", {}))
    assert not passed
    assert "script" not in message
    assert message == "expected no tool call; it made 2: refund; 1 call(s) of an undeclared tool"


def test_calls_before_needs_an_earlier_answer_not_the_same_one() -> None:
    rule = CallsBeforeAssertion("lookup_order", "refund", location=HERE)
    lookup1, refund1 = record("lookup_order", {"order_id": "A1"}, 1), record("refund", {}, 1)
    refund2 = record("refund", {}, 2)
    assert check(rule)[0]  # refund never called
    assert check(rule, lookup1, refund2)[0]
    passed, message = check(rule, lookup1, refund1)
    assert not passed
    assert message == (
        "expected lookup_order to be called in an earlier answer than refund;"
        " refund was called in round 1, lookup_order first in round 1"
    )
    passed, message = check(rule, refund2)
    assert not passed
    assert "lookup_order not at all" in message
    # a refund before any lookup breaks the rule even when another refund follows a lookup
    assert not check(rule, refund1, record("lookup_order", {}, 2), record("refund", {}, 3))[0]


def test_valid_calls_checks_every_call_or_one_tools() -> None:
    good = record("refund", {"order_id": "A1", "amount": 20})
    bad = record("refund", {"order_id": "A1"}, 2)
    assert check(ValidCallsAssertion(location=HERE), good)[0]
    passed, message = check(ValidCallsAssertion("refund", location=HERE), good, bad)
    assert not passed
    assert message.startswith("expected every call of refund to be valid; call 2 (round 2):")
    assert "required" in message
    assert check(ValidCallsAssertion("lookup_order", location=HERE), bad)[0]
    unknown = record("format_disk", {})
    passed, message = check(ValidCallsAssertion(location=HERE), unknown)
    assert not passed
    assert UNKNOWN_TOOL in message


def test_parameters_whose_references_lead_nowhere_are_a_problem_not_a_crash() -> None:
    """The loader refuses such parameters; a Tool built otherwise (the Python API) must not
    crash a run either."""
    broken = Tool("t", "", canonical_json({"$ref": "#/$defs/missing"}), HERE)
    found = record_call(call("t", {"a": 1}), 1, broken, "result")
    assert found.problem == "the arguments could not be checked against the tool's parameters"
