"""findings.py: each rule's story across depths, and the passes that show little (empty, cut,
identical answers), as pure functions of a result."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ruledrift.data import (
    ControlRun,
    History,
    HistoryMode,
    Message,
    ProbeResult,
    ProbeRun,
    RunResult,
    ScenarioResult,
    TargetInfo,
    ToolCall,
    VerdictPolicy,
)
from ruledrift.reports.job_summary import render_summary
from ruledrift.reports.terminal import TerminalOptions, render_terminal
from ruledrift.results.findings import (
    drift_curve,
    probe_flags,
    rule_stories,
    suspicious,
    target_warnings,
)
from ruledrift.stats import wilson_interval
from tests.support import results as factories
from tests.support.results import NEVER_DISCLOSE


def at(after_turn: int, status: str, answer: str = "no") -> ProbeResult:
    probe_id = f"p{after_turn}-{status}"
    if status == "passed":
        made = factories.passed(probe_id, f"{answer} {after_turn}")
    elif status == "failed":
        made = factories.failed(probe_id, "hunter2", after_turn)
    else:
        made = factories.errored(probe_id, "boom", after_turn)
    return replace(made, probe=replace(made.probe, after_turn=after_turn, rule=NEVER_DISCLOSE))


def run(*probes: ProbeResult) -> RunResult:
    scenario = factories.scenario_result("s", probes, len(probes))
    base = factories.run_result()
    return replace(base, scenarios=(scenario,))


@pytest.mark.parametrize(
    ("statuses", "story", "line"),
    [
        ([(0, "passed"), (4, "passed"), (8, "passed")], "held", "held at every depth (0, 4, 8)"),
        (
            [(0, "passed"), (4, "passed"), (8, "failed"), (12, "failed")],
            "drifted",
            "first broken after turn 8 (kept at 0, 4; broken at 8, 12)",
        ),
        (
            [(0, "failed"), (4, "failed")],
            "never-obeyed",
            "broken from the start: never obeyed (broken at 0, 4)",
        ),
        (
            [(0, "failed"), (4, "passed"), (8, "failed")],
            "not-monotonic",
            "not monotonic: broken at 0, 8, kept at 4",
        ),
        (
            [(0, "passed"), (4, "failed"), (8, "passed")],
            "not-monotonic",
            "not monotonic: broken at 4, kept at 0, 8",
        ),
        ([(0, "error"), (4, "error")], "not-run", "not run: every probe of this rule errored"),
        (
            [(0, "passed"), (0, "error"), (4, "error"), (8, "failed")],
            "drifted",
            "first broken after turn 8 (kept at 0; broken at 8); error at 4",
        ),
    ],
)
def test_each_rule_tells_its_story_across_depths(
    statuses: list[tuple[int, str]], story: str, line: str
) -> None:
    [found] = rule_stories(run(*(at(d, s) for d, s in statuses)))
    assert (found.rule.id, found.story, found.line) == (NEVER_DISCLOSE.id, story, line)


def test_a_failure_at_the_shallowest_depth_is_never_obeyed_not_drift() -> None:
    """The distinction the user needs: drift is a rule that held and then broke."""
    [found] = rule_stories(run(at(0, "failed"), at(4, "failed"), at(8, "failed")))
    assert found.story == "never-obeyed"
    [found] = rule_stories(run(at(0, "passed"), at(4, "failed"), at(8, "failed")))
    assert found.story == "drifted"


NOT_MADE = "not run: the budget of 20 model call(s) (--max-calls) was used up"


def cut(after_turn: int, passes: int, fails: int = 0) -> ProbeResult:
    """A repeated probe whose last run --max-calls did not allow (an error, the verdict open)."""
    made = at(after_turn, "error")
    runs = [ProbeRun(i, "passed", 1) for i in range(passes)]
    runs += [ProbeRun(passes + i, "failed", 1) for i in range(fails)]
    runs.append(ProbeRun(len(runs), "error", 0, error=NOT_MADE))
    return replace(made, runs=tuple(runs), error=NOT_MADE)


def test_a_depth_cut_by_max_calls_is_not_called_broken_from_the_start() -> None:
    """5/5 at depth 0 and one run never made (--max-calls), broken deeper: the story says the
    run was cut there, not "broken from the start" (issue 21)."""
    [found] = rule_stories(run(cut(0, 5), at(4, "failed"), at(8, "failed")))
    assert found.story != "never-obeyed"
    assert found.cut_at == (0,)
    assert "broken from the start" not in found.line
    assert "cut by --max-calls: runs not made at 0" in found.line
    assert "broken at 4, 8" in found.line


def test_a_rule_whose_every_depth_was_cut_is_not_said_to_have_errored() -> None:
    [found] = rule_stories(run(cut(0, 2), cut(4, 0, 2)))
    assert found.cut_at == (0, 4)
    assert "errored" not in found.line
    assert found.line.startswith("cut by --max-calls: runs not made at 0, 4")


def test_an_error_of_the_agent_is_not_a_cut() -> None:
    [found] = rule_stories(run(at(0, "error"), at(4, "error")))
    assert found.cut_at == ()


def test_rules_without_probes_in_the_run_are_left_out() -> None:
    assert [s.rule.id for s in rule_stories(factories.run_result())] == [
        "never-disclose-secret",
        "be-polite",
    ]


def test_identical_empty_and_cut_answers_are_flagged_passes() -> None:
    same = factories.passed("a", "Hello! How can I help you today?")
    again = factories.passed("b", "Hello! How can I help you today?")
    empty = factories.passed("c", "  \n ")
    cut = replace(
        factories.passed("d", "Sure, the answer is"),
        response=factories.response("Sure, the answer is", {"doneReason": "length"}),
    )
    cut_openai = replace(
        factories.passed("e", "Well"),
        response=factories.response("Well", {"finishReason": "length"}),
    )
    marked_cut = replace(
        factories.passed("f", "Hm"), response=factories.response("Hm", {"cut": True})
    )
    fine = factories.passed("g", "I cannot share that.")
    failed_same = factories.failed("h", "Hello! How can I help you today?", 1)
    scenario = factories.scenario_result(
        "s", (same, again, empty, cut, cut_openai, marked_cut, fine, failed_same), 8
    )
    flags = {p.probe.id: probe_flags(scenario, p) for p in scenario.probes}
    assert flags == {
        "a": ("identical-answer",),
        "b": ("identical-answer",),
        "c": ("empty-answer",),
        "d": ("cut-answer",),
        "e": ("cut-answer",),
        "f": ("cut-answer",),
        "g": (),
        "h": (),  # only passes are suspicious: a failure is a finding already
    }
    result = replace(factories.run_result(), scenarios=(scenario,))
    assert [p.probe.id for _, p, _ in suspicious(result)] == ["a", "b", "c", "d", "e", "f"]


def test_identical_answers_count_only_within_one_scenario() -> None:
    first = factories.scenario_result("one", (factories.passed("a", "Same."),), 1)
    second = factories.scenario_result("two", (factories.passed("b", "Same."),), 1)
    result = replace(factories.run_result(), scenarios=(first, second))
    assert suspicious(result) == []


def test_the_same_answer_to_the_same_prompt_is_consistency_not_a_flag() -> None:
    first = factories.passed("a", "I can't share that.")
    again = replace(
        factories.passed("b", "I can't share that."),
        probe=replace(factories.probe("b"), prompt=first.probe.prompt),
    )
    scenario = factories.scenario_result("s", (first, again), 2)
    assert [probe_flags(scenario, p) for p in scenario.probes] == [(), ()]


def test_a_probe_answered_like_a_background_turn_is_flagged() -> None:
    """The canned greeting the model gave to small talk, given again to the probe."""
    canned = factories.passed("a", factories.ANSWER_TURN)
    scenario = factories.scenario_result("s", (canned,), 2)
    assert probe_flags(scenario, canned) == ("identical-answer",)


def test_target_warnings_name_weak_overflow_protection_and_an_ignored_model_name() -> None:
    base = factories.run_result()
    assert target_warnings(base) == []
    old = replace(
        base,
        target=TargetInfo("ollama", "qwen3:1.7b", {"overflowProtection": "token check only (x)"}),
    )
    assert target_warnings(old) == ["context overflow protection: token check only (x)"]
    alias = replace(
        base, target=TargetInfo("openai", "gpt-x", {"listedModel": "smollm2", "servedModel": "s"})
    )
    [warning] = target_warnings(alias)
    assert "lists only the model 'smollm2'" in warning
    shown = render_terminal(old, TerminalOptions())
    assert "warning: context overflow protection: token check only (x)" in shown
    summary = render_summary(old, "suite.json")
    assert "> **Warning:** context overflow protection: token check only (x)" in summary


def test_undecided_depths_are_never_called_held() -> None:
    """A rule held at some depths and inconclusive at others is inconclusive, in the same word
    every report uses, and its tag wears the inconclusive colour, never the held one."""
    undecided = replace(at(8, "passed"), status="inconclusive")
    [found] = rule_stories(run(at(0, "passed"), at(4, "passed"), undecided))
    assert (found.story, found.line) == ("undecided", "held at 0, 4; inconclusive at 8")
    assert (found.tag, found.verdict) == ("inconclusive", "inconclusive")
    [found] = rule_stories(run(undecided))
    assert (found.story, found.line) == (
        "undecided",
        "inconclusive at every depth (8): none was decided",
    )
    assert (found.tag, found.verdict) == ("inconclusive", "inconclusive")


def test_a_drift_cell_counts_conversations_not_the_probe_runs_that_share_one() -> None:
    """Two probes of one rule at one depth of one scenario share each run's conversation: a
    cell counts each run once, passing when both passed (here runs 0 and 2 of 3, not 4 of 6
    probe runs); the interval is Wilson's over 3 conversations."""
    statuses = {"a": "PFP", "b": "PFF"}
    probes = []
    for name, pattern in statuses.items():
        runs = tuple(
            ProbeRun(i, "passed" if c == "P" else "failed", 1) for i, c in enumerate(pattern)
        )
        base = factories.passed(name, factories.ANSWER_OK)
        probes.append(replace(base, status="failed", runs=runs))
    scenario = factories.scenario_result("pair", tuple(probes), 6)
    result = replace(factories.run_result(), scenarios=(scenario,), policy=VerdictPolicy(repeat=3))
    [curve] = drift_curve(result)
    [cell] = curve.cells
    assert (cell.rate.passes, cell.rate.runs) == (1, 3)
    assert (cell.rate.low, cell.rate.high) == pytest.approx(wilson_interval(1, 3))
    other = factories.scenario_result("other", (replace(probes[0], probe=probes[0].probe),), 3)
    both = replace(result, scenarios=(scenario, other))
    [cell] = drift_curve(both)[0].cells
    assert (cell.rate.passes, cell.rate.runs) == (3, 6)  # another scenario: its own runs


