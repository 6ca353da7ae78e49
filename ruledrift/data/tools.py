"""Tools: what a suite offers its agent (`tools`, each with a deterministic mock), the matchers
its tool assertions and mocks read arguments with, the calls an agent asked for, and the record
a run keeps of each call.

JSON values the suite wrote (a tool's parameter schema, a mock's result, a literal matcher) are
kept as canonical JSON text, so that every dataclass here stays frozen and hashable; read them
back with `json_value`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Literal

from ruledrift.data.location import Location

__all__ = [
    "ArgumentCondition",
    "CallsAssertion",
    "CallsBeforeAssertion",
    "Compare",
    "CompareOp",
    "Equal",
    "Exists",
    "Matcher",
    "MockCase",
    "MockResult",
    "NoCallsAssertion",
    "NotCallsAssertion",
    "OneOf",
    "Pattern",
    "ScriptedCall",
    "ScriptedTurn",
    "Tool",
    "ToolAssertion",
    "ToolCall",
    "ToolCallOutcome",
    "ToolCallRecord",
    "ToolOffer",
    "ToolUse",
    "ValidCallsAssertion",
    "arguments_digest",
    "canonical_json",
    "function_entry",
    "json_value",
]

CompareOp = Literal["gt", "gte", "lt", "lte"]


def canonical_json(value: object) -> str:
    """`value` as compact JSON text with sorted keys (how this module keeps JSON values)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def json_value(text: str) -> object:
    """A JSON value this module keeps as text, read back."""
    return json.loads(text)


# --- Matchers: how `where` (assertions) and `when` (mocks) read one argument ---------------


@dataclass(frozen=True)
class Equal:
    """A literal: deep partial equality. An object matches an object holding at least its keys,
    each matching in turn; an array matches an array of the same length, item by item; a number
    matches an equal number (1 equals 1.0, never `true`); anything else must be equal."""

    value_json: str


@dataclass(frozen=True)
class Compare:
    """`{"gt"|"gte"|"lt"|"lte": n}` (several at once: all must hold): the argument is a number
    (never a boolean) within the bounds."""

    bounds: tuple[tuple[CompareOp, float], ...]


@dataclass(frozen=True)
class Pattern:
    """`{"matches": "…", "flags": "…"}`: the argument is a string the JavaScript regular
    expression matches."""

    pattern: str
    flags: str = ""


@dataclass(frozen=True)
class OneOf:
    """`{"oneOf": [m, …]}`: any of the matchers (literals or matcher objects) matches."""

    options: tuple[Matcher, ...]


@dataclass(frozen=True)
class Exists:
    """`{"exists": false}`: the argument is absent; `{"exists": true}`: it is present."""

    present: bool


Matcher = Equal | Compare | Pattern | OneOf | Exists


@dataclass(frozen=True)
class ArgumentCondition:
    """One key of a `where` or `when` object: the argument `name` (a top-level key of the call's
    arguments) must satisfy `matcher`. `text`: the matcher as the suite wrote it (compact JSON),
    which a failed assertion quotes (never the observed arguments)."""

    name: str
    matcher: Matcher
    text: str


# --- Tools and their mocks -------------------------------------------------------------------


@dataclass(frozen=True)
class MockResult:
    """What a mocked tool returns for a call: `value_json` (any JSON the suite wrote, as
    canonical text), or an error (`error`: its message), so that a suite can test what an agent
    does when a tool fails."""

    value_json: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class MockCase:
    """One entry of a tool's `results`: `result` when every condition of `when` holds (no
    conditions: always). The first case that matches wins."""

    when: tuple[ArgumentCondition, ...]
    result: MockResult
    location: Location


@dataclass(frozen=True)
class Tool:
    """A tool the suite offers its agent (`tools`): its name, description, parameters (a JSON
    Schema for the arguments, as canonical text) and its mock: `cases` (`results`) are tried in
    order, then `result`; a call that none of them matches gets an error result."""

    name: str
    description: str
    parameters_json: str
    location: Location
    result: MockResult | None = None
    cases: tuple[MockCase, ...] = ()


@dataclass(frozen=True)
class ToolOffer:
    """The tools an adapter sends with a call, and the `tool_choice` for that call: "auto",
    "none", "required", or a tool's name. RuleDrift sends the suite's `toolChoice` on a turn's
    first round and "auto" on its later rounds (so the model can answer after its calls)."""

    tools: tuple[Tool, ...]
    choice: str = "auto"


# --- Scripted exchanges ------------------------------------------------------------------------


@dataclass(frozen=True)
class ScriptedCall:
    """A call a scripted turn says the agent made: the tool, its arguments (canonical JSON) and
    the result (None: the tool's mock answers it)."""

    tool: str
    arguments_json: str
    result: MockResult | None = None


