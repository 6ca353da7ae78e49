"""reports/codequality.py: GitLab's Code Quality format (the fields GitLab's documentation
requires: description, check_name, fingerprint, severity, location.path, location.lines.begin),
unique fingerprints, GitLab's severity names, paths relative to the project."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ruledrift.data import Location
from ruledrift.reports.codequality import project_path, render_codequality
from tests.support import AGENTS
from tests.support import results as factories
from tests.support.cli_process import ruledrift
from tests.support.results import ANSWER_LEAK
from tests.support.suites import base_suite, position_of, write_suite

SEVERITIES = {"info", "minor", "major", "critical", "blocker"}


def issues_of(data: bytes) -> list[dict[str, Any]]:
    document = json.loads(data.decode("utf-8"))
    assert isinstance(document, list)
    return document


def assert_gitlab_fields(issue: dict[str, Any]) -> None:
    assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
    for name in ("description", "check_name", "fingerprint"):
        assert isinstance(issue[name], str)
        assert issue[name]
    assert issue["severity"] in SEVERITIES
    location = issue["location"]
    assert set(location) == {"path", "lines"}
    assert isinstance(location["path"], str)
    assert not location["path"].startswith("/")
    begin = location["lines"]["begin"]
    assert isinstance(begin, int)
    assert begin >= 1


def test_one_issue_per_probe_that_did_not_pass_with_gitlabs_fields() -> None:
    result = factories.run_result()
    issues = issues_of(render_codequality(result, project_dir=Path(".")))
    not_passed = [p for p in result.probes if p.status != "passed"]
    assert len(issues) == len(not_passed) == 4
    for issue, probe in zip(issues, not_passed, strict=True):
        assert_gitlab_fields(issue)
        assert issue["location"]["lines"]["begin"] == probe.probe.location.line
        assert issue["check_name"] == f"ruledrift/{probe.probe.rule.id}"
    assert len({issue["fingerprint"] for issue in issues}) == len(issues)
    failed = issues[0]
    assert failed["severity"] == "critical"
    assert failed["description"].startswith("RuleDrift: smalltalk/late-secret (rule ")
    assert "broke its rule: expected the answer not to contain" in failed["description"]
    assert [i["severity"] for i in issues[1:]] == ["major"] * 3  # errors of critical rules


def test_no_answer_text_ever() -> None:
    data = render_codequality(factories.run_result(), project_dir=Path("."))
    for marker in factories.ANSWER_MARKERS:
        assert marker.encode() not in data
    assert b"the secret is" not in data
    assert ANSWER_LEAK not in data.decode("utf-8")


def test_fingerprints_survive_moving_a_probe_but_not_changing_it() -> None:
    result = factories.run_result()
    moved = replace(
        result,
        scenarios=tuple(
            replace(
                s,
                probes=tuple(
                    replace(
                        p, probe=replace(p.probe, location=Location(p.probe.location.line + 5, 1))
                    )
                    for p in s.probes
                ),
            )
            for s in result.scenarios
        ),
    )
    first, second = (
        issues_of(render_codequality(r, project_dir=Path("."))) for r in (result, moved)
    )
    assert [i["fingerprint"] for i in first] == [i["fingerprint"] for i in second]
    assert [i["location"]["lines"]["begin"] + 5 for i in first] == [
        i["location"]["lines"]["begin"] for i in second
    ]


def test_paths_are_relative_to_the_project(tmp_path: Path) -> None:
    assert project_path(tmp_path / "rules" / "s.json", tmp_path) == "rules/s.json"
    assert project_path(Path("rules/s.json"), Path(".")) == "rules/s.json"
    outside = tmp_path.parent / "elsewhere.json"
    assert project_path(outside, tmp_path) == outside.as_posix()


def test_hostile_messages_are_plain_json_lines() -> None:
    failing = factories.failed("p", "x", after_turn=1)
    hostile = replace(
        failing,
        assertions=(replace(failing.assertions[0], message="bad\x1b]0;t\x07\n::error::x"),),
    )
    result = replace(
        factories.run_result(),
        scenarios=(factories.scenario_result("s", (hostile,), 2),),
    )
    [issue] = issues_of(render_codequality(result, project_dir=Path(".")))
    assert "\x1b" not in issue["description"]
    assert "\n" not in issue["description"]


@pytest.mark.process
def test_ruledrift_run_writes_it_relative_to_ci_project_dir(tmp_path: Path) -> None:
    project = tmp_path / "project"
    rules = project / "rules"
    rules.mkdir(parents=True)
    data = base_suite(
        command=sys.executable, args=[str(AGENTS / "scripted.py"), "--leak-after", "2"]
    )
    suite = write_suite(rules, data)
    report = tmp_path / "gl-code-quality.json"
    done = ruledrift("run", suite, "--codequality", report, env={"CI_PROJECT_DIR": str(project)})
    assert done.returncode == 1, done.stderr
    [issue] = issues_of(report.read_bytes())
    assert_gitlab_fields(issue)
    assert issue["location"]["path"] == "rules/suite.json"
    probe_line = position_of(suite, '"id": "late"')[0] - 1
    assert issue["location"]["lines"]["begin"] == probe_line
    assert f"codequality report: {report}" in done.stdout
    assert os.path.basename(report) in done.stdout
