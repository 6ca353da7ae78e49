"""The application layer for saved reports: `report` (show and re-render one), `merge` (the
shards of a run into one) and `compare` (a head against its base). Like `app`, typed requests in,
typed outcomes out, nothing printed; the front-ends are cli.py and console.py."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ruledrift.app.policy import exit_code
from ruledrift.app.reports import (
    check_formats,
    check_report_paths,
    check_reports,
    write_reports,
)
from ruledrift.boundary.files import report_target, shown, write_atomic
from ruledrift.data import RunResult
from ruledrift.errors import ExitCode
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


_MERGED = "a report being merged"


@dataclass(frozen=True)
class ReportRequest:
    """`ruledrift report`: a saved JSON report re-rendered, without calling any model."""

    report: Path
    reports: Mapping[str, Path] = field(default_factory=dict)  # to write, by format


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
    check_reports(request.reports, {report_target(request.report): "the report being read"})
    written, failed = write_reports(saved.result, request.reports, saved.responses_included)
    code = exit_code(saved.result, reports_failed=bool(failed))
    return ReportOutcome(request, saved.result, saved.responses_included, code, written, failed)


@dataclass(frozen=True)
class MergeRequest:
    """`ruledrift merge`: the JSON reports of a sharded run combined into one."""

    shards: tuple[Path, ...]  # the shards' JSON reports
    reports: Mapping[str, Path] = field(default_factory=dict)  # to write, by format
    allow_partial: bool = False


def merge(request: MergeRequest) -> ReportOutcome:
    """Merge shard reports (refusing reports that do not belong together, exit 2), write the
    merged reports, and give the merged verdict's exit code."""
    saved = [(shown(path), read_report(path)) for path in request.shards]
    merged = merge_results(
        [(name, s.result) for name, s in saved], allow_partial=request.allow_partial
    )
    responses = all(s.responses_included for _, s in saved)
    check_reports(request.reports, dict.fromkeys(map(report_target, request.shards), _MERGED))
    written, failed = write_reports(merged.result, request.reports, responses)
    code = exit_code(merged.result, reports_failed=bool(failed))
    summary = ReportRequest(request.shards[0], request.reports)
    return ReportOutcome(summary, merged.result, responses, code, written, failed, merged.missing)


@dataclass(frozen=True)
class CompareRequest:
    """`ruledrift compare BASE.json HEAD.json`."""

    base: Path
    head: Path
    reports: Mapping[str, Path] = field(default_factory=dict)  # "markdown", "json": to write
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
    renderers: dict[str, Callable[[], bytes]] = {
        "markdown": lambda: render_comparison_markdown(result).encode(),
        "json": lambda: render_comparison_json(result),
    }
    check_formats(request.reports, renderers)
    check_report_paths(request.reports, {report_target(request.head): "the head's report"})
    for name, path in request.reports.items():
        write_atomic(path, renderers[name]())
    code = exit_code(head)
    if request.fail_on_regression and result.regressions and code == ExitCode.PASSED:
        code = ExitCode.FAILED
    return CompareOutcome(request, result, code, dict(request.reports))
