"""The renderings of `ruledrift compare`: terminal text, Markdown (a job summary or a pull
request comment) and JSON. Pure: the labels come from `comparison.compare_runs`."""

from __future__ import annotations

import json
from typing import Any

from ruledrift.results.comparison import (
    RUNS_NEEDED_LIMIT,
    CellChange,
    ComparisonResult,
    ProbeChange,
)
from ruledrift.stats import Comparison, PassRate
from ruledrift.text import markdown_inline, repair_surrogates, terminal_safe

_ORDER = {"worse": 0, "too few runs to tell": 1, "no evidence of a change": 2, "better": 3}
_MARK = {"worse": "🔻", "better": "🔺", "no evidence of a change": "·", "too few runs to tell": "?"}
MARKDOWN_ROWS = 200


def _rates(c: Comparison) -> tuple[str, str, str]:
    """`28/30 (93.3%)`, `22/30 (73.3%)` and the drop in percentage points with its interval,
    `20 pp [1, 38]`: a drop is the difference of two rates, not a percentage of either."""
    base = f"{c.base.passes}/{c.base.runs} ({percent(c.base)})"
    head = f"{c.head.passes}/{c.head.runs} ({percent(c.head)})"
    drop = f"{points(c.drop)} pp [{points(c.low)}, {points(c.high)}]"
    return base, head, drop


def percent(rate: PassRate) -> str:
    """`80%`, `93.3%`; never `100%` or `0%` unless every run passed or none did."""
    if rate.passes * 100 % rate.runs == 0:
        return f"{rate.passes * 100 // rate.runs}%"
    return f"{min(max(rate.rate * 100, 0.1), 99.9):.1f}%"


def points(fraction: float) -> str:
    """A difference of two rates in percentage points, without the `pp`: `20`, `−15` (a true
    minus sign), `0.4` where a whole number would round a difference to 0, and never `-0`."""
    value = fraction * 100
    shown = f"{abs(value):.0f}"
    if shown == "0" and abs(value) >= 0.05:
        shown = f"{abs(value):.1f}"
    if shown in ("0", "0.0"):
        return "0"
    return ("−" if value < 0 else "") + shown


def _share(fraction: float) -> str:
    return f"{fraction * 100:g}%"


def _sorted(changes: tuple[ProbeChange, ...]) -> list[ProbeChange]:
    return sorted(changes, key=lambda ch: (_ORDER[ch.comparison.label], -ch.comparison.drop))


def how_many_runs(result: ComparisonResult) -> str:
    base, head = result.planned
    probes = len(result.probes)
    needed = (
        f"{result.runs_needed} runs"
        if result.runs_needed is not None
        else f"more than {RUNS_NEEDED_LIMIT:,} runs"
    )
    return (
        f"Telling a drop from {_share(base)} to {_share(head)} with 80% power in this comparison "
        f"of {probes} probe(s) takes {needed} per side (exact one-sided Fisher "
        f"test at 5% / {probes}, Holm's first step); a probe whose runs give it less power is "
        "'too few runs to tell'."
    )


def render_comparison_text(result: ComparisonResult) -> str:
    """The terminal view: the warnings, each probe (worst first), each rule × depth cell, the
    probes in one report only, the count of regressions and the runs a side this needs."""
    lines = [f"compared with base: {len(result.probes)} probe(s) in both reports"]
    lines += [f"warning: {terminal_safe(w)}" for w in result.warnings]
    for change in _sorted(result.probes):
        lines.append(_text_line(terminal_safe(change.key), change.comparison))
    if result.cells:
        lines.append(
            f"by rule and depth ({len(result.cells)} cell(s): each rule's runs at each afterTurn, "
            "Holm-adjusted over the cells):"
        )
        for cell in result.cells:
            where = f"{terminal_safe(cell.rule)} after turn {cell.after_turn}"
            lines.append(_text_line(where, cell.comparison))
    if result.added:
        lines.append(f"only in head: {terminal_safe(', '.join(result.added))}")
    if result.removed:
        lines.append(f"only in base: {terminal_safe(', '.join(result.removed))}")
    regressions = len(result.regressions)
    lines.append(
        f"{regressions} probe(s) significantly worse (one-sided Fisher, Holm-adjusted over "
        f"{len(result.probes)} probe(s), 5%)"
    )
    lines.append(how_many_runs(result))
    return "\n".join(lines) + "\n"


def _text_line(what: str, c: Comparison) -> str:
    """`  🔻 WHAT  base 28/30 (93.3%)  head 22/30 (73.3%)  drop 20 pp [1, 38]  p=0.12  worse`."""
    base, head, drop = _rates(c)
    p = f"p={c.worse_adjusted:.3g}"
    return f"  {_MARK[c.label]} {what}  base {base}  head {head}  drop {drop}  {p}  {c.label}"


