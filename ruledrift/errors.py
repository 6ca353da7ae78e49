"""The errors RuleDrift raises, each carrying the exit code it becomes (in `cli.guarded`, the one
place where exceptions become exit codes)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ruledrift.text import terminal_safe

MAX_SHOWN_ISSUES = 100  # a configuration error prints these first; `issues` keeps every one


class ExitCode(enum.IntEnum):
    PASSED = 0  # every probe passed
    FAILED = 1  # one or more probes failed and the run completed
    USAGE = 2  # usage or configuration error: nothing ran
    RUN_ERROR = 3  # a turn or probe could not be run: the verdict is incomplete
    INTERNAL = 4  # a bug in RuleDrift
    REPORT_ERROR = 5  # every probe passed, but a report could not be written
    INTERRUPTED = 130  # Ctrl-C


EXIT_CODE_MEANINGS: dict[ExitCode, str] = {
    ExitCode.PASSED: "passed",
    ExitCode.FAILED: "a probe failed",
    ExitCode.USAGE: "usage or config error",
    ExitCode.RUN_ERROR: "a turn or probe could not be run",
    ExitCode.INTERNAL: "internal error",
    ExitCode.REPORT_ERROR: "passed, but a report could not be written",
    ExitCode.INTERRUPTED: "interrupted",
}


class ArgumentsExit(Exception):
    """The argument parser ended the command itself: `--help` shown (status 0), or a usage
    message it printed. `console.exits.guarded` returns `status`."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class RuleDriftError(Exception):
    """Base of every error RuleDrift reports without a traceback."""

    exit_code: ExitCode = ExitCode.INTERNAL


class UsageError(RuleDriftError):
    """A command line that cannot be carried out (exit 2)."""

    exit_code = ExitCode.USAGE


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in a configuration file, located by line, column and JSON pointer.

    The fields are as found (a pointer is made of the suite's own keys); `str()` is always
    exactly one line without control characters, so no key, value or path can forge a line."""

    file: str
    line: int
    column: int
    pointer: str
    message: str

    def __str__(self) -> str:
        file, pointer, message = (
            _one_line(part) for part in (self.file, self.pointer, self.message)
        )
        return f"{file}:{self.line}:{self.column}: {pointer or '/'}: {message}"


def _one_line(text: str) -> str:
    return terminal_safe(text).replace("\t", "\\t")


class ConfigError(RuleDriftError):
    """Every problem found while loading a configuration (exit 2). `issues` holds them all, in
    file order; `str()` shows the first MAX_SHOWN_ISSUES and how many more there are."""

    exit_code = ExitCode.USAGE

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = sorted(issues, key=lambda i: (i.line, i.column, i.pointer, i.message))
        shown = [str(issue) for issue in self.issues[:MAX_SHOWN_ISSUES]]
        more = len(self.issues) - len(shown)
        if more:
            shown.append(f"… and {more:,} more problem(s)")
        super().__init__("\n".join(shown))


class AdapterError(RuleDriftError):
    """A model call that produced no answer. The only exception an adapter raises."""

    exit_code = ExitCode.RUN_ERROR


class TargetConfigError(AdapterError):
    """A target that cannot run the suite as it is configured, found by its preflight
    (`Adapter.open`) before any call, e.g. a model without the `tools` capability for a suite that
    offers tools (exit 2: nothing ran, no report is written)."""

    exit_code = ExitCode.USAGE


class ReportError(RuleDriftError):
    """A report that could not be written (exit 2: the path the user gave is unusable)."""

    exit_code = ExitCode.USAGE
