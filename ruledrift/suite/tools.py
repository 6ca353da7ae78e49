"""Tools in a suite: the `tools` block (each tool's parameters and mock), `toolChoice`, scripted
turns and the tool assertions, checked where the schema cannot (names declared and unique,
parameter schemas valid, conditions naming real arguments with matchers of the right type) and
built into the frozen types of `ruledrift.data.tools`.

The checks read a document that may still have schema errors: whatever the schema reports
(a value of the wrong type, a missing field) is skipped here, so each mistake is said once.
Problems are (pointer, message), as `load._cross_field_problems` yields them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, TypeGuard

from ruledrift.data.location import Location
from ruledrift.data.suite import Suite
from ruledrift.data.tools import (
    CallsAssertion,
    CallsBeforeAssertion,
    MockCase,
    MockResult,
    NoCallsAssertion,
    NotCallsAssertion,
    ScriptedCall,
    ScriptedTurn,
    Tool,
    ToolAssertion,
    ValidCallsAssertion,
    canonical_json,
)
from ruledrift.jsondoc.schema_messages import show
from ruledrift.suite.matchers import conditions, conditions_problems
from ruledrift.suite.parameters import arguments_problems, parameters_problems
from ruledrift.suite.walk import objects, probe_assertions

Problem = tuple[str, str]
Locate = Callable[[str], Location]  # a pointer's place in the file

TOOL_ASSERTIONS = ("calls", "notCalls", "noCalls", "callsBefore", "validCalls")
CHOICES = ("auto", "none", "required")  # toolChoice's words; no tool may be named so
TOOL_NAME_PATTERN = "^[A-Za-z0-9_-]{1,64}$"  # as the schema's toolName
_LISTED = 10  # tool names a message lists


class Declared:
    """The suite's `tools` as written: their names, and each valid tool's parameters."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.present = "tools" in data
        value = data.get("tools")
        self.items = objects(value)
        names = [tool.get("name") for _, tool in self.items]
        self.names = list(dict.fromkeys(name for name in names if isinstance(name, str)))
        # references are checked only against a well-formed list (the schema reports the rest)
        self.complete = (
            isinstance(value, list)
            and 0 < len(self.items) == len(value)
            and all(isinstance(name, str) for name in names)
        )
        # each tool's parameters' problems (by index), and its first index (by name)
        self.problems = {i: list(parameters_problems(t.get("parameters"))) for i, t in self.items}
        self._first: dict[str, int] = {}
        for index, name in zip((i for i, _ in self.items), names, strict=True):
            if isinstance(name, str):
                self._first.setdefault(name, index)
        self._tools = dict(self.items)

    def parameters(self, name: object, index: int | None = None) -> dict[str, Any] | None:
        """The parameters of the tool called `name` (or of the tool at `index`), when they are
        a valid schema."""
        index = self._first.get(name) if isinstance(name, str) and index is None else index
        if index is None or self.problems[index]:
            return None
        schema = self._tools[index].get("parameters")
        return schema if isinstance(schema, dict) else None

    def properties(self, name: object, index: int | None = None) -> dict[str, Any] | None:
        """The arguments the tool declares (None: not known, so not checked)."""
        schema = self.parameters(name, index)
        found = schema.get("properties", {}) if schema is not None else None
        return found if isinstance(found, dict) else None

    def unknown(self, name: object) -> str | None:
        """Why `name` is no declared tool (None: it is one, or that cannot be told)."""
        if not self.complete or not isinstance(name, str) or name in self.names:
            return None
        meant = difflib.get_close_matches(name, self.names, n=1, cutoff=0.6)
        return f"unknown tool {show(name)} ({_hint(meant, self.names)})"


def _hint(meant: list[str], names: list[str]) -> str:
    if meant:
        return f"did you mean {show(meant[0])}?"
    more = len(names) - _LISTED
    listed = ", ".join(names[:_LISTED]) + (f", … and {more} more" if more > 0 else "")
    return f"tools: {listed}"


