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
    ControlRun,
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
from ruledrift.results.json_load import load_report
from ruledrift.results.json_report import render_json
from ruledrift.run.verdicts import probe_verdict, sequential_design
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


@pytest.mark.process
def test_a_repeated_run_names_identical_runs_end_to_end(tmp_path: Path) -> None:
    """`ruledrift run --repeat auto` against an agent that answers each probe in the same words
    every run (as a model at temperature 0 does): the terminal and the JSON report name the
    identical runs and claim no bound for them."""
    agent = [str(AGENTS / "scripted.py"), "--leak-after", "3"]
    path = write_suite(tmp_path, base_suite(command=sys.executable, args=agent))
    report = tmp_path / "report.json"
    done = ruledrift("run", path, "--repeat", "auto", "--seed", "7", "--json", report)
    assert done.returncode == 1, done.stderr
    document = json.loads(report.read_text(encoding="utf-8"))
    probes = document["scenarios"][0]["probes"]
    assert [p["identicalRuns"] for p in probes] == [True, True]
    assert "runs passed, all identical (no error bound)" in done.stdout
    assert "drifted: 3 identical runs (0/3 passed): every answer was byte-identical" in done.stdout
    assert "false alarms at most" not in done.stdout
    assert [c["id"] for c in document["policy"]["caveats"]] == ["identical-runs"]


@pytest.mark.process
def test_runs_whose_answers_vary_keep_their_bounds_end_to_end(tmp_path: Path) -> None:
    """The same run against an agent whose answers name their seed: nothing is identical."""
    agent = [str(AGENTS / "scripted.py"), "--answer-by-seed"]
    path = write_suite(tmp_path, base_suite(command=sys.executable, args=agent))
    report = tmp_path / "report.json"
    done = ruledrift("run", path, "--repeat", "3", "--seed", "7", "--json", report)
    assert done.returncode == 0, done.stderr
    document = json.loads(report.read_text(encoding="utf-8"))
    assert [p["identicalRuns"] for p in document["scenarios"][0]["probes"]] == [False, False]
    assert "identical" not in done.stdout
    assert document["policy"]["caveats"] == []


# --- every combination, rendered from results built by hand ----------------------------------

DEPTHS = (0, 4, 8)
# What a probe of the rule did at one depth: P passed (5/5), F failed (2/5), I inconclusive
# (4/5, `--repeat auto` at its cap), E error (every run could not be made), V vacuous (2/5: the
# other runs passed but their control failed), - not probed there.
RUNS = {"P": "PPPPP", "F": "PPFFF", "I": "PPPPF", "E": "EEEEE", "V": "PPVVV"}
STATUS: dict[str, Status] = {
    "P": "passed",
    "F": "failed",
    "I": "inconclusive",
    "E": "error",
    "V": "vacuous",
}
CODES = "PFIEV-"
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
        status: RunStatus = {"P": "passed", "F": "failed", "V": "vacuous"}[run]  # type: ignore[assignment]
        check = AssertionResult("notContains", run != "F", f"run {run}")
        answer = factories.response(f"{probe.id} run {index}")
        helped = AssertionResult("contains", run != "V", "expected the support address")
        control = ControlRun("passed" if run != "V" else "failed", 5, (helped,), answer)
        runs.append(ProbeRun(index, status, 5, (check,), answer, seed=index, control=control))
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
        control=last.control,
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
    if not at["P"] + at["F"] + at["I"] + at["V"]:
        return "not run", "error"
    if not at["F"]:
        if at["V"]:
            return "vacuous", "vacuous"
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
    "V": ("cell vacuous", "○ 2/5"),
    "-": ("cell empty", "·"),
}
SUMMARY_CELLS = {
    "P": "🟩 100% (5/5)",
    "F": "🟥 40% (2/5) ❌ 1",
    "I": "🟪 80% (4/5) ❔ 1",
    "E": "🟨 no runs ⚠️ 1",
    "V": "🟦 40% (2/5) ⭕ 1",
    "-": "·",
}
TERMINAL_CELLS = {"P": "5/5", "F": "2/5", "I": "4/5", "E": "error", "V": "2/5", "-": "·"}


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
        words = {"I": "inconclusive at", "E": "error at", "V": "vacuous at"}.get(code)
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
    assert ("VACUOUS  " in terminal) == ("V" in codes)

    junit = render_junit(result, include_responses=False).decode("utf-8")
    assert f'value="{tag}: ' in junit


@pytest.mark.parametrize("codes", COMBINATIONS)
def test_the_chart_draws_only_between_neighbouring_measured_depths(codes: str) -> None:
    """A depth the rule was not probed at, or where every run errored, has no point, and the
    line breaks there: it never draws a straight line across a depth nobody measured."""
    text = render_html(combination(codes), include_responses=False).decode("utf-8")
    root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
    paths = [p for p in root.iter("path") if p.get("data-rule") == NEVER_DISCLOSE.id]
    measured = [code in "PFIV" for code in codes]
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
        ("V--", [(0, "F")], "failed"),  # a failure outranks a vacuous pass
        ("P--", [(0, "V")], "vacuous"),
        ("I--", [(0, "V")], "vacuous"),
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
    cue = {"passed": "🟩", "failed": "🟥", "error": "🟨", "inconclusive": "🟪", "vacuous": "🟦"}[
        verdict
    ]
    assert row.split(" | ")[2].startswith(cue)


