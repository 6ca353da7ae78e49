"""RuleDrift side by side with promptfoo 0.121.20 on the same isolated drift test (run by hand).

One generated suite (run_benchmark.make_suite: S scenarios x T turns x P probes, probe p asked
after turn min(T, (T // P) x (p + 1)), checked with notContains "hunter2" and matches
/\\bcannot\\b/i) runs with --repeat N against one benchmarks/http_target.py server posing as
Ollama (a fixed latency per chat, at most --concurrency chats at once), first through
`ruledrift run`, then through promptfoo 0.121.20 (installed from benchmarks/promptfoo/'s
package-lock.json with `npm ci` when missing). The server counts the chat requests it receives.

What is claimed equivalent: every probe answer is produced from the same history (system
message, turns 1..k with the model's own answers, then the probe), N times, and checked with the
same deterministic assertions: notContains -> not-icontains (RuleDrift's text checks ignore
case unless caseSensitive; promptfoo lowercases where RuleDrift case-folds, which differs only on
a few non-ASCII letters such as "ß"), matches -> a javascript assertion running the same
JavaScript RegExp with the same flags.

How each tool gets there:
- RuleDrift plays each scenario's turns once and asks every probe on an isolated copy of the
  conversation at its depth: per scenario and repeat, T + P model calls; scenarios run
  --concurrency at a time.
- promptfoo has no branching. Its multi-turn mechanism is the `_conversation` variable: tests
  sharing `metadata.conversationId` see the earlier inputs and outputs of that conversation. So
  each probe gets a conversation of its own that replays turns 1..k (each a model call) and then
  asks the probe: per scenario and repeat, sum(k + 1) calls. When a prompt uses `_conversation`,
  promptfoo sets the whole eval's concurrency to 1 (`-j` is overridden), so every request waits
  for the one before.
- promptfoo keys a conversation by provider, prompt and conversationId, not by repeat, and runs a
  test's repeats back to back: with `--repeat 3` alone the three repeats pile into one history
  (turn 1 three times, then turn 2 three times...). The prompt template here keeps only the
  entries of its own repeat (entry i belongs to repeat i mod N, which holds because the eval runs
  one request at a time in config order), and the script checks every promptfoo request's user
  messages against the turns it should carry.

What differs: the replayed turns are fresh model calls, so with a non-deterministic model a
probe's history in promptfoo differs from probe to probe (RuleDrift's probes of one scenario
share one played history); the test server answers every chat with the same refusal, so the
answers here are identical and only the number, order and timing of calls differ. RuleDrift also
aggregates the N runs of a probe into a verdict with a pass-rate interval; promptfoo reports each
run as a row. RuleDrift asks the server for its version and model once per run (not chat calls).
promptfoo runs with telemetry, update checks, sharing and its cache off, its config directory in
a temporary folder, and HTTP(S)_PROXY pointed at a closed loopback port with NO_PROXY for the
server (0.121.20 still posts a "telemetry disabled" event), so nothing leaves the machine.

The default (10 scenarios) takes about two minutes, nearly all of it promptfoo's; the issue's size
is --scenarios 50 (about five minutes). Exits 1 if a promptfoo request carried the wrong history
or a replayed turn failed (the comparison would not hold), else 0.

    python benchmarks/promptfoo_benchmark.py [--scenarios 10] [--turns 20] [--probes 5]
        [--repeat 3] [--latency-ms 20] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
PROMPTFOO_DIR = HERE / "promptfoo"
PROMPTFOO_VERSION = "0.121.20"
sys.path.insert(0, str(HERE))

from run_benchmark import make_suite, measured_run, size_arguments  # noqa: E402
from scale_benchmark import serve  # noqa: E402

# A chat prompt for promptfoo: the system message, this repeat's earlier turns of the
# conversation with the model's answers, then this test's message. REPEATS is filled in.
PROMPT_TEMPLATE = """[
  {"role": "system", "content": {{ system | dump }}},
  {% for entry in _conversation %}{% if loop.index0 % REPEATS == __repeatIndex %}
  {"role": "user", "content": {{ entry.input | dump }}},
  {"role": "assistant", "content": {{ entry.output | dump }}},
  {% endif %}{% endfor %}
  {"role": "user", "content": {{ message | dump }}}
]
"""


def install_promptfoo() -> Path:
    binary = PROMPTFOO_DIR / "node_modules" / ".bin" / "promptfoo"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("npm (Node.js 20.20 or newer) is needed to install promptfoo")
        print(f"installing promptfoo {PROMPTFOO_VERSION}: npm ci in {PROMPTFOO_DIR}", flush=True)
        subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=PROMPTFOO_DIR, check=True)
    return binary


def system_message(suite: dict[str, Any]) -> str:
    """What RuleDrift sends as the system message (ruledrift/suite/system_message.py)."""
    rules = "\n".join(f"- [{r['id']}] {r['instruction']}" for r in suite["rules"])
    return f"{suite['systemPrompt']}\n\nRules you must follow in every answer:\n{rules}"


def promptfoo_assertion(assertion: dict[str, Any]) -> dict[str, Any]:
    """The same check in promptfoo: RuleDrift's text checks ignore case unless caseSensitive."""
    kind = assertion["type"]
    if kind in ("contains", "notContains"):
        name = "contains" if assertion.get("caseSensitive") else "icontains"
        return {"type": name if kind == "contains" else f"not-{name}", "value": assertion["value"]}
    if kind in ("matches", "notMatches"):
        regex = (
            f"new RegExp({json.dumps(assertion['pattern'])}, "
            f"{json.dumps(assertion.get('flags', ''))}).test(output)"
        )
        return {"type": "javascript", "value": regex if kind == "matches" else f"!{regex}"}
    raise SystemExit(f"no promptfoo equivalent here for a {kind} assertion")


