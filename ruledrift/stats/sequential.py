"""Deciding, run by run, whether a rule still holds: Wald's sequential probability ratio test.

Each run of a probe passes or fails. The test weighs two hypotheses about the probe's pass rate p:

- H0, "the rule holds": p ≥ `holds_at` (default 95%);
- H1, "the rule has drifted": p ≤ `drifted_at` (default 80%).

After each run it computes the log-likelihood ratio of H1 to H0 for the failures so far,
`failures·ln((1−p1)/(1−p0)) + passes·ln(p1/p0)`, and stops with "drifted" once it reaches the
upper bound, with "holds" once it reaches the lower bound, and otherwise runs again, up to
`max_runs`. A probe still between the bounds at `max_runs` is "inconclusive".

The error bounds, and how they are kept:

- a **false alarm** is a probe whose true pass rate is at least `holds_at` ending "drifted";
  over a suite of `probes` probes the chance of any false alarm is at most `alpha`, because each
  probe gets `alpha / probes` (Bonferroni, valid whatever the probes' dependence);
- a **miss** is a probe whose true pass rate is at most `drifted_at` ending "holds"; each such
  probe is missed with probability at most `beta`;
- "inconclusive" is neither: it is not a verdict, it is reported on its own with its rate.

Wald's bounds ln((1−β)/α) and ln(β/(1−α)) keep the errors only approximately, and the cap
changes them, so the design computes the exact error probabilities of the truncated test (a
dynamic programme over runs and failures, `operating_characteristic`) and moves a bound outward,
one attainable step at a time, until both exact errors are within their limits. The bounds are
monotone in the number of failures, so the exact errors at `holds_at` and `drifted_at` bound the
errors at every rate above and below them.

`decide` is a pure function of the counts. It assumes the caller stops at the first verdict:
running on after "holds" or "drifted" and asking again voids the guarantees.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ruledrift.stats.intervals import binomial_pmf, pass_rate

__all__ = [
    "Decision",
    "FixedDesign",
    "OperatingCharacteristic",
    "SequentialDesign",
    "Verdict",
    "decide",
    "fixed_design",
    "operating_characteristic",
    "zero_failure_runs",
]

Verdict = Literal["holds", "drifted", "undecided", "inconclusive"]

# A log-likelihood ratio within this of a bound counts as reaching it (Wald's "≥"), so that exact
# ties, such as two failures in two runs against ln 16 for the defaults, do not hang on rounding.
_TIE = 1e-9


def _percent(x: float) -> str:
    return f"{x * 100:.3g}%"


def _check_rates(holds_at: float, drifted_at: float, alpha: float, beta: float) -> None:
    if not 0 < drifted_at < holds_at < 1:
        raise ValueError(f"need 0 < drifted_at < holds_at < 1, not {drifted_at} and {holds_at}")
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError(f"alpha and beta must be strictly between 0 and 1, not {alpha}, {beta}")


@dataclass(frozen=True)
class SequentialDesign:
    """A truncated sequential test of `holds_at` against `drifted_at` for a suite of `probes`.

    `alpha` is the suite-wide false-alarm bound (each probe gets `alpha / probes`), `beta` the
    per-probe miss bound, `max_runs` the cap after which a probe is "inconclusive". The two
    log-likelihood-ratio bounds are computed from these and checked exactly on construction.
    """

    holds_at: float = 0.95
    drifted_at: float = 0.80
    alpha: float = 0.05
    beta: float = 0.20
    max_runs: int = 60
    probes: int = 1
    drift_bound: float = field(init=False)
    hold_bound: float = field(init=False)
    _drifted_from: tuple[int, ...] = field(init=False, repr=False)
    _holds_up_to: tuple[int, ...] = field(init=False, repr=False)

    @classmethod
    def for_suite(
        cls,
        probes: int,
        holds_at: float = 0.95,
        drifted_at: float = 0.80,
        alpha: float = 0.05,
        beta: float = 0.20,
        max_runs: int = 60,
    ) -> SequentialDesign:
        """The design for a suite of `probes` probes with a suite-wide false-alarm bound."""
        return cls(holds_at, drifted_at, alpha, beta, max_runs, probes)

    def __post_init__(self) -> None:
        _check_rates(self.holds_at, self.drifted_at, self.alpha, self.beta)
        if self.max_runs < 1 or self.probes < 1:
            raise ValueError(
                f"need max_runs >= 1 and probes >= 1, not {self.max_runs}, {self.probes}"
            )
        upper = math.log((1 - self.beta) / self.probe_alpha)
        lower = math.log(self.beta / (1 - self.probe_alpha))
        while True:
            self._set_bounds(upper, lower)
            if operating_characteristic(self, self.holds_at).drifted > self.probe_alpha:
                upper = self._next_drift_bound()
            elif operating_characteristic(self, self.drifted_at).holds > self.beta:
                lower = self._next_hold_bound()
            else:
                return

    @property
    def probe_alpha(self) -> float:
        """The false-alarm bound of one probe: `alpha / probes`."""
        return self.alpha / self.probes

    def log_ratio(self, failures: int, runs: int) -> float:
        """The log-likelihood ratio of "drifted" to "holds" after `failures` in `runs`."""
        per_failure = math.log((1 - self.drifted_at) / (1 - self.holds_at))
        per_pass = math.log(self.drifted_at / self.holds_at)
        return failures * per_failure + (runs - failures) * per_pass

    def drifted_from(self, runs: int) -> int:
        """The fewest failures in `runs` runs that decide "drifted" (more than `runs`: none do)."""
        if runs <= self.max_runs:
            return self._drifted_from[runs]
        return self._drifted_min(runs)

    def holds_up_to(self, runs: int) -> int:
        """The most failures in `runs` runs that still decide "holds" (−1: no count does)."""
        if runs <= self.max_runs:
            return self._holds_up_to[runs]
        return self._holds_max(runs)

    def _set_bounds(self, upper: float, lower: float) -> None:
        object.__setattr__(self, "drift_bound", upper)
        object.__setattr__(self, "hold_bound", lower)
        runs = range(self.max_runs + 1)
        object.__setattr__(self, "_drifted_from", tuple(self._drifted_min(n) for n in runs))
        object.__setattr__(self, "_holds_up_to", tuple(self._holds_max(n) for n in runs))

    def _drifted_min(self, runs: int) -> int:
        slope = self.log_ratio(1, runs) - self.log_ratio(0, runs)
        failures = max(0, math.ceil((self.drift_bound - self.log_ratio(0, runs)) / slope) - 1)
        while self.log_ratio(failures, runs) < self.drift_bound - _TIE:
            failures += 1
        return failures

    def _holds_max(self, runs: int) -> int:
        failures = self._drifted_min(runs)
        while failures >= 0 and self.log_ratio(failures, runs) > self.hold_bound + _TIE:
            failures -= 1
        return failures

    def _next_drift_bound(self) -> float:
        """The smallest bound above the current one that removes a "drifted" outcome."""
        reachable = [n for n in range(1, self.max_runs + 1) if self._drifted_from[n] <= n]
        edge = min(self.log_ratio(self._drifted_from[n], n) for n in reachable)
        return edge + 2 * _TIE

    def _next_hold_bound(self) -> float:
        """The largest bound below the current one that removes a "holds" outcome."""
        reachable = [n for n in range(1, self.max_runs + 1) if self._holds_up_to[n] >= 0]
        edge = max(self.log_ratio(self._holds_up_to[n], n) for n in reachable)
        return edge - 2 * _TIE


@dataclass(frozen=True)
class OperatingCharacteristic:
    """The exact chances of each ending for a probe whose true pass rate is `pass_rate`."""

    pass_rate: float
    holds: float
    drifted: float
    inconclusive: float
    mean_runs: float


def operating_characteristic(design: SequentialDesign, pass_rate: float) -> OperatingCharacteristic:
    """How `design` ends for a probe passing with probability `pass_rate`, computed exactly."""
    undecided = [1.0]  # undecided[f]: chance of f failures so far with no verdict yet
    holds = drifted = mean_runs = 0.0
    for runs in range(1, design.max_runs + 1):
        step = [0.0] * (runs + 1)
        for failures, chance in enumerate(undecided):
            step[failures] += chance * pass_rate
            step[failures + 1] += chance * (1 - pass_rate)
        for failures in range(runs + 1):
            if failures >= design.drifted_from(runs):
                drifted += step[failures]
            elif failures <= design.holds_up_to(runs):
                holds += step[failures]
            else:
                continue
            mean_runs += runs * step[failures]
            step[failures] = 0.0
        undecided = step
    inconclusive = sum(undecided)
    mean_runs += design.max_runs * inconclusive
    return OperatingCharacteristic(pass_rate, holds, drifted, inconclusive, mean_runs)


@dataclass(frozen=True)
class Decision:
    """The verdict after `passes` of `runs` under `design`, and (on demand) a sentence why."""

    verdict: Verdict
    passes: int
    runs: int
    design: SequentialDesign = field(repr=False)

    @property
    def explanation(self) -> str:
        """What was observed, what it shows, and for an open verdict what would decide it."""
        return _explain(self.verdict, self.passes, self.runs, self.design)


def _passes_to_hold(failures: int, runs: int, design: SequentialDesign, cap: int) -> int | None:
    for more in range(1, cap - runs + 1):
        if failures <= design.holds_up_to(runs + more):
            return more
    return None


def _failures_to_drift(failures: int, runs: int, design: SequentialDesign, cap: int) -> int | None:
    for more in range(1, cap - runs + 1):
        if failures + more >= design.drifted_from(runs + more):
            return more
    return None


def _count(number: int, word: str) -> str:
    plural = "es" if word.endswith("s") else "s"
    return f"{number} {word}" if number == 1 else f"{number} {word}{plural}"


def _what_would_decide(failures: int, runs: int, design: SequentialDesign, cap: int) -> str:
    to_hold = _passes_to_hold(failures, runs, design, cap)
    to_drift = _failures_to_drift(failures, runs, design, cap)
    hold = (
        f"{_count(to_hold, 'more pass')} in a row would decide 'holds'"
        if to_hold is not None
        else f"'holds' is out of reach within {cap} runs"
    )
    drift = (
        f"{_count(to_drift, 'more failure')} in a row would decide 'drifted'"
        if to_drift is not None
        else f"'drifted' is out of reach within {cap} runs"
    )
    return f"{hold}, {drift}"


def _bounds_at(runs: int, design: SequentialDesign) -> str:
    most, fewest = design.holds_up_to(runs), design.drifted_from(runs)
    hold = (
        f"'holds' needed at most {_count(most, 'failure')}"
        if most >= 0
        else "'holds' needed more runs"
    )
    drift = f"'drifted' at least {fewest}" if fewest <= runs else "'drifted' more runs"
    return f"{hold} and {drift}"


def _verdict(failures: int, runs: int, design: SequentialDesign) -> Verdict:
    if failures >= design.drifted_from(runs):
        return "drifted"
    if failures <= design.holds_up_to(runs):
        return "holds"
    return "undecided" if runs < design.max_runs else "inconclusive"


def _explain(verdict: Verdict, passes: int, runs: int, design: SequentialDesign) -> str:
    failures = runs - passes
    holds, drifted = _percent(design.holds_at), _percent(design.drifted_at)
    observed = f"{failures} of {runs} runs failed" if runs else "no runs yet"
    if verdict == "drifted":
        return (
            f"drifted: {observed}, evidence enough that the pass rate is at most {drifted} "
            f"rather than at least {holds} (false alarms at most {_percent(design.probe_alpha)} "
            "for this probe)"
        )
    if verdict == "holds":
        return (
            f"holds: {observed}, evidence enough that the pass rate is at least {holds} "
            f"rather than at most {drifted} (a drifted rule is missed at most "
            f"{_percent(design.beta)} of the time)"
        )
    if verdict == "undecided":
        return (
            f"undecided: {observed}; {_what_would_decide(failures, runs, design, design.max_runs)}"
        )
    next_steps = _what_would_decide(failures, runs, design, 2 * design.max_runs)
    rate = pass_rate(passes, runs)
    return (
        f"inconclusive: {observed} and {runs} is the cap; {_bounds_at(runs, design)}. The pass "
        f"rate so far, {rate.rate:.1%} (95% interval {rate.low:.1%}–{rate.high:.1%}), does not "
        f"tell at least {holds} from at most {drifted}. To decide, plan a higher max_runs before "
        f"running (with these bounds {next_steps}) or a wider gap between holds_at and drifted_at"
    )


def decide(passes: int, runs: int, design: SequentialDesign) -> Decision:
    """The verdict after `passes` of `runs` under `design`; call after each run, stop at a verdict.

    "holds" and "drifted" are final; "undecided" asks for another run; "inconclusive" means the
    `max_runs` cap was reached between the bounds. The explanation says what would decide an
    undecided or inconclusive probe.
    """
    if not 0 <= passes <= runs <= design.max_runs:
        raise ValueError(
            f"need 0 <= passes <= runs <= max_runs ({design.max_runs}), not {passes} of {runs}"
        )
    verdict = _verdict(runs - passes, runs, design)
    return Decision(verdict, passes, runs, design)


@dataclass(frozen=True)
class FixedDesign:
    """A fixed number of `runs`, declaring "drifted" when failures reach `fail_at`.

    `false_alarm` is the exact chance of that at a pass rate of `holds_at`, `power` at
    `drifted_at`.
    """

    runs: int
    fail_at: int
    false_alarm: float
    power: float


def _failures_at_least(count: int, runs: int, failure_rate: float) -> float:
    return sum(binomial_pmf(k, runs, failure_rate) for k in range(count, runs + 1))


def fixed_design(
    holds_at: float = 0.95,
    drifted_at: float = 0.80,
    alpha: float = 0.05,
    beta: float = 0.20,
    max_runs: int = 5_000,
) -> FixedDesign:
    """The smallest exact one-sided binomial test of `holds_at` against `drifted_at`.

    For each number of runs the critical failure count is the smallest whose exact false-alarm
    chance is at most `alpha`; the first number of runs whose power then reaches `1 − beta` wins.
    (Exact power is saw-toothed in the number of runs, so a few more runs are not always enough.)
    """
    _check_rates(holds_at, drifted_at, alpha, beta)
    for runs in range(1, max_runs + 1):
        fail_at = 0
        while _failures_at_least(fail_at, runs, 1 - holds_at) > alpha:
            fail_at += 1
        power = _failures_at_least(fail_at, runs, 1 - drifted_at)
        if fail_at <= runs and power >= 1 - beta:
            false_alarm = _failures_at_least(fail_at, runs, 1 - holds_at)
            return FixedDesign(runs, fail_at, false_alarm, power)
    raise ValueError(f"no fixed design with at most {max_runs} runs reaches power {1 - beta}")


def zero_failure_runs(at_least: float = 0.95, confidence: float = 0.95) -> int:
    """How many runs, all passing, show a pass rate of at least `at_least` at `confidence`.

    The smallest n with `at_least`**n ≤ 1 − `confidence`: a rule passing at exactly `at_least`
    would come through n runs without a failure less often than 1 − `confidence` (59 for 95%/95%,
    the exact one-sided Clopper–Pearson bound; the "rule of three" approximates it as 3 / 0.05).
    """
    if not (0 < at_least < 1 and 0 < confidence < 1):
        raise ValueError("at_least and confidence must be strictly between 0 and 1")
    runs = max(1, math.floor(math.log(1 - confidence) / math.log(at_least)))
    while at_least**runs > 1 - confidence:
        runs += 1
    return runs
