"""Tool calls: how a call's arguments are read (`read_arguments`), how a mock answers a call
(`answer_call`), and the five tool assertions (`check_tool_assertion`), as pure functions but for
the JavaScript regular expressions of `matches` matchers, which run in the regex workers (a
`RegexTest`).

A call's arguments come from the model: hostile. No message here quotes them; failed assertions
name the tool (a declared one) and quote the suite's matcher.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.validators import validator_for
from referencing.exceptions import Unresolvable

from ruledrift.data import (
    ArgumentCondition,
    AssertionResult,
    CallsAssertion,
    CallsBeforeAssertion,
    Compare,
    Equal,
    Exists,
    Matcher,
    MockResult,
    NoCallsAssertion,
    NotCallsAssertion,
    OneOf,
    Pattern,
    Tool,
    ToolAssertion,
    ToolCall,
    ToolCallOutcome,
    ToolCallRecord,
    ToolUse,
    ValidCallsAssertion,
    arguments_digest,
    canonical_json,
    json_value,
)

__all__ = [
    "ProblemCheck",
    "RegexTest",
    "answer_call",
    "arguments_problem",
    "check_tool_assertion",
    "conditions_hold",
    "deep_partial_equal",
    "in_process",
    "ran_out_result",
    "read_arguments",
    "record_call",
    "result_text",
]

# Whether a JavaScript regular expression (pattern, flags) matches a text.
RegexTest = Callable[[str, str, str], Awaitable[bool]]
# Why a call's arguments (text) are not valid for a tool (None: they are): `arguments_problem`,
# in the regex workers during a run (a suite's `pattern` could backtrack for ever on Python's re).
ProblemCheck = Callable[[Tool, str], Awaitable[str | None]]

NOT_JSON = "the arguments are not JSON"
NOT_OBJECT = "the arguments are not a JSON object"
UNKNOWN_TOOL = "the call names a tool the suite does not declare"


# --- Arguments -----------------------------------------------------------------------------


def read_arguments(text: str) -> tuple[dict[str, Any] | None, str | None]:
    """A call's arguments as a JSON object, or None and why not (NOT_JSON, NOT_OBJECT)."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None, NOT_JSON
    if not isinstance(value, dict):
        return None, NOT_OBJECT
    return value, None


def arguments_problem(parameters_json: str, arguments: str) -> str | None:
    """Why a call's `arguments` (text) are not valid for a tool with these parameters: not JSON,
    not an object, or where they break the schema; None when they are valid."""
    parsed, problem = read_arguments(arguments)
    if parsed is None:
        return problem
    return schema_problem(parameters_json, parsed)


async def in_process(tool: Tool, arguments: str) -> str | None:
    """`arguments_problem` where the caller runs (a ProblemCheck, for tests and tools)."""
    return arguments_problem(tool.parameters_json, arguments)


def schema_problem(parameters_json: str, arguments: Mapping[str, Any]) -> str | None:
    """Where `arguments` break the tool's parameters (None: they are valid). Worded from the
    schema alone (the path into the schema, the keyword and its value), never from the
    arguments."""
    schema = json_value(parameters_json)
    if not isinstance(schema, dict | bool):
        return None
    cls = validator_for(schema, default=Draft202012Validator)
    try:
        error = next(iter(cls(schema).iter_errors(arguments)), None)
    except (RecursionError, ValueError, TypeError, Unresolvable):
        return "the arguments could not be checked against the tool's parameters"
    return None if error is None else _schema_message(error)


def _schema_message(error: ValidationError) -> str:
    where = "/".join(str(part) for part in error.absolute_schema_path)
    value = canonical_json(error.validator_value)
    if len(value) > 80:
        value = value[:77] + "..."
    return f"the arguments break the tool's parameters: {error.validator} {value} (at #/{where})"


_COMPUTE = "\0compute"  # record_call's `problem` when the caller did not check the arguments


def record_call(
    call: ToolCall,
    round_: int,
    tool: Tool | None,
    outcome: ToolCallOutcome,
    problem: str | None = _COMPUTE,
) -> ToolCallRecord:
    """The record a report keeps of `call`, asked for in round `round_`. `problem`: what a
    ProblemCheck found (by default `arguments_problem`, here); a call of an undeclared tool has
    UNKNOWN_TOOL whatever its arguments."""
    sha256, length = arguments_digest(call.arguments)
    arguments, _ = read_arguments(call.arguments)
    if tool is None:
        problem = UNKNOWN_TOOL
    elif problem == _COMPUTE:
        problem = arguments_problem(tool.parameters_json, call.arguments)
    parsed = None if arguments is None else canonical_json(arguments)
    return ToolCallRecord(
        round_, call.name, call.arguments, sha256, length, outcome, problem, parsed
    )


# --- Matchers ------------------------------------------------------------------------------


