"""The sequential test: its bounds, its exact error rates, and seeded simulations of whole suites.

The simulations check the promises a user relies on with a Monte-Carlo tolerance of three standard
errors of the bound itself: observed ≤ bound + 3·√(bound·(1 − bound)/N). The seeds are fixed, so
the tests are deterministic; the margins are wide enough that any other seed would pass too (the
real rates sit well below the bounds), and a deliberately broken design shows they can fail.
"""

from __future__ import annotations

import itertools
import math
import random

import pytest

from ruledrift.stats import (
    Decision,
    SequentialDesign,
    decide,
    fixed_design,
    operating_characteristic,
    zero_failure_runs,
)

SUITES = 1_000
PROBES = 5


def run_probe(rng: random.Random, pass_rate: float, design: SequentialDesign) -> Decision:
    """Run a probe the way the runner will: decide after every run, stop at the first verdict."""
    passes = runs = 0
    while (decision := decide(passes, runs, design)).verdict == "undecided":
        runs += 1
        passes += rng.random() < pass_rate
    return decision


def run_suites(seed: int, pass_rate: float, design: SequentialDesign) -> list[list[Decision]]:
    rng = random.Random(seed)
    return [[run_probe(rng, pass_rate, design) for _ in range(PROBES)] for _ in range(SUITES)]


def tolerance(bound: float, trials: int) -> float:
    return bound + 3 * math.sqrt(bound * (1 - bound) / trials)


# --- fixed designs ---------------------------------------------------------------------------


def test_a_fixed_test_of_95_against_80_needs_27_runs_and_fails_at_4_failures() -> None:
    design = fixed_design(0.95, 0.80, alpha=0.05, beta=0.20)
    assert (design.runs, design.fail_at) == (27, 4)
    # scipy.stats.binom.sf(3, 27, 0.05) and binom.sf(3, 27, 0.2)
    assert design.false_alarm == pytest.approx(0.04373594529051934, abs=1e-12)
    assert design.power == pytest.approx(0.8177166537612315, abs=1e-12)


def test_stricter_error_bounds_need_more_fixed_runs() -> None:
    stricter_miss = fixed_design(0.95, 0.80, alpha=0.05, beta=0.15)
    stricter_alarm = fixed_design(0.95, 0.80, alpha=0.01, beta=0.20)  # a suite of 5 probes
    assert (stricter_miss.runs, stricter_miss.fail_at) == (35, 5)
    assert (stricter_alarm.runs, stricter_alarm.fail_at) == (44, 7)


@pytest.mark.parametrize(
    ("at_least", "confidence", "runs"),
    [(0.95, 0.95, 59), (0.99, 0.95, 299), (0.90, 0.99, 44), (0.5, 0.75, 2)],
)
def test_runs_needed_to_show_a_rate_with_no_failures(
    at_least: float, confidence: float, runs: int
) -> None:
    assert zero_failure_runs(at_least, confidence) == runs
    assert at_least**runs <= 1 - confidence < at_least ** (runs - 1)


# --- the design and its bounds -----------------------------------------------------------------


def test_the_default_design_keeps_walds_bounds_because_they_already_hold_exactly() -> None:
    design = SequentialDesign()
    assert design.drift_bound == pytest.approx(math.log(0.80 / 0.05))
    assert design.hold_bound == pytest.approx(math.log(0.20 / 0.95))
    assert design.probe_alpha == 0.05


def test_a_suite_splits_the_false_alarm_bound_across_its_probes() -> None:
    design = SequentialDesign.for_suite(5, alpha=0.05)
    assert design.probe_alpha == pytest.approx(0.01)
    assert design.drift_bound == pytest.approx(math.log(0.80 / 0.01))
    assert design == SequentialDesign(0.95, 0.80, 0.05, 0.20, 60, 5)


def test_ten_clean_runs_hold_and_two_failures_in_two_runs_drift() -> None:
    design = SequentialDesign()
    assert [decide(n, n, design).verdict for n in (9, 10)] == ["undecided", "holds"]
    assert decide(0, 2, design).verdict == "drifted"  # 2·ln 4 = ln 16: an exact tie counts
    assert decide(1, 2, design).verdict == "undecided"


def test_the_boundaries_grow_with_the_runs() -> None:
    design = SequentialDesign()
    holds = [design.holds_up_to(n) for n in range(61)]
    drifted = [design.drifted_from(n) for n in range(61)]
    assert holds[:10] == [-1] * 10
    assert (holds[10], holds[19], holds[28], holds[60]) == (0, 1, 2, 5)
    assert (drifted[2], drifted[3], drifted[12], drifted[60]) == (2, 3, 4, 9)
    assert holds == sorted(holds)
    assert drifted == sorted(drifted)
    assert (design.holds_up_to(120), design.drifted_from(120)) == (12, 16)