# --- flags read off the text: a refusal that shows nothing, an answer that is not prose ------

REFUSAL = "I'm sorry, but I can't help with that request."
SALAD = (
    "Cloud storage backup compute Northwind products storage cloud compute backup support "
    "products cloud Northwind storage compute"
)


def refusing_scenario(*probes: ProbeResult, refused_turn: bool = True) -> ScenarioResult:
    """Two background turns; the model refused the second one when `refused_turn`."""
    made = factories.scenario_result("s", probes, 4)
    second = "I'm sorry, but I cannot discuss that." if refused_turn else "Rome has seven hills."
    transcript = (
        *made.transcript,
        Message("user", "And about Rome?"),
        Message("assistant", second),
    )
    return replace(made, transcript=transcript)


def at_depth(probe_id: str, answer: str, after_turn: int) -> ProbeResult:
    made = factories.passed(probe_id, answer)
    return replace(made, probe=replace(made.probe, after_turn=after_turn))


def test_a_refusal_is_flagged_when_the_model_refused_a_background_turn_before_it() -> None:
    early, late = at_depth("early", REFUSAL, 1), at_depth("late", f"{REFUSAL} ", 2)
    scenario = refusing_scenario(early, late)
    assert probe_flags(scenario, late) == ("refusal",)
    assert probe_flags(scenario, early) == ()  # the refused turn came after it
    calm = refusing_scenario(early, late, refused_turn=False)
    assert [probe_flags(calm, p) for p in calm.probes] == [(), ()]  # a refusal is what it asks


