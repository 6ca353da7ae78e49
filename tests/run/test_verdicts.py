"""The verdict rules of `run/verdicts.py`, called directly: how a probe's runs become its status
under `--repeat N` (with and without `--min-pass-rate`) and `--repeat auto`, and what a policy
promises a suite.

The expected values are worked out apart from the code under test: by hand from the rules in
docs/statistics.md (Wald's bounds for one probe are ln 16 and ln(0.2 / 0.95); a failure adds
ln 4 to the log-likelihood ratio, a pass ln(0.8 / 0.95)), from the tables there (which
`tests/stats/` checks against the statistics module), and from published Wilson intervals."""

from __future__ import annotations

import dataclasses
import math

import pytest

from ruledrift.checks.tools import record_call
from ruledrift.data import (
    AssertionResult,
    Location,
    Probe,
    ProbeRun,
    Response,
    Rule,
    TextAssertion,
    ToolCall,
    ToolUse,
    VerdictPolicy,
)
from ruledrift.run.verdicts import (
    GateOdds,
    auto_decision,
    gate_odds,
    is_decided,
    probe_verdict,
    sequential_design,
)
from ruledrift.stats import SequentialDesign, operating_characteristic

HERE = Location(1, 1)
PROBE = Probe(
    "p",
    Rule("r", "Never say x.", "critical", HERE),
    1,
    "p?",
    (TextAssertion("notContains", "x"),),
    HERE,
)
AUTO = VerdictPolicy(repeat="auto")
ONE_PROBE = sequential_design(AUTO, 1)
HELD = AssertionResult("notContains", True, 'the answer does not contain "x"')
BROKEN = AssertionResult("notContains", False, 'expected the answer not to contain "x"')


def runs(pattern: str) -> list[ProbeRun]:
    """Runs from a pattern: P passed, F failed, E could not be made. Run i takes i + 1 ms and
    carries its number in its answer or error, so a test can tell which run is the evidence."""
    made: list[ProbeRun] = []
    for number, letter in enumerate(pattern):
        answer = Response(f"answer {number}", f"{number:064x}", 8)  # each run's own answer
        if letter == "P":
            made.append(ProbeRun(number, "passed", number + 1, (HELD,), answer))
        elif letter == "F":
            made.append(ProbeRun(number, "failed", number + 1, (BROKEN,), answer))
        else:
            made.append(ProbeRun(number, "error", number + 1, error=f"timeout {number}"))
    return made


# --- sequential_design ---------------------------------------------------------------------------


def test_the_design_for_one_probe_is_the_documented_one() -> None:
    """docs/statistics.md: cap 37; "holds" at 0 failures from run 10, at most 4 at the cap."""
    assert ONE_PROBE.cap == 37
    assert ONE_PROBE.cap_holds_up_to == 4
    assert ONE_PROBE.decides_at_cap
    assert ONE_PROBE.probe_alpha == 0.05
    assert (ONE_PROBE.holds_up_to(9), ONE_PROBE.holds_up_to(10)) == (-1, 0)
    assert ONE_PROBE.drifted_from(10) == 3


@pytest.mark.parametrize(("probes", "cap"), [(0, 37), (1, 37), (10, 66), (50, 92), (200, 105)])
def test_the_cap_grows_with_the_probes_the_false_alarms_are_split_over(
    probes: int, cap: int
) -> None:
    design = sequential_design(AUTO, probes)
    assert design.cap == cap
    assert design.probe_alpha == pytest.approx(0.05 / max(probes, 1))


def test_the_design_takes_the_policys_rates() -> None:
    policy = VerdictPolicy(repeat="auto", holds_at=0.9, drifted_at=0.6, alpha=0.1, beta=0.3)
    design = sequential_design(policy, 4)
    assert (design.holds_at, design.drifted_at, design.alpha, design.beta) == (0.9, 0.6, 0.1, 0.3)
    assert design.probe_alpha == pytest.approx(0.025)


