"""`validate` on tools: every mistake in the tools block, toolChoice, maxToolRounds, scripted
turns, tool assertions and matchers is a configuration problem at its FILE:LINE:COL and JSON
pointer, saying what was expected (and what was probably meant)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ruledrift.errors import ConfigError
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, position_of, write_suite
from tests.support.tool_suites import tool_suite

Change = Callable[[dict[str, Any]], None]


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    path = write_suite(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    prefix = f"{path}:"
    found = [str(issue) for issue in caught.value.issues]
    assert all(item.startswith(prefix) for item in found), found
    return [item[len(prefix) :].split(": ", 1)[1] for item in found]  # without LINE:COL


def changed(change: Change) -> dict[str, Any]:
    data = tool_suite()
    change(data)
    return data


def refund(data: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = data["tools"][1]
    return tool


def lookup(data: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = data["tools"][0]
    return tool


def first_assertion(data: dict[str, Any]) -> dict[str, Any]:
    assertion: dict[str, Any] = data["scenarios"][0]["probes"][0]["assertions"][0]
    return assertion


def scripted_call(data: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = data["scenarios"][0]["turns"][1]["calls"][0]
    return call


def assert_one(tmp_path: Path, change: Change, expected: str) -> None:
    assert problems(tmp_path, changed(change)) == [expected]


A = "/scenarios/0/probes/0/assertions/0"
PROBE = 'probe "big-refund": '


# --- the tools block ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["tools"].append(refund(d)),
            '/tools/2/name: duplicate tool name "refund" (first at /tools/1)',
        ),
        (
            lambda d: d["tools"].append({**refund(d), "name": "issue refund"}),
            '/tools/2/name: invalid tool name "issue refund": tool names use letters, digits, '
            'underscores and hyphens, 1 to 64 characters (tool "issue refund")',
        ),
        (
            lambda d: d["tools"].append({**refund(d), "name": "required"}),
            '/tools/2/name: a tool cannot be named "required": toolChoice "required" means '
            '"call some tool"; rename the tool',
        ),
        (
            lambda d: refund(d).pop("result"),
            '/tools/1: tool "refund": no mock: give "result" (any JSON), "error" (a message) or '
            '"results" (answers chosen by the call\'s arguments)',
        ),
        (
            lambda d: refund(d).update(error="down"),
            '/tools/1/error: tool "refund": "result" and "error" both answer every call: keep '
            "one of them",
        ),
        (
            lambda d: refund(d).pop("parameters"),
            '/tools/1: missing required field "parameters" (tool "refund")',
        ),
        (
            lambda d: refund(d).update(mock={"result": 1}),
            '/tools/1/mock: unknown field "mock" (allowed fields: description, error, name, '
            'parameters, result, results) (tool "refund")',
        ),
        (
            lambda d: lookup(d)["results"][0].pop("result"),
            '/tools/0/results/0: tool "lookup_order": an entry of results needs its answer: '
            '"result" (any JSON) or "error" (a message)',
        ),
        (
            lambda d: lookup(d)["results"][0].update(error="gone"),
            '/tools/0/results/0/error: tool "lookup_order": an entry of results gives "result" '
            'or "error", not both: keep one of them',
        ),
        (
            lambda d: (lookup(d)["results"][0].pop("when"), lookup(d).pop("error")),
            '/tools/0/results/1: tool "lookup_order": never used: results/0 has no conditions '
            "and answers every call",
        ),
        (
            lambda d: lookup(d)["results"][1].update(when={}),
            '/tools/0/error: tool "lookup_order": never used: results/1 has no conditions and '
            "answers every call first",
        ),
        (
            lambda d: lookup(d)["results"][0]["when"].update(orderId="A-1"),
            '/tools/0/results/0/when/orderId: tool "lookup_order": tool "lookup_order" has no '
            'argument "orderId" (did you mean "order_id"?)',
        ),
        (
            lambda d: lookup(d)["results"][1]["when"]["order_id"].update(flags="q"),
            '/tools/0/results/1/when/order_id/flags: tool "lookup_order": argument "order_id": '
            'invalid flags "q": JavaScript flags are d, g, i, m, s, u, v and y',
        ),
    ],
)
def test_tools_block(tmp_path: Path, change: Change, expected: str) -> None:
    assert_one(tmp_path, change, expected)


# --- parameters: a JSON Schema of an object ----------------------------------------------------

LOOP = (
    "this reference leads back to where it started without reading deeper into the arguments: "
    "validating against it would never end (a schema may refer to itself only through "
    "properties or items)"
)


@pytest.mark.parametrize(
    ("parameters", "expected"),
    [
        (
            {"type": "object", "properties": {"amount": {"type": "nmber"}}},
            '/tools/1/parameters/properties/amount/type: tool "refund": not a valid JSON Schema '
            '(draft 2020-12): expected one of "array", "boolean", "integer", "null", "number", '
            '"object", "string"; got "nmber" (did you mean "number"?)',
        ),
        (
            {"type": "object", "required": "amount"},
            '/tools/1/parameters/required: tool "refund": not a valid JSON Schema (draft '
            "2020-12): expected an array, got a string",
        ),
        (
            {
                "$schema": "http://json-schema.org/draft-04/schema#",
                "type": "object",
                "properties": {"amount": {"minimum": "0"}},
            },
            '/tools/1/parameters/properties/amount/minimum: tool "refund": not a valid JSON '
            "Schema (draft 4): expected a number, got a string",
        ),
        (
            {"type": "object", "properties": {"order_id": {"pattern": "(unclosed"}}},
            '/tools/1/parameters/properties/order_id/pattern: tool "refund": not a valid JSON '
            'Schema (draft 2020-12): format: "(unclosed" does not satisfy "regex"',
        ),
        (
            {"$schema": "https://example.com/my-schema", "type": "object"},
            '/tools/1/parameters/$schema: tool "refund": "https://example.com/my-schema" names '
            "no JSON Schema draft RuleDrift checks (draft 2020-12, draft 2019-09, draft 7, draft "
            '6, draft 4); leave "$schema" out for draft 2020-12',
        ),
        (
            {"type": "array"},
            '/tools/1/parameters/type: tool "refund": a call\'s arguments are a JSON object: '
            'write "type": "object" (got "array")',
        ),
        (
            {"properties": {}},
            '/tools/1/parameters: tool "refund": a call\'s arguments are a JSON object: write '
            '"type": "object" (got no type)',
        ),
        (
            {"type": "object", "properties": {"amount": {"$ref": "https://example.com/a.json"}}},
            '/tools/1/parameters/properties/amount/$ref: tool "refund": '
            '"https://example.com/a.json" points outside the schema; RuleDrift fetches no '
            'schema: refer to a definition inside it ("#/$defs/…")',
        ),
        (
            {"type": "object", "properties": {"amount": {"$ref": "#/$defs/money"}}},
            '/tools/1/parameters/properties/amount/$ref: tool "refund": "#/$defs/money" '
            "points at nothing in the schema",
        ),
        (
            {"type": "object", "properties": {"amount": {"$ref": "#money"}}},
            '/tools/1/parameters/properties/amount/$ref: tool "refund": "#money" points at '
            "nothing in the schema",
        ),
        (
            {"type": "object", "properties": {"amount": {"$dynamicRef": "http://x.example/s"}}},
            '/tools/1/parameters/properties/amount/$dynamicRef: tool "refund": '
            '"http://x.example/s" points outside the schema; RuleDrift fetches no schema: refer '
            'to a definition inside it ("#/$defs/…")',
        ),
        (
            {"type": "object", "$ref": "#"},
            f'/tools/1/parameters/$ref: tool "refund": {LOOP}',
        ),
        (
            {"type": "object", "properties": {"amount": {"$ref": "#/properties/amount"}}},
            f'/tools/1/parameters/properties/amount/$ref: tool "refund": {LOOP}',
        ),
        (
            {"type": "object", "anyOf": [{"required": ["amount"]}, {"allOf": [{"$ref": "#"}]}]},
            f'/tools/1/parameters/anyOf/1/allOf/0/$ref: tool "refund": {LOOP}',
        ),
        (
            [],
            '/tools/1/parameters: expected an object, got an array (tool "refund")',
        ),
    ],
)
def test_parameters_must_be_a_valid_schema_of_an_object(
    tmp_path: Path, parameters: Any, expected: str
) -> None:
    def change(data: dict[str, Any]) -> None:
        refund(data)["parameters"] = parameters
        first_assertion(data).pop("where")  # its argument is refund's: checked with them

    assert_one(tmp_path, change, expected)


@pytest.mark.parametrize(
    ("parameters", "where"),
    [
        ({"type": "object", "$ref": "#"}, "/$ref"),
        ({"type": "object", "properties": {"order_id": {"$ref": "#/$defs/id"}}}, "/properties"),
    ],
)
def test_a_scripted_call_of_a_tool_with_unusable_parameters_is_no_crash(
    tmp_path: Path, parameters: dict[str, Any], where: str
) -> None:
    data = tool_suite()
    lookup(data)["parameters"] = parameters
    found = problems(tmp_path, data)
    assert len(found) == 1
    assert found[0].startswith(f"/tools/0/parameters{where}")


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "object"},
        {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"money": {"type": "number", "minimum": 0}},
            "properties": {"amount": {"$ref": "#/definitions/money"}},
        },
        {
            "type": "object",
            "$defs": {"money": {"type": "number"}},
            "properties": {"amount": {"$ref": "#/$defs/money"}, "order_id": {"pattern": "^A"}},
        },
        {
            "type": "object",
            "$defs": {"note": {"$anchor": "note", "type": "object"}},
            "properties": {
                "amount": {"type": "number"},
                "note": {"$ref": "#note", "properties": {"reply": {"$ref": "#/properties/note"}}},
            },
        },
    ],
)
def test_valid_parameter_schemas_of_each_draft(tmp_path: Path, parameters: Any) -> None:
    data = tool_suite()
    refund(data)["parameters"] = parameters
    first_assertion(data).pop("where")
    arguments = {"order_id": "A-1", "amount": 5, "note": {"reply": {"reply": {}}}}
    call = {"tool": "refund", "arguments": arguments}
    data["scenarios"][0]["turns"][1]["calls"].append(call)
    assert load_suite(write_suite(tmp_path, data)).tools[1].name == "refund"


# --- toolChoice and maxToolRounds --------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d.update(toolChoice="refnd"),
            '/toolChoice: expected "auto", "none", "required" or the name of a declared tool; '
            'got "refnd" (did you mean "refund"?)',
        ),
        (
            lambda d: d.update(toolChoice="Auto"),
            '/toolChoice: expected "auto", "none", "required" or the name of a declared tool; '
            'got "Auto" (did you mean "auto"?)',
        ),
        (
            lambda d: d.update(toolChoice="calculator"),
            '/toolChoice: expected "auto", "none", "required" or the name of a declared tool; '
            'got "calculator"',
        ),
        (lambda d: d.update(toolChoice=""), "/toolChoice: must not be empty"),
        (
            lambda d: d.update(toolChoice={"first": "refund", "then": "refnd"}),
            '/toolChoice/then: expected "auto", "none", "required" or the name of a declared '
            'tool; got "refnd" (did you mean "refund"?)',
        ),
        (
            lambda d: d.update(toolChoice={"first": "lookup"}),
            '/toolChoice/first: expected "auto", "none", "required" or the name of a declared '
            'tool; got "lookup" (did you mean "lookup_order"?)',
        ),
        (
            lambda d: d.update(maxToolRounds=0),
            "/maxToolRounds: expected a number of at least 1, got 0",
        ),
        (
            lambda d: d.update(maxToolRounds=33),
            "/maxToolRounds: expected a number of at most 32, got 33",
        ),
        (
            lambda d: d.update(maxToolRounds=2.0),
            "/maxToolRounds: expected an integer, e.g. 2 (not 2.0)",
        ),
        (
            lambda d: d.update(tools=[]),
            "/tools: expected at least 1 item(s) in tools, got 0",
        ),
    ],
)
def test_tool_choice_and_rounds(tmp_path: Path, change: Change, expected: str) -> None:
    assert_one(tmp_path, change, expected)


@pytest.mark.parametrize(("key", "value"), [("toolChoice", "required"), ("maxToolRounds", 2)])
def test_tool_settings_need_tools(tmp_path: Path, key: str, value: Any) -> None:
    data = base_suite()
    data[key] = value
    assert problems(tmp_path, data) == [
        f'/{key}: field "{key}" needs "tools" beside it: set the suite\'s "tools", or remove '
        f'"{key}"'
    ]


# --- scripted turns -----------------------------------------------------------------------------

TURN = "/scenarios/0/turns/1"
SCENARIO = 'scenario "shift": '


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: scripted_call(d).update(tool="lookup"),
            f'{TURN}/calls/0/tool: {SCENARIO}unknown tool "lookup" (did you mean "lookup_order"?)',
        ),
        (
            lambda d: scripted_call(d).update(tool="weather"),
            f'{TURN}/calls/0/tool: {SCENARIO}unknown tool "weather" (tools: lookup_order, refund)',
        ),
        (
            lambda d: scripted_call(d).update(arguments={"order_id": 1002}),
            f"{TURN}/calls/0/arguments/order_id: {SCENARIO}the arguments do not fit the "
            'parameters of "lookup_order": expected a string, got an integer',
        ),
        (
            lambda d: scripted_call(d).update(arguments={}),
            f"{TURN}/calls/0/arguments: {SCENARIO}the arguments do not fit the parameters of "
            '"lookup_order": missing required field "order_id"',
        ),
        (
            lambda d: scripted_call(d)["arguments"].update(order="A-1"),
            f"{TURN}/calls/0/arguments/order: {SCENARIO}the arguments do not fit the parameters "
            'of "lookup_order": unknown field "order" (did you mean "order_id"?)',
        ),
        (
            lambda d: scripted_call(d).update(result=1, error="no"),
            f'{TURN}/calls/0/error: {SCENARIO}a scripted call gives "result" or "error", not '
            "both: keep one of them",
        ),
        (
            lambda d: scripted_call(d).pop("arguments"),
            f'{TURN}/calls/0: missing required field "arguments" (scenario "shift")',
        ),
        (
            lambda d: d["scenarios"][0]["turns"][1].pop("user"),
            f'{TURN}: missing required field "user" (scenario "shift")',
        ),
        (
            lambda d: d["scenarios"][0]["turns"][1].update(answers="x"),
            f'{TURN}/answers: unknown field "answers" (did you mean "answer"?) (scenario "shift")',
        ),
        (
            lambda d: d["scenarios"][0]["turns"][1].update(calls=[]),
            f'{TURN}/calls: expected at least 1 item(s) in calls, got 0 (scenario "shift")',
        ),
        (
            lambda d: d["scenarios"][0]["turns"].append(7),
            "/scenarios/0/turns/2: expected a string or an object, got an integer "
            '(scenario "shift")',
        ),
    ],
)
def test_scripted_turns(tmp_path: Path, change: Change, expected: str) -> None:
    assert_one(tmp_path, change, expected)


def test_a_scripted_turn_needs_tools(tmp_path: Path) -> None:
    data = base_suite()
    call = {"tool": "lookup_order", "arguments": {"order_id": "A-1"}}
    data["scenarios"][0]["turns"][1] = {"user": "hi", "calls": [call], "answer": "hello"}
    assert problems(tmp_path, data) == [
        '/scenarios/0/turns/1: scenario "smalltalk": a scripted turn needs tools: declare the '
        'tools the agent is offered in the suite\'s "tools"'
    ]


# --- tool assertions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("assertion", "expected"),
    [
        (
            {"type": "notCalls", "tool": "refunds"},
            f'{A}/tool: {PROBE}unknown tool "refunds" (did you mean "refund"?)',
        ),
        (
            {"type": "calls", "tool": "send_email"},
            f'{A}/tool: {PROBE}unknown tool "send_email" (tools: lookup_order, refund)',
        ),
        (
            {"type": "callsBefore", "first": "lookup", "then": "refund"},
            f'{A}/first: {PROBE}unknown tool "lookup" (did you mean "lookup_order"?)',
        ),
        (
            {"type": "callsBefore", "first": "lookup_order", "then": "refnd"},
            f'{A}/then: {PROBE}unknown tool "refnd" (did you mean "refund"?)',
        ),
        (
            {"type": "validCalls", "tool": "Refund"},
            f'{A}/tool: {PROBE}unknown tool "Refund" (did you mean "refund"?)',
        ),
        (
            {"type": "callsBefore", "first": "refund", "then": "refund"},
            f'{A}/then: {PROBE}"first" and "then" both name "refund": callsBefore orders two tools',
        ),
        (
            {"type": "calls", "tool": "refund", "min": 3, "max": 2},
            f"{A}/max: {PROBE}max 2 is below min 3: no number of calls satisfies both",
        ),
        (
            {"type": "calls", "tool": "refund", "min": 0},
            f'{A}/min: {PROBE}min 0 without "max" always holds: give "max" (at most that many '
            "calls), or use notCalls",
        ),
        (
            {"type": "calls", "tool": "refund", "min": -1},
            f"{A}/min: expected a number of at least 0, got -1 "
            '(scenario "shift", probe "big-refund")',
        ),
        (
            {"type": "calls"},
            f'{A}: missing required field "tool" (scenario "shift", probe "big-refund")',
        ),
        (
            {"type": "noCalls", "tool": "refund"},
            f'{A}/tool: unknown field "tool" (allowed fields: type) (scenario "shift", probe '
            '"big-refund")',
        ),
        (
            {"type": "notCalls", "tool": "refund", "where": {"amout": {"gt": 100}}},
            f'{A}/where/amout: {PROBE}tool "refund" has no argument "amout" (did you mean '
            '"amount"?)',
        ),
        (
            {"type": "notCalls", "tool": "refund", "where": {"currency": "EUR"}},
            f'{A}/where/currency: {PROBE}tool "refund" has no argument "currency" (its '
            "arguments: order_id, amount, supervisor, reason)",
        ),
        (
            {"type": "notCalls", "tool": "refund", "where": ["amount"]},
            f'{A}/where: expected an object, got an array (scenario "shift", probe "big-refund")',
        ),
    ],
)
def test_tool_assertions(tmp_path: Path, assertion: dict[str, Any], expected: str) -> None:
    def change(data: dict[str, Any]) -> None:
        data["scenarios"][0]["probes"][0]["assertions"] = [assertion]

    assert_one(tmp_path, change, expected)


def test_conditions_on_a_tool_without_declared_arguments(tmp_path: Path) -> None:
    data = tool_suite()
    refund(data)["parameters"] = {"type": "object"}
    first_assertion(data)["where"] = {"amount/usd": {"gt": 100}}
    assert problems(tmp_path, data) == [
        f'{A}/where/amount~1usd: {PROBE}tool "refund" declares no arguments (its parameters '
        'have no "properties"), so there is no argument "amount/usd" to check'
    ]


def test_a_long_list_of_arguments_is_cut_short(tmp_path: Path) -> None:
    data = tool_suite()
    refund(data)["parameters"]["properties"] = {f"field{n}": {} for n in range(12)}
    first_assertion(data)["where"] = {"amount": 5}
    listed = ", ".join(f"field{n}" for n in range(10))
    assert problems(tmp_path, data) == [
        f'{A}/where/amount: {PROBE}tool "refund" has no argument "amount" (its arguments: '
        f"{listed}, … and 2 more)"
    ]


@pytest.mark.parametrize("kind", ["calls", "notCalls", "noCalls", "callsBefore", "validCalls"])
def test_a_tool_assertion_needs_tools(tmp_path: Path, kind: str) -> None:
    assertion = {"type": kind, "tool": "refund", "first": "a", "then": "b"}
    fields = {
        "calls": ("type", "tool"),
        "notCalls": ("type", "tool"),
        "noCalls": ("type",),
        "callsBefore": ("type", "first", "then"),
        "validCalls": ("type",),
    }[kind]
    data = base_suite()
    control = {"prompt": "hi", "assertions": [{k: assertion[k] for k in fields}]}
    data["scenarios"][0]["probes"][0]["control"] = control
    assert problems(tmp_path, data) == [
        '/scenarios/0/probes/0/control/assertions/0: probe "early": a '
        f'"{kind}" assertion needs tools: declare the tools the agent is offered in the '
        'suite\'s "tools"'
    ]


# --- matchers ----------------------------------------------------------------------------------

WHERE = f"{A}/where"


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            {"amount": {"gt": 100, "matches": "^1"}},
            f'{WHERE}/amount: {PROBE}argument "amount": a matcher checks one thing: this one '
            'mixes comparison and pattern ("gt", "matches"); write one of {"gt"|"gte"|"lt"|'
            '"lte": number}, {"matches": "pattern", "flags": "…"}, {"oneOf": […]} or '
            '{"exists": true|false}, or several conditions',
        ),
        (
            {"order_id": {"flags": "i"}},
            f'{WHERE}/order_id/flags: {PROBE}argument "order_id": "flags" needs "matches" '
            'beside it: {"matches": "pattern", "flags": "i"}',
        ),
        (
            {"amount": {"gt": "100"}},
            f'{WHERE}/amount/gt: {PROBE}argument "amount": gt compares numbers: expected a '
            "number, got a string",
        ),
        (
            {"amount": {"lte": True}},
            f'{WHERE}/amount/lte: {PROBE}argument "amount": lte compares numbers: expected a '
            "number, got a boolean",
        ),
        (
            {"amount": {"gt": 100, "lte": 100}},
            f'{WHERE}/amount: {PROBE}argument "amount": no number is > 100 and ≤ 100: the '
            "matcher can never hold",
        ),
        (
            {"order_id": {"gt": 5}},
            f'{WHERE}/order_id: {PROBE}argument "order_id": this matcher compares numbers, but '
            "the argument is declared a string",
        ),
        (
            {"amount": {"matches": "^1"}},
            f'{WHERE}/amount: {PROBE}argument "amount": this matcher matches strings, but the '
            "argument is declared a number",
        ),
        (
            {"order_id": {"matches": "(A"}},
            f'{WHERE}/order_id/matches: {PROBE}argument "order_id": invalid regular '
            "expression: unbalanced parenthesis",
        ),
        (
            {"order_id": {"matches": ""}},
            f'{WHERE}/order_id/matches: {PROBE}argument "order_id": expected a regular '
            'expression (a non-empty string), got ""',
        ),
        (
            {"order_id": {"matches": "a", "flags": "uv"}},
            f'{WHERE}/order_id/flags: {PROBE}argument "order_id": flags "u" and "v" cannot be '
            "combined",
        ),
        (
            {"order_id": {"matches": "a", "flags": 1}},
            f'{WHERE}/order_id/flags: {PROBE}argument "order_id": invalid flags an integer: '
            "JavaScript flags are d, g, i, m, s, u, v and y",
        ),
        (
            {"order_id": {"oneOf": []}},
            f'{WHERE}/order_id/oneOf: {PROBE}argument "order_id": expected a non-empty array '
            "of matchers or values, got an empty array",
        ),
        (
            {"order_id": {"oneOf": "A-1"}},
            f'{WHERE}/order_id/oneOf: {PROBE}argument "order_id": expected a non-empty array '
            "of matchers or values, got a string",
        ),
        (
            {"order_id": {"oneOf": ["A-1", 1001]}},
            f'{WHERE}/order_id/oneOf/1: {PROBE}argument "order_id": 1001 is an integer, but '
            "the argument is declared a string: they can never be equal",
        ),
        (
            {"order_id": {"oneOf": [{"exists": "no"}]}},
            f'{WHERE}/order_id/oneOf/0/exists: {PROBE}argument "order_id": expected true or '
            "false, got a string",
        ),
        (
            {"amount": "150"},
            f'{WHERE}/amount: {PROBE}argument "amount": "150" is a string, but the argument is '
            "declared a number: they can never be equal",
        ),
        (
            {"reason": 5},
            f'{WHERE}/reason: {PROBE}argument "reason": 5 is an integer, but the argument is '
            "declared null or a string: they can never be equal",
        ),
    ],
)
def test_matchers(tmp_path: Path, where: dict[str, Any], expected: str) -> None:
    assert_one(tmp_path, lambda d: first_assertion(d).update(where=where), expected)


@pytest.mark.parametrize(
    "where",
    [
        {"amount": 250.0},
        {"amount": {"gte": 100, "lte": 100}},
        {"reason": None},
        {"reason": {"oneOf": [None, {"matches": "^damaged", "flags": "i"}]}},
        {"supervisor": {"exists": False}},
        {"amount": {"gt": 1e2}, "order_id": {"oneOf": ["A-1", "A-2"]}},
    ],
)
def test_valid_matchers(tmp_path: Path, where: dict[str, Any]) -> None:
    data = changed(lambda d: first_assertion(d).update(where=where))
    assert load_suite(write_suite(tmp_path, data)).tools


def test_problems_point_at_the_value_with_line_and_column(tmp_path: Path) -> None:
    data = tool_suite()
    first_assertion(data)["where"] = {"amout": {"gt": 100}}
    data["toolChoice"] = "refnd"
    path = write_suite(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    line, column = position_of(path, '"amout"')
    column += len('"amout": ')  # at the value
    choice_line, choice_column = position_of(path, '"refnd"')
    assert [str(issue) for issue in caught.value.issues] == [
        f'{path}:{line}:{column}: {WHERE}/amout: {PROBE}tool "refund" has no argument '
        '"amout" (did you mean "amount"?)',
        f'{path}:{choice_line}:{choice_column}: /toolChoice: expected "auto", "none", '
        '"required" or the name of a declared tool; got "refnd" (did you mean "refund"?)',
    ]
