"""The process's stdout and stderr as RuleDrift writes to them.

- Never a crash on what the stream cannot encode (`PYTHONIOENCODING=ascii`, a lone surrogate):
  such characters are written as backslash escapes.
- On a GitHub Actions runner, no workflow command but RuleDrift's own. The runner reads commands
  from every line of stdout and stderr, and RuleDrift prints text from suites (which may come
  from a pull request), models and servers: the header, configuration errors, error messages,
  pull progress, the report. While `protected_streams` is active, every line written to
  `sys.stdout` and `sys.stderr` is made inert (`text.inert_in_github_log`); RuleDrift's own
  annotations go through `command`, the only way past.
"""

from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator, Mapping
from typing import Any, TextIO, cast

from ruledrift.reports.workflow_commands import enabled
from ruledrift.text import inert_in_github_log


class CommandFreeStream:
    """A text stream that writes whole lines to `raw`, each made inert; a line still open waits
    for its end (or `end_line`). Anything else (`isatty`, `fileno`, `encoding`) is `raw`'s."""

    def __init__(self, raw: TextIO) -> None:
        self._raw = raw
        self._open_line = ""

    def write(self, text: str) -> int:
        pending = self._open_line + text
        end = max(pending.rfind("\n"), pending.rfind("\r"))
        if end >= 0:
            self._raw.write(inert_in_github_log(pending[: end + 1]))
        self._open_line = pending[end + 1 :]
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._raw.flush()

    def end_line(self) -> None:
        """Write the open line, if any, with a line end."""
        if self._open_line:
            self._raw.write(inert_in_github_log(self._open_line) + "\n")
            self._open_line = ""

    def command(self, line: str) -> None:
        """One of RuleDrift's own workflow commands, written as it is, on a line of its own."""
        self.end_line()
        self._raw.write(line + "\n")
        self._raw.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def command(line: str, out: TextIO | None = None) -> None:
    """Write RuleDrift's own workflow command `line` (built by `workflow_commands`, so its text
    is escaped) to `out` (default stdout), past the protection."""
    stream = sys.stdout if out is None else out
    if isinstance(stream, CommandFreeStream):
        stream.command(line)
    else:
        stream.write(line + "\n")
        stream.flush()


def _escape_what_cannot_be_encoded(stream: TextIO) -> None:
    if isinstance(stream, io.TextIOWrapper):
        stream.reconfigure(errors="backslashreplace")


@contextlib.contextmanager
def protected_streams(environ: Mapping[str, str]) -> Iterator[None]:
    """For the duration: stdout and stderr never fail to encode, and on a GitHub runner carry no
    workflow command but the ones written with `command`."""
    for stream in (sys.stdout, sys.stderr):
        _escape_what_cannot_be_encoded(stream)
    if not enabled(environ) or isinstance(sys.stdout, CommandFreeStream):
        yield
        return
    saved = sys.stdout, sys.stderr
    out, err = CommandFreeStream(sys.stdout), CommandFreeStream(sys.stderr)
    sys.stdout, sys.stderr = cast(TextIO, out), cast(TextIO, err)
    try:
        yield
    finally:
        for stream in (out, err):
            stream.end_line()
            stream.flush()
        sys.stdout, sys.stderr = saved
