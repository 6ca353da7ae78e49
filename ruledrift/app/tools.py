"""`tools import --mcp` and `tools serve`: a suite's `tools` block drafted from an MCP server's
`tools/list`, and the stdio bridge an agent starts to reach its session of RuleDrift's MCP mock
server.

The draft is for a person to review, never to run as it is: each tool keeps the server's name,
description (the words the agent's model reads in production) and input schema (`inputSchema`
becomes `parameters`), and gets a placeholder mock, an `error` result that says it is one, so a
forgotten placeholder shows as a failing tool, never as a plausible answer. A tool the server
marks `destructiveHint: true` says so in its placeholder, and the outcome lists it.

Everything a server sends is hostile: the JSON written has every invisible or reordering
character (C0 and C1 controls, bidi controls, line separators, lone surrogates) as a `\\u`
escape, and no `##[` (GitHub's runner reads it as a command anywhere in a line), with the same
JSON value; what the console prints of it, it makes safe itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ruledrift.boundary.files import report_path_problem, shown, write_atomic
from ruledrift.data import canonical_json
from ruledrift.errors import ExitCode, RuleDriftError, UsageError
from ruledrift.text import cut_text, terminal_safe

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "ImportedTool",
    "ToolsError",
    "ToolsImportOutcome",
    "ToolsImportRequest",
    "serve_tools",
    "shown_name",
    "tools_block",
    "tools_import",
    "tools_json",
]

DEFAULT_TIMEOUT_S = 60.0  # a server started by `npx`/`uvx` may first download itself
MAX_SCHEMA_CHARS = 100_000  # one tool's input schema, as compact JSON
MAX_DESCRIPTION_CHARS = 10_000  # one tool's description
MAX_SUITE_TOOLS = 128  # as the suite's schema allows
STDERR_SHOWN_CHARS = 1_000  # of a server's stderr, in an error message
NAME_SHOWN_CHARS = 80  # of a tool's name, in a message
SUITE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # the suite schema's toolName
RESERVED_NAMES = frozenset({"auto", "none", "required"})  # toolChoice words
PLACEHOLDER = "not mocked yet: replace this error with the tool's mock (result, error or results)"
DESTRUCTIVE = "the MCP server marks this tool destructive (destructiveHint)"
# In JSON text, these only occur inside strings: each is written as its \u escape.
_INVISIBLE = re.compile(
    "[\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class ToolsError(RuleDriftError):
    """An MCP server could not be run or read, or the bridge could not reach its session (exit
    3: nothing was imported or served). The message is worded from RuleDrift's side; `stderr`
    is the end of what the server wrote there (hostile: made safe where it is shown)."""

    exit_code = ExitCode.RUN_ERROR

    def __init__(self, message: str, stderr: str = "") -> None:
        shown_stderr = cut_text(stderr.strip()[-STDERR_SHOWN_CHARS:], STDERR_SHOWN_CHARS)
        if shown_stderr:
            message = f"{message}\nthe server's stderr ended with:\n{shown_stderr}"
        super().__init__(message)
        self.stderr = stderr


@dataclass(frozen=True)
class ToolsImportRequest:
    """`command`: the MCP server program and its arguments (run with this environment, over
    stdio). `output`: the file to write (None: the outcome's text goes to stdout), replaced only
    with `force`. `timeout_s`: for the whole exchange, from the start to the last page."""

    command: tuple[str, ...]
    output: Path | None = None
    force: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class ImportedTool:
    """One tool of the draft: its entry of the `tools` block, and what the server said of it."""

    entry: Mapping[str, Any]  # name, description, parameters, error: in this order
    destructive: bool  # `annotations.destructiveHint` is true
    hinted: bool  # the server gave any of the behaviour hints (readOnly, destructive, …)


@dataclass(frozen=True)
class ToolsImportOutcome:
    text: str  # the `tools` block as JSON text, ending with a line end
    tools: tuple[ImportedTool, ...]
    warnings: tuple[str, ...]  # safe for a terminal
    output: Path | None  # where `text` was written; None: nowhere yet (stdout is the console's)

    @property
    def destructive(self) -> tuple[str, ...]:
        """The names of the tools the server marks destructive."""
        return tuple(tool.entry["name"] for tool in self.tools if tool.destructive)


def tools_import(request: ToolsImportRequest) -> ToolsImportOutcome:
    """List the server's tools, draft the block, write it to `request.output` if given. Raises
    UsageError (no command, an output that exists or cannot be written) or ToolsError."""
    if not request.command:
        raise UsageError("give the MCP server's command after --: tools import --mcp -- COMMAND…")
    if request.output is not None:
        _check_output(request.output, request.force)
    listed = asyncio.run(_listed(request))
    try:
        tools, warnings = tools_block(listed)
    except ToolsError as error:
        raise ToolsError(f"{_program(request.command)}: {error}") from None
    text = tools_json(tools)
    if request.output is not None:
        write_atomic(request.output, text.encode("utf-8"))
    return ToolsImportOutcome(text, tools, warnings, request.output)


async def _listed(request: ToolsImportRequest) -> tuple[dict[str, Any], ...]:
    from ruledrift.boundary.mcp_stdio import ServerFailed, list_stdio_tools

    try:
        return await list_stdio_tools(request.command, timeout_s=request.timeout_s)
    except ServerFailed as failed:
        raise ToolsError(f"{_program(request.command)}: {failed}", failed.stderr) from None


def _program(command: Sequence[str]) -> str:
    return cut_text(terminal_safe(" ".join(command)), 200)


def _check_output(output: Path, force: bool) -> None:
    if os.path.lexists(output) and not force:
        raise UsageError(
            f"{shown(output)} exists: pass --force to replace it, or give another path with -o"
        )
    problem = report_path_problem(output)
    if problem:
        raise UsageError(f"cannot write {shown(output)}: {problem}")


# --- the draft: pure ---------------------------------------------------------------------------


def tools_block(
    listed: Sequence[Mapping[str, Any]],
) -> tuple[tuple[ImportedTool, ...], tuple[str, ...]]:
    """The draft's tools from a server's tool list (each tool as the JSON object it sent), and
    warnings about what `ruledrift validate` will refuse. Raises ToolsError for a list that
    cannot become a block (no tools, a name that is no string, a schema that is no object or
    too big)."""
    if not listed:
        raise ToolsError("the server lists no tools")
    tools = tuple(_imported(index, tool) for index, tool in enumerate(listed))
    return tools, _warnings(tools)


def _imported(index: int, tool: Mapping[str, Any]) -> ImportedTool:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ToolsError(f"tool {index + 1} of the server's list has no name")
    description = tool.get("description")
    description = description if isinstance(description, str) else ""
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise ToolsError(
            f"the description of {shown_name(name)} has {len(description):,} characters; a tool's "
            f"description may have at most {MAX_DESCRIPTION_CHARS:,} here"
        )
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict):
        raise ToolsError(f"the input schema of {shown_name(name)} is not a JSON object")
    size = len(canonical_json(schema))
    if size > MAX_SCHEMA_CHARS:
        raise ToolsError(
            f"the input schema of {shown_name(name)} has {size:,} characters of JSON; a tool's "
            f"schema may have at most {MAX_SCHEMA_CHARS:,} here"
        )
    hints = tool.get("annotations")
    hints = hints if isinstance(hints, dict) else {}
    destructive = hints.get("destructiveHint") is True
    placeholder = f"{PLACEHOLDER}; {DESTRUCTIVE}" if destructive else PLACEHOLDER
    entry = {"name": name, "description": description, "parameters": schema, "error": placeholder}
    hinted = any(key.endswith("Hint") for key in hints)
    return ImportedTool(entry, destructive, hinted)


def shown_name(name: str) -> str:
    """A tool's name in a message: quoted, safe for a terminal, cut."""
    return cut_text(terminal_safe(json.dumps(name, ensure_ascii=False)), NAME_SHOWN_CHARS)


def _warnings(tools: Sequence[ImportedTool]) -> tuple[str, ...]:
    warnings: list[str] = []
    names = [tool.entry["name"] for tool in tools]
    unique = list(dict.fromkeys(names))
    bad = [n for n in unique if not SUITE_NAME.fullmatch(n) or n in RESERVED_NAMES]
    if bad:
        warnings.append(
            f"rename {_names(bad)}: a suite's tool names are 1 to 64 letters, digits, "
            "underscores and hyphens, and not auto, none or required (the agent then gets the "
            "new names from RuleDrift's MCP mock server)"
        )
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        warnings.append(f"the server lists {_names(twice)} more than once: keep one of each")
    if len(tools) > MAX_SUITE_TOOLS:
        warnings.append(
            f"the server lists {len(tools)} tools; a suite offers at most {MAX_SUITE_TOOLS}: "
            "keep the ones the rules are about"
        )
    return tuple(warnings)


def _names(names: Sequence[str]) -> str:
    shown_names = ", ".join(shown_name(n) for n in names[:10])
    return shown_names + (f" and {len(names) - 10} more" if len(names) > 10 else "")


def tools_json(tools: Sequence[ImportedTool]) -> str:
    """`{"tools": [...]}` as JSON text: two-space indent, each tool's keys in a fixed order (the
    schema's own keys as the server sent them), invisible characters escaped."""
    text = json.dumps({"tools": [tool.entry for tool in tools]}, ensure_ascii=False, indent=2)
    text = _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text.replace("##[", "#\\u0023[") + "\n"


# --- the stdio bridge ------------------------------------------------------------------------


def serve_tools(url: str) -> None:
    """Serve the MCP session at `url` (RuleDrift's mock server, on loopback) over stdin and
    stdout until stdin closes. Raises UsageError for a URL that is not such a session's, and
    ToolsError when the session cannot be reached."""
    _check_session_url(url)
    from ruledrift.boundary.mcp_stdio import BridgeFailed, bridge

    try:
        asyncio.run(bridge(url))
    except BridgeFailed as failed:
        raise ToolsError(str(failed)) from None


def _check_session_url(url: str) -> None:
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if (
        parts is None
        or parts.scheme != "http"
        or parts.hostname not in _LOOPBACK
        or port is None
        or not parts.path.startswith("/mcp/")
    ):
        raise UsageError(
            f"--url {cut_text(terminal_safe(url), 200)}: expected the URL of a session of "
            "RuleDrift's MCP mock server, http://127.0.0.1:PORT/mcp/TOKEN"
        )
