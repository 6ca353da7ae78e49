"""What `app.run` tells the observer before the first call: under `--repeat auto` the model
calls expected beside the most, checked against every combination of stopping times played
out (tests/stats/test_expected.py), not against the formula that computes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledrift.app.running import run_plan
from ruledrift.data import VerdictPolicy
from ruledrift.stats import SequentialDesign, decide
from ruledrift.suite.load import load_suite
from tests.stats.test_expected import enumerated_calls
from tests.support.suites import base_suite, write_suite


def suite_path(tmp_path: Path) -> Path:
    data = base_suite()
    data["scenarios"].append(dict(data["scenarios"][0], id="other"))
    data["scenarios"][1]["probes"] = data["scenarios"][1]["probes"][1:]  # only `late`, at 3
    return write_suite(tmp_path, data)


@pytest.mark.parametrize("holds_at", [0.95, 0.9])
def test_repeat_auto_plans_the_calls_expected_at_the_holds_at_rate(
    tmp_path: Path, holds_at: float
) -> None:
    suite = load_suite(suite_path(tmp_path))
    policy = VerdictPolicy(repeat="auto", holds_at=holds_at)
    plan = run_plan(suite, suite.scenarios, policy, selection=3)
    design = SequentialDesign.for_suite(3, holds_at=holds_at)
    assert plan.expected is not None
    assert plan.expected.pass_rate == holds_at
    assert plan.expected.calls == round(enumerated_calls(design, holds_at, [[0, 3], [3]]))
    assert (plan.runs, plan.model_calls) == (design.cap, design.cap * (5 + 4))
    assert plan.expected.calls < plan.model_calls
    never = next(n for n in range(1, design.cap) if decide(n, n, design).verdict == "holds")
    assert plan.expected.never_failing == never * (5 + 4)  # every run: 3 turns + 2, 3 + 1


def test_a_shard_plans_its_own_scenarios_with_the_design_of_the_whole_selection(
    tmp_path: Path,
) -> None:
    suite = load_suite(suite_path(tmp_path))
    policy = VerdictPolicy(repeat="auto")
    plan = run_plan(suite, suite.scenarios[1:], policy, selection=3)
    design = SequentialDesign.for_suite(3)
    assert plan.expected is not None
    assert plan.expected.calls == round(enumerated_calls(design, 0.95, [[3]]))
    assert plan.model_calls == design.cap * 4


def test_fixed_repeats_plan_exact_calls(tmp_path: Path) -> None:
    suite = load_suite(suite_path(tmp_path))
    plan = run_plan(suite, suite.scenarios, VerdictPolicy(repeat=4), selection=3)
    assert (plan.runs, plan.model_calls, plan.expected) == (4, 4 * 9, None)


def test_replayed_history_turns_are_not_planned_as_calls(tmp_path: Path) -> None:
    """The same depths as above, but the first scenario's 3 turns come from a replayed history:
    its runs make only their probe calls."""
    lines = [
        json.dumps({"role": role, "content": f"{role} {i}"}) + "\n"
        for i in range(3)
        for role in ("user", "assistant")
    ]
    (tmp_path / "h.jsonl").write_text("".join(lines), encoding="utf-8")
    data = base_suite()
    data["scenarios"].append(dict(data["scenarios"][0], id="other"))
    data["scenarios"][1]["probes"] = data["scenarios"][1]["probes"][1:]
    data["scenarios"][0] |= {"history": "h.jsonl", "turns": []}
    suite = load_suite(write_suite(tmp_path, data))
    policy = VerdictPolicy(repeat="auto")
    plan = run_plan(suite, suite.scenarios, policy, selection=3)
    design = SequentialDesign.for_suite(3)
    assert plan.model_calls == design.cap * (2 + 4)
    never = next(n for n in range(1, design.cap) if decide(n, n, design).verdict == "holds")
    assert plan.expected is not None
    assert plan.expected.never_failing == never * (2 + 4)  # every run: 0 + 2 probes, 3 + 1
