"""Paired comparisons: McNemar's exact test and Newcombe's paired interval against published
values, the exact power against brute-force enumeration, the pairs needed, and seeded
simulations of whole runs under no effect and under a known effect."""

from __future__ import annotations

import itertools
import math
import random
import re
from pathlib import Path

import pytest

from ruledrift.stats import holm, runs_per_side
from ruledrift.stats.paired import (
    PairCounts,
    compare_pairs,
    independent_harm,
    mcnemar_exact,
    pair_counts,
    paired_interval,
    paired_power,
    pairs_needed,
)


@pytest.mark.parametrize(
    ("base_only", "variant_only", "exact", "published"),
    [
        # Fagerland, Lydersen & Laake (2013), "The McNemar test for binary matched-pairs data:
        # mid-p and asymptotic are better than exact conditional", BMC Medical Research
        # Methodology 13:91: airway hyper-responsiveness before and after stem cell
        # transplantation (Bentur et al. 2009), 1 and 7 discordant pairs: exact conditional
        # P = 0.070; complete response before and after consolidation therapy (Cavo et al.
        # 2012), 6 and 16: P = 0.052. R: binom.test(1, 8)$p.value = 0.0703125.
        (1, 7, 18 / 256, 0.070),
        (7, 1, 18 / 256, 0.070),
        (6, 16, 2 * 110056 / 2**22, 0.052),
    ],
)
def test_mcnemar_exact_matches_the_published_p_values(
    base_only: int, variant_only: int, exact: float, published: float
) -> None:
    p_value = mcnemar_exact(base_only, variant_only)
    assert p_value == pytest.approx(exact, rel=1e-12)
    assert round(p_value, 3) == published


def test_mcnemar_exact_is_one_without_a_lean_and_capped_at_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0
    assert mcnemar_exact(4, 5) == 1.0  # 2 · P(X ≤ 4 | 9) = 1
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(0, 1_200) == 0.0 or mcnemar_exact(0, 1_200) < 1e-300


def test_mcnemar_refuses_negative_counts() -> None:
    with pytest.raises(ValueError, match="counts >= 0"):
        mcnemar_exact(-1, 3)


def test_the_paired_interval_matches_the_published_example() -> None:
    """Fagerland, Lydersen & Laake (2017), Statistical Analysis of Contingency Tables, ch. 8,
    the Cavo et al. table (59, 6 / 16, 80): the Newcombe square-and-add interval for
    first − second is −0.0621 (−0.1186 to −0.0046); variant − base is its mirror."""
    counts = PairCounts(both=59, base_only=6, variant_only=16, neither=80)
    low, high = paired_interval(counts)
    assert (round(low, 4), round(high, 4)) == (0.0046, 0.1186)
    mirrored = PairCounts(both=59, base_only=16, variant_only=6, neither=80)
    assert paired_interval(mirrored) == pytest.approx((-high, -low))


def test_the_paired_interval_stays_within_minus_one_and_one() -> None:
    # no correlation can be read from a table with an empty margin: Newcombe's unpaired (h)
    low, high = paired_interval(PairCounts(0, 0, 10, 0))
    assert round(low, 4) == 0.6075
    assert high == 1.0
    low, high = paired_interval(PairCounts(5, 0, 0, 5))
    assert low < 0 < high


def test_pair_counts_fill_the_four_cells() -> None:
    outcomes = [(True, True), (True, False), (False, True), (False, True), (False, False)]
    assert pair_counts(outcomes) == PairCounts(1, 1, 2, 1)


def brute_power(pairs: int, base: float, variant: float, harm: float, alpha: float) -> float:
    """Every table of `pairs` pairs, its multinomial chance, and the test applied to it."""
    fixes = harm + variant - base
    cells = (base - harm, harm, fixes, 1 - base - fixes)
    power = 0.0
    for b, c in itertools.product(range(pairs + 1), repeat=2):
        if b + c > pairs or c <= b or mcnemar_exact(b, c) > alpha:
            continue
        rest = pairs - b - c
        ways = math.comb(pairs, b) * math.comb(pairs - b, c)
        for both in range(rest + 1):
            chance = cells[0] ** both * cells[1] ** b * cells[2] ** c * cells[3] ** (rest - both)
            power += ways * math.comb(rest, both) * chance
    return power


@pytest.mark.parametrize(
    ("pairs", "base", "variant", "harm"),
    [(12, 0.8, 0.94, 0.0), (12, 0.8, 0.94, 0.048), (20, 0.5, 0.8, 0.1), (7, 0.2, 0.9, 0.05)],
)
def test_the_exact_power_is_every_table_enumerated(
    pairs: int, base: float, variant: float, harm: float
) -> None:
    expected = brute_power(pairs, base, variant, harm, 0.05)
    assert paired_power(pairs, base, variant, harm=harm) == pytest.approx(expected, abs=1e-12)


def test_pairs_needed_for_80_to_94_percent_and_the_unpaired_runs() -> None:
    """The issue's figures: about 54 pairs against about 81 runs per arm. 54 is Connor's normal
    approximation for the two-sided test when the variant only fixes failures (exact: 55); 81
    is the exact one-sided Fisher test of docs/statistics.md; with independent outcomes the
    pairs gain nothing and need 100."""
    assert pairs_needed(0.80, 0.94) == 55
    assert pairs_needed(0.80, 0.94, method="normal") == 54
    assert pairs_needed(0.80, 0.94, harm=independent_harm(0.80, 0.94)) == 100
    assert runs_per_side(0.94, 0.80) == 81
    assert paired_power(55, 0.80, 0.94) >= 0.80 > paired_power(54, 0.80, 0.94)


