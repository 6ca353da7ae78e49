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
from dataclasses import replace

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
    assert design == SequentialDesign(0.95, 0.80, 0.05, 0.20, None, 5)


@pytest.mark.parametrize(
    ("probes", "cap", "holds_at_cap"), [(1, 37, 4), (10, 66, 8), (50, 92, 12), (200, 105, 14)]
)
def test_the_cap_is_the_smallest_that_decides_every_probe_within_both_bounds(
    probes: int, cap: int, holds_at_cap: int
) -> None:
    design = SequentialDesign.for_suite(probes)
    assert (design.cap, design.cap_holds_up_to, design.decides_at_cap) == (cap, holds_at_cap, True)
    assert (design.holds_up_to(cap), design.drifted_from(cap)) == (holds_at_cap, holds_at_cap + 1)
    shorter = SequentialDesign.for_suite(probes, max_runs=cap - 1)
    assert (shorter.cap, shorter.decides_at_cap) == (cap - 1, False)


def test_a_given_cap_is_the_most_runs_a_probe_takes() -> None:
    # at 67 to 71 runs no count keeps both bounds for 10 probes (exact errors are saw-toothed):
    # "at most 70 runs" is then met with the largest cap that does, 66
    assert SequentialDesign.for_suite(10, max_runs=70).cap == 66
    assert SequentialDesign.for_suite(10, max_runs=96).cap == 96
    assert SequentialDesign.for_suite(10, max_runs=66) == replace(
        SequentialDesign.for_suite(10), max_runs=66
    )


def test_ten_clean_runs_hold_and_two_failures_in_two_runs_drift() -> None:
    design = SequentialDesign()
    assert [decide(n, n, design).verdict for n in (9, 10)] == ["undecided", "holds"]
    assert decide(0, 2, design).verdict == "drifted"  # 2·ln 4 = ln 16: an exact tie counts
    assert decide(1, 2, design).verdict == "undecided"


def test_the_boundaries_grow_with_the_runs_and_meet_at_the_cap() -> None:
    design = SequentialDesign()
    holds = [design.holds_up_to(n) for n in range(38)]
    drifted = [design.drifted_from(n) for n in range(38)]
    assert holds[:10] == [-1] * 10
    assert (holds[10], holds[19], holds[28], holds[36], holds[37]) == (0, 1, 2, 2, 4)
    assert (drifted[2], drifted[3], drifted[12], drifted[21], drifted[37]) == (2, 3, 4, 5, 5)
    assert holds == sorted(holds)
    assert drifted == sorted(drifted)
    # Wald's boundary alone asks 6 failures at 30 runs; more than the 4 the cap allows for
    # "holds" already decide "drifted", as no run left can change it
    assert design.sprt_drifted(30) == 6
    assert design.drifted_from(30) == 5


