"""Pull progress for the terminal: a bar per layer redrawn in place on a TTY, plain lines (no
escape codes) in a log. Each status change ("verifying sha256 digest", "success") is a line."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ruledrift.text import terminal_safe

if TYPE_CHECKING:
    from ruledrift.ollama.api import PullProgress

REDRAW_S = 0.1  # a TTY bar is redrawn at most ten times a second
PLAIN_EVERY_S = 5.0  # a plain line per unfinished layer at least this often...
PLAIN_STEP = 10  # ...and at each 10 %
_BAR = 24


class PullProgressPrinter:
    """The `on_progress` callback of a pull. Call `close()` when the pull ends, also on failure."""

    def __init__(
        self, stream: TextIO, tty: bool, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._stream = stream
        self._tty = tty
        self._clock = clock
        self._status = ""  # the last status line written
        self._layer: str | None = None  # TTY: the layer whose bar is on the open line
        self._drawn = -float("inf")  # TTY: when the bar was last drawn
        self._pending: PullProgress | None = None  # TTY: the bar's latest state, not yet drawn
        self._shown: dict[str, tuple[float, int]] = {}  # plain: layer → (when, percent) printed

    def __call__(self, event: PullProgress) -> None:
        if event.digest and event.total and event.total > 0:
            (self._bar if self._tty else self._plain)(event, event.digest, event.total)
            return
        status = terminal_safe(event.status)
        if status and status != self._status:
            self._end_line()
            self._status = status
            self._write(status + "\n")

    def close(self) -> None:
        self._end_line()

    def _bar(self, event: PullProgress, layer: str, total: int) -> None:
        if layer != self._layer:
            self._end_line()
            self._layer = layer
        elif self._clock() - self._drawn < REDRAW_S:
            self._pending = event  # drawn later, at the latest when the line ends
            return
        self._draw(event, total)

    def _draw(self, event: PullProgress, total: int) -> None:
        self._drawn = self._clock()
        self._pending = None
        filled = _BAR * _done(event, total) // total
        bar = "█" * filled + "░" * (_BAR - filled)
        self._write(f"\r\x1b[2K{self._line(event, total, f' ▕{bar}▏')}")

    def _plain(self, event: PullProgress, layer: str, total: int) -> None:
        now = self._clock()
        percent = 100 * _done(event, total) // total
        when, shown = self._shown.get(layer, (-float("inf"), -1))
        moved = percent // PLAIN_STEP != shown // PLAIN_STEP
        if not moved and (now - when < PLAIN_EVERY_S or percent == 100):
            return
        self._shown[layer] = (now, percent)
        self._write(self._line(event, total, "") + "\n")

    def _line(self, event: PullProgress, total: int, bar: str) -> str:
        self._status = terminal_safe(event.status)
        completed = _done(event, total)
        return (
            f"{self._status} {100 * completed // total:3d}%{bar} "
            f"{human_bytes(completed)}/{human_bytes(total)}"
        )

    def _end_line(self) -> None:
        if self._layer is not None:
            if self._pending and self._pending.total:
                self._draw(self._pending, self._pending.total)
            self._write("\n")
            self._layer = None

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()


def _done(event: PullProgress, total: int) -> int:
    return max(0, min(event.completed or 0, total))


def human_bytes(count: int) -> str:
    """Decimal units, as Ollama prints them: 523 B, 1.2 MB, 1.1 GB."""
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            return f"{count} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")
