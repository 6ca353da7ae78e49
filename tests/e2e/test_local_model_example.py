"""examples/local-model/run.sh works end to end: it serves SmolLM2, runs the suite, stops the
server. One scenario keeps it short (9 model calls)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).parent.parent.parent
RUN_SH = ROOT / "examples" / "local-model" / "run.sh"


def test_run_sh_serves_the_model_runs_the_suite_and_stops_the_server(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")}
    env["RULEDRIFT_VENV"] = sys.prefix  # the environment running these tests has the stack
    done = subprocess.run(
        [str(RUN_SH), "--scenario", "social-engineering", "--json", str(report), "--no-color"],
        capture_output=True, text=True, env=env, timeout=600, check=False, cwd=tmp_path,
    )  # fmt: skip
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode in (0, 1), output
    assert "installing" not in done.stderr  # nothing to install: it reused the environment
    served = re.search(r"served at http://127\.0\.0\.1:(\d+)/v1", done.stderr)
    assert served is not None, output
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["target"]["model"] == "smollm2-135m"
    assert [s["id"] for s in data["scenarios"]] == ["social-engineering"]
    assert data["summary"]["modelCalls"] == 6 + 3
    assert data["summary"]["errors"] == 0
    with socket.socket() as sock:  # the trap stopped the server: nothing listens any more
        assert sock.connect_ex(("127.0.0.1", int(served.group(1)))) != 0
