"""Matchers in a suite: the values of a tool assertion's `where` and of a mock case's `when`.

An object whose keys are all matcher keys (`gt`, `gte`, `lt`, `lte`, `matches`, `flags`,
`oneOf`, `exists`) is a matcher; any other value is a literal the argument must equal. Here a
matcher is checked (problems located by pointer, relative to the conditions object) and built
into `ruledrift.data.tools` matchers; evaluating one is `ruledrift.checks.tools`'.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, cast

from ruledrift.checks.jsregex import regex_problem
from ruledrift.data.tools import (
    ArgumentCondition,
    Compare,
    CompareOp,
    Equal,
    Exists,
    Matcher,
    OneOf,
    Pattern,
    canonical_json,
)
from ruledrift.jsondoc.positions import pointer_of
from ruledrift.jsondoc.schema_messages import close_match, show
from ruledrift.text import json_kind

Problem = tuple[str, str]  # (pointer, message)

_KINDS: dict[str, str] = {
    "gt": "comparison",
    "gte": "comparison",
    "lt": "comparison",
    "lte": "comparison",
    "matches": "pattern",
    "flags": "pattern",
    "oneOf": "oneOf",
    "exists": "exists",
}
_FORMS = (
    '{"gt"|"gte"|"lt"|"lte": number}, {"matches": "pattern", "flags": "…"}, {"oneOf": […]} '
    'or {"exists": true|false}'
)
_NUMBER_TYPES = {"number", "integer"}  # the JSON Schema types a comparison can read
_LISTED = 10  # argument names a message lists


def is_matcher(value: object) -> bool:
    """Whether `value` is a matcher object (else it is a literal)."""
    return isinstance(value, dict) and bool(value) and all(key in _KINDS for key in value)


def condition_text(value: object) -> str:
    """A matcher as the suite wrote it, as compact JSON: what a failed assertion quotes."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def conditions(value: Mapping[str, Any]) -> tuple[ArgumentCondition, ...]:
    """The conditions of a valid `where` or `when` object, in the suite's order."""
    return tuple(
        ArgumentCondition(name, matcher(item), condition_text(item)) for name, item in value.items()
    )


def matcher(value: object) -> Matcher:
    """A valid matcher or literal, built."""
    if not is_matcher(value):
        return Equal(canonical_json(value))
    found = cast(dict[str, Any], value)
    if "exists" in found:
        return Exists(found["exists"])
    if "oneOf" in found:
        return OneOf(tuple(matcher(option) for option in found["oneOf"]))
    if "matches" in found:
        return Pattern(found["matches"], found.get("flags", ""))
    bounds = tuple((cast(CompareOp, op), float(bound)) for op, bound in found.items())
    return Compare(bounds)


def conditions_problems(
    value: object, properties: Mapping[str, Any] | None, tool: str
) -> Iterator[Problem]:
    """A `where` or `when` object's problems: each key must name a property of the tool's
    parameters (`properties`; None: unknown, not checked), each value be a valid matcher of a
    type the property can take. Pointers are relative to the object."""
    if not isinstance(value, dict):
        return  # the schema reports it
    for name, item in value.items():
        at = pointer_of(name)
        if properties is not None and name not in properties:
            yield at, _unknown_argument(name, properties, tool)
            continue
        declared = properties.get(name) if properties is not None else None
        for pointer, message in matcher_problems(item, declared):
            yield at + pointer, f"argument {show(name)}: {message}"


def _unknown_argument(name: str, properties: Mapping[str, Any], tool: str) -> str:
    if not properties:
        return (
            f"tool {show(tool)} declares no arguments (its parameters have no "
            f'"properties"), so there is no argument {show(name)} to check'
        )
    meant = close_match(name, list(properties))
    names = list(properties)
    more = f", … and {len(names) - _LISTED} more" if len(names) > _LISTED else ""
    listed = f"its arguments: {', '.join(names[:_LISTED])}{more}"
    hint = f"did you mean {show(meant)}?" if meant else listed
    return f"tool {show(tool)} has no argument {show(name)} ({hint})"


def matcher_problems(value: object, declared: object = None) -> Iterator[Problem]:
    """A matcher's or a literal's problems (pointers relative to it). `declared`: the schema of
    the argument it reads (its "type", when it has one, must allow what the matcher reads)."""
    types = _declared_types(declared)
    if not is_matcher(value):
        yield from _literal_problems(value, types)
        return
    found = cast(dict[str, Any], value)
    kinds = list(dict.fromkeys(_KINDS[key] for key in found))
    if len(kinds) > 1:
        yield (
            "",
            (
                f"a matcher checks one thing: this one mixes {kinds[0]} and {kinds[1]} ("
                f"{', '.join(show(key) for key in found)}); write one of {_FORMS}, or several "
                "conditions"
            ),
        )
    elif kinds[0] == "comparison":
        yield from _comparison_problems(found, types)
    elif kinds[0] == "pattern":
        yield from _pattern_problems(found, types)
    elif kinds[0] == "oneOf":
        yield from _one_of_problems(found["oneOf"], declared)
    elif not isinstance(found["exists"], bool):
        yield "/exists", f"expected true or false, got {json_kind(found['exists'])}"


