"""The result types: how statuses combine and how a probe's runs are read."""

from __future__ import annotations

from ruledrift.data.results import AssertionResult, ProbeResult, ProbeRun, Status, combined_status
from ruledrift.data.suite import Location, Probe, Rule, TextAssertion

HERE = Location(1, 1)
PROBE = Probe(
    "p",
    Rule("r", "Never say x.", "critical", HERE),
    1,
    "p?",
    (TextAssertion("contains", "x"),),
    HERE,
)
HELD = AssertionResult("contains", True, 'the answer contains "x"')
BROKEN = AssertionResult("contains", False, 'expected the answer to contain "x"')


def test_an_error_outweighs_a_failure_which_outweighs_an_undecided_probe() -> None:
    cases: list[tuple[list[Status], Status]] = [
        ([], "passed"),
        (["passed", "passed"], "passed"),
        (["passed", "inconclusive"], "inconclusive"),
        (["inconclusive", "failed", "passed"], "failed"),
        (["failed", "error", "inconclusive"], "error"),
    ]
    for statuses, combined in cases:
        assert combined_status(statuses) == combined, statuses


def test_a_result_without_repeats_is_its_own_single_run() -> None:
    result = ProbeResult(PROBE, "failed", 12, (HELD, BROKEN), error=None)
    assert result.all_runs == (ProbeRun(0, "failed", 12, (HELD, BROKEN)),)
    assert result.passes == 0
    assert result.failed_assertions == (BROKEN,)


def test_an_inconclusive_result_without_runs_counts_as_one_pass() -> None:
    result = ProbeResult(PROBE, "inconclusive", 5)
    assert [run.status for run in result.all_runs] == ["passed"]
    assert result.passes == 1


def test_a_repeated_result_counts_the_passes_of_its_runs() -> None:
    runs = (
        ProbeRun(0, "passed", 1, (HELD,)),
        ProbeRun(1, "failed", 1, (BROKEN,)),
        ProbeRun(2, "passed", 1, (HELD,)),
        ProbeRun(3, "error", 1, error="timed out"),
    )
    result = ProbeResult(PROBE, "failed", 4, (BROKEN,), runs=runs, decided_by="2 of 4 runs passed")
    assert result.all_runs == runs
    assert result.passes == 2
    assert runs[1].failed_assertions == (BROKEN,)
