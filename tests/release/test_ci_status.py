"""scripts/release/ci_status.py: a tag releases only a commit whose CI passed, read from fake
answers of GitHub's `GET /repos/{owner}/{repo}/actions/workflows/ci.yml/runs?head_sha=SHA`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scripts.release.ci_status import FAILED, PASSED, PENDING, verdict

ROOT = Path(__file__).resolve().parents[2]
SHA = "a" * 40


def run(event: str = "push", status: str = "completed", conclusion: str | None = "success",
        sha: str = SHA) -> dict[str, Any]:  # fmt: skip
    return {"id": 1, "head_sha": sha, "event": event, "status": status, "conclusion": conclusion,
            "html_url": "https://github.com/ruledrift/action/actions/runs/1"}  # fmt: skip


def answer(*runs: dict[str, Any]) -> dict[str, Any]:
    return {"total_count": len(runs), "workflow_runs": list(runs)}


@pytest.mark.parametrize(
    ("runs", "code"),
    [
        ([run()], PASSED),
        ([run(event="workflow_dispatch")], PASSED),
        ([run(conclusion="failure"), run()], PASSED),  # passed once: the commit can pass
        ([run(status="in_progress", conclusion=None)], PENDING),
        ([run(status="queued", conclusion=None), run(conclusion="failure")], PENDING),
        ([run(conclusion="failure")], FAILED),
        ([run(conclusion="cancelled")], FAILED),
        ([], FAILED),
        ([run(event="pull_request")], FAILED),  # tested a merge with the base, not this commit
        ([run(sha="b" * 40)], FAILED),  # another commit's run
    ],
)
def test_verdict(runs: list[dict[str, Any]], code: int) -> None:
    assert verdict(answer(*runs), SHA)[0] == code


def test_a_commit_without_ci_says_how_to_get_a_run() -> None:
    code, explanation = verdict(answer(), SHA)
    assert code == FAILED
    assert "Run workflow" in explanation


@pytest.mark.process
def test_the_command_exits_with_the_verdict() -> None:
    def status(payload: str) -> int:
        return subprocess.run(
            [sys.executable, "-m", "scripts.release.ci_status", SHA],
            input=payload,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).returncode

    assert status(json.dumps(answer(run()))) == 0
    assert status(json.dumps(answer(run(conclusion="failure")))) == 1
    assert status(json.dumps(answer(run(status="in_progress", conclusion=None)))) == 75
    assert status("not json") == 2
    assert status('{"message": "Not Found"}') == 2
