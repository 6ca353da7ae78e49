"""`ruledrift compare BASE.json HEAD.json`: did a change make the agent drift more than its base?

For each probe present in both reports, and each rule × depth cell of the drift curve, the two
pass rates (over the runs that produced an answer), the drop with its Newcombe (hybrid Wilson)
95% interval, and a one-sided Fisher exact p-value for "head is worse", Holm-adjusted over the
probes (and, separately, over the cells), labelled worse / better / no evidence of a change / too
few runs to tell (`stats.compare`: too few when the power to see a drop from the head's
`--holds-at` to its `--drifted-at`, 95% to 80% by default, is under 80% at the probe's run counts
after Holm's correction). Probes in one report only are listed apart; reports of different suites
are compared probe by probe on ids, with a warning. Rendering lives in `reports/comparison.py`;
this module decides.
"""

from __future__ import annotations

from dataclasses import dataclass

from ruledrift.data import ProbeResult, RunResult, SearchResult
from ruledrift.errors import UsageError
from ruledrift.results.findings import drift_curve, search_finding
from ruledrift.stats import Comparison, PassRate, compare_suite, pass_rate, runs_per_side

# The drop the docs plan for by default: a rule that held 95% of the time now holding 80%.
PLANNED_BASE, PLANNED_HEAD = 0.95, 0.80
POWER = 0.80  # below this power to see the planned drop, a probe is "too few runs to tell"


@dataclass(frozen=True)
class ProbeChange:
    key: str  # "scenario/probe"
    rule: str
    after_turn: int
    comparison: Comparison


@dataclass(frozen=True)
class CellChange:
    rule: str
    after_turn: int
    comparison: Comparison


@dataclass(frozen=True)
class ComparisonResult:
    base: RunResult
    head: RunResult
    probes: tuple[ProbeChange, ...]
    cells: tuple[CellChange, ...]
    added: tuple[str, ...]  # probes in the head only
    removed: tuple[str, ...]  # probes in the base only
    warnings: tuple[str, ...]
    # runs per side to see the planned drop with 80% power, Holm over the probes (None: more
    # than RUNS_NEEDED_LIMIT, for a drop too small to plan for)
    runs_needed: int | None
    planned: tuple[float, float] = (PLANNED_BASE, PLANNED_HEAD)  # the head's holds_at, drifted_at

    @property
    def regressions(self) -> tuple[ProbeChange, ...]:
        """Probes significantly worse after Holm's adjustment."""
        return tuple(change for change in self.probes if change.comparison.label == "worse")


def compare_runs(base: RunResult, head: RunResult) -> ComparisonResult:
    """The comparison of `head` with `base` (pure). The planned drop is from the head's
    `--holds-at` to its `--drifted-at`. Runs with variants are refused: the comparison is of
    base against head, and the variants' own comparison is in each report."""
    for side, result in (("base", base), ("head", head)):
        if any(scenario.variants for scenario in result.scenarios):
            raise UsageError(
                f"the {side} report holds variants (--variants), which compare does not "
                "compare: its report already compares each variant with base; compare runs "
                "made without --variants"
            )
    planned = _planned(head)
    base_probes, head_probes = _probes(base), _probes(head)
    shared = [key for key in head_probes if key in base_probes]
    pairs = [(_rate(base_probes[key]), _rate(head_probes[key])) for key in shared]
    usable = [i for i, (b, h) in enumerate(pairs) if b is not None and h is not None]
    compared = compare_suite(
        [(pairs[i][0], pairs[i][1]) for i in usable],  # type: ignore[misc]
        planned=planned,
    )
    probes = tuple(
        ProbeChange(
            shared[i],
            head_probes[shared[i]].probe.rule.id,
            head_probes[shared[i]].probe.after_turn,
            comparison,
        )
        for i, comparison in zip(usable, compared, strict=True)
    )
    warnings = []
    if base.suite.sha256 != head.suite.sha256:
        warnings.append(
            "the reports are of different suites (configSha256): probes are compared by id"
        )
    if (base.target.adapter, base.target.model) != (head.target.adapter, head.target.model):
        warnings.append("the reports are of different targets (adapter or model)")
    warnings += _search_changes(base, head)
    return ComparisonResult(
        base=base,
        head=head,
        probes=probes,
        cells=_cells(base, head, planned),
        added=tuple(key for key in head_probes if key not in base_probes),
        removed=tuple(key for key in base_probes if key not in head_probes),
        warnings=tuple(warnings),
        runs_needed=_runs_needed(planned, len(probes)),
        planned=planned,
    )


def _search_changes(base: RunResult, head: RunResult) -> list[str]:
    """A search whose breaking depth differs between the reports: named, not tested (its
    points that both reports decided are compared as probes, like any other)."""

    def searches(result: RunResult) -> dict[str, SearchResult]:
        return {f"{s.scenario.id}/{x.id}": x for s in result.scenarios for x in s.searches}

    before, after = searches(base), searches(head)
    return [
        f"search {key}: base {search_finding(before[key])}; head {search_finding(found)} (the "
        "breaking depths are not tested against each other: the depths both decided are "
        "compared as probes)"
        for key, found in after.items()
        if key in before and search_finding(before[key]) != search_finding(found)
    ]


def _planned(head: RunResult) -> tuple[float, float]:
    """The head's `--holds-at` and `--drifted-at`, when a saved report's are usable."""
    holds_at, drifted_at = head.policy.holds_at, head.policy.drifted_at
    numbers = isinstance(holds_at, float | int) and isinstance(drifted_at, float | int)
    if numbers and 0 < drifted_at < holds_at < 1:
        return float(holds_at), float(drifted_at)
    return PLANNED_BASE, PLANNED_HEAD


def _probes(result: RunResult) -> dict[str, ProbeResult]:
    return {f"{s.scenario.id}/{p.probe.id}": p for s in result.scenarios for p in s.probes}


def _rate(result: ProbeResult) -> PassRate | None:
    """Passes of the runs that produced an answer (an error is no evidence either way)."""
    answered = [run for run in result.all_runs if run.status != "error"]
    if not answered:
        return None
    return pass_rate(sum(1 for run in answered if run.status == "passed"), len(answered))


def _cells(
    base: RunResult, head: RunResult, planned: tuple[float, float]
) -> tuple[CellChange, ...]:
    def cells(result: RunResult) -> dict[tuple[str, int], PassRate]:
        return {
            (curve.rule.id, cell.after_turn): cell.rate
            for curve in drift_curve(result)
            for cell in curve.cells
        }

    before, after = cells(base), cells(head)
    shared = [key for key in after if key in before]
    compared = compare_suite([(before[key], after[key]) for key in shared], planned=planned)
    return tuple(
        CellChange(rule, depth, comparison)
        for (rule, depth), comparison in zip(shared, compared, strict=True)
    )


RUNS_NEEDED_LIMIT = 2_000


def _runs_needed(planned: tuple[float, float], probes: int) -> int | None:
    """`runs_per_side` for the planned drop (None past RUNS_NEEDED_LIMIT: a holds-at and a
    drifted-at a hair apart, such as 0.9999 and 0.9998, need millions of runs)."""
    try:
        return runs_per_side(*planned, alpha=0.05 / max(probes, 1), max_runs=RUNS_NEEDED_LIMIT)
    except ValueError:
        return None