def _comparison_problems(found: dict[str, Any], types: set[str] | None) -> Iterator[Problem]:
    numbers = {}
    for op, bound in found.items():
        if isinstance(bound, bool) or not isinstance(bound, int | float):
            yield f"/{op}", f"{op} compares numbers: expected a number, got {json_kind(bound)}"
        else:
            numbers[op] = float(bound)
    if len(numbers) == len(found) and _empty_range(numbers):
        yield "", f"no number is {_range_words(numbers)}: the matcher can never hold"
    if types is not None and not types & _NUMBER_TYPES:
        yield "", _wrong_kind("compares numbers", types)


def _empty_range(bounds: Mapping[str, float]) -> bool:
    """Whether no number satisfies every bound (`{"gt": 100, "lt": 50}`)."""
    lows = [(v, op == "gt") for op, v in bounds.items() if op in ("gt", "gte")]
    highs = [(v, op == "lt") for op, v in bounds.items() if op in ("lt", "lte")]
    for low, strict_low in lows:
        for high, strict_high in highs:
            if low > high or (low == high and (strict_low or strict_high)):
                return True
    return False


def _range_words(bounds: Mapping[str, float]) -> str:
    words = {"gt": ">", "gte": "≥", "lt": "<", "lte": "≤"}
    return " and ".join(f"{words[op]} {_number(v)}" for op, v in bounds.items())


def _number(value: float) -> str:
    return str(int(value)) if math.isfinite(value) and value.is_integer() else repr(value)


def _pattern_problems(found: dict[str, Any], types: set[str] | None) -> Iterator[Problem]:
    if "matches" not in found:
        yield "/flags", '"flags" needs "matches" beside it: {"matches": "pattern", "flags": "i"}'
        return
    pattern, flags = found["matches"], found.get("flags", "")
    if not isinstance(pattern, str) or not pattern:
        yield "/matches", f"expected a regular expression (a non-empty string), got {show(pattern)}"
    if not isinstance(flags, str) or not re.fullmatch("[dgimsuvy]*", flags):
        got = show(flags) if isinstance(flags, str) else json_kind(flags)
        yield "/flags", f"invalid flags {got}: JavaScript flags are d, g, i, m, s, u, v and y"
        return
    flag_problem = regex_problem("", flags)
    if flag_problem:
        yield "/flags", flag_problem
    elif isinstance(pattern, str) and pattern:
        problem = regex_problem(pattern, flags)
        if problem:
            yield "/matches", problem
    if types is not None and "string" not in types:
        yield "", _wrong_kind("matches strings", types)


def _one_of_problems(options: object, declared: object) -> Iterator[Problem]:
    if not isinstance(options, list) or not options:
        got = "an empty array" if options == [] else json_kind(options)
        yield "/oneOf", f"expected a non-empty array of matchers or values, got {got}"
        return
    for index, option in enumerate(options):
        for pointer, message in matcher_problems(option, declared):
            yield f"/oneOf/{index}{pointer}", message


def _literal_problems(value: object, types: set[str] | None) -> Iterator[Problem]:
    if types is not None and not _kinds_of(value) & types:
        yield (
            "",
            (
                f"{show(value)} is {json_kind(value)}, but the argument is declared "
                f"{_type_words(types)}: they can never be equal"
            ),
        )


def _wrong_kind(what: str, types: set[str]) -> str:
    return f"this matcher {what}, but the argument is declared {_type_words(types)}"


def _declared_types(declared: object) -> set[str] | None:
    """The JSON Schema types an argument's schema allows (None: any, or not said)."""
    kind = declared.get("type") if isinstance(declared, dict) else None
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list) and kind and all(isinstance(item, str) for item in kind):
        return set(kind)
    return None


def _kinds_of(value: object) -> set[str]:
    """The JSON Schema types `value` is an instance of."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"integer", "number"} if value.is_integer() else {"number"}
    if isinstance(value, str):
        return {"string"}
    return {"array"} if isinstance(value, list) else {"object"}


def _type_words(types: set[str]) -> str:
    names = {"object": "an object", "array": "an array", "string": "a string"}
    names |= {"integer": "an integer", "number": "a number", "boolean": "a boolean"}
    return " or ".join(names.get(kind, kind) for kind in sorted(types))
