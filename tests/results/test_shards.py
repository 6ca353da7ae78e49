"""shards.py: `--shard K/N` splits the selected scenarios deterministically, disjointly,
completely and in balance (by model calls, repeats included, or with `--shard-balance` by the
times an earlier report measured); `--shard auto` reads the shard from the variables of every
system it knows (in order; conflicts and half-set pairs are errors); an empty shard is a valid
run; `--max-calls` stops starting calls."""

from __future__ import annotations

import json
import random
import re
import sys
from pathlib import Path

import pytest

from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.data import (
    Location,
    Probe,
    Rule,
    RunResult,
    Scenario,
    ScenarioResult,
    Suite,
    TargetInfo,
    TextAssertion,
)
from ruledrift.errors import UsageError
from ruledrift.results.shards import (
    Shard,
    assign,
    assign_weighted,
    expected_times,
    parse_shard,
    shard_of,
)
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
    ("text", "expected"),
    [("2/4", Shard(2, 4)), ("1/1", Shard(1, 1)), ("1000/1000", Shard(1000, 1000))],
)
def test_parse_shard(text: str, expected: Shard) -> None:
    assert parse_shard(text, {}) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0/4", "K counts from 1 (1/4 to 4/4), got '0/4'; for an index from 0, such as GitHub"),
        ("5/4", "expected 1 <= K <= N"),
        ("1/1001", "expected 1 <= K <= N <= 1000"),
        ("2", "expected K/N"),
        ("a/b", "expected K/N"),
        ("١/٤", "expected K/N"),  # Arabic-Indic digits: isdigit() and int() would take them
        ("9" * 5000 + "/1", "expected K/N"),
    ],
)
def test_wrong_shards_are_usage_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_shard(text, {})


# --- --shard auto: every system, in order, conflicts and half-set pairs ------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"RULEDRIFT_SHARD_INDEX": "0", "RULEDRIFT_SHARD_TOTAL": "4"}, Shard(1, 4, "ruledrift")),
        ({"RULEDRIFT_SHARD_INDEX": "3", "RULEDRIFT_SHARD_TOTAL": "4"}, Shard(4, 4, "ruledrift")),
        ({"JOB_COMPLETION_INDEX": "0", "RULEDRIFT_SHARD_TOTAL": "3"}, Shard(1, 3, "kubernetes")),
        ({"JOB_COMPLETION_INDEX": "2", "RULEDRIFT_SHARD_TOTAL": "3"}, Shard(3, 3, "kubernetes")),
        # SLURM: --array=0-3 and --array=1-4 are the same four shards
        (
            {
                "SLURM_ARRAY_TASK_ID": "0",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            Shard(1, 4, "slurm"),
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "3",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            Shard(4, 4, "slurm"),
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "1",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            Shard(1, 4, "slurm"),
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "4",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_MAX": "4",
                "SLURM_ARRAY_TASK_COUNT": "4",
                "SLURM_ARRAY_TASK_STEP": "1",
            },
            Shard(4, 4, "slurm"),
        ),
        (  # any start: --array=1000-1009
            {
                "SLURM_ARRAY_TASK_ID": "1002",
                "SLURM_ARRAY_TASK_MIN": "1000",
                "SLURM_ARRAY_TASK_COUNT": "10",
            },
            Shard(3, 10, "slurm"),
        ),
        (
            {"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "5"},
            Shard(1, 5, "buildkite"),
        ),
        (
            {"BUILDKITE_PARALLEL_JOB": "4", "BUILDKITE_PARALLEL_JOB_COUNT": "5"},
            Shard(5, 5, "buildkite"),
        ),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "5"}, Shard(1, 5, "gitlab")),
        ({"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}, Shard(3, 5, "gitlab")),
        # systems that agree are no conflict: the first in the order is the one recorded
        (
            {
                "RULEDRIFT_SHARD_INDEX": "1",
                "RULEDRIFT_SHARD_TOTAL": "2",
                "JOB_COMPLETION_INDEX": "1",
                "CI_NODE_INDEX": "2",
                "CI_NODE_TOTAL": "2",
            },
            Shard(2, 2, "ruledrift"),
        ),
        (
            {
                "BUILDKITE_PARALLEL_JOB": "0",
                "BUILDKITE_PARALLEL_JOB_COUNT": "2",
                "CI_NODE_INDEX": "1",
                "CI_NODE_TOTAL": "2",
            },
            Shard(1, 2, "buildkite"),
        ),
        # GitLab sets CI_NODE_TOTAL=1 in every job without parallel: not a half-set pair
        (
            {"CI_NODE_TOTAL": "1", "JOB_COMPLETION_INDEX": "1", "RULEDRIFT_SHARD_TOTAL": "2"},
            Shard(2, 2, "kubernetes"),
        ),
    ],
)
def test_shard_auto_reads_every_system(environ: dict[str, str], expected: Shard) -> None:
    assert parse_shard("auto", {"HOME": "/root", **environ}) == expected


