"""Base against head: Newcombe's interval and Fisher's test against published and SciPy values,
Holm by hand, the labels, the runs needed per side, and seeded simulations of whole suites."""

from __future__ import annotations

import math
import random

import pytest

from ruledrift.stats import (
    binomial_pmf,
    compare,
    compare_suite,
    comparison_power,
    fisher_head_worse,
    fisher_power,
    holm,
    label_change,
    newcombe_interval,
    pass_rate,
    runs_per_side,
    smallest_p_value,
)


@pytest.mark.parametrize(
    ("counts", "low", "high"),
    [
        # Newcombe (1998), "Interval estimation for the difference between independent
        # proportions: comparison of eleven methods", Statistics in Medicine 17:873-890,
        # Table II, method 10, examples (a) to (h)
        ((56, 70, 48, 80), 0.0524, 0.3339),
        ((9, 10, 3, 10), 0.1705, 0.8090),
        ((6, 7, 2, 7), 0.0582, 0.8062),
        ((5, 56, 0, 29), -0.0381, 0.1926),
        ((0, 10, 0, 20), -0.1611, 0.2775),
        ((0, 10, 0, 10), -0.2775, 0.2775),
        ((10, 10, 0, 20), 0.6791, 1.0000),
        ((10, 10, 0, 10), 0.6075, 1.0000),
    ],
)
def test_newcombe_intervals_match_the_published_examples(
    counts: tuple[int, int, int, int], low: float, high: float
) -> None:
    got_low, got_high = newcombe_interval(*counts)
    assert (round(got_low, 4), round(got_high, 4)) == (low, high)


def test_the_worked_example_28_of_30_against_22_of_30() -> None:
    result = compare(pass_rate(28, 30), pass_rate(22, 30))
    assert result.drop == pytest.approx(0.20)
    assert result.low == pytest.approx(0.0075, abs=5e-5)  # "about 0.007"
    assert result.high == pytest.approx(0.3842, abs=5e-5)  # "about 0.384"
    # scipy.stats.fisher_exact([[28, 2], [22, 8]], alternative="greater")
    assert result.worse_p == pytest.approx(0.0398610073903954, abs=1e-12)
    assert result.label == "worse"


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        # scipy.stats.fisher_exact([[x1, n1 - x1], [x2, n2 - x2]], alternative="greater")
        ((56, 70, 48, 80), 0.006324711129898369),
        ((9, 10, 3, 10), 0.009883305548940223),
        ((3, 3, 0, 3), 0.05),
        ((19, 20, 12, 20), 0.009828009828009828),
    ],
)
def test_fisher_p_values_match_scipy(counts: tuple[int, int, int, int], expected: float) -> None:
    assert fisher_head_worse(*counts) == pytest.approx(expected, abs=1e-12)


def test_the_two_one_sided_p_values_overlap_in_the_observed_table() -> None:
    worse, better = fisher_head_worse(28, 30, 22, 30), fisher_head_worse(22, 30, 28, 30)
    observed = math.comb(50, 22) * math.comb(10, 8) / math.comb(60, 30)
    assert worse + better == pytest.approx(1 + observed)
    assert fisher_head_worse(10, 10, 10, 10) == 1.0
    p_values = [fisher_head_worse(28, 30, head, 30) for head in range(31)]
    assert p_values == sorted(p_values)


def test_the_smallest_possible_p_value_is_a_complete_collapse() -> None:
    assert smallest_p_value(3, 3) == fisher_head_worse(3, 3, 0, 3) == pytest.approx(0.05)
    assert smallest_p_value(2, 2) == pytest.approx(1 / 6)


@pytest.mark.parametrize(("counts"), [(0, 0, 1, 1), (1, 1, 2, 1), (-1, 3, 1, 3)])
def test_impossible_counts_are_refused(counts: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError, match="passes <= runs"):
        fisher_head_worse(*counts)


def test_holm_adjusts_a_hand_computed_example() -> None:
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → kept at 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == [1.0, 1.0]
    assert holm([0.01, 0.01]) == pytest.approx([0.02, 0.02])
    assert holm([0.2]) == [0.2]
    assert holm([]) == []


@pytest.mark.parametrize(
    ("worse", "better", "runs", "probes", "label"),
    [
        (0.04, 0.99, 30, 1, "worse"),
        (0.99, 0.05, 30, 1, "better"),
        (0.30, 0.90, 67, 1, "no evidence of a change"),  # power 80.6% to see 95% -> 80%
        (0.30, 0.90, 66, 1, "too few runs to tell"),  # power 79.96%
        (0.30, 0.90, 17, 1, "too few runs to tell"),  # two --repeat auto reports: power 14%
        (0.30, 0.90, 101, 5, "no evidence of a change"),  # at 5% / 5 (Holm's first step)
        (0.30, 0.90, 100, 5, "too few runs to tell"),
        (0.01, 0.99, 3, 2, "worse"),
    ],
)
def test_labels(worse: float, better: float, runs: int, probes: int, label: str) -> None:
    assert label_change(worse, better, runs, runs, alpha=0.05, probes=probes) == label


def test_too_few_runs_is_the_power_to_see_the_planned_drop() -> None:
    assert comparison_power(17, 17) == pytest.approx(fisher_power(17, 0.95, 0.80))
    assert comparison_power(17, 17) < 0.15
    assert comparison_power(67, 67) >= 0.80 > comparison_power(67, 67, probes=2)
    # the drop to plan for is the policy's: 95% -> 70% is easier to see than 95% -> 80%
    assert label_change(0.3, 0.9, 40, 40, planned=(0.95, 0.70)) == "no evidence of a change"
    assert label_change(0.3, 0.9, 40, 40, planned=(0.95, 0.80)) == "too few runs to tell"


