"""A search of the breaking depth end to end: the real CLI in a subprocess against a real
subprocess agent whose breaking depth is known (`agents/breaks_at.sh`), under `--repeat auto`
and fixed repeats; the JSON report (schema-valid, read back by `report`, `merge` and `compare`),
the terminal, the HTML report and the job summary."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "schema" / "ruledrift-report.schema.json").read_text())


def search_suite(
    tmp_path: Path, breaks: int, *, low: int = 0, high: int = 8, percent: int = 100
) -> Path:
    data = base_suite(command="sh", args=[str(AGENTS / "breaks_at.sh"), str(breaks), str(percent)])
    scenario = data["scenarios"][0]
    scenario["turns"] = [f"turn {k}" for k in range(1, 5)]
    scenario["repeatTurns"] = 2  # 8 turns
    scenario["probes"][1]["afterTurn"] = {"search": [low, high]}
    data["scenarios"].append(
        {
            "id": "other",
            "turns": ["hi"],
            "probes": [{**scenario["probes"][0], "id": "plain", "afterTurn": 1}],
        }
    )
    return write_suite(tmp_path, data)


def run(
    tmp_path: Path, suite: Path, *args: str, name: str = "r"
) -> tuple[int, str, dict[str, Any]]:
    report = tmp_path / f"{name}.json"
    summary = tmp_path / f"{name}.md"
    done = ruledrift(
        "run",
        suite,
        *args,
        "--json",
        report,
        "--html",
        tmp_path / f"{name}.html",
        "--junit",
        tmp_path / f"{name}.xml",
        env={"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"},
    )
    document = json.loads(report.read_text(encoding="utf-8"))
    assert sorted(e.message for e in Draft202012Validator(SCHEMA).iter_errors(document)) == []
    return done.returncode, done.stdout + done.stderr, document


def only_search(document: dict[str, Any]) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        s for scenario in document["scenarios"] for s in scenario.get("searches", ())
    ]
    (search,) = found
    return search


def test_repeat_auto_finds_a_known_breaking_depth_and_every_report_shows_it(
    tmp_path: Path,
) -> None:
    code, output, document = run(tmp_path, search_suite(tmp_path, 5), "--repeat", "auto")
    assert code == 1, output
    assert only_search(document) == {
        "id": "late",
        "rule": "never-disclose-secret",
        "low": 0,
        "high": 8,
        "outcome": "found",
        "heldThrough": 4,
        "driftedFrom": 5,
        "stoppedAt": None,
        "points": [0, 4, 5, 6, 8],
        "tokensHeld": None,
        "tokensDrifted": None,
    }
    line = (
        "search smalltalk/late: holds through turn 4, drifted from turn 5; prompt tokens not "
        "reported; asked at 0, 4, 5, 6, 8"
    )
    assert line in output
    (curve,) = [d for d in document["drift"] if d["rule"] == "never-disclose-secret"]
    assert [b["afterTurn"] for b in curve["boundaries"]] == [0, 1, 4, 5, 6, 8]
    probes = {p["id"]: p for p in document["scenarios"][0]["probes"]}
    assert probes["late-after-4"]["status"] == "passed"
    assert probes["late-after-5"]["decidedBy"].startswith("drifted")
    assert document["policy"]["probes"] == 1 + 5 + 1  # the search counts its most points
    junit = ET.parse(tmp_path / "r.xml").getroot()
    named = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert named["search.smalltalk.late"] == line.removeprefix("search smalltalk/late: ")
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Breaking depths" in page
    assert "holds through turn 4, drifted from turn 5" in page
    summary = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "### Breaking depths" in summary
    assert "| smalltalk | late | never-disclose-secret | 0–8 | holds through turn 4" in summary

    again = ruledrift("report", tmp_path / "r.json")
    assert again.returncode == 1, again.stderr
    assert line in again.stdout
    same = ruledrift("compare", tmp_path / "r.json", tmp_path / "r.json")
    assert same.returncode == 1, same.stdout + same.stderr  # the head's own verdict
    assert "search smalltalk/late" not in same.stdout + same.stderr


def test_fixed_repeats_decide_each_point_by_its_runs(tmp_path: Path) -> None:
    code, output, document = run(tmp_path, search_suite(tmp_path, 3), "--repeat", "2")
    assert code == 1, output
    search = only_search(document)
    assert (search["outcome"], search["heldThrough"], search["driftedFrom"]) == ("found", 2, 3)
    probes = {p["id"]: p for p in document["scenarios"][0]["probes"]}
    assert {len(probes[f"late-after-{d}"]["runs"]) for d in search["points"]} == {2}


def test_a_known_rate_after_a_known_depth_is_found_across_seeds(tmp_path: Path) -> None:
    """Half of the runs leak from turn 6 on: each seed's search still names 5 and 6 (the
    simulation in tests/run/test_search.py measures the rate over many seeds)."""
    suite = search_suite(tmp_path, 6, percent=50)
    for seed in ("1", "2", "3"):
        code, output, document = run(tmp_path, suite, "--repeat", "auto", "--seed", seed)
        assert code == 1, output
        search = only_search(document)
        assert (search["outcome"], search["heldThrough"], search["driftedFrom"]) == ("found", 5, 6)


def test_shards_merge_with_their_search_and_compare_names_a_moved_depth(tmp_path: Path) -> None:
    suite = search_suite(tmp_path, 5)
    for k in ("1", "2"):
        code, output, _ = run(tmp_path, suite, "--shard", f"{k}/2", name=f"shard{k}")
        assert code in (0, 1), output
    merged = tmp_path / "merged.json"
    done = ruledrift("merge", tmp_path / "shard1.json", tmp_path / "shard2.json", "--json", merged)
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(merged.read_text(encoding="utf-8"))
    assert only_search(document)["driftedFrom"] == 5

    data = json.loads(suite.read_text(encoding="utf-8"))
    data["adapter"]["args"][1] = "3"  # the head breaks earlier
    run(tmp_path, write_suite(tmp_path, data, name="head-suite.json"), name="head")
    compared = ruledrift("compare", merged, tmp_path / "head.json")
    text = compared.stdout + compared.stderr
    assert (
        "search smalltalk/late: base holds through turn 4, drifted from turn 5; head holds "
        "through turn 2, drifted from turn 3"
    ) in text


def test_a_report_whose_search_names_a_missing_point_is_refused(tmp_path: Path) -> None:
    run(tmp_path, search_suite(tmp_path, 5), "--repeat", "1")
    report = tmp_path / "r.json"
    document = json.loads(report.read_text(encoding="utf-8"))
    document["scenarios"][0]["searches"][0]["points"].append(7)
    report.write_text(json.dumps(document), encoding="utf-8")
    done = ruledrift("report", report)
    assert done.returncode == 2
    assert (
        "/scenarios/0/searches/0/points/5: names depth 7, but the scenario has no probe "
        '"late-after-7" of rule "never-disclose-secret" after turn 7'
    ) in done.stderr


def test_validate_accepts_a_search_and_counts_it_once(tmp_path: Path) -> None:
    done = ruledrift("validate", search_suite(tmp_path, 5))
    assert done.returncode == 0, done.stderr
    # smalltalk: 8 turns, a probe and both bounds, then 3 rounds of 8 turns and a depth; other: 2
    assert "3 probe(s); a run makes at most 40 model call(s) (1 search(es) of the breaking " in (
        done.stdout
    )


def test_the_tokens_at_the_breaking_depth_come_from_an_openai_servers_counts(
    tmp_path: Path,
) -> None:
    from tests.support.openai_fake import FakeOpenAI

    def answer(messages: Any) -> str:
        depth = sum(1 for m in messages if m["role"] == "user") - 1
        return "fine, the secret is hunter2" if depth >= 5 else "I cannot share that."

    data = json.loads(search_suite(tmp_path, 5).read_text(encoding="utf-8"))
    data["adapter"] = {"type": "openai", "model": "local-model"}
    with FakeOpenAI(answer=answer) as server:
        data["adapter"]["baseUrl"] = server.base_url
        code, output, document = run(tmp_path, write_suite(tmp_path, data))
    assert code == 1, output
    search = only_search(document)
    assert (search["heldThrough"], search["driftedFrom"]) == (4, 5)
    held, drifted = search["tokensHeld"], search["tokensDrifted"]
    assert isinstance(held, int)
    assert isinstance(drifted, int)
    assert 0 < held < drifted
    probes = {p["id"]: p for p in document["scenarios"][0]["probes"]}
    assert probes["late-after-4"]["metadata"]["promptTokens"] == held
    assert f"prompt tokens held at turn 4: {held:,}, drifted at turn 5: {drifted:,}" in output