def render_comparison_markdown(result: ComparisonResult) -> str:
    """The comparison as GitHub Flavored Markdown, for a job summary or a pull request comment.
    Every block (heading, each warning's quote, each table, each note) is separated from the
    next by a blank line: a table row right after a quote would be read as part of the quote."""
    worse = len(result.regressions)
    head = "🔻 worse than base" if worse else "no probe significantly worse than base"
    blocks = [f"## RuleDrift compared with base: {head}"]
    blocks += [f"> **Warning:** {markdown_inline(w, 500)}" for w in result.warnings]
    blocks.append(_probe_table(result))
    if len(result.probes) > MARKDOWN_ROWS:
        blocks.append(f"_{len(result.probes) - MARKDOWN_ROWS} more probes in the JSON output._")
    if result.cells:
        blocks += ["### Rule × depth", _cell_table(result)]
        if len(result.cells) > MARKDOWN_ROWS:
            blocks.append(f"_{len(result.cells) - MARKDOWN_ROWS} more cells in the JSON output._")
    if result.added:
        blocks.append(f"Only in head: {markdown_inline(', '.join(result.added), 2000)}")
    if result.removed:
        blocks.append(f"Only in base: {markdown_inline(', '.join(result.removed), 2000)}")
    blocks.append(
        f'p-values are one-sided Fisher exact tests for "head is worse", Holm-adjusted over the '
        f"{len(result.probes)} probes compared (the rule × depth cells apart, over the cells). "
        f"Drops are in percentage points (pp): base − head. {how_many_runs(result)}"
    )
    return "\n\n".join(blocks) + "\n"


def _probe_table(result: ComparisonResult) -> str:
    lines = [
        "| | Probe | Rule | After turn | Base | Head | Drop [95% interval] | p (Holm) | Change |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for change in _sorted(result.probes)[:MARKDOWN_ROWS]:
        c = change.comparison
        base, head_rate, drop = _rates(c)
        cells = [
            _MARK[c.label],
            markdown_inline(change.key, 200),
            markdown_inline(change.rule, 200),
            str(change.after_turn),
            base,
            head_rate,
            drop,
            f"{c.worse_adjusted:.3g}",
            c.label,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _cell_table(result: ComparisonResult) -> str:
    lines = [
        "| Rule | After turn | Base | Head | Drop [95% interval] | p (Holm) | Change |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for cell in result.cells[:MARKDOWN_ROWS]:
        c = cell.comparison
        base, head_rate, drop = _rates(c)
        rule = markdown_inline(cell.rule, 200)
        p = f"{c.worse_adjusted:.3g}"
        label = f"{_MARK[c.label]} {c.label}"
        lines.append(
            f"| {rule} | {cell.after_turn} | {base} | {head_rate} | {drop} | {p} | {label} |"
        )
    return "\n".join(lines)


def _comparison(c: Comparison) -> dict[str, Any]:
    return {
        "base": {"passes": c.base.passes, "runs": c.base.runs},
        "head": {"passes": c.head.passes, "runs": c.head.runs},
        "drop": round(c.drop, 6),
        "low": round(c.low, 6),
        "high": round(c.high, 6),
        "worseP": c.worse_p,
        "worsePAdjusted": c.worse_adjusted,
        "betterPAdjusted": c.better_adjusted,
        "label": c.label,
    }


def render_comparison_json(result: ComparisonResult) -> bytes:
    document = {
        "base": {"config": str(result.base.suite.path), "configSha256": result.base.suite.sha256},
        "head": {"config": str(result.head.suite.path), "configSha256": result.head.suite.sha256},
        "warnings": list(result.warnings),
        "probes": [
            {
                "probe": ch.key,
                "rule": ch.rule,
                "afterTurn": ch.after_turn,
                **_comparison(ch.comparison),
            }
            for ch in result.probes
        ],
        "cells": [_cell(cell) for cell in result.cells],
        "onlyInHead": list(result.added),
        "onlyInBase": list(result.removed),
        "regressions": len(result.regressions),
        "runsPerSideNeeded": result.runs_needed,
        "plannedDrop": {"from": result.planned[0], "to": result.planned[1]},
    }
    text = json.dumps(document, indent=2, ensure_ascii=False)
    # lone surrogates (in ids of a result not read from a report) cannot be encoded as UTF-8
    return (repair_surrogates(text) + "\n").encode("utf-8")


def _cell(cell: CellChange) -> dict[str, Any]:
    return {"rule": cell.rule, "afterTurn": cell.after_turn, **_comparison(cell.comparison)}