def test_a_max_repeat_above_the_derived_cap_keeps_the_cap_that_decides() -> None:
    """docs/statistics.md: for 10 probes no cap from 67 to 71 decides, so 70 means 66."""
    design = sequential_design(VerdictPolicy(repeat="auto", max_repeat=70), 10)
    assert (design.cap, design.decides_at_cap) == (66, True)


def test_a_max_repeat_below_the_derived_cap_is_the_cap_and_leaves_probes_open() -> None:
    design = sequential_design(VerdictPolicy(repeat="auto", max_repeat=20), 1)
    assert (design.cap, design.decides_at_cap, design.cap_holds_up_to) == (20, False, None)


# --- is_decided ----------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["", "P", "PF", "EP"])
def test_a_fixed_repeat_is_undecided_until_it_has_its_runs(pattern: str) -> None:
    assert not is_decided(runs(pattern), VerdictPolicy(repeat=3), None)


@pytest.mark.parametrize("pattern", ["PPP", "FFF", "PEF", "PPPP"])
def test_a_fixed_repeat_is_decided_by_its_count_whatever_the_runs_say(pattern: str) -> None:
    assert is_decided(runs(pattern), VerdictPolicy(repeat=3), None)


@pytest.mark.parametrize(
    ("pattern", "decided"),
    [
        ("P" * 9, False),  # 9 · ln(0.95 / 0.8) = 1.547 < ln(0.95 / 0.2) = 1.558
        ("P" * 10, True),  # 10 · 0.172 = 1.719: "holds"
        ("F", False),  # ln 4 < ln 16
        ("FF", True),  # 2 · ln 4 = ln 16: "drifted"
        ("P" * 11 + "E", False),  # the error counted as a failure: −0.504, above −1.558
        ("P" * 18 + "E", True),  # at 19 runs one failure fits "holds" (docs/statistics.md)
        ("EEEE", False),  # 4 counted failures still fit the 4 "holds" allows at the cap
        ("EEEEE", True),  # 5 rule "holds" out, no failure shows "drifted": incomplete
    ],
)
def test_auto_is_decided_once_the_test_has_a_verdict(pattern: str, decided: bool) -> None:
    assert is_decided(runs(pattern), AUTO, ONE_PROBE) is decided


# --- auto_decision -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "verdict"),
    [
        ("P" * 10, "holds"),
        ("FF", "drifted"),
        ("PPPPP", "undecided"),
        ("P" * 33 + "F" * 4, "holds"),  # at the cap: at most 4 failures hold
        ("P" * 32 + "F" * 5, "drifted"),  # and 5 drift
        ("P" * 33 + "F" * 4 + "F", "holds"),  # a run beyond the cap is not counted
        # an error counted as a pass for "drifted": 3 · ln 4 − 6 · 0.172 = 3.128 ≥ ln 16
        ("PPFPEFPPF", "drifted"),
        ("PPPFP", "undecided"),
        ("EEEEE", "incomplete"),
        ("P" * 32 + "FFF" + "EE", "incomplete"),  # at the cap, 2 errors between holds and drifted
        ("P" * 34 + "FF" + "E", "holds"),  # at the cap, 2 failures and an error still hold
    ],
)
def test_auto_decision_is_the_sequential_tests_verdict(pattern: str, verdict: str) -> None:
    assert auto_decision(runs(pattern), ONE_PROBE) == verdict


def test_below_the_derived_cap_a_probe_between_the_bounds_is_inconclusive_at_the_cap() -> None:
    design = sequential_design(VerdictPolicy(repeat="auto", max_repeat=20), 1)
    assert auto_decision(runs("P" * 18 + "FF"), design) == "inconclusive"
    assert auto_decision(runs("PPPPF"), design) == "undecided"
    assert auto_decision(runs("P" * 20), design) == "holds"


