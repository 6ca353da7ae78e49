"""shards.py: `--shard K/N` splits the selected scenarios deterministically, disjointly,
completely and in balance (by model calls, repeats included); `--shard auto` reads GitLab's
variables; an empty shard is a valid run; `--max-calls` stops starting calls."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from ruledrift.data import Location, Probe, Rule, Scenario, TextAssertion
from ruledrift.errors import UsageError
from ruledrift.results.shards import Shard, assign, parse_shard, shard_of
from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite

RULE = Rule("r", "Keep it.", "critical", Location(1, 1))


def scenario(name: str, turns: int, probes: int = 1) -> Scenario:
    checks = (TextAssertion("notContains", "x", False),)
    made = tuple(Probe(f"p{i}", RULE, turns, "?", checks, Location(1, 1)) for i in range(probes))
    return Scenario(name, None, tuple("t" for _ in range(turns)), made, Location(1, 1))


def test_shards_are_deterministic_disjoint_complete_and_balanced() -> None:
    draw = random.Random(7)
    for _ in range(200):
        scenarios = [
            scenario(f"s{i}", draw.randint(0, 40), draw.randint(1, 5))
            for i in range(draw.randint(0, 30))
        ]
        total = draw.randint(1, 8)
        shards = assign(scenarios, total)
        assert assign(scenarios, total) == shards  # deterministic
        flat = [s.id for shard in shards for s in shard]
        assert sorted(flat) == sorted(s.id for s in scenarios)  # complete and disjoint
        for shard in shards:  # config order within a shard
            positions = [scenarios.index(s) for s in shard]
            assert positions == sorted(positions)
        loads = [sum(s.model_calls for s in shard) for shard in shards]
        largest = max((s.model_calls for s in scenarios), default=0)
        assert max(loads) - min(loads) <= largest  # balanced


def test_a_matrix_wider_than_the_suite_gets_empty_shards() -> None:
    scenarios = [scenario("a", 3), scenario("b", 1)]
    assert [len(shard_of(scenarios, Shard(k, 4))) for k in range(1, 5)] == [1, 1, 0, 0]


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("2/4", {}, Shard(2, 4)),
        ("auto", {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}, Shard(3, 5)),
    ],
)
def test_parse_shard(text: str, environ: dict[str, str], expected: Shard) -> None:
    assert parse_shard(text, environ) == expected


@pytest.mark.parametrize(
    ("text", "environ", "message"),
    [
        ("0/4", {}, "expected 1 <= K <= N"),
        ("5/4", {}, "expected 1 <= K <= N"),
        ("2", {}, "expected K/N"),
        ("a/b", {}, "expected K/N"),
        ("9" * 5000 + "/1", {}, "expected K/N"),
        ("auto", {}, "CI_NODE_INDEX and CI_NODE_TOTAL are not set"),
    ],
)
def test_wrong_shards_are_usage_errors(text: str, environ: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_shard(text, environ)


def suite_of_three(tmp_path: Path) -> Path:
    data = base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py")])
    first = data["scenarios"][0]
    data["scenarios"] = [{**json.loads(json.dumps(first)), "id": f"s{i}"} for i in range(3)]
    return write_suite(tmp_path, data)


@pytest.mark.process
def test_the_shards_of_a_run_cover_the_suite_once_and_say_so(tmp_path: Path) -> None:
    suite = suite_of_three(tmp_path)
    ran: list[str] = []
    for k in (1, 2, 3, 4):
        report = tmp_path / f"r{k}.json"
        done = ruledrift("run", suite, "--shard", f"{k}/4", "--json", report)
        assert done.returncode == 0, done.stderr
        document = json.loads(report.read_text())
        held = [s["id"] for s in document["scenarios"]]
        assert document["suite"]["shard"] == {
            "index": k,
            "total": 4,
            "scenarios": ["s0", "s1", "s2"],
            "rules": ["never-disclose-secret", "english-only"],
            "assigned": held,
        }
        ran += held
        assert f"shard {k}/4:" in done.stderr
    assert sorted(ran) == ["s0", "s1", "s2"]  # shard 4 is empty, and still a valid run


@pytest.mark.process
def test_max_calls_stops_starting_calls_and_says_what_is_left(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = ruledrift("run", suite_of_three(tmp_path), "--max-calls", "6", "--json", report)
    assert done.returncode == 3, done.stdout
    document = json.loads(report.read_text())
    assert document["summary"]["modelCalls"] == 6
    errors = [p["error"] for s in document["scenarios"] for p in s["probes"] if p["error"]]
    assert errors
    assert all("the budget of 6 model call(s) (--max-calls) was used up" in e for e in errors)
