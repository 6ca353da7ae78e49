"""ruledrift/text.py: each destination's escaping, against the rules it follows."""

from __future__ import annotations

from ruledrift import text
from ruledrift.text import terminal_safe, xml_safe


def test_data_escapes_percent_first_then_cr_and_lf() -> None:
    assert text.escape_data("100%\r\n") == "100%25%0D%0A"
    assert text.escape_data("%0A::error::x") == "%250A::error::x"  # stays literal text
    assert text.escape_data("a:b,c") == "a:b,c"


def test_properties_also_escape_colon_and_comma() -> None:
    assert text.escape_property("a:b,c%d\r\ne") == "a%3Ab%2Cc%25d%0D%0Ae"
    assert text.escape_property("%3A") == "%253A"


def test_xml_safe_escapes_only_what_xml_forbids() -> None:
    assert xml_safe("a\x00b\x1bc\x08\x0b\x0c\x1f") == "a\\x00b\\x1bc\\x08\\x0b\\x0c\\x1f"
    assert xml_safe("\ufffe\uffff\ud800\udfff") == "\\ufffe\\uffff\\ud800\\udfff"
    kept = "tab\t lf\n cr\r é \x7f \ufffd \ue000 🙂 \U0010ffff ]]> <&>"
    assert xml_safe(kept) == kept


def test_bidi_controls_cannot_reorder_what_a_terminal_shows() -> None:
    """U+202E (right-to-left override) and the isolates make `exe.txt` read as `txt.exe`."""
    assert terminal_safe("report\u202etxt.exe") == "report\\u202etxt.exe"
    assert terminal_safe("a\u2066b\u2069c\u202ad") == "a\\u2066b\\u2069c\\u202ad"
