"""Every report a person reads (the HTML page, the job summary, the terminal) on every
combination of verdicts a rule can have across its depths: kept (passed), broken (failed),
inconclusive, error, and not probed there. Each must render, and say the same thing in the
same words: the rule's story tag, never green unless every depth was kept, and each depth's
cell coloured by that depth's verdict."""

from __future__ import annotations

import itertools
import json
import re
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from ruledrift.data import (
    AssertionResult,
    ProbeResult,
    ProbeRun,
    Rule,
    RunResult,
    RunStatus,
    Status,
    VerdictPolicy,
)
from ruledrift.reports.html import render_html
from ruledrift.reports.job_summary import render_summary
from ruledrift.reports.junit import render_junit
from ruledrift.reports.terminal import TerminalOptions, render_terminal
from ruledrift.results.findings import rule_stories
from tests.support import AGENTS
from tests.support import results as factories
from tests.support.cli_process import ruledrift
from tests.support.results import BE_POLITE, NEVER_DISCLOSE
from tests.support.suites import base_suite, write_suite


@pytest.mark.process
def test_a_rule_whose_only_depth_is_inconclusive_renders_in_html(tmp_path: Path) -> None:
    """The crash of issue 21: `--repeat auto` with a cap that leaves the rule's only probed
    depth inconclusive stopped with an internal error (KeyError 'undecided') in the HTML grid."""
    suite = base_suite(
        command=sys.executable, args=[str(AGENTS / "scripted.py"), "--leak-runs", "2"]
    )
    scenario = suite["scenarios"][0]
    scenario["probes"] = scenario["probes"][:1]
    path = write_suite(tmp_path, suite)
    page, report = tmp_path / "report.html", tmp_path / "report.json"
    done = ruledrift(
        "run", path, "--repeat", "auto", "--max-repeat", "5", "--html", page, "--json", report
    )
    assert done.returncode == 1, done.stderr  # inconclusive fails the run; 4 is a bug
    assert "internal error" not in done.stderr
    [probe] = json.loads(report.read_text(encoding="utf-8"))["scenarios"][0]["probes"]
    rate = probe["passRate"]
    assert (probe["status"], rate["passes"], rate["runs"]) == ("inconclusive", 4, 5)
    html = page.read_text(encoding="utf-8")
    assert 'class="badge inconclusive" data-story="undecided">inconclusive</span>' in html
    assert "rule never-disclose-secret  inconclusive at every depth (0)" in done.stdout
    assert "UNDEC" not in done.stdout


# --- every combination, rendered from results built by hand ----------------------------------

DEPTHS = (0, 4, 8)
# What a probe of the rule did at one depth: P passed (5/5), F failed (2/5), I inconclusive
# (4/5, `--repeat auto` at its cap), E error (every run could not be made), - not probed there.
RUNS = {"P": "PPPPP", "F": "PPFFF", "I": "PPPPF", "E": "EEEEE"}
STATUS: dict[str, Status] = {"P": "passed", "F": "failed", "I": "inconclusive", "E": "error"}
CODES = "PFIE-"
COMBINATIONS = [
    "".join(codes) for codes in itertools.product(CODES, repeat=len(DEPTHS)) if codes != ("-",) * 3
]
POLICY = VerdictPolicy(repeat="auto", max_repeat=5)


def probe_at(rule: Rule, depth: int, code: str, name: str = "") -> ProbeResult:
    probe = replace(factories.probe(f"{rule.id}-{depth}{name}", rule), after_turn=depth)
    runs = []
    for index, run in enumerate(RUNS[code]):
        if run == "E":
            runs.append(ProbeRun(index, "error", 5, error="connection refused", seed=index))
            continue
        status: RunStatus = "passed" if run == "P" else "failed"
        check = AssertionResult("notContains", run == "P", f"run {run}")
        answer = factories.response(f"{probe.id} run {index}")
        runs.append(ProbeRun(index, status, 5, (check,), answer, seed=index))
    last = runs[-1]
    return ProbeResult(
        probe,
        STATUS[code],
        25,
        last.assertions,
        last.response,
        "connection refused" if code == "E" else None,
        tuple(runs),
        "decided by the test" if code != "P" else None,
    )


def combination(codes: str, extra: Sequence[tuple[int, str]] = ()) -> RunResult:
    """The rule never-disclose-secret as `codes` say at each depth (plus `extra` probes), beside
    be-polite, passed at every depth (so every depth has a column)."""
    probes = [probe_at(BE_POLITE, depth, "P") for depth in DEPTHS]
    probes += [
        probe_at(NEVER_DISCLOSE, depth, code)
        for depth, code in zip(DEPTHS, codes, strict=True)
        if code != "-"
    ]
    probes += [probe_at(NEVER_DISCLOSE, depth, code, "-b") for depth, code in extra]
    scenario = replace(factories.scenario_result("s", tuple(probes), 5 * len(probes)), runs=5)
    base = factories.run_result()
    suite = replace(base.suite, scenarios=(scenario.scenario,))
    return replace(base, suite=suite, scenarios=(scenario,), policy=POLICY)


