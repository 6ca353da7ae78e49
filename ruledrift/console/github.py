"""GitHub Actions output: a run's annotations (through the caller's `emit`) and job summary, a
comparison in the job summary, and single annotations for the front-ends. The files GitHub names
(the job summary, the workspace an annotation's path is relative to) are read and written here;
`reports/` only renders the text."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from ruledrift.console import output
from ruledrift.data import RunResult
from ruledrift.reports.comparison import render_comparison_markdown
from ruledrift.reports.job_summary import (
    SUMMARY_MAX_BYTES,
    SUMMARY_MIN_BYTES,
    Origin,
    render_summary,
)
from ruledrift.reports.workflow_commands import render_annotations, workflow_command
from ruledrift.results.comparison import ComparisonResult


def publish(
    result: RunResult,
    *,
    overrides: Sequence[str],
    environ: Mapping[str, str],
    emit: Callable[[str], None],
    reports: Mapping[str, str] | None = None,
) -> None:
    """Each annotation to `emit` (one workflow command line, after the terminal report), then the
    job summary if GitHub gave a file for it. `overrides`: the target options the reproduction
    command repeats."""
    file = annotation_file(result.suite.path, environ.get("GITHUB_WORKSPACE"))
    for line in render_annotations(result, file):
        emit(line)
    summarize(result, overrides=overrides, environ=environ, reports=reports)


def summarize(
    result: RunResult,
    *,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str],
    reports: Mapping[str, str] | None = None,
    origin: Origin | None = None,
) -> None:
    """The job summary appended to the file GitHub gave for it, if any, unless earlier
    commands of the step left too little room. `origin`: the saved reports the result was read
    from (`ruledrift report`, `ruledrift merge`)."""
    if not environ.get("GITHUB_STEP_SUMMARY"):
        return
    file = annotation_file(result.suite.path, environ.get("GITHUB_WORKSPACE"))
    path = Path(environ["GITHUB_STEP_SUMMARY"])
    room = SUMMARY_MAX_BYTES - (path.stat().st_size if path.is_file() else 0)
    if room < SUMMARY_MIN_BYTES:  # earlier runs in this step filled it: more would drop it all
        sys.stderr.write(f"ruledrift: warning: no room left in the job summary {path}\n")
        return
    summary = render_summary(
        result,
        file,
        overrides,
        max_bytes=room,
        reports=reports,
        artifacts_url=artifacts_url(environ),
        attempt=run_attempt(environ),
        origin=origin,
    )
    append_summary(path, summary)


def annotation_file(config: Path, workspace: str | None, cwd: Path | None = None) -> str:
    """The config's path as GitHub resolves annotation files: relative to the workspace (the
    repository root) when it is inside it, else as given."""
    if workspace:
        here = cwd or Path.cwd()
        path, root = (Path(os.path.normpath(here / p)) for p in (config, Path(workspace)))
        if not path.is_relative_to(root):  # maybe through a symbolic link (/tmp → /private/tmp)
            path, root = path.resolve(), root.resolve()
        if path.is_relative_to(root) and path != root:
            return path.relative_to(root).as_posix()
    return config.as_posix()


def append_summary(path: Path, text: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY. A failure is reported on stderr and changes nothing else:
    the summary is a view of the run, not its verdict."""
    try:
        with path.open("a", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        sys.stderr.write(f"ruledrift: warning: cannot write the job summary {path}: {error}\n")


def run_attempt(environ: Mapping[str, str]) -> int:
    """Which attempt of the workflow run this is (GITHUB_RUN_ATTEMPT; 1 when unset or odd)."""
    text = environ.get("GITHUB_RUN_ATTEMPT", "")
    return int(text) if text.isascii() and text.isdigit() and 1 <= len(text) <= 6 else 1


def artifacts_url(environ: Mapping[str, str]) -> str | None:
    """This workflow run's page, where the artifacts a workflow uploads are listed."""
    parts = [
        environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    ]
    if not all(parts) or not parts[0].startswith("https://"):
        return None
    server, repository, run_id = parts
    return f"{server.rstrip('/')}/{repository}/actions/runs/{run_id}#artifacts"


def annotate(level: str, message: str, title: str) -> None:
    """One `::notice::`, `::warning::` or `::error::` annotation in the log, escaped."""
    output.command(workflow_command(level, message, {"title": title}))


def error_annotation(message: str, title: str) -> str:
    """The `::error::` line of an annotation, for a caller that prints it itself."""
    return workflow_command("error", message, {"title": title})


def add_to_summary(path: Path, markdown: str) -> None:
    """Markdown appended to the job summary file."""
    append_summary(path, markdown)


def summarize_comparison(path: Path, comparison: ComparisonResult) -> None:
    """A "compared with base" section appended to the job summary."""
    append_summary(path, render_comparison_markdown(comparison) + "\n")
