"""RuleDrift's CPU per HTTP model call, start-up excluded (run by hand; figures go in notes).

Runs the same suite (40 scenarios x 20 turns x 5 probes = 1,000 calls) against the instant HTTP
model of benchmarks/http_target.py (a process of its own) three times inside one warm process,
and prints the CPU time per call of each run. To compare two versions of RuleDrift, run it
under each, e.g. `PYTHONPATH=/path/to/other/checkout python benchmarks/http_cpu_per_call.py`.

    python benchmarks/http_cpu_per_call.py ollama|openai
"""

from __future__ import annotations

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
        from ruledrift.cli import main as ruledrift

        argv_run = ["run", str(suite), "--concurrency", "8", "--quiet"]
        per_call = []
        with contextlib.redirect_stdout(io.StringIO()):
            ruledrift(argv_run)  # warm: imports, schema, first connections
            for _ in range(3):
                before = cpu_seconds()
                ruledrift(argv_run)
                per_call.append((cpu_seconds() - before) / 1000 * 1000)
    finally:
        server.kill()
        server.wait()
    shown = " ".join(f"{ms:.3f}" for ms in per_call)
    print(f"{kind}: RuleDrift CPU per call, 1,000 calls a run, start-up excluded: {shown} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