# --- probe_verdict: a fixed number of runs -------------------------------------------------------


def test_one_run_is_the_probe_result_without_repeats() -> None:
    (run,) = runs("F")
    result = probe_verdict(PROBE, [run], VerdictPolicy())
    assert (result.status, result.duration_ms) == ("failed", 1)
    assert (result.assertions, result.response, result.error) == ((BROKEN,), run.response, None)
    assert (result.runs, result.decided_by) == ((), None)


def test_every_run_passing_passes_and_shows_the_last_answer() -> None:
    made = runs("PPP")
    result = probe_verdict(PROBE, made, VerdictPolicy(repeat=3))
    assert result.status == "passed"
    assert (
        result.decided_by == "3/3 passed (100.0%, 95% interval 43.9%–100.0%): every run must pass"
    )
    assert result.response == made[2].response
    assert result.runs == tuple(made)
    assert result.duration_ms == 1 + 2 + 3


def test_one_failed_run_fails_the_probe_and_shows_the_first_failure() -> None:
    made = runs("PFF")
    result = probe_verdict(PROBE, made, VerdictPolicy(repeat=3))
    assert result.status == "failed"
    assert result.decided_by == "1/3 passed (33.3%, 95% interval 6.1%–79.2%): every run must pass"
    assert (result.response, result.assertions) == (made[1].response, (BROKEN,))


def test_a_run_that_could_not_be_made_makes_a_fixed_repeat_an_error() -> None:
    for policy in (VerdictPolicy(repeat=3), VerdictPolicy(repeat=3, min_pass_rate=0.3)):
        result = probe_verdict(PROBE, runs("PFE"), policy)
        assert result.status == "error"
        assert result.decided_by == "1 of 3 run(s) could not be made: the verdict is incomplete"
        assert result.error == "timeout 2"


def test_a_min_pass_rate_passes_a_probe_with_enough_passes() -> None:
    made = runs("PFPP")
    result = probe_verdict(PROBE, made, VerdictPolicy(repeat=4, min_pass_rate=0.75))
    assert result.status == "passed"
    assert result.decided_by == (
        "3/4 passed (75.0%, 95% interval 30.1%–95.4%): at least the minimum pass rate 75% "
        "(--min-pass-rate)"
    )
    assert result.response == made[3].response


def test_a_min_pass_rate_fails_a_probe_below_it() -> None:
    made = runs("PFPP")
    result = probe_verdict(PROBE, made, VerdictPolicy(repeat=4, min_pass_rate=0.8))
    assert result.status == "failed"
    assert result.decided_by == (
        "3/4 passed (75.0%, 95% interval 30.1%–95.4%): below the minimum pass rate 80% "
        "(--min-pass-rate)"
    )
    assert result.response == made[1].response


# --- probe_verdict: --repeat auto ----------------------------------------------------------------


def test_auto_holds_after_ten_clean_runs() -> None:
    made = runs("P" * 10)
    result = probe_verdict(PROBE, made, AUTO, ONE_PROBE)
    assert result.status == "passed"
    assert result.decided_by == (
        "holds: 0 of 10 runs failed, evidence enough that the pass rate is at least 95% rather "
        "than at most 80% (a drifted rule is missed at most 20% of the time)"
    )
    assert result.runs == tuple(made)
    assert result.response == made[9].response


def test_auto_drifts_after_two_failures_in_two_runs() -> None:
    made = runs("FF")
    result = probe_verdict(PROBE, made, AUTO, ONE_PROBE)
    assert result.status == "failed"
    assert result.decided_by == (
        "drifted: 2 of 2 runs failed, evidence enough that the pass rate is at most 80% rather "
        "than at least 95% (false alarms at most 5% for this probe)"
    )
    assert result.response == made[0].response


