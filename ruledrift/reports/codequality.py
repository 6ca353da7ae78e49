"""The GitLab Code Quality report (`--codequality`): one issue per probe that did not pass, on
the probe's line of the suite (a failed tool assertion's own line, when it failed on one), so
a merge request shows it in the diff (GitLab's counterpart of a GitHub annotation). See
docs/gitlab-ci.md.

The format is the subset of Code Climate's that GitLab reads: a JSON array of
`{description, check_name, fingerprint, severity, location: {path, lines: {begin}}}`. The
fingerprint identifies a probe's finding across pipelines (suite path, scenario, probe, rule and
status; not the line, so editing above a probe does not make its finding "new"), and is unique
within a report. Descriptions quote assertion messages and errors, never an answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ruledrift.data import ProbeResult, RunResult, Severity
from ruledrift.results.findings import failed_location
from ruledrift.text import preview

DESCRIPTION_MAX_CHARS = 1000
# GitLab's severities are info, minor, major, critical and blocker.
FAILED_SEVERITY: dict[Severity, str] = {"critical": "critical", "warning": "minor", "info": "info"}
ERROR_SEVERITY: dict[Severity, str] = {"critical": "major", "warning": "minor", "info": "info"}


def render_codequality(result: RunResult, *, project_dir: Path) -> bytes:
    """The report as UTF-8 JSON. `project_dir`: the project root (GitLab's `CI_PROJECT_DIR`)
    that the suite's path is written relative to."""
    path = project_path(result.suite.path, project_dir)
    issues = [
        _issue(path, scenario.scenario.id, probe)
        for scenario in result.scenarios
        for probe in scenario.probes
        if probe.status != "passed"
    ]
    return (json.dumps(issues, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def project_path(config: Path, project_dir: Path) -> str:
    """The suite's path relative to the project, as GitLab matches it to the diff; as given
    when the suite lies outside the project."""
    absolute = Path(os.path.normpath(Path.cwd() / config))
    root = Path(os.path.normpath(Path.cwd() / project_dir))
    if absolute.is_relative_to(root) and absolute != root:
        return absolute.relative_to(root).as_posix()
    return config.as_posix()


def _issue(path: str, scenario: str, result: ProbeResult) -> dict[str, object]:
    probe = result.probe
    rule = probe.rule
    where = f"{scenario}/{probe.id} (rule {rule.id}, after turn {probe.after_turn})"
    if result.status == "failed":
        reasons = "; ".join(a.message for a in result.failed_assertions) or "the probe failed"
        description = f"RuleDrift: {where} broke its rule: {reasons}"
        severity = FAILED_SEVERITY[rule.severity]
    elif result.status == "inconclusive":
        description = f"RuleDrift: {where} is inconclusive: {result.decided_by or 'undecided'}"
        severity = ERROR_SEVERITY[rule.severity]
    elif result.status == "vacuous":
        checks = result.control.failed_assertions if result.control else ()
        reasons = "; ".join(a.message for a in checks) or "it failed"
        description = f"RuleDrift: {where} passed vacuously: its control failed: {reasons}"
        severity = FAILED_SEVERITY[rule.severity]
    else:
        description = f"RuleDrift: {where} could not be run: {result.error or 'error'}"
        severity = ERROR_SEVERITY[rule.severity]
    identity = "\0".join((path, scenario, probe.id, rule.id, result.status))
    line = (failed_location(result) or probe.location).line
    return {
        "description": preview(description, DESCRIPTION_MAX_CHARS),
        "check_name": f"ruledrift/{rule.id}",
        "fingerprint": hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest(),
        "severity": severity,
        "location": {"path": path, "lines": {"begin": line}},
    }
