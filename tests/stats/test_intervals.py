"""Wilson intervals against published values, and the normal quantile against SciPy's."""

from __future__ import annotations

import math

import pytest

from ruledrift.stats import (
    PassRate,
    binomial_pmf,
    normal_quantile,
    pass_rate,
    wilson_interval,
    z_for,
)


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        # scipy.stats.norm.ppf (SciPy 1.17.1), to 1e-12
        (0.975, 1.959963984540054),
        (0.95, 1.6448536269514722),
        (0.995, 2.5758293035489004),
        (0.8, 0.8416212335729143),
        (0.999, 3.090232306167813),
        (1e-8, -5.612001244174789),
        (0.5, 0.0),
    ],
)
def test_the_normal_quantile_matches_reference_values(p: float, expected: float) -> None:
    assert normal_quantile(p) == pytest.approx(expected, abs=1e-12)


def test_the_normal_quantile_inverts_the_normal_distribution_across_its_range() -> None:
    for i in range(1, 2000):
        p = i / 2000
        x = normal_quantile(p)
        assert 0.5 * math.erfc(-x / math.sqrt(2)) == pytest.approx(p, rel=1e-12)
        assert normal_quantile(1 - p) == pytest.approx(-x, abs=1e-12)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5])
def test_the_normal_quantile_rejects_probabilities_outside_the_open_interval(p: float) -> None:
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        normal_quantile(p)


def test_the_critical_value_comes_from_the_confidence_level() -> None:
    assert z_for(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    assert z_for(0.90) == pytest.approx(1.6448536269514722, abs=1e-12)
    assert z_for(0.99) == pytest.approx(2.5758293035489004, abs=1e-12)


@pytest.mark.parametrize(
    ("passes", "runs", "low", "high", "decimals"),
    [
        # the values the feature request quotes, to 3 decimals
        (9, 10, 0.596, 0.982, 3),
        (18, 20, 0.699, 0.972, 3),
        # Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison
        # of seven methods", Statistics in Medicine 17:857-872, method 3, to 4 decimals
        (81, 263, 0.2553, 0.3662, 4),
        (15, 148, 0.0624, 0.1605, 4),
        (0, 20, 0.0, 0.1611, 4),
        (1, 29, 0.0061, 0.1718, 4),
    ],
)
def test_wilson_intervals_match_published_values(
    passes: int, runs: int, low: float, high: float, decimals: int
) -> None:
    got_low, got_high = wilson_interval(passes, runs)
    assert (round(got_low, decimals), round(got_high, decimals)) == (low, high)


def test_the_interval_reaches_exactly_zero_and_one_at_the_extremes() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0
    assert wilson_interval(20, 20)[0] == pytest.approx(0.8389, abs=1e-4)


def test_the_interval_holds_the_rate_and_narrows_with_more_runs_and_less_confidence() -> None:
    for runs in range(1, 60):
        for passes in range(runs + 1):
            low, high = wilson_interval(passes, runs)
            assert 0 <= low <= passes / runs <= high <= 1
    assert _width(90, 100) < _width(9, 10)
    assert _width(9, 10, 0.90) < _width(9, 10, 0.95) < _width(9, 10, 0.99)


def _width(passes: int, runs: int, confidence: float = 0.95) -> float:
    low, high = wilson_interval(passes, runs, confidence)
    return high - low


@pytest.mark.parametrize(("passes", "runs"), [(0, 0), (-1, 5), (6, 5)])
def test_impossible_counts_are_refused(passes: int, runs: int) -> None:
    with pytest.raises(ValueError, match="passes <= runs"):
        wilson_interval(passes, runs)


def test_a_pass_rate_carries_its_counts_rate_and_interval() -> None:
    rate = pass_rate(18, 20)
    assert rate == PassRate(18, 20, 0.9, *wilson_interval(18, 20), confidence=0.95)
    assert rate.failures == 2
    assert str(rate) == "18/20 passed (90.0%, 95% interval 69.9%–97.2%)"
    assert str(pass_rate(9, 10, 0.90)).endswith("90% interval 65.2%–97.7%)")


def test_binomial_probabilities_are_exact_sum_to_one_and_do_not_overflow() -> None:
    assert binomial_pmf(3, 10, 0.2) == pytest.approx(120 * 0.2**3 * 0.8**7, rel=1e-12)
    assert sum(binomial_pmf(k, 60, 0.95) for k in range(61)) == pytest.approx(1.0, abs=1e-12)
    assert sum(binomial_pmf(k, 1100, 0.5) for k in range(1101)) == pytest.approx(1.0, abs=1e-9)
    assert binomial_pmf(-1, 10, 0.5) == binomial_pmf(11, 10, 0.5) == 0.0
    assert binomial_pmf(10, 10, 1.0) == binomial_pmf(0, 10, 0.0) == 1.0
