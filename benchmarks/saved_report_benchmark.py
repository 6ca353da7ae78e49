"""Reading a large saved report back (run by hand; numbers go in the closing note, never in tests).

Writes a JSON report of about `--megabytes` MB with `render_json` (the writer of `ruledrift run
--json`) from a made-up run under `--repeat 10` with answers included, then times `ruledrift
report` on it in a fresh process, `--runs` times: wall time and the process's CPU time (user +
system; on a shared machine the wall time mostly measures the other processes). With
`--shards N`, the same run cut into N shard reports is merged and timed the same way.

Shapes: `wide`, many scenarios of 5 probes each (a big suite); `deep`, scenarios of 400 probes
each (what is quadratic in a scenario's probes shows there).

    python benchmarks/saved_report_benchmark.py [--shape wide|deep] [--megabytes 40] [--runs 5]
        [--shards 4] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruledrift.data import (
    AssertionResult,
    Location,
    Message,
    Probe,
    ProbeResult,
    ProbeRun,
    Response,
    Rule,
    RunResult,
    Scenario,
    ScenarioResult,
    ShardInfo,
    Suite,
    TargetInfo,
    VerdictPolicy,
)
from ruledrift.results.json_load import ReportedAdapter
from ruledrift.results.json_report import render_json
from ruledrift.run.verdicts import probe_verdict

HERE = Location(1, 1)
REPEAT = 10
POLICY = VerdictPolicy(repeat=REPEAT, min_pass_rate=0.8)
PROBES = {"wide": 5, "deep": 400}  # per scenario
TURNS = 10
RULES = tuple(Rule(f"rule-{i}", "", "critical", HERE) for i in range(5))
STARTED = "2026-12-01T00:00:00Z"


def answer(scenario: int, probe: int, run: int) -> str:
    """A distinct answer of about 330 characters (a real model's are rarely shorter)."""
    return f"Answer {scenario}.{probe}.{run}: " + "I cannot share that, but here is help. " * 8


def probe_result(scenario: int, index: int) -> ProbeResult:
    rule = RULES[(scenario * 7 + index) % len(RULES)]
    probe = Probe(f"p{index}", rule, index % (TURNS + 1), f"prompt {index}", (), HERE)
    runs = []
    for run in range(REPEAT):
        passed = (scenario + index + run) % 13 != 0
        text = answer(scenario, index, run)
        digest = hashlib.sha256(text.encode()).hexdigest()
        check = AssertionResult("notContains", passed, 'the answer does not contain "hunter2"')
        response = Response(text, digest, len(text), {"evalCount": 40 + run})
        runs.append(ProbeRun(run, "passed" if passed else "failed", 120, (check,), response))
    return probe_verdict(probe, runs, POLICY)


def scenario_result(index: int, probes: int) -> ScenarioResult:
    results = tuple(probe_result(index, p) for p in range(probes))
    turns = tuple(f"turn {t}" for t in range(TURNS))
    scenario = Scenario(f"s{index}", None, turns, tuple(r.probe for r in results), HERE)
    transcript = tuple(
        Message(role, f"{role} {t}") for t in range(TURNS) for role in ("user", "assistant")
    )
    calls = (TURNS + probes) * REPEAT
    return ScenarioResult(scenario, results, calls, 1_000, transcript, REPEAT)


def made_up_run(scenarios: int, probes: int, shards: int) -> tuple[RunResult, list[RunResult]]:
    """The whole run and, with `shards`, its shard reports (scenario k goes to shard k mod N)."""
    results = tuple(scenario_result(i, probes) for i in range(scenarios))
    adapter = ReportedAdapter("ollama", "bench-model")
    played = tuple(s.scenario for s in results)
    suite = Suite(1, "benchmark", None, adapter, RULES, played, Path("suite.json"), "0" * 64)
    target = TargetInfo("ollama", "bench-model", {})
    whole = RunResult(suite, target, STARTED, 60_000, results, False, POLICY)
    ids = tuple(s.id for s in played)
    rules = tuple(r.id for r in RULES)
    parts = []
    for k in range(shards):
        mine = results[k::shards]
        shard = ShardInfo(k + 1, shards, ids, rules, tuple(s.scenario.id for s in mine))
        parts.append(RunResult(suite, target, STARTED, 20_000, mine, False, POLICY, shard))
    return whole, parts


def timed(argv: list[str], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of `runs` runs of `argv`."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):
            sys.exit(f"{argv[3]} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    return walls, cpus


def shown(times: tuple[list[float], list[float]]) -> str:
    walls, cpus = times
    return (
        f"wall median {statistics.median(walls):.2f} s ({min(walls):.2f} to {max(walls):.2f}), "
        f"CPU median {statistics.median(cpus):.2f} s ({min(cpus):.2f} to {max(cpus):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(PROBES), default="wide")
    parser.add_argument("--megabytes", type=float, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=0, help="also time merging N shards")
    parser.add_argument("--keep", type=Path, help="write the reports here (kept)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ruledrift-saved-"))
    folder.mkdir(parents=True, exist_ok=True)
    probes = PROBES[args.shape]
    one = len(render_json(made_up_run(1, probes, 0)[0], include_responses=True))
    whole, parts = made_up_run(max(1, round(args.megabytes * 1e6 / one)), probes, args.shards)
    report = folder / "report.json"
    report.write_bytes(render_json(whole, include_responses=True))
    print(
        f"{args.shape}: {report.stat().st_size / 1e6:.1f} MB, {len(whole.scenarios):,} "
        f"scenarios, {len(whole.probes):,} probes, {len(whole.probes) * REPEAT:,} runs"
    )
    command = [sys.executable, "-m", "ruledrift", "report", str(report), "--quiet"]
    print(f"ruledrift report: {shown(timed(command, args.runs))}")
    if not parts:
        return
    paths = [folder / f"shard-{k}.json" for k in range(1, len(parts) + 1)]
    for path, part in zip(paths, parts, strict=True):
        path.write_bytes(render_json(part, include_responses=True))
    merged = folder / "merged.json"
    command = [sys.executable, "-m", "ruledrift", "merge", *map(str, paths), "--json", str(merged)]
    print(f"ruledrift merge ({len(parts)} shards): {shown(timed(command, args.runs))}")
    summaries = [json.loads(path.read_bytes())["summary"] for path in (merged, report)]
    print(f"merged summary equals the whole run's: {summaries[0] == summaries[1]}")


if __name__ == "__main__":
    main()
