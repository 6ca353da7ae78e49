"""ruledrift/text.py: each destination's escaping, against the rules it follows."""

from __future__ import annotations

import random
import re

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


def test_previews_escape_only_the_beginning_they_show_and_show_the_same() -> None:
    """`preview` and `markdown_inline` read only what they can show (a 10 MB answer of control
    characters took 40 s to preview, on the event loop during a run); what they show is what
    escaping all of it and cutting would show, also for CRLF and escapes across the cut."""
    draw = random.Random(7)
    alphabet = "ab \r\n\x1b\x85\u2028\ud800|*<&"
    for _ in range(10000):
        sample = "".join(draw.choice(alphabet) for _ in range(draw.randint(0, 24)))
        limit = draw.randint(1, 12)
        assert text.preview(sample, limit) == text.cut_text(terminal_safe(sample), limit)
        assert text.markdown_inline(sample, limit) == reference_markdown(sample, limit)


def reference_markdown(sample: str, limit: int) -> str:
    """`markdown_inline` as it was: everything escaped, then cut."""
    sample = text.repair_surrogates(sample).replace("\r\n", "\n").replace("\r", "\n")
    sample = re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text._visible, sample)
    escapes = {c: f"&#{ord(c)};" for c in "|`*_[]\\~$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
    shown = "".join(escapes.get(c, c) for c in text.cut_text(sample, limit))
    return shown.replace("\n", "<br>")
