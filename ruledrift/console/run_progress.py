"""The run's plan and progress as a person sees them: the header that states the plan, the
counter redrawn in place on a TTY, and plain progress lines for a log without one (a CI job).

Both count model calls and probe runs against the plan's totals. Under `--repeat N` a probe
runs N times, so the totals are N × the probes' calls and N × the probes; under `--repeat auto`
the totals are the most the run can take (every probe running to the cap), written `/≤`, so a
count never exceeds its stated total.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ruledrift import __version__, app
from ruledrift.data import ProbeResult, Scenario
from ruledrift.text import preview, terminal_safe

PROGRESS_EVERY = 60.0  # seconds between two plain progress lines


def plan_header(plan: app.RunPlan) -> str:
    """The suite, its target and what the run takes; under `--repeat auto` the model calls
    expected beside the most, and the assumption behind the expected number."""
    suite, adapter = plan.suite, plan.suite.adapter
    model = f", model {terminal_safe(adapter.model)}" if adapter.model else ""
    expected = plan.expected
    calls = f"{plan.model_calls} model call(s)"
    rounds = suite.rounds_per_turn
    if expected is not None and rounds > 1:
        calls = (
            f"about {expected.calls} turn(s) and probe(s) of 1 to {rounds} model call(s) each"
            f" (tool rounds), at most {plan.model_calls} model call(s)"
        )
    elif expected is not None:
        calls = f"about {expected.calls} model call(s), at most {plan.model_calls}"
    elif rounds > 1:
        calls = f"at most {calls} (each turn takes up to {rounds} tool round(s))"
    elif searching(plan):
        calls = f"at most {calls}"
    elif _has_controls(plan):
        calls = f"at most {calls} (a control is asked only after its probe passed)"
    probes = f"{plan.probes} probe(s)"
    if searching(plan):
        probes = f"at most {probes} (a search decides its depths as it goes)"
    lines = [
        f"RuleDrift {__version__}: suite {preview(repr(suite.name))} "
        f"({adapter.type} adapter{model})",
        f"{terminal_safe(str(suite.path))}: {len(plan.scenarios)} scenario(s), {probes}, {calls}",
    ]
    if expected is not None:
        lines.append(
            f"--repeat auto runs each probe until its verdict, at most {plan.runs} times: "
            f"about {expected.calls} calls if every probe passes "
            f"{_percent(expected.pass_rate)} of its runs (--holds-at), "
            f"{expected.never_failing} if no answer fails"
        )
    return "\n".join(lines)


def _has_controls(plan: app.RunPlan) -> bool:
    return any(probe.control is not None for s in plan.scenarios for probe in s.probes)


def searching(plan: app.RunPlan) -> bool:
    """Whether a scenario of the plan searches a breaking depth: its counts are then maxima."""
    return any(scenario.searches for scenario in plan.scenarios)


def _percent(rate: float) -> str:
    return f"{rate:.1%}".replace(".0%", "%")


@dataclass
class Counts:
    """What the run has done so far, against the plan."""

    plan: app.RunPlan
    calls: int = 0
    probe_runs: int = 0
    not_passed: int = 0
    scenarios: int = 0

    def text(self) -> str:
        """`41/66 model calls · 12/21 probes · 1 not passed`; with repeats `probe runs`, and
        under `--repeat auto` the totals as maxima (`/≤`)."""
        plan = self.plan
        upto = "/" if plan.expected is None and not searching(plan) else "/≤"
        calls_upto = "/≤" if _has_controls(plan) else upto  # a control only after a pass
        probes = "probes" if plan.runs == 1 and plan.expected is None else "probe runs"
        return (
            f"{self.calls}{calls_upto}{plan.model_calls} model calls · "
            f"{self.probe_runs}{upto}{plan.runs * plan.probes} {probes} · "
            f"{self.not_passed} not passed"
        )

    def probe_finished(self, result: ProbeResult) -> None:
        self.probe_runs += 1
        self.not_passed += result.status != "passed"


class Progress:
    """A one-line progress display for a TTY, redrawn at most ten times a second."""

    def __init__(self, stream: TextIO, counts: Counts) -> None:
        self._stream = stream
        self._counts = counts
        self._drawn = 0.0

    def call_finished(self, scenario: Scenario) -> None:
        self._draw()

    def probe_finished(self, scenario: Scenario, result: ProbeResult) -> None:
        self._draw()

    def _draw(self) -> None:
        now = time.monotonic()
        counts = self._counts
        if now - self._drawn < 0.1 and counts.calls < counts.plan.model_calls:
            return
        self._drawn = now
        self._stream.write(f"\r\x1b[2K{counts.text()}")
        self._stream.flush()

    def clear(self) -> None:
        self._stream.write("\r\x1b[2K")
        self._stream.flush()


class ProgressLog:
    """Plain progress lines for a log without a TTY: one every `every` seconds from a thread of
    its own (a model call may take minutes), and one when a scenario finishes. Each is one
    whole line written at once under `lock` (share it with anything else that writes to the
    stream), with no control characters: scenario ids go through `terminal_safe`."""

    def __init__(
        self,
        stream: TextIO,
        counts: Counts,
        every: float = PROGRESS_EVERY,
        lock: threading.Lock | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._counts = counts
        self._every = every
        self.lock = lock or threading.Lock()
        self._clock = clock
        self._started = clock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._tick, name="ruledrift-progress", daemon=True)
        self._thread.start()

    def _tick(self) -> None:
        while not self._stopped.wait(self._every):
            self.write()

    def scenario_finished(self, scenario: Scenario) -> None:
        self.write(f"scenario {terminal_safe(scenario.id)} finished · ")

    def write(self, event: str = "") -> None:
        """One line: the time since the start, `event`, the scenarios and counts so far."""
        counts = self._counts
        line = (
            f"ruledrift: progress {_elapsed(self._clock() - self._started)}: {event}"
            f"{counts.scenarios}/{len(counts.plan.scenarios)} scenarios · {counts.text()}\n"
        )
        with self.lock:
            self._stream.write(line)
            self._stream.flush()

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def _elapsed(seconds: float) -> str:
    """`45s`, `12m03s`, `1h02m03s`."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"
