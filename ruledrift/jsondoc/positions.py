"""A strict JSON parser that remembers where every value and key stands.

`json.loads` keeps neither positions nor repeated keys, and a reviewed test contract must not hide
a second value under the same key. This parser accepts exactly RFC 8259 JSON (no NaN, no comments,
no trailing commas), returns ordinary Python values, and records for each JSON pointer the
line and column (1-based, counted in characters) of its value and, for object members, of its key.

What enters here is made safe for everything downstream, once:
- a number literal with a fraction or an exponent is always a float (`2.0` is not the integer 2);
- legal JSON beyond what can be used is refused with its position (`JSONLimitError`): integers
  outside 64 bits (Python would also refuse to convert one of more than 4,300 digits), numbers
  that would become infinite or 0, nesting deeper than `MAX_DEPTH`;
- lone UTF-16 surrogates in strings and keys (`"\\ud83d"`, legal JSON but not encodable as
  UTF-8) become U+FFFD.
"""

from __future__ import annotations

import bisect
import json.decoder
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ruledrift.text import cut_text, repair_surrogates

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_SPACES = (" ", "\t", "\n", "\r")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
MAX_DEPTH = 100  # a suite nests about 8 deep; this keeps far from the recursion limit
MIN_INTEGER, MAX_INTEGER = -(2**63), 2**63 - 1  # 64 bits, as the servers a suite reaches read them
_MAX_INTEGER_CHARS = len(str(MIN_INTEGER))  # 19 digits and a sign
_SHOWN_CHARS = 24  # of a number literal in a message


