"""What GitHub shows when RuleDrift stopped before any model call (exit 2, or a pull that
failed): an annotation per configuration problem at its FILE:LINE:COL, or one annotation with
the reason, and a short "did not run" note in the job summary. Pure renderings."""

from __future__ import annotations

from pathlib import Path

from ruledrift.console.github import annotation_file
from ruledrift.errors import MAX_SHOWN_ISSUES, ConfigError, RuleDriftError
from ruledrift.reports.workflow_commands import (
    ANNOTATIONS_PER_LEVEL,
    MESSAGE_MAX_CHARS,
    workflow_command,
)
from ruledrift.text import markdown_inline, preview, terminal_safe

SUMMARY_PROBLEMS = 20  # problems listed in the job summary; the log has them all
_TITLE = "RuleDrift did not run"


def render_not_run_annotations(error: RuleDriftError, workspace: str | None) -> list[str]:
    """`::error` commands: one per configuration problem (at most GitHub's 10, the last saying
    how many more there are), or one with the error's message."""
    if not isinstance(error, ConfigError):
        message = preview(str(error), MESSAGE_MAX_CHARS)
        return [workflow_command("error", message, {"title": _TITLE})]
    issues = error.issues
    shown = issues if len(issues) <= ANNOTATIONS_PER_LEVEL else issues[: ANNOTATIONS_PER_LEVEL - 1]
    lines = []
    for issue in shown:
        properties: dict[str, str | int] = {
            "file": annotation_file(Path(issue.file), workspace),
            "line": issue.line,
            "col": issue.column,
            "title": f"{_TITLE}: invalid suite at {terminal_safe(issue.pointer or '/')}",
        }
        message = preview(issue.message, MESSAGE_MAX_CHARS)
        lines.append(workflow_command("error", message, properties))
    if len(shown) < len(issues):
        more = len(issues) - len(shown)
        shown_in_log = min(len(issues), MAX_SHOWN_ISSUES)
        message = f"{more} more problem(s) in the suite: the log lists the first {shown_in_log}"
        lines.append(workflow_command("error", message, {"title": _TITLE}))
    return lines


def render_not_run_summary(error: RuleDriftError) -> str:
    """The job summary's note: the problems (the first 20) or the reason, as inert Markdown."""
    lines = [f"## ⛔ {_TITLE}", ""]
    if isinstance(error, ConfigError):
        lines.append(f"The suite has {len(error.issues)} problem(s); nothing was run.")
        lines.append("")
        lines += [f"- {markdown_inline(str(i), 500)}" for i in error.issues[:SUMMARY_PROBLEMS]]
        if len(error.issues) > SUMMARY_PROBLEMS:
            lines.append(f"- … and {len(error.issues) - SUMMARY_PROBLEMS} more (see the log)")
    else:
        lines.append(markdown_inline(str(error), 2000))
    return "\n".join(lines) + "\n\n"