def tool_problems(data: Mapping[str, Any]) -> Iterator[Problem]:
    """Every problem of the suite's tools, toolChoice, scripted turns and tool assertions."""
    declared = Declared(data)
    for index, tool in declared.items:
        for pointer, message in _tool_problems(index, tool, declared):
            yield f"/tools/{index}{pointer}", message
    yield from _duplicate_names(declared)
    yield from _choice_problems(data.get("toolChoice"), declared)
    for s_index, scenario in objects(data.get("scenarios")):
        at = f"/scenarios/{s_index}"
        where = f"scenario {show(scenario.get('id'))}: "
        for pointer, message in _turns_problems(scenario.get("turns"), declared):
            yield f"{at}/turns{pointer}", where + message
        for p_index, probe in objects(scenario.get("probes")):
            probe_id = probe.get("id")
            name = f"probe {show(probe_id)}: " if isinstance(probe_id, str) else ""
            for place, a_index, assertion in probe_assertions(probe):
                base = f"{at}/probes/{p_index}{place}/assertions/{a_index}"
                for pointer, message in assertion_problems(assertion, declared):
                    yield base + pointer, name + message


# --- the tools block ---------------------------------------------------------------------------


def _tool_problems(index: int, tool: dict[str, Any], declared: Declared) -> Iterator[Problem]:
    name = tool.get("name")
    label = f"tool {show(name)}: " if isinstance(name, str) else ""
    if name in CHOICES:
        yield (
            "/name",
            (
                f'a tool cannot be named {show(name)}: toolChoice {show(name)} means "'
                f'{_CHOICE_WORDS[name]}"; rename the tool'
            ),
        )
    for pointer, message in declared.problems[index]:
        yield f"/parameters{pointer}", label + message
    for pointer, message in _mock_problems(tool, declared.properties(name, index), str(name)):
        yield pointer, label + message


_CHOICE_WORDS = {"auto": "answer or call", "none": "call no tool", "required": "call some tool"}


def _mock_problems(
    tool: dict[str, Any], properties: Mapping[str, Any] | None, name: str
) -> Iterator[Problem]:
    if not any(key in tool for key in ("result", "error", "results")):
        yield (
            "",
            (
                'no mock: give "result" (any JSON), "error" (a message) or "results" (answers '
                "chosen by the call's arguments)"
            ),
        )
    if "result" in tool and "error" in tool:
        yield "/error", '"result" and "error" both answer every call: keep one of them'
    cases = objects(tool.get("results"))
    always = next((index for index, case in cases if case.get("when", {}) == {}), None)
    for index, case in cases:
        if always is not None and index > always:
            yield (
                f"/results/{index}",
                (f"never used: results/{always} has no conditions and answers every call"),
            )
        else:
            for pointer, message in _case_problems(case, properties, name):
                yield f"/results/{index}{pointer}", message
    for key in ("result", "error"):
        if always is not None and key in tool:
            yield (
                f"/{key}",
                (f"never used: results/{always} has no conditions and answers every call first"),
            )


def _case_problems(
    case: dict[str, Any], properties: Mapping[str, Any] | None, name: str
) -> Iterator[Problem]:
    """An entry of a tool's `results`: its answer, and its conditions."""
    yield from _both_answers(case, "", "an entry of results")
    if "result" not in case and "error" not in case:
        yield "", 'an entry of results needs its answer: "result" (any JSON) or "error" (a message)'
    for pointer, message in conditions_problems(case.get("when"), properties, name):
        yield f"/when{pointer}", message


def _both_answers(item: dict[str, Any], at: str, what: str) -> Iterator[Problem]:
    if "result" in item and "error" in item:
        yield f"{at}/error", f'{what} gives "result" or "error", not both: keep one of them'


def _duplicate_names(declared: Declared) -> Iterator[Problem]:
    first: dict[str, int] = {}
    for index, tool in declared.items:
        name = tool.get("name")
        if not isinstance(name, str):
            continue
        if name in first:
            message = f"duplicate tool name {show(name)} (first at /tools/{first[name]})"
            yield f"/tools/{index}/name", message
        else:
            first[name] = index


def tool_choice(choice: object, which: Literal["first", "then"]) -> str:
    """The choice of a turn's first call (`which` "first") or of its later ones ("then"), from
    a valid `toolChoice`: a word is the first call's (the later ones are "auto"); an object
    gives either."""
    if isinstance(choice, str):
        return choice if which == "first" else "auto"
    if isinstance(choice, dict):
        return str(choice.get(which, "auto"))
    return "auto"


