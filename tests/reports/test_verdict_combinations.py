"""Every report a person reads (the HTML page, the job summary, the terminal) on every
combination of verdicts a rule can have across its depths: kept (passed), broken (failed),
inconclusive, error, and not probed there. Each must render, and say the same thing in the
same words: the rule's story tag, never green unless every depth was kept, and each depth's
cell coloured by that depth's verdict."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite


@pytest.mark.process
def test_a_rule_whose_only_depth_is_inconclusive_renders_in_html(tmp_path: Path) -> None:
    """The crash of issue 21: `--repeat auto` with a cap that leaves the rule's only probed
    depth inconclusive stopped with an internal error (KeyError 'undecided') in the HTML grid."""
    suite = base_suite(
        command=sys.executable, args=[str(AGENTS / "scripted.py"), "--leak-runs", "2"]
    )
    scenario = suite["scenarios"][0]
    scenario["probes"] = scenario["probes"][:1]
    path = write_suite(tmp_path, suite)
    page, report = tmp_path / "report.html", tmp_path / "report.json"
    done = ruledrift(
        "run", path, "--repeat", "auto", "--max-repeat", "5", "--html", page, "--json", report
    )
    assert done.returncode == 1, done.stderr  # inconclusive fails the run; 4 is a bug
    assert "internal error" not in done.stderr
    [probe] = json.loads(report.read_text(encoding="utf-8"))["scenarios"][0]["probes"]
    rate = probe["passRate"]
    assert (probe["status"], rate["passes"], rate["runs"]) == ("inconclusive", 4, 5)
    html = page.read_text(encoding="utf-8")
    assert 'class="badge inconclusive" data-story="undecided">inconclusive</span>' in html
    assert "rule never-disclose-secret  inconclusive at every depth (0)" in done.stdout
    assert "UNDEC" not in done.stdout
