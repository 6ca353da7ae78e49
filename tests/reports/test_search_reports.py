"""A searched breaking depth as every report renders it: the same sentence (`findings.
search_line`) in the terminal, the HTML report, the job summary (rendered by GitHub's cmark-gfm)
and JUnit; and text from a saved report (ids anyone may have edited) inert in each."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET

import pytest

from ruledrift.data import RunResult, SearchResult
from ruledrift.reports.html import render_html
from ruledrift.reports.job_summary import render_summary
from ruledrift.reports.junit import render_junit
from ruledrift.reports.terminal import TerminalOptions, render_terminal
from ruledrift.results.findings import search_line
from tests.support import gfm
from tests.support import results as factories

HOSTILE = "x|y <script>alert(1)</script> \x1b[31m ::error::forged"


def with_search(search: SearchResult) -> RunResult:
    base = factories.run_result()
    first = dataclasses.replace(base.scenarios[0], searches=(search,))
    return dataclasses.replace(base, scenarios=(first, *base.scenarios[1:]))


FOUND = SearchResult("deep", "be-polite", 0, 64, "found", 23, 24, None, (0, 16, 24, 64), 6012, None)


@pytest.mark.parametrize(
    ("search", "line"),
    [
        (
            FOUND,
            "holds through turn 23, drifted from turn 24; prompt tokens held at turn 23: 6,012, "
            "drifted at turn 24: not reported; asked at 0, 16, 24, 64",
        ),
        (
            SearchResult("d", "r", 0, 64, "inconclusive", 16, 24, 20, (0, 16, 20, 24, 64)),
            "between 16 and 24: inconclusive at 20; prompt tokens not reported; asked at 0, 16, "
            "20, 24, 64",
        ),
        (
            SearchResult("d", "r", 0, 64, "held", 64, None, None, (0, 64)),
            "holds through turn 64: no break between 0 and 64; prompt tokens not reported; asked "
            "at 0, 64",
        ),
        (
            SearchResult("d", "r", 2, 64, "broken-at-low", None, 2, None, (2, 64), None, 900),
            "drifted from turn 2 already, the lower bound: search lower; prompt tokens drifted at "
            "turn 2: 900; asked at 2, 64",
        ),
        (
            SearchResult("d", "r", 0, 6, "broken-at-low", None, 0, None, (0, 6), None, 336),
            "drifted at turn 0 already, before any turn: not kept at any depth searched; prompt "
            "tokens drifted at turn 0: 336; asked at 0, 6",
        ),
        (
            SearchResult("d", "r", 0, 8, "not-monotonic", 8, 0, None, (0, 8)),
            "not monotonic: drifted at turn 0 but held at turn 8; the search assumes drift does "
            "not come and go, so it stopped; prompt tokens not reported; asked at 0, 8",
        ),
        (
            SearchResult("d", "r", 0, 8, "incomplete", 0, 8, 4, (0, 4, 8)),
            "between 0 and 8: could not be decided at 4; prompt tokens not reported; asked at 0, "
            "4, 8",
        ),
        (
            SearchResult("d", "r", 0, 8, "unfinished", 0, None, 8, (0, 8)),
            "holds through turn 0; not finished at 8; prompt tokens not reported; asked at 0, 8",
        ),
        (
            SearchResult("d", "r", 0, 8, "inconclusive", None, None, 0, (0, 8)),
            "inconclusive at 0: no depth decided; prompt tokens not reported; asked at 0, 8",
        ),
    ],
)
def test_the_sentence_for_each_ending(search: SearchResult, line: str) -> None:
    assert search_line(search) == line


def test_every_report_shows_the_same_sentence() -> None:
    result = with_search(FOUND)
    line = search_line(FOUND)
    terminal = render_terminal(result, TerminalOptions())
    assert f"search calm/deep: {line}" in terminal
    page = render_html(result, include_responses=False).decode()
    assert line in page
    assert 'data-outcome="found"' in page
    summary = gfm.render(render_summary(result, "suite.json"))
    tables = [gfm.table_rows(t) for t in summary.iter("table")]
    rows = [
        rows
        for rows in tables
        if rows[0] == ["Scenario", "Probe", "Rule", "Searched", "Breaking depth"]
    ]
    assert rows == [[rows[0][0], ["calm", "deep", "be-polite", "0–64", line]]]
    junit = ET.fromstring(render_junit(result, include_responses=False))
    named = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert named["search.calm.deep"] == line


def test_text_from_a_saved_report_stays_inert_everywhere() -> None:
    result = with_search(dataclasses.replace(FOUND, id=HOSTILE, rule=HOSTILE))
    terminal = render_terminal(result, TerminalOptions())
    assert "\x1b" not in terminal
    page = render_html(result, include_responses=False).decode()
    assert "<script>" not in page
    summary = gfm.render(render_summary(result, "suite.json"))
    assert gfm.stray_markup(summary) == []
    assert not list(summary.iter("script"))
    (table,) = [t for t in summary.iter("table") if gfm.table_rows(t)[0][-1] == "Breaking depth"]
    assert len(gfm.table_rows(table)[1]) == 5  # the "|" did not split a cell