def _choice_problems(choice: object, declared: Declared) -> Iterator[Problem]:
    if isinstance(choice, dict):
        for which in ("first", "then"):
            yield from _choice_word_problems(choice.get(which), f"/toolChoice/{which}", declared)
    else:
        yield from _choice_word_problems(choice, "/toolChoice", declared)


def _choice_word_problems(choice: object, at: str, declared: Declared) -> Iterator[Problem]:
    if not isinstance(choice, str) or not choice or choice in CHOICES:
        return  # the schema reports a value of another type
    if declared.complete and choice not in declared.names:
        words = [*CHOICES, *declared.names]
        meant = difflib.get_close_matches(choice, words, n=1, cutoff=0.6)
        hint = f" (did you mean {show(meant[0])}?)" if meant else ""
        yield (
            at,
            (
                f'expected "auto", "none", "required" or the name of a declared tool; got '
                f"{show(choice)}{hint}"
            ),
        )


# --- scripted turns ------------------------------------------------------------------------------


def _turns_problems(turns: object, declared: Declared) -> Iterator[Problem]:
    for index, turn in objects(turns):
        at = f"/{index}"
        if not declared.present:
            yield (
                at,
                (
                    "a scripted turn needs tools: declare the tools the agent is offered in the "
                    'suite\'s "tools"'
                ),
            )
            continue
        for c_index, call in objects(turn.get("calls")):
            for pointer, message in _call_problems(call, declared):
                yield f"{at}/calls/{c_index}{pointer}", message


def _call_problems(call: dict[str, Any], declared: Declared) -> Iterator[Problem]:
    tool = call.get("tool")
    unknown = declared.unknown(tool)
    if unknown:
        yield "/tool", unknown
    yield from _both_answers(call, "", "a scripted call")
    schema, arguments = declared.parameters(tool), call.get("arguments")
    if schema is None or not isinstance(arguments, dict):
        return
    for pointer, message in arguments_problems(schema, arguments):
        what = f"the arguments do not fit the parameters of {show(tool)}"
        yield f"/arguments{pointer}", f"{what}: {message}"


# --- tool assertions ------------------------------------------------------------------------------


def assertion_problems(assertion: Mapping[str, Any], declared: Declared) -> Iterator[Problem]:
    """A tool assertion's problems (nothing for an assertion of another type)."""
    kind = assertion.get("type")
    if kind not in TOOL_ASSERTIONS:
        return
    if not declared.present:
        yield (
            "",
            (
                f"a {show(kind)} assertion needs tools: declare the tools the agent is offered "
                'in the suite\'s "tools"'
            ),
        )
        return
    for key in ("tool", "first", "then"):
        unknown = declared.unknown(assertion.get(key))
        if unknown:
            yield f"/{key}", unknown
    tool = assertion.get("tool")
    for pointer, message in conditions_problems(
        assertion.get("where"), declared.properties(tool), str(tool)
    ):
        yield f"/where{pointer}", message
    if kind == "calls":
        yield from _count_problems(assertion.get("min", 1), assertion.get("max"))
    first, then = assertion.get("first"), assertion.get("then")
    if kind == "callsBefore" and isinstance(first, str) and first == then:
        message = f'"first" and "then" both name {show(first)}: callsBefore orders two tools'
        yield "/then", message


def _count_problems(low: object, high: object) -> Iterator[Problem]:
    if not _is_count(low) or not (high is None or _is_count(high)):
        return  # the schema reports a count of another type
    if high is None and low == 0:
        yield (
            "/min",
            (
                'min 0 without "max" always holds: give "max" (at most that many calls), or use '
                "notCalls"
            ),
        )
    elif high is not None and low > high:
        yield "/max", f"max {high} is below min {low}: no number of calls satisfies both"


def _is_count(value: object) -> TypeGuard[int]:
    return type(value) is int


# --- building (only once the document is known to be valid) ---------------------------------


def build_tools(data: Mapping[str, Any], locate: Locate) -> tuple[Tool, ...]:
    """The suite's tools, in config order."""
    return tuple(
        Tool(
            tool["name"],
            tool.get("description", ""),
            canonical_json(tool["parameters"]),
            locate(f"/tools/{index}"),
            result=mock_result(tool),
            cases=tuple(
                MockCase(
                    conditions(case.get("when", {})),
                    _answer(case),
                    locate(f"/tools/{index}/results/{c_index}"),
                )
                for c_index, case in enumerate(tool.get("results", []))
            ),
        )
        for index, tool in enumerate(data.get("tools", []))
    )


