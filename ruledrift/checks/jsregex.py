"""JavaScript regular expressions: `new RegExp(pattern, flags).test(text)`, checked and evaluated.

The engine is `regress` (ECMAScript syntax and semantics, in Rust). Python's `re` differs from
JavaScript in ways a suite author would trip over (`$` before a trailing newline, `\\d` and `\\w`
on non-ASCII text, `[^]`, `\\k<n>`, `\\u{...}`). regress in turn differs from V8 (Node 20) in
places this module corrects, found by comparing the two over every BMP character in classes under
i and over random patterns, classes and texts:

- Flags: regress accepts any letters; here they are checked as in JavaScript (d g i m s u v y,
  each at most once, not u with v). `d` and `g` do not change `test()` on a fresh object; `y`
  anchors at index 0 (and tries no other index); `v` goes to regress as "uv", else it forgets
  u's strictness.
- Strings: regress sees code points (its match offsets are UTF-8 bytes), JavaScript UTF-16 code
  units. Without u or v, astral characters are split into surrogate pairs, so `/^.$/` does not
  match "😀". Surrogates cannot cross into Rust: each one (paired or lone) stands in as a
  private-use character U+F0000-U+F07FF, and pattern literals, `\\u` escapes and class ranges are
  rewritten to match. (Under u or v, a lone surrogate in the pattern goes as a `[\\u{...}]` class:
  a bare one makes regress match nothing at all.)
- Case without u or v: JavaScript compares `toUpperCase()` results, regress case-folds. The 37
  characters where that differs (ı, ſ, K, Å, Ω, ẞ, Greek capitals with prosgegrammeni...) stand in
  as uncased private-use characters under i, so they match only themselves. `\\W` in a class is
  spelt out as ranges, so that case closure cannot bring s or k back (also under u).
- v with i: V8 complements `\\P{...}` after case folding, regress before: rewritten `[^\\p{...}]`.
- Syntax: a quantifier after `\\b`/`\\B`, `-]` or `--]` in a v class, and (ES2025, so rejected
  for portability to Node 20 and 22) modifier groups `(?i:...)` and duplicate group names are
  rejected; `\\b` in a v class is a backspace; a lone `^` in a v class is accepted.

Rejected although V8 accepts them, as regress would give other results: under v, `\\q{...}` in a
negated class; under v with i, `&&`, `--`, `\\P{...}` and negated classes inside a class (regress
folds case after computing them, V8 before). Known differences that remain:
- Lone surrogates under u or v are private-use stand-ins in the answer and code points in the
  pattern: they match `.`, `\\S` or `[^a]`, never a surrogate escape, `\\p{Cs}` or a range.
- Under u or v, V8 also tries a match between the halves of a surrogate pair: `/\\B/u` matches
  "a😀b", here it does not.
- The Unicode versions of the property and case tables may differ (regress vs the V8 in use).

Evaluation bounded in time is in `ruledrift/checks/regex_workers.py`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import regress

__all__ = ["VALID_FLAGS", "js_test", "regex_literal", "regex_problem"]

VALID_FLAGS = "dgimsuvy"
_SURROGATE_BASE = 0xF0000 - 0xD800  # surrogate code unit + base = its stand-in
# Where regress's case-insensitive match without u differs from V8 (measured over the BMP).
_FOLD_EXCEPTIONS = [0x131, 0x17F, 0x3F4, 0x1E9E, *range(0x1F88, 0x1F90), *range(0x1F98, 0x1FA0)]
_FOLD_EXCEPTIONS += [*range(0x1FA8, 0x1FB0), 0x1FBC, 0x1FCC, 0x1FD3, 0x1FE3, 0x1FFC]
_FOLD_EXCEPTIONS += [0x2126, 0x212A, 0x212B, 0xFB05]
_FOLDED_SETS = "with flags v and i, %s is not supported (regress folds case after it, V8 before)"
_NOT_WORD = [(0, 0x2F), (0x3A, 0x40), (0x5B, 0x5E), (0x60, 0x60), (0x7B, 0xFFFF)]
# \W in a class under u and i: JavaScript also counts ſ (U+017F) and K (U+212A) as word characters.
_UNICODE_NOT_WORD = r"\u{0}-\u{2f}\u{3a}-\u{40}\u{5b}-\u{5e}\u{60}\u{7b}-\u{17e}\u{180}-\u{2129}"
_UNICODE_NOT_WORD += r"\u{212b}-\u{10ffff}"
_STAND_INS = {u: u + _SURROGATE_BASE for u in range(0xD800, 0xE000)}
_FOLD_STAND_INS = _STAND_INS | {c: 0xF0800 + k for k, c in enumerate(_FOLD_EXCEPTIONS)}
# The characters each mapping replaces: most answers hold none, and finding them is linear at the
# regex engine's speed, where str.translate of 10 MB of non-ASCII text took 2 s.
_STOOD_IN = re.compile("[\ud800-\udfff]")
_FOLD_STOOD_IN = re.compile(f"[\ud800-\udfff{''.join(map(chr, _FOLD_EXCEPTIONS))}]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_LETTER = re.compile("[A-Za-z]")
_HEX4 = re.compile("[0-9a-fA-F]{4}")
_TRAIL = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_BRACED_QUANTIFIER = re.compile(r"\{[0-9]+(,[0-9]*)?\}")
_OCTAL = re.compile("[0-3][0-7]{0,2}|[4-7][0-7]?")
_CONTROL = {"b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13}


def _split_pair(match: re.Match[str]) -> str:
    v = ord(match[0]) - 0x10000
    return chr(0xD800 + (v >> 10)) + chr(0xDC00 + (v & 0x3FF))


def _join_pair(match: re.Match[str]) -> str:
    high, low = map(ord, match[0])
    return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))


def _code_units(text: str, unicode: bool) -> str:
    """Non-unicode: one character per UTF-16 code unit. Unicode: surrogate pairs joined."""
    return _PAIR.sub(_join_pair, text) if unicode else _ASTRAL.sub(_split_pair, text)


class _Invalid(ValueError):
    pass


@dataclass(frozen=True)
class _Context:
    unicode: bool  # u or v: code points, not code units
    sets: bool  # v
    ignore_case: bool
    mapped: dict[int, int]  # code units (or points) that stand in as private-use characters
    stood_in: re.Pattern[str]  # any of them

    @classmethod
    def of(cls, flags: str) -> _Context:
        unicode, ignore_case = "u" in flags or "v" in flags, "i" in flags
        if ignore_case and not unicode:
            return cls(unicode, "v" in flags, ignore_case, _FOLD_STAND_INS, _FOLD_STOOD_IN)
        return cls(unicode, "v" in flags, ignore_case, _STAND_INS, _STOOD_IN)


def _escape(s: str, i: int, unicode: bool, mapped: dict[int, int]) -> tuple[str, int]:
    """A `\\u` escape at s[i:], rewritten: a stand-in value becomes its character (replaced
    later), a non-unicode `\\u` that is not followed by four hex digits is the letter u."""
    if _HEX4.fullmatch(s, i + 2, i + 6):
        end, value = i + 6, int(s[i + 2 : i + 6], 16)
        if unicode and 0xD800 <= value < 0xDC00 and _TRAIL.match(s, end):
            return s[i : end + 6], end + 6  # an escaped surrogate pair: one code point
        return (chr(value) if value in mapped else s[i:end]), end
    if unicode and s[i + 2 : i + 3] == "{" and (close := s.find("}", i + 3)) > 0:
        digits = s[i + 3 : close]
        value = int(digits, 16) if re.fullmatch("[0-9a-fA-F]{1,6}", digits) else -1
        return (chr(value) if value in mapped else s[i : close + 1]), close + 1
    return ("\\u" if unicode else "u"), i + 2  # unicode: regress reports the bad escape


def _class_atom(s: str, i: int, mapped: dict[int, int]) -> tuple[str, int, int | None]:
    """One non-unicode class atom (Annex B): its rewritten text, its end and its code unit
    (None for a class escape such as \\d, which cannot bound a range)."""
    if s[i] != "\\" or i + 1 == len(s):
        return s[i], i + 1, ord(s[i])
    e = s[i + 1]
    if e == "u":
        text, end = _escape(s, i, False, mapped)
        return text, end, int(s[i + 2 : end], 16) if end == i + 6 else ord("u")
    if e == "x" and re.fullmatch("[0-9a-fA-F]{2}", s[i + 2 : i + 4]):
        return s[i : i + 4], i + 4, int(s[i + 2 : i + 4], 16)
    if e == "c":
        if re.fullmatch("[A-Za-z0-9_]", s[i + 2 : i + 3]):
            return s[i : i + 3], i + 3, ord(s[i + 2]) % 32
        return "\\\\", i + 1, ord("\\")  # a lone backslash; the "c" follows as an atom
    if octal := _OCTAL.match(s, i + 1):
        return s[i : octal.end()], octal.end(), int(octal[0], 8)
    if e == "W":  # spelt out, so that regress's case closure cannot add s or k through ſ or K
        return "".join(_range(low, high, mapped) for low, high in _NOT_WORD), i + 2, None
    if e in "dDsSw":
        return s[i : i + 2], i + 2, None
    return s[i : i + 2], i + 2, _CONTROL.get(e, ord(e))


def _range(low: int, high: int, mapped: dict[int, int]) -> str:
    """A class range over code units, as ranges only (so that what follows parses as before):
    plain pieces as escapes, stand-in values as characters."""
    if low > high:
        return f"\\u{low:04x}-\\u{high:04x}"  # regress reports the range out of order
    inside = sorted(c for c in mapped if low <= c <= high)
    pieces, start = [], low
    for c in [*inside, high + 1]:
        if start < c:
            pieces.append(f"\\u{start:04x}-\\u{c - 1:04x}")
        start = c + 1
    surrogates = [c for c in inside if 0xD800 <= c < 0xE000]
    if surrogates:
        pieces.append(f"{chr(surrogates[0])}-{chr(surrogates[-1])}")
    pieces += (f"{chr(c)}-{chr(c)}" for c in inside if not 0xD800 <= c < 0xE000)
    return "".join(pieces)


def _lone(atom: str) -> str:
    """A class atom outside a range; a "-" escaped, so that it cannot join its new neighbours."""
    return "\\-" if atom == "-" else atom


def _class(s: str, i: int, mapped: dict[int, int]) -> tuple[str, int]:
    """A non-unicode character class at s[i] == "[", with its ranges rewritten."""
    start = i + 2 if s[i + 1 : i + 2] == "^" else i + 1
    atoms: list[tuple[str, int | None]] = []
    j = start
    while j < len(s) and s[j] != "]":
        text, j, value = _class_atom(s, j, mapped)
        atoms.append((text, value))
    if j == len(s):
        return s[i:], j  # unterminated: regress reports it
    out, k = [s[i:start]], 0
    while k < len(atoms):
        if atoms[k + 1 : k + 2] == [("-", ord("-"))] and k + 2 < len(atoms):
            low, high = atoms[k][1], atoms[k + 2][1]
            if low is None or high is None:  # Annex B: with \d, no range but three atoms
                out += [_lone(atoms[k][0]), "\\-", _lone(atoms[k + 2][0])]
            else:
                out.append(_range(low, high, mapped))
            k += 3
        else:
            out.append(_lone(atoms[k][0]))
            k += 1
    return "".join(out) + "]", j + 1


def _backslash(s: str, i: int, ctx: _Context, classes: list[bool], dash: bool) -> tuple[str, int]:
    """An escape at s[i] == "\\" outside a non-unicode class (after a range's "-" if `dash`),
    rewritten; its end."""
    e = s[i + 1 : i + 2]
    if e == "u":
        return _escape(s, i, ctx.unicode, ctx.mapped)
    if e == "c" and not ctx.unicode and not _LETTER.match(s, i + 2):
        return "\\\\c", i + 2  # Annex B: a backslash and a "c", not a control escape
    if e in ("b", "B") and not classes:
        rest = s[i + 2 : i + 3]
        if (rest and rest in "*+?") or _BRACED_QUANTIFIER.match(s, i + 2):
            raise _Invalid(f"nothing to repeat (\\{e} cannot be quantified)")
    if e == "b" and ctx.sets and classes:
        return "\\x08", i + 2  # a backspace, which regress misses under v
    if e == "q" and ctx.sets and classes and classes[-1]:
        raise _Invalid("\\q{...} in a negated class is not supported")
    range_end = dash or (s[i + 2 : i + 3] == "-" and s[i + 3 : i + 4] != "]")
    if e == "W" and ctx.ignore_case and classes and not range_end:
        # with u and i, JavaScript counts ſ and K as word characters (in a range: an error)
        return (f"[{_UNICODE_NOT_WORD}]" if ctx.sets else _UNICODE_NOT_WORD), i + 2
    if e == "P" and ctx.sets and ctx.ignore_case and classes:
        raise _Invalid(_FOLDED_SETS % "\\P{...} in a class")
    if e == "P" and ctx.sets and ctx.ignore_case:
        close = s.find("}", i)
        if s[i + 2 : i + 3] == "{" and close > 0:  # v and i: V8 complements after case folding
            return f"[^\\p{s[i + 2 : close + 1]}]", close + 1
    return s[i : i + 2], i + 2


def _rewrite(pattern: str, ctx: _Context) -> str:
    """The pattern for regress, over stand-ins; raises _Invalid for what V8 rejects."""
    s, i = _code_units(pattern, ctx.unicode), 0
    classes: list[bool] = []  # the unicode classes open at i: is it or an outer one negated?
    names: set[str] = set()
    out: list[str] = []

    def emit(text: str) -> None:
        if ctx.unicode:  # a lone surrogate: a code point escape (bare, it breaks regress's matcher)
            form = "\\u{%x}" if classes else "[\\u{%x}]"
            text = _SURROGATE.sub(lambda m: form % ord(m[0]), text)
        out.append(text)

    while i < len(s):
        c = s[i]
        if c == "\\":
            dash = bool(classes) and out[-1] == "-" and out[-2] not in ("[", "[^")
            text, i = _backslash(s, i, ctx, classes, dash)
            emit(text)
            continue
        if c == "[" and not ctx.unicode:
            text, i = _class(s, i, ctx.mapped)
            emit(text)
            continue
        if c == "[" and (not classes or ctx.sets):
            negated = s[i + 1 : i + 2] == "^"
            if negated and classes and ctx.ignore_case:
                raise _Invalid(_FOLDED_SETS % "a negated class in a class")
            classes.append(negated or (bool(classes) and classes[-1]))
            c, i = ("[^", i + 1) if negated else ("[", i)
        elif c == "^" and ctx.sets and classes and "^" not in (out[-1], s[i + 1 : i + 2]):
            c = "\\^"  # a lone ^ in a class: regress wants it escaped under v
        elif ctx.sets and classes and (op := re.match(r"--|&&|-(?=\])", s[i : i + 3])):
            if s[i + op.end() : i + op.end() + 1] == "]":
                raise _Invalid(f'"{op[0]}" before "]": its right operand is missing')
            if ctx.ignore_case:
                raise _Invalid(_FOLDED_SETS % f'"{op[0]}"')
            c, i = op[0], i + 1
        elif c == "]" and classes:
            classes.pop()
        elif c == "(" and not classes and s[i + 1 : i + 2] == "?":
            if s[i + 2 : i + 3] in ("i", "m", "s", "-"):
                raise _Invalid("modifier groups such as (?i:...) are not supported (Node 20)")
            if s[i + 2 : i + 3] == "<" and s[i + 3 : i + 4] not in ("=", "!"):
                name = s[i + 3 : s.find(">", i + 3)]
                if name in names:
                    raise _Invalid(f'duplicate capture group name "{name}"')
                names.add(name)
        emit(c)
        i += 1
    return "".join(out).translate(ctx.mapped)


def _check_flags(flags: str) -> None:
    for flag in flags:
        if flag not in VALID_FLAGS:
            valid = ", ".join(VALID_FLAGS)
            raise _Invalid(f'unknown flag "{flag}" (valid flags: {valid})')
        if flags.count(flag) > 1:
            raise _Invalid(f'flag "{flag}" repeated')
    if "u" in flags and "v" in flags:
        raise _Invalid('flags "u" and "v" cannot be combined')


@functools.lru_cache(maxsize=256)
def _compile(pattern: str, flags: str) -> regress.Regex:
    """The regress object for `new RegExp(pattern, flags)`; raises ValueError with a message."""
    _check_flags(flags)
    engine_flags = "".join(f for f in "imsu" if f in flags) + ("uv" if "v" in flags else "")
    try:
        source = _rewrite(pattern, _Context.of(flags))
        compiled = regress.Regex(source, engine_flags)
        if "y" in flags:  # sticky, lastIndex 0: match at index 0 only, and try no other index
            compiled = regress.Regex(rf"(?<![\s\S])(?:{source})", engine_flags)
    except _Invalid as problem:
        raise ValueError(f"invalid regular expression: {problem}") from None
    except regress.RegressError as problem:
        message = str(problem)
        message = message[:1].lower() + message[1:]
        raise ValueError(f"invalid regular expression: {message}") from None
    return compiled


def regex_problem(pattern: str, flags: str) -> str | None:
    """None if `new RegExp(pattern, flags)` would succeed in JavaScript, else what is wrong."""
    try:
        _compile(pattern, flags)
    except ValueError as problem:
        return str(problem)
    return None


def js_test(pattern: str, flags: str, text: str) -> bool:
    """`new RegExp(pattern, flags).test(text)`, in-process and unbounded. ValueError if invalid."""
    compiled, ctx = _compile(pattern, flags), _Context.of(flags)
    return compiled.find(_stand_ins(_code_units(text, ctx.unicode), ctx)) is not None


def _stand_ins(text: str, ctx: _Context) -> str:
    """`text.translate(ctx.mapped)`, at the regex engine's speed."""
    return ctx.stood_in.sub(lambda found: chr(ctx.mapped[ord(found[0])]), text)


def regex_literal(pattern: str, flags: str) -> str:
    """The pattern as JavaScript prints it (`/a\\/b/i`), for messages."""
    out, in_class, escaped = [], False, False
    for c in pattern:
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[" or c == "]":
            in_class = c == "["
        elif c == "/" and not in_class:
            c = "\\/"
        out.append({"\n": "\\n", "\r": "\\r", "\u2028": "\\u2028", "\u2029": "\\u2029"}.get(c, c))
    return f"/{''.join(out) or '(?:)'}/{flags}"