def brute_power(
    base_runs: int, head_runs: int, p_base: float, p_head: float, alpha: float
) -> float:
    """Every pair of outcomes, each tested with `fisher_head_worse` (itself checked against
    scipy above)."""
    return sum(
        binomial_pmf(x1, base_runs, p_base) * binomial_pmf(x2, head_runs, p_head)
        for x1 in range(base_runs + 1)
        for x2 in range(head_runs + 1)
        if fisher_head_worse(x1, base_runs, x2, head_runs) <= alpha
    )


@pytest.mark.parametrize(
    ("base", "head", "alpha"), [(12, 20, 0.05), (25, 9, 0.01), (15, 15, 0.002)]
)
def test_the_power_with_unequal_run_counts_is_every_outcome_summed(
    base: int, head: int, alpha: float
) -> None:
    exact = fisher_power(base, 0.95, 0.80, alpha, head_runs=head)
    assert exact == pytest.approx(brute_power(base, head, 0.95, 0.80, alpha), abs=1e-12)


def test_a_suite_adjusts_each_probe_for_the_others() -> None:
    unchanged = (pass_rate(29, 30), pass_rate(29, 30))
    alone = compare_suite([(pass_rate(28, 30), pass_rate(22, 30))])
    among = compare_suite([(pass_rate(28, 30), pass_rate(22, 30)), unchanged, unchanged])
    assert alone[0].label == "worse"
    assert among[0].worse_p == alone[0].worse_p
    assert among[0].worse_adjusted == pytest.approx(3 * alone[0].worse_p)
    assert [c.label for c in among] == ["too few runs to tell"] * 3  # 30 a side: under 80% power


def test_a_head_that_passes_more_is_better() -> None:
    result = compare(pass_rate(22, 30), pass_rate(28, 30))
    assert result.label == "better"
    assert result.drop == pytest.approx(-0.20)
    assert result.high == pytest.approx(-0.0075, abs=5e-5)


def test_runs_per_side_for_a_drop_from_95_to_80_percent() -> None:
    assert runs_per_side(0.95, 0.80, alpha=0.05, power=0.80) == 67
    assert runs_per_side(0.95, 0.80, method="normal") == 60
    # brute force with scipy.stats.fisher_exact over every pair of outcomes
    assert fisher_power(66, 0.95, 0.80) == pytest.approx(0.7996142460123181, abs=1e-12)
    assert fisher_power(67, 0.95, 0.80) == pytest.approx(0.806041054562929, abs=1e-12)
    assert fisher_power(20, 0.95, 0.80) == pytest.approx(0.21334290802328842, abs=1e-12)


def test_runs_per_side_grow_as_the_drop_shrinks() -> None:
    needed = [runs_per_side(0.95, head) for head in (0.65, 0.75, 0.85)]
    assert needed == sorted(needed)


@pytest.mark.parametrize(("runs", "alpha"), [(0, 0.05), (10, 0.0), (10, 1.0)])
def test_power_needs_runs_and_a_level(runs: int, alpha: float) -> None:
    with pytest.raises(ValueError, match="runs >= 1 and 0 < alpha < 1"):
        fisher_power(runs, 0.95, 0.80, alpha)


@pytest.mark.parametrize(("base", "head"), [(0.8, 0.9), (0.9, 0.9), (1.0, 0.9)])
def test_runs_per_side_needs_a_drop(base: float, head: float) -> None:
    with pytest.raises(ValueError, match="p_head < p_base"):
        runs_per_side(base, head)


# --- seeded simulations ------------------------------------------------------------------------

SUITES = 1_000
PROBES = 20  # Fisher's test is conservative at 90% (about 1% per probe), so it takes a big suite
RUNS = 30  # for the unadjusted p-values to break the family-wise bound


def simulated_pair(rng: random.Random, base: float, head: float, runs: int) -> tuple[int, int]:
    return sum(rng.random() < base for _ in range(runs)), sum(
        rng.random() < head for _ in range(runs)
    )


def any_worse(rng: random.Random, *, adjust: bool) -> bool:
    pairs = [simulated_pair(rng, 0.9, 0.9, RUNS) for _ in range(PROBES)]
    p_values = [fisher_head_worse(b, RUNS, h, RUNS) for b, h in pairs]
    return any(p <= 0.05 for p in (holm(p_values) if adjust else p_values))


def test_an_unchanged_suite_is_called_worse_at_most_alpha_of_the_time() -> None:
    rng = random.Random(5)
    observed = sum(any_worse(rng, adjust=True) for _ in range(SUITES)) / SUITES
    assert observed <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / SUITES)


def test_without_holm_the_same_check_fails() -> None:
    rng = random.Random(5)
    observed = sum(any_worse(rng, adjust=False) for _ in range(SUITES)) / SUITES
    assert observed > 0.05 + 3 * math.sqrt(0.05 * 0.95 / SUITES)


def test_simulated_power_agrees_with_the_exact_sum() -> None:
    rng = random.Random(6)
    pairs = [simulated_pair(rng, 0.95, 0.80, 67) for _ in range(SUITES)]
    observed = sum(fisher_head_worse(b, 67, h, 67) <= 0.05 for b, h in pairs) / SUITES
    exact = fisher_power(67, 0.95, 0.80)
    assert observed == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / SUITES))


def test_runs_per_side_refuses_at_once_when_even_the_normal_estimate_is_past_the_limit() -> None:
    """0.9999 against 0.9998 needs millions of runs: the exact search ran 2,000 sizes of
    ever longer sums (minutes, `compare` seemed to hang) before it gave up."""
    with pytest.raises(ValueError, match=r"more than 2000 runs per side \(normal: \d{6,}\)"):
        runs_per_side(0.9999, 0.9998)
