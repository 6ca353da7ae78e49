"""The run's progress line on a TTY: model calls and probes done, redrawn in place."""

from __future__ import annotations

import time
from typing import TextIO

from ruledrift.data import ProbeResult, Scenario


class Progress:
    """A one-line progress display for a TTY, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, total_calls: int, total_probes: int) -> None:
        self._stream = stream
        self._total_calls = total_calls
        self._total_probes = total_probes
        self._calls = 0
        self._probes = 0
        self._bad = 0
        self._drawn = 0.0

    def call_finished(self, scenario: Scenario) -> None:
        self._calls += 1
        self._draw()

    def probe_finished(self, scenario: Scenario, result: ProbeResult) -> None:
        self._probes += 1
        self._bad += result.status != "passed"
        self._draw()

    def _draw(self) -> None:
        now = time.monotonic()
        if now - self._drawn < 0.1 and self._calls < self._total_calls:
            return
        self._drawn = now
        self._stream.write(
            f"\r\x1b[2K{self._calls}/{self._total_calls} model calls · "
            f"{self._probes}/{self._total_probes} probes · {self._bad} not passed"
        )
        self._stream.flush()

    def clear(self) -> None:
        self._stream.write("\r\x1b[2K")
        self._stream.flush()
