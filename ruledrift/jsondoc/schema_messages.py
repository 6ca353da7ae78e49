"""Turns JSON Schema validation errors into messages a person can act on.

The schema is the single validator; this module only words its findings: it names the field, says
what was expected, lists allowed values or suggests the one probably meant, and names the rule,
scenario and probe an error is in.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Sequence

from jsonschema.exceptions import ValidationError

from ruledrift.jsondoc.positions import pointer_of
from ruledrift.text import json_kind

ID_PATTERN = "^[a-z0-9._-]+$"
SUPPORTED_VERSION = 1
_EXACT_FLOAT = 2**53  # below this a float's integer value is exact: "e.g. 2 (not 2.0)"
# An object with more unknown fields than this is no typo: it gets the allowed fields, no guesses.
_SUGGESTED_FIELDS = 100

_TYPE_NAMES = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def show(value: object) -> str:
    """A short JSON rendering of a value for a message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _one_of(values: Sequence[object]) -> str:
    return ", ".join(show(v) for v in values)


def close_match(word: str, choices: Sequence[str]) -> str | None:
    """The choice that `word` most likely misspells, ignoring case ("afterTurn" for
    "afterTurns", "notMatches" for "notmatch"), or None when none is close."""
    folded: dict[str, str] = {}
    for choice in choices:
        folded.setdefault(choice.casefold(), choice)
    found = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return folded[found[0]] if found else None


def did_you_mean(word: object, choices: Sequence[str]) -> str:
    """' (did you mean "x"?)' for a string close to one of `choices`, else ''."""
    match = close_match(word, choices) if isinstance(word, str) else None
    return f" (did you mean {show(match)}?)" if match is not None else ""


class SchemaFinding:
    """One problem: where (pointer, and whether it is at a key) and what."""

    def __init__(self, path: Sequence[str | int], message: str, *, at_key: bool = False) -> None:
        self.pointer = pointer_of(*path)
        self.message = message
        self.at_key = at_key


def findings(error: ValidationError) -> Iterator[SchemaFinding]:
    path = list(error.absolute_path)
    kind = error.validator
    value = error.instance
    expected = error.validator_value
    if kind == "additionalProperties" and isinstance(value, dict):
        yield from _unknown_fields(error, path, value)
    elif kind == "uniqueItems" and isinstance(value, list):
        yield from _repeated_items(path, value)
    elif kind == "required" and isinstance(value, dict):
        # jsonschema reports each missing field as its own error; name the one in this error
        for name in expected if isinstance(expected, list) else []:
            if name not in value and repr(name) in error.message:
                yield SchemaFinding(path, f"missing required field {show(name)}")
    else:
        yield SchemaFinding(path, _message(kind, value, expected, path))


def _unknown_fields(
    error: ValidationError, path: list[str | int], value: dict[str, object]
) -> Iterator[SchemaFinding]:
    schema = error.schema if isinstance(error.schema, dict) else {}
    allowed = sorted(schema.get("properties", {}))
    unknown = [key for key in value if key not in allowed]
    for key in unknown:
        match = close_match(key, allowed) if len(unknown) <= _SUGGESTED_FIELDS else None
        hint = f"did you mean {show(match)}?" if match else f"allowed fields: {', '.join(allowed)}"
        yield SchemaFinding([*path, key], f"unknown field {show(key)} ({hint})", at_key=True)


def _repeated_items(path: list[str | int], items: list[object]) -> Iterator[SchemaFinding]:
    """The first item that repeats an earlier one, at its own position (types kept apart: the
    float 1.0 is refused on its own, it does not repeat 1)."""
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        key = json.dumps([type(item).__name__, item], sort_keys=True)
        if key in seen:
            what = "boundary" if path and path[-1] == "afterTurn" else "value"
            yield SchemaFinding(
                [*path, index],
                f"{show(item)} is listed twice (first at {pointer_of(*path, seen[key])}); "
                f"list each {what} once",
            )
            return
        seen[key] = index