def promptfoo_config(suite: dict[str, Any], folder: Path, repeat: int) -> Path:
    """One conversation per probe and depth: turns 1..k, then the probe with its assertions."""
    prompt = folder / "prompt.json"
    prompt.write_text(PROMPT_TEMPLATE.replace("REPEATS", str(repeat)), encoding="utf-8")
    tests: list[dict[str, Any]] = []
    for scenario in suite["scenarios"]:
        for probe in scenario["probes"]:
            depths = probe["afterTurn"]
            for depth in depths if isinstance(depths, list) else [depths]:
                conversation = f"{scenario['id']}/{probe['id']}@{depth}"
                for turn in range(1, depth + 1):
                    tests.append(
                        {
                            "description": f"{conversation} turn {turn}",
                            "vars": {"message": scenario["turns"][turn - 1]},
                            "metadata": {
                                "conversationId": conversation,
                                "kind": "turn",
                                "scenario": scenario["id"],
                                "history": turn - 1,
                            },
                        }
                    )
                tests.append(
                    {
                        "description": f"{conversation} probe",
                        "vars": {"message": probe["prompt"]},
                        "metadata": {
                            "conversationId": conversation,
                            "kind": "probe",
                            "scenario": scenario["id"],
                            "history": depth,
                        },
                        "assert": [promptfoo_assertion(a) for a in probe["assertions"]],
                    }
                )
    config = {
        "description": "RuleDrift benchmark: each probe's conversation replayed",
        "prompts": [f"file://{prompt}"],
        "providers": ["ollama:chat:bench-model"],
        "defaultTest": {"vars": {"system": system_message(suite)}},
        "tests": tests,
    }
    path = folder / "promptfooconfig.yaml"  # YAML is a superset of JSON
    path.write_text(json.dumps(config, indent=1), encoding="utf-8")
    return path


def server_counts(base: str) -> dict[str, dict[str, int]]:
    with urllib.request.urlopen(f"{base}/count", timeout=10) as response:
        counts: dict[str, dict[str, int]] = json.load(response)
    return counts


def counted(base: str, before: dict[str, dict[str, int]]) -> tuple[int, int, int]:
    """Chat calls, all requests and chat messages the server received since `before`."""
    after = server_counts(base)
    chats = after["requests"].get("/api/chat", 0) - before["requests"].get("/api/chat", 0)
    requests = sum(after["requests"].values()) - sum(before["requests"].values())
    messages = after["messages"].get("/api/chat", 0) - before["messages"].get("/api/chat", 0)
    return chats, requests, messages


