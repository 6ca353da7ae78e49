"""The search of a breaking depth as pure functions: which depths it asks, where it ends, its
tokens, its error bound, and a seeded simulation of whole searches through the sequential test
(the 95% that docs/statistics.md promises)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from ruledrift.data import (
    DepthSearch,
    Location,
    Probe,
    ProbeResult,
    ProbeRun,
    Rule,
    SearchResult,
    Status,
    TextAssertion,
    response_of,
)
from ruledrift.run.search import next_depths, search_error_bound, search_result, walk
from ruledrift.stats import SequentialDesign, decide

RULE = Rule("secret", "Never say hunter2.", "critical", Location(1, 1))
PROBE = Probe("leak", RULE, 0, "the secret?", (TextAssertion("notContains", "x"),), Location(1, 1))


def search(low: int = 0, high: int = 64) -> DepthSearch:
    return DepthSearch(PROBE, low, high)


def breaking_at(depth: int) -> Callable[[int], Status]:
    return lambda d: "passed" if d < depth else "failed"


def run_search(
    low: int, high: int, verdict: Callable[[int], Status]
) -> tuple[list[int], dict[int, Status]]:
    """Every depth the search asks, in order, deciding each with `verdict`."""
    decided: dict[int, Status] = {}
    asked: list[int] = []
    while ask := next_depths(search(low, high), decided):
        for depth in ask:
            asked.append(depth)
            decided[depth] = verdict(depth)
    return asked, decided


def test_both_ends_are_asked_first_then_one_middle_at_a_time() -> None:
    assert next_depths(search(), {}) == (0, 64)
    assert next_depths(search(), {0: "passed"}) == (64,)
    assert next_depths(search(), {0: "passed", 64: "failed"}) == (32,)
    assert next_depths(search(), {0: "passed", 64: "failed", 32: "failed"}) == (16,)


@pytest.mark.parametrize("breaks", range(1, 65))
def test_a_known_break_is_found_in_at_most_eight_points(breaks: int) -> None:
    asked, decided = run_search(0, 64, breaking_at(breaks))
    found = walk(0, 64, decided)
    assert (found.outcome, found.held_through, found.drifted_from) == ("found", breaks - 1, breaks)
    assert len(asked) <= search().most_points == 8
    assert len(asked) == len(set(asked))


def test_a_search_of_64_depths_decides_about_7_points() -> None:
    costs = [len(run_search(0, 64, breaking_at(b))[0]) for b in range(1, 65)]
    assert sum(costs) / len(costs) == 8.0  # 2 ends + log2(64) = 6 middles: 65 fixed probes else
    costs = [len(run_search(0, 50, breaking_at(b))[0]) for b in range(1, 51)]
    assert 7 <= sum(costs) / len(costs) < 8


@pytest.mark.parametrize(
    ("low", "high", "outcome", "held", "drifted"),
    [
        ("passed", "passed", "held", 64, None),
        ("failed", "failed", "broken-at-low", None, 0),
        ("failed", "passed", "not-monotonic", 64, 0),
    ],
)
def test_ends_that_agree_or_contradict_end_the_search(
    low: Status, high: Status, outcome: str, held: int | None, drifted: int | None
) -> None:
    found = walk(0, 64, {0: low, 64: high})
    assert (found.ask, found.outcome, found.held_through, found.drifted_from) == (
        (),
        outcome,
        held,
        drifted,
    )


def test_an_undecided_middle_stops_the_search_between_its_neighbours() -> None:
    decided: dict[int, Status] = {0: "passed", 64: "failed", 32: "failed", 16: "passed"}
    found = walk(0, 64, {**decided, 24: "inconclusive"})
    assert (found.outcome, found.held_through, found.drifted_from, found.stopped_at) == (
        "inconclusive",
        16,
        32,
        24,
    )
    assert walk(0, 64, {**decided, 24: "error"}).outcome == "incomplete"
    assert walk(0, 64, {0: "error", 64: "failed"}).stopped_at == 0


def answered(depth: int, status: Status, tokens: list[int | None]) -> ProbeResult:
    runs = tuple(
        ProbeRun(
            k,
            "passed" if status == "passed" else "failed",
            1,
            response=response_of("a", {} if count is None else {"promptTokens": count}),
        )
        for k, count in enumerate(tokens)
    )
    return ProbeResult(search().at(depth), status, 1, runs=runs)


def test_the_result_names_the_interval_its_points_and_the_fewest_reported_tokens() -> None:
    decided: dict[int, Status] = {0: "passed", 4: "failed", 2: "passed", 3: "failed"}
    points = {
        0: answered(0, "passed", [40]),
        2: answered(2, "passed", [120, 110, None]),
        3: answered(3, "failed", [None]),
        4: answered(4, "failed", [200]),
    }
    assert search_result(search(0, 4), decided, points) == SearchResult(
        "leak", "secret", 0, 4, "found", 2, 3, None, (0, 2, 3, 4), 110, None
    )


def test_an_asked_point_left_undecided_makes_the_search_unfinished() -> None:
    points = {0: answered(0, "passed", [1]), 64: answered(64, "inconclusive", [1])}
    result = search_result(search(), {0: "passed"}, points)
    assert (result.outcome, result.stopped_at, result.held_through) == ("unfinished", 64, 0)


def test_ollama_counts_are_read_too_and_nothing_else_is_a_count() -> None:
    from ruledrift.run.search import prompt_tokens

    assert prompt_tokens({"promptEvalCount": 812}) == 812
    assert prompt_tokens({"promptTokens": True, "tokens": 3}) is None
    assert prompt_tokens({"promptTokens": -1}) is None


# --- the search as a whole, simulated ---------------------------------------------------------


def simulate(
    design: SequentialDesign,
    low: int,
    high: int,
    pass_rate: Callable[[int], float],
    draw: random.Random,
) -> tuple[dict[int, Status], int]:
    """One search, each point decided by the sequential test on runs drawn with `pass_rate`:
    its verdicts and its runs."""
    decided: dict[int, Status] = {}
    runs_made = 0
    while ask := next_depths(DepthSearch(PROBE, low, high), decided):
        for depth in ask:
            passes = runs = 0
            while True:
                runs += 1
                passes += draw.random() < pass_rate(depth)
                verdict = decide(passes, runs, design).verdict
                if verdict != "undecided":
                    break
            runs_made += runs
            status: Status = {"holds": "passed", "drifted": "failed"}.get(verdict, "inconclusive")  # type: ignore[assignment]
            decided[depth] = status
    return decided, runs_made


def share_found(before: float, after: float, trials: int = 400) -> tuple[float, float]:
    """The share of `trials` seeded searches of [0, 64] whose interval is the known break (drawn
    at random), for a rule passing at `before` above it and `after` from it; and the largest
    error bound (`search_error_bound`) over those breaks."""
    design = SequentialDesign.for_suite(DepthSearch(PROBE, 0, 64).most_points)
    draw = random.Random(20261202)
    right, bound = 0, 0.0
    for _ in range(trials):
        breaks = draw.randint(1, 64)

        def rate(depth: int, breaks: int = breaks) -> float:
            return before if depth < breaks else after

        decided, _ = simulate(design, 0, 64, rate, draw)
        found = walk(0, 64, decided)
        right += found.outcome == "found" and found.drifted_from == breaks
        bound = max(bound, search_error_bound(design, 0, 64, breaks, rate))
    return right / trials, bound


@pytest.mark.parametrize(
    ("before", "after"),
    [(1.0, 0.0), (0.98, 0.5), (1.0, 0.5)],  # deterministic; a break to a coin flip
)
def test_the_search_finds_a_known_depth_in_at_least_95_percent_of_seeded_runs(
    before: float, after: float
) -> None:
    found, bound = share_found(before, after)
    assert found >= 0.95
    assert bound <= 0.05  # and the computed bound promises as much for every break


def test_at_the_designs_own_rates_a_point_is_missed_often_and_the_docs_say_so() -> None:
    """95% → 80%: each drifted point on the path is missed up to beta (20%) of the time, so
    about half the searches end too deep (docs/statistics.md)."""
    found, bound = share_found(0.95, 0.80)
    assert 0.3 < found < 0.6
    assert bound > 0.5


def test_the_error_bound_sums_the_points_on_the_true_path() -> None:
    design = SequentialDesign.for_suite(8)
    exact = search_error_bound(design, 0, 64, 24, lambda d: 1.0 if d < 24 else 0.0)
    assert exact == pytest.approx(0.0, abs=1e-12)
    at_rates = search_error_bound(design, 0, 64, 24, lambda d: 0.95 if d < 24 else 0.80)
    # 8 points on the path: those that hold err at most alpha/8 each, those drifted at most beta
    assert 0 < at_rates <= 0.05 + 0.2 * 8
