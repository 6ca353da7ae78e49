"""The application layer for saved reports: `report` (show and re-render one), `merge` (the
shards of a run into one) and `compare` (a head against its base). Like `app`, typed requests in,
typed outcomes out, nothing printed; the front-ends are cli.py and console.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ruledrift.app import check_reports, exit_code, given_reports, write_reports
from ruledrift.boundary.files import report_path_problem, report_target, shown, write_atomic
from ruledrift.data import RunResult
from ruledrift.errors import ExitCode, UsageError
from ruledrift.reports.comparison import render_comparison_json, render_comparison_markdown
from ruledrift.results.comparison import ComparisonResult, compare_runs
from ruledrift.results.json_load import read_report
from ruledrift.results.merge import merge_results

__all__ = [
    "CompareOutcome",
    "CompareRequest",
    "MergeRequest",
    "ReportOutcome",
    "ReportRequest",
    "compare",
    "merge",
    "report",
]


@dataclass(frozen=True)
class ReportRequest:
    """`ruledrift report`: a saved JSON report re-rendered, without calling any model."""

    report: Path
    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    codequality: Path | None = None

    def reports(self) -> dict[str, Path]:
        return given_reports(
            json=self.json, junit=self.junit, html=self.html, codequality=self.codequality
        )


@dataclass(frozen=True)
class ReportOutcome:
    request: ReportRequest
    result: RunResult
    responses_included: bool  # the saved report holds answers: so may what is rendered from it
    exit_code: ExitCode
    reports_written: dict[str, Path]
    reports_failed: dict[str, str] = field(default_factory=dict)
    missing_shards: tuple[int, ...] = ()  # `merge --allow-partial`: shards not given


def report(request: ReportRequest) -> ReportOutcome:
    """Re-render a saved JSON report (another format, or the same again) and give the verdict's
    exit code. Raises UsageError (exit 2) for a file that is not a usable report."""
    saved = read_report(request.report)
    reports = request.reports()
    check_reports(reports, request.report)
    written, failed = write_reports(saved.result, reports, saved.responses_included)
    code = exit_code(saved.result, reports_failed=bool(failed))
    return ReportOutcome(request, saved.result, saved.responses_included, code, written, failed)


@dataclass(frozen=True)
class MergeRequest:
    """`ruledrift merge`: the JSON reports of a sharded run combined into one."""

    reports: tuple[Path, ...]
    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    codequality: Path | None = None
    allow_partial: bool = False

    def outputs(self) -> dict[str, Path]:
        return given_reports(
            json=self.json, junit=self.junit, html=self.html, codequality=self.codequality
        )


def merge(request: MergeRequest) -> ReportOutcome:
    """Merge shard reports (refusing reports that do not belong together, exit 2), write the
    merged reports, and give the merged verdict's exit code."""
    saved = [(shown(path), read_report(path)) for path in request.reports]
    merged = merge_results(
        [(name, s.result) for name, s in saved], allow_partial=request.allow_partial
    )
    responses = all(s.responses_included for _, s in saved)
    outputs = request.outputs()
    seen = {report_target(p): p for p in request.reports}
    for option, path in outputs.items():
        problem = report_path_problem(path)
        if problem:
            raise UsageError(f"--{option} {shown(path)}: {problem}")
        if report_target(path) in seen:
            raise UsageError(f"--{option} {shown(path)}: would overwrite a report being merged")
    written, failed = write_reports(merged.result, outputs, responses)
    code = exit_code(merged.result, reports_failed=bool(failed))
    summary = ReportRequest(request.reports[0], **{k: v for k, v in outputs.items()})
    return ReportOutcome(summary, merged.result, responses, code, written, failed, merged.missing)


@dataclass(frozen=True)
class CompareRequest:
    """`ruledrift compare BASE.json HEAD.json`."""

    base: Path
    head: Path
    markdown: Path | None = None
    json: Path | None = None
    fail_on_regression: bool = False


@dataclass(frozen=True)
class CompareOutcome:
    request: CompareRequest
    comparison: ComparisonResult
    exit_code: ExitCode
    written: dict[str, Path]


def compare_with_base(base: Path, head: RunResult) -> ComparisonResult:
    """A run compared with the saved report of its base: the comparison `compare` makes (the
    action's `baseline` compares a run it just finished this way)."""
    return compare_runs(read_report(base).result, head)


def compare(request: CompareRequest) -> CompareOutcome:
    """Compare the head's report with its base's. The exit code is the head's own verdict's;
    with `fail_on_regression`, also 1 when a probe is significantly worse (Holm-adjusted)."""
    head = read_report(request.head).result
    result = compare_with_base(request.base, head)
    outputs = {
        name: path
        for name, path in (("markdown", request.markdown), ("json", request.json))
        if path is not None
    }
    check_reports(outputs, request.head)
    renderers = {
        "markdown": lambda: render_comparison_markdown(result).encode(),
        "json": lambda: render_comparison_json(result),
    }
    for name, path in outputs.items():
        write_atomic(path, renderers[name]())
    code = exit_code(head)
    if request.fail_on_regression and result.regressions and code == ExitCode.PASSED:
        code = ExitCode.FAILED
    return CompareOutcome(request, result, code, outputs)