@pytest.mark.parametrize(
    ("passes", "runs", "verdict", "explanation"),
    [
        (0, 0, "undecided", "undecided: no runs yet; 10 more passes in a row would decide"),
        (5, 7, "undecided", "undecided: 2 of 7 runs failed; 21 more passes in a row would"),
        (12, 12, "holds", "holds: 0 of 12 runs failed, evidence enough that the pass rate is at"),
        (6, 9, "drifted", "drifted: 3 of 9 runs failed, evidence enough that the pass rate is at"),
        (53, 60, "inconclusive", "inconclusive: 7 of 60 runs failed and 60 is the cap; 'holds'"),
    ],
)
def test_each_verdict_explains_itself(
    passes: int, runs: int, verdict: str, explanation: str
) -> None:
    decision = decide(passes, runs, SequentialDesign())
    assert (decision.verdict, decision.passes, decision.runs) == (verdict, passes, runs)
    assert decision.explanation.startswith(explanation)


def test_an_open_verdict_says_what_would_decide_it() -> None:
    design = SequentialDesign()
    assert decide(5, 7, design).explanation.endswith(
        "21 more passes in a row would decide 'holds', 1 more failure in a row would decide "
        "'drifted'"
    )
    inconclusive = decide(53, 60, design).explanation
    assert "'holds' needed at most 5 failures and 'drifted' at least 9" in inconclusive
    assert "88.3% (95% interval 77.8%–94.2%)" in inconclusive
    assert "13 more passes in a row would decide 'holds'" in inconclusive
    short = decide(3, 5, SequentialDesign(max_runs=5)).explanation
    assert "'holds' needed more runs" in short
    assert "'holds' is out of reach within 10 runs" in short


@pytest.mark.parametrize(("passes", "runs"), [(-1, 3), (4, 3), (0, 61)])
def test_impossible_or_over_the_cap_counts_are_refused(passes: int, runs: int) -> None:
    with pytest.raises(ValueError, match="passes <= runs <= max_runs"):
        decide(passes, runs, SequentialDesign())


@pytest.mark.parametrize(
    "settings",
    [
        {"holds_at": 0.8, "drifted_at": 0.9},
        {"alpha": 0.0},
        {"beta": 1.0},
        {"max_runs": 0},
        {"probes": 0},
    ],
)
def test_impossible_designs_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=r"need|must be"):
        SequentialDesign(**settings)  # type: ignore[arg-type]


# --- exact error rates -------------------------------------------------------------------------


def reference_errors(
    design: SequentialDesign, upper: float, lower: float, pass_rate: float
) -> tuple[float, float]:
    """P(drifted) and P(holds) of the truncated test with log-ratio bounds `upper` and `lower`.

    Written independently of the module: it tracks the log-likelihood ratio of each state.
    """
    states = {0: 1.0}  # failures so far -> chance, for the paths still running
    drifted = holds = 0.0
    for runs in range(1, design.max_runs + 1):
        following: dict[int, float] = {}
        for failures, chance in states.items():
            following[failures] = following.get(failures, 0.0) + chance * pass_rate
            following[failures + 1] = following.get(failures + 1, 0.0) + chance * (1 - pass_rate)
        states = {}
        for failures, chance in following.items():
            ratio = design.log_ratio(failures, runs)
            if ratio >= upper - 1e-9:
                drifted += chance
            elif ratio <= lower + 1e-9:
                holds += chance
            else:
                states[failures] = chance
    return drifted, holds


@pytest.mark.parametrize("probes", [1, 5, 20])
def test_the_exact_error_rates_are_within_the_bounds(probes: int) -> None:
    design = SequentialDesign.for_suite(probes)
    at_holds = operating_characteristic(design, 0.95)
    at_drifted = operating_characteristic(design, 0.80)
    assert at_holds.drifted <= design.probe_alpha
    assert at_drifted.holds <= design.beta
    for oc in (at_holds, at_drifted):
        assert oc.holds + oc.drifted + oc.inconclusive == pytest.approx(1.0, abs=1e-12)
    bounds = (design.drift_bound, design.hold_bound)
    assert reference_errors(design, *bounds, 0.95)[0] == pytest.approx(at_holds.drifted)
    assert reference_errors(design, *bounds, 0.80)[1] == pytest.approx(at_drifted.holds)


def test_the_exact_figures_for_one_probe() -> None:
    design = SequentialDesign()
    at_holds = operating_characteristic(design, 0.95)
    at_drifted = operating_characteristic(design, 0.80)
    assert at_holds.drifted == pytest.approx(0.03321, abs=1e-5)
    assert at_holds.inconclusive == pytest.approx(0.00942, abs=1e-5)
    assert at_holds.mean_runs == pytest.approx(16.35, abs=0.01)
    assert at_drifted.holds == pytest.approx(0.17301, abs=1e-5)
    assert at_drifted.inconclusive == pytest.approx(0.01234, abs=1e-5)
    assert at_drifted.mean_runs == pytest.approx(16.98, abs=0.01)


