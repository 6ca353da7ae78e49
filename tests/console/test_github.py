"""console/github.py: publishing a run on a runner, annotations to the log then the job summary
appended to GITHUB_STEP_SUMMARY within its size limit."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruledrift.console import github
from ruledrift.reports import job_summary
from tests.support import results as factories

# --- publishing ------------------------------------------------------------------------------


def test_publish_writes_annotations_and_appends_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n", encoding="utf-8")
    emitted: list[str] = []
    environ = {"GITHUB_STEP_SUMMARY": str(path), "GITHUB_WORKSPACE": str(tmp_path)}
    github.publish(factories.run_result(), overrides=[], environ=environ, emit=emitted.append)
    assert [line.split(" ")[0] for line in emitted] == ["::error"] * 4
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step output\n## ⚠️ RuleDrift: error")


def test_publish_without_a_summary_file(tmp_path: Path) -> None:
    emitted: list[str] = []
    github.publish(factories.run_result(), overrides=[], environ={}, emit=emitted.append)
    assert len(emitted) == 4
    assert list(tmp_path.iterdir()) == []


def test_publish_leaves_a_full_summary_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * (job_summary.SUMMARY_MAX_BYTES - 1000))
    environ = {"GITHUB_STEP_SUMMARY": str(path)}
    github.publish(factories.run_result(), overrides=[], environ=environ, emit=lambda line: None)
    assert path.stat().st_size == job_summary.SUMMARY_MAX_BYTES - 1000
    assert "no room left in the job summary" in capsys.readouterr().err


def test_publish_reports_an_unwritable_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = {"GITHUB_STEP_SUMMARY": str(tmp_path / "missing-dir" / "summary.md")}
    github.publish(factories.run_result(), overrides=[], environ=environ, emit=lambda line: None)
    assert "cannot write the job summary" in capsys.readouterr().err


# --- the annotations' file -----------------------------------------------------------------


def test_annotation_file_is_relative_to_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / "suites").mkdir(parents=True)
    inside = Path("suites/s.json")
    assert github.annotation_file(inside, str(workspace), cwd=workspace) == "suites/s.json"
    absolute = workspace / "suites" / "s.json"
    assert github.annotation_file(absolute, str(workspace), cwd=tmp_path) == "suites/s.json"
    assert github.annotation_file(Path("repo/./x/../s.json"), str(workspace), tmp_path) == "s.json"
    outside = tmp_path / "elsewhere.json"
    assert github.annotation_file(outside, str(workspace), cwd=workspace) == outside.as_posix()
    assert github.annotation_file(inside, None, cwd=tmp_path) == "suites/s.json"
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert github.annotation_file(link / "s.json", str(workspace), cwd=tmp_path) == "s.json"
