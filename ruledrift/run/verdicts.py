"""How the runs of a probe become its verdict, under a `VerdictPolicy`: pure functions, called by
the runner as runs finish (and by nothing that renders). See docs/statistics.md.

- A fixed number of runs: every run must pass, or at least `min_pass_rate` of them; a run that
  could not be made makes the probe an error (the verdict is incomplete).
- `repeat: "auto"`: a truncated sequential test (`stats.sequential`) between "holds" and
  "drifted", its false-alarm bound split across the suite's probes, deciding every probe by a
  cap derived from their number. A run that could not be made counts against the verdict it
  could change; the probe is an error only when such runs could change it.
- `gate_odds`: what a policy promises a suite, computed exactly: the chance that a suite whose
  rules all hold goes red, and the chance of catching a drifted probe.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from ruledrift.data import Probe, ProbeResult, ProbeRun, Status, VerdictPolicy
from ruledrift.stats import (
    SequentialDesign,
    Verdict,
    beta_binomial_pmf,
    decide,
    operating_characteristic,
    pass_rate,
)

# The intra-run correlation the warnings about dependent runs quote: runs of a probe that share
# more than the probe (a cache, a fixed seed, temperature 0) agree more often than chance.
CORRELATION = 0.05

_STATUS: dict[Verdict, Status] = {
    "holds": "passed",
    "drifted": "failed",
    "inconclusive": "inconclusive",
    "incomplete": "error",
    "undecided": "inconclusive",  # only for a probe whose runs were cut short (interrupted)
}


def sequential_design(policy: VerdictPolicy, probes: int) -> SequentialDesign:
    """The sequential test for a suite of `probes` probes under `policy`."""
    return SequentialDesign.for_suite(
        max(probes, 1),
        holds_at=policy.holds_at,
        drifted_at=policy.drifted_at,
        alpha=policy.alpha,
        beta=policy.beta,
        max_runs=policy.max_repeat,
    )


def _counts(runs: Sequence[ProbeRun]) -> tuple[int, int, int]:
    """Passes, runs and errors. A run of a probe with a control is a pair: it passes only when
    the probe and its control both passed (a vacuous run is not a pass)."""
    passes = sum(1 for run in runs if run.status == "passed")
    errors = sum(1 for run in runs if run.status == "error")
    return passes, len(runs), errors


def auto_decision(runs: Sequence[ProbeRun], design: SequentialDesign) -> Verdict:
    """The sequential test's verdict on a probe's runs so far (at most the cap's)."""
    passes, total, errors = _counts(runs[: design.cap])
    return decide(passes, total, design, errors).verdict


def is_decided(
    runs: Sequence[ProbeRun], policy: VerdictPolicy, design: SequentialDesign | None
) -> bool:
    """Whether a probe needs no more runs: for a fixed count, once it has them; under "auto",
    once the sequential test has a verdict (or the runs that could not be made settle that it
    will not get one)."""
    if policy.repeat != "auto":
        return len(runs) >= policy.repeat
    assert design is not None
    return auto_decision(runs, design) != "undecided"


def probe_verdict(
    probe: Probe,
    runs: Sequence[ProbeRun],
    policy: VerdictPolicy,
    design: SequentialDesign | None = None,
) -> ProbeResult:
    """The probe's result from its runs (at least one): status, the evidence (the first run that
    errored for an error, the last run for a pass, else the first run that failed) and, with
    repeats, what decided it."""
    status, decided_by = _status(runs, policy, design)
    identical = policy.repeated and runs_identical(runs)
    if identical:
        decided_by = identical_reason(runs, status, policy)
    if status == "failed" and not any(run.status == "failed" for run in runs):
        status = "vacuous"  # not kept, but only because controls failed: its own status
    evidence = _evidence(runs, status)
    return ProbeResult(
        probe=probe,
        status=status,
        duration_ms=sum(run.duration_ms for run in runs),
        assertions=evidence.assertions,
        response=evidence.response,
        error=evidence.error,
        runs=tuple(runs) if policy.repeated else (),
        decided_by=decided_by if policy.repeated else None,
        identical_runs=identical,
        control=evidence.control,
        tools=evidence.tools,
    )


def runs_identical(runs: Sequence[ProbeRun]) -> bool:
    """Whether a probe's runs are at least two, every one answered, and every answer
    byte-identical (one SHA-256 and one length) with the same tool calls (names, rounds and
    arguments): then the repeats add no information."""
    answers = {
        (r.response.sha256, r.response.length, _calls_made(r))
        for r in runs
        if r.response is not None
    }
    return len(runs) >= 2 and all(r.response is not None for r in runs) and len(answers) == 1


def _calls_made(run: ProbeRun) -> tuple[tuple[str, int, str], ...]:
    """A run's tool calls as its identity counts them: each call's tool, round and arguments."""
    if run.tools is None:
        return ()
    return tuple((call.name, call.round, call.sha256) for call in run.tools.calls)


# What a repeated probe's verdict is called under `--repeat auto` (the sequential test's word).
_AUTO_WORDS: dict[Status, str] = {
    "passed": "holds",
    "failed": "drifted",
    "vacuous": "drifted",
    "inconclusive": "inconclusive",
    "error": "incomplete",
}
IDENTICAL = "every answer was byte-identical, so the repeats add no information"


def identical_reason(runs: Sequence[ProbeRun], status: Status, policy: VerdictPolicy) -> str:
    """What decided a probe whose runs were identical (`runs_identical`): the verdict the
    policy gives them, as for any runs, but without an interval or error bound, which assume
    independent runs: `drifted: 5 identical runs (0/5 passed): every answer was …`."""
    passes, total, _ = _counts(runs)
    lead = f"{total} identical runs ({passes}/{total} passed): {IDENTICAL}"
    unbounded = "no error bound applies to this probe (the bounds assume independent runs)"
    if policy.repeat == "auto":
        return (
            f"{_AUTO_WORDS[status]}: {lead}; the sequential test's verdict stands, but {unbounded}"
        )
    rule = (
        "every run must pass"
        if policy.min_pass_rate is None
        else f"at least {policy.min_pass_rate:.0%} of its runs must pass (--min-pass-rate)"
    )
    return f"{lead}; {rule}, and {unbounded}"


def _evidence(runs: Sequence[ProbeRun], status: Status) -> ProbeRun:
    if status == "passed":
        return next((run for run in reversed(runs) if run.status == "passed"), runs[-1])
    shown = status if status in ("error", "vacuous") else "failed"
    return next((run for run in runs if run.status == shown), runs[-1])


def _status(
    runs: Sequence[ProbeRun], policy: VerdictPolicy, design: SequentialDesign | None
) -> tuple[Status, str]:
    passes, total, errors = _counts(runs)
    if policy.repeat == "auto":
        assert design is not None
        kept_passes, kept, kept_errors = _counts(runs[: design.cap])
        decision = decide(kept_passes, kept, design, kept_errors)
        return _STATUS[decision.verdict], decision.explanation
    if errors:
        return "error", f"{errors} of {total} run(s) could not be made: the verdict is incomplete"
    rate = pass_rate(passes, total)
    if policy.min_pass_rate is not None:
        kept = rate.rate >= policy.min_pass_rate
        relation = "at least" if kept else "below"
        return ("passed" if kept else "failed"), (
            f"{rate}: {relation} the minimum pass rate {policy.min_pass_rate:.0%} (--min-pass-rate)"
        )
    return ("passed" if passes == total else "failed"), f"{rate}: every run must pass"


# --- what a policy promises a suite --------------------------------------------------------------


@dataclass(frozen=True)
class GateOdds:
    """What a repeat policy does to a suite of `probes` independent probes, computed exactly.

    `red_when_holding`: the chance the suite goes red when every rule holds at `holds_at`;
    `caught`: the chance that a probe at `drifted_at` fails the run (under `--repeat auto` with
    the default cap: that it is named drifted). `red_when_correlated` is `red_when_holding` when
    the runs of each probe are not independent but correlated by CORRELATION (beta-binomial).
    `cap` is the most runs a probe takes under "auto" and `decides_at_cap` whether every probe
    is decided by it; `needed_cap` is the cap that would decide every probe (differs from `cap`
    only for a given, shorter cap).
    """

    probes: int
    holds_at: float
    drifted_at: float
    red_when_holding: float
    caught: float
    alpha: float
    beta: float
    cap: int | None = None
    decides_at_cap: bool = True
    needed_cap: int | None = None
    red_when_correlated: float = 0.0  # as red_when_holding, runs correlated by CORRELATION

    @property
    def within_bounds(self) -> bool:
        """Whether the suite keeps both promises: red at most `alpha`, caught at least 1 − beta."""
        return self.red_when_holding <= self.alpha and self.caught >= 1 - self.beta

    def missed_within(self, attempts: int) -> float:
        """The chance that a probe at `drifted_at` passes at least one of `attempts` runs of
        the whole job (re-running a red job until it goes green)."""
        return 1 - self.caught**attempts


def _fixed_passes(
    runs: int, min_pass_rate: float | None, pass_rate_: float, correlation: float = 0.0
) -> float:
    """The chance a probe at `pass_rate_` passes `runs` runs under the fixed rule (its runs
    correlated by `correlation`)."""
    needed = (
        runs
        if min_pass_rate is None
        else next((k for k in range(runs + 1) if k / runs >= min_pass_rate), runs + 1)
    )
    chances = (beta_binomial_pmf(k, runs, pass_rate_, correlation) for k in range(needed, runs + 1))
    return _chance(math.fsum(chances))


def _chance(value: float) -> float:
    """A computed probability kept within [0, 1] (sums of rounded terms stray by 1e-15)."""
    return min(max(value, 0.0), 1.0)


@functools.lru_cache(maxsize=64)
def gate_odds(policy: VerdictPolicy, probes: int) -> GateOdds:
    """What `policy` promises a suite of `probes` probes (see GateOdds); raises ValueError for a
    policy no design fits (rates out of order)."""
    if not 0 < policy.drifted_at < policy.holds_at < 1:
        raise ValueError(f"need 0 < drifted_at < holds_at < 1, not {policy.drifted_at}")
    probes = max(probes, 1)
    common = (probes, policy.holds_at, policy.drifted_at)
    bounds = (policy.alpha, policy.beta)
    if policy.repeat != "auto":
        runs = int(policy.repeat)
        holding = _fixed_passes(runs, policy.min_pass_rate, policy.holds_at)
        drifted = _fixed_passes(runs, policy.min_pass_rate, policy.drifted_at)
        correlated = _fixed_passes(runs, policy.min_pass_rate, policy.holds_at, CORRELATION)
        return GateOdds(
            *common,
            _chance(1 - holding**probes),
            _chance(1 - drifted),
            *bounds,
            red_when_correlated=_chance(1 - correlated**probes),
        )
    design = sequential_design(policy, probes)
    at_holds = operating_characteristic(design, policy.holds_at)
    at_drifted = operating_characteristic(design, policy.drifted_at)
    open_fails = 0.0 if policy.inconclusive_passes else 1.0
    fails = at_holds.drifted + open_fails * at_holds.inconclusive
    caught = at_drifted.drifted + open_fails * at_drifted.inconclusive
    at_holds_correlated = operating_characteristic(design, policy.holds_at, CORRELATION)
    correlated_fails = at_holds_correlated.drifted + open_fails * at_holds_correlated.inconclusive
    needed = design
    if not design.decides_at_cap:
        needed = sequential_design(dataclasses.replace(policy, max_repeat=None), probes)
    return GateOdds(
        *common,
        _chance(1 - (1 - fails) ** probes),
        _chance(caught),
        *bounds,
        cap=design.cap,
        decides_at_cap=design.decides_at_cap,
        needed_cap=needed.cap,
        red_when_correlated=_chance(1 - (1 - correlated_fails) ** probes),
    )