def deep_partial_equal(expected: object, actual: object) -> bool:
    """A literal matcher: an object matches an object holding at least its keys (each matching
    in turn), an array one of the same length (item by item), a number an equal number (never a
    boolean), anything else an equal value."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and deep_partial_equal(value, actual[key])
            for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(deep_partial_equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if _is_number(expected) or _is_number(actual):
        return _is_number(expected) and _is_number(actual) and expected == actual
    return type(expected) is type(actual) and expected == actual


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_COMPARE = {
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
}


async def matches(matcher: Matcher, present: bool, value: object, regex: RegexTest) -> bool:
    """Whether an argument (`present`, with `value`) satisfies `matcher`."""
    if isinstance(matcher, Exists):
        return present == matcher.present
    if isinstance(matcher, OneOf):
        for option in matcher.options:
            if await matches(option, present, value, regex):
                return True
        return False
    if not present:
        return False
    if isinstance(matcher, Equal):
        return deep_partial_equal(json_value(matcher.value_json), value)
    if isinstance(matcher, Compare):
        if not _is_number(value) or not math.isfinite(float(value)):  # type: ignore[arg-type]
            return False
        return all(_COMPARE[op](value, bound) for op, bound in matcher.bounds)
    if isinstance(matcher, Pattern):
        return isinstance(value, str) and await regex(matcher.pattern, matcher.flags, value)
    raise AssertionError(f"unknown matcher {matcher!r}")


async def conditions_hold(
    conditions: Sequence[ArgumentCondition], arguments: Mapping[str, Any], regex: RegexTest
) -> bool:
    """Whether every condition of a `where` or `when` holds for `arguments`."""
    for condition in conditions:
        present = condition.name in arguments
        if not await matches(condition.matcher, present, arguments.get(condition.name), regex):
            return False
    return True


# --- Mocks ---------------------------------------------------------------------------------


def result_text(result: MockResult) -> str:
    """A mock's result as the tool message's content: a JSON string as the string itself, any
    other value as compact JSON, an error as `{"error": message}`."""
    if result.error is not None:
        return canonical_json({"error": result.error})
    value = json_value(result.value_json or "null")
    return value if isinstance(value, str) else canonical_json(value)


UNMATCHED = MockResult(error="no mocked result matches these arguments")


async def answer_call(
    call: ToolCall,
    round_: int,
    tools: Sequence[Tool],
    regex: RegexTest,
    check: ProblemCheck = in_process,
) -> tuple[ToolCallRecord, MockResult]:
    """How the mocks answer `call` (asked in round `round_`): the record a report keeps (its
    arguments checked by `check`), and the result sent back to the agent. An undeclared tool,
    arguments that are not a JSON object, or arguments no mock case matches get an error result
    (the agent sees a failing tool)."""
    tool = next((t for t in tools if t.name == call.name), None)
    result, outcome = await _mocked(call, tool, regex)
    problem = None if tool is None else await check(tool, call.arguments)
    return record_call(call, round_, tool, outcome, problem), result


async def _mocked(
    call: ToolCall, tool: Tool | None, regex: RegexTest
) -> tuple[MockResult, ToolCallOutcome]:
    if tool is None:
        return MockResult(error=f"there is no tool called {call.name!r}"[:300]), "unknown-tool"
    arguments, problem = read_arguments(call.arguments)
    for case in tool.cases:
        if not case.when or (
            arguments is not None and await conditions_hold(case.when, arguments, regex)
        ):
            return case.result, "error" if case.result.error is not None else "result"
    if tool.result is not None:
        return tool.result, "error" if tool.result.error is not None else "result"
    if problem is not None:
        return MockResult(error=problem), "unmatched"
    return UNMATCHED, "unmatched"


# --- Assertions ----------------------------------------------------------------------------


def _where_text(where: Sequence[ArgumentCondition]) -> str:
    return "" if not where else " where " + ", ".join(f"{c.name} {c.text}" for c in where)


async def _calls_matching(
    use: ToolUse, tool: str, where: Sequence[ArgumentCondition], regex: RegexTest
) -> tuple[list[ToolCallRecord], int]:
    """The calls of `tool` whose arguments satisfy `where`, and how many calls of `tool` had
    arguments `where` cannot read (not a JSON object; only counted when `where` is given)."""
    found, unreadable = [], 0
    for call in use.calls:
        if call.name != tool:
            continue
        if not where:
            found.append(call)
            continue
        arguments, _ = read_arguments(call.arguments)
        if arguments is None:
            unreadable += 1
        elif await conditions_hold(where, arguments, regex):
            found.append(call)
    return found, unreadable


def _unreadable_note(unreadable: int, tool: str) -> str:
    if not unreadable:
        return ""
    return (
        f"; {unreadable} call(s) of {tool} had arguments that are not a JSON object,"
        " so `where` could not be read"
    )


async def _check_calls(
    assertion: CallsAssertion, use: ToolUse, regex: RegexTest
) -> AssertionResult:
    found, unreadable = await _calls_matching(use, assertion.tool, assertion.where, regex)
    where = _where_text(assertion.where)
    bounds = f"at least {assertion.min}"
    if assertion.max is not None:
        bounds += f" and at most {assertion.max}"
    count = len(found)
    passed = count >= assertion.min and (assertion.max is None or count <= assertion.max)
    passed = passed and not (unreadable and count < assertion.min)
    if passed:
        message = f"{assertion.tool} was called {count} time(s){where}"
    else:
        message = (
            f"expected {assertion.tool} to be called {bounds} time(s){where};"
            f" it was called {count} time(s) so{_unreadable_note(unreadable, assertion.tool)}"
        )
    return AssertionResult("calls", passed, message, location=assertion.location)


async def _check_not_calls(
    assertion: NotCallsAssertion, use: ToolUse, regex: RegexTest
) -> AssertionResult:
    found, unreadable = await _calls_matching(use, assertion.tool, assertion.where, regex)
    where = _where_text(assertion.where)
    if found:
        rounds = ", ".join(str(call.round) for call in found)
        message = (
            f"expected {assertion.tool} not to be called{where};"
            f" it was {len(found)} time(s), in round(s) {rounds}"
        )
        return AssertionResult("notCalls", False, message, location=assertion.location)
    if unreadable:
        message = f"expected {assertion.tool} not to be called{where}" + _unreadable_note(
            unreadable, assertion.tool
        )
        return AssertionResult("notCalls", False, message, location=assertion.location)
    message = f"{assertion.tool} was not called{where}"
    return AssertionResult("notCalls", True, message, location=assertion.location)


def _check_no_calls(assertion: NoCallsAssertion, use: ToolUse) -> AssertionResult:
    if not use.calls:
        return AssertionResult("noCalls", True, "no tool was called", location=assertion.location)
    named = [call for call in use.calls if call.problem != UNKNOWN_TOOL]
    names = ", ".join(sorted({call.name for call in named}))
    undeclared = len(use.calls) - len(named)
    parts = [names] if names else []
    if undeclared:
        parts.append(f"{undeclared} call(s) of an undeclared tool")
    message = f"expected no tool call; it made {len(use.calls)}: " + "; ".join(parts)
    return AssertionResult("noCalls", False, message, location=assertion.location)


def _check_calls_before(assertion: CallsBeforeAssertion, use: ToolUse) -> AssertionResult:
    first, then = assertion.first, assertion.then
    then_rounds = [call.round for call in use.calls if call.name == then]
    first_rounds = [call.round for call in use.calls if call.name == first]
    if not then_rounds:
        message = f"{then} was not called, so nothing had to come before it"
        return AssertionResult("callsBefore", True, message, location=assertion.location)
    earliest_then = min(then_rounds)
    if first_rounds and min(first_rounds) < earliest_then:
        message = (
            f"{first} was called (round {min(first_rounds)}) before {then} (round {earliest_then})"
        )
        return AssertionResult("callsBefore", True, message, location=assertion.location)
    seen = f"first in round {min(first_rounds)}" if first_rounds else "not at all"
    message = (
        f"expected {first} to be called in an earlier answer than {then};"
        f" {then} was called in round {earliest_then}, {first} {seen}"
    )
    return AssertionResult("callsBefore", False, message, location=assertion.location)


def _check_valid_calls(assertion: ValidCallsAssertion, use: ToolUse) -> AssertionResult:
    calls = [c for c in use.calls if assertion.tool is None or c.name == assertion.tool]
    which = f"call of {assertion.tool}" if assertion.tool else "tool call"
    for index, call in enumerate(calls, start=1):
        if call.problem is not None:
            message = (
                f"expected every {which} to be valid; call {index} (round {call.round}):"
                f" {call.problem}"
            )
            return AssertionResult("validCalls", False, message, location=assertion.location)
    message = f"every {which} was valid ({len(calls)} call(s))"
    return AssertionResult("validCalls", True, message, location=assertion.location)


async def check_tool_assertion(
    assertion: ToolAssertion, use: ToolUse | None, regex: RegexTest
) -> AssertionResult:
    """A tool assertion's result over every round of the turn's calls (`use`; None: the turn
    made no call and was offered no tools)."""
    use = use or ToolUse((), 0)
    if isinstance(assertion, CallsAssertion):
        return await _check_calls(assertion, use, regex)
    if isinstance(assertion, NotCallsAssertion):
        return await _check_not_calls(assertion, use, regex)
    if isinstance(assertion, NoCallsAssertion):
        return _check_no_calls(assertion, use)
    if isinstance(assertion, CallsBeforeAssertion):
        return _check_calls_before(assertion, use)
    return _check_valid_calls(assertion, use)


def ran_out_result(max_rounds: int) -> AssertionResult:
    """The check a turn that ran out of tool rounds fails: no final answer came."""
    return AssertionResult(
        "maxToolRounds",
        False,
        f"expected a final answer within {max_rounds} model call(s) (maxToolRounds);"
        " the agent was still calling tools",
    )
