"""Variants against base (`--variants`): pure readings of a finished run that every report shows
alike: each variant's view of the run (its drift curve comes from `findings.drift_curve`), and
each probe's paired comparison (`stats.paired`), Holm-adjusted over every probe and variant.

A pair is one probe in one run (the same run index and seed) under base and under a variant,
both answered (a run that could not be made pairs with nothing). A probe shallower than where a
variant leaves base's conversation was asked once, on messages both share: it is `shared`, its
pairs agree by construction, and it is left out of the tests (it cannot differ, and counting it
would only make Holm stricter for the others).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ruledrift.data import BASE, ProbeResult, RunResult, Variant
from ruledrift.results.findings import RuleDrift, drift_curve
from ruledrift.stats import (
    PairCounts,
    PairedComparison,
    compare_pairs,
    independent_harm,
    pair_counts,
    pairs_needed,
    runs_per_side,
)

__all__ = [
    "PairingPlan",
    "VariantProbe",
    "VariantsReading",
    "read_variants",
    "variant_curves",
    "variant_ids",
    "variant_view",
]


def variant_ids(result: RunResult) -> tuple[str, ...]:
    """The variants the run played beside base, in the suite's order (empty: none)."""
    seen: dict[str, None] = {}
    for scenario in result.scenarios:
        for played in scenario.variants:
            seen.setdefault(played.variant.id, None)
    return tuple(seen)


def variant_view(result: RunResult, variant: str) -> RunResult:
    """The run as if `variant` were the suite: every scenario's probes are its (base: as run)."""
    if variant == BASE:
        return result
    scenarios = []
    for scenario in result.scenarios:
        played = next((v for v in scenario.variants if v.variant.id == variant), None)
        probes = played.probes if played is not None else scenario.probes
        scenarios.append(dataclasses.replace(scenario, probes=probes, variants=()))
    return dataclasses.replace(result, scenarios=tuple(scenarios))


def variant_curves(result: RunResult) -> tuple[RuleDrift, ...]:
    """Every variant's drift curves, base first, each rule's line named `rule (variant)`: the
    series of one chart (empty: the run played no variant)."""
    names = variant_ids(result)
    curves = []
    for name in (BASE, *names) if names else ():
        for curve in drift_curve(variant_view(result, name)):
            named = dataclasses.replace(curve.rule, id=f"{curve.rule.id} ({name})")
            curves.append(RuleDrift(named, curve.cells))
    return tuple(curves)


@dataclass(frozen=True)
class VariantProbe:
    """One probe under one variant against base: its pairs and, when tested, the comparison
    (None: shared with base, or no pair was answered under both)."""

    scenario: str
    probe: ProbeResult  # base's result
    under: ProbeResult  # the variant's result
    variant: Variant
    shared: bool
    counts: PairCounts
    comparison: PairedComparison | None


@dataclass(frozen=True)
class PairingPlan:
    """How many pairs the planned improvement (`drifted_at` → `holds_at`) needs with McNemar's
    two-sided exact test at 5% and 80% power: when the variant only fixes failures (fewest) and
    when a pair's two outcomes are independent; and the runs per arm of two independent samples
    with Fisher's two-sided exact test, for comparison."""

    drifted_at: float
    holds_at: float
    pairs_if_only_fixes: int
    pairs_if_independent: int
    runs_per_arm_unpaired: int


@dataclass(frozen=True)
class VariantsReading:
    variants: tuple[Variant, ...]
    probes: tuple[VariantProbe, ...]
    plan: PairingPlan | None  # None: the planned rates do not make an improvement


def _outcomes(base: ProbeResult, under: ProbeResult) -> list[tuple[bool, bool]]:
    by_run = {run.run: run for run in under.all_runs}
    pairs = []
    for run in base.all_runs:
        other = by_run.get(run.run)
        if other is None or "error" in (run.status, other.status):
            continue
        pairs.append((run.status == "passed", other.status == "passed"))
    return pairs


def pairing_plan(drifted_at: float, holds_at: float) -> PairingPlan | None:
    if not 0 < drifted_at < holds_at < 1:
        return None
    independent = independent_harm(drifted_at, holds_at)
    return PairingPlan(
        drifted_at,
        holds_at,
        pairs_needed(drifted_at, holds_at),
        pairs_needed(drifted_at, holds_at, harm=independent),
        runs_per_side(holds_at, drifted_at, alpha=0.025),
    )


def read_variants(result: RunResult) -> VariantsReading | None:
    """Every probe under every variant against base, tested and Holm-adjusted together (None:
    the run played no variant)."""
    if not variant_ids(result):
        return None
    found: list[tuple[str, ProbeResult, ProbeResult, Variant, bool, PairCounts]] = []
    variants: dict[str, Variant] = {}
    for scenario in result.scenarios:
        for played in scenario.variants:
            variants.setdefault(played.variant.id, played.variant)
            for base, under in zip(scenario.probes, played.probes, strict=True):
                shared = base.probe.after_turn < played.variant.diverges_at
                counts = pair_counts(_outcomes(base, under))
                row = (scenario.scenario.id, base, under, played.variant, shared, counts)
                found.append(row)
    tested = [i for i, row in enumerate(found) if not row[4] and row[5].pairs > 0]
    policy = result.policy
    planned = (policy.drifted_at, policy.holds_at)
    compared = compare_pairs([found[i][5] for i in tested], planned=planned)
    by_index = dict(zip(tested, compared, strict=True))
    probes = tuple(VariantProbe(*row, by_index.get(i)) for i, row in enumerate(found))
    plan = pairing_plan(policy.drifted_at, policy.holds_at)
    return VariantsReading(tuple(variants.values()), probes, plan)
