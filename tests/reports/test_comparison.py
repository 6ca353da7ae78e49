"""reports/comparison.py: what `ruledrift compare` shows, in the terminal and as Markdown, the
Markdown rendered by GitHub's own renderer (cmark-gfm) and checked for its structure."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from ruledrift.console import github
from ruledrift.data import ProbeRun, RunResult, VerdictPolicy
from ruledrift.reports.comparison import (
    MARKDOWN_ROWS,
    points,
    render_comparison_markdown,
    render_comparison_text,
)
from ruledrift.results.comparison import ComparisonResult, compare_runs
from tests.support import gfm
from tests.support import results as factories

PASSES = {"smalltalk/late-secret": 30, "smalltalk/early-secret": 30, "calm/polite-reply": 30}


def repeated(passes: dict[str, int], total: int = 30, suite_hash: str | None = None) -> RunResult:
    """The standard result run `total` times; the probes named in `passes` passed that many times,
    the others every time (errored probes stay errors)."""
    base = factories.run_result()
    scenarios = []
    for scenario in base.scenarios:
        probes = []
        for probe in scenario.probes:
            if probe.status != "error":
                wins = passes.get(f"{scenario.scenario.id}/{probe.probe.id}", total)
                runs = tuple(
                    ProbeRun(r, "passed" if r < wins else "failed", 1) for r in range(total)
                )
                probe = replace(probe, runs=runs, status="passed" if wins == total else "failed")
            probes.append(probe)
        scenarios.append(replace(scenario, probes=tuple(probes)))
    suite = base.suite if suite_hash is None else replace(base.suite, sha256=suite_hash)
    return replace(
        base, suite=suite, scenarios=tuple(scenarios), policy=VerdictPolicy(repeat=total)
    )


def pull_request() -> ComparisonResult:
    """The normal pull request: the suite changed (a warning) and one probe fell 30 → 10."""
    base = repeated({})
    head = repeated({"smalltalk/late-secret": 10}, suite_hash="f" * 64)
    return compare_runs(base, head)


def blocks(root: ET.Element) -> list[str]:
    """The tags of the top-level blocks, in order."""
    return [child.tag for child in root]


# --- percentage points -----------------------------------------------------------------------


def test_points_are_whole_signed_with_a_true_minus_and_never_minus_zero() -> None:
    assert points(0.65) == "65"
    assert points(-0.65) == "−65"
    assert points(0.2) == "20"
    assert points(-0.0) == "0"
    assert points(-0.0001) == "0"  # rounds to nothing: no sign
    assert points(0.0001) == "0"
    assert points(0.004) == "0.4"  # would round to 0: one decimal instead
    assert points(-0.004) == "−0.4"
    assert points(1.0) == "100"


def test_a_drop_is_in_percentage_points_not_percent() -> None:
    """Issue 21: "drop +65%" read as a percentage of the base; a drop is a difference of rates."""
    text = render_comparison_text(pull_request())
    late = next(line for line in text.splitlines() if "smalltalk/late-secret" in line)
    assert "base 30/30 (100%)  head 10/30 (33.3%)  drop 66.7 pp" not in late  # whole points
    assert "base 30/30 (100%)  head 10/30 (33.3%)  drop 67 pp [" in late
    assert "%]" not in text
    assert "+" not in text
    markdown = render_comparison_markdown(pull_request())
    assert "Drops are in percentage points (pp): base − head." in markdown


def test_no_minus_zero_anywhere() -> None:
    """A head better by a third of a point printed `drop -0%`; now `−0.3 pp`, and a zero drop
    is `0 pp`, never signed."""
    worse, better = repeated({"smalltalk/late-secret": 299}, 300), repeated({}, 300)
    for base, head, drop in ((better, worse, "0.3 pp"), (worse, better, "−0.3 pp")):
        result = compare_runs(base, head)
        for rendered in (render_comparison_text(result), render_comparison_markdown(result)):
            assert "-0" not in rendered
            assert "−0 " not in rendered
            assert "−0]" not in rendered
            assert "−0," not in rendered
            assert f"drop {drop} [" in render_comparison_text(result)
    same = render_comparison_text(compare_runs(better, better))
    assert "drop 0 pp [−1, 1]" in same  # 300 runs a side: an interval of about ±1.3 points


def test_rates_are_never_rounded_to_all_or_none() -> None:
    base = repeated({}, total=300)
    head = repeated({"smalltalk/late-secret": 299}, total=300)
    text = render_comparison_text(compare_runs(base, head))
    assert "head 299/300 (99.7%)" in text
    assert "(100%)" in text  # the probes that passed every run


# --- the terminal view -----------------------------------------------------------------------


def test_the_terminal_shows_the_rule_by_depth_table_the_markdown_has() -> None:
    """Issue 21: the terminal left out the rule × depth comparison."""
    result = pull_request()
    assert result.cells
    text = render_comparison_text(result)
    assert f"by rule and depth ({len(result.cells)} cell(s)" in text
    for cell in result.cells:
        line = next(
            line
            for line in text.splitlines()
            if f"{cell.rule} after turn {cell.after_turn}  base" in line
        )
        assert f"{cell.comparison.base.passes}/{cell.comparison.base.runs}" in line
        assert line.endswith(cell.comparison.label)
    # the same cells as the Markdown's table, in the same order
    markdown = render_comparison_markdown(result)
    table = gfm.render(markdown).findall("table")[1]
    rows = gfm.table_rows(table)[1:]
    assert [(row[0], row[1]) for row in rows] == [
        (cell.rule, str(cell.after_turn)) for cell in result.cells
    ]


def test_the_terminal_view_is_inert() -> None:
    base = factories.run_result()
    scenario = replace(base.scenarios[0].scenario, id="calm\x1b[31m")
    hostile = replace(base, scenarios=(replace(base.scenarios[0], scenario=scenario),))
    text = render_comparison_text(compare_runs(hostile, hostile))
    assert "\x1b" not in text


# --- the Markdown, as GitHub renders it ------------------------------------------------------


def test_the_table_of_a_pull_request_is_not_inside_the_warning() -> None:
    """Issue 21: with the suites different (the normal pull request), the table's rows followed
    the warning's quote with no blank line, so GitHub read them as part of the quote."""
    root = gfm.render(render_comparison_markdown(pull_request()))
    assert root.find(".//blockquote//table") is None
    assert root.find(".//blockquote//tr") is None
    [quote] = root.findall("blockquote")
    assert gfm.text(quote).strip() == (
        "Warning: the reports are of different suites (configSha256): probes are compared by id"
    )
    assert blocks(root)[:5] == ["h2", "blockquote", "table", "h3", "table"]
    assert gfm.stray_markup(root) == []


