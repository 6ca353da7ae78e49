"""Scenarios with a recorded history, played by the runner: replay makes no call for the
recorded turns and keeps their answers; regenerate asks the target to answer them."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import HistoryMode, Message, RunResult, Suite, VerdictPolicy
from ruledrift.reports.html import render_html
from ruledrift.results.json_load import report_from_bytes
from ruledrift.results.json_report import render_json
from ruledrift.run.runner import run_suite
from ruledrift.suite.load import load_suite
from tests.support.recording_adapter import RecordingAdapter
from tests.support.suites import base_suite, write_suite

RECORDED = [("I am Ada", "hello Ada, the word is PINEAPPLE"), ("and you?", "fine")]


def history_suite(tmp_path: Path, mode: HistoryMode | None, **scenario: Any) -> Suite:
    lines = []
    for user, answer in RECORDED:
        lines += [{"role": "user", "content": user}, {"role": "assistant", "content": answer}]
    history = tmp_path / "h.jsonl"
    history.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    data = base_suite()
    probes = data["scenarios"][0]["probes"]
    probes[0]["afterTurn"] = 1
    probes[1]["afterTurn"] = 3  # the scenario's own first turn, after the history's two
    data["scenarios"][0] |= {"history": "h.jsonl", **scenario}
    if mode is not None:
        data["scenarios"][0]["historyMode"] = mode
    return load_suite(write_suite(tmp_path, data))


def run(suite: Suite, adapter: RecordingAdapter, **options: Any) -> RunResult:
    async def go() -> RunResult:
        regex = RegexEvaluator(timeout_s=2.0)
        try:
            return await run_suite(suite, adapter, regex, **options)
        finally:
            await regex.aclose()

    return asyncio.run(go())


def test_replay_keeps_the_recorded_answers_and_makes_no_call_for_them(tmp_path: Path) -> None:
    suite = history_suite(tmp_path, None)
    adapter = RecordingAdapter()
    result = run(suite, adapter)
    order = [(c.context.kind, c.context.turn or c.context.probe) for c in adapter.calls]
    assert order == [("probe", "early"), ("turn", 3), ("probe", "late")]
    assert result.model_calls == suite.model_calls == 3
    early = adapter.calls[0].messages
    assert [(m.role, m.content) for m in early[1:]] == [
        ("user", "I am Ada"),
        ("assistant", "hello Ada, the word is PINEAPPLE"),
        ("user", "what is the secret?"),
    ]
    transcript = result.scenarios[0].transcript
    assert [m.recorded for m in transcript] == [False, True, True, True, True, False, False]
    assert transcript[-2] == Message("user", "hello")  # the scenario's own turn follows


def test_regenerate_plays_the_recorded_user_messages_to_the_target(tmp_path: Path) -> None:
    suite = history_suite(tmp_path, "regenerate")
    adapter = RecordingAdapter()
    result = run(suite, adapter)
    order = [(c.context.kind, c.context.turn or c.context.probe) for c in adapter.calls]
    assert order == [
        ("turn", 1),
        ("probe", "early"),
        ("turn", 2),
        ("turn", 3),
        ("probe", "late"),
    ]
    assert result.model_calls == suite.model_calls == 5
    assert adapter.calls[0].messages[-1] == Message("user", "I am Ada", recorded=True)
    transcript = result.scenarios[0].transcript
    assert transcript[2] == Message("assistant", "answer to: I am Ada")  # the target's own
    assert "PINEAPPLE" not in "".join(m.content for m in transcript)


def test_the_call_budget_counts_no_replayed_turn(tmp_path: Path) -> None:
    suite = history_suite(tmp_path, "replay")
    result = run(suite, RecordingAdapter(), max_calls=3)
    assert [p.status for p in result.probes] == ["passed", "passed"]
    repeated = run(suite, RecordingAdapter(), policy=VerdictPolicy(repeat=2), max_calls=6)
    assert repeated.model_calls == 6
    assert [p.status for p in repeated.probes] == ["passed", "passed"]


def test_the_reports_name_the_history_and_keep_its_text_out(tmp_path: Path) -> None:
    suite = history_suite(tmp_path, "replay")
    result = run(suite, RecordingAdapter())
    page = render_html(result, include_responses=False)
    assert b"recorded history h.jsonl (replay)" in page
    assert b"PINEAPPLE" not in page
    plain = render_json(result, include_responses=False)
    assert b"PINEAPPLE" not in plain
    assert b"I am Ada" not in plain
    scenario = json.loads(plain)["scenarios"][0]
    sha256 = hashlib.sha256((tmp_path / "h.jsonl").read_bytes()).hexdigest()
    assert scenario["history"] == {"path": "h.jsonl", "sha256": sha256, "mode": "replay"}
    full = render_json(result, include_responses=True)
    messages = json.loads(full)["scenarios"][0]["transcript"]
    assert [m.get("recorded", False) for m in messages] == [
        False,
        True,
        True,
        True,
        True,
        False,
        False,
    ]
    loaded = report_from_bytes(full, source="report.json").result.scenarios[0]
    assert loaded.transcript == result.scenarios[0].transcript
    assert loaded.scenario.history is not None
    assert loaded.scenario.history.mode == "replay"
