"""`ruledrift import`: an exported conversation converted into a history file.

Read: an OpenAI-style message list (a JSON array of `{role, content}`), an object holding one
under `"messages"` (a Chat Completions request body), or JSONL, one message a line. System and
developer messages are dropped (the suite makes the system message); `content` given as a list
of content parts has its text parts joined with a newline, and any other part (an image, audio,
a file) is refused. Everything else a message holds (`name`, `refusal`, timestamps) is left out.
Every problem is a `ConfigIssue` located in the export; none quotes its text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ruledrift.errors import ConfigError, ConfigIssue
from ruledrift.jsondoc import positions as jsonpos
from ruledrift.jsondoc.schema_messages import show
from ruledrift.suite.history import read_messages

MAX_IMPORT_BYTES = 64 * 1024 * 1024  # an export; the history written is checked at 16 MiB
_DROPPED_ROLES = ("system", "developer")
_TEXT_PARTS = ("text", "input_text", "output_text")
_TOOLS = (
    "tool calls are not supported in a history yet (they come with tool rules); remove the "
    "tool messages and tool calls from the export"
)
_SHAPES = (
    'expected a list of messages ({"role": …, "content": …}), an object with "messages", or '
    "JSONL with one message a line"
)


@dataclass(frozen=True)
class Imported:
    """The history file's bytes, its message count, and the system messages left out."""

    data: bytes
    messages: int
    dropped: int


@dataclass(frozen=True)
class _Found:
    """One message of the export and where it stands."""

    value: object
    doc: jsonpos.Parsed
    pointer: str
    line: int = 0  # a JSONL line (0: a JSON document, its lines counted by `doc`)


def convert(shown: str, raw: bytes) -> Imported:
    """The history file for the export `raw` (named `shown` in messages); raises ConfigError
    listing every problem."""
    text = _decode(shown, raw)
    found = _messages(shown, text)
    issues: list[ConfigIssue] = []
    kept: list[tuple[_Found, str, str]] = []
    dropped = 0
    for message in found:
        result = _normalized(shown, message)
        if isinstance(result, ConfigIssue):
            issues.append(result)
        elif result is None:
            dropped += 1
        else:
            kept.append((message, *result))
    if not issues:  # a message refused would make the order's problems follow from it
        issues = _order_problems(shown, kept)
    if issues:
        raise ConfigError(issues)
    lines = [json.dumps({"role": r, "content": c}, ensure_ascii=False) for _, r, c in kept]
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    _, problems = read_messages(shown, data)
    if problems:  # what `_order_problems` and `_normalized` let through: a bug
        raise AssertionError(f"import wrote a history it cannot read: {problems[0]}")
    return Imported(data, len(kept), dropped)


def _decode(shown: str, raw: bytes) -> str:
    try:
        return raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = len(raw[: error.start].rsplit(b"\n", 1)[-1].decode("utf-8", "replace")) + 1
        message = f"not UTF-8: byte 0x{raw[error.start]:02x} cannot be decoded; save it as UTF-8"
        raise ConfigError([ConfigIssue(shown, line, column, "", message)]) from None


def _messages(shown: str, text: str) -> list[_Found]:
    """The export's messages, in order: from one JSON document, or from JSONL."""
    if not text.strip():
        raise ConfigError([ConfigIssue(shown, 1, 1, "", f"the file is empty; {_SHAPES}")])
    try:
        doc = jsonpos.parse(text)
    except jsonpos.JSONSyntaxError as error:
        if text.lstrip().startswith("["):  # a JSON array, not JSONL: its own error
            line, column = jsonpos.Parsed(text).line_col(error.offset)
            issue = ConfigIssue(
                shown, line, column, error.pointer, f"invalid JSON: {error.message}"
            )
            raise ConfigError([issue]) from None
        return _jsonl(shown, text)
    value = doc.value
    if isinstance(value, list):
        return [_Found(item, doc, f"/{index}") for index, item in enumerate(value)]
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        messages = value["messages"]
        return [_Found(item, doc, f"/messages/{index}") for index, item in enumerate(messages)]
    if isinstance(value, dict) and "role" in value:  # JSONL of one line
        return [_Found(value, doc, "", line=1)]
    raise ConfigError([ConfigIssue(shown, 1, 1, "", f"{_SHAPES}; got {_kind(value)}")])


