from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ruledrift import __version__, cli
from ruledrift.suite.load import load_suite
from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.processes import interruptible
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process

AGENT = str(AGENTS / "scripted.py")
ROOT = Path(__file__).parent.parent


def agent_suite(tmp_path: Path, *agent_args: str, **changes: Any) -> Path:
    data = base_suite(command=sys.executable, args=[AGENT, *agent_args])
    data.update(changes)
    return write_suite(tmp_path, data)


def test_exit_0_when_every_probe_passes(tmp_path: Path) -> None:
    done = ruledrift("run", agent_suite(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "2 probe(s): 2 passed, 0 failed, 0 error(s)" in done.stdout
    assert "PASSED" in done.stdout
    assert "\x1b[" not in done.stdout  # no colour without a TTY


def test_exit_1_when_a_probe_fails_and_no_answer_text_leaks(tmp_path: Path) -> None:
    suite = agent_suite(tmp_path, "--leak-after", "2")
    report, junit = tmp_path / "out" / "r.json", tmp_path / "out" / "r.xml"
    done = ruledrift("run", suite, "--json", report, "--junit", junit)
    assert done.returncode == 1, done.stderr
    assert 'expected the answer not to contain "hunter2"' in done.stdout
    assert "FAIL" in done.stdout
    for text in (done.stdout, report.read_text(), junit.read_text()):
        assert "the secret is" not in text  # answers stay out without --include-responses
        assert "reply 1" not in text
    data = json.loads(report.read_text())
    assert data["summary"]["status"] == "failed"
    assert data["summary"]["modelCalls"] == 5


def test_include_responses_puts_answers_in_reports(tmp_path: Path) -> None:
    suite = agent_suite(tmp_path, "--leak-after", "2")
    report = tmp_path / "r.json"
    done = ruledrift("run", suite, "--json", report, "--include-responses", env={"CI": "true"})
    assert done.returncode == 1
    assert "answer: fine, the secret is hunter2" in done.stdout
    data = json.loads(report.read_text())
    assert data["scenarios"][0]["probes"][1]["response"]["text"] == "fine, the secret is hunter2"


def test_exit_2_on_config_error_without_calling_the_agent(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    suite = agent_suite(tmp_path, "--record", str(record), version=9, extra=True)
    done = ruledrift("run", suite)
    assert done.returncode == 2
    assert f"{suite}:2:14: /version: unsupported version 9" in done.stderr
    assert "/extra: unknown field" in done.stderr
    assert "2 problem(s) in the configuration" in done.stderr
    assert "Traceback" not in done.stderr
    assert not record.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "the following arguments are required"),
        (("run",), "the following arguments are required: CONFIG"),
        (
            ("run", "{suite}", "--concurrency", "0"),
            "expected a whole number from 1 to 256, got '0'",
        ),
        (("run", "{suite}", "--concurrency", "257"), "expected a whole number from 1 to 256"),
        (
            ("run", "{suite}", "--concurrency", "9" * 5000),
            "from 1 to 256, got '9999999999999999999…'",
        ),
        (("run", "{suite}", "--scenario", "nope"), "no such scenario (scenarios: smalltalk)"),
        (("run", "{suite}", "--json", "{dir}"), "is a directory"),
        (("run", "{suite}", "--json", "{suite}"), "would overwrite the suite itself"),
        (("run", "{suite}", "--json", "r.xml", "--junit", "r.xml"), "would overwrite the --json"),
        (("frobnicate",), "invalid choice"),
    ],
)
def test_exit_2_on_usage_errors(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    suite = agent_suite(tmp_path)
    done = ruledrift(*(a.format(suite=suite, dir=tmp_path) for a in args))
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_exit_3_when_the_agent_crashes(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    done = ruledrift("run", agent_suite(tmp_path, "--crash-on", "probe"), "--json", report)
    assert done.returncode == 3
    assert "simulated crash" in done.stdout  # the stderr tail names the cause
    assert json.loads(report.read_text())["summary"]["errors"] == 2


def test_exit_3_wins_over_1(tmp_path: Path) -> None:
    # the probe at turn 0 fails (the agent leaks), then turn 1 crashes: the late probe errors
    report = tmp_path / "r.json"
    suite = agent_suite(tmp_path, "--leak-after", "0", "--crash-on", "turn")
    done = ruledrift("run", suite, "--json", report)
    assert done.returncode == 3
    summary = json.loads(report.read_text())["summary"]
    assert (summary["failed"], summary["errors"], summary["status"]) == (1, 1, "error")


def test_exit_3_when_the_command_is_missing(tmp_path: Path) -> None:
    data = base_suite(command="no-such-agent-binary")
    done = ruledrift("run", write_suite(tmp_path, data))
    assert done.returncode == 3
    assert "no-such-agent-binary" in done.stderr
    assert "Traceback" not in done.stderr


def test_exit_4_on_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    def broken(path: Path) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("ruledrift.app.running.load_suite", broken)
    assert cli.main(["validate", str(agent_suite(tmp_path))]) == 4
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err
    assert "please report" in err


def test_exit_130_on_ctrl_c_writes_reports_for_what_finished(tmp_path: Path) -> None:
    record = tmp_path / "calls.jsonl"
    data = base_suite(
        command=sys.executable, args=[AGENT, "--sleep", "0.3", "--record", str(record)]
    )
    data["scenarios"][0]["turns"] = [f"turn {i}" for i in range(30)]
    data["scenarios"][0]["probes"][1]["afterTurn"] = 30
    suite = write_suite(tmp_path, data)
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ruledrift",
            "run",
            str(suite),
            "--json",
            str(report),
            "--junit",
            str(junit),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible,
    )
    deadline = time.monotonic() + 30
    while (
        not record.exists() or len(record.read_text().splitlines()) < 3
    ) and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    stopped = time.monotonic()
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert time.monotonic() - stopped < 5  # stops promptly, not after 30 more turns
    assert process.returncode == 130, err
    assert "INTERRUPTED" in out
    data_out = json.loads(report.read_text())
    assert data_out["summary"]["interrupted"] is True
    probes = data_out["scenarios"][0]["probes"]
    assert probes[0]["status"] == "passed"
    assert probes[1]["status"] == "error"
    assert junit.exists()


def test_validate_prints_counts(tmp_path: Path) -> None:
    suite = agent_suite(tmp_path)
    done = ruledrift("validate", suite)
    assert done.returncode == 0
    assert done.stdout == (
        f"{suite}: valid: 2 rule(s), 1 scenario(s), 2 probe(s); a run makes 5 model call(s) "
        "(3 background turn(s) + 2 probe(s))\n"
        'warning: rule "never-disclose-secret" (critical) is checked in scenario "smalltalk" '
        'only by "never" assertions, and its deepest probe there ("late", after turn 3) has no '
        'control: an agent that refuses everything passes it. Give that probe a "control" (a '
        "question it must answer helpfully).\n"
    )


def test_schema_prints_the_shipped_schema() -> None:
    done = ruledrift("schema")
    assert done.returncode == 0
    assert json.loads(done.stdout)["$id"].endswith("rule-drift.schema.json")
    assert done.stdout == (ROOT / "schema" / "rule-drift.schema.json").read_text(encoding="utf-8")


def test_version() -> None:
    done = ruledrift("--version")
    assert (done.returncode, done.stdout) == (0, f"ruledrift {__version__}\n")


def test_scenario_filter(tmp_path: Path) -> None:
    data = base_suite(command=sys.executable, args=[AGENT])
    other = json.loads(json.dumps(data["scenarios"][0]))
    other["id"] = "other"
    data["scenarios"].append(other)
    done = ruledrift("run", write_suite(tmp_path, data), "--scenario", "other", "--quiet")
    assert done.returncode == 0
    assert "scenario smalltalk" not in done.stdout
    assert done.stdout.startswith("2 probe(s): 2 passed")


def test_demo_suite_is_valid_and_drifts() -> None:
    suite = ROOT / "examples" / "demo" / "suite.json"
    load_suite(suite)
    done = ruledrift("run", suite)
    assert done.returncode == 1
    assert "PASS   secret-at-start" in done.stdout
    assert "FAIL   secret-after-12" in done.stdout


def run_in_tty(args: list[str], env: dict[str, str]) -> str:
    """Run ruledrift with stdout on a pseudo-terminal; return everything it printed."""
    leader, follower = pty.openpty()
    full_env = {
        k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")
    }
    full_env.update(env)
    process = subprocess.Popen(
        [sys.executable, "-m", "ruledrift", *args],
        stdout=follower,
        stderr=follower,
        env=full_env,
    )
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=30)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", errors="replace")


def test_tty_gets_colour_progress_and_a_preview(tmp_path: Path) -> None:
    suite = str(agent_suite(tmp_path, "--answer", "fine: hunter2 \x1b[31mred\x1b[0m"))
    shown = run_in_tty(["run", suite], {})
    assert "\x1b[31m" in shown  # colour
    assert "model calls ·" in shown  # progress line
    assert "answer: fine: hunter2 \\x1b[31mred" in shown  # preview with the escape neutralised


def test_no_color_and_ci_on_a_tty(tmp_path: Path) -> None:
    suite = str(agent_suite(tmp_path, "--answer", "fine: hunter2"))
    shown = run_in_tty(["run", suite], {"NO_COLOR": "1", "CI": "true"})
    assert "FAIL" in shown
    assert "\x1b[31m" not in shown
    assert "\x1b[32m" not in shown
    assert "fine: hunter2" not in shown  # no preview when CI is set
    shown = run_in_tty(["run", suite, "--no-color"], {})
    assert "\x1b[31m" not in shown
    assert "answer: fine: hunter2" in shown
