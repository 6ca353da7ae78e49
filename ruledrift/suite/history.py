"""A scenario's recorded background: a history file, read and checked.

A history file is JSONL, one message a line: `{"role": "user" | "assistant", "content": "..."}`,
user and assistant alternating, starting with a user message and ending with the answer to the
last one (blank lines are skipped). `ruledrift import` writes one from common exports. Every
problem is a `ConfigIssue` located in the history file (line, column, pointer in the line's
message); the message never quotes the recorded text, which may be personal data.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ruledrift.boundary.files import FileTooBig, UnreadableFile, read_regular_file
from ruledrift.data import History, HistoryMode
from ruledrift.errors import ConfigIssue
from ruledrift.jsondoc import positions as jsonpos
from ruledrift.jsondoc.schema_messages import show

MAX_HISTORY_BYTES = 16 * 1024 * 1024  # as a suite: far above a real session's log
_WHAT = "expected a history file (JSONL: one message a line)"
_ROLES = ("user", "assistant")
_TOOL_FIELDS = ("tool_calls", "function_call", "tool_call_id")
_TOOL_ROLES = ("tool", "function")
_Issue = Callable[[int, str, str], ConfigIssue]  # (offset in the line, pointer, message)
_NOT_YET = (
    "tool calls in a recorded history are not supported yet (they come with tool rules); "
    "remove the tool messages and tool calls from the history"
)


@dataclass(frozen=True)
class Loaded:
    """A history as the loader found it: the history, or a problem with the path (`at_suite`,
    reported at the suite's `history` value), or the problems in the file (`issues`)."""

    history: History | None = None
    at_suite: str | None = None
    issues: tuple[ConfigIssue, ...] = ()


def load_history(suite_path: Path, name: str, mode: HistoryMode) -> Loaded:
    """The history file `name` of the suite at `suite_path`: relative to the suite's folder,
    and inside it once symbolic links are followed."""
    folder = Path(os.path.abspath(suite_path)).parent
    if Path(name).is_absolute():
        return Loaded(at_suite=f"{show(name)} is an absolute path; {_RELATIVE}")
    resolved = (folder / name).resolve()
    if not resolved.is_relative_to(folder.resolve()):
        return Loaded(at_suite=f"{show(name)} is outside the suite's folder; {_RELATIVE}")
    shown = str(suite_path.parent / name)
    try:
        raw = read_regular_file(resolved, MAX_HISTORY_BYTES, what=_WHAT)
    except FileTooBig as error:
        limit = f"{MAX_HISTORY_BYTES // 2**20} MiB ({MAX_HISTORY_BYTES:,} bytes)"
        message = f"is {error.size}; a history may be at most {limit}: keep the part you need"
        return Loaded(issues=(ConfigIssue(shown, 1, 1, "", message),))
    except UnreadableFile as error:
        return Loaded(at_suite=f"history {show(name)}: {error.problem}")
    exchanges, issues = read_messages(shown, raw)
    if issues:
        return Loaded(issues=tuple(issues))
    sha256 = hashlib.sha256(raw).hexdigest()
    return Loaded(history=History(name, sha256, mode, tuple(exchanges)))


_RELATIVE = (
    "a history is named relative to the suite's folder and must stay inside it (symbolic links "
    "included): copy the log beside the suite"
)


def read_messages(shown: str, raw: bytes) -> tuple[list[tuple[str, str]], list[ConfigIssue]]:
    """The (user, answer) pairs of a history file's bytes, or every problem found in it."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        column = len(raw[: error.start].rsplit(b"\n", 1)[-1].decode("utf-8", "replace")) + 1
        message = f"not UTF-8: byte 0x{raw[error.start]:02x} cannot be decoded; save it as UTF-8"
        return [], [ConfigIssue(shown, line, column, "", message)]
    text = text.removeprefix("\ufeff")
    issues: list[ConfigIssue] = []
    messages: list[tuple[int, str, str]] = []  # line, role, content
    for number, row in enumerate(text.split("\n"), start=1):
        if row.strip():
            found = _message(shown, number, row.removesuffix("\r"))
            if isinstance(found, ConfigIssue):
                issues.append(found)
            else:
                messages.append((number, *found))
    if issues:
        return [], issues
    return _exchanges(shown, messages)


def _message(shown: str, number: int, line: str) -> tuple[str, str] | ConfigIssue:
    """The role and content of one line, or its first problem."""

    def issue(offset: int, pointer: str, message: str) -> ConfigIssue:
        return ConfigIssue(
            shown, number, jsonpos.Parsed(line).line_col(offset)[1], pointer, message
        )

    try:
        doc = jsonpos.parse(line)
    except jsonpos.JSONSyntaxError as error:
        return issue(error.offset, error.pointer, f"invalid JSON: {error.message}")
    value = doc.value
    if not isinstance(value, dict):
        return issue(0, "", f'expected a message, {{"role": …, "content": …}}; got {show(value)}')
    role, content = value.get("role"), value.get("content")
    for key in value:
        pointer = jsonpos.pointer_of(key)
        if key in _TOOL_FIELDS:
            return issue(doc.keys[pointer], pointer, _NOT_YET)
        if key not in ("role", "content"):
            message = (
                f'unknown field {show(key)}: a history message holds "role" and "content" only '
                "(ruledrift import converts an export)"
            )
            return issue(doc.keys[pointer], pointer, message)
    if role in _TOOL_ROLES:
        return issue(doc.values["/role"], "/role", _NOT_YET)
    if role == "system":
        message = (
            "a system message cannot be recorded: the suite's systemPrompt and rules make the "
            "system message; move its text to the scenario's systemPrompt and remove the line"
        )
        return issue(doc.values["/role"], "/role", message)
    if role not in _ROLES:
        where = doc.values.get("/role", 0)
        return issue(where, "/role" if "role" in value else "", _expected_role(role))
    return _content(role, content, doc, issue)


def _expected_role(role: object) -> str:
    got = "no role" if role is None else show(role)
    return f'expected the role "user" or "assistant"; got {got}'


def _content(
    role: str, content: object, doc: jsonpos.Parsed, issue: _Issue
) -> tuple[str, str] | ConfigIssue:
    if content is None or "/content" not in doc.values:
        return issue(0, "", 'the message has no "content": expected its text, a string')
    at = doc.values["/content"]
    if isinstance(content, list):
        message = (
            "expected the text as a string, not a list of content parts (ruledrift import joins "
            "an export's text parts)"
        )
        return issue(at, "/content", message)
    if not isinstance(content, str):
        return issue(at, "/content", f"expected the text as a string; got {show(content)}")
    if not content.strip():
        return issue(at, "/content", "the content is empty; a recorded message has text")
    return role, content


def _exchanges(
    shown: str, messages: list[tuple[int, str, str]]
) -> tuple[list[tuple[str, str]], list[ConfigIssue]]:
    """The messages as (user, answer) pairs: they must alternate, user first, answer last."""
    if not messages:
        return [], [ConfigIssue(shown, 1, 1, "", "the history holds no messages")]
    for index, (number, role, _) in enumerate(messages):
        expected = _ROLES[index % 2]
        if role != expected:
            message = (
                f"expected a {expected} message here (message {index + 1}): a history "
                "alternates user and assistant messages, starting with a user message"
            )
            return [], [ConfigIssue(shown, number, 1, "/role", message)]
    if len(messages) % 2:
        number = messages[-1][0]
        message = (
            "the last user message has no recorded answer: end the history with the assistant's "
            "answer, or remove the line"
        )
        return [], [ConfigIssue(shown, number, 1, "", message)]
    pairs = zip(messages[::2], messages[1::2], strict=True)
    return [(user[2], answer[2]) for user, answer in pairs], []