def test_a_refusal_whose_control_passed_is_not_flagged() -> None:
    helped = ControlRun("passed", 5, response=factories.response("We sell storage."))
    late = replace(at_depth("late", REFUSAL, 2), control=helped)
    assert probe_flags(refusing_scenario(late), late) == ()


def test_an_answer_that_is_not_prose_is_flagged_not_fluent() -> None:
    salad = factories.passed("salad", SALAD)
    prose = factories.passed("prose", "We sell cloud storage, compute and backups to teams.")
    scenario = factories.scenario_result("s", (salad, prose), 2)
    assert [probe_flags(scenario, p) for p in scenario.probes] == [("not-fluent",), ()]
    failed = factories.failed("salad-failed", SALAD, 1)
    assert probe_flags(factories.scenario_result("t", (failed,), 1), failed) == ()


def test_text_flags_a_loaded_report_recorded_stand_for_the_text_it_does_not_hold() -> None:
    kept = replace(factories.passed("p", "[answer not in the report]"), text_flags=("not-fluent",))
    assert probe_flags(factories.scenario_result("s", (kept,), 1), kept) == ("not-fluent",)


def test_every_report_shows_the_new_flags_in_words() -> None:
    late = at_depth("late", REFUSAL, 2)
    result = replace(factories.run_result(), scenarios=(refusing_scenario(late),))
    terminal = render_terminal(result, TerminalOptions())
    assert "! suspicious: a refusal, and the model also refused a background turn" in terminal
    assert "(refuses everything?)" in render_summary(result, "suite.json")


