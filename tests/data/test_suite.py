"""The suite's types: what a probe asks and how many calls a scenario and a suite take."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ruledrift.data import MockResult, ScriptedTurn, Tool
from ruledrift.data.suite import (
    History,
    Location,
    Probe,
    Rule,
    Scenario,
    Suite,
    TextAssertion,
)

HERE = Location(1, 1)
RULE = Rule("r", "Never say x.", "critical", HERE)


@dataclass(frozen=True)
class Settings:
    """Any adapter type's settings will do: the suite knows them only as `AdapterConfig`."""

    type: str = "echo"
    model: str | None = None


def probe(probe_id: str, after_turn: int, paraphrases: tuple[str, ...] = ()) -> Probe:
    checks = (TextAssertion("notContains", "x"),)
    prompt = paraphrases[0] if paraphrases else f"{probe_id}?"
    return Probe(probe_id, RULE, after_turn, prompt, checks, HERE, paraphrases)


def test_a_probe_with_one_wording_asks_its_prompt_whatever_the_index() -> None:
    assert probe("p", 1).wording(0) == "p?"
    assert probe("p", 1).wording(3) == "p?"


def test_a_probe_with_paraphrases_asks_the_one_at_the_index() -> None:
    asked = probe("p", 1, ("first?", "second?", "third?"))
    assert [asked.wording(i) for i in range(3)] == ["first?", "second?", "third?"]


def test_a_scenario_plays_turns_up_to_its_last_boundary_and_one_call_per_probe() -> None:
    scenario = Scenario("s", None, ("a", "b", "c", "d"), (probe("p1", 1), probe("p2", 3)), HERE)
    assert scenario.turns_needed == 3  # the fourth turn follows no probe
    assert scenario.model_calls == 5


def test_a_scenario_without_probes_plays_no_turn() -> None:
    assert Scenario("s", None, ("a",), (), HERE).model_calls == 0


def test_a_suite_adds_up_its_scenarios() -> None:
    one = Scenario("s1", None, ("a", "b"), (probe("p1", 2),), HERE)
    two = Scenario("s2", None, ("a",), (probe("p2", 0), probe("p3", 1)), HERE)
    suite = Suite(1, "n", None, Settings(), (RULE,), (one, two), Path("suite.json"), "0" * 64)
    assert suite.probe_count == 3
    assert suite.model_calls == (2 + 1) + (1 + 2)


def test_with_tools_each_turn_may_take_max_tool_rounds_calls() -> None:
    one = Scenario("s1", None, ("a", "b"), (probe("p1", 2),), HERE)
    tool = Tool("lookup", "", "{}", HERE, MockResult('"ok"'))
    suite = Suite(1, "n", None, Settings(), (RULE,), (one,), Path("suite.json"), "0" * 64)
    assert suite.rounds_per_turn == 1
    with_tools = replace(suite, tools=(tool,), max_tool_rounds=3)
    assert with_tools.rounds_per_turn == 3
    assert with_tools.model_calls == 3 * (2 + 1)
    assert with_tools.tool("lookup") is tool
    assert with_tools.tool("refund") is None


def test_a_scripted_turn_is_found_by_its_number_after_the_history() -> None:
    scripted = ScriptedTurn("b", (), "done", HERE)
    history = History("h.json", "0" * 64, "replay", (("u", "a"),))
    scenario = Scenario("s", None, ("a", "b"), (), HERE, history=history, scripts=(None, scripted))
    assert [scenario.script(n) for n in range(0, 5)] == [None, None, None, scripted, None]
