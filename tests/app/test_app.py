"""`--model`, `--base-url`, `--start-ollama`, `--models-dir` and `ruledrift pull`, through the
real CLI in a subprocess, against the loopback Ollama fake and the stand-in `ollama`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.ollama_fake import OLLAMA_BIN, FakeOllama
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process


def ollama_suite(tmp_path: Path, **adapter: Any) -> Path:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "qwen3:1.7b", **adapter}
    return write_suite(tmp_path, data)


def with_stand_in(extra: dict[str, str] | None = None) -> dict[str, str]:
    path = f"{OLLAMA_BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return {"PATH": path, **(extra or {})}


def test_model_and_base_url_override_the_config(tmp_path: Path) -> None:
    suite = ollama_suite(tmp_path, model="not-pulled:1b", baseUrl="http://127.0.0.1:9")
    report = tmp_path / "r.json"
    with FakeOllama(models=["llama3.2:1b"]) as server:
        done = ruledrift(
            "run", suite, "--model", "llama3.2:1b", "--base-url", server.base_url, "--json", report
        )
        models = {r.body.get("model") for r in server.requests if r.path == "/api/chat"}
    assert done.returncode == 0, done.stdout + done.stderr
    assert models == {"llama3.2:1b"}
    target = json.loads(report.read_text())["target"]
    assert target["model"] == "llama3.2:1b"
    assert target["details"]["baseUrl"] == server.base_url


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "x"), "--model does not apply to the command adapter"),
        (("--base-url", "http://127.0.0.1:1"), "--base-url does not apply to the command adapter"),
        (("--start-ollama",), "--start-ollama needs the ollama adapter"),
    ],
)
def test_target_flags_with_a_command_suite_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = ruledrift("run", write_suite(tmp_path, base_suite()), *args)
    assert done.returncode == 2
    assert message in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--base-url", "ftp://x"), "--base-url: expected an http:// or https:// URL"),
        (("--base-url", "http://u:pw-4711@x"), "embedded credentials are rejected"),
        (("--models-dir", "m"), "--models-dir goes with --start-ollama"),
        (("--start-ollama", "--base-url", "http://x"), "exclude each other"),
    ],
)
def test_bad_target_flags(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = ruledrift("run", ollama_suite(tmp_path), *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "pw-4711" not in done.stderr


def test_start_ollama_pulls_runs_and_stops(tmp_path: Path) -> None:
    models = tmp_path / "models"
    report = tmp_path / "r.json"
    suite = ollama_suite(tmp_path, baseUrl="http://127.0.0.1:9")  # ignored: the sidecar wins
    done = ruledrift(
        "run",
        suite,
        "--start-ollama",
        "--models-dir",
        models,
        "--concurrency",
        "3",
        "--json",
        report,
        env=with_stand_in(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "success" in done.stderr  # pull progress, plain lines off a TTY
    record = json.loads((models / "fake-ollama-env.json").read_text())
    assert record["env"]["OLLAMA_MODELS"] == str(models)
    assert record["env"]["OLLAMA_NUM_PARALLEL"] == "3"
    host = record["env"]["OLLAMA_HOST"]
    assert host.startswith("127.0.0.1:")
    assert json.loads(report.read_text())["target"]["details"]["baseUrl"] == f"http://{host}"
    with pytest.raises(ProcessLookupError):
        os.kill(record["pid"], 0)  # the server is gone

    # the model is in --models-dir now: the next run does not pull it again
    again = ruledrift("run", suite, "--start-ollama", "--models-dir", models, env=with_stand_in())
    assert again.returncode == 0
    assert "pulling" not in again.stderr


def test_start_ollama_failure_is_exit_3_with_the_log(tmp_path: Path) -> None:
    done = ruledrift(
        "run",
        ollama_suite(tmp_path),
        "--start-ollama",
        "--models-dir",
        tmp_path / "models",
        env=with_stand_in({"FAKE_OLLAMA_MODE": "exit"}),
    )
    assert done.returncode == 3
    assert "ollama serve log" in done.stderr
    assert "Traceback" not in done.stderr


def test_start_ollama_without_ollama_installed(tmp_path: Path) -> None:
    done = ruledrift(
        "run",
        ollama_suite(tmp_path),
        "--start-ollama",
        "--models-dir",
        tmp_path / "m",
        env={"PATH": os.path.dirname(sys.executable), "RULEDRIFT_OLLAMA_BIN": ""},
    )
    assert done.returncode == 3
    assert "install Ollama" in done.stderr


def test_pull_command(tmp_path: Path) -> None:
    suite, models = ollama_suite(tmp_path), tmp_path / "models"
    first = ruledrift("pull", suite, "--start-ollama", "--models-dir", models, env=with_stand_in())
    assert first.returncode == 0, first.stderr
    assert first.stdout == "qwen3:1.7b: pulled\n"
    second = ruledrift("pull", suite, "--start-ollama", "--models-dir", models, env=with_stand_in())
    assert second.stdout == "qwen3:1.7b: already present\n"
    with FakeOllama(models=[]) as server:
        third = ruledrift("pull", suite, "--base-url", server.base_url, "--model", "llama3.2:1b")
    assert (third.returncode, third.stdout) == (0, "llama3.2:1b: pulled\n")


def test_pull_of_an_unknown_model_is_exit_3(tmp_path: Path) -> None:
    with FakeOllama(models=[]) as server:
        done = ruledrift(
            "pull", ollama_suite(tmp_path), "--base-url", server.base_url, "--model", "nope:1b"
        )
    assert done.returncode == 3
    assert "file does not exist" in done.stderr


def test_the_python_api_example_runs(tmp_path: Path) -> None:
    """docs/python-api.md's example: the demo through app.run, then an in-process agent."""
    example = Path(__file__).resolve().parents[2] / "examples" / "python-api" / "run_suite.py"
    done = subprocess.run(
        [sys.executable, str(example)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the demo agent drifts
    assert "the suite's own target: failed (4/7 passed)" in done.stdout
    assert "an agent of your own: passed (7/7 passed)" in done.stdout
    report = json.loads((tmp_path / "python-api-report.json").read_text())
    assert report["summary"]["failed"] == 3


# --- when the target cannot start, when a report cannot be written, SIGTERM ------------------


def test_a_target_that_cannot_start_still_gets_its_reports(tmp_path: Path) -> None:
    """Nothing answers at baseUrl: exit 3 as before, and now the JSON and JUnit reports exist,
    every probe an error naming the cause (CI no longer fails on "report not found")."""
    suite = ollama_suite(tmp_path, baseUrl="http://127.0.0.1:9")
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    done = ruledrift("run", suite, "--json", report, "--junit", junit)
    assert done.returncode == 3, done.stderr
    assert "the target could not start: could not connect to Ollama" in done.stderr
    assert "ERROR: some probes could not be run" in done.stdout
    document = json.loads(report.read_text(encoding="utf-8"))
    assert document["summary"]["errors"] == document["summary"]["probes"] == 2
    errors = {p["error"] for s in document["scenarios"] for p in s["probes"]}
    [error] = errors
    assert error.startswith("not run: the target could not start: could not connect to Ollama")
    assert document["summary"]["modelCalls"] == 0
    assert 'errors="2"' in junit.read_text(encoding="utf-8")


def test_a_report_that_cannot_be_written_keeps_the_verdict_and_the_other_report(
    tmp_path: Path,
) -> None:
    """The report's folder is replaced by a file while the run goes on (think: a disk that
    filled up). The verdict is printed, the JUnit report written, and the exit code says a
    report is missing (5) rather than "nothing ran" (2)."""
    agent = tmp_path / "agent.py"
    agent.write_text(
        "import json, os, shutil, sys\n"
        "json.load(sys.stdin)\n"
        "out = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'out')\n"
        "if os.path.isdir(out):\n"
        "    shutil.rmtree(out)\n"
        "    open(out, 'w').close()\n"
        "print(json.dumps({'content': 'I cannot share that.'}))\n",
        encoding="utf-8",
    )
    (tmp_path / "out").mkdir()
    suite = write_suite(tmp_path, base_suite(command=sys.executable, args=[str(agent)]))
    junit = tmp_path / "junit.xml"
    done = ruledrift("run", suite, "--json", tmp_path / "out" / "r.json", "--junit", junit)
    assert done.returncode == 5, done.stderr
    assert "PASSED: every probe kept its rule" in done.stdout
    assert "ruledrift: error: cannot write report" in done.stderr
    assert "json report" not in done.stdout
    assert f"junit report: {junit}" in done.stdout
    assert junit.is_file()


def test_sigterm_while_the_reports_are_written_is_an_interruption(tmp_path: Path) -> None:
    """A cancelled CI job sends SIGTERM; the run is over and the reports are being written. The
    process exits 130 (not killed: 143), the reports already written stay, no temporary file
    is left behind."""
    suite = write_suite(
        tmp_path, base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py")])
    )
    script = (
        "import os, signal, sys\n"
        "from ruledrift import app, cli\n"
        "from ruledrift.reports.junit import render_junit\n"
        "def junit_then_sigterm(result, *, include_responses):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return render_junit(result, include_responses=include_responses)\n"
        "app.REPORTERS['junit'] = junit_then_sigterm\n"
        "sys.exit(cli.main(sys.argv[1:]))\n"
    )
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            "run",
            str(suite),
            "--json",
            str(out / "r.json"),
            "--junit",
            str(out / "r.xml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130, done.stderr
    assert "ruledrift: interrupted" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["r.json"]
