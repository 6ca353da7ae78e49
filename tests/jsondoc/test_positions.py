"""The positional JSON parser: values, positions, and what it refuses or repairs on the way in."""

from __future__ import annotations

import pytest

from ruledrift.jsondoc import positions as jsonpos


def test_values_and_positions() -> None:
    doc = jsonpos.parse('{\n  "a": [1, "x"],\n  "b/c": null\n}')
    assert doc.value == {"a": [1, "x"], "b/c": None}
    assert doc.line_col(doc.values["/a/1"]) == (2, 12)
    assert doc.line_col(doc.keys["/b~1c"]) == (3, 3)


@pytest.mark.parametrize(
    ("literal", "value"),
    [("2", 2), ("-0", 0), ("2.0", 2.0), ("2e0", 2.0), ("2E+1", 20.0), ("-1.5e-3", -0.0015)],
)
def test_a_literal_with_a_fraction_or_an_exponent_is_a_float(literal: str, value: object) -> None:
    parsed = jsonpos.parse(literal).value
    assert parsed == value
    assert type(parsed) is type(value)


@pytest.mark.parametrize(
    ("literal", "fragment"),
    [
        ("1e400", "the number 1e400 is out of range: numbers must be finite"),
        ("-1.5E+999", "the number -1.5E+999 is out of range"),
        ("1" * 400, "(400 characters) is out of range: integers must fit in 64 bits"),
        ("9" * 5000, "(5,000 characters) is out of range"),  # beyond Python's int() limit
        (str(2**63), "the integer 9223372036854775808 is out of range"),
        (str(-(2**63) - 1), "the integer -9223372036854775809 is out of range"),
        ("1e-400", "the number 1e-400 is too small to represent: it would become 0"),
        ("0." + "0" * 400 + "1", "is too small to represent"),
    ],
)
def test_numbers_that_cannot_be_used_are_refused_where_they_stand(
    literal: str, fragment: str
) -> None:
    text = '{"options": {"x": [0, ' + literal + "]}}"
    with pytest.raises(jsonpos.JSONLimitError) as raised:
        jsonpos.parse(text)
    assert fragment in raised.value.message
    assert len(raised.value.message) < 200
    assert raised.value.offset == text.index(literal, 20)
    assert raised.value.pointer == "/options/x/1"


@pytest.mark.parametrize(
    ("literal", "value"),
    [(str(2**63 - 1), 2**63 - 1), (str(-(2**63)), -(2**63)), ("0e999", 0.0), ("5e-324", 5e-324)],
)
def test_numbers_at_the_limits_are_kept(literal: str, value: object) -> None:
    assert jsonpos.parse(literal).value == value


def test_lone_surrogates_become_replacement_characters_in_values_and_keys() -> None:
    doc = jsonpos.parse('{"k\\ud83d": ["\\udc00x", "\\ud83d\\ude00", "\\\\ud83d"]}')
    assert doc.value == {"k\ufffd": ["\ufffdx", "😀", "\\ud83d"]}
    assert "/k\ufffd/0" in doc.values


@pytest.mark.parametrize(
    ("text", "pointer", "message"),
    [
        ('{"a": [1, 2', "/a", "expected ',' or ']', found the end of the file"),
        ('{"a": {"b" 1}}', "/a/b", "expected ':' after a field name, found '1'"),
        ('{"a": {"b": "x\ty"}}', "/a/b", "invalid control character at"),
        ('{"a": {1: 2}}', "/a", "expected a double-quoted field name, found '1'"),
        ('{"a": 1} x', "", "unexpected text after the JSON value"),
    ],
)
def test_syntax_errors_name_the_value_they_are_in(text: str, pointer: str, message: str) -> None:
    with pytest.raises(jsonpos.JSONSyntaxError) as raised:
        jsonpos.parse(text)
    assert not isinstance(raised.value, jsonpos.JSONLimitError)
    assert (raised.value.pointer, raised.value.message[: len(message)]) == (pointer, message)


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_nesting_beyond_the_limit_is_refused_without_recursing(opening: str) -> None:
    with pytest.raises(jsonpos.JSONLimitError) as raised:
        jsonpos.parse(opening * 200_000)
    assert raised.value.message.startswith(f"nesting deeper than {jsonpos.MAX_DEPTH} levels")
    assert raised.value.pointer.count("/") == jsonpos.MAX_DEPTH + 1


def test_nesting_up_to_the_limit_is_fine() -> None:
    depth = jsonpos.MAX_DEPTH
    assert jsonpos.parse("[" * depth + "]" * depth).value is not None