CONFLICTS = [
    (
        {"RULEDRIFT_SHARD_INDEX": "0", "RULEDRIFT_SHARD_TOTAL": "4", "CI_NODE_INDEX": "2"}
        | {"CI_NODE_TOTAL": "4"},
        "RULEDRIFT_SHARD_INDEX, RULEDRIFT_SHARD_TOTAL name shard 1/4 but CI_NODE_INDEX, "
        "CI_NODE_TOTAL name shard 2/4",
    ),
    (
        {"RULEDRIFT_SHARD_INDEX": "0", "JOB_COMPLETION_INDEX": "1", "RULEDRIFT_SHARD_TOTAL": "2"},
        "RULEDRIFT_SHARD_INDEX, RULEDRIFT_SHARD_TOTAL name shard 1/2 but JOB_COMPLETION_INDEX, "
        "RULEDRIFT_SHARD_TOTAL name shard 2/2",
    ),
    (
        {"JOB_COMPLETION_INDEX": "0", "RULEDRIFT_SHARD_TOTAL": "2"}
        | {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_COUNT": "2"},
        "JOB_COMPLETION_INDEX, RULEDRIFT_SHARD_TOTAL name shard 1/2 but SLURM_ARRAY_TASK_ID, "
        "SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_COUNT name shard 2/2",
    ),
    (
        {"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_COUNT": "3"}
        | {"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "4"},
        "SLURM_ARRAY_TASK_COUNT name shard 1/3 but BUILDKITE_PARALLEL_JOB, "
        "BUILDKITE_PARALLEL_JOB_COUNT name shard 1/4",
    ),
    (
        {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}
        | {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "3"},
        "BUILDKITE_PARALLEL_JOB, BUILDKITE_PARALLEL_JOB_COUNT name shard 2/3 but CI_NODE_INDEX, "
        "CI_NODE_TOTAL name shard 1/3",
    ),
]


@pytest.mark.parametrize(("environ", "message"), CONFLICTS)
def test_systems_that_name_different_shards_conflict(environ: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message + ": unset the variables of one")):
        parse_shard("auto", environ)


HALF_SET = [
    (
        {"RULEDRIFT_SHARD_INDEX": "0"},
        "RULEDRIFT_SHARD_INDEX is set (the generic pair) but RULEDRIFT_SHARD_TOTAL is not",
    ),
    (
        {"RULEDRIFT_SHARD_TOTAL": "4"},
        "RULEDRIFT_SHARD_TOTAL is set but neither RULEDRIFT_SHARD_INDEX nor JOB_COMPLETION_INDEX",
    ),
    (
        {"JOB_COMPLETION_INDEX": "0"},
        "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but RULEDRIFT_SHARD_TOTAL is not",
    ),
    (
        {"SLURM_ARRAY_TASK_ID": "0"},
        "SLURM_ARRAY_TASK_ID is set (a SLURM job array) but "
        "SLURM_ARRAY_TASK_MIN and SLURM_ARRAY_TASK_COUNT are not",
    ),
    (
        {"SLURM_ARRAY_TASK_ID": "0", "SLURM_ARRAY_TASK_MIN": "0"},
        "SLURM_ARRAY_TASK_ID and "
        "SLURM_ARRAY_TASK_MIN are set (a SLURM job array) but SLURM_ARRAY_TASK_COUNT is not",
    ),
    (
        {"SLURM_ARRAY_TASK_COUNT": "4"},
        "SLURM_ARRAY_TASK_COUNT is set (a SLURM job array) but "
        "SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_MIN are not",
    ),
    (
        {"BUILDKITE_PARALLEL_JOB": "0"},
        "BUILDKITE_PARALLEL_JOB is set (Buildkite's parallelism) "
        "but BUILDKITE_PARALLEL_JOB_COUNT is not",
    ),
    (
        {"BUILDKITE_PARALLEL_JOB_COUNT": "2"},
        "BUILDKITE_PARALLEL_JOB_COUNT is set (Buildkite's "
        "parallelism) but BUILDKITE_PARALLEL_JOB is not",
    ),
    ({"CI_NODE_INDEX": "1"}, "CI_NODE_INDEX is set (GitLab's parallel:) but CI_NODE_TOTAL is not"),
    ({"CI_NODE_TOTAL": "4"}, "CI_NODE_TOTAL is set (GitLab's parallel:) but CI_NODE_INDEX is not"),
    # a half-set pair is an error even when another system names a shard
    (
        {"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "BUILDKITE_PARALLEL_JOB": "0"},
        "BUILDKITE_PARALLEL_JOB is set (Buildkite's parallelism) but BUILDKITE_PARALLEL_JOB_COUNT",
    ),
]


@pytest.mark.parametrize(("environ", "message"), HALF_SET)
def test_a_half_set_pair_names_what_is_missing(environ: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_shard("auto", environ)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({}, "no shard in the environment (it reads RULEDRIFT_SHARD_INDEX/RULEDRIFT_SHARD_TOTAL"),
        ({"CI_NODE_TOTAL": "1"}, "no shard in the environment"),
        ({"RULEDRIFT_SHARD_INDEX": "", "RULEDRIFT_SHARD_TOTAL": ""}, "no shard in the environment"),
        (
            {"RULEDRIFT_SHARD_INDEX": "4", "RULEDRIFT_SHARD_TOTAL": "4"},
            "RULEDRIFT_SHARD_INDEX: expected 0 to 3 (RULEDRIFT_SHARD_TOTAL is 4), got 4",
        ),
        (
            {"RULEDRIFT_SHARD_INDEX": "0", "RULEDRIFT_SHARD_TOTAL": "0"},
            "RULEDRIFT_SHARD_TOTAL: expected 1 to 1000, got 0",
        ),
        (
            {"RULEDRIFT_SHARD_INDEX": "-1", "RULEDRIFT_SHARD_TOTAL": "4"},
            "RULEDRIFT_SHARD_INDEX: expected a whole number, got '-1'",
        ),
        (
            {"JOB_COMPLETION_INDEX": "٢", "RULEDRIFT_SHARD_TOTAL": "4"},
            "JOB_COMPLETION_INDEX: expected a whole number, got '٢'",
        ),
        (
            {"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "1001"},
            "BUILDKITE_PARALLEL_JOB_COUNT: expected 1 to 1000, got 1001",
        ),
        (
            {"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"},
            "CI_NODE_INDEX: expected 1 to 4 (CI_NODE_TOTAL is 4), got 0",
        ),
        (
            {
                "SLURM_ARRAY_TASK_ID": "0",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_COUNT": "4",
            },
            "SLURM_ARRAY_TASK_ID: expected 1 to 4 (SLURM_ARRAY_TASK_COUNT is 4), got 0",
        ),
        (  # --array=0-6:2: task ids 0, 2, 4, 6
            {
                "SLURM_ARRAY_TASK_ID": "2",
                "SLURM_ARRAY_TASK_MIN": "0",
                "SLURM_ARRAY_TASK_MAX": "6",
                "SLURM_ARRAY_TASK_COUNT": "4",
                "SLURM_ARRAY_TASK_STEP": "2",
            },
            "SLURM_ARRAY_TASK_STEP is '2': an array with a step (--array=0-6:2) leaves gaps "
            "between its task ids; give --array=0-N (step 1)",
        ),
        (  # --array=1,4,7 (a list): no step, but the ids do not make one range
            {
                "SLURM_ARRAY_TASK_ID": "4",
                "SLURM_ARRAY_TASK_MIN": "1",
                "SLURM_ARRAY_TASK_MAX": "7",
                "SLURM_ARRAY_TASK_COUNT": "3",
            },
            "the SLURM array runs 3 task(s) with ids from 1 to 7: not one range with step 1",
        ),
    ],
)
def test_wrong_environments_are_usage_errors(environ: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        parse_shard("auto", environ)


# --- balanced by time (--shard-balance) ---------------------------------------------------


def previous_run(measured: dict[str, tuple[int, int]]) -> RunResult:
    """A report's result that measured each scenario id: (model calls, duration in ms)."""
    results = tuple(
        ScenarioResult(scenario(name, 1), (), calls, ms) for name, (calls, ms) in measured.items()
    )
    suite = Suite(
        1,
        "s",
        None,
        CommandAdapterConfig("python3", (), Path(), 1000),
        (RULE,),
        (),
        Path("s.json"),
        "0",
    )
    return RunResult(suite, TargetInfo("command", None), "2026-12-01T00:00:00.000Z", 0, results)


def test_time_balanced_shards_are_deterministic_disjoint_complete_and_balanced() -> None:
    draw = random.Random(25)
    for _ in range(300):
        scenarios = [scenario(f"s{i}", 1) for i in range(draw.randint(0, 40))]
        weights = [draw.choice([0.0, draw.uniform(1, 20_000)]) for _ in scenarios]
        total = draw.randint(1, 8)
        shards = assign_weighted(scenarios, total, weights)
        assert assign_weighted(scenarios, total, list(weights)) == shards  # deterministic
        flat = [s.id for shard in shards for s in shard]
        assert sorted(flat) == sorted(s.id for s in scenarios)  # complete and disjoint
        assert len(flat) == len(set(flat))
        for shard in shards:  # config order within a shard
            positions = [scenarios.index(s) for s in shard]
            assert positions == sorted(positions)
        weight = {s.id: w for s, w in zip(scenarios, weights, strict=True)}
        loads = [sum(weight[s.id] for s in shard) for shard in shards]
        assert max(loads) - min(loads) <= max(weights, default=0) + 1e-6  # greedy's bound
        # each shard computed alone (as each job does) is its part of the whole split
        for k in range(1, total + 1):
            assert list(shard_of(scenarios, Shard(k, total), weights=weights)) == shards[k - 1]


def test_scenarios_of_no_weight_are_still_spread_over_the_shards() -> None:
    scenarios = [scenario(f"s{i}", 1) for i in range(8)]
    shards = assign_weighted(scenarios, 4, [0.0] * 8)
    assert [len(shard) for shard in shards] == [2, 2, 2, 2]


def test_balancing_by_time_shortens_the_longest_shard() -> None:
    """Sixteen scenarios that make the same calls but take 1 to 20 s, the slow ones every
    fourth in the file: by count, one shard draws all four slow ones; by time, the longest
    shard is the ideal (the total over 4)."""
    seconds = [20, 1, 2, 1, 19, 2, 1, 1, 18, 3, 1, 2, 17, 1, 1, 2]
    scenarios = [scenario(f"s{i}", 2) for i in range(len(seconds))]

    def longest(shards: list[list[Scenario]]) -> int:
        return max(sum(seconds[scenarios.index(s)] for s in shard) for shard in shards)

    assert sum(seconds) / 4 == 23
    assert longest(assign(scenarios, 4)) == 74
    assert longest(assign_weighted(scenarios, 4, [float(t) for t in seconds])) == 23


def test_expected_times_scale_the_report_to_this_run() -> None:
    scenarios = [scenario("a", 3), scenario("b", 1), scenario("c", 1), scenario("new", 1)]
    # a: 4 calls in 2,000 ms; b: 2 calls in 100 ms; c: made no call (not measured)
    report = previous_run({"a": (4, 2000), "b": (2, 100), "c": (0, 0), "gone": (2, 50)})
    once = expected_times(scenarios, report, 1, "r.json")
    assert once.times == (2000.0, 100.0, 1050.0, 1050.0)  # unknown ones: the median
    assert (once.known, once.median) == (2, 1050.0)
    thrice = expected_times(scenarios, report, 3, "r.json")  # --repeat 3: three runs of calls
    assert thrice.times == (6000.0, 300.0, 3150.0, 3150.0)
    auto = expected_times(scenarios, report, None, "r.json")  # --repeat auto: the report's calls
    assert auto.times == (2000.0, 100.0, 1050.0, 1050.0)


def test_a_report_that_knows_no_selected_scenario_is_refused() -> None:
    report = previous_run({"other": (2, 100), "c": (0, 0)})
    with pytest.raises(UsageError, match=re.escape("--shard-balance r.json: the report has no")):
        expected_times([scenario("c", 1)], report, 1, "r.json")
    assert expected_times([], report, 1, "r.json").times == ()


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
            "source": "flag",
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


@pytest.mark.process
def test_an_earlier_reports_times_cut_the_shards(tmp_path: Path) -> None:
    suite = suite_of_three(tmp_path)  # s0, s1, s2: the same model calls each
    main = tmp_path / "main.json"
    assert ruledrift("run", suite, "--json", main).returncode == 0
    document = json.loads(main.read_text())
    for rendered, ms in zip(document["scenarios"], (10, 60_000, 10), strict=True):
        rendered["durationMs"] = ms  # s1 was slow on main
    main.write_text(json.dumps(document))
    cuts = []
    for attempt in range(2):  # the same cut in every process
        report = tmp_path / f"shard-{attempt}.json"
        done = ruledrift("run", suite, "--shard", "1/2", "--shard-balance", main, "--json", report)
        assert done.returncode == 0, done.stderr
        assert f"shard 1/2: 1 of the 3 selected scenario(s), balanced by the times in {main}" in (
            done.stderr
        )
        written = json.loads(report.read_text())
        assert written["suite"]["balancedBy"] == {
            "report": str(main),
            "configSha256": document["suite"]["configSha256"],
            "startedAt": document["startedAt"],
        }
        cuts.append([s["id"] for s in written["scenarios"]])
    assert cuts == [["s1"], ["s1"]]  # by model calls, shard 1/2 would hold s0 and s2
    by_calls = tmp_path / "by-calls.json"
    assert ruledrift("run", suite, "--shard", "1/2", "--json", by_calls).returncode == 0
    assert [s["id"] for s in json.loads(by_calls.read_text())["scenarios"]] == ["s0", "s2"]
    assert "balancedBy" not in json.loads(by_calls.read_text())["suite"]


@pytest.mark.process
def test_shard_balance_mistakes_are_usage_errors(tmp_path: Path) -> None:
    suite = suite_of_three(tmp_path)
    other = tmp_path / "other.json"
    other.write_text('{"reportVersion": 1}')
    cases = [
        (("--shard-balance", other), "--shard-balance goes with --shard K/N or --shard auto"),
        (("--shard", "1/2", "--shard-balance", tmp_path / "none.json"), "--shard-balance: "),
        (("--shard", "1/2", "--shard-balance", other), "--shard-balance: "),
    ]
    for args, message in cases:
        done = ruledrift("run", suite, *args)
        assert done.returncode == 2, done.stdout
        assert message in done.stderr, done.stderr


@pytest.mark.process
def test_shard_auto_in_a_run_records_which_system_it_read(tmp_path: Path) -> None:
    suite = suite_of_three(tmp_path)
    report = tmp_path / "r.json"
    buildkite = {"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "2"}
    done = ruledrift("run", suite, "--shard", "auto", "--json", report, env=buildkite)
    assert done.returncode == 0, done.stderr
    assert "shard 2/2: 1 of the 3 selected scenario(s), balanced by model calls; K/N from " in (
        done.stderr
    )
    assert "BUILDKITE_PARALLEL_JOB, BUILDKITE_PARALLEL_JOB_COUNT" in done.stderr
    shard = json.loads(report.read_text())["suite"]["shard"]
    assert (shard["index"], shard["total"], shard["source"]) == (2, 2, "buildkite")
    conflict = ruledrift("run", suite, "--shard", "auto", env={**buildkite, "CI_NODE_INDEX": "1"})
    assert conflict.returncode == 2
    assert "CI_NODE_INDEX is set (GitLab's parallel:) but CI_NODE_TOTAL is not" in conflict.stderr