def test_auto_decides_at_the_cap() -> None:
    assert probe_verdict(PROBE, runs("P" * 33 + "F" * 4), AUTO, ONE_PROBE).status == "passed"
    assert probe_verdict(PROBE, runs("P" * 32 + "F" * 5), AUTO, ONE_PROBE).status == "failed"


def test_under_auto_an_error_is_counted_and_shown_without_deciding() -> None:
    """One error among 19 runs: counted as a failure for "holds", which still fits at 19 runs."""
    made = runs("P" * 18 + "E")
    result = probe_verdict(PROBE, made, AUTO, ONE_PROBE)
    assert result.status == "passed"
    assert result.decided_by == (
        "holds: 0 of 19 runs failed and 1 could not be made (counted as failures for 'holds', "
        "as passes for 'drifted'), evidence enough that the pass rate is at least 95% rather "
        "than at most 80% (a drifted rule is missed at most 20% of the time)"
    )
    assert result.runs == tuple(made)
    assert result.passes == 18


def test_under_auto_errors_that_cannot_change_drifted_leave_it_drifted() -> None:
    result = probe_verdict(PROBE, runs("PPFPEFPPF"), AUTO, ONE_PROBE)
    assert result.status == "failed"
    assert result.error is None  # the evidence is the first failure, not the error


def test_under_auto_errors_that_could_change_the_verdict_make_an_error() -> None:
    result = probe_verdict(PROBE, runs("EEEEE"), AUTO, ONE_PROBE)
    assert result.status == "error"
    assert result.error == "timeout 0"
    assert result.decided_by == (
        "incomplete: 0 of 5 runs failed and 5 could not be made (counted as failures for "
        "'holds', as passes for 'drifted'). Counted as failures, the runs that could not be made "
        "rule out 'holds' (at most 4 failures by the cap of 37 runs), and the runs that were "
        "made do not show 'drifted': they could change the verdict"
    )


def test_under_auto_errors_at_the_cap_between_the_bounds_make_an_error() -> None:
    made = runs("P" * 32 + "FFF" + "EE")
    result = probe_verdict(PROBE, made, AUTO, ONE_PROBE)
    assert result.status == "error"
    assert result.error == "timeout 35"


def test_a_probe_undecided_at_a_short_cap_is_inconclusive() -> None:
    for passes in (False, True):  # --inconclusive pass changes the exit code, not the verdict
        policy = VerdictPolicy(repeat="auto", max_repeat=20, inconclusive_passes=passes)
        design = sequential_design(policy, 1)
        result = probe_verdict(PROBE, runs("P" * 18 + "FF"), policy, design)
        assert result.status == "inconclusive"
        assert result.decided_by is not None
        assert result.decided_by.startswith(
            "inconclusive: 2 of 20 runs failed and 20 is the cap; 'holds' needed at most "
            "1 failure and 'drifted' at least 4. The pass rate so far, 90.0% (95% interval "
            "69.9%–97.2%), does not tell at least 95% from at most 80%."
        )


def test_a_probe_whose_runs_were_cut_short_is_inconclusive() -> None:
    """An interrupted run leaves the probe undecided: no verdict, not a pass."""
    result = probe_verdict(PROBE, runs("PPP"), AUTO, ONE_PROBE)
    assert result.status == "inconclusive"
    assert result.decided_by is not None
    assert result.decided_by.startswith("undecided: 0 of 3 runs failed; ")


# --- probe_verdict: identical runs -----------------------------------------------------------


def identical(pattern: str) -> list[ProbeRun]:
    """As `runs`, but every answered run gave the very same answer (one SHA-256 and length)."""
    same = Response("the same answer", "a" * 64, 15)
    return [
        dataclasses.replace(run, response=same) if run.response else run for run in runs(pattern)
    ]