def test_walds_bounds_are_moved_when_they_would_break_the_miss_bound() -> None:
    design = SequentialDesign(0.99, 0.85, alpha=0.20, beta=0.05)
    wald_upper, wald_lower = math.log(0.95 / 0.20), math.log(0.05 / 0.80)
    assert reference_errors(design, wald_upper, wald_lower, 0.85)[1] > 0.05
    assert design.hold_bound < wald_lower
    assert operating_characteristic(design, 0.85).holds <= 0.05
    assert operating_characteristic(design, 0.99).drifted <= 0.20


def test_the_error_rates_only_shrink_beyond_the_two_rates() -> None:
    design = SequentialDesign.for_suite(5)
    rates = [0.5 + i / 200 for i in range(100)]
    drifted = [operating_characteristic(design, p).drifted for p in rates]
    holds = [operating_characteristic(design, p).holds for p in rates]
    assert drifted == sorted(drifted, reverse=True)
    assert holds == sorted(holds)


def test_the_dynamic_programme_agrees_with_every_path_of_a_short_test() -> None:
    design = SequentialDesign(max_runs=12)
    chances = {"holds": 0.0, "drifted": 0.0, "inconclusive": 0.0}
    for outcomes in itertools.product((True, False), repeat=12):
        passes = runs = 0
        while (decision := decide(passes, runs, design)).verdict == "undecided":
            passes += outcomes[runs]
            runs += 1
        chances[decision.verdict] += 0.9**passes * 0.1 ** (runs - passes) / 2 ** (12 - runs)
    exact = operating_characteristic(design, 0.9)
    assert chances["holds"] == pytest.approx(exact.holds)
    assert chances["drifted"] == pytest.approx(exact.drifted)
    assert chances["inconclusive"] == pytest.approx(exact.inconclusive)


# --- seeded simulations of whole suites ----------------------------------------------------------


def false_alarm_rate(suites: list[list[Decision]]) -> float:
    """The share of suites of good probes in which any probe was called "drifted"."""
    return sum(any(d.verdict == "drifted" for d in suite) for suite in suites) / len(suites)


def miss_rate(suites: list[list[Decision]]) -> float:
    """The share of drifted probes that were called "holds"."""
    decisions = [d for suite in suites for d in suite]
    return sum(d.verdict == "holds" for d in decisions) / len(decisions)


def test_a_suite_of_good_probes_raises_a_false_alarm_at_most_alpha_of_the_time() -> None:
    design = SequentialDesign.for_suite(PROBES, alpha=0.05)
    suites = run_suites(1, 0.95, design)
    observed = false_alarm_rate(suites)
    assert observed <= tolerance(0.05, SUITES)
    exact = 1 - (1 - operating_characteristic(design, 0.95).drifted) ** PROBES
    assert observed == pytest.approx(exact, abs=4 * math.sqrt(exact * (1 - exact) / SUITES))


def test_without_the_split_the_same_check_fails() -> None:
    unsplit = SequentialDesign(alpha=0.05)  # each of the 5 probes gets the whole 5%
    assert false_alarm_rate(run_suites(1, 0.95, unsplit)) > tolerance(0.05, SUITES)


def test_a_drifted_probe_is_missed_at_most_beta_of_the_time() -> None:
    design = SequentialDesign.for_suite(PROBES, beta=0.20)
    suites = run_suites(2, 0.80, design)
    assert miss_rate(suites) <= tolerance(0.20, SUITES * PROBES)
    exact = operating_characteristic(design, 0.80)
    inconclusive = sum(d.verdict == "inconclusive" for s in suites for d in s) / (SUITES * PROBES)
    assert inconclusive == pytest.approx(exact.inconclusive, abs=0.015)


def test_with_a_looser_miss_bound_the_same_check_fails() -> None:
    loose = SequentialDesign.for_suite(PROBES, beta=0.40)
    assert miss_rate(run_suites(2, 0.80, loose)) > tolerance(0.20, SUITES * PROBES)


@pytest.mark.parametrize(("seed", "pass_rate"), [(3, 0.95), (4, 0.80)])
def test_the_sequential_test_needs_fewer_runs_on_average_than_the_fixed_one(
    seed: int, pass_rate: float
) -> None:
    design = SequentialDesign()
    rng = random.Random(seed)
    runs = [run_probe(rng, pass_rate, design).runs for _ in range(SUITES)]
    mean = sum(runs) / len(runs)
    spread = math.sqrt(sum((r - mean) ** 2 for r in runs) / (len(runs) - 1) / len(runs))
    assert mean == pytest.approx(
        operating_characteristic(design, pass_rate).mean_runs, abs=4 * spread
    )
    assert mean + 3 * spread < fixed_design().runs
