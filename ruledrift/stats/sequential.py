"""Deciding, run by run, whether a rule still holds: a truncated sequential probability ratio test
that decides every probe by its cap.

Each run of a probe passes or fails. The test weighs two hypotheses about the probe's pass rate p:

- H0, "the rule holds": p ≥ `holds_at` (default 95%);
- H1, "the rule has drifted": p ≤ `drifted_at` (default 80%).

After each run it computes the log-likelihood ratio of H1 to H0 for the failures so far,
`failures·ln((1−p1)/(1−p0)) + passes·ln(p1/p0)`, and stops with "drifted" once it reaches the
upper bound, with "holds" once it reaches the lower bound (Wald 1945), and otherwise runs again.
At the cap the test decides all the same: at most `cap_holds_up_to` failures "holds", more
"drifted" (a truncated SPRT). A probe whose failures already exceed that count ends "drifted" at
once, since no run left can change the verdict.

The error bounds, and how they are kept:

- a **false alarm** is a probe whose true pass rate is at least `holds_at` ending "drifted";
  over a suite of `probes` probes the chance of any false alarm is at most `alpha`, because each
  probe gets `alpha / probes` (Bonferroni: valid whatever the probes' dependence);
- a **miss** is a probe whose true pass rate is at most `drifted_at` ending "holds"; each such
  probe is missed with probability at most `beta`.

Both are computed exactly, with the cap and its decision, by a dynamic programme over runs and
failures (`operating_characteristic`). With `max_runs` None (the default) the design searches the
smallest cap at which some count of failures, as the decision at the cap, keeps both exact
errors within their bounds, and takes the count that leaves the most room under both (relative
to each bound). With a `max_runs` given, the count is sought at that cap; where none keeps both
bounds, a probe still undecided at the cap is "inconclusive" (no verdict) instead. Where Wald's
bounds alone would break an error bound, a bound is moved outward one attainable step at a
time. The verdict regions are monotone in the number of failures, so the exact errors at
`holds_at` and `drifted_at` bound the errors at every rate above and below them.

`decide` is a pure function of the counts. It assumes the caller stops at the first verdict:
running on after "holds" or "drifted" and asking again voids the guarantees. Runs that could not
be made (`errors`) are counted against the verdict they could change: as failures for "holds",
as passes for "drifted".
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
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

Verdict = Literal["holds", "drifted", "undecided", "inconclusive", "incomplete"]

# A log-likelihood ratio within this of a bound counts as reaching it (Wald's "≥"), so that exact
# ties, such as two failures in two runs against ln 16 for the defaults, do not hang on rounding.
_TIE = 1e-9
# The longest cap the search for one considers (a suite of 10,000 probes needs about 140 runs).
SEARCH_LIMIT = 5_000


def _percent(x: float) -> str:
    return f"{x * 100:.3g}%"


def _check_rates(holds_at: float, drifted_at: float, alpha: float, beta: float) -> None:
    if not 0 < drifted_at < holds_at < 1:
        raise ValueError(f"need 0 < drifted_at < holds_at < 1, not {drifted_at} and {holds_at}")
    if not (0 < alpha < 1 and 0 < beta < 1):
        raise ValueError(f"alpha and beta must be strictly between 0 and 1, not {alpha}, {beta}")


def _advance(undecided: Sequence[float], pass_rate: float, correlation: float = 0.0) -> list[float]:
    """The chances of each failure count after one more run, from those before it.

    With a `correlation` ρ > 0 between the runs of a probe, the probe's pass rate is itself
    drawn once, from a beta distribution with mean `pass_rate` (the beta-binomial model, whose
    intra-class correlation is ρ): after n runs with f failures the next run passes with chance
    (a + n − f) / (a + b + n), a = pass_rate·(1 − ρ)/ρ, b = (1 − pass_rate)·(1 − ρ)/ρ.
    """
    runs = len(undecided) - 1
    step = [0.0] * (len(undecided) + 1)
    for failures, chance in enumerate(undecided):
        passing = pass_rate
        if correlation and 0 < pass_rate < 1:
            weight = (1 - correlation) / correlation
            passing = (pass_rate * weight + runs - failures) / (weight + runs)
        step[failures] += chance * passing
        step[failures + 1] += chance * (1 - passing)
    return step


@dataclass(frozen=True)
class SequentialDesign:
    """A truncated sequential test of `holds_at` against `drifted_at` for a suite of `probes`.

    `alpha` is the suite-wide false-alarm bound (each probe gets `alpha / probes`), `beta` the
    per-probe miss bound. `max_runs` is the cap; None (the default) derives the smallest cap at
    which the test decides every probe by the cap within both bounds. After construction, `cap`
    is the cap in force and `cap_holds_up_to` the most failures that decide "holds" at the cap
    (more decide "drifted"), or None when no count keeps both bounds at a given `max_runs`:
    a probe undecided at the cap is then "inconclusive".
    """

    holds_at: float = 0.95
    drifted_at: float = 0.80
    alpha: float = 0.05
    beta: float = 0.20
    max_runs: int | None = None
    probes: int = 1
    drift_bound: float = field(init=False)
    hold_bound: float = field(init=False)
    cap: int = field(init=False)
    cap_holds_up_to: int | None = field(init=False)
    _drifted_from: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _holds_up_to: tuple[int, ...] = field(init=False, repr=False, compare=False)

    @classmethod
    def for_suite(
        cls,
        probes: int,
        holds_at: float = 0.95,
        drifted_at: float = 0.80,
        alpha: float = 0.05,
        beta: float = 0.20,
        max_runs: int | None = None,
    ) -> SequentialDesign:
        """The design for a suite of `probes` probes with a suite-wide false-alarm bound."""
        return cls(holds_at, drifted_at, alpha, beta, max_runs, probes)

    def __post_init__(self) -> None:
        _check_rates(self.holds_at, self.drifted_at, self.alpha, self.beta)
        if (self.max_runs is not None and self.max_runs < 1) or self.probes < 1:
            raise ValueError(
                f"need max_runs >= 1 and probes >= 1, not {self.max_runs}, {self.probes}"
            )
        upper = math.log((1 - self.beta) / self.probe_alpha)
        lower = math.log(self.beta / (1 - self.probe_alpha))
        if self.max_runs is None:
            self._derive(upper, lower)
        else:
            self._keep_at(self.max_runs, upper, lower)

    # --- construction ---------------------------------------------------------------------------

    def _set(self, upper: float, lower: float, cap: int, at_cap: int | None) -> None:
        object.__setattr__(self, "drift_bound", upper)
        object.__setattr__(self, "hold_bound", lower)
        object.__setattr__(self, "cap", cap)
        object.__setattr__(self, "cap_holds_up_to", at_cap)
        runs = range(cap + 1)
        drifted = [self.sprt_drifted(n) for n in runs]
        holds = [self.sprt_holds(n) for n in runs]
        if at_cap is not None:
            drifted = [min(d, at_cap + 1) for d in drifted]  # beyond the cap's count: decided
            drifted[cap], holds[cap] = at_cap + 1, at_cap
        object.__setattr__(self, "_drifted_from", tuple(drifted))
        object.__setattr__(self, "_holds_up_to", tuple(holds))

    def _derive(self, upper: float, lower: float) -> None:
        """The smallest cap with a decision at the cap that keeps both exact error bounds."""
        while True:
            self._set(upper, lower, 0, None)
            outcome, runs, count = next(self._caps(SEARCH_LIMIT))
            if outcome == "drift":
                upper = self._next_drift_bound(runs)
            elif outcome == "hold":
                lower = self._next_hold_bound(runs)
            elif outcome == "none":
                raise ValueError(f"no cap up to {SEARCH_LIMIT} runs decides within both bounds")
            else:
                self._set(upper, lower, runs, count)
                return

    def _keep_at(self, most: int, upper: float, lower: float) -> None:
        """At most `most` runs: the largest cap up to `most` with a decision at the cap that
        keeps both exact error bounds; where none does, the cap `most` and bounds that keep both
        errors with "inconclusive" at the cap."""
        self._set(upper, lower, 0, None)
        found = [(runs, count) for outcome, runs, count in self._caps(most) if outcome == "cap"]
        if found:
            self._set(upper, lower, *found[-1])
            return
        while True:
            self._set(upper, lower, most, None)
            if operating_characteristic(self, self.holds_at).drifted > self.probe_alpha:
                upper = self._next_drift_bound(most)
            elif operating_characteristic(self, self.drifted_at).holds > self.beta:
                lower = self._next_hold_bound(most)
            else:
                return

    def _caps(
        self, limit: int
    ) -> Iterator[tuple[Literal["cap", "drift", "hold", "none"], int, int]]:
        """One pass of the exact dynamic programme at `holds_at` and `drifted_at`, with the
        current bounds and no cap: ("cap", runs, count) for each cap up to `limit` at which
        deciding at the cap (at most `count` failures "holds", more "drifted") keeps both
        errors, then ("drift" or "hold", runs, 0) when the bounds alone break that error by
        `runs` (move that bound), or ("none", limit, 0)."""
        alarm, miss = self.probe_alpha, self.beta
        at_holds, at_drifted = [1.0], [1.0]
        alarms = misses = 0.0  # decided by the bounds so far: "drifted" at holds_at, "holds" at
        for runs in range(1, limit + 1):
            at_holds = _advance(at_holds, self.holds_at)
            at_drifted = _advance(at_drifted, self.drifted_at)
            lowest, highest = self.sprt_holds(runs), self.sprt_drifted(runs)
            counts = range(lowest, highest)
            best = _best_count(at_holds, at_drifted, alarms, misses, counts, alarm, miss)
            if best is not None:
                yield "cap", runs, best
            alarms += math.fsum(at_holds[highest:])
            misses += math.fsum(at_drifted[: lowest + 1])
            for failures in [*range(lowest + 1), *range(highest, runs + 1)]:
                at_holds[failures] = at_drifted[failures] = 0.0
            if alarms > alarm:
                yield "drift", runs, 0
                return
            if misses > miss:
                yield "hold", runs, 0
                return
        yield "none", limit, 0

    def sprt_drifted(self, runs: int) -> int:
        """Wald's test alone: the fewest failures in `runs` whose log-likelihood ratio reaches
        the upper bound (the cap's decision aside)."""
        slope = self.log_ratio(1, runs) - self.log_ratio(0, runs)
        failures = max(0, math.ceil((self.drift_bound - self.log_ratio(0, runs)) / slope) - 1)
        while self.log_ratio(failures, runs) < self.drift_bound - _TIE:
            failures += 1
        return failures

    def sprt_holds(self, runs: int) -> int:
        """Wald's test alone: the most failures in `runs` whose log-likelihood ratio reaches the
        lower bound (−1: none)."""
        failures = self.sprt_drifted(runs)
        while failures >= 0 and self.log_ratio(failures, runs) > self.hold_bound + _TIE:
            failures -= 1
        return failures

    def _next_drift_bound(self, reach: int) -> float:
        """The smallest bound above the current one that removes a "drifted" outcome within
        `reach` runs."""
        edge = min(
            self.log_ratio(self.sprt_drifted(n), n)
            for n in range(1, reach + 1)
            if self.sprt_drifted(n) <= n
        )
        return edge + 2 * _TIE

    def _next_hold_bound(self, reach: int) -> float:
        """The largest bound below the current one that removes a "holds" outcome within
        `reach` runs."""
        edge = max(
            self.log_ratio(self.sprt_holds(n), n)
            for n in range(1, reach + 1)
            if self.sprt_holds(n) >= 0
        )
        return edge - 2 * _TIE

    # --- the decision regions -------------------------------------------------------------------

    @property
    def probe_alpha(self) -> float:
        """The false-alarm bound of one probe: `alpha / probes`."""
        return self.alpha / self.probes

    @property
    def decides_at_cap(self) -> bool:
        """Whether every probe is decided by the cap (no "inconclusive")."""
        return self.cap_holds_up_to is not None

    def log_ratio(self, failures: int, runs: int) -> float:
        """The log-likelihood ratio of "drifted" to "holds" after `failures` in `runs`."""
        per_failure = math.log((1 - self.drifted_at) / (1 - self.holds_at))
        per_pass = math.log(self.drifted_at / self.holds_at)
        return failures * per_failure + (runs - failures) * per_pass

    def drifted_from(self, runs: int) -> int:
        """The fewest failures in `runs` runs that decide "drifted" (more than `runs`: none do)."""
        if runs <= self.cap:
            return self._drifted_from[runs]
        return self.sprt_drifted(runs)

    def holds_up_to(self, runs: int) -> int:
        """The most failures in `runs` runs that still decide "holds" (−1: no count does)."""
        if runs <= self.cap:
            return self._holds_up_to[runs]
        return self.sprt_holds(runs)


def _best_count(
    at_holds: Sequence[float],
    at_drifted: Sequence[float],
    alarms: float,
    misses: float,
    counts: range,
    alarm: float,
    miss: float,
) -> int | None:
    """Of the failure counts `c` in `counts` (at most c failures "holds", more "drifted", as the
    decision at the cap), the one that keeps both errors within bounds with the most room,
    relative to each bound (ties: the larger count, the fewer false alarms); None if none does."""
    best: tuple[float, int] | None = None
    for count in counts:
        false_alarm = alarms + math.fsum(at_holds[count + 1 :])
        missed = misses + math.fsum(at_drifted[: count + 1])
        if false_alarm <= alarm and missed <= miss:
            score = max(false_alarm / alarm, missed / miss)
            if best is None or score <= best[0]:
                best = (score, count)
    return None if best is None else best[1]


@dataclass(frozen=True)
class OperatingCharacteristic:
    """The exact chances of each ending for a probe whose true pass rate is `pass_rate`, and
    of each number of runs (`stops[n]`: the chance the probe stops after exactly n runs)."""

    pass_rate: float
    holds: float
    drifted: float
    inconclusive: float
    mean_runs: float
    stops: tuple[float, ...] = field(default=(), repr=False)

    def runs_percentile(self, share: float) -> int:
        """The fewest runs within which the probe stops with chance at least `share`."""
        reached = 0.0
        for runs, chance in enumerate(self.stops):
            reached += chance
            if reached >= share - 1e-12:
                return runs
        return len(self.stops) - 1


def operating_characteristic(
    design: SequentialDesign, pass_rate: float, correlation: float = 0.0
) -> OperatingCharacteristic:
    """How `design` ends for a probe passing with probability `pass_rate`, computed exactly; with
    a `correlation` between its runs (see `_advance`), under the beta-binomial model."""
    if not 0 <= correlation < 1:
        raise ValueError(f"need 0 <= correlation < 1, not {correlation}")
    undecided = [1.0]  # undecided[f]: chance of f failures so far with no verdict yet
    holds = drifted = 0.0
    stops = [0.0]
    for runs in range(1, design.cap + 1):
        undecided = _advance(undecided, pass_rate, correlation)
        lowest, highest = design.holds_up_to(runs), design.drifted_from(runs)
        now_holds, now_drifted = math.fsum(undecided[: lowest + 1]), math.fsum(undecided[highest:])
        for failures in [*range(max(lowest + 1, 0)), *range(highest, runs + 1)]:
            undecided[failures] = 0.0
        holds, drifted = holds + now_holds, drifted + now_drifted
        stops.append(now_holds + now_drifted)
    inconclusive = math.fsum(undecided)
    stops[-1] += inconclusive
    mean_runs = math.fsum(runs * chance for runs, chance in enumerate(stops))
    return OperatingCharacteristic(pass_rate, holds, drifted, inconclusive, mean_runs, tuple(stops))


@dataclass(frozen=True)
class Decision:
    """The verdict after `passes` of `runs` (of which `errors` could not be made) under `design`,
    and (on demand) a sentence why."""

    verdict: Verdict
    passes: int
    runs: int
    design: SequentialDesign = field(repr=False)
    errors: int = 0

    @property
    def failures(self) -> int:
        return self.runs - self.passes - self.errors

    @property
    def explanation(self) -> str:
        """What was observed, what it shows, and for an open verdict what would decide it."""
        return _explain(self)


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


def _what_would_decide(
    failures: int, runs: int, design: SequentialDesign, cap: int, errors: int = 0
) -> str:
    to_hold = _passes_to_hold(failures + errors, runs, design, cap)
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


def _holds_at_most(design: SequentialDesign) -> int:
    """The most failures with which "holds" can still be reached (at the cap, the latest)."""
    return design.holds_up_to(design.cap)


def _verdict(failures: int, errors: int, runs: int, design: SequentialDesign) -> Verdict:
    if failures >= design.drifted_from(runs):
        return "drifted"
    if failures + errors <= design.holds_up_to(runs):
        return "holds"
    if errors and (runs >= design.cap or failures + errors > _holds_at_most(design) >= failures):
        return "incomplete"  # the errors could change the verdict, and more runs cannot help
    return "undecided" if runs < design.cap else "inconclusive"


def _observed(decision: Decision) -> str:
    if not decision.runs:
        return "no runs yet"
    observed = f"{decision.failures} of {decision.runs} runs failed"
    if decision.errors:
        observed += (
            f" and {decision.errors} could not be made (counted as failures for 'holds', as "
            "passes for 'drifted')"
        )
    return observed


def _explain(decision: Decision) -> str:
    verdict, runs, design, failures = (
        decision.verdict,
        decision.runs,
        decision.design,
        decision.failures,
    )
    holds, drifted = _percent(design.holds_at), _percent(design.drifted_at)
    observed = _observed(decision)
    if verdict == "drifted":
        return _explain_drifted(decision, observed, holds, drifted)
    if verdict == "holds":
        return _explain_holds(decision, observed, holds, drifted)
    if verdict == "undecided":
        steps = _what_would_decide(failures, runs, design, design.cap, decision.errors)
        return f"undecided: {observed}; {steps}"
    if verdict == "incomplete":
        return (
            f"incomplete: {observed}. Counted as failures, the runs that could not be made rule "
            f"out 'holds' (at most {_count(_holds_at_most(design), 'failure')} by the cap of "
            f"{design.cap} runs), and the runs that were made do not show 'drifted': they could "
            "change the verdict"
        )
    next_steps = _what_would_decide(failures, runs, design, 2 * design.cap)
    rate = pass_rate(decision.passes, runs)
    return (
        f"inconclusive: {observed} and {runs} is the cap; {_bounds_at(runs, design)}. The pass "
        f"rate so far, {rate.rate:.1%} (95% interval {rate.low:.1%}–{rate.high:.1%}), does not "
        f"tell at least {holds} from at most {drifted}. To decide, leave the cap to RuleDrift "
        f"(it derives one that decides every probe) or plan a higher one before running (with "
        f"these bounds {next_steps})"
    )


def _explain_drifted(decision: Decision, observed: str, holds: str, drifted: str) -> str:
    design, failures = decision.design, decision.failures
    alarms = f"false alarms at most {_percent(design.probe_alpha)} for this probe"
    if failures >= design.sprt_drifted(decision.runs):
        return (
            f"drifted: {observed}, evidence enough that the pass rate is at most {drifted} "
            f"rather than at least {holds} ({alarms})"
        )
    return (
        f"drifted: {observed}, more than the {design.cap_holds_up_to} failures with which "
        f"'holds' is decided at the cap of {design.cap} runs, so no run can change the verdict: "
        f"the pass rate is taken to be at most {drifted} rather than at least {holds} ({alarms})"
    )


def _explain_holds(decision: Decision, observed: str, holds: str, drifted: str) -> str:
    design = decision.design
    misses = f"a drifted rule is missed at most {_percent(design.beta)} of the time"
    if decision.failures + decision.errors <= design.sprt_holds(decision.runs):
        return (
            f"holds: {observed}, evidence enough that the pass rate is at least {holds} rather "
            f"than at most {drifted} ({misses})"
        )
    return (
        f"holds: {observed}, and at the cap of {design.cap} runs at most "
        f"{design.cap_holds_up_to} failures decide 'holds': the pass rate is taken to be at "
        f"least {holds} rather than at most {drifted} ({misses})"
    )


def decide(passes: int, runs: int, design: SequentialDesign, errors: int = 0) -> Decision:
    """The verdict after `passes` of `runs`, `errors` of which could not be made, under
    `design`; call after each run, stop at a verdict.

    "holds" and "drifted" are final; "undecided" asks for another run; "inconclusive" means the
    cap was reached between the bounds (only for a design that does not decide at its cap);
    "incomplete" that runs which could not be made could change the verdict and no run left can
    settle it. Errors count as failures for "holds" and as passes for "drifted". The
    explanation says what would decide an undecided or inconclusive probe.
    """
    if not (passes >= 0 and errors >= 0 and passes + errors <= runs <= design.cap):
        raise ValueError(
            f"need 0 <= passes <= runs <= the cap ({design.cap}), not {passes} of {runs} "
            f"({errors} errors)"
        )
    verdict = _verdict(runs - passes - errors, errors, runs, design)
    return Decision(verdict, passes, runs, design, errors)


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