def test_pairs_needed_for_the_default_planned_improvement() -> None:
    assert pairs_needed(0.80, 0.95) == 52
    assert pairs_needed(0.80, 0.95, harm=independent_harm(0.80, 0.95)) == 83


@pytest.mark.parametrize(
    ("base", "variant", "harm"),
    [(0.9, 0.8, 0.0), (0.8, 0.8, 0.0), (0.8, 0.9, 0.5), (0.8, 1.0, 0.1)],
)
def test_impossible_designs_are_refused(base: float, variant: float, harm: float) -> None:
    with pytest.raises(ValueError, match=r"need 0 <= p_base < p_variant|is impossible"):
        pairs_needed(base, variant, harm=harm)


def test_the_exact_test_never_exceeds_alpha_for_one_probe() -> None:
    """Under no effect (b and c equally likely), summed exactly over every table."""
    for pairs, discordant in ((10, 0.3), (40, 0.2), (80, 0.05)):
        size = sum(
            math.comb(pairs, m) * discordant**m * (1 - discordant) ** (pairs - m)
            * sum(math.comb(m, c) for c in range(m + 1) if mcnemar_exact(m - c, c) <= 0.05)
            / 2**m
            for m in range(pairs + 1)
        )  # fmt: skip
        assert size <= 0.05


def test_labels_of_a_run() -> None:
    family = [
        PairCounts(40, 0, 15, 5),  # the variant fixed 15 failures and broke none
        PairCounts(85, 3, 3, 9),  # no lean, and enough pairs to have seen one
        PairCounts(2, 1, 2, 0),  # five pairs: nothing could be shown
        PairCounts(30, 14, 0, 16),  # the variant broke 14
    ]
    labels = [c.label for c in compare_pairs(family)]
    assert labels == ["better", "no evidence of a change", "too few pairs to tell", "worse"]
    first = compare_pairs(family)[0]
    assert first.change == pytest.approx(0.25)
    assert first.low < 0.25 < first.high
    assert first.adjusted == pytest.approx(min(1.0, 4 * first.p_value))


# --- seeded simulations ------------------------------------------------------------------------

RUNS = 1_000
PROBES = 20
PAIRS = 40


def simulated_pairs(rng: random.Random, cells: tuple[float, float, float], n: int) -> PairCounts:
    """n pairs drawn with chances (both, base only, variant only); the rest failed both."""
    counts = [0, 0, 0, 0]
    for _ in range(n):
        draw, edge = rng.random(), 0.0
        for index, chance in enumerate((*cells, 1.0)):
            edge += chance
            if draw < edge or index == 3:
                counts[index] += 1
                break
    return PairCounts(*counts)


def any_changed(rng: random.Random, *, adjust: bool) -> bool:
    """A run of PROBES probes whose variant changes nothing (15% of pairs each way)."""
    family = [simulated_pairs(rng, (0.6, 0.15, 0.15), PAIRS) for _ in range(PROBES)]
    p_values = [mcnemar_exact(c.base_only, c.variant_only) for c in family]
    return any(p <= 0.05 for p in (holm(p_values) if adjust else p_values))


def test_a_variant_that_changes_nothing_is_called_changed_at_most_alpha_of_the_time() -> None:
    rng = random.Random(11)
    observed = sum(any_changed(rng, adjust=True) for _ in range(RUNS)) / RUNS
    assert observed <= 0.05


def test_without_holm_the_same_check_fails() -> None:
    rng = random.Random(11)
    observed = sum(any_changed(rng, adjust=False) for _ in range(RUNS)) / RUNS
    assert observed > 0.05 + 3 * math.sqrt(0.05 * 0.95 / RUNS)


@pytest.mark.parametrize(("harm", "pairs"), [(0.0, 55), (independent_harm(0.80, 0.94), 100)])
def test_simulated_power_at_the_pairs_needed_agrees_with_the_exact_sum(
    harm: float, pairs: int
) -> None:
    rng = random.Random(12)
    cells = (0.80 - harm, harm, harm + 0.14)
    called = 0
    for _ in range(RUNS):
        counts = simulated_pairs(rng, cells, pairs)
        b, c = counts.base_only, counts.variant_only
        called += c > b and mcnemar_exact(b, c) <= 0.05
    exact = paired_power(pairs, 0.80, 0.94, harm=harm)
    assert exact >= 0.80
    assert called / RUNS == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / RUNS))


def test_the_documented_table_is_the_computed_one() -> None:
    """docs/statistics.md's table of pairs needed is what the functions compute."""
    docs = Path(__file__).parents[2] / "docs" / "statistics.md"
    table = r"^\| (\d+)% → (\d+)% \| ((?:\d+ \| ){4}\d+) \|$"  # five columns of counts
    rows = re.findall(table, docs.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(rows) == 5
    for base, variant, cells in rows:
        b, v = int(base) / 100, int(variant) / 100
        computed = (
            pairs_needed(b, v),
            pairs_needed(b, v, method="normal"),
            pairs_needed(b, v, harm=independent_harm(b, v)),
            runs_per_side(v, b, alpha=0.025),
            runs_per_side(v, b),
        )
        assert tuple(int(c) for c in cells.split("|")) == computed
