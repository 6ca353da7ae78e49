"""GitHub Actions: annotations (workflow commands on stdout) and the job summary.

Pure renderings of a finished run: the statuses are the run's, never recomputed. Neither the
annotations nor the summary ever contain answer text, even with `--include-responses`; text that
GitHub must not read commands from (the terminal report, with its answer previews) goes through
`stop_commands`. Conventions: docs/github-action.md (Annotations and job summary).
"""

from __future__ import annotations

import os
import re
import secrets
import shlex
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from ruledrift.model import ProbeResult, RunResult, Severity, Status

ANNOTATIONS_PER_LEVEL = 10  # GitHub keeps the first 10 errors, warnings and notices of a step
MESSAGE_MAX_CHARS = 4096  # GitHub cuts an annotation's message there
SUMMARY_MAX_BYTES = 900 * 1024  # GitHub drops a step summary over 1 MiB
SUMMARY_MIN_BYTES = 32 * 1024  # less room than this left in the file: no summary at all
CELL_MAX_CHARS = 500
RERUN_MAX_SCENARIOS = 50

LEVELS: dict[Severity, str] = {"critical": "error", "warning": "warning", "info": "notice"}
_SEVERITY_ORDER: tuple[Severity, ...] = ("critical", "warning", "info")
_SYMBOLS: dict[Status, str] = {"passed": "✅", "failed": "❌", "error": "⚠️"}
_MARKDOWN = {c: f"&#{ord(c)};" for c in "|`*_[]\\~$"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")

Flagged = tuple[str, ProbeResult]  # a probe that did not pass, with its scenario's id


def enabled(environ: Mapping[str, str]) -> bool:
    """True on a GitHub Actions runner, whose log is read for workflow commands."""
    return environ.get("GITHUB_ACTIONS") == "true"


# --- workflow commands -----------------------------------------------------------------------


def escape_data(text: str) -> str:
    """As actions/toolkit's `escapeData`: `%` first, then CR and LF."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """As actions/toolkit's `escapeProperty`: the data escapes, then `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    name: str, message: str, properties: Mapping[str, str | int] | None = None
) -> str:
    """`::name key=value,…::message`, escaped as actions/toolkit's `issueCommand` does (and
    lone surrogates, which cannot be written as UTF-8, replaced)."""
    listed = ",".join(f"{k}={escape_property(str(v))}" for k, v in (properties or {}).items())
    line = f"::{name}{' ' + listed if listed else ''}::{escape_data(message)}"
    return _SURROGATE.sub("\ufffd", line)


def stop_commands(text: str) -> str:
    """`text` in a block GitHub reads no workflow commands from, closed by a fresh random token."""
    token = secrets.token_hex(16)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"::stop-commands::{token}\n{body}::{token}::\n"


# --- annotations -----------------------------------------------------------------------------


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


def plan_annotations(result: RunResult) -> tuple[list[Flagged], int]:
    """The probes to annotate (critical first, then config order; at most 10 per level) and how
    many are left out. When some are, the closing notice takes one of the 10 notice slots."""
    flagged = [
        (s.scenario.id, p) for s in result.scenarios for p in s.probes if p.status != "passed"
    ]
    flagged.sort(key=lambda item: _SEVERITY_ORDER.index(item[1].probe.rule.severity))
    shown: list[Flagged] = []
    used: Counter[str] = Counter()
    for item in flagged:
        level = LEVELS[item[1].probe.rule.severity]
        if used[level] < ANNOTATIONS_PER_LEVEL:
            shown.append(item)
            used[level] += 1
    if len(shown) < len(flagged) and used["notice"] == ANNOTATIONS_PER_LEVEL:
        last_notice = max(i for i, (_, p) in enumerate(shown) if p.probe.rule.severity == "info")
        del shown[last_notice]
    return shown, len(flagged) - len(shown)


def render_annotations(result: RunResult, file: str) -> list[str]:
    """One workflow command per annotated probe, and a closing notice if some were left out."""
    shown, omitted = plan_annotations(result)
    lines = [_annotation(scenario, probe, file) for scenario, probe in shown]
    if omitted:
        lines.append(
            workflow_command(
                "notice",
                f"{omitted} more failed or errored probe(s) are not annotated: GitHub shows at "
                f"most {ANNOTATIONS_PER_LEVEL} annotations of each level per step. The job "
                "summary and the log list every probe.",
                {"title": f"RuleDrift: {omitted} more probe(s) not annotated"},
            )
        )
    return lines


def _annotation(scenario: str, result: ProbeResult, file: str) -> str:
    probe = result.probe
    name, rule, turn = f"{scenario}/{probe.id}", probe.rule.id, probe.after_turn
    if result.status == "failed":
        title = f"RuleDrift: {name} broke rule {rule} (after turn {turn})"
        message = "\n".join(a.message for a in result.failed_assertions)
    else:
        title = f"RuleDrift: {name} could not be run (rule {rule}, after turn {turn})"
        message = result.error or ""
    properties: dict[str, str | int] = {"file": file, "line": probe.location.line, "title": title}
    message = _cut(message or result.status, MESSAGE_MAX_CHARS)
    return workflow_command(LEVELS[probe.rule.severity], message, properties)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the job summary -------------------------------------------------------------------------