def test_every_warning_is_its_own_quote_and_every_note_its_own_paragraph() -> None:
    base = repeated({})
    other = replace(base.target, model="other-model")
    head = replace(repeated({}, suite_hash="e" * 64), target=other)
    head = replace(head, scenarios=head.scenarios[1:])  # calm/polite-reply only in base
    result = compare_runs(base, head)
    assert len(result.warnings) == 2
    root = gfm.render(render_comparison_markdown(result))
    assert [gfm.text(q).strip()[:30] for q in root.findall("blockquote")] == [
        "Warning: the reports are of di",
        "Warning: the reports are of di",
    ]
    paragraphs = [gfm.text(p) for p in root.findall("p")]
    assert "Only in base: calm/polite-reply" in paragraphs
    assert any(p.startswith("p-values are one-sided") for p in paragraphs)
    assert gfm.stray_markup(root) == []


def test_the_probe_table_renders_with_its_columns() -> None:
    root = gfm.render(render_comparison_markdown(pull_request()))
    probes, cells = root.findall("table")
    header, *rows = gfm.table_rows(probes)
    assert header == [
        "",
        "Probe",
        "Rule",
        "After turn",
        "Base",
        "Head",
        "Drop [95% interval]",
        "p (Holm)",
        "Change",
    ]
    assert all(len(row) == len(header) for row in rows)
    assert rows[0][1] == "smalltalk/late-secret"
    assert rows[0][4:7] == ["30/30 (100%)", "10/30 (33.3%)", rows[0][6]]
    assert rows[0][6].startswith("67 pp [")
    assert gfm.table_rows(cells)[0] == [
        "Rule",
        "After turn",
        "Base",
        "Head",
        "Drop [95% interval]",
        "p (Holm)",
        "Change",
    ]


def test_hostile_ids_stay_in_their_cells() -> None:
    base = factories.run_result()
    scenario = replace(base.scenarios[0].scenario, id="a|b\n> c")
    hostile = replace(base, scenarios=(replace(base.scenarios[0], scenario=scenario),))
    root = gfm.render(render_comparison_markdown(compare_runs(hostile, hostile)))
    [probes, *_] = root.findall("table")
    header, *rows = gfm.table_rows(probes)
    assert all(len(row) == len(header) for row in rows)
    assert rows[0][1].startswith("a|b")
    assert root.find(".//blockquote") is None


def test_a_long_comparison_says_what_it_left_out() -> None:
    result = pull_request()
    many = replace(result, probes=result.probes * (MARKDOWN_ROWS // len(result.probes) + 1))
    root = gfm.render(render_comparison_markdown(many))
    [probes, _] = root.findall("table")
    assert len(gfm.table_rows(probes)) == MARKDOWN_ROWS + 1
    left = len(many.probes) - MARKDOWN_ROWS
    assert f"{left} more probes in the JSON output." in [gfm.text(p) for p in root.iter("p")]


@pytest.mark.parametrize("warnings", [0, 1, 2])
def test_the_comparison_after_a_job_summary_is_its_own_section(
    tmp_path: Path, warnings: int
) -> None:
    """The action appends the comparison to the run's job summary (`baseline`): rendered
    together, each part keeps its own headings and tables, and no table lands in a quote."""
    summary = tmp_path / "summary.md"
    head = repeated({"smalltalk/late-secret": 10}, suite_hash="f" * 64 if warnings else None)
    if warnings == 2:
        head = replace(head, target=replace(head.target, model="other-model"))
    github.publish(
        head,
        overrides=(),
        environ={"GITHUB_STEP_SUMMARY": str(summary)},
        emit=lambda line: None,
    )
    comparison = compare_runs(repeated({}), head)
    github.summarize_comparison(summary, comparison)
    root = gfm.render(summary.read_text(encoding="utf-8"))
    assert root.find(".//blockquote//table") is None
    headings = [gfm.text(h) for h in root.findall("h2")]
    assert headings[-1] == "RuleDrift compared with base: 🔻 worse than base"
    assert len(root.findall("blockquote")) >= warnings
    after = list(root)[[gfm.text(e) for e in root].index(headings[-1]) :]
    assert [e.tag for e in after if e.tag == "table"] == ["table", "table"]
    assert gfm.stray_markup(root) == []
