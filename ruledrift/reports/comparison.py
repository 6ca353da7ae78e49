"""The renderings of `ruledrift compare`: terminal text, Markdown (a job summary or a pull
request comment) and JSON. Pure: the labels come from `comparison.compare_runs`."""

from __future__ import annotations

import json
from typing import Any

from ruledrift.results.comparison import (
    CellChange,
    ComparisonResult,
    ProbeChange,
)
from ruledrift.stats import Comparison
from ruledrift.text import markdown_inline, repair_surrogates, terminal_safe

_ORDER = {"worse": 0, "too few runs to tell": 1, "no evidence of a change": 2, "better": 3}
_MARK = {"worse": "🔻", "better": "🔺", "no evidence of a change": "·", "too few runs to tell": "?"}
MARKDOWN_ROWS = 200


def _rates(c: Comparison) -> tuple[str, str, str]:
    base = f"{c.base.passes}/{c.base.runs} ({c.base.rate:.0%})"
    head = f"{c.head.passes}/{c.head.runs} ({c.head.rate:.0%})"
    drop = f"{c.drop:+.0%} [{c.low:+.0%}, {c.high:+.0%}]"
    return base, head, drop


def _sorted(changes: tuple[ProbeChange, ...]) -> list[ProbeChange]:
    return sorted(changes, key=lambda ch: (_ORDER[ch.comparison.label], -ch.comparison.drop))


def how_many_runs(result: ComparisonResult) -> str:
    base, head = result.planned
    probes = len(result.probes)
    return (
        f"Telling a drop from {base:.0%} to {head:.0%} with 80% power in this comparison of "
        f"{probes} probe(s) takes {result.runs_needed} runs per side (exact one-sided Fisher "
        f"test at 5% / {probes}, Holm's first step); a probe whose runs give it less power is "
        "'too few runs to tell'."
    )


def render_comparison_text(result: ComparisonResult) -> str:
    lines = [f"compared with base: {len(result.probes)} probe(s) in both reports"]
    lines += [f"warning: {w}" for w in result.warnings]
    for change in _sorted(result.probes):
        c = change.comparison
        base, head, drop = _rates(c)
        lines.append(
            f"  {_MARK[c.label]} {terminal_safe(change.key)}  base {base}  head {head}  "
            f"drop {drop}  p={c.worse_adjusted:.3g}  {c.label}"
        )
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


def render_comparison_markdown(result: ComparisonResult) -> str:
    worse = len(result.regressions)
    head = "🔻 worse than base" if worse else "no probe significantly worse than base"
    lines = [f"## RuleDrift compared with base: {head}", ""]
    lines += [f"> **Warning:** {markdown_inline(w, 500)}" for w in result.warnings]
    lines += [
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
    if len(result.probes) > MARKDOWN_ROWS:
        lines.append(f"\n_{len(result.probes) - MARKDOWN_ROWS} more probes in the JSON output._")
    lines.append("")
    if result.cells:
        lines += [
            "### Rule × depth",
            "",
            "| Rule | After turn | Base | Head | Drop [95% interval] | Change |",
            "|---|---:|---:|---:|---:|---|",
        ]
        for cell in result.cells[:MARKDOWN_ROWS]:
            base, head_rate, drop = _rates(cell.comparison)
            rule = markdown_inline(cell.rule, 200)
            label = cell.comparison.label
            lines.append(
                f"| {rule} | {cell.after_turn} | {base} | {head_rate} | {drop} | {label} |"
            )
        lines.append("")
    if result.added:
        lines.append(f"Only in head: {markdown_inline(', '.join(result.added), 2000)}")
    if result.removed:
        lines.append(f"Only in base: {markdown_inline(', '.join(result.removed), 2000)}")
    lines += [
        "",
        f'p-values are one-sided Fisher exact tests for "head is worse", Holm-adjusted over the '
        f"{len(result.probes)} probes compared. {how_many_runs(result)}",
        "",
    ]
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
