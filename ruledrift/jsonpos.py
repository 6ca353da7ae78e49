"""A strict JSON parser that remembers where every value and key stands.

`json.loads` keeps neither positions nor repeated keys, and a reviewed test contract must not hide
a second value under the same key. This parser accepts exactly RFC 8259 JSON (no NaN, no comments,
no trailing commas), returns ordinary Python values, and records for each JSON pointer the
line and column (1-based, counted in characters) of its value and, for object members, of its key.
"""

from __future__ import annotations

import bisect
import json.decoder
import re
from collections.abc import Callable
from dataclasses import dataclass, field

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}
_MAX_DEPTH = 100  # a suite nests about 8 deep; this keeps far from the recursion limit


class JSONSyntaxError(Exception):
    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


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
    """Parse `text`; raises JSONSyntaxError with the offset of the problem."""
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
    match = _WHITESPACE.match(text, pos)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def _describe(text: str, pos: int) -> str:
    if pos >= len(text):
        return "the end of the file"
    return repr(text[pos])


def _value(doc: Parsed, pos: int, pointer: str, depth: int) -> tuple[object, int]:
    text = doc.text
    if depth > _MAX_DEPTH:
        raise JSONSyntaxError(f"nesting deeper than {_MAX_DEPTH} levels", pos)
    doc.values[pointer] = pos
    char = text[pos : pos + 1]
    if char == "{":
        return _object(doc, pos + 1, pointer, depth)
    if char == "[":
        return _array(doc, pos + 1, pointer, depth)
    if char == '"':
        return _string(text, pos)
    number = _NUMBER.match(text, pos)
    if number:
        literal = number.group()
        is_float = number.group(1) is not None or number.group(2) is not None
        return (float(literal) if is_float else int(literal)), number.end()
    for word, value in _LITERALS.items():
        if text.startswith(word, pos):
            return value, pos + len(word)
    raise JSONSyntaxError(f"expected a JSON value, found {_describe(text, pos)}", pos)


_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _string(text: str, pos: int) -> tuple[str, int]:
    try:
        return _scanstring(text, pos + 1, True)
    except json.JSONDecodeError as error:
        raise JSONSyntaxError(error.msg[0].lower() + error.msg[1:], error.pos) from None


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
            raise JSONSyntaxError(f"expected a double-quoted field name, found {found}", pos)
        key_pos = pos
        key, pos = _string(text, pos)
        member = pointer + "/" + escape_token(key)
        pos = _skip(text, pos)
        if text[pos : pos + 1] != ":":
            raise JSONSyntaxError(
                f"expected ':' after a field name, found {_describe(text, pos)}", pos
            )
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
            raise JSONSyntaxError(f"expected ',' or '}}', found {_describe(text, pos)}", pos)
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
            raise JSONSyntaxError(f"expected ',' or ']', found {_describe(text, pos)}", pos)
        pos = _skip(text, pos + 1)
