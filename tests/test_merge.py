"""`ruledrift merge`: the shards of a run merge into the report an unsharded run writes (counts,
probe results, drift curve, sequential verdicts), and reports that do not belong together are
refused with exit 2."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite


def suite(tmp_path: Path, *agent_args: str, scenarios: int = 5) -> Path:
    data = base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py"), *agent_args])
    first = data["scenarios"][0]
    data["scenarios"] = [
        {**json.loads(json.dumps(first)), "id": f"s{i}", "turns": first["turns"][: 1 + i % 3]}
        for i in range(scenarios)
    ]
    for scenario in data["scenarios"]:
        for probe in scenario["probes"]:
            probe["afterTurn"] = min(probe["afterTurn"], len(scenario["turns"]))
    return write_suite(tmp_path, data)


def comparable(path: Path) -> dict[str, Any]:
    """A JSON report without what differs between runs (times) or between a merge and an
    unsharded run by design (the shard)."""
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    report.pop("startedAt")
    report.pop("durationMs")
    report["suite"].pop("shard", None)
    for scenario in report["scenarios"]:
        scenario.pop("durationMs")
        for probe in scenario["probes"]:
            probe.pop("durationMs")
            for run in probe.get("runs", []):
                run.pop("durationMs")
    return report


def sharded(tmp_path: Path, path: Path, total: int, *args: str) -> list[Path]:
    reports = []
    for k in range(1, total + 1):
        report = tmp_path / f"shard-{k}.json"
        done = ruledrift("run", path, "--shard", f"{k}/{total}", "--json", report, *args)
        assert done.returncode in (0, 1), done.stderr
        reports.append(report)
    return reports


@pytest.mark.parametrize(
    "args",
    [
        ("--seed", "7"),
        ("--seed", "7", "--repeat", "3"),
        ("--seed", "7", "--repeat", "auto", "--max-repeat", "8"),
    ],
)
def test_merged_shards_equal_an_unsharded_run(tmp_path: Path, args: tuple[str, ...]) -> None:
    path = suite(tmp_path, "--leak-probability", "0.3")
    whole = tmp_path / "whole.json"
    alone = ruledrift("run", path, "--json", whole, *args)
    merged = tmp_path / "merged.json"
    shards = sharded(tmp_path, path, 3, *args)
    done = ruledrift("merge", *shards, "--json", merged, "--junit", tmp_path / "merged.xml")
    assert done.returncode == alone.returncode, done.stderr
    assert comparable(merged) == comparable(whole)
    assert (tmp_path / "merged.xml").read_bytes().count(b"<testcase") == 10


def test_reports_that_do_not_belong_together_are_refused(tmp_path: Path) -> None:
    path = suite(tmp_path)
    one, two = sharded(tmp_path, path, 2)
    (tmp_path / "other").mkdir()
    other = suite(tmp_path / "other", "--answer", "x")
    foreign = tmp_path / "foreign.json"
    ruledrift("run", other, "--shard", "2/2", "--json", foreign)
    whole = tmp_path / "whole.json"
    ruledrift("run", path, "--json", whole)
    cases = [
        ((one, foreign), "are reports of different suites (configSha256)"),
        ((one, one), "are both shard 1"),
        ((one,), "shard(s) 2/2 missing (--allow-partial merges what is there)"),
        ((one, whole), "is not a shard"),
    ]
    for reports, message in cases:
        done = ruledrift("merge", *reports)
        assert done.returncode == 2, (reports, done.stdout)
        assert message in done.stderr, done.stderr
    partial = ruledrift("merge", one, "--allow-partial", "--json", tmp_path / "partial.json")
    assert partial.returncode in (0, 1)
    assert "partial merge: shard(s) 2/2 not given" in partial.stderr
    refused = ruledrift("merge", one, two, "--json", one)
    assert refused.returncode == 2
    assert "would overwrite a report being merged" in refused.stderr
