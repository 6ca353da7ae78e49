"""JavaScript regular expressions: semantics proven against Node, time bounds, worker hygiene."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from ruledrift.checks.jsregex import _Context, _stand_ins, js_test, regex_literal, regex_problem

Expected = bool | str  # the result of test(), or "error" when `new RegExp` throws
Case = tuple[str, str, str, Expected]

# (pattern, flags, answer, what Node 20 says). Generated once with node and pasted here;
# test_the_table_agrees_with_node proves it against the node on PATH on every run.
CASES: list[Case] = [
    # $ and a trailing newline; \d and \w are ASCII; [^]; named groups; \u{...}
    ("^yes$", "", "yes\n", False),
    ("yes$", "m", "yes\n", True),
    ("^\\d+$", "", "١٢٣", False),
    ("^\\d+$", "u", "١٢٣", False),
    ("^\\w+$", "", "café", False),
    ("^\\w+$", "u", "café", False),
    ("\\bcafé\\b", "", "un café noir", False),
    ("^[^]$", "", "\n", True),
    ("^.$", "", "\n", False),
    ("^.$", "s", "\n", True),
    ("^[^]*$", "", "a\nb", True),
    ("(?<q>[\"'])hi\\k<q>", "", '"hi"', True),
    ("(?<q>[\"'])hi\\k<q>", "", "\"hi'", False),
    ("\\k<q>", "", "k<q>", True),
    ("^\\u{41}$", "u", "A", True),
    ("^\\u{3}$", "", "uuu", True),
    ("^\\u{1F600}$", "u", "😀", True),
    # flags: y g i m s d
    ("b", "y", "ab", False),
    ("a", "y", "ab", True),
    ("^b", "my", "a\nb", False),
    ("b", "g", "ab", True),
    ("b", "gy", "ab", False),
    ("b", "dg", "ab", True),
    ("HUNTER2", "i", "my hunter2", True),
    ("HUNTER2", "", "my hunter2", False),
    ("^b$", "m", "a\nb\nc", True),
    ("^b$", "", "a\nb\nc", False),
    ("a.c", "s", "a\nc", True),
    ("a.c", "", "a\rc", False),
    ("a.c", "", "a\x85c", True),
    ("^a$", "m", "a\u2028", True),
    # i without u compares toUpperCase(), with u case folding
    ("ſ", "i", "s", False),
    ("ſ", "iu", "s", True),
    ("^[a-z]+$", "i", "\u212a", False),
    ("^[a-z]+$", "iu", "\u212a", True),
    ("ı", "i", "I", False),
    ("ß", "i", "ẞ", False),
    ("ß", "iu", "ẞ", True),
    ("σ", "i", "ς", True),
    ("\\u1f80", "i", "ᾈ", False),
    ("^\\W$", "i", "ſ", True),
    ("^[\\W]$", "i", "s", False),
    ("^[\\W]$", "iu", "s", False),
    ("^[^\\W]$", "iu", "\u212a", True),
    ("^[-\\W]$", "iu", "ſ", False),
    ("^[\\u0100-\\u0200-x]$", "i", "x", True),
    ("^[\\u0100-\\u0200]$", "i", "s", False),
    ("^[\\u0100-\\u0200]$", "i", "ſ", True),
    # lookbehind and lookahead
    ("(?<=\\$)\\d+", "", "cost: $42", True),
    ("(?<!\\$)\\b\\d+", "", "cost: $42", False),
    ("(?<=a(?=b)b)c", "", "abc", True),
    ("x(?!y)", "", "xy", False),
    # unicode property escapes
    ("^\\p{L}+$", "u", "Ελληνικά", True),
    ("\\p{Script=Cyrillic}", "u", "привет", True),
    ("\\p{Lu}", "", "p{Lu}", True),
    ("\\P{Lu}", "u", "ABC", False),
    ("\\p{Emoji_Presentation}", "u", "ok 😀", True),
    ("\\p{NotAProperty}", "u", "", "error"),
    # astral characters with and without u
    ("^.$", "", "😀", False),
    ("^..$", "", "😀", True),
    ("^.$", "u", "😀", True),
    ("^[😀]$", "", "😀", False),
    ("^[😀]$", "u", "😀", True),
    ("😀{2}", "", "😀😀", False),
    ("😀{2}", "u", "😀😀", True),
    ("\\ud83d", "", "😀", True),
    ("\\ud83d", "u", "😀", False),
    ("^\\ud83d\\ude00$", "u", "😀", True),
    ("^[\\u0080-\\uffff]$", "", "😀", False),
    ("^[\\u0080-\\uffff]+$", "", "😀", True),
    ("^[^\\x00-\\x7f]{2}$", "", "😀", True),
    ("^\\S$", "", "😀", False),
    ("^\\S$", "u", "😀", True),
    ("^[\\u0000-\\udfff]$", "u", "😀", False),
    ("\\ud83d?", "u", "x", True),
    ("[😀-😂]", "", "", "error"),
    ("[😀-😂]", "u", "😁", True),
    ("\\ud800", "", "x\ud800y", True),
    ("^.$", "u", "\ud800", True),
    ("^[\\ud800-\\udbff]$", "", "\ud83d", True),
    # v: set notation and string literals
    ("^[\\p{L}--[a-z]]+$", "v", "ABC", True),
    ("^[\\p{L}--[a-z]]+$", "v", "abc", False),
    ("^[\\p{ASCII}&&\\p{L}]$", "v", "é", False),
    ("^[\\q{ab|c}]$", "v", "ab", True),
    ("\\p{RGI_Emoji}", "v", "😀", True),
    ("\\P{Lu}", "iv", "é", False),
    ("[(]", "v", "(", "error"),
    ("^[\\b]$", "v", "\x08", True),
    ("^[^^,]$", "v", "a", True),
    ("[^^^]", "v", "", "error"),
    ("[a--]]", "v", "", "error"),
    ("[a-]", "v", "", "error"),
    # Annex B syntax without u, rejected with u or v
    ("{", "", "{", True),
    ("{", "u", "{", "error"),
    ("a{", "", "a{", True),
    ("x{1,", "", "x{1,", True),
    ("]", "", "]", True),
    ("]", "u", "]", "error"),
    ("]", "v", "]", "error"),
    ("\\c", "", "\\c", True),
    ("\\c", "u", "", "error"),
    ("\\c1", "", "\\c1", True),
    ("[\\c1]", "", "\x11", True),
    ("\\cJ", "", "\n", True),
    ("\\07", "", "\x07", True),
    ("\\07", "u", "", "error"),
    ("[\\101]", "", "A", True),
    ("\\8", "", "8", True),
    ("\\1(a)", "", "a", True),
    ("\\-", "", "-", True),
    ("\\-", "u", "-", "error"),
    ("(?=a)*", "", "", True),
    ("(?=a)*", "u", "", "error"),
    ("[\\d-z]", "", "-", True),
    ("^[\\d-a-z]$", "", "q", False),
    ("^[\\d-a-z]$", "", "-", True),
    ("[\\d-z]", "u", "-", "error"),
    ("\\p{L}", "", "p{L}", True),
    # invalid everywhere
    ("(", "", "", "error"),
    ("[", "", "", "error"),
    ("a**", "", "", "error"),
    ("a{2,1}", "", "", "error"),
    ("[z-a]", "", "", "error"),
    ("\\", "", "", "error"),
    ("(?<a>x)(?<a>y)", "", "", "error"),
    ("(?<=a)*", "", "", "error"),
    ("^*", "", "", "error"),
    ("\\b*", "", "", "error"),
    ("\\B{2}", "u", "", "error"),
    ("\\b{", "", "{", False),
    ("(?<n>a)\\k<m>", "", "", "error"),
    ("\\u{110000}", "u", "", "error"),
    ("\\ud800\\u", "u", "", "error"),
    ("[^\\q{ab}]", "v", "", "error"),
    # flags
    ("a", "x", "a", "error"),
    ("a", "gg", "a", "error"),
    ("a", "uv", "a", "error"),
    ("a", "I", "a", "error"),
    ("a", "dgimsuy", "a", True),
    ("a", "dgimsvy", "a", True),
]

# ES2025 syntax that Node 20 and 22 reject and regress accepts; rejected here, for portability.
ES2025: list[Case] = [
    ("(?i:a)b", "", "Ab", "error"),
    ("(?<a>x)|(?<a>y)", "", "y", "error"),
]

# Known differences, documented in ruledrift.checks.jsregex: (pattern, flags, answer, Node, ours).
KNOWN_DIFFERENCES: list[tuple[str, str, str, Expected, Expected]] = [
    # rejected: regress would compute these before case folding, V8 after
    ("[\\P{Lu}]", "iv", "é", False, "error"),
    ("[\\p{Lu}&&[a-z]]", "iv", "a", True, "error"),
    ("[a[^b]]", "iv", "B", False, "error"),
    ("[^\\q{a}]", "v", "b", True, "error"),  # rejected: regress matches it wrongly
    ("\\B", "u", "a\U0001f600b", True, False),  # V8 tries between the halves of a pair
    ("^[\\u0080-\\uffff]$", "u", "\ud800", True, False),  # a lone surrogate under u
]


def ours(pattern: str, flags: str, text: str) -> Expected:
    return "error" if regex_problem(pattern, flags) else js_test(pattern, flags, text)


def node_results(cases: list[tuple[str, str, str]]) -> list[Expected]:
    script = """
    const cases = JSON.parse(require("fs").readFileSync(0, "utf8"));
    const test = ([p, f, t]) => {
        try { return new RegExp(p, f).test(t) } catch { return "error" }
    };
    process.stdout.write(JSON.stringify(cases.map(test)));
    """
    done = subprocess.run(
        ["node", "-e", script], input=json.dumps(cases), capture_output=True, text=True, check=True
    )
    results: list[Expected] = json.loads(done.stdout)
    return results


def node_major() -> int:
    done = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    return int(done.stdout.strip().lstrip("v").split(".")[0])


needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


# --- semantics -------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "flags", "text", "expected"), CASES + ES2025)
def test_javascript_semantics(pattern: str, flags: str, text: str, expected: Expected) -> None:
    assert ours(pattern, flags, text) == expected


@pytest.mark.process
@needs_node
def test_the_table_agrees_with_node() -> None:
    table = [(p, f, t) for p, f, t, _ in CASES]
    assert node_results(table) == [expected for *_, expected in CASES]
    assert [ours(*case) for case in table] == [expected for *_, expected in CASES]


@pytest.mark.process
@needs_node
def test_es2025_syntax_is_rejected_as_node_20_and_22_do() -> None:
    if node_major() > 22:
        pytest.skip("this node accepts ES2025 modifiers and duplicate group names")
    assert node_results([(p, f, t) for p, f, t, _ in ES2025]) == ["error"] * len(ES2025)


@pytest.mark.process
@needs_node
def test_known_differences_are_still_differences() -> None:
    """When this fails, regress or V8 changed: update the list and the module docstring."""
    table = [(p, f, t) for p, f, t, *_ in KNOWN_DIFFERENCES]
    assert node_results(table) == [node for *_, node, _ in KNOWN_DIFFERENCES]
    assert [ours(*case) for case in table] == [mine for *_, mine in KNOWN_DIFFERENCES]


@pytest.mark.parametrize(
    ("flags", "problem"),
    [
        ("x", 'unknown flag "x" (valid flags: d, g, i, m, s, u, v, y)'),
        ("I", 'unknown flag "I" (valid flags: d, g, i, m, s, u, v, y)'),
        ("gig", 'flag "g" repeated'),
        ("uv", 'flags "u" and "v" cannot be combined'),
    ],
)
def test_flag_problems_say_what_is_wrong(flags: str, problem: str) -> None:
    assert regex_problem("a", flags) == problem


def test_pattern_problems_say_what_is_wrong() -> None:
    assert regex_problem("(", "") == "invalid regular expression: unbalanced parenthesis"
    assert regex_problem("(?i:a)", "") == (
        "invalid regular expression: modifier groups such as (?i:...) are not supported (Node 20)"
    )
    assert regex_problem("(?<a>x)|(?<a>y)", "") == (
        'invalid regular expression: duplicate capture group name "a"'
    )
    assert regex_problem("\\b+", "") == (
        "invalid regular expression: nothing to repeat (\\b cannot be quantified)"
    )
    assert regex_problem("[\\w--\\d]", "iv") == (
        'invalid regular expression: with flags v and i, "--" is not supported'
        " (regress folds case after it, V8 before)"
    )
    assert regex_problem("[\\w--\\d]", "v") is None
    assert regex_problem("^ok$", "imsuyg") is None


def test_js_test_raises_on_an_invalid_pattern() -> None:
    with pytest.raises(ValueError, match="unbalanced parenthesis"):
        js_test("(", "", "")


@pytest.mark.parametrize(
    ("pattern", "flags", "literal"),
    [
        ("(a+)+$", "", "/(a+)+$/"),
        ("https?://x", "i", "/https?:\\/\\/x/i"),
        ("[/]\\/", "", "/[/]\\//"),
        ("a\nb", "m", "/a\\nb/m"),
        ("", "", "/(?:)/"),
    ],
)
def test_regex_literal_prints_like_javascript(pattern: str, flags: str, literal: str) -> None:
    assert regex_literal(pattern, flags) == literal


@pytest.mark.parametrize("flags", ["", "i", "u", "ui"])
def test_stand_ins_replace_what_translate_would(flags: str) -> None:
    """The answer's surrogates (and, under i without u, the case exceptions) become their
    stand-ins by a regular expression, not str.translate (2 s over 10 MB of non-ASCII text)."""
    ctx = _Context.of(flags)
    draw = random.Random(flags)
    replaced = sorted(ctx.mapped)
    for _ in range(5000):
        pieces = [
            "a",
            "中",
            "é",
            "\U0001f600",
            chr(draw.choice(replaced)),
            chr(draw.choice(replaced)),
        ]
        text = "".join(draw.choice(pieces) for _ in range(draw.randint(0, 12)))
        assert _stand_ins(text, ctx) == text.translate(ctx.mapped), repr(text)