class JSONSyntaxError(Exception):
    """Text that is not JSON, at `offset`, inside the value at `pointer`."""

    def __init__(self, message: str, offset: int, pointer: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.pointer = pointer


class JSONLimitError(JSONSyntaxError):
    """Legal JSON that cannot be used: a number out of range, nesting too deep."""


@dataclass(frozen=True)
class DuplicateKey:
    pointer: str  # the member's pointer
    offset: int  # where the repeated key stands
    first_offset: int  # where it stood first


@dataclass
class Parsed:
    """A parsed document: its value, where things stand, and keys that were repeated."""

    text: str
    value: object = None
    values: dict[str, int] = field(default_factory=dict)  # pointer -> offset of the value
    keys: dict[str, int] = field(default_factory=dict)  # member pointer -> offset of its key
    duplicates: list[DuplicateKey] = field(default_factory=list)
    _line_starts: list[int] = field(default_factory=list)

    def line_col(self, offset: int) -> tuple[int, int]:
        if not self._line_starts:
            self._line_starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", self.text)]
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


def escape_token(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def pointer_of(*parts: str | int) -> str:
    return "".join("/" + escape_token(str(part)) for part in parts)


def parse(text: str) -> Parsed:
    """Parse `text`; raises JSONSyntaxError (JSONLimitError for legal JSON that cannot be used)
    with the offset of the problem and the pointer of the value it is in."""
    doc = Parsed(text)
    end = _skip(text, 0)
    if end == len(text):
        raise JSONSyntaxError("expected a JSON value, found nothing", end)
    doc.value, end = _value(doc, end, "", 0)
    end = _skip(text, end)
    if end != len(text):
        raise JSONSyntaxError("unexpected text after the JSON value", end)
    return doc


def _skip(text: str, pos: int) -> int:
    if text[pos : pos + 1] not in _SPACES:  # compact JSON: no regular expression needed
        return pos
    match = _WHITESPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _describe(text: str, pos: int) -> str:
    if pos >= len(text):
        return "the end of the file"
    return repr(text[pos])


def _value(doc: Parsed, pos: int, pointer: str, depth: int) -> tuple[object, int]:
    text = doc.text
    if depth > MAX_DEPTH:
        message = f"nesting deeper than {MAX_DEPTH} levels; a suite needs about 8"
        raise JSONLimitError(message, pos, pointer)
    doc.values[pointer] = pos
    char = text[pos : pos + 1]
    if char == "{":
        return _object(doc, pos + 1, pointer, depth)
    if char == "[":
        return _array(doc, pos + 1, pointer, depth)
    if char == '"':
        return _string(text, pos, pointer)
    number = _NUMBER.match(text, pos)
    if number:
        return _number(number, pointer), number.end()
    for word, value in _LITERALS.items():
        if text.startswith(word, pos):
            return value, pos + len(word)
    raise JSONSyntaxError(f"expected a JSON value, found {_describe(text, pos)}", pos, pointer)


def _number(number: re.Match[str], pointer: str) -> int | float:
    """The literal's value: a float if it has a fraction or an exponent, else an integer."""
    literal = number.group()
    if number.group(1) is None and number.group(2) is None:
        # the length first: int() refuses a literal of more than 4,300 digits
        integer = int(literal) if len(literal) <= _MAX_INTEGER_CHARS else None
        if integer is not None and MIN_INTEGER <= integer <= MAX_INTEGER:
            return integer
        problem = f"must fit in 64 bits ({MIN_INTEGER} to {MAX_INTEGER})"
        raise _unusable(number, pointer, f"is out of range: integers {problem}")
    value = float(literal)
    if not math.isfinite(value):
        raise _unusable(
            number, pointer, "is out of range: numbers must be finite (at most ~1.8e308)"
        )
    if value == 0 and re.search("[1-9]", re.split("[eE]", literal)[0]):
        raise _unusable(number, pointer, "is too small to represent: it would become 0 (write 0)")
    return value


def _unusable(number: re.Match[str], pointer: str, problem: str) -> JSONLimitError:
    literal = number.group()
    kind = "number" if number.group(1) or number.group(2) else "integer"
    long = f" ({len(literal):,} characters)" if len(literal) > _SHOWN_CHARS else ""
    message = f"the {kind} {cut_text(literal, _SHOWN_CHARS)}{long} {problem}"
    return JSONLimitError(message, number.start(), pointer)


_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _string(text: str, pos: int, pointer: str) -> tuple[str, int]:
    try:
        value, end = _scanstring(text, pos + 1, True)
    except json.JSONDecodeError as error:
        message = error.msg[0].lower() + error.msg[1:]
        raise JSONSyntaxError(message, error.pos, pointer) from None
    return repair_surrogates(value), end


def _object(doc: Parsed, pos: int, pointer: str, depth: int) -> tuple[dict[str, object], int]:
    text = doc.text
    result: dict[str, object] = {}
    first_seen: dict[str, int] = {}
    pos = _skip(text, pos)
    if text[pos : pos + 1] == "}":
        return result, pos + 1
    while True:
        if text[pos : pos + 1] != '"':
            found = _describe(text, pos)
            message = f"expected a double-quoted field name, found {found}"
            raise JSONSyntaxError(message, pos, pointer)
        key_pos = pos
        key, pos = _string(text, pos, pointer)
        member = pointer + "/" + escape_token(key)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            message = f"expected ':' after a field name, found {_describe(text, pos)}"
            raise JSONSyntaxError(message, pos, member)
        pos = _skip(text, pos + 1)
        if key in first_seen:  # parsed for its syntax; the first value stays
            doc.duplicates.append(DuplicateKey(member, key_pos, first_seen[key]))
            _, pos = _value(Parsed(text), pos, member, depth + 1)
        else:
            first_seen[key] = key_pos
            doc.keys[member] = key_pos
            result[key], pos = _value(doc, pos, member, depth + 1)
        pos = _skip(text, pos)
        char = text[pos : pos + 1]
        if char == "}":
            return result, pos + 1
        if char != ",":
            message = f"expected ',' or '}}', found {_describe(text, pos)}"
            raise JSONSyntaxError(message, pos, pointer)
        pos = _skip(text, pos + 1)


def _array(doc: Parsed, pos: int, pointer: str, depth: int) -> tuple[list[object], int]:
    text = doc.text
    result: list[object] = []
    pos = _skip(text, pos)
    if text[pos : pos + 1] == "]":
        return result, pos + 1
    while True:
        value, pos = _value(doc, pos, f"{pointer}/{len(result)}", depth + 1)
        result.append(value)
        pos = _skip(text, pos)
        char = text[pos : pos + 1]
        if char == "]":
            return result, pos + 1
        if char != ",":
            message = f"expected ',' or ']', found {_describe(text, pos)}"
            raise JSONSyntaxError(message, pos, pointer)
        pos = _skip(text, pos + 1)
