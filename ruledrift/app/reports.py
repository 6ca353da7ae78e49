"""The report formats' registry, and the checks and writes around it: every path is checked
before a run (so that a run is never wasted on a report it cannot write), and every report is
written after it, each on its own (a full disk loses one report, not the verdict)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from ruledrift.app.options import OptionError
from ruledrift.boundary.files import report_path_problem, report_target, shown, write_atomic
from ruledrift.data import RunResult
from ruledrift.errors import ReportError
from ruledrift.reports.codequality import render_codequality
from ruledrift.reports.html import render_html
from ruledrift.reports.junit import render_junit
from ruledrift.results.json_report import render_json

Renderer = Callable[..., bytes]


def _codequality(result: RunResult, *, include_responses: bool) -> bytes:
    """The Code Quality report, paths relative to GitLab's project (else the working folder);
    it never holds answers, so `include_responses` does not apply."""
    return render_codequality(result, project_dir=Path(os.environ.get("CI_PROJECT_DIR") or "."))


# One entry per row of options.REPORT_FORMATS (tests/app/test_options.py checks they agree).
REPORTERS: dict[str, Renderer] = {
    "json": render_json,
    "junit": render_junit,
    "html": render_html,
    "codequality": _codequality,
}


def check_reports(reports: Mapping[str, Path], taken: Mapping[Path, str]) -> None:
    """Before anything runs: every report is a known format (REPORTERS) and
    `check_report_paths`. Raises OptionError."""
    check_formats(reports, REPORTERS)
    check_report_paths(reports, taken)


def check_formats(reports: Mapping[str, Path], known: Mapping[str, object]) -> None:
    """Every key of `reports` names a format of `known`; raises OptionError."""
    unknown = [name for name in reports if name not in known]
    if unknown:
        raise OptionError(
            "reports: no report format {unknown} (formats: {formats})",
            unknown=", ".join(map(repr, unknown)),
            formats=", ".join(known),
        )


def check_report_paths(reports: Mapping[str, Path], taken: Mapping[Path, str]) -> None:
    """Every report's path can be written (a regular file or none yet, in a folder that can be
    written), and none would overwrite a file of `taken` (its `report_target`, and what it is:
    "the suite itself") or another report. Raises OptionError."""
    # what each path is, as a template: `{json}` is worded by the front-end
    seen = {target: what.replace("{", "{{").replace("}", "}}") for target, what in taken.items()}
    for name, path in reports.items():
        problem = report_path_problem(path)
        if problem:
            raise OptionError(
                f"{{{name}}} {{path}}: {{problem}}", path=shown(path), problem=problem
            )
        target = report_target(path)
        if target in seen:
            raise OptionError(
                f"{{{name}}} {{path}}: would overwrite {seen[target]}", path=shown(path)
            )
        seen[target] = f"the {{{name}}} report"


def write_reports(
    result: RunResult, reports: Mapping[str, Path], include_responses: bool
) -> tuple[dict[str, Path], dict[str, str]]:
    """Write every report that can be written: the paths written, and for each report that
    could not be (disk full, a folder gone since the check), why. Never raises ReportError:
    the verdict is known and must reach the front-end."""
    written: dict[str, Path] = {}
    failed: dict[str, str] = {}
    for name, path in reports.items():
        try:
            write_atomic(path, REPORTERS[name](result, include_responses=include_responses))
        except ReportError as error:
            failed[name] = str(error)
        else:
            written[name] = path
    return written, failed
