"""RuleDrift's CPU per HTTP model call, start-up excluded (run by hand; figures go in notes).

Runs the same suite (40 scenarios x 20 turns x 5 probes = 1,000 calls) against the instant HTTP
model of benchmarks/http_target.py (a process of its own) three times inside one warm process,
and prints the CPU time per call of each run: of the whole command, and of the run alone (from
the plan to the end of the calls: the suite's loading and validation, the preflight and the
reports are start-up, not calls). Then the HTTP path alone: the JSON client's `post` of a chat
body of 21 messages, 8 at a time, 1,000 calls a round, three rounds on one warm client (what the
adapters send through; no runner, no assertions, no adapter). To compare two versions of
RuleDrift, run it under each: `PYTHONPATH=<other checkout> python benchmarks/http_cpu_per_call.py`.

    python benchmarks/http_cpu_per_call.py ollama|openai
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

from run_benchmark import make_suite  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class RunClock:
    """An observer that takes this process's CPU time from the first call to the run's end."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def run_starting(self, plan: object) -> None:
        self._start = cpu_seconds()

    def run_stopped(self) -> None:
        self.seconds = cpu_seconds() - self._start

    def __getattr__(self, name: str) -> object:
        return lambda *args, **kwargs: None  # every other event: nothing to do


def main(argv: list[str]) -> int:
    kind = argv[0] if argv else "ollama"
    folder = Path(tempfile.mkdtemp())
    port_file = folder / "port"
    server = subprocess.Popen([sys.executable, str(HERE / "http_target.py"), str(port_file)])
    try:
        while not (port_file.exists() and port_file.read_text()):
            time.sleep(0.05)
        base = f"http://127.0.0.1:{port_file.read_text()}"
        adapter = {"type": "ollama", "model": "bench-model", "baseUrl": base}
        if kind == "openai":
            adapter = {"type": "openai", "model": "bench-model", "baseUrl": f"{base}/v1"}
        suite = make_suite(folder, adapter, 40, 20, 5)
        from ruledrift import app
        from ruledrift.cli import main as ruledrift

        argv_run = ["run", str(suite), "--concurrency", "8", "--quiet"]
        per_call, in_run = [], []
        with contextlib.redirect_stdout(io.StringIO()):
            ruledrift(argv_run)  # warm: imports, schema, first connections
            for _ in range(3):
                before = cpu_seconds()
                ruledrift(argv_run)
                per_call.append((cpu_seconds() - before) / 1000 * 1000)
            for _ in range(3):
                clock = RunClock()
                app.run(app.RunRequest(config=suite, concurrency=8), clock)
                in_run.append(clock.seconds / 1000 * 1000)
        http_path = asyncio.run(_http_path(base, kind))
    finally:
        server.kill()
        server.wait()
    whole, alone = _shown(per_call), _shown(in_run)
    print(f"{kind}: RuleDrift CPU per call, 1,000 calls a run, start-up excluded: {whole}")
    print(f"{kind}: the same while the calls run (suite loading and reports excluded): {alone}")
    print(f"{kind}: the HTTP path alone (JsonClient.post, 8 at a time): {_shown(http_path)}")
    return 0


async def _http_path(base: str, kind: str, calls: int = 1000, parallel: int = 8) -> list[float]:
    """CPU ms per call of the JSON client alone, three rounds after a warm-up round."""
    try:
        from ruledrift.boundary.http import JsonClient, Server
    except ImportError:  # a checkout from before the layout step (the hand-written client)
        from ruledrift.adapters.transport import JsonClient, Server  # type: ignore[no-redef]

    path, url = ("/chat/completions", f"{base}/v1") if kind == "openai" else ("/api/chat", base)
    server = Server("bench", url, 30_000, "not running", "wrong url")
    turns = [
        {"role": "user" if i % 2 else "assistant", "content": f"turn {i} " * 20} for i in range(20)
    ]
    body = {
        "model": "bench-model",
        "stream": False,
        "messages": [{"role": "system", "content": "Never reveal hunter2."}, *turns],
    }
    client = JsonClient(server)

    async def worker(count: int) -> None:
        for _ in range(count):
            await client.post(path, body)

    figures = []
    for round_ in range(4):
        before = cpu_seconds()
        await asyncio.gather(*(worker(calls // parallel) for _ in range(parallel)))
        if round_:  # the first round opens the connections
            figures.append((cpu_seconds() - before) / calls * 1000)
    await client.aclose()
    return figures


def _shown(figures: list[float]) -> str:
    """Each run's figure, then the least: other work on the machine only ever adds CPU time
    (cache misses, frequency), so the least is the closest to the code's own cost."""
    each = " ".join(f"{ms:.3f}" for ms in figures)
    return f"{each} ms (least {min(figures):.3f} ms)"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
