"""`ruledrift merge`: the shards of a run merge into the report an unsharded run writes (counts,
probe results, drift curve, sequential verdicts), and reports that do not belong together are
refused with exit 2."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, position_of, write_suite

pytestmark = pytest.mark.process


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
    unsharded run by design (the shard, and the report whose times cut the shards)."""
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    report.pop("startedAt")
    report.pop("durationMs")
    report["suite"].pop("shard", None)
    report["suite"].pop("balancedBy", None)
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
    counted = tmp_path / "three.json"
    counted.write_text(one.read_text(encoding="utf-8").replace('"total": 2', '"total": 3'))
    cases = [
        ((one, foreign), "are reports of different suites (configSha256)"),
        ((counted, two), "are reports of different shard counts"),
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


# --- shards that do not hold the suite's scenarios exactly ----------------------------------------


def edit(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """`path` rewritten with `change` applied and its summary made to agree with its probes
    again (as someone editing an artifact would, to get past the summary check)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    probes = [p for s in data["scenarios"] for p in s["probes"]]
    statuses = [p["status"] for p in probes]
    data["summary"] |= {
        "scenarios": len(data["scenarios"]),
        "probes": len(probes),
        "passed": statuses.count("passed"),
        "failed": statuses.count("failed"),
        "errors": statuses.count("error"),
        "modelCalls": sum(s["modelCalls"] for s in data["scenarios"]),
    }
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def limited_merge(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`ruledrift merge` with at most 1 GiB of address space: a merge sized by a number a report
    claims dies of MemoryError (exit 4) instead of taking the machine's memory."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    return subprocess.run(
        [sys.executable, "-m", "ruledrift", "merge", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=limit,
    )


@pytest.fixture
def two_shards(tmp_path: Path) -> list[Path]:
    return sharded(tmp_path, suite(tmp_path), 2)


def assert_refused(done: subprocess.CompletedProcess[str], message: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert message in done.stderr, done.stderr


def test_a_claimed_shard_count_sizes_nothing(tmp_path: Path, two_shards: list[Path]) -> None:
    """`shard.total: 10**12` in both shards made merge list a trillion missing shards (16 GB)."""
    for path in two_shards:
        edit(path, lambda data: data["suite"]["shard"].update(total=10**12))
    done = limited_merge(*two_shards)
    line, column = position_of(two_shards[0], '"total": 1000000000000')
    where = f"{two_shards[0]}:{line}:{column + 9}: /suite/shard/total: "
    assert_refused(done, where + "expected a number of at most 1000, got 1000000000000")


def drop_last_scenario(data: dict[str, Any]) -> None:
    data["scenarios"].pop()


def test_a_shard_that_dropped_a_scenario_is_refused(two_shards: list[Path]) -> None:
    dropped = json.loads(two_shards[0].read_text(encoding="utf-8"))["scenarios"][-1]["id"]
    one = edit(two_shards[0], drop_last_scenario)
    done = ruledrift("merge", *two_shards)
    assert_refused(done, f"the shard was assigned {json.dumps(dropped)}, which is not in")
    assert f"\n  {one}:" in done.stderr  # located in the shard's file


def test_a_shard_with_an_extra_scenario_is_refused(two_shards: list[Path]) -> None:
    def add_one(data: dict[str, Any]) -> None:
        extra = json.loads(json.dumps(data["scenarios"][0]))
        data["scenarios"].append({**extra, "id": "s9"})

    one = edit(two_shards[0], add_one)
    done = ruledrift("merge", *two_shards)
    assert_refused(done, '"s9" is not assigned to this shard')
    assert f"\n  {one}:" in done.stderr


def test_shards_that_together_miss_a_scenario_are_refused(two_shards: list[Path]) -> None:
    """Edited consistently (the scenario and its assignment both gone), each shard reads; the
    merge finds the selection's scenario that no shard holds."""

    def forget_last(data: dict[str, Any]) -> None:
        drop_last_scenario(data)
        data["suite"]["shard"]["assigned"].pop()

    edit(two_shards[0], forget_last)
    done = ruledrift("merge", *two_shards)
    assert_refused(done, "of the run's selection are in no shard: the 2 shards together do not")


def test_shards_that_both_hold_a_scenario_are_refused(two_shards: list[Path]) -> None:
    other = json.loads(two_shards[1].read_text(encoding="utf-8"))

    def take_one(data: dict[str, Any]) -> None:
        data["scenarios"].append(other["scenarios"][0])
        data["suite"]["shard"]["assigned"].append(other["scenarios"][0]["id"])
        data["suite"]["shard"]["assigned"].sort()

    edit(two_shards[0], take_one)
    done = ruledrift("merge", *two_shards)
    held = other["scenarios"][0]["id"]
    assert_refused(done, f"{two_shards[1]} and {two_shards[0]} both hold scenario {held!r}")


def test_shards_of_a_ruledrift_that_did_not_record_their_scenarios_are_refused(
    two_shards: list[Path],
) -> None:
    """Older shard reports (no `suite.shard.assigned`) still render; merge asks for a rerun."""
    for path in two_shards:
        edit(path, lambda data: data["suite"]["shard"].pop("assigned"))
    assert ruledrift("report", two_shards[0]).returncode == 0
    done = ruledrift("merge", *two_shards)
    assert_refused(done, "does not record which scenarios its shard was assigned")
    assert "run the shards again with this RuleDrift" in done.stderr


def test_shards_cut_by_times_merge_into_an_unsharded_run_and_say_by_what(tmp_path: Path) -> None:
    path = suite(tmp_path, "--leak-probability", "0.3", scenarios=7)
    whole = tmp_path / "whole.json"
    alone = ruledrift("run", path, "--json", whole, "--repeat", "2", "--seed", "7")
    main = tmp_path / "main.json"  # main's last run, without repeats
    assert ruledrift("run", path, "--json", main).returncode in (0, 1)
    shards = sharded(
        tmp_path, path, 3, "--repeat", "2", "--seed", "7", "--shard-balance", str(main)
    )
    merged = tmp_path / "merged.json"
    done = ruledrift("merge", *shards, "--json", merged)
    assert done.returncode == alone.returncode, done.stderr
    assert comparable(merged) == comparable(whole)
    base = json.loads(main.read_text(encoding="utf-8"))
    assert json.loads(merged.read_text(encoding="utf-8"))["suite"]["balancedBy"] == {
        "report": str(main),
        "configSha256": base["suite"]["configSha256"],
        "startedAt": base["startedAt"],
    }
    assert f"the shards were cut by the times in {main} (the run started at " in done.stderr
    by_calls = tmp_path / "by-calls.json"
    ruledrift("run", path, "--shard", "3/3", "--repeat", "2", "--json", by_calls)
    refused = ruledrift("merge", shards[0], shards[1], by_calls)
    assert refused.returncode == 2
    assert "are reports of different shard balancing (--shard-balance)" in refused.stderr
