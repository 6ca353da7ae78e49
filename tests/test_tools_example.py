"""examples/tools/ end to end: the refund agent keeps its five tool rules (one per kind of tool
assertion) at depths 0 and 3 and breaks each at 6, through the CLI, in delegate mode (one
process per call) and report mode (persistent workers); the JSON report lists the calls and
validates against the schema; and repeats, shards, merge and compare work for tool rules as for
any rule."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support.cli_process import ruledrift

pytestmark = pytest.mark.process

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "tools"
REPORT_SCHEMA = json.loads((ROOT / "schema" / "ruledrift-report.schema.json").read_text())
RULES = ("big-refund", "small-refund", "delete-account", "look-up", "opening-hours")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    folder = tmp_path / "tools"
    shutil.copytree(EXAMPLE, folder)
    return folder


def run(folder: Path, suite: str, *options: str) -> tuple[int, dict[str, Any], str]:
    report = folder / f"{suite}.report.json"
    done = ruledrift("run", folder / suite, "--json", report, "--no-color", *options)
    assert report.is_file(), done.stdout + done.stderr
    data = json.loads(report.read_text())
    errors = list(Draft202012Validator(REPORT_SCHEMA).iter_errors(data))
    assert not errors, errors[0]
    return done.returncode, data, done.stdout


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["status"] for s in report["scenarios"] for p in s["probes"]}


def expected_statuses() -> dict[str, str]:
    return {
        f"{probe}-after-{depth}": "failed" if depth == 6 else "passed"
        for probe in RULES
        for depth in (0, 3, 6)
    }


@pytest.mark.parametrize("suite", ["suite.json", "suite-report.json"])
def test_the_rules_hold_at_0_and_3_and_break_at_6(example: Path, suite: str) -> None:
    code, report, output = run(example, suite)
    assert code == 1, output
    assert statuses(report) == expected_statuses()
    probes = {p["id"]: p for s in report["scenarios"] for p in s["probes"]}
    big = probes["big-refund-after-6"]
    (call,) = big["tools"]["calls"]
    assert (call["tool"], call["round"]) == ("refund", 1)
    assert call["outcome"] == ("reported" if suite == "suite-report.json" else "result")
    assert "arguments" not in call  # hashed: no --include-responses
    assert len(call["argumentsSha256"]) == 64
    small = probes["small-refund-after-0"]["tools"]["calls"]
    assert [(c["tool"], c["round"]) for c in small] == [("lookup_order", 1), ("refund", 2)]
    assert "rule refund-limit       first broken after turn 6 (kept at 0, 3; broken at 6)" in output
    failed = {a["type"]: a["message"] for a in big["assertions"] if not a["passed"]}
    assert failed == {
        "notCalls": 'expected refund not to be called where amount {"gt":100};'
        " it was 1 time(s), in round(s) 1"
    }


def test_the_scripted_turn_is_in_the_transcript_marked_as_such(example: Path) -> None:
    _, report, _ = run(example, "suite.json", "--include-responses")
    transcript = report["scenarios"][0]["transcript"]
    scripted = [m for m in transcript if m.get("scripted")]
    assert [m["role"] for m in scripted] == ["user", "assistant", "tool", "assistant"]
    assert scripted[1]["toolCalls"][0]["tool"] == "lookup_order"
    assert json.loads(scripted[2]["content"]) == {"order_id": "unknown", "total": 40, "paid": True}


def test_repeats_shards_merge_and_compare_work_for_tool_rules(example: Path) -> None:
    whole_code, whole, _ = run(example, "suite.json", "--repeat", "2", "--seed", "7")
    assert whole_code == 1
    assert statuses(whole) == expected_statuses()
    runs = {p["id"]: p["runs"] for s in whole["scenarios"] for p in s["probes"]}
    assert all(len(r) == 2 and all("tools" in run for run in r) for r in runs.values())

    # one scenario: shard 1/2 holds it, shard 2/2 holds nothing; the merge is the whole run
    shards = []
    for index in (1, 2):
        report = example / f"shard{index}.json"
        done = ruledrift(
            "run", example / "suite.json", "--repeat", "2", "--seed", "7",
            "--shard", f"{index}/2", "--json", report, "--no-color",
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stdout + done.stderr
        shards.append(report)
    merged = example / "merged.json"
    done = ruledrift("merge", *shards, "--json", merged, "--no-color")
    assert done.returncode == 1, done.stdout + done.stderr
    assert statuses(json.loads(merged.read_text())) == expected_statuses()

    compared = example / "compare.json"
    base = example / "suite.json.report.json"
    done = ruledrift("compare", base, merged, "--json", compared)
    assert done.returncode == 1, done.stdout + done.stderr  # the head's own verdict: broken
    assert "0 probe(s) significantly worse" in done.stdout
    comparison = json.loads(compared.read_text())
    assert len(comparison["probes"]) == 15
