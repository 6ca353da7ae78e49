"""Loading a large saved report (run by hand; numbers go in the closing note, never in tests).

Writes a JSON report of about `--megabytes` MB with `render_json` (the writer `ruledrift run
--json` uses), from a made-up run of the chosen shape, then times `ruledrift report` on it in a
fresh process (five times: the median and the range), and `ruledrift merge` of the same run cut
into shards when `--shards` is given. Shapes:

- `wide`: many scenarios of a few probes each, `--repeat 10`, answers included;
- `deep`: few scenarios of many probes each (hundreds of probes answering in one scenario);
- `rules`: many rules, each probed at many depths.

    python benchmarks/saved_report_benchmark.py [--shape wide|deep|rules] [--megabytes 40]
        [--runs 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ruledrift.model import (
    AssertionResult,
    Location,
    Message,
    Probe,
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
from ruledrift.reports.json_load import ReportedAdapter
from ruledrift.reports.json_report import render_json
from ruledrift.verdicts import probe_verdict

HERE = Location(1, 1)
POLICY = VerdictPolicy(repeat=10, min_pass_rate=0.8)
SHAPES = {  # (scenarios, probes per scenario, rules, turns) for one unit of size
    "wide": (1, 5, 5, 10),
    "deep": (1, 400, 5, 20),
    "rules": (1, 5, 2_000, 10),
}


def answer(scenario: int, probe: int, run: int) -> str:
    """A distinct answer of about 300 characters (a real model's are rarely shorter)."""
    return f"Answer {scenario}.{probe}.{run}: " + "I cannot share that, but here is help. " * 8


def probe_result(rules: list[Rule], scenario: int, index: int, turns: int) -> tuple[Probe, object]:
    rule = rules[(scenario * 7 + index) % len(rules)]
    probe = Probe(f"p{index}", rule, index % (turns + 1), f"prompt {index}", (), HERE)
    runs = []
    for run in range(POLICY.repeat if isinstance(POLICY.repeat, int) else 1):
        passed = (scenario + index + run) % 13 != 0
        text = answer(scenario, index, run)
        digest = hashlib.sha256(text.encode()).hexdigest()
        check = AssertionResult("notContains", passed, 'the answer does not contain "hunter2"')
        response = Response(text, digest, len(text), {"evalCount": 40 + run})
        runs.append(ProbeRun(run, "passed" if passed else "failed", 120, (check,), response))
    return probe, probe_verdict(probe, runs, POLICY)


def made_up_run(shape: str, units: int, shards: int) -> tuple[RunResult, list[RunResult]]:
    per_scenarios, per_probes, per_rules, turns = SHAPES[shape]
    count = per_scenarios * units if shape == "wide" else max(1, units // 50)
    rules = [Rule(f"rule-{i}", "", "critical", HERE) for i in range(per_rules)]
    scenarios = []
    for s in range(count):
        results = [probe_result(rules, s, p, turns)[1] for p in range(per_probes)]
        probes = tuple(r.probe for r in results)  # type: ignore[attr-defined]
        scenario = Scenario(f"s{s}", None, tuple(f"turn {t}" for t in range(turns)), probes, HERE)
        transcript = tuple(
            Message(role, f"{role} {t}") for t in range(turns) for role in ("user", "assistant")
        )
        played = turns * POLICY.repeat + len(probes) * POLICY.repeat  # type: ignore[operator]
        scenarios.append(
            ScenarioResult(scenario, tuple(results), played, 1_000, transcript, 10)  # type: ignore[arg-type]
        )
    suite = Suite(
        1,
        "benchmark",
        None,
        ReportedAdapter("ollama", "bench-model"),
        tuple(rules),
        tuple(s.scenario for s in scenarios),
        Path("suite.json"),
        "0" * 64,
    )
    target = TargetInfo("ollama", "bench-model", {})
    whole = RunResult(suite, target, "2026-12-01T00:00:00Z", 60_000, tuple(scenarios), False, POLICY)
    ids = tuple(s.scenario.id for s in scenarios)
    parts = []
    for k in range(shards):
        mine = tuple(scenarios[k::shards])
        assigned = tuple(s.scenario.id for s in mine)
        shard = ShardInfo(k + 1, shards, ids, tuple(r.id for r in rules), assigned)
        parts.append(RunResult(suite, target, whole.started_at, 20_000, mine, False, POLICY, shard))
    return whole, parts


def timed(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode not in (0, 1):
            sys.exit(f"{argv[3]} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")
    return times


def shown(times: list[float]) -> str:
    return f"median {statistics.median(times):.2f} s ({min(times):.2f} to {max(times):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=sorted(SHAPES), default="wide")
    parser.add_argument("--megabytes", type=float, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=0, help="also time merging N shards")
    parser.add_argument("--keep", type=Path, help="write the reports here (kept)")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="ruledrift-saved-"))
    folder.mkdir(parents=True, exist_ok=True)
    probe_size = len(render_json(made_up_run(args.shape, 50, 0)[0], include_responses=True))
    units = max(1, round(args.megabytes * 1e6 / probe_size * 50))
    whole, parts = made_up_run(args.shape, units, args.shards)
    report = folder / "report.json"
    report.write_bytes(render_json(whole, include_responses=True))
    probes = len(whole.probes)
    print(
        f"{args.shape}: {report.stat().st_size / 1e6:.1f} MB, {len(whole.scenarios):,} scenarios, "
        f"{probes:,} probes, {probes * 10:,} runs, {len(whole.suite.rules):,} rules"
    )
    command = [sys.executable, "-m", "ruledrift", "report", str(report), "--quiet"]
    print(f"ruledrift report: {shown(timed(command, args.runs))}")
    if parts:
        paths = []
        for k, part in enumerate(parts, 1):
            paths.append(folder / f"shard-{k}.json")
            paths[-1].write_bytes(render_json(part, include_responses=True))
        merged = folder / "merged.json"
        command = [sys.executable, "-m", "ruledrift", "merge", *map(str, paths), "--json", str(merged)]
        print(f"ruledrift merge ({len(parts)} shards): {shown(timed(command, args.runs))}")
        same = json.loads(merged.read_bytes())["summary"] == json.loads(report.read_bytes())["summary"]
        print(f"merged summary equals the whole run's: {same}")


if __name__ == "__main__":
    main()
