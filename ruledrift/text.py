"""Making text safe where it leaves the program, in one place.

Every string that came from a suite, a model, an agent or a server is hostile where it is shown:
it may hold terminal escape sequences, Markdown or HTML, GitHub workflow commands, characters
XML forbids, or lone UTF-16 surrogates (legal in JSON, unencodable as UTF-8). Each destination
has one function here:

- `repair_surrogates`: lone surrogates → U+FFFD (where text enters, and before any encoding);
- `terminal_safe`, `preview`: control characters shown as escapes, lines joined;
- `terminal_lines`: the same, line by line (multi-line messages);
- `markdown_inline`: inert in GitHub Markdown (tables included) and its HTML;
- `escape_data`, `escape_property`: workflow command escaping as actions/toolkit does it;
- `inert_in_github_log`: a log line GitHub's runner cannot read as a workflow command;
- `xml_safe`: what XML 1.0 forbids, written as a visible escape;
- `cut_text`: a length limit with an ellipsis;
- `json_kind`: words for a JSON value's type, for messages that must not quote the value.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls, line and paragraph separators, and the bidi controls that reorder text
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_MARKDOWN_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_DATA_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_MARKDOWN = {c: f"&#{ord(c)};" for c in "|`*_[]\\~$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_LINE_END = re.compile(r"(\r\n|\r|\n)")
PREVIEW_CHARS = 200


def repair_surrogates(text: str) -> str:
    """`text` with each lone UTF-16 surrogate (`"\\ud83d"` in JSON: half an emoji) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _visible(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def terminal_safe(text: str) -> str:
    """Text made harmless for a terminal: control characters (escape sequences) shown as
    `\\x1b`-style escapes, lines joined with ` ⏎ `."""
    text = repair_surrogates(text).replace("\r\n", "\n").replace("\n", " ⏎ ")
    return _CONTROL.sub(_visible, text)


def terminal_lines(text: str) -> str:
    """Like `terminal_safe`, but each line of `text` stays a line (for multi-line messages)."""
    return "\n".join(terminal_safe(line) for line in _LINE_END.split(text)[::2])


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    """A short, terminal-safe preview of `text`. Only the beginning that can be shown is made
    safe (escaping never shortens text), so a preview costs the same for any length of text:
    one of a 10 MB answer of control characters took 40 s, on the event loop during a run."""
    return cut_text(terminal_safe(text[: limit + 1]), limit)


def cut_text(text: str, limit: int) -> str:
    """`text`, cut to at most `limit` characters with a closing `…` when it was longer."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def markdown_inline(text: str, limit: int) -> str:
    """Text made inert in GitHub Markdown (tables included): one line, entities for Markdown and
    HTML syntax, control characters shown as escapes, cut at `limit` characters. Only the
    beginning that can be shown is read (CRLF, which becomes one line end, at worst halves it)."""
    text = repair_surrogates(text[: 2 * limit + 2]).replace("\r\n", "\n").replace("\r", "\n")
    text = _MARKDOWN_CONTROL.sub(_visible, text)
    text = "".join(_MARKDOWN.get(c, c) for c in cut_text(text, limit))
    return text.replace("\n", "<br>")


def escape_data(text: str) -> str:
    """As actions/toolkit's `escapeData`: `%` first, then CR and LF; other control characters
    (terminal escape sequences, which GitHub's log viewer would render) shown as escapes."""
    text = _DATA_CONTROL.sub(_visible, text)
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """As actions/toolkit's `escapeProperty`: the data escapes, then `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def inert_in_github_log(text: str) -> str:
    """`text` (any number of lines) as GitHub's runner reads no workflow command from it. The
    runner splits lines at CR, LF and CRLF and runs `::name::data` after leading whitespace and
    the legacy `##[name]data` anywhere in a line; a backslash goes before each: `\\::error::x`,
    `##\\[error]x`. Everything else is kept as it is."""
    parts = _LINE_END.split(text)
    for index in range(0, len(parts), 2):  # even entries are lines, odd ones their ends
        parts[index] = _inert_line(parts[index])
    return "".join(parts)


def _inert_line(line: str) -> str:
    line = line.replace("##[", "##\\[")
    start = line.find("::")
    if start >= 0 and not any(c.isprintable() and not c.isspace() for c in line[:start]):
        line = f"{line[:start]}\\{line[start:]}"
    return line


def xml_safe(text: str) -> str:
    """`text` with each code point XML 1.0 forbids written as an escape (`\\x1b`, `\\ufffe`)."""
    return _NOT_XML.sub(_xml_escape, text)


def _xml_escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def json_kind(value: object) -> str:
    """`an integer`, `a string`, `null`…: a value's JSON type, never the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"
