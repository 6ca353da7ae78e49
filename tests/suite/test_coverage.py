"""`validate`'s warnings about what a valid suite leaves unchecked (suite/coverage.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruledrift.suite.coverage import coverage_warnings
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, write_suite

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
