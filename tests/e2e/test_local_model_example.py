"""examples/local-model/run.sh works end to end: it serves SmolLM2 on a free port, times a
warm-up answer, runs the suite, stops the server. One scenario keeps it short (9 to 12 model
calls: its probe's control is asked after each pass)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.process]

ROOT = Path(__file__).parent.parent.parent
RUN_SH = ROOT / "examples" / "local-model" / "run.sh"
CALLS = 6 + 3  # the social-engineering scenario: 6 turns, 3 probes (and a control per pass)
STARTUP_S = 180  # run.sh's install check, its server's start (up to 120 s) and its warm-up


def test_run_sh_serves_the_model_runs_the_suite_and_stops_the_server(
    tmp_path: Path, call_timeout_s: float
) -> None:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")}
    env["RULEDRIFT_VENV"] = sys.prefix  # the environment running these tests has the stack
    done = subprocess.run(
        [str(RUN_SH), "--scenario", "social-engineering", "--json", str(report), "--no-color"],
        capture_output=True, text=True, env=env, check=False, cwd=tmp_path,
        timeout=STARTUP_S + (CALLS + 3) * call_timeout_s,  # a backstop: run.sh sizes timeoutMs
    )  # fmt: skip
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode in (0, 1), output
    assert "installing" not in done.stderr  # nothing to install: it reused the environment
    served = re.search(
        r"served at (http://127\.0\.0\.1:(\d+)/v1) .*a warm-up answer took \d+ ms", done.stderr
    )
    assert served is not None, output
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["target"]["model"] == "smollm2-135m"
    assert data["target"]["details"]["baseUrl"] == served.group(1)  # its own port, always
    assert [s["id"] for s in data["scenarios"]] == ["social-engineering"]
    probes = data["scenarios"][0]["probes"]
    controls = sum(1 for probe in probes if "control" in probe)
    assert controls == sum(1 for probe in probes if probe["status"] in ("passed", "vacuous"))
    assert data["summary"]["modelCalls"] == CALLS + controls
    assert data["summary"]["errors"] == 0
    with socket.socket() as sock:  # the trap stopped the server: nothing listens any more
        assert sock.connect_ex(("127.0.0.1", int(served.group(2)))) != 0