def expected_tag(codes: str) -> tuple[str, Status]:
    """The story's tag and colour, worked out here without findings.py."""
    at = {code: [d for d, c in zip(DEPTHS, codes, strict=True) if c == code] for code in CODES}
    if not at["P"] + at["F"] + at["I"]:
        return "not run", "error"
    if not at["F"]:
        if at["I"]:
            return "inconclusive", "inconclusive"
        return ("incomplete", "error") if at["E"] else ("held", "passed")
    if any(d > at["F"][0] for d in at["P"]):
        return "not monotonic", "failed"
    if any(d < at["F"][0] for d in at["P"]):
        return "broken later", "failed"
    return "never obeyed", "failed"


HTML_CELLS = {
    "P": ("cell passed", "✓ 5/5"),
    "F": ("cell failed", "✗ 2/5"),
    "I": ("cell inconclusive", "? 4/5"),
    "E": ("cell error", "⚠ error"),
    "-": ("cell empty", "·"),
}
SUMMARY_CELLS = {
    "P": "🟩 100% (5/5)",
    "F": "🟥 40% (2/5) ❌ 1",
    "I": "🟪 80% (4/5) ❔ 1",
    "E": "🟨 no runs ⚠️ 1",
    "-": "·",
}
TERMINAL_CELLS = {"P": "5/5", "F": "2/5", "I": "4/5", "E": "error", "-": "·"}


def html_row(result: RunResult) -> tuple[list[tuple[str | None, str]], ET.Element, str]:
    text = render_html(result, include_responses=False).decode("utf-8")
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))  # well-formed, or it fails
    [row] = [tr for tr in root.iter("tr") if tr.get("data-rule") == NEVER_DISCLOSE.id]
    cells = [(td.get("class"), "".join(td.itertext())) for td in row.iter("td")]
    story = row.findall("td")[-1]
    return cells[:-1], story[0], "".join(story.itertext())


@pytest.mark.parametrize("codes", COMBINATIONS)
def test_every_combination_renders_and_says_the_same_thing_everywhere(codes: str) -> None:
    result = combination(codes)
    [story] = [s for s in rule_stories(result) if s.rule.id == NEVER_DISCLOSE.id]
    tag, colour = expected_tag(codes)
    assert (story.tag, story.verdict) == (tag, colour)
    for code, depth in zip(codes, DEPTHS, strict=True):  # the line names every depth's fate
        words = {"I": "inconclusive at", "E": "error at"}.get(code)
        if words and tag not in ("not run", "inconclusive"):
            assert re.search(rf"{words} [\d, ]*\b{depth}\b", story.line), story.line
    assert "undecided" not in story.line

    cells, pill, story_text = html_row(result)
    assert cells == [HTML_CELLS[code] for code in codes]
    assert (pill.get("class"), pill.text) == (f"badge {colour}", tag)
    assert story_text == f"{tag} {story.line}"

    summary = render_summary(result, "suite.json")
    [row] = [line for line in summary.splitlines() if line.startswith(f"| {NEVER_DISCLOSE.id} |")]
    assert row.split(" | ")[2:-1] == [SUMMARY_CELLS[code] for code in codes]
    assert row.endswith(f" | {story.line} |")

    terminal = render_terminal(result, TerminalOptions())
    assert f"rule {NEVER_DISCLOSE.id}  {story.line}\n" in terminal
    [grid] = [line for line in terminal.splitlines() if line.startswith(f"  {NEVER_DISCLOSE.id} ")]
    assert grid.split()[1:] == [TERMINAL_CELLS[code] for code in codes]
    assert "UNDEC" not in terminal
    assert ("INCONCLUSIVE  " in terminal) == ("I" in codes)

    junit = render_junit(result, include_responses=False).decode("utf-8")
    assert f'value="{tag}: ' in junit


@pytest.mark.parametrize("codes", COMBINATIONS)
def test_the_chart_draws_only_between_neighbouring_measured_depths(codes: str) -> None:
    """A depth the rule was not probed at, or where every run errored, has no point, and the
    line breaks there: it never draws a straight line across a depth nobody measured."""
    text = render_html(combination(codes), include_responses=False).decode("utf-8")
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
    paths = [p for p in root.iter("path") if p.get("data-rule") == NEVER_DISCLOSE.id]
    measured = [code in "PFI" for code in codes]
    if not any(measured):
        assert paths == []
        return
    [path] = paths
    moves = re.findall(r"[ML]", path.get("d", ""))
    assert moves.count("M") + moves.count("L") == sum(measured)
    joins = sum(a and b for a, b in itertools.pairwise(measured))
    assert moves.count("L") == joins


@pytest.mark.parametrize(
    ("codes", "extra", "verdict"),
    [
        ("P--", [(0, "E")], "error"),  # one probe passed, one errored: incomplete
        ("F--", [(0, "E")], "failed"),  # any failure is a broken rule, errors or not
        ("I--", [(0, "E")], "inconclusive"),
        ("P--", [(0, "I")], "inconclusive"),
        ("I--", [(0, "F")], "failed"),
    ],
)
def test_two_probes_at_one_depth_colour_the_cell_alike_everywhere(
    codes: str, extra: list[tuple[int, str]], verdict: Status
) -> None:
    result = combination(codes, extra)
    cells, _, _ = html_row(result)
    assert cells[0][0] == f"cell {verdict}"
    summary = render_summary(result, "suite.json")
    [row] = [line for line in summary.splitlines() if line.startswith(f"| {NEVER_DISCLOSE.id} |")]
    cue = {"passed": "🟩", "failed": "🟥", "error": "🟨", "inconclusive": "🟪"}[verdict]
    assert row.split(" | ")[2].startswith(cue)