def mock_result(item: Mapping[str, Any]) -> MockResult | None:
    """`result` (any JSON) or `error` (a message) of a tool, a mock case or a scripted call
    (None: neither)."""
    if "result" in item:
        return MockResult(value_json=canonical_json(item["result"]))
    if "error" in item:
        return MockResult(error=item["error"])
    return None


def _answer(case: Mapping[str, Any]) -> MockResult:
    found = mock_result(case)
    assert found is not None  # _answer_problems: a case has its answer
    return found


def build_scripts(turns: list[Any], at: str, locate: Locate) -> tuple[ScriptedTurn | None, ...]:
    """Beside a scenario's turns (`at`: their pointer), item for item, the scripted exchange of
    each (None: a plain user message); empty when none is scripted."""
    if all(isinstance(turn, str) for turn in turns):
        return ()
    return tuple(
        None if isinstance(turn, str) else _script(turn, locate(f"{at}/{index}"))
        for index, turn in enumerate(turns)
    )


def _script(turn: Mapping[str, Any], location: Location) -> ScriptedTurn:
    calls = tuple(
        ScriptedCall(call["tool"], canonical_json(call["arguments"]), mock_result(call))
        for call in turn["calls"]
    )
    return ScriptedTurn(turn["user"], calls, turn.get("answer"), location)


def turn_text(turn: str | Mapping[str, Any]) -> str:
    """A turn's user message: the turn itself, or a scripted exchange's `user`."""
    return turn if isinstance(turn, str) else str(turn["user"])


def build_tool_assertion(data: Mapping[str, Any], location: Location) -> ToolAssertion:
    """A valid tool assertion object (its `type` one of TOOL_ASSERTIONS), built."""
    kind = data["type"]
    if kind == "calls":
        where = conditions(data.get("where", {}))
        return CallsAssertion(
            data["tool"], where, data.get("min", 1), data.get("max"), location=location
        )
    if kind == "notCalls":
        where = conditions(data.get("where", {}))
        return NotCallsAssertion(data["tool"], where, location=location)
    if kind == "noCalls":
        return NoCallsAssertion(location=location)
    if kind == "callsBefore":
        return CallsBeforeAssertion(data["first"], data["then"], location=location)
    return ValidCallsAssertion(data.get("tool"), location=location)


# --- warnings --------------------------------------------------------------------------------


def tool_warnings(suite: Suite) -> list[str]:
    """A text assertion on a probe (or control) whose answer can only be tool calls: toolChoice
    forces a call ("required" or a tool's name) on the first round, and maxToolRounds 1 leaves
    no round to answer in, or `then` forces a call on every later round too."""
    forced = ("auto", "none")
    if not suite.tools or suite.tool_choice in forced:
        return []
    if suite.max_tool_rounds != 1 and suite.tool_choice_then in forced:
        return []
    if suite.max_tool_rounds == 1:
        why = f'with toolChoice "{suite.tool_choice}" and maxToolRounds 1'
        fix = 'raise maxToolRounds (the rounds after the first are "auto")'
    else:
        why = f'with toolChoice forcing a call on every round ("then": "{suite.tool_choice_then}")'
        fix = 'let the later rounds answer ("then": "auto" or "none")'
    warnings, seen = [], set()
    for scenario in suite.scenarios:
        probes = [*scenario.probes, *(search.probe for search in scenario.searches)]
        for probe in probes:
            texts = [a.type for a in probe.all_assertions if a.type not in TOOL_ASSERTIONS]
            if not texts or (scenario.id, probe.location) in seen:
                continue  # a list afterTurn's probes share their object: one warning
            seen.add((scenario.id, probe.location))
            where = f"{suite.path}:{probe.location.line}:{probe.location.column}"
            warnings.append(
                f'{where}: probe "{probe.id}" of scenario "{scenario.id}": {why} its answer '
                f'can only be tool calls, so its "{texts[0]}" assertion has no text to check: '
                f"{fix}, or check the calls"
            )
    return warnings
