"""The GitHub job summary ($GITHUB_STEP_SUMMARY): verdict, counts and target, the drift curve as
a Mermaid chart, the failed probes, a rule × boundary grid of pass rates, every probe in a
collapsed section, and the command that reproduces the failures; kept under GitHub's 1 MiB
limit. Never any answer text. Everything inserted is escaped for Markdown and HTML; the chart
holds no text from the suite at all (see `_chart`).
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, cast

from ruledrift import __version__
from ruledrift.data import ProbeResult, RunResult, Status, policy_argv
from ruledrift.reports.sentences import (
    IDENTICAL_RUNS,
    TARGET_DID_NOT_START,
    pairing_words,
    policy_rule,
    run_verdict,
    tool_lines,
    variant_words,
    variants_heading,
)
from ruledrift.reports.workflow_commands import ANNOTATIONS_PER_LEVEL, plan_annotations
from ruledrift.results.findings import (
    FLAG_TEXT,
    DriftCell,
    RuleDrift,
    attempt_odds,
    drift_curve,
    independence_warnings,
    policy_promise,
    rule_stories,
    search_lines,
    share_words,
    suspicious,
    target_warnings,
)
from ruledrift.results.variants import read_variants, variant_curves
from ruledrift.stats import PassRate
from ruledrift.text import markdown_inline, repair_surrogates, terminal_safe

SUMMARY_MAX_BYTES = 900 * 1024  # GitHub drops a step summary over 1 MiB
SUMMARY_MIN_BYTES = 32 * 1024  # less room than this left in the file: no summary at all
CELL_MAX_CHARS = 500
RERUN_MAX_SCENARIOS = 50
ORIGIN_MAX_LISTED = 20  # saved reports (or missing shards) named in a summary's note
CHART_MAX_RULES = 8  # lines in the drift charts, one per colour; more would be a tangle
CHART_NAME_MAX_CHARS = 200  # a rule id in the list below the chart

_SYMBOLS: dict[Status, str] = {
    "passed": "✅",
    "failed": "❌",
    "error": "⚠️",
    "inconclusive": "❔",
    "vacuous": "⭕",
}


@dataclass(frozen=True)
class Origin:
    """Where a summary's result comes from when it is not a run that just ended: `ruledrift
    report` re-rendering a saved report, or `ruledrift merge` combining shards' reports."""

    command: Literal["report", "merge"]
    reports: tuple[str, ...]  # the JSON reports read, as given
    missing: tuple[int, ...] = ()  # merge --allow-partial: the shards not given


def render_summary(
    result: RunResult,
    config: str,
    overrides: Sequence[str] = (),
    *,
    max_bytes: int = SUMMARY_MAX_BYTES,
    reports: Mapping[str, str] | None = None,
    artifacts_url: str | None = None,
    attempt: int = 1,
    origin: Origin | None = None,
) -> str:
    """Verdict, counts and target; the reports written (and where a workflow that uploads them
    keeps them); the drift curve as a chart (with more than one depth); the failed probes; the
    rule × boundary grid; every probe in a collapsed section; the command that reproduces the
    failures, also as `docker run`. Beyond `max_bytes` the collapsed section is cut first, then
    the table of failures, then the grid, then the chart, each with a note. On a re-run
    (`attempt` above 1), what re-running does to the chance of missing a drifted rule. With an
    `origin`, a note that the result was read from saved reports, not run by this step."""
    head = _head(result, config) + _origin_note(origin) + _rerun_note(result, attempt)
    head += _reports(reports or {}, artifacts_url)
    tail = _rerun(config, result, overrides)
    room = max_bytes - _size(head) - _size(tail) - _CUT_NOTE_BYTES
    rendered: dict[str, str] = {}
    cut = False
    order = ("chart", "variants", "searches", "grid", "failed", "suspicious", "all")
    for name in order:  # the order they keep rows in
        text, was_cut = _SECTIONS[name](result).render(room if not cut else 0)
        rendered[name], room, cut = text, room - _size(text), cut or was_cut
    note = _CUT_NOTE if cut else ""
    body = rendered["failed"] + rendered["suspicious"] + rendered["searches"] + rendered["grid"]
    body += rendered["all"]
    return head + rendered["chart"] + rendered["variants"] + note + body + tail


# --- summary sections ------------------------------------------------------------------------

_CUT_NOTE = (
    "> **Note:** this summary was cut to stay under GitHub's 1 MiB limit for a step summary. "
    "The log lists every probe; `--json` writes the full report.\n\n"
)
_CUT_NOTE_BYTES = 1024  # the note above, and room for the tables' own notes


class _Section(Protocol):
    def render(self, room: int) -> tuple[str, bool]:
        """The section in at most `room` bytes (the notes aside), and whether it was cut."""
        ...


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
    verdict = _verdict(result)
    cause = _not_started(result)
    if cause is not None:
        verdict = f"⛔ RuleDrift did not run: {TARGET_DID_NOT_START}"
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
        _calls(result),
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
    if cause is not None:
        lines.append(f"**Cause:** {markdown(cause, 2000)}\n")
    lines += [f"> **Warning:** {markdown(w, 2000)}\n" for w in target_warnings(result)]
    if result.policy.repeated:
        lines.append(f"**Repeats:** {_policy_words(result)}\n")
        lines += [f"> **Warning:** {markdown(w, 2000)}\n" for w in independence_warnings(result)]
    omitted = plan_annotations(result)[1]
    if omitted:
        lines.append(
            f"> **Note:** {omitted} failed or errored probe(s) have no annotation (GitHub shows "
            f"at most {ANNOTATIONS_PER_LEVEL} of each level per step); the table below lists "
            "them all.\n"
        )
    return "\n".join(lines) + "\n"


def _verdict(result: RunResult) -> str:
    """`❌ RuleDrift: failed, the target broke a rule`."""
    verdict = run_verdict(result)
    symbol = "⏹️" if result.interrupted else _SYMBOLS[cast(Status, verdict.word)]
    return f"{symbol} RuleDrift: {verdict.word}, {verdict.reason}"


def _origin_note(origin: Origin | None) -> str:
    """`> **Note:** re-rendered by `ruledrift report` from the saved report …`."""
    if origin is None:
        return ""
    listed = ", ".join(_code(path) for path in origin.reports[:ORIGIN_MAX_LISTED])
    if len(origin.reports) > ORIGIN_MAX_LISTED:
        listed += f" and {len(origin.reports) - ORIGIN_MAX_LISTED} more"
    if origin.command == "report":
        what = f"re-rendered by `ruledrift report` from the saved report {listed}"
    else:
        shards = len(origin.reports)
        what = f"merged by `ruledrift merge` from {shards} shard report(s): {listed}"
        if origin.missing:
            total = shards + len(origin.missing)
            gone = ", ".join(f"{k}/{total}" for k in origin.missing[:ORIGIN_MAX_LISTED])
            more = len(origin.missing) - ORIGIN_MAX_LISTED
            gone += f" and {more} more" if more > 0 else ""
            what += f". A partial merge (`--allow-partial`): shard(s) {gone} not given"
    return f"> **Note:** {what}; this step called no model.\n\n"


def _rerun_note(result: RunResult, attempt: int) -> str:
    """On attempt k > 1 of a workflow run: how often a drifted rule gets through one attempt and
    at least one of k (and of k + 1), computed for this run's policy and probes."""
    odds = attempt_odds(result)
    if attempt <= 1 or odds is None:
        return ""
    once, now, more = (odds.missed_within(k) for k in (1, attempt, attempt + 1))
    rule = f"a probe whose rule passes {odds.drifted_at:.0%} of the time"
    return (
        f"> **Note:** this is attempt {attempt} of this workflow run. Re-running a red job until "
        f"it goes green defeats the error rates: {rule} gets through one attempt "
        f"{share_words(once)} of the time, and at least one of {attempt} attempts "
        f"{share_words(now)} (of {attempt + 1}: {share_words(more)}). Re-run for a cause "
        "outside the target (a runner or a server that failed), not for a red verdict.\n\n"
    )


def _policy_words(result: RunResult) -> str:
    promise = policy_promise(result)
    if promise is None:
        return _policy_rule(result)
    words, kept = promise
    return f"{_policy_rule(result)}. {'' if kept else '⚠️ '}{markdown(words)}"


def _policy_rule(result: RunResult) -> str:
    undecided = result.count("inconclusive")
    tail = f"; ❔ {undecided} inconclusive" if undecided else ""
    return policy_rule(result, code=lambda option: f"`{option}`") + tail


def _calls(result: RunResult) -> str:
    """The target's model calls, and the judges' beside them when a judge was asked."""
    judged = f" + {result.judge_calls} judge" if result.judge_calls else ""
    return f"{result.model_calls}{judged}"


def _not_started(result: RunResult) -> str | None:
    """The cause, when the target could not start (no call made, every probe an error)."""
    probes = result.probes
    if result.model_calls or not probes or any(p.status != "error" for p in probes):
        return None
    errors = {p.error for p in probes}
    cause = errors.pop() if len(errors) == 1 else None
    prefix = "not run: the target could not start: "
    return cause.removeprefix(prefix) if cause and cause.startswith(prefix) else None


def _reports(reports: Mapping[str, str], artifacts_url: str | None) -> str:
    if not reports:
        return ""
    listed = ", ".join(f"{markdown(name)} {_code(path)}" for name, path in reports.items())
    line = f"**Reports:** {listed}"
    if artifacts_url:
        line += (
            f" · uploaded with `actions/upload-artifact`, they are in [this run's artifacts]"
            f"({markdown(artifacts_url)})"
        )
    return line + "\n\n"


def _failed(result: RunResult) -> _Table:
    rows = []
    for scenario in result.scenarios:
        for probe in scenario.probes:
            if probe.status == "passed":
                continue
            why = [a.message for a in probe.failed_assertions] or [probe.error or probe.status]
            if probe.status == "vacuous" and probe.control is not None:
                checks = probe.control.failed_assertions
                why = [f"its control failed: {a.message}" for a in checks] or why
            why += tool_lines(probe, terminal_safe)
            cells = [*_cells(scenario.scenario.id, probe), "<br>".join(map(markdown, why))]
            rows.append(_row(cells))
    columns = ["Scenario", "Probe", "Rule", "Severity", "After turn", "Result", "Why"]
    return _Table("### Failed and errored probes\n\n", columns, rows, "failed or errored probes")


def _grid(result: RunResult) -> _Table:
    counts: dict[tuple[str, int], Counter[Status]] = {}
    for probe in result.probes:
        key = (probe.probe.rule.id, probe.probe.after_turn)
        counts.setdefault(key, Counter())[probe.status] += 1
    cells = {
        (curve.rule.id, cell.after_turn): cell
        for curve in drift_curve(result)
        for cell in curve.cells
    }
    turns = sorted({turn for _, turn in counts})
    rules = [r for r in result.suite.rules if any((r.id, t) in counts for t in turns)]
    stories = {story.rule.id: story.line for story in rule_stories(result)}
    rows = []
    for rule in rules:
        row = [markdown(rule.id), rule.severity]
        for turn in turns:
            found = counts.get((rule.id, turn))
            row.append(_grid_cell(found, cells.get((rule.id, turn))) if found else "·")
        row.append(markdown(stories.get(rule.id, "")))
        rows.append(_row(row))
    columns = ["Rule", "Severity", *(f"after {t}" for t in turns), "Across depths"]
    return _Table(_GRID_TITLE, columns, rows, "rules")


_CUE: dict[Status, str] = {
    "passed": "🟩",
    "failed": "🟥",
    "error": "🟨",
    "inconclusive": "🟪",
    "vacuous": "🟦",
}
_GRID_TITLE = (
    "### Rules × boundaries\n\n"
    "Each cell: the rule's verdict at that `afterTurn`, as the HTML report colours it "
    f"({_CUE['failed']} failed: a probe there failed; else {_CUE['vacuous']} vacuous: a probe "
    f"passed but its control failed; else {_CUE['inconclusive']} inconclusive; "
    f"else {_CUE['error']} error; else {_CUE['passed']} passed), the pass rate of its runs with "
    "passes/runs, then the probes there that did not pass: ❌ failed, ⭕ vacuous, ⚠️ error, "
    "❔ inconclusive.\n\n"
)


def _grid_cell(found: Counter[Status], cell: DriftCell | None) -> str:
    """`🟥 80% (4/5) ❌ 1`: the depth's verdict as a colour, the rate and counts (colour is never
    the only cue), then the probes there that did not pass. Every run errored: `🟨 no runs`."""
    shown = f"{_CUE['error']} no runs"
    if cell is not None:
        rate = cell.rate
        shown = f"{_CUE[cell.status]} {_percent(rate)} ({rate.passes}/{rate.runs})"
    others: tuple[Status, ...] = ("failed", "vacuous", "error", "inconclusive")
    return " ".join([shown, *(f"{_SYMBOLS[s]} {found[s]}" for s in others if found[s])])


def _percent(rate: PassRate) -> str:
    """`80%`, `66.7%`; never `100%` or `0%` unless every run passed or none did."""
    if rate.passes * 100 % rate.runs == 0:
        return f"{rate.passes * 100 // rate.runs}%"
    return f"{min(max(rate.rate * 100, 0.1), 99.9):.1f}%"


# --- the drift chart -------------------------------------------------------------------------


class _Chart:
    """A section kept whole or left out with a note: it has no rows to drop."""

    def __init__(self, text: str, what: str = "The drift chart is") -> None:
        self.text, self.what = text, what

    def render(self, room: int) -> tuple[str, bool]:
        if not self.text or _size(self.text) <= room:
            return self.text, False
        return f"_{self.what} not shown: the summary reached its size limit._\n\n", True


def _variants(result: RunResult) -> _Chart:
    """With `--variants`: every variant's drift curves in one chart per set of depths (lines
    named in the list below, as in the drift chart), each probe under each variant against
    base, and the pairs an improvement needs."""
    reading = read_variants(result)
    if reading is None:
        return _Chart("")
    text = f"### Variants\n\n{markdown_inline(variants_heading(reading), CELL_MAX_CHARS)}.\n\n"
    curves = [curve for curve in variant_curves(result) if len(curve.cells) > 1]
    number = 1
    for group in _by_depths(curves):
        text += _chart_group(group, number)
        number += len(group)
    text += "| probe | variant | against base |\n|---|---|---|\n"
    for row in reading.probes:
        name = markdown_inline(f"{row.scenario}/{row.probe.probe.id}", CELL_MAX_CHARS)
        words = markdown_inline(variant_words(row), CELL_MAX_CHARS)
        text += f"| {name} | {markdown_inline(row.variant.id, CELL_MAX_CHARS)} | {words} |\n"
    text += "\n"
    if reading.plan is not None:
        text += markdown_inline(pairing_words(reading.plan), CELL_MAX_CHARS) + "\n\n"
    return _Chart(text, "The variants' comparison is")


def _chart(result: RunResult) -> _Chart:
    """The drift curve as Mermaid `xychart-beta` line charts: pass rate (%) by depth, a line per
    rule over the depths it has a pass rate at, with a list below each chart that names its
    lines. Only when the run has more than one depth.

    An xychart line has a value at every category of its x-axis, so the rules are drawn in one
    chart per set of depths: the rules probed at the same depths share a chart, a rule probed at
    other depths gets its own, and no line crosses a depth its rule has no point at. A rule with
    a finished run at one depth only has no line to draw and is named.

    Mermaid has no escape for `"` in a string, reads `%%{…}%%` anywhere as a directive, and a
    line of backticks would end the Markdown fence: so no text from the suite goes into the
    chart. The lines are `rule 1`, `rule 2`… (the legend, where GitHub's Mermaid draws one) and
    the list below names each rule, escaped as any Markdown, with its colour and its values.
    """
    curves = drift_curve(result)
    if len({cell.after_turn for curve in curves for cell in curve.cells}) < 2:
        return _Chart("")
    lines = [curve for curve in curves if len(curve.cells) > 1]
    drawn = _lowest(lines, CHART_MAX_RULES)
    single = [curve for curve in curves if len(curve.cells) == 1]
    groups = _by_depths(drawn)
    text = "### Drift curve\n\n"
    if drawn:
        text += (
            "The pass rate of each rule's runs by depth (`afterTurn`): a line that falls to the "
            "right is a rule the target forgets as the conversation grows."
        )
        if len(groups) > 1:
            text += (
                " Rules probed at different depths are drawn in different charts, each over the "
                "depths its rules were probed at."
            )
        text += "\n\n"
    number = 1
    for group in groups:
        text += _chart_group(group, number)
        number += len(group)
    if len(lines) > len(drawn):
        text += (
            f"_{len(lines) - len(drawn)} more rules are not drawn: the charts show at most "
            f"{CHART_MAX_RULES}, those with the lowest pass rates; the table below lists every "
            "rule._\n\n"
        )
    if single:
        text += f"_Not drawn, with a finished run at one depth only: {_names(single)}._\n\n"
    return _Chart(text)


def _by_depths(curves: list[RuleDrift]) -> list[list[RuleDrift]]:
    """The curves grouped by the depths of their points, each group in the suite's order, the
    groups in the order of their first curve."""
    groups: dict[tuple[int, ...], list[RuleDrift]] = {}
    for curve in curves:
        groups.setdefault(tuple(cell.after_turn for cell in curve.cells), []).append(curve)
    return list(groups.values())


def _chart_group(curves: list[RuleDrift], first: int) -> str:
    """One chart of `curves` (sharing their depths), numbered from `first`, and its list."""
    depths = [cell.after_turn for cell in curves[0].cells]
    items = "".join(_chart_item(first + i, i, curve) for i, curve in enumerate(curves))
    at = f"at depths {' → '.join(map(str, depths))}"
    intro = (
        f"The line, {at}:"
        if len(curves) == 1
        else (
            f"The lines, {at}, in the order of their colours (and of the chart's legend, where "
            "GitHub's Mermaid draws one):"
        )
    )
    return _mermaid(depths, curves, first) + intro + "\n\n" + items + "\n"


def _lowest(curves: list[RuleDrift], count: int) -> list[RuleDrift]:
    """The `count` curves with the lowest pass rate at any depth, in the suite's order."""
    ranked = sorted(
        range(len(curves)), key=lambda i: (min(c.rate.rate for c in curves[i].cells), i)
    )
    return [curves[i] for i in sorted(ranked[:count])]


# The lines' colours, in order (Mermaid's default xychart palette starts with a pale lavender
# that does not show on white). Okabe and Ito's colour-blind-safe hues, darkened where needed:
# each has a contrast of at least 3:1 (WCAG's bar for graphics) on white and on GitHub's dark
# background (#0d1117), where GitHub's Mermaid draws the chart in dark mode.
CHART_COLOURS: tuple[tuple[str, str], ...] = (
    ("#0072B2", "blue"),
    ("#D55E00", "orange"),
    ("#009E73", "green"),
    ("#CC79A7", "pink"),
    ("#9467BD", "purple"),
    ("#9A6700", "brown"),
    ("#008695", "teal"),
    ("#6E7781", "grey"),
)
_THEME = (
    '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": "'
    + ",".join(colour for colour, _ in CHART_COLOURS)
    + '"}}}}%%'
)


def _mermaid(depths: list[int], curves: list[RuleDrift], first: int) -> str:
    """The chart, made only of fixed words, numbers and the labels `rule N`."""
    categories = ", ".join(f'"{depth}"' for depth in depths)
    lines = [
        "```mermaid",
        _THEME,
        "xychart-beta",
        '    title "Pass rate by depth"',
        f'    x-axis "after turn" [{categories}]',
        '    y-axis "pass rate (%)" 0 --> 100',
    ]
    for index, curve in enumerate(curves, first):
        values = ", ".join(_chart_value(cell.rate) for cell in curve.cells)
        lines.append(f'    line "rule {index}" [{values}]')
    return "\n".join([*lines, "```"]) + "\n\n"


def _chart_value(rate: PassRate) -> str:
    return f"{rate.rate * 100:.1f}".removesuffix(".0")


def _chart_item(number: int, index: int, curve: RuleDrift) -> str:
    """`- **rule 3** (green): <code>id</code> (critical): 100% → 45%`: `index` is the line's
    place in its chart, which sets its colour."""
    values = " → ".join(_percent(cell.rate) for cell in curve.cells)
    name = f"<code>{markdown(curve.rule.id, CHART_NAME_MAX_CHARS)}</code>"
    colour = CHART_COLOURS[index % len(CHART_COLOURS)][1]
    return f"- **rule {number}** ({colour}): {name} ({curve.rule.severity}): {values}\n"


def _names(curves: list[RuleDrift]) -> str:
    names = [f"<code>{markdown(c.rule.id, CHART_NAME_MAX_CHARS)}</code>" for c in curves]
    shown = ", ".join(names[:CHART_MAX_RULES])
    left = len(names) - CHART_MAX_RULES
    return shown + (f" and {left} more" if left > 0 else "")


def _all(result: RunResult) -> _Table:
    """Every probe; a column of each probe's tool calls when the suite offers tools."""
    tools = any(p.tools is not None for p in result.probes)
    rows = [
        _row(
            [
                *_cells(s.scenario.id, p),
                f"{p.duration_ms / 1000:.2f} s",
                *(
                    ["<br>".join(map(markdown, tool_lines(p, terminal_safe))) or "—"]
                    if tools
                    else []
                ),
            ]
        )
        for s in result.scenarios
        for p in s.probes
    ]
    columns = ["Scenario", "Probe", "Rule", "Severity", "After turn", "Result", "Duration"]
    columns += ["Tool calls"] if tools else []
    table = _Table("", columns, rows, "probes")
    table.opening = f"<details>\n<summary>All {len(rows)} probes</summary>\n\n"
    table.closing = "</details>\n\n"
    return table


def _suspicious(result: RunResult) -> _Table:
    rows = [
        _row([*_cells(s.scenario.id, p), "<br>".join(markdown(FLAG_TEXT[f]) for f in flags)])
        for s, p, flags in suspicious(result)
    ]
    columns = ["Scenario", "Probe", "Rule", "Severity", "After turn", "Result", "Why suspicious"]
    title = (
        "### Suspicious passes\n\n"
        "These probes passed on answers that show little; the pass counts, but read them "
        "(`--include-responses`).\n\n"
    )
    return _Table(title, columns, rows, "suspicious passes")


def _searches(result: RunResult) -> _Table:
    """Each searched breaking depth: where its search ended (`findings.search_line`)."""
    rows = [
        _row(
            [
                markdown(scenario),
                markdown(search_id),
                markdown(search.rule),
                f"{search.low}–{search.high}",
                markdown(line),
            ]
        )
        for scenario, search_id, search, line in search_lines(result)
    ]
    columns = ["Scenario", "Probe", "Rule", "Searched", "Breaking depth"]
    title = (
        "### Breaking depths\n\nEach search decided the rule at both bounds, then at the middle "
        "of the interval left, until one turn apart; every depth it asked is in the grid.\n\n"
    )
    return _Table(title, columns, rows, "searches")


_SECTIONS: dict[str, Callable[[RunResult], _Section]] = {
    "chart": _chart,
    "searches": _searches,
    "variants": _variants,
    "grid": _grid,
    "failed": _failed,
    "suspicious": _suspicious,
    "all": _all,
}


def _cells(scenario: str, result: ProbeResult) -> list[str]:
    probe = result.probe
    return [
        markdown(scenario),
        markdown(probe.id),
        markdown(probe.rule.id),
        probe.rule.severity,
        str(probe.after_turn),
        f"{_SYMBOLS[result.status]} {result.status}{_identical(result)}",
    ]


def _identical(result: ProbeResult) -> str:
    """`<br>5 runs, all identical (no error bound)` for a probe whose runs were identical."""
    return f"<br>{len(result.runs)} runs, {IDENTICAL_RUNS}" if result.identical_runs else ""


def _rerun(config: str, result: RunResult, overrides: Sequence[str]) -> str:
    command = rerun_command(config, result, overrides)
    if command is None:
        return ""
    failed = sum(1 for s in result.scenarios if s.status != "passed")
    note = ""
    if failed > RERUN_MAX_SCENARIOS:
        note = f"(the first {RERUN_MAX_SCENARIOS} of the {failed} scenarios that did not pass)\n\n"
    note += _auto_note(result)
    docker = docker_command(command)
    fence = "`" * max([3, *(len(run) + 1 for run in re.findall("`+", command))])
    return (
        f"### Reproduce\n\n{note}{fence}sh\n{command}\n"
        f"# or with nothing installed but Docker, from the repository's root:\n{docker}\n{fence}\n"
    )


def _auto_note(result: RunResult) -> str:
    """Under `--repeat auto`, what selecting fewer scenarios changes: the test's bounds are
    split over the probes selected, so its thresholds and cap are not this run's."""
    if result.policy.repeat != "auto":
        return ""
    failed = [s for s in result.scenarios if s.status != "passed"][:RERUN_MAX_SCENARIOS]
    selected = sum(len(s.probes) for s in failed)
    probes = result.policy.probes or len(result.probes)
    if selected >= probes:
        return ""
    return (
        f"`--repeat auto` splits its error rates over the probes a run selects: for the {selected} "
        f"probe(s) of these scenarios its thresholds and cap are those of {selected}, not of this "
        f"run's {probes}. Leave out `--scenario` to run this run's test again.\n\n"
    )


def docker_command(command: str) -> str:
    """`ruledrift run …` as `docker run` of this release's image (the same CLI inside)."""
    image = f"ghcr.io/ruledrift/action:{__version__}"
    mount = 'docker run --rm -v "$PWD:/work" -w /work'
    return f"{mount} {image} {command.removeprefix('ruledrift ')}"


def rerun_command(config: str, result: RunResult, overrides: Sequence[str]) -> str | None:
    """`ruledrift run CONFIG --scenario …` for the scenarios that did not pass (the first 50),
    with the target `overrides`, the run's verdict options (`--repeat` and the rest) and its
    `--seed`: the same runs, the same paraphrases, the same verdicts."""
    failed = [s.scenario.id for s in result.scenarios if s.status != "passed"]
    if not failed:
        return None
    argv = ["ruledrift", "run", config]
    for scenario in failed[:RERUN_MAX_SCENARIOS]:
        argv += ["--scenario", scenario]
    argv += [*overrides, *policy_argv(result.policy)]
    if result.seed is not None:
        argv += ["--seed", str(result.seed)]
    return repair_surrogates(shlex.join(argv))


def markdown(text: str, limit: int = CELL_MAX_CHARS) -> str:
    """A table cell's text, inert in Markdown (see `text.markdown_inline`)."""
    return markdown_inline(text, limit)


def _code(text: str) -> str:
    return f"<code>{markdown(text)}</code>"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |\n"


def _size(text: str) -> int:
    return len(text.encode("utf-8"))