@dataclass(frozen=True)
class ScriptedTurn:
    """A background turn authored as an exchange (`{"user": …, "calls": […], "answer"?: …}`): the
    user message, the calls the agent made and their results, then the agent's answer, scripted
    (`answer`) or asked of the target (None). Marked as scripted in the reports."""

    user: str
    calls: tuple[ScriptedCall, ...]
    answer: str | None
    location: Location


# --- What an agent asked for, and what a run keeps ---------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """A call an agent's answer asks for: its id (made up where the server gave none), the tool
    name, and the arguments as JSON text as received (an object a server sent is serialised; the
    text may be anything, including invalid JSON)."""

    id: str
    name: str
    arguments: str


# How a call was answered: the mock's result; the mock's error result; an error because the tool
# is not declared, or no mock case matched; not run, because the rounds ran out; or reported by an
# agent that ran its own tool loop (command protocol 2, report mode: its own tools, or the suite's
# mocks over MCP, whose result the call's tool message holds).
ToolCallOutcome = Literal["result", "error", "unknown-tool", "unmatched", "not-run", "reported"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One call of a probe's (or control's) turn, as every report lists it. `round`: the model
    call (1-based) of the turn whose answer asked for it; calls of one round are simultaneous.
    `arguments` (the text as received) is kept in memory and printed only with
    `--include-responses`; reports otherwise show its SHA-256 and length. `problem`: why the
    arguments are not valid (not JSON, not an object, or where they break the tool's schema,
    never quoting them), None when they are."""

    round: int
    name: str
    arguments: str
    sha256: str
    length: int
    outcome: ToolCallOutcome
    problem: str | None = None
    parsed_json: str | None = None  # the arguments as canonical JSON; None: not JSON

    @property
    def parsed(self) -> object:
        """The arguments as JSON (raises ValueError when they are not JSON)."""
        if self.parsed_json is None:
            raise ValueError("the arguments are not JSON")
        return json_value(self.parsed_json)


def function_entry(tool: Tool) -> dict[str, object]:
    """The tool as OpenAI's `tools` array holds it, which Ollama's takes too:
    `{"type": "function", "function": {"name", "description", "parameters"}}`."""
    function = {
        "name": tool.name,
        "description": tool.description,
        "parameters": json_value(tool.parameters_json),
    }
    return {"type": "function", "function": function}


def arguments_digest(arguments: str) -> tuple[str, int]:
    """The SHA-256 and length a report shows of a call's arguments."""
    data = arguments.encode("utf-8", errors="surrogatepass")
    return hashlib.sha256(data).hexdigest(), len(arguments)


@dataclass(frozen=True)
class ToolUse:
    """The tool calls of one turn (a probe's or a control's): every call of every round, the
    model calls the turn took (`rounds`), and whether the rounds ran out (`maxToolRounds`) while
    the agent was still asking for calls."""

    calls: tuple[ToolCallRecord, ...]
    rounds: int
    ran_out: bool = False


# --- Tool assertions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class CallsAssertion:
    """`calls`: `tool` was called at least `min` and at most `max` times (None: no limit) with
    arguments matching `where` (every condition)."""

    tool: str
    where: tuple[ArgumentCondition, ...] = ()
    min: int = 1
    max: int | None = None
    type: Literal["calls"] = "calls"
    location: Location | None = None  # where the assertion stands in the suite


@dataclass(frozen=True)
class NotCallsAssertion:
    """`notCalls`: `tool` was never called with arguments matching `where` (no `where`: never
    called at all)."""

    tool: str
    where: tuple[ArgumentCondition, ...] = ()
    type: Literal["notCalls"] = "notCalls"
    location: Location | None = None  # where the assertion stands in the suite


@dataclass(frozen=True)
class NoCallsAssertion:
    """`noCalls`: no tool was called."""

    type: Literal["noCalls"] = "noCalls"
    location: Location | None = None  # where the assertion stands in the suite


@dataclass(frozen=True)
class CallsBeforeAssertion:
    """`callsBefore`: if `then` was called, `first` was called in an earlier round (calls of one
    answer are simultaneous, so one answer holding both does not count)."""

    first: str
    then: str
    type: Literal["callsBefore"] = "callsBefore"
    location: Location | None = None  # where the assertion stands in the suite


@dataclass(frozen=True)
class ValidCallsAssertion:
    """`validCalls`: every call (of `tool`; None: of any tool) names a declared tool and its
    arguments are JSON valid against the tool's parameters."""

    tool: str | None = None
    type: Literal["validCalls"] = "validCalls"
    location: Location | None = None  # where the assertion stands in the suite


ToolAssertion = (
    CallsAssertion
    | NotCallsAssertion
    | NoCallsAssertion
    | CallsBeforeAssertion
    | ValidCallsAssertion
)