def append_summary(path: Path, text: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY. A failure is reported on stderr and changes nothing else:
    the summary is a view of the run, not its verdict."""
    try:
        with path.open("a", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        sys.stderr.write(f"ruledrift: warning: cannot write the job summary {path}: {error}\n")


def publish(
    result: RunResult, *, overrides: Sequence[str], environ: Mapping[str, str], out: TextIO
) -> None:
    """Annotations to `out` (after the terminal report), then the job summary if GitHub gave a
    file for it. `overrides`: the target options the reproduction command repeats."""
    file = annotation_file(result.suite.path, environ.get("GITHUB_WORKSPACE"))
    out.writelines(line + "\n" for line in render_annotations(result, file))
    out.flush()
    if not environ.get("GITHUB_STEP_SUMMARY"):
        return
    path = Path(environ["GITHUB_STEP_SUMMARY"])
    room = SUMMARY_MAX_BYTES - (path.stat().st_size if path.is_file() else 0)
    if room < SUMMARY_MIN_BYTES:  # earlier runs in this step filled it: more would drop it all
        sys.stderr.write(f"ruledrift: warning: no room left in the job summary {path}\n")
        return
    append_summary(path, render_summary(result, file, overrides, max_bytes=room))


def render_summary(
    result: RunResult,
    config: str,
    overrides: Sequence[str] = (),
    *,
    max_bytes: int = SUMMARY_MAX_BYTES,
) -> str:
    """Verdict, counts and target; the failed probes; the rule × boundary grid; every probe in a
    collapsed section; the command that reproduces the failures. Beyond `max_bytes` the collapsed
    section is cut first, then the table of failures, then the grid, each with a note."""
    head, tail = _head(result, config), _rerun(config, result, overrides)
    room = max_bytes - _size(head) - _size(tail) - _CUT_NOTE_BYTES
    rendered: dict[str, str] = {}
    cut = False
    for name in ("grid", "failed", "all"):  # the order they keep their rows in
        text, was_cut = _SECTIONS[name](result).render(room if not cut else 0)
        rendered[name], room, cut = text, room - _size(text), cut or was_cut
    note = _CUT_NOTE if cut else ""
    body = rendered["failed"] + rendered["grid"] + rendered["all"]
    return head + note + body + tail


# --- summary sections ------------------------------------------------------------------------

_CUT_NOTE = (
    "> **Note:** this summary was cut to stay under GitHub's 1 MiB limit for a step summary. "
    "The log lists every probe; `--json` writes the full report.\n\n"
)
_CUT_NOTE_BYTES = 1024  # the note above, and room for the tables' own notes
_VERDICTS: dict[Status, str] = {
    "passed": "✅ RuleDrift: passed, every probe kept its rule",
    "failed": "❌ RuleDrift: failed, the target broke a rule",
    "error": "⚠️ RuleDrift: error, some probes could not be run, so the verdict is incomplete",
}


class _Table:
    """A Markdown table whose rows are dropped from the end, with a note, to fit a budget."""

    def __init__(self, title: str, columns: Sequence[str], rows: list[str], what: str) -> None:
        self.title, self.rows, self.what = title, rows, what
        self.header = "| " + " | ".join(columns) + " |\n" + "|---" * len(columns) + "|\n"
        self.opening, self.closing = "", ""

    def render(self, room: int) -> tuple[str, bool]:
        """The table in at most `room` bytes (the notes aside), and whether rows were cut."""
        if not self.rows:
            return "", False
        used, kept = _size(self.title + self.opening + self.header + self.closing), 0
        for row in self.rows:
            used += _size(row)
            if used > room:
                break
            kept += 1
        left = len(self.rows) - kept
        more = "more " if kept else ""
        note = f"_{left} {more}{self.what} not shown: the summary reached its size limit._\n\n"
        if not kept:
            return note, True
        table = self.header + "".join(self.rows[:kept]) + "\n"
        return self.title + self.opening + table + (note if left else "") + self.closing, bool(left)


def _head(result: RunResult, config: str) -> str:
    target = result.target
    verdict = _VERDICTS[result.status]
    if result.interrupted:
        verdict = "⏹️ RuleDrift: interrupted, the run was stopped and the results are partial"
    what = f"{markdown(target.adapter)} adapter"
    if target.model:
        what += f", model {_code(target.model)}"
    digest = target.details.get("modelDigest")
    if isinstance(digest, str) and digest:
        what += f", digest {_code(digest)}"
    counts = (
        len(result.probes),
        result.count("passed"),
        result.count("failed"),
        result.count("error"),
        len(result.scenarios),
        result.model_calls,
        f"{result.duration_ms / 1000:.2f} s",
    )
    lines = [
        f"## {verdict}\n",
        f"**Suite:** {markdown(result.suite.name)} ({_code(config)}) · **Target:** {what} · "
        f"**Started:** {markdown(result.started_at)}\n",
        "| Probes | ✅ Passed | ❌ Failed | ⚠️ Errors | Scenarios | Model calls | Duration |",
        "|---:|---:|---:|---:|---:|---:|---:|",
        "| " + " | ".join(str(c) for c in counts) + " |\n",
    ]
    omitted = plan_annotations(result)[1]
    if omitted:
        lines.append(
            f"> **Note:** {omitted} failed or errored probe(s) have no annotation (GitHub shows "
            f"at most {ANNOTATIONS_PER_LEVEL} of each level per step); the table below lists "
            "them all.\n"
        )
    return "\n".join(lines) + "\n"


def _failed(result: RunResult) -> _Table:
    rows = []
    for scenario in result.scenarios:
        for probe in scenario.probes:
            if probe.status == "passed":
                continue
            why = [a.message for a in probe.failed_assertions] or [probe.error or probe.status]
            cells = [*_cells(scenario.scenario.id, probe), "<br>".join(map(markdown, why))]
            rows.append(_row(cells))
    columns = ["Scenario", "Probe", "Rule", "Severity", "After turn", "Result", "Why"]
    return _Table("### Failed and errored probes\n\n", columns, rows, "failed or errored probes")


def _grid(result: RunResult) -> _Table:
    counts: dict[tuple[str, int], Counter[Status]] = {}
    for probe in result.probes:
        key = (probe.probe.rule.id, probe.probe.after_turn)
        counts.setdefault(key, Counter())[probe.status] += 1
    turns = sorted({turn for _, turn in counts})
    rules = [r for r in result.suite.rules if any((r.id, t) in counts for t in turns)]
    rows = []
    for rule in rules:
        cells = [markdown(rule.id), rule.severity]
        for turn in turns:
            found = counts.get((rule.id, turn), Counter())
            shown = " ".join(f"{_SYMBOLS[s]} {found[s]}" for s in _SYMBOLS if found[s])
            cells.append(shown or "·")
        rows.append(_row(cells))
    columns = ["Rule", "Severity", *(f"after {t}" for t in turns)]
    title = (
        "### Rules × boundaries\n\n"
        "Probes per rule and `afterTurn`: ✅ passed, ❌ failed, ⚠️ error.\n\n"
    )
    return _Table(title, columns, rows, "rules")


def _all(result: RunResult) -> _Table:
    rows = [
        _row([*_cells(s.scenario.id, p), f"{p.duration_ms / 1000:.2f} s"])
        for s in result.scenarios
        for p in s.probes
    ]
    columns = ["Scenario", "Probe", "Rule", "Severity", "After turn", "Result", "Duration"]
    table = _Table("", columns, rows, "probes")
    table.opening = f"<details>\n<summary>All {len(rows)} probes</summary>\n\n"
    table.closing = "</details>\n\n"
    return table


_SECTIONS = {"grid": _grid, "failed": _failed, "all": _all}


def _cells(scenario: str, result: ProbeResult) -> list[str]:
    probe = result.probe
    return [
        markdown(scenario),
        markdown(probe.id),
        markdown(probe.rule.id),
        probe.rule.severity,
        str(probe.after_turn),
        f"{_SYMBOLS[result.status]} {result.status}",
    ]


def _rerun(config: str, result: RunResult, overrides: Sequence[str]) -> str:
    command = rerun_command(config, result, overrides)
    if command is None:
        return ""
    failed = sum(1 for s in result.scenarios if s.status != "passed")
    note = ""
    if failed > RERUN_MAX_SCENARIOS:
        note = f"(the first {RERUN_MAX_SCENARIOS} of the {failed} scenarios that did not pass)\n\n"
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", command))])
    return f"### Reproduce\n\n{note}{fence}sh\n{command}\n{fence}\n"


def rerun_command(config: str, result: RunResult, overrides: Sequence[str]) -> str | None:
    """`ruledrift run CONFIG --scenario …` for the scenarios that did not pass (the first 50)."""
    failed = [s.scenario.id for s in result.scenarios if s.status != "passed"]
    if not failed:
        return None
    argv = ["ruledrift", "run", config]
    for scenario in failed[:RERUN_MAX_SCENARIOS]:
        argv += ["--scenario", scenario]
    return _SURROGATE.sub("\ufffd", shlex.join([*argv, *overrides]))


def markdown(text: str, limit: int = CELL_MAX_CHARS) -> str:
    """Text made inert in GitHub Markdown (tables included): one line, entities for Markdown and
    HTML syntax, control characters shown as escapes, cut at `limit` characters."""
    text = _SURROGATE.sub("\ufffd", text).replace("\r\n", "\n").replace("\r", "\n")
    text = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    text = "".join(_MARKDOWN.get(c, c) for c in _cut(text, limit))
    return text.replace("\n", "<br>")


def _code(text: str) -> str:
    return f"<code>{markdown(text)}</code>"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