def test_identical_failed_runs_under_auto_are_named_and_print_no_bound() -> None:
    """Issue 21: byte-identical runs at temperature 0 printed "false alarms at most 0.238% for
    this probe" as if they were independent. The verdict stands; the bound is not claimed."""
    result = probe_verdict(PROBE, identical("FF"), AUTO, ONE_PROBE)
    assert (result.status, result.identical_runs) == ("failed", True)
    assert result.decided_by == (
        "drifted: 2 identical runs (0/2 passed): every answer was byte-identical, so the "
        "repeats add no information; the sequential test's verdict stands, but no error bound "
        "applies to this probe (the bounds assume independent runs)"
    )
    assert "false alarms" not in result.decided_by


def test_identical_passed_runs_of_a_fixed_count_print_no_interval() -> None:
    result = probe_verdict(PROBE, identical("PPPPP"), VerdictPolicy(repeat=5))
    assert (result.status, result.identical_runs) == ("passed", True)
    assert result.decided_by == (
        "5 identical runs (5/5 passed): every answer was byte-identical, so the repeats add no "
        "information; every run must pass, and no error bound applies to this probe (the "
        "bounds assume independent runs)"
    )
    assert "interval" not in result.decided_by


def test_identical_runs_under_a_min_pass_rate_name_the_rate() -> None:
    policy = VerdictPolicy(repeat=3, min_pass_rate=0.6)
    result = probe_verdict(PROBE, identical("FFF"), policy)
    assert result.status == "failed"
    assert result.decided_by is not None
    assert "at least 60% of its runs must pass (--min-pass-rate)" in result.decided_by


@pytest.mark.parametrize(
    ("made", "policy"),
    [
        (runs("PPP"), VerdictPolicy(repeat=3)),  # three different answers
        (identical("PPE"), VerdictPolicy(repeat=3)),  # a run without an answer
        (identical("P"), VerdictPolicy()),  # one run: nothing repeated
        (identical("P"), VerdictPolicy(repeat=1)),
    ],
)
def test_runs_that_differ_or_are_not_repeats_are_not_identical(
    made: list[ProbeRun], policy: VerdictPolicy
) -> None:
    result = probe_verdict(PROBE, made, policy)
    assert not result.identical_runs
    assert "identical" not in (result.decided_by or "")


def test_one_differing_byte_count_is_enough() -> None:
    """Identical means one SHA-256 and one length: a different length is a different answer."""
    made = identical("PP")
    made[1] = dataclasses.replace(made[1], response=Response("the same answer", "a" * 64, 16))
    assert not probe_verdict(PROBE, made, VerdictPolicy(repeat=2)).identical_runs


# --- gate_odds -----------------------------------------------------------------------------------


def test_fixed_repeats_promise_what_the_binomial_says() -> None:
    odds = gate_odds(VerdictPolicy(repeat=3), 1)
    assert odds.red_when_holding == pytest.approx(1 - 0.95**3)  # 14.3%
    assert odds.caught == pytest.approx(1 - 0.8**3)  # 48.8%
    assert (odds.cap, odds.decides_at_cap, odds.needed_cap) == (None, True, None)
    assert gate_odds(VerdictPolicy(repeat=3), 10).red_when_holding == pytest.approx(
        1 - 0.95**30
    )  # 78.5%
    assert not odds.within_bounds


def test_a_min_pass_rate_counts_the_runs_it_needs() -> None:
    """Two passes of four needed: a probe fails with no pass or one."""
    odds = gate_odds(VerdictPolicy(repeat=4, min_pass_rate=0.5), 1)
    assert odds.red_when_holding == pytest.approx(0.05**4 + 4 * 0.95 * 0.05**3)
    assert odds.caught == pytest.approx(0.2**4 + 4 * 0.8 * 0.2**3)


def test_correlated_runs_pass_together_more_often() -> None:
    """Beta-binomial with ρ = 0.05: both of two runs pass with p² + ρ·p·(1 − p)."""
    odds = gate_odds(VerdictPolicy(repeat=2), 1)
    assert odds.red_when_holding == pytest.approx(1 - 0.95**2)
    assert odds.red_when_correlated == pytest.approx(1 - (0.95**2 + 0.05 * 0.95 * 0.05))
    single = gate_odds(VerdictPolicy(), 1)
    assert single.red_when_holding == pytest.approx(0.05)
    assert single.red_when_correlated == pytest.approx(0.05)