@pytest.mark.parametrize(
    ("passes", "runs", "verdict", "explanation"),
    [
        (0, 0, "undecided", "undecided: no runs yet; 10 more passes in a row would decide"),
        (5, 7, "undecided", "undecided: 2 of 7 runs failed; 21 more passes in a row would"),
        (12, 12, "holds", "holds: 0 of 12 runs failed, evidence enough that the pass rate is at"),
        (6, 9, "drifted", "drifted: 3 of 9 runs failed, evidence enough that the pass rate is at"),
        (33, 37, "holds", "holds: 4 of 37 runs failed, and at the cap of 37 runs at most 4 fail"),
        (25, 30, "drifted", "drifted: 5 of 30 runs failed, more than the 4 failures with which"),
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
    short = SequentialDesign(max_runs=30)  # below the 37 runs that decide every probe
    assert not short.decides_at_cap
    inconclusive = decide(27, 30, short).explanation
    assert inconclusive.startswith("inconclusive: 3 of 30 runs failed and 30 is the cap;")
    assert "'holds' needed at most 2 failures and 'drifted' at least 6" in inconclusive
    assert "90.0% (95% interval 74.4%–96.5%)" in inconclusive
    assert "7 more passes in a row would decide 'holds'" in inconclusive
    tiny = decide(3, 5, SequentialDesign(max_runs=5)).explanation
    assert "'holds' needed more runs" in tiny
    assert "'holds' is out of reach within 10 runs" in tiny


def test_runs_that_could_not_be_made_count_against_the_verdict_they_could_change() -> None:
    design = SequentialDesign()
    # 11 clean runs hold; with a 12th run errored, "holds" needs the error counted as a
    # failure to fit, which takes 19 runs
    assert decide(11, 11, design).verdict == "holds"
    assert decide(11, 12, design, errors=1).verdict == "undecided"
    assert decide(18, 19, design, errors=1).verdict == "holds"
    assert "16 more passes in a row" in decide(10, 12, design, errors=1).explanation
    # "drifted" counts them as passes: 3 failures in 9 runs drift, with or without an error
    assert decide(5, 9, design, errors=1).verdict == "drifted"
    # once the errors alone rule out "holds" and the runs made do not show "drifted", the
    # errors could change the verdict: incomplete, without running to the cap
    incomplete = decide(0, 5, design, errors=5)
    assert incomplete.verdict == "incomplete"
    assert "rule out 'holds' (at most 4 failures by the cap of 37 runs)" in (incomplete.explanation)
    assert decide(31, 37, design, errors=2).verdict == "incomplete"  # 4 + 2 > 4 at the cap
    assert decide(33, 37, design).verdict == "holds"


@pytest.mark.parametrize(
    ("passes", "runs", "errors"), [(-1, 3, 0), (4, 3, 0), (0, 38, 0), (2, 3, 2)]
)
def test_impossible_or_over_the_cap_counts_are_refused(passes: int, runs: int, errors: int) -> None:
    with pytest.raises(ValueError, match="passes <= runs <= the cap"):
        decide(passes, runs, SequentialDesign(), errors)


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


def reference_errors(design: SequentialDesign, pass_rate: float) -> tuple[float, float, float]:
    """P(drifted), P(holds) and P(inconclusive) of the truncated test, written independently of
    the module: it tracks the log-likelihood ratio of each state against the two bounds, and at
    the cap applies the design's count (no curtailment: it changes when a probe stops, never
    how it ends)."""
    states = {0: 1.0}  # failures so far -> chance, for the paths still running
    drifted = holds = 0.0
    for runs in range(1, design.cap + 1):
        following: dict[int, float] = {}
        for failures, chance in states.items():
            following[failures] = following.get(failures, 0.0) + chance * pass_rate
            following[failures + 1] = following.get(failures + 1, 0.0) + chance * (1 - pass_rate)
        states = {}
        for failures, chance in following.items():
            ratio = design.log_ratio(failures, runs)
            if ratio >= design.drift_bound - 1e-9:
                drifted += chance
            elif ratio <= design.hold_bound + 1e-9:
                holds += chance
            elif runs < design.cap or design.cap_holds_up_to is None:
                states[failures] = chance
            elif failures <= design.cap_holds_up_to:
                holds += chance
            else:
                drifted += chance
    return drifted, holds, sum(states.values())


@pytest.mark.parametrize("probes", [1, 5, 20, 200])
def test_the_exact_error_rates_are_within_the_bounds(probes: int) -> None:
    design = SequentialDesign.for_suite(probes)
    at_holds = operating_characteristic(design, 0.95)
    at_drifted = operating_characteristic(design, 0.80)
    assert at_holds.drifted <= design.probe_alpha
    assert at_drifted.holds <= design.beta
    for oc in (at_holds, at_drifted):
        assert oc.holds + oc.drifted + oc.inconclusive == pytest.approx(1.0, abs=1e-12)
        assert oc.inconclusive == 0.0
        assert math.fsum(oc.stops) == pytest.approx(1.0, abs=1e-12)
    assert reference_errors(design, 0.95)[0] == pytest.approx(at_holds.drifted, abs=1e-14)
    assert reference_errors(design, 0.80)[1] == pytest.approx(at_drifted.holds, abs=1e-14)


def test_the_exact_figures_for_one_probe() -> None:
    design = SequentialDesign()
    at_holds = operating_characteristic(design, 0.95)
    at_drifted = operating_characteristic(design, 0.80)
    assert at_holds.drifted == pytest.approx(0.04051, abs=1e-5)
    assert at_holds.mean_runs == pytest.approx(15.73, abs=0.01)
    assert at_drifted.holds == pytest.approx(0.19556, abs=1e-5)
    assert at_drifted.mean_runs == pytest.approx(15.96, abs=0.01)
    assert (at_holds.runs_percentile(0.95), at_drifted.runs_percentile(0.95)) == (37, 36)


def test_a_cap_below_the_derived_one_leaves_some_probes_inconclusive_within_the_bounds() -> None:
    design = SequentialDesign.for_suite(10, max_runs=40)
    at_holds = operating_characteristic(design, 0.95)
    at_drifted = operating_characteristic(design, 0.80)
    assert at_holds.drifted <= design.probe_alpha
    assert at_drifted.holds <= design.beta
    assert at_holds.inconclusive == pytest.approx(reference_errors(design, 0.95)[2], abs=1e-14)
    assert at_drifted.inconclusive > 0.2  # the price: a quarter of drifted probes undecided


@pytest.mark.parametrize(
    ("settings", "reach"), [((0.99, 0.85, 0.20, 0.01), None), ((0.99, 0.80, 0.40, 0.01), 20)]
)
def test_walds_bounds_are_moved_where_they_alone_would_break_a_bound(
    settings: tuple[float, float, float, float], reach: int | None
) -> None:
    """Where Wald's approximate bounds let the test itself break an error bound before any cap
    can decide (a derived design), or at a given cap too short to decide, the bound moves out."""
    holds_at, drifted_at, alpha, beta = settings
    design = SequentialDesign(holds_at, drifted_at, alpha, beta, max_runs=reach)
    assert design.hold_bound < math.log(beta / (1 - alpha)) - 1e-6
    assert design.drift_bound == pytest.approx(math.log((1 - beta) / alpha))
    drifted, _, _ = reference_errors(design, holds_at)
    _, held, _ = reference_errors(design, drifted_at)
    assert drifted <= alpha
    assert held <= beta
    assert design.decides_at_cap is (reach is None)


@pytest.mark.parametrize("probes", [1, 5, 200])
def test_the_error_rates_only_shrink_beyond_the_two_rates(probes: int) -> None:
    design = SequentialDesign.for_suite(probes)
    rates = [0.5 + i / 200 for i in range(101)]
    drifted = [operating_characteristic(design, p).drifted for p in rates]
    holds = [operating_characteristic(design, p).holds for p in rates]
    assert drifted == sorted(drifted, reverse=True)
    assert holds == sorted(holds)


def test_the_dynamic_programme_agrees_with_every_path_of_a_short_test() -> None:
    design = SequentialDesign(0.95, 0.70, alpha=0.10, beta=0.20)
    assert (design.cap, design.cap_holds_up_to) == (12, 1)
    chances = {"holds": 0.0, "drifted": 0.0, "inconclusive": 0.0}
    runs_taken = [0.0] * 13
    for outcomes in itertools.product((True, False), repeat=12):
        passes = runs = 0
        while (decision := decide(passes, runs, design)).verdict == "undecided":
            passes += outcomes[runs]
            runs += 1
        chance = 0.9**passes * 0.1 ** (runs - passes) / 2 ** (12 - runs)
        chances[decision.verdict] += chance
        runs_taken[runs] += chance
    exact = operating_characteristic(design, 0.9)
    assert chances["holds"] == pytest.approx(exact.holds, abs=1e-13)
    assert chances["drifted"] == pytest.approx(exact.drifted, abs=1e-13)
    assert chances["inconclusive"] == exact.inconclusive == 0.0
    assert runs_taken == pytest.approx(list(exact.stops), abs=1e-13)


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
    assert miss_rate(suites) == pytest.approx(exact.holds, abs=0.02)


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