def _kind(value: object) -> str:
    if isinstance(value, dict):
        return 'an object without a list under "messages"'
    return show(value)


def _jsonl(shown: str, text: str) -> list[_Found]:
    found, issues = [], []
    for number, row in enumerate(text.split("\n"), start=1):
        line = row.removesuffix("\r")
        if not line.strip():
            continue
        try:
            doc = jsonpos.parse(line)
        except jsonpos.JSONSyntaxError as error:
            column = jsonpos.Parsed(line).line_col(error.offset)[1]
            message = f"invalid JSON: {error.message} ({_SHAPES})"
            issues.append(ConfigIssue(shown, number, column, error.pointer, message))
            continue
        found.append(_Found(doc.value, doc, "", line=number))
    if issues:
        raise ConfigError(issues)
    return found


def _at(found: _Found, suffix: str, *, key: bool = False) -> tuple[str, int, int]:
    """(pointer, line, column) of `suffix` inside the message (its key when `key`)."""
    pointer = found.pointer + suffix
    offsets = found.doc.keys if key else found.doc.values
    line, column = found.doc.line_col(offsets.get(pointer, found.doc.values.get(found.pointer, 0)))
    return pointer, (found.line or line), column


def _issue(
    shown: str, found: _Found, suffix: str, message: str, *, key: bool = False
) -> ConfigIssue:
    pointer, line, column = _at(found, suffix, key=key)
    return ConfigIssue(shown, line, column, pointer, message)


def _normalized(shown: str, found: _Found) -> tuple[str, str] | ConfigIssue | None:
    """(role, text) of one message, None for a system message left out, or its problem."""
    value = found.value
    if not isinstance(value, dict):
        return _issue(
            shown, found, "", f'expected a message, {{"role": …, "content": …}}; got {show(value)}'
        )
    for name in ("tool_calls", "function_call", "tool_call_id"):
        if value.get(name):
            return _issue(shown, found, f"/{name}", _TOOLS, key=True)
    role = value.get("role")
    if role in ("tool", "function"):
        return _issue(shown, found, "/role", _TOOLS)
    if role in _DROPPED_ROLES:
        return None
    if role not in ("user", "assistant"):
        got = "no role" if role is None else show(role)
        where = "/role" if "role" in value else ""
        return _issue(shown, found, where, f'expected the role "user" or "assistant"; got {got}')
    text = _text(shown, found, value.get("content"))
    return text if isinstance(text, ConfigIssue) else (role, text)


def _text(shown: str, found: _Found, content: object) -> str | ConfigIssue:
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            piece = _part(part)
            if piece is None:
                kind = part.get("type") if isinstance(part, dict) else None
                what = f"of type {show(kind)}" if isinstance(kind, str) else show(part)
                message = f"a content part {what}: a history holds text only; remove it"
                return _issue(shown, found, f"/content/{index}", message)
            texts.append(piece)
        content = "\n".join(texts)
    if not isinstance(content, str):
        got = "no content" if content is None else show(content)
        return _issue(
            shown, found, "/content" if content is not None else "", f"expected the text; got {got}"
        )
    if not content.strip():
        return _issue(shown, found, "/content", "the content is empty; a recorded message has text")
    return content


def _part(part: object) -> str | None:
    """The text of a content part (a string, or a text part), or None."""
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and part.get("type") in _TEXT_PARTS:
        text = part.get("text")
        return text if isinstance(text, str) else None
    return None


def _order_problems(shown: str, kept: list[tuple[_Found, str, str]]) -> list[ConfigIssue]:
    """A history alternates user and assistant, user first, and ends with an answer."""
    if not kept:
        return [ConfigIssue(shown, 1, 1, "", "the export holds no user or assistant message")]
    for index, (found, role, _) in enumerate(kept):
        expected = ("user", "assistant")[index % 2]
        if role != expected:
            message = (
                f"expected a {expected} message here (message {index + 1} of those kept): a "
                "history alternates user and assistant messages, starting with a user message; "
                "edit the export"
            )
            return [_issue(shown, found, "/role", message)]
    if len(kept) % 2:
        message = (
            "the last user message has no answer: a history ends with the assistant's answer; "
            "remove the message from the export"
        )
        return [_issue(shown, kept[-1][0], "", message)]
    return []