def run_ruledrift(
    suite_path: Path, folder: Path, base: str, args: argparse.Namespace
) -> tuple[list[str], dict[str, Any]]:
    report_path = folder / "ruledrift.json"
    argv = ["run", str(suite_path), "--repeat", str(args.repeat)]
    argv += ["--concurrency", str(args.concurrency), "--quiet", "--json", str(report_path)]
    before = server_counts(base)
    wall, usage = measured_run(argv)
    calls, requests, messages = counted(base, before)
    report = json.loads(report_path.read_text(encoding="utf-8"))
    runs = [
        run
        for scenario in report["scenarios"]
        for probe in scenario["probes"]
        for run in (probe.get("runs") or [probe])
    ]
    summary = report["summary"]
    return argv, {
        "calls": calls,
        "requests": requests,
        "messages": messages,
        "wall": wall,
        "duration": report["durationMs"] / 1000,
        "checked": len(runs),
        "passed": sum(r["status"] == "passed" for r in runs),
        "failed": sum(r["status"] == "failed" for r in runs),
        "errors": sum(r["status"] not in ("passed", "failed") for r in runs),
        "exit": usage["code"],
        "verdicts": f"{summary['passed']} passed, {summary['failed']} failed, "
        f"{summary['errors']} errors",
    }


def run_promptfoo(
    promptfoo: Path, suite: dict[str, Any], folder: Path, base: str, args: argparse.Namespace
) -> tuple[list[str], dict[str, Any]]:
    config = promptfoo_config(suite, folder, args.repeat)
    output = folder / "promptfoo.json"
    argv = [str(promptfoo), "eval", "-c", str(config), "--repeat", str(args.repeat)]
    argv += ["-j", str(args.concurrency), "--no-cache", "--no-share", "--no-write"]
    argv += ["--no-table", "--no-progress-bar", "-o", str(output)]
    before = server_counts(base)
    start = time.perf_counter()
    done = subprocess.run(
        argv, cwd=folder, env=promptfoo_env(folder, base), capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    calls, requests, messages = counted(base, before)
    if not output.exists():
        print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
        raise SystemExit(f"promptfoo wrote no results (exit {done.returncode})")
    results = json.loads(output.read_text(encoding="utf-8"))["results"]
    rows = results["results"]
    turns = {s["id"]: s["turns"] for s in suite["scenarios"]}
    wrong_history = 0
    for row in rows:  # each request must carry exactly its own repeat's turns 1..history
        metadata = row["testCase"]["metadata"]
        messages_sent = json.loads(row["prompt"]["raw"])
        users = [m["content"] for m in messages_sent if m["role"] == "user"][:-1]
        answers = [m for m in messages_sent if m["role"] == "assistant"]
        expected = turns[metadata["scenario"]][: metadata["history"]]
        wrong_history += users != expected or len(answers) != len(expected)
    probes = [r for r in rows if r["testCase"]["metadata"]["kind"] == "probe"]
    reasons = [r.get("failureReason", 0) for r in probes]  # 0 none, 1 assertion, 2 error
    forced = re.search(r"Setting concurrency to \d+[^\n]*", done.stdout + done.stderr)
    return argv, {
        "calls": calls,
        "requests": requests,
        "messages": messages,
        "wall": wall,
        "duration": results["stats"]["durationMs"] / 1000,
        "checked": len(probes),
        "passed": sum(bool(r["success"]) for r in probes),
        "failed": reasons.count(1),
        "errors": reasons.count(2),
        "exit": done.returncode,
        "rows": len(rows),
        "turn_errors": sum(not r["success"] for r in rows) - sum(not r["success"] for r in probes),
        "wrong_history": wrong_history,
        "forced": forced.group(0).strip() if forced else "its concurrency was not overridden",
    }


def promptfoo_env(folder: Path, base: str) -> dict[str, str]:
    return {
        **os.environ,
        "OLLAMA_BASE_URL": base,
        "PROMPTFOO_CONFIG_DIR": str(folder / "promptfoo-home"),
        "PROMPTFOO_CACHE_PATH": str(folder / "promptfoo-cache"),
        "PROMPTFOO_CACHE_ENABLED": "false",
        "PROMPTFOO_DISABLE_TELEMETRY": "1",
        "PROMPTFOO_DISABLE_UPDATE": "1",
        "PROMPTFOO_DISABLE_SHARING": "1",
        "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
        # 0.121.20 posts a "telemetry disabled" event even so: send it to a closed loopback port
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "127.0.0.1,localhost",
    }


def main() -> int:
    args = size_arguments(__doc__.splitlines()[0], scenarios=10)
    promptfoo = install_promptfoo()
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        version = subprocess.run(
            [str(promptfoo), "--version"],
            capture_output=True,
            text=True,
            env=promptfoo_env(folder, ""),
            check=True,
        ).stdout.strip()
        if version != PROMPTFOO_VERSION:
            raise SystemExit(f"expected promptfoo {PROMPTFOO_VERSION}, found {version}")
        print(
            f"{args.scenarios} scenarios x {args.turns} turns x {args.probes} probes, "
            f"--repeat {args.repeat}; server: {args.latency_ms} ms a chat, at most "
            f"{args.concurrency} at once; node {node.stdout.strip()}, promptfoo {version}"
        )
        server, base = serve(folder, args.latency_ms, args.concurrency)
        try:
            adapter: dict[str, object] = {"type": "ollama", "model": "bench-model", "baseUrl": base}
            suite_path = make_suite(folder, adapter, args.scenarios, args.turns, args.probes)
            suite = json.loads(suite_path.read_text(encoding="utf-8"))
            rd_argv, rd = run_ruledrift(suite_path, folder, base, args)
            pf_argv, pf = run_promptfoo(promptfoo, suite, folder, base, args)
        finally:
            server.kill()
            server.wait()

    latency = args.latency_ms / 1000
    chain = (args.turns + args.probes) * latency
    rd["ideal"] = f"{max(rd['calls'] * latency / args.concurrency, chain):.2f} s"
    pf["ideal"] = f"{pf['calls'] * latency:.2f} s (serial)"
    rows = [
        ("model calls (counted at the server)", "calls", "{:,}"),
        ("HTTP requests (all)", "requests", "{:,}"),
        ("chat messages sent", "messages", "{:,}"),
        ("wall time (process)", "wall", "{:.2f} s"),
        ("duration it reports", "duration", "{:.2f} s"),
        ("ideal at this latency", "ideal", "{}"),
        ("probe answers checked", "checked", "{:,}"),
        ("  passed", "passed", "{:,}"),
        ("  failed", "failed", "{:,}"),
        ("  errors", "errors", "{:,}"),
        ("exit code", "exit", "{}"),
    ]
    print(f"\n{'':<36}  {'RuleDrift':>12}  promptfoo {version}")
    for label, key, form in rows:
        print(f"{label:<36}  {form.format(rd[key]):>12}  {form.format(pf[key])}")
    print(
        f"\nRuleDrift: probe verdicts over {args.repeat} runs each: {rd['verdicts']}; "
        f"promptfoo made {pf['calls'] / rd['calls']:.2f}x its model calls and took "
        f"{pf['wall'] / rd['wall']:.1f}x its wall time"
    )
    print(
        f"promptfoo: {pf['rows']:,} result rows ({pf['rows'] - pf['checked']:,} replayed turns "
        f"without assertions, {pf['turn_errors']} of them errors); requests carrying the wrong "
        f"history: {pf['wrong_history']}; {pf['forced']}"
    )
    command = ["python", "benchmarks/promptfoo_benchmark.py", "--scenarios", str(args.scenarios)]
    command += ["--turns", str(args.turns), "--probes", str(args.probes)]
    command += ["--repeat", str(args.repeat), "--latency-ms", str(args.latency_ms)]
    command += ["--concurrency", str(args.concurrency)]
    print("\nreproduce (from the repository root; Node 20.20+ and npm on PATH):")
    print(f"  {shlex.join(command)}")
    print(f"  # ruledrift {shlex.join(['run', 'SUITE', *rd_argv[2:-1], 'REPORT.json'])}")
    print(f"  # promptfoo {shlex.join(['eval', '-c', 'CONFIG', *pf_argv[4:-1], 'OUT.json'])}")
    return 0 if pf["wrong_history"] == 0 and pf["turn_errors"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
