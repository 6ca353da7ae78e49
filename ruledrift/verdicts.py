"""How the runs of a probe become its verdict, under a `VerdictPolicy`: pure functions, called by
the runner as runs finish (and by nothing that renders). See docs/statistics.md.

- Any run that could not be made makes the probe an error: the verdict is incomplete.
- A fixed number of runs: every run must pass, or at least `min_pass_rate` of them.
- `repeat: "auto"`: Wald's sequential test (`stats.sequential`) between "holds" and "drifted",
  its false-alarm bound split across the suite's probes; undecided at the cap is inconclusive.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruledrift.model import Probe, ProbeResult, ProbeRun, Status, VerdictPolicy
from ruledrift.stats import SequentialDesign, decide, pass_rate


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


def is_decided(
    runs: Sequence[ProbeRun], policy: VerdictPolicy, design: SequentialDesign | None
) -> bool:
    """Whether a probe needs no more runs: for a fixed count, once it has them; under "auto",
    once the sequential test says holds or drifted, a run errored, or the cap is reached."""
    if policy.repeat != "auto":
        return len(runs) >= policy.repeat
    assert design is not None
    if any(run.status == "error" for run in runs) or len(runs) >= design.cap:
        return True
    passes = sum(1 for run in runs if run.status == "passed")
    return bool(runs) and decide(passes, len(runs), design).verdict in ("holds", "drifted")


def probe_verdict(
    probe: Probe,
    runs: Sequence[ProbeRun],
    policy: VerdictPolicy,
    design: SequentialDesign | None = None,
) -> ProbeResult:
    """The probe's result from its runs (at least one): status, the evidence (the first run that
    did not pass, else the last run) and, with repeats, what decided it."""
    evidence = next((run for run in runs if run.status != "passed"), runs[-1])
    status, decided_by = _status(runs, policy, design)
    return ProbeResult(
        probe=probe,
        status=status,
        duration_ms=sum(run.duration_ms for run in runs),
        assertions=evidence.assertions,
        response=evidence.response,
        error=evidence.error,
        runs=tuple(runs) if policy.repeated else (),
        decided_by=decided_by if policy.repeated else None,
    )


def _status(
    runs: Sequence[ProbeRun], policy: VerdictPolicy, design: SequentialDesign | None
) -> tuple[Status, str]:
    total = len(runs)
    passes = sum(1 for run in runs if run.status == "passed")
    errors = sum(1 for run in runs if run.status == "error")
    if errors:
        return "error", f"{errors} of {total} run(s) could not be made: the verdict is incomplete"
    if policy.repeat == "auto":
        assert design is not None
        decision = decide(passes, min(total, design.cap), design)
        status: Status = {"holds": "passed", "drifted": "failed"}.get(  # type: ignore[assignment]
            decision.verdict, "inconclusive"
        )
        return status, decision.explanation
    rate = pass_rate(passes, total)
    if policy.min_pass_rate is not None:
        kept = rate.rate >= policy.min_pass_rate
        relation = "at least" if kept else "below"
        return ("passed" if kept else "failed"), (
            f"{rate}: {relation} the minimum pass rate {policy.min_pass_rate:.0%} (--min-pass-rate)"
        )
    return ("passed" if passes == total else "failed"), f"{rate}: every run must pass"
