"""`import`: an exported conversation written as a history file a scenario can name
(`suite.importing` converts it; this reads the export and writes the file)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ruledrift.boundary.files import (
    FileTooBig,
    UnreadableFile,
    read_regular_file,
    report_path_problem,
    shown,
    write_atomic,
)
from ruledrift.errors import ConfigError, ConfigIssue, UsageError
from ruledrift.suite.history import MAX_HISTORY_BYTES
from ruledrift.suite.importing import MAX_IMPORT_BYTES, convert

HISTORY_SUFFIX = ".history.jsonl"
_WHAT = "expected an exported conversation (JSON or JSONL)"


@dataclass(frozen=True)
class ImportRequest:
    """Convert `source`; write to `output` (None: beside it, `NAME.history.jsonl`), replacing
    an existing file only with `force`."""

    source: Path
    output: Path | None = None
    force: bool = False


@dataclass(frozen=True)
class ImportOutcome:
    output: Path
    messages: int
    dropped: int  # system and developer messages left out


def default_output(source: Path) -> Path:
    """`chat.json` → `chat.history.jsonl`, beside it."""
    return source.with_name(source.name.split(".", 1)[0] + HISTORY_SUFFIX)


def import_history(request: ImportRequest) -> ImportOutcome:
    """Read, convert and write; raises ConfigError (a problem in the export, located),
    UsageError (the output exists, or cannot be written) or ReportError (the write failed)."""
    output = request.output or default_output(request.source)
    _check_output(request, output)
    imported = convert(str(request.source), _read(request.source))
    if len(imported.data) > MAX_HISTORY_BYTES:
        raise UsageError(
            f"the history would be {len(imported.data):,} bytes; a history may be at most "
            f"{MAX_HISTORY_BYTES:,} bytes (16 MiB): export a shorter part of the conversation"
        )
    write_atomic(output, imported.data)
    return ImportOutcome(output, imported.messages, imported.dropped)


def _read(source: Path) -> bytes:
    try:
        return read_regular_file(source, MAX_IMPORT_BYTES, what=_WHAT)
    except FileTooBig as error:
        message = (
            f"is {error.size}; an export may be at most 64 MiB ({MAX_IMPORT_BYTES:,} bytes): "
            "export one conversation"
        )
        raise ConfigError([ConfigIssue(str(source), 1, 1, "", message)]) from None
    except UnreadableFile as error:
        raise ConfigError([ConfigIssue(str(source), 1, 1, "", error.problem)]) from None


def _check_output(request: ImportRequest, output: Path) -> None:
    """Nothing a user wrote is lost: an existing file only with `force`, never the source."""
    if os.path.lexists(output):
        if os.path.exists(request.source) and os.path.samefile(output, request.source):
            raise UsageError(f"{shown(output)} is the export itself: give another output path")
        if not request.force:
            raise UsageError(
                f"{shown(output)} exists: pass --force to replace it, or give another path with -o"
            )
    problem = report_path_problem(output)
    if problem:
        raise UsageError(f"cannot write {shown(output)}: {problem}")