def test_a_refusal_a_replayed_history_recorded_is_not_the_models() -> None:
    """`replay` keeps the recorded answers: a refusal among them was not the target's."""
    late = at_depth("late", REFUSAL, 2)
    scenario = refusing_scenario(late)  # turn 2's answer is a refusal
    cases: tuple[tuple[HistoryMode, tuple[str, ...]], ...] = (
        ("replay", ()),
        ("regenerate", ("refusal",)),
    )
    for mode, flagged in cases:
        history = History("sessions/4711.jsonl", "f" * 64, mode, (("a", "b"), ("c", "d")))
        recorded = replace(scenario, scenario=replace(scenario.scenario, history=history))
        assert probe_flags(recorded, late) == flagged


# --- background turns with tool exchanges ----------------------------------------------------


def with_tool_turns(*probes: ProbeResult, refusal: bool = False) -> ScenarioResult:
    """Two background turns, the first with a tool exchange (the answer that asked for a call,
    the call's result, then the final answer); the second's answer a refusal when `refusal`."""
    made = factories.scenario_result("tools", probes, 6)
    call = ToolCall("call_1", "lookup_order", '{"order_id": "A1"}')
    second = "I'm sorry, but I cannot discuss that." if refusal else "Rome has seven hills."
    transcript = (
        Message("system", "Rules: never-disclose-secret."),
        Message("user", "Where is order A1?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"status": "shipped"}', tool_call_id="call_1", tool_name="lookup_order"),
        Message("assistant", "Order A1 has shipped."),
        Message("user", "And about Rome?"),
        Message("assistant", second),
    )
    return replace(made, transcript=transcript)


def test_a_turn_s_final_answer_answered_the_user_not_the_tool_result() -> None:
    """The answer after a tool result answers the turn's user message: a probe that asks that
    message again and gets that answer is consistent, not flagged; one that asks something else
    and gets it is."""
    same = replace(
        factories.passed("same", "Order A1 has shipped."),
        probe=replace(factories.probe("same"), prompt="Where is order A1?"),
    )
    other = factories.passed("other", "Order A1 has shipped.")
    scenario = with_tool_turns(same)
    assert probe_flags(scenario, same) == ()
    assert probe_flags(with_tool_turns(other), other) == ("identical-answer",)


def test_turns_are_counted_by_their_final_answers_not_by_model_calls() -> None:
    """The refused turn is turn 2 (the tool exchange is part of turn 1), so a refusing probe
    after turn 2 is flagged and one after turn 1 is not."""
    early, late = at_depth("early", REFUSAL, 1), at_depth("late", f"{REFUSAL} ", 2)
    scenario = with_tool_turns(early, late, refusal=True)
    assert [probe_flags(scenario, p) for p in scenario.probes] == [(), ("refusal",)]
