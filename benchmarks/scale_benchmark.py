"""RuleDrift at scale (run by hand; numbers go in the closing note, never in tests).

Against benchmarks/http_target.py as an Ollama server with a fixed latency per chat and a
server-side limit on chats at once (its own process: its CPU is not counted):

1. 50 scenarios x 20 turns x 5 probes x 3 repeats at 20 ms and --concurrency 8 (server slots 8):
   wall time against the ideal max(calls x latency / concurrency, longest chain x latency),
   RuleDrift's CPU per call and its peak memory;
2. the same suite sharded 4 ways and merged: the merged report against the unsharded one (equal
   but for times), and the shards' wall times summed against one job's;
3. model calls against the naive approach of replaying each probe's conversation from the start;
4. `ruledrift validate` of a 1,000-probe suite (200 scenarios x 20 turns x 5 probes).

    python benchmarks/scale_benchmark.py [--scenarios 50] [--turns 20] [--probes 5] [--repeat 3]
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from run_benchmark import make_suite, measured_run, size_arguments  # noqa: E402


def serve(folder: Path, latency_ms: int, slots: int) -> tuple[subprocess.Popen[bytes], str]:
    port_file = folder / f"port-{latency_ms}-{slots}"
    server = subprocess.Popen(
        [sys.executable, str(HERE / "http_target.py"), str(port_file), str(latency_ms), str(slots)]
    )
    deadline = time.monotonic() + 10
    while not (port_file.exists() and port_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return server, f"http://127.0.0.1:{port_file.read_text()}"


def server_latency_ms(base: str, calls: int = 100) -> float:
    """The server's own time per chat, one at a time over one kept-alive connection through
    http.client (its sleep, parsing and the kernel's wake-ups; http.client adds ~0.1 ms)."""
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))
    body = json.dumps({"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]})
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        connection.request("POST", "/api/chat", body, {"Content-Type": "application/json"})
        connection.getresponse().read()
        times.append(time.perf_counter() - start)
    connection.close()
    return statistics.median(times) * 1000


def comparable(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    text = json.dumps(report)
    for key in ("startedAt", "durationMs"):
        text = text.replace(f'"{key}"', f'"_{key}"')
    cleaned: dict[str, Any] = json.loads(text)

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if not k.startswith("_") and k != "shard"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    result: dict[str, Any] = strip(cleaned)
    return result


def main() -> int:
    args = size_arguments(__doc__.splitlines()[0], scenarios=50)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        server, base = serve(folder, args.latency_ms, args.concurrency)
        try:
            adapter = {"type": "ollama", "model": "bench-model", "baseUrl": base}
            suite = make_suite(folder, adapter, args.scenarios, args.turns, args.probes)
            per_run = args.scenarios * (args.turns + args.probes)
            calls = per_run * args.repeat
            chain = (args.turns + args.probes) * args.latency_ms / 1000
            ideal = max(calls * args.latency_ms / 1000 / args.concurrency, chain)
            print(
                f"1. {args.scenarios} x {args.turns} x {args.probes} x --repeat {args.repeat} = "
                f"{calls} calls at {args.latency_ms} ms, --concurrency {args.concurrency}, "
                f"{args.concurrency} server slots"
            )
            whole = folder / "whole.json"
            common = [
                "--concurrency",
                str(args.concurrency),
                "--repeat",
                str(args.repeat),
                "--quiet",
            ]
            wall, usage = measured_run(["run", str(suite), *common, "--json", str(whole)])
            run_s = json.loads(whole.read_text(encoding="utf-8"))["durationMs"] / 1000
            served_ms = server_latency_ms(base)
            waves = -(-args.scenarios * args.repeat // args.concurrency)
            print(
                f"   wall {wall:.2f} s, ideal {ideal:.2f} s, ratio {wall / ideal:.2f} (the run "
                f"itself, start-up and preflight excluded: {run_s:.2f} s, ratio "
                f"{run_s / ideal:.2f}); exit {usage['code']}; RuleDrift CPU "
                f"{usage['cpu'] / calls * 1000:.3f} ms per call (start-up included); peak RSS "
                f"{usage['maxrss_kib'] / 1024:.0f} MiB"
            )
            served_ideal = ideal * served_ms / args.latency_ms
            slots = waves * args.concurrency / (args.scenarios * args.repeat)
            print(
                f"   the server's own time per chat, one at a time: {served_ms:.2f} ms for a "
                f"nominal {args.latency_ms} ms; the ideal at that latency {served_ideal:.2f} s, "
                f"ratio {wall / served_ideal:.2f}; whole scenario runs in {waves} waves of "
                f"{args.concurrency} ({slots:.3f} times the ideal's slots: a run holds its slot "
                "from first turn to last probe)"
            )
            print("2. sharded 4 ways, merged")
            walls = []
            shards = []
            for k in range(1, 5):
                report = folder / f"shard-{k}.json"
                shard_wall, _ = measured_run(
                    ["run", str(suite), *common, "--shard", f"{k}/4", "--json", str(report)]
                )
                walls.append(shard_wall)
                shards.append(str(report))
            merged = folder / "merged.json"
            merge_wall, merge_usage = measured_run(["merge", *shards, "--json", str(merged)])
            same = comparable(merged) == comparable(whole)
            print(
                f"   shards {', '.join(f'{w:.2f}' for w in walls)} s (sum {sum(walls):.2f} s, "
                f"longest {max(walls):.2f} s) against one job's {wall:.2f} s; merge "
                f"{merge_wall:.2f} s, exit {merge_usage['code']}; merged report equals the "
                f"unsharded one: {same}"
            )
            naive = args.scenarios * sum(
                min(args.turns, max(args.turns // args.probes, 1) * (p + 1)) + 1
                for p in range(args.probes)
            )
            print(
                f"3. model calls per run: {per_run} (turns played once, probes branched off) "
                f"against {naive} replaying each probe's conversation from the start "
                f"({naive / per_run:.1f}x)"
            )
        finally:
            server.kill()
            server.wait()
        big = make_suite(folder, ["true"], 200, 20, 5)
        times = [measured_run(["validate", str(big)])[0] for _ in range(5)]
        print(
            f"4. validate, 200 scenarios x 20 turns x 5 probes (1,000 probes, "
            f"{big.stat().st_size / 1024:.0f} KiB): median {statistics.median(times):.2f} s wall "
            "over 5 runs (process start included)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
