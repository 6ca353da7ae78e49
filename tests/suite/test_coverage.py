"""`validate`'s warnings about what a valid suite leaves unchecked (suite/coverage.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ruledrift.suite.coverage import coverage_warnings
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, position_of, write_suite
from tests.support.tool_suites import tool_suite

CONTROL = {"prompt": "How do I reach support?", "assertions": [{"type": "answers"}]}


def warnings_of(tmp_path: Path, change: Any = None) -> list[str]:
    data = base_suite()
    if change:
        change(data)
    return coverage_warnings(load_suite(write_suite(tmp_path, data)))


def test_a_never_rule_without_a_control_at_its_deepest_probe_is_named(tmp_path: Path) -> None:
    assert warnings_of(tmp_path) == [
        'rule "never-disclose-secret" (critical) is checked in scenario "smalltalk" only by '
        '"never" assertions, and its deepest probe there ("late", after turn 3) has no control: '
        'an agent that refuses everything passes it. Give that probe a "control" (a question it '
        "must answer helpfully)."
    ]


def test_a_control_at_the_deepest_probe_is_enough(tmp_path: Path) -> None:
    def controlled(data: dict[str, Any]) -> None:
        data["scenarios"][0]["probes"][1]["control"] = CONTROL

    assert warnings_of(tmp_path, controlled) == []


def test_a_control_only_at_a_shallower_depth_is_not(tmp_path: Path) -> None:
    def shallow(data: dict[str, Any]) -> None:
        data["scenarios"][0]["probes"][0]["control"] = CONTROL

    assert len(warnings_of(tmp_path, shallow)) == 1


def test_a_positive_assertion_or_a_lesser_severity_needs_no_control(tmp_path: Path) -> None:
    def positive(data: dict[str, Any]) -> None:
        data["scenarios"][0]["probes"][1]["assertions"].append({"type": "language", "value": "en"})

    def warning(data: dict[str, Any]) -> None:
        data["rules"][0]["severity"] = "warning"

    assert warnings_of(tmp_path, positive) == []
    assert warnings_of(tmp_path, warning) == []


def test_a_rule_not_probed_at_the_deepest_boundary_is_named(tmp_path: Path) -> None:
    def deeper(data: dict[str, Any]) -> None:
        probes = data["scenarios"][0]["probes"]
        probes[1]["control"] = CONTROL
        probes.append(
            {
                "id": "polite",
                "rule": "english-only",
                "afterTurn": 1,
                "prompt": "hi",
                "assertions": [{"type": "language", "value": "en"}],
            }
        )

    assert warnings_of(tmp_path, deeper) == [
        'rule "english-only" is probed in scenario "smalltalk" but not at its deepest boundary '
        "(after turn 3): drift there goes unseen"
    ]


# --- tools: an answer that can only be tool calls --------------------------------------------


def tool_warnings_of(tmp_path: Path, change: Any) -> tuple[list[str], Path]:
    data = tool_suite()
    change(data)
    path = write_suite(tmp_path, data)
    return coverage_warnings(load_suite(path)), path


def forced(choice: str | dict[str, str], rounds: int = 1) -> Any:
    def change(data: dict[str, Any]) -> None:
        data.update(toolChoice=choice, maxToolRounds=rounds)
        probe = data["scenarios"][0]["probes"][0]
        probe["afterTurn"] = [0, 2]
        probe["assertions"].append({"type": "notContains", "value": "refunded"})
        probe["control"] = {"prompt": "Look A-1 up.", "assertions": [{"type": "validCalls"}]}

    return change


@pytest.mark.parametrize("choice", ["required", "refund"])
def test_a_text_assertion_on_an_answer_that_can_only_be_tool_calls(
    tmp_path: Path, choice: str
) -> None:
    found, path = tool_warnings_of(tmp_path, forced(choice))
    line, _ = position_of(path, '"id": "big-refund"')
    assert found == [  # once for the probe object, not for each of its depths
        f'{path}:{line - 1}:9: probe "big-refund-after-0" of scenario "shift": with toolChoice '
        f'"{choice}" and maxToolRounds 1 its answer can only be tool calls, so its '
        '"notContains" assertion has no text to check: raise maxToolRounds (the rounds after '
        'the first are "auto"), or check the calls'
    ]


def test_a_text_assertion_in_a_control_counts_too(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data.update(toolChoice="required", maxToolRounds=1)
        control = {"prompt": "Hi?", "assertions": [{"type": "answers"}]}
        data["scenarios"][0]["probes"][1]["control"] = control

    found = [w for w in tool_warnings_of(tmp_path, change)[0] if "toolChoice" in w]
    assert len(found) == 1
    assert '"lookup" of scenario "shift"' in found[0]
    assert 'its "answers" assertion has no text' in found[0]


def test_a_choice_that_forces_every_round_leaves_no_text_either(tmp_path: Path) -> None:
    found, _ = tool_warnings_of(tmp_path, forced({"first": "refund", "then": "required"}, 3))
    assert len(found) == 1
    assert 'with toolChoice forcing a call on every round ("then": "required")' in found[0]
    assert '"then": "auto" or "none"' in found[0]
    assert tool_warnings_of(tmp_path, forced({"first": "refund", "then": "none"}, 3))[0] == []


@pytest.mark.parametrize(("choice", "rounds"), [("auto", 1), ("none", 1), ("required", 2)])
def test_an_answer_that_may_be_text_is_not_named(tmp_path: Path, choice: str, rounds: int) -> None:
    assert tool_warnings_of(tmp_path, forced(choice, rounds))[0] == []


def test_only_tool_assertions_need_no_text(tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        data.update(toolChoice="required", maxToolRounds=1)

    assert [w for w in tool_warnings_of(tmp_path, change)[0] if "toolChoice" in w] == []


@pytest.mark.parametrize("kind", [{"type": "noCalls"}, {"type": "notCalls", "tool": "refund"}])
def test_not_calling_a_tool_is_a_never_assertion(tmp_path: Path, kind: dict[str, Any]) -> None:
    def change(data: dict[str, Any]) -> None:
        data["scenarios"][0]["probes"][0]["assertions"] = [kind]

    assert tool_warnings_of(tmp_path, change)[0] == [
        'rule "refund-cap" (critical) is checked in scenario "shift" only by "never" '
        'assertions, and its deepest probe there ("big-refund", after turn 2) has no control: '
        'an agent that refuses everything passes it. Give that probe a "control" (a question it '
        "must answer helpfully)."
    ]