def _message(kind: object, value: object, expected: object, path: list[str | int]) -> str:
    if kind == "type":
        return _wrong_type(value, expected, path)
    if kind == "const" and path == ["version"]:
        return (
            f"unsupported version {show(value)}: this RuleDrift reads version "
            f'{SUPPORTED_VERSION} (upgrade RuleDrift, or write "version": {SUPPORTED_VERSION})'
        )
    if kind == "const":
        return f"expected {show(expected)}, got {show(value)}"
    if kind == "enum":
        choices = [v for v in expected if isinstance(v, str)]  # type: ignore[attr-defined]
        hint = did_you_mean(value, choices)
        return f"expected one of {_one_of(expected)}; got {show(value)}{hint}"  # type: ignore[arg-type]
    if kind == "pattern" and expected == ID_PATTERN:
        return (
            f"invalid id {show(value)}: ids use lowercase letters, numbers, dots, underscores "
            "and hyphens"
        )
    if kind == "pattern" and path and path[-1] == "apiKeyEnv":
        return (
            f"invalid environment variable name {show(value)}: use letters, digits and "
            "underscores, not starting with a digit"
        )
    if kind == "pattern" and path and path[-1] == "flags":
        return f"invalid flags {show(value)}: JavaScript flags are d, g, i, m, s, u, v and y"
    if kind == "minItems":
        what = str(path[-1]) if path else "items"
        return f"expected at least {expected} item(s) in {what}, got {len(value)}"  # type: ignore[arg-type]
    if kind == "maxItems":
        what = str(path[-1]) if path else "items"
        return f"expected at most {expected} item(s) in {what}, got {len(value):,}"  # type: ignore[arg-type]
    if kind == "minLength":
        return "must not be empty"
    if kind == "maxLength":
        return f"longer than {expected} characters"
    if kind == "minimum":
        return f"expected a number of at least {expected}, got {show(value)}"
    if kind == "exclusiveMinimum":
        return f"expected a number above {expected}, got {show(value)}"
    if kind == "exclusiveMaximum":
        return f"expected a number below {expected}, got {show(value)}"
    if kind == "maximum" and path and path[-1] == "timeoutMs":
        return f"expected at most {expected} milliseconds (a day), got {show(value)}"
    if kind == "maximum":
        return f"expected a number of at most {expected}, got {show(value)}"
    if kind == "not" and expected == {"const": "base"}:
        return (
            '"base" is the suite as written, compared with every variant: give this one another id'
        )
    if kind == "anyOf" and len(path) == 2 and path[0] == "variants":
        return 'a variant must change something: give it "remindEvery", "systemPrompt" or both'
    if kind == "oneOf" and path and path[-1] == "think":
        return f'expected true, false, "low", "medium", "high" or "max"; got {show(value)}'
    return f"{kind}: {show(value)} does not satisfy {show(expected)}"


def _wrong_type(value: object, expected: object, path: list[str | int]) -> str:
    names = [expected] if isinstance(expected, str) else list(expected)  # type: ignore[call-overload]
    if "integer" in names and isinstance(value, float):
        return _not_an_integer(value)
    if path and path[-1] == "afterTurn":
        return (
            "expected an integer, a list of integers (e.g. [0, 4, 8]) or a search "
            f'(e.g. {{"search": [0, 64]}}), got {json_kind(value)}'
        )
    wanted = " or ".join(_TYPE_NAMES.get(n, n) for n in names)
    return f"expected {wanted}, got {json_kind(value)}"


def _not_an_integer(value: float) -> str:
    """For `2.0` where an integer belongs: the parser keeps a literal with a fraction or an
    exponent a number, so the contract's integers are written as integers."""
    if float.is_integer(value) and abs(value) < _EXACT_FLOAT:  # also for a float subclass
        return f"expected an integer, e.g. {int(value)} (not {show(value)})"
    return f"expected an integer (digits only, no fraction or exponent), got {show(value)}"


def context(data: object, path: Sequence[str | int]) -> str:
    """Names the rule, scenario and probe a pointer is in, e.g. ' (scenario "a", probe "b")'."""
    names: list[str] = []
    labels = {"rules": "rule", "scenarios": "scenario", "probes": "probe", "variants": "variant"}
    node, parent = data, None
    for part in path:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part)
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
            item_id = node.get("id") if isinstance(node, dict) else None
            if isinstance(parent, str) and parent in labels and isinstance(item_id, str):
                names.append(f"{labels[parent]} {show(item_id)}")
        else:
            break
        parent = part
    return f" ({', '.join(names)})" if names else ""