def test_auto_keeps_both_promises_for_one_probe() -> None:
    """docs/statistics.md, the operating table: 4.05% red at 95%, 80.44% caught at 80%."""
    odds = gate_odds(AUTO, 1)
    assert odds.red_when_holding == pytest.approx(0.0405, abs=5e-5)
    assert odds.caught == pytest.approx(0.8044, abs=5e-5)
    assert (odds.cap, odds.decides_at_cap, odds.needed_cap) == (37, True, 37)
    assert odds.within_bounds


def test_a_short_cap_costs_what_the_docs_say() -> None:
    """docs/statistics.md: --max-repeat 40 for 10 probes goes red 50.5% of the time and fails
    a probe at 80% 83.2% of the time; with --inconclusive pass it passes 41.9% of the time."""
    odds = gate_odds(VerdictPolicy(repeat="auto", max_repeat=40), 10)
    assert odds.red_when_holding == pytest.approx(0.505, abs=5e-4)
    assert odds.caught == pytest.approx(0.832, abs=5e-4)
    assert (odds.cap, odds.decides_at_cap, odds.needed_cap) == (40, False, 66)
    assert not odds.within_bounds
    lenient = gate_odds(VerdictPolicy(repeat="auto", max_repeat=40, inconclusive_passes=True), 10)
    assert 1 - lenient.caught == pytest.approx(0.419, abs=5e-4)
    # inconclusive fails the run unless it passes: the two differ by exactly that chance
    at_80 = operating_characteristic(SequentialDesign.for_suite(10, max_runs=40), 0.8)
    assert odds.caught == pytest.approx(at_80.drifted + at_80.inconclusive)
    assert lenient.caught == pytest.approx(at_80.drifted)


def test_rates_out_of_order_are_refused() -> None:
    with pytest.raises(ValueError, match="drifted_at < holds_at"):
        gate_odds(VerdictPolicy(repeat=3, holds_at=0.8, drifted_at=0.8), 1)


def test_gate_odds_within_bounds_and_reruns() -> None:
    edge = GateOdds(1, 0.95, 0.8, red_when_holding=0.05, caught=0.8, alpha=0.05, beta=0.2)
    assert edge.within_bounds
    assert not GateOdds(1, 0.95, 0.8, 0.05, 0.79, 0.05, 0.2).within_bounds
    assert not GateOdds(1, 0.95, 0.8, 0.051, 0.8, 0.05, 0.2).within_bounds
    assert GateOdds(1, 0.95, 0.8, 0.05, 0.5, 0.05, 0.2).missed_within(3) == pytest.approx(
        1 - 0.5**3
    )
    assert math.isclose(edge.missed_within(1), 0.2)


def test_runs_with_one_answer_but_other_tool_calls_are_not_identical() -> None:
    """A tool turn's final answer is often the same short text (or empty after running out):
    runs that made other calls are different runs, and the bounds hold for them."""
    same = identical("FF")

    def with_calls(run: ProbeRun, arguments: str) -> ProbeRun:
        call = record_call(ToolCall("c1", "refund", arguments), 1, None, "result")
        return dataclasses.replace(run, tools=ToolUse((call,), 2))

    differ = [with_calls(same[0], '{"amount": 250}'), with_calls(same[1], '{"amount": 90}')]
    assert probe_verdict(PROBE, differ, AUTO, ONE_PROBE).identical_runs is False
    alike = [with_calls(same[0], '{"amount": 250}'), with_calls(same[1], '{"amount": 250}')]
    assert probe_verdict(PROBE, alike, AUTO, ONE_PROBE).identical_runs is True
