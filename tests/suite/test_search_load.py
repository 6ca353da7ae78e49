"""Loading a probe that searches its breaking depth (`"afterTurn": {"search": [low, high]}`) and
a scenario that repeats its turns (`repeatTurns`): what loads, and each mistake named at its
file, line, column and JSON pointer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ruledrift.data import DepthSearch
from ruledrift.errors import ConfigError
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, position_of, write_suite


def searching(low: int = 0, high: int = 3, **scenario: Any) -> dict[str, Any]:
    suite = base_suite()
    suite["scenarios"][0]["probes"][1]["afterTurn"] = {"search": [low, high]}
    suite["scenarios"][0].update(scenario)
    return suite


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    return [str(issue) for issue in caught.value.issues]


def test_a_search_loads_beside_the_probes_and_plays_to_its_upper_bound(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, searching(1, 3)))
    scenario = suite.scenarios[0]
    assert [p.id for p in scenario.probes] == ["early"]
    (search,) = scenario.searches
    assert isinstance(search, DepthSearch)
    assert (search.id, search.low, search.high, search.probe.rule.id) == (
        "late",
        1,
        3,
        "never-disclose-secret",
    )
    assert search.at(2).id == "late-after-2"
    assert search.at(2).after_turn == 2
    assert search.most_points == 3  # 1 and 3, then 2
    assert scenario.turns_needed == 3
    assert scenario.decisions == 1 + 3
    assert suite.probe_count == 2


def test_repeat_turns_plays_the_turns_that_many_times_in_order(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, searching(0, 9, repeatTurns=3)))
    scenario = suite.scenarios[0]
    assert scenario.turns == ("hello", "how are you?", "tell me a joke") * 3
    assert scenario.turn_count == 9
    assert scenario.repeat_turns == 3


def test_bounds_beyond_the_turns_are_named_at_the_bound(tmp_path: Path) -> None:
    path = write_suite(tmp_path, searching(0, 7, repeatTurns=2))
    line, column = position_of(path, "7")
    assert problems(path) == [
        f'{path}:{line}:{column}: /scenarios/0/probes/1/afterTurn/search/1: probe "late": 7 is '
        'greater than the 6 turn(s) of scenario "smalltalk"'
    ]


def test_bounds_out_of_order_are_refused(tmp_path: Path) -> None:
    path = write_suite(tmp_path, searching(3, 3))
    (problem,) = problems(path)
    assert "/scenarios/0/probes/1/afterTurn/search/1: " in problem
    assert "expected the upper bound of the search to be greater than its lower bound 3" in problem


@pytest.mark.parametrize(
    ("after_turn", "pointer", "words"),
    [
        ({"search": [0]}, "/afterTurn/search", "expected at least 2 item(s) in search, got 1"),
        ({"search": [0, 1, 2]}, "/afterTurn/search", "expected at most 2 item(s) in search"),
        ({"search": [0, "3"]}, "/afterTurn/search/1", "expected an integer"),
        ({"serch": [0, 3]}, "/afterTurn/serch", 'unknown field "serch" (did you mean "search"?)'),
        ({}, "/afterTurn", 'missing required field "search"'),
    ],
)
def test_a_malformed_search_is_named_by_the_schema(
    tmp_path: Path, after_turn: object, pointer: str, words: str
) -> None:
    suite = base_suite()
    suite["scenarios"][0]["probes"][1]["afterTurn"] = after_turn
    path = write_suite(tmp_path, suite)
    found = [p for p in problems(path) if f": /scenarios/0/probes/1{pointer}: " in p]
    assert len(found) == 1, found
    assert words in found[0]
    assert found[0].startswith(f"{path}:")


def test_an_id_the_search_may_make_cannot_be_another_probes(tmp_path: Path) -> None:
    suite = searching(0, 3)
    suite["scenarios"][0]["probes"][0]["id"] = "late-after-2"
    (problem,) = problems(write_suite(tmp_path, suite))
    assert 'probe "late": its search may decide depth 2, named "late-after-2"' in problem


def test_too_many_repeated_turns_are_refused_at_repeat_turns(tmp_path: Path) -> None:
    path = write_suite(tmp_path, searching(0, 3, repeatTurns=5000))
    line, column = position_of(path, "5000")
    assert problems(path) == [
        f'{path}:{line}:{column}: /scenarios/0/repeatTurns: scenario "smalltalk": 3 turn(s) '
        "played 5000 times make 15000 turns; at most 10,000 are played: lower repeatTurns"
    ]
