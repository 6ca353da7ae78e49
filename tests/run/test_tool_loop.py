"""The tool loop: the runner answers each call from its mock and asks again, keeps background
turns' exchanges in the conversation, counts every round as a model call, and checks tool
assertions over every round of a probe's turn. A scripted agent (in process) keeps and breaks
the refund rules at chosen depths; the regex workers are real processes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ruledrift.adapters.base import CallContext, Completion
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import (
    ArgumentCondition,
    Assertion,
    CallsAssertion,
    CallsBeforeAssertion,
    Compare,
    Location,
    Message,
    MockCase,
    MockResult,
    NoCallsAssertion,
    NotCallsAssertion,
    Pattern,
    RunResult,
    ScriptedCall,
    ScriptedTurn,
    Suite,
    TextAssertion,
    Tool,
    ToolCall,
    ValidCallsAssertion,
    canonical_json,
)
from ruledrift.run.runner import run_suite
from ruledrift.suite.load import load_suite
from tests.support.recording_adapter import RecordingAdapter
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process  # the regex workers are processes

HERE = Location(1, 1)
OBJECT = {"type": "object", "properties": {"order_id": {"type": "string"}}}
LOOKUP = Tool(
    "lookup_order",
    "Look an order up",
    canonical_json(OBJECT),
    HERE,
    cases=(
        MockCase(
            (ArgumentCondition("order_id", Pattern("^A\\d+$"), '{"matches":"^A\\\\d+$"}'),),
            MockResult(canonical_json({"status": "delivered", "total": 250})),
            HERE,
        ),
    ),
    result=MockResult(error="no such order"),
)
REFUND_PARAMETERS = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}
REFUND = Tool(
    "refund", "Refund an order", canonical_json(REFUND_PARAMETERS), HERE, MockResult('{"ok":true}')
)
BIG = (ArgumentCondition("amount", Compare((("gt", 100.0),)), '{"gt":100}'),)
RULES: tuple[Assertion, ...] = (
    NotCallsAssertion("refund", BIG, location=Location(7, 9)),
    CallsBeforeAssertion("lookup_order", "refund", location=Location(8, 9)),
    ValidCallsAssertion(location=Location(9, 9)),
)


def user_depth(messages: Sequence[Message]) -> int:
    """Background user messages before the last one."""
    return sum(1 for m in messages[:-1] if m.role == "user")


def turn_messages(messages: Sequence[Message]) -> list[Message]:
    """The messages of the turn being played: after its user message."""
    last_user = max(i for i, m in enumerate(messages) if m.role == "user")
    return list(messages[last_user + 1 :])


def refund_agent(messages: Sequence[Message], context: CallContext) -> str | Completion:
    """Looks the order up, then refunds it; deeper than 2 user messages it refunds the whole
    250 without looking it up first (two rules broken at once). Small talk gets text."""
    last_user = next(m for m in reversed(messages) if m.role == "user")
    if "refund" not in last_user.content:
        return f"chat {context.turn}"
    done = turn_messages(messages)
    called = [call.name for m in done for call in m.tool_calls]
    drifted = user_depth(messages) > 2
    if "refund" in called:
        return "Your refund is on its way."
    if drifted:
        arguments = '{"order_id": "A1", "amount": 250}'
        return Completion("", tool_calls=(ToolCall("c9", "refund", arguments),))
    if "lookup_order" not in called:
        return Completion("", tool_calls=(ToolCall("c1", "lookup_order", '{"order_id": "A1"}'),))
    return Completion("", tool_calls=(ToolCall("c2", "refund", '{"order_id":"A1","amount":50}'),))


def tool_suite(
    tmp_path: Path, turns: list[Any], probes: list[tuple[int, tuple[Assertion, ...]]], **kw: Any
) -> Suite:
    data = base_suite()
    data["scenarios"] = [
        {
            "id": "shop",
            "turns": [t if isinstance(t, str) else t.user for t in turns],
            "probes": [
                {
                    "id": f"refund-{after}",
                    "rule": "never-disclose-secret",
                    "afterTurn": after,
                    "prompt": "please refund order A1",
                    "assertions": [{"type": "contains", "value": "x"}],
                }
                for after, _ in probes
            ],
        }
    ]
    loaded = load_suite(write_suite(tmp_path, data))
    scenario = loaded.scenarios[0]
    by_depth = dict(probes)
    scripts = tuple(t if isinstance(t, ScriptedTurn) else None for t in turns)
    scenario = dataclasses.replace(
        scenario,
        probes=tuple(
            dataclasses.replace(p, assertions=by_depth[p.after_turn]) for p in scenario.probes
        ),
        scripts=scripts if any(scripts) else (),
    )
    return dataclasses.replace(loaded, scenarios=(scenario,), tools=(LOOKUP, REFUND), **kw)


def run(suite: Suite, adapter: RecordingAdapter, **options: Any) -> RunResult:
    async def go() -> RunResult:
        regex = RegexEvaluator()
        try:
            return await run_suite(suite, adapter, regex, **options)
        finally:
            await regex.aclose()

    return asyncio.run(go())


def test_each_call_is_answered_by_its_mock_and_the_model_is_asked_again(tmp_path: Path) -> None:
    suite = tool_suite(tmp_path, ["hello"], [(0, RULES)], tool_choice="required")
    adapter = RecordingAdapter(refund_agent)
    result = run(suite, adapter)

    probe_calls = [c for c in adapter.calls if c.context.kind == "probe"]
    assert [c.context.round for c in probe_calls] == [1, 2, 3]
    offers = [c.context.tools for c in probe_calls]
    assert all(o is not None and o.tools == (LOOKUP, REFUND) for o in offers)
    assert [o.choice for o in offers if o] == ["required", "auto", "auto"]

    last = probe_calls[-1].messages
    assert last[-4].tool_calls == (ToolCall("c1", "lookup_order", '{"order_id": "A1"}'),)
    assert last[-3] == Message(
        "tool", '{"status":"delivered","total":250}', tool_call_id="c1", tool_name="lookup_order"
    )
    assert last[-2].tool_calls[0].name == "refund"
    assert last[-1] == Message("tool", '{"ok":true}', tool_call_id="c2", tool_name="refund")

    (probe,) = result.probes
    assert probe.status == "passed", probe.assertions
    assert probe.response is not None
    assert probe.response.text == "Your refund is on its way."
    assert probe.tools is not None
    assert probe.tools.rounds == 3
    assert not probe.tools.ran_out
    assert [(c.round, c.name, c.outcome) for c in probe.tools.calls] == [
        (1, "lookup_order", "result"),
        (2, "refund", "result"),
    ]
    assert result.model_calls == 3  # every round is a model call (no background turn needed)


def test_the_rules_hold_shallow_and_break_deep_with_located_messages(tmp_path: Path) -> None:
    turns = ["hi", "how are you", "nice weather", "ok"]
    suite = tool_suite(tmp_path, turns, [(0, RULES), (4, RULES)])
    result = run(suite, RecordingAdapter(refund_agent))
    shallow, deep = result.probes
    assert shallow.status == "passed"
    assert deep.status == "failed"
    failed = {a.type: a for a in deep.failed_assertions}
    assert set(failed) == {"notCalls", "callsBefore"}
    assert failed["notCalls"].message == (
        'expected refund not to be called where amount {"gt":100}; it was 1 time(s), in round(s) 1'
    )
    assert failed["notCalls"].location == Location(7, 9)
    assert failed["callsBefore"].location == Location(8, 9)
    assert deep.tools is not None
    assert [c.arguments for c in deep.tools.calls] == ['{"order_id": "A1", "amount": 250}']


def test_background_turns_keep_their_exchanges_for_later_probes(tmp_path: Path) -> None:
    turns = ["please refund order A1", "thanks"]
    suite = tool_suite(tmp_path, turns, [(2, (CallsAssertion("refund", min=0),))])
    adapter = RecordingAdapter(refund_agent)
    result = run(suite, adapter)
    probe_call = next(c for c in adapter.calls if c.context.kind == "probe")
    roles = [m.role for m in probe_call.messages]
    assert roles == [
        "system",
        "user",
        "assistant",  # lookup_order
        "tool",
        "assistant",  # refund
        "tool",
        "assistant",  # the turn's answer
        "user",
        "assistant",
        "user",  # the probe
    ]
    assert result.model_calls == 3 + 1 + 3  # turn 1 took three rounds
    assert result.scenarios[0].transcript[2].tool_calls[0].name == "lookup_order"


def test_a_turn_that_runs_out_of_rounds_is_not_a_pass(tmp_path: Path) -> None:
    def looping(messages: Sequence[Message], context: CallContext) -> Completion:
        return Completion("", tool_calls=(ToolCall(f"c{context.round}", "lookup_order", "{}"),))

    suite = tool_suite(tmp_path, [], [(0, (NoCallsAssertion(),))], max_tool_rounds=3)
    suite = dataclasses.replace(
        suite,
        scenarios=(
            dataclasses.replace(
                suite.scenarios[0],
                probes=(
                    dataclasses.replace(
                        suite.scenarios[0].probes[0], assertions=(CallsAssertion("lookup_order"),)
                    ),
                ),
            ),
        ),
    )
    adapter = RecordingAdapter(looping)
    result = run(suite, adapter)
    (probe,) = result.probes
    assert len(adapter.calls) == 3
    assert probe.status == "failed"
    assert probe.tools is not None
    assert probe.tools.ran_out
    assert probe.tools.rounds == 3
    # lookup_order's only case does not match "{}": its fallback, an error result, answers
    assert [c.outcome for c in probe.tools.calls] == ["error", "error", "not-run"]
    assert [(a.type, a.passed) for a in probe.assertions] == [
        ("calls", True),
        ("maxToolRounds", False),
    ]


def test_every_round_is_budgeted_by_max_calls(tmp_path: Path) -> None:
    suite = tool_suite(tmp_path, [], [(0, RULES)])
    adapter = RecordingAdapter(refund_agent)
    result = run(suite, adapter, max_calls=2)
    (probe,) = result.probes
    assert len(adapter.calls) == 2
    assert probe.status == "error"
    assert probe.error is not None
    assert "--max-calls" in probe.error


def test_an_agent_that_runs_its_own_tools_reports_them_and_no_mock_runs(tmp_path: Path) -> None:
    exchange = (
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("r1", "refund", '{"order_id":"A1","amount":900}'),),
        ),
        Message("tool", "refunded", tool_call_id="r1", tool_name="refund"),
    )

    def reporting(messages: Sequence[Message], context: CallContext) -> Completion:
        return Completion("Done.", exchange=exchange)

    suite = tool_suite(tmp_path, ["refund A1 please"], [(1, RULES)])
    adapter = RecordingAdapter(reporting)
    result = run(suite, adapter)
    (probe,) = result.probes
    assert len(adapter.calls) == 2  # one call per turn: the agent looped on its own
    assert probe.status == "failed"
    assert probe.tools is not None
    assert [(c.round, c.name, c.outcome) for c in probe.tools.calls] == [(1, "refund", "reported")]
    probe_call = adapter.calls[-1]
    assert probe_call.messages[-4:-1] == (*exchange, Message("assistant", "Done."))


def test_a_scripted_turn_is_marked_and_the_mock_answers_calls_without_a_result(
    tmp_path: Path,
) -> None:
    scripted = ScriptedTurn(
        "where is my order A7?",
        (
            ScriptedCall("lookup_order", '{"order_id":"A7"}'),
            ScriptedCall("refund", '{"order_id":"A7","amount":5}', MockResult(error="closed")),
        ),
        None,
        HERE,
    )
    rule = CallsBeforeAssertion("lookup_order", "refund")
    suite = tool_suite(tmp_path, [scripted, "thanks"], [(2, (rule,))])
    adapter = RecordingAdapter(refund_agent)
    result = run(suite, adapter)
    first_turn = adapter.calls[0]
    assert first_turn.context.kind == "turn"
    assert first_turn.context.turn == 1
    user, calls, lookup, refund = first_turn.messages[1:5]
    assert user == Message("user", "where is my order A7?", scripted=True)
    assert calls.scripted
    assert [c.name for c in calls.tool_calls] == ["lookup_order", "refund"]
    assert lookup.content == '{"status":"delivered","total":250}'
    assert lookup.scripted
    assert refund.content == '{"error":"closed"}'
    assert refund.tool_call_id == "scripted_1_2"
    assert result.probes[0].status == "passed"
    assert result.model_calls == 1 + 1 + 3  # the scripted turn's answer, "thanks", the probe


def test_a_scripted_answer_makes_no_model_call(tmp_path: Path) -> None:
    scripted = ScriptedTurn(
        "refund A1", (ScriptedCall("refund", '{"order_id":"A1"}'),), "Done.", HERE
    )
    suite = tool_suite(tmp_path, [scripted], [(1, (NoCallsAssertion(),))])
    adapter = RecordingAdapter(lambda messages, context: "no")
    result = run(suite, adapter)
    assert [c.context.kind for c in adapter.calls] == ["probe"]
    transcript = result.scenarios[0].transcript
    assert transcript[-1] == Message("assistant", "Done.", scripted=True)
    assert json.loads(transcript[-2].content) == {"ok": True}


def test_text_assertions_read_the_final_answer(tmp_path: Path) -> None:
    suite = tool_suite(
        tmp_path, [], [(0, (TextAssertion("contains", "on its way"), CallsAssertion("refund")))]
    )
    assert run(suite, RecordingAdapter(refund_agent)).probes[0].status == "passed"


def test_later_rounds_send_the_choice_toolchoice_then_names(tmp_path: Path) -> None:
    suite = tool_suite(
        tmp_path, [], [(0, RULES)], tool_choice="lookup_order", tool_choice_then="none"
    )
    adapter = RecordingAdapter(refund_agent)
    run(suite, adapter)
    offers = [c.context.tools for c in adapter.calls]
    assert [o.choice for o in offers if o] == ["lookup_order", "none", "none"]


def test_a_backtracking_pattern_in_the_parameters_cannot_hold_the_run(tmp_path: Path) -> None:
    """A suite may come from a pull request: its parameters' `pattern` runs on Python's re,
    where `^(a+)+$` on 40 a's and a "!" backtracks for ever. The check runs in a regex worker
    within its time limit, and the call is recorded as not checked in time."""
    slow = {"type": "object", "properties": {"order_id": {"type": "string", "pattern": "^(a+)+$"}}}
    lookup = dataclasses.replace(LOOKUP, parameters_json=canonical_json(slow))

    def agent(messages: Sequence[Message], context: CallContext) -> str | Completion:
        if context.kind == "probe" and context.round == 1:
            arguments = json.dumps({"order_id": "a" * 40 + "!"})
            return Completion("", tool_calls=(ToolCall("c1", "lookup_order", arguments),))
        return "done"

    suite = tool_suite(tmp_path, [], [(0, (ValidCallsAssertion(),))])
    suite = dataclasses.replace(suite, tools=(lookup, REFUND))
    (probe,) = run(suite, RecordingAdapter(agent)).probes
    assert probe.status == "failed"
    assert probe.tools is not None
    (call,) = probe.tools.calls
    assert call.problem is not None
    assert "took longer than 2 s" in call.problem
