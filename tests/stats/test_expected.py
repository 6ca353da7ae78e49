"""The expected model calls of `--repeat auto`, checked against an independent computation: each
probe's stopping distribution walked with `decide` (the runner's own question after each run),
then every combination of stopping times played through a scenario's runs as the runner plays
them (run r asks the undecided probes and the turns up to the deepest of them)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import pytest

from ruledrift.stats import SequentialDesign, decide, expected_calls


def stopping_chances(design: SequentialDesign, pass_rate: float) -> dict[int, float]:
    """The chance a probe stops after exactly n runs, by asking `decide` after every run."""
    stops: dict[int, float] = {}
    open_paths = {(0, 0): 1.0}  # (runs, passes) still undecided → chance
    while open_paths:
        following: dict[tuple[int, int], float] = {}
        for (runs, passes), chance in open_paths.items():
            for passed, weight in ((1, pass_rate), (0, 1 - pass_rate)):
                state = (runs + 1, passes + passed)
                if decide(state[1], state[0], design).verdict == "undecided":
                    following[state] = following.get(state, 0.0) + chance * weight
                else:
                    stops[state[0]] = stops.get(state[0], 0.0) + chance * weight
        open_paths = following
    return stops


def played_calls(depths: Sequence[int], runs_each: Sequence[int]) -> int:
    """The calls of a scenario whose i-th probe (at `depths[i]`) takes `runs_each[i]` runs."""
    calls = 0
    for run in range(1, max(runs_each) + 1):
        asked = [depth for depth, runs in zip(depths, runs_each, strict=True) if runs >= run]
        calls += max(asked) + len(asked)
    return calls


def enumerated_calls(
    design: SequentialDesign, pass_rate: float, scenarios: Sequence[Sequence[int]]
) -> float:
    stops = stopping_chances(design, pass_rate)
    total = []
    for depths in scenarios:
        for combination in itertools.product(stops.items(), repeat=len(depths)):
            chance = math.prod(weight for _, weight in combination)
            total.append(chance * played_calls(depths, [runs for runs, _ in combination]))
    return math.fsum(total)


@pytest.mark.parametrize(
    ("design", "scenarios"),
    [
        (SequentialDesign.for_suite(5), [[0, 5], [3], [1, 1]]),  # the default design
        (SequentialDesign.for_suite(3, holds_at=0.9, drifted_at=0.5), [[0, 2, 5]]),  # short cap
    ],
)
@pytest.mark.parametrize("pass_rate", [0.95, 0.8, 1.0])
def test_expected_calls_match_every_combination_played_out(
    design: SequentialDesign, scenarios: list[list[int]], pass_rate: float
) -> None:
    expected = expected_calls(design, pass_rate, scenarios)
    assert expected == pytest.approx(enumerated_calls(design, pass_rate, scenarios), rel=1e-9)


def test_one_probe_before_any_turn_takes_the_mean_runs_of_the_operating_table() -> None:
    """docs/statistics.md: a suite of 1 probe passing 95% of the time takes 15.7 runs on
    average, 10.0 when it never fails."""
    design = SequentialDesign.for_suite(1)
    assert round(expected_calls(design, 0.95, [[0]]), 1) == 15.7
    assert expected_calls(design, 1.0, [[0]]) == pytest.approx(10.0)


def test_a_scenario_that_never_fails_makes_its_calls_for_each_run_to_the_first_verdict() -> None:
    design = SequentialDesign.for_suite(2)
    runs = range(1, design.cap + 1)
    first_holds = next(n for n in runs if decide(n, n, design).verdict != "undecided")
    assert expected_calls(design, 1.0, [[0, 3]]) == pytest.approx(first_holds * (3 + 2))


def test_replayed_turns_make_no_call() -> None:
    """A replayed history's turns are recorded: only the turns after them and the probes
    cost calls."""
    design = SequentialDesign.for_suite(1)
    played = expected_calls(design, 0.95, [[3]])
    replayed = expected_calls(design, 0.95, [[3]], [3])
    assert played == pytest.approx(4 * replayed)
    assert expected_calls(design, 0.95, [[3]], [2]) == pytest.approx(2 * replayed)
    assert expected_calls(design, 0.95, [[3], [3]], [3]) == pytest.approx(5 * replayed)