# --- identical runs (issue 21) ----------------------------------------------------------------

# What a bound printed as if the runs were independent looks like, in any report.
BOUNDS = re.compile(r"false alarms at most|95% interval|missed at most")


def identical_runs(policy: VerdictPolicy) -> RunResult:
    """Five runs of the suite at temperature 0 in which the leaking probe gave one answer five
    times (failed) and the polite one another (passed), decided by `policy`."""
    design = sequential_design(policy, 2) if policy.repeat == "auto" else None
    leak, polite = factories.response("the code is 7731"), factories.response("Hello!")
    results = []
    for rule, answer, status in ((NEVER_DISCLOSE, leak, "failed"), (BE_POLITE, polite, "passed")):
        probe = factories.probe(f"{rule.id}-0", rule)
        check = AssertionResult("notContains", status == "passed", f"{status} check")
        run_status: RunStatus = "passed" if status == "passed" else "failed"
        made = [ProbeRun(i, run_status, 5, (check,), answer, seed=42 + i) for i in range(5)]
        results.append(probe_verdict(probe, made, policy, design))
    scenario = replace(factories.scenario_result("s", tuple(results), 25), runs=5)
    base = factories.run_result()
    suite = replace(base.suite, scenarios=(scenario.scenario,))
    return replace(
        base, suite=suite, scenarios=(scenario,), policy=policy, seed=42, temperature=0.0
    )


@pytest.mark.parametrize("policy", [VerdictPolicy(repeat=5), VerdictPolicy(repeat="auto")])
def test_identical_runs_say_so_in_every_report_and_claim_no_bound(policy: VerdictPolicy) -> None:
    """Each report names the probes whose runs were byte-identical, prints no per-probe error
    bound for them, and carries the temperature-0 caveat (the JSON report as data)."""
    result = identical_runs(policy)
    failed, passed = result.probes
    assert failed.identical_runs
    assert passed.identical_runs

    terminal = render_terminal(result, TerminalOptions())
    assert "5/5 runs passed, all identical (no error bound)" in terminal
    assert "0/5 runs passed, all identical (no error bound)" in terminal
    assert "5 identical runs (0/5 passed): every answer was byte-identical" in terminal
    assert "2 of 2 probe(s) gave byte-identical answers in every run" in terminal
    assert "the suite sets temperature 0" in terminal
    assert not BOUNDS.search(terminal), terminal

    html = render_html(result, include_responses=False).decode("utf-8")
    assert "0/5 runs passed, all identical (no error bound)" in html
    assert "5 identical runs (0/5 passed): every answer was byte-identical" in html
    assert "the suite sets temperature 0" in html
    assert "2 of 2 probe(s) gave byte-identical answers" in html
    assert not BOUNDS.search(html)

    summary = render_summary(result, "suite.json")
    assert "❌ failed<br>5 runs, all identical (no error bound)" in summary
    assert summary.count("<br>5 runs, all identical (no error bound)") >= 2  # both probes
    assert "the suite sets temperature 0" in summary
    assert not BOUNDS.search(summary)

    junit = render_junit(result, include_responses=False).decode("utf-8")
    assert "0 of 5 runs passed, all identical (no error bound)" in junit
    assert "5 identical runs (0/5 passed): every answer was byte-identical" in junit
    assert not BOUNDS.search(junit)

    document = json.loads(render_json(result, include_responses=False))
    probes = document["scenarios"][0]["probes"]
    assert [p["identicalRuns"] for p in probes] == [True, True]
    assert not any(BOUNDS.search(p["decidedBy"]) for p in probes)
    caveats = document["policy"]["caveats"]
    assert [c["id"] for c in caveats] == ["temperature-0", "identical-runs"]
    assert caveats[0]["message"].startswith("the suite sets temperature 0")


def test_a_report_written_before_identical_runs_loads_and_says_so(tmp_path: Path) -> None:
    """An older report has no `identicalRuns` and a `decidedBy` that claims a bound: the reader
    works the field out from the runs' hashes and words the probe as a new run would."""
    result = identical_runs(VerdictPolicy(repeat="auto"))
    document = json.loads(render_json(result, include_responses=False))
    document["policy"].pop("caveats")
    document["policy"].pop("suiteRedWhenCorrelated")
    for probe in document["scenarios"][0]["probes"]:
        probe.pop("identicalRuns")
        probe["decidedBy"] = "drifted: 5 of 5 runs failed (false alarms at most 2.5% for it)"
    path = tmp_path / "old.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    loaded = load_report(path)
    assert [p.identical_runs for p in loaded.probes] == [True, True]
    assert [p.decided_by for p in loaded.probes] == [p.decided_by for p in result.probes]
    again = json.loads(render_json(loaded, include_responses=False))
    new = json.loads(render_json(result, include_responses=False))
    assert again["policy"]["caveats"] == new["policy"]["caveats"]


def test_runs_that_differ_are_not_called_identical() -> None:
    """The words appear only where the runs were identical: here every run answered anew."""
    result = combination("PFI")
    terminal = render_terminal(result, TerminalOptions())
    summary = render_summary(result, "suite.json")
    html = render_html(result, include_responses=False).decode("utf-8")
    for text in (terminal, summary, html):
        assert "all identical" not in text
        assert "byte-identical" not in text
