"""output.py: stdout and stderr never crash on what they cannot encode, and on a GitHub runner
carry no workflow command but RuleDrift's own."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ruledrift.console import output
from ruledrift.console.pull_progress import PullProgressPrinter
from ruledrift.ollama.api import PullProgress
from tests.support import AGENTS
from tests.support.suites import base_suite, write_suite
from tests.test_cli_github import runner_commands

ON_GITHUB = {"GITHUB_ACTIONS": "true"}


def test_every_line_is_made_inert_and_only_commands_pass() -> None:
    raw = io.StringIO()
    stream = output.CommandFreeStream(raw)
    stream.write("  ::error::pwned\nfine ##[add-mask]x\r::warning")
    stream.write("::y\n")
    output.command("::notice::ours", stream)  # type: ignore[arg-type]
    stream.write("open line ::")
    stream.end_line()
    assert raw.getvalue() == (
        "  \\::error::pwned\nfine ##\\[add-mask]x\r\\::warning::y\n::notice::ours\nopen line ::\n"
    )
    assert runner_commands(raw.getvalue()) == ["::notice::ours"]


def test_a_line_written_in_pieces_is_judged_whole() -> None:
    raw = io.StringIO()
    stream = output.CommandFreeStream(raw)
    for piece in (" ", ":", ":error::pwned", "\n"):
        stream.write(piece)
        stream.flush()
    assert raw.getvalue() == " \\::error::pwned\n"


def test_an_open_line_ends_before_a_command() -> None:
    raw = io.StringIO()
    stream = output.CommandFreeStream(raw)
    stream.write("progress ")
    stream.command("::error::ours")
    assert raw.getvalue() == "progress \n::error::ours\n"


def test_protection_is_installed_on_github_only_and_removed_after(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with output.protected_streams({}):
        assert not isinstance(sys.stdout, output.CommandFreeStream)
    before = sys.stdout, sys.stderr
    with output.protected_streams(ON_GITHUB):
        assert isinstance(sys.stdout, output.CommandFreeStream)
        with output.protected_streams(ON_GITHUB):  # nested: not wrapped twice
            print("::error::pwned")
        sys.stderr.write("::add-mask::x")  # an open line, ended on the way out
        output.command("::notice::ours")
    assert (sys.stdout, sys.stderr) == before
    captured = capsys.readouterr()
    assert captured.out == "\\::error::pwned\n::notice::ours\n"
    assert captured.err == "\\::add-mask::x\n"


def test_pull_progress_from_a_server_runs_no_command(capsys: pytest.CaptureFixture[str]) -> None:
    with output.protected_streams(ON_GITHUB):
        printer = PullProgressPrinter(sys.stderr, tty=False)
        printer(PullProgress(status="::error::pwned"))
        printer(PullProgress(status="pulling ##[add-mask]x", digest="sha256:1", total=10))
        printer.close()
    err = capsys.readouterr().err
    assert "pwned" in err
    assert runner_commands(err) == []


def _run(tmp_path: Path, environ: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")} | environ
    return subprocess.run(
        [sys.executable, "-m", "ruledrift", *args],
        capture_output=True,
        text=True,
        encoding=environ.get("PYTHONIOENCODING", "utf-8"),
        errors="strict",
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


@pytest.mark.process
def test_an_ascii_stdout_never_crashes_a_run(tmp_path: Path) -> None:
    """PYTHONIOENCODING=ascii: the suite's name, the answers and the report's own symbols are
    written as backslash escapes."""
    data = base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py")])
    data["name"] = "Régression — 😀 \ud83d"
    data["scenarios"][0]["probes"][0]["assertions"] = [{"type": "contains", "value": "é"}]
    suite = write_suite(tmp_path, json.dumps(data))
    done = _run(tmp_path, {"PYTHONIOENCODING": "ascii"}, "run", str(suite), "--include-responses")
    assert done.returncode == 1, done.stderr
    assert "R\\xe9gression \\u2014 \\U0001f600" in done.stdout
    assert "FAILED: the target broke a rule" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.process
def test_suite_text_cannot_drive_the_terminal(tmp_path: Path) -> None:
    """A `matches` pattern is quoted in the failure message: its escape sequences (a window
    title, an OSC 8 link) are shown, never sent."""
    data = base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py")])
    pattern = "\x1b]0;pwned\x07|\x1b]8;;https://evil.example\x1b\\\\link\x1b]8;;\x1b\\\\"
    data["scenarios"][0]["probes"][0]["assertions"] = [{"type": "matches", "pattern": pattern}]
    data["name"] = "title \x1b]0;pwned\x07"
    suite = write_suite(tmp_path, data)
    done = _run(tmp_path, {}, "run", str(suite))
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert "\\x1b]0;pwned\\x07" in done.stdout
