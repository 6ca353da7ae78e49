"""Tool calls as every report shows them (issue 22): each probe's calls (tool, round, the
arguments hashed unless the answers are included) in the terminal, JUnit, the HTML page and the
job summary (rendered by GitHub's cmark-gfm); a turn that ran out of tool rounds visibly so in
each; hostile tool names and problems inert everywhere; and annotations at a failed tool
assertion's own line. The JSON report's side is in tests/results/test_json_report.py."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest
import xmlschema

from ruledrift.boundary.files import write_atomic
from ruledrift.data import (
    AssertionResult,
    ControlRun,
    Location,
    ProbeRun,
    RunResult,
    ToolUse,
)
from ruledrift.reports import sentences
from ruledrift.reports.codequality import render_codequality
from ruledrift.reports.html import render_html
from ruledrift.reports.job_summary import render_summary
from ruledrift.reports.junit import render_junit
from ruledrift.reports.terminal import TerminalOptions, render_terminal
from ruledrift.reports.workflow_commands import render_annotations
from tests.support import gfm
from tests.support import results as factories
from tests.support.github_log import CONFIG, parse
from tests.support.results import (
    ARGUMENTS_LOOKUP,
    ARGUMENTS_MARKER,
    ARGUMENTS_REFUND,
    SECRET,
)

XSD = Path(__file__).resolve().parents[1] / "data" / "junit" / "jenkins-junit-10.xsd"
RAN_OUT = "ran out of tool rounds (maxToolRounds 4)"
LATE_LINE = (
    "lookup_order (round 1), refund (round 2, error result), refund (round 3, error result), "
    "refund (round 4, not run); ran out of tool rounds (maxToolRounds 4)"
)


def with_tools(probe_id: str, tools: ToolUse, result: RunResult | None = None) -> RunResult:
    """`result` (the tool run by default) with `tools` on probe `probe_id`."""
    base = result or factories.tool_result()
    scenarios = tuple(
        replace(
            s,
            probes=tuple(
                replace(p, tools=tools) if p.probe.id == probe_id else p for p in s.probes
            ),
        )
        for s in base.scenarios
    )
    return replace(base, scenarios=scenarios)


def hostile_failure() -> RunResult:
    """The failed probe (`late-secret`) ran out of rounds and called a hostile name with a
    hostile problem."""
    return with_tools("late-secret", factories.tool_use(ran_out=True, hostile=True))


def repeated_with_tools() -> RunResult:
    """`late-secret` ran three times: run 1 ran out of tool rounds and failed; run 0's control
    failed after calling tools (the probe is vacuous in that run)."""
    base = factories.tool_result()
    control = ControlRun(
        "failed",
        3,
        (AssertionResult("contains", False, 'expected the answer to contain "order"'),),
        factories.response("no"),
        tools=factories.tool_use(),
    )
    late = next(p for p in base.probes if p.probe.id == "late-secret")
    runs = (
        ProbeRun(0, "vacuous", 5, (), late.response, control=control, tools=factories.tool_use()),
        ProbeRun(1, "failed", 5, late.assertions, late.response, tools=late.tools),
        ProbeRun(2, "passed", 5, (), late.response, tools=factories.tool_use()),
    )
    return replace_runs(base, "late-secret", runs)


def replace_runs(result: RunResult, probe_id: str, runs: tuple[ProbeRun, ...]) -> RunResult:
    scenarios = tuple(
        replace(
            s,
            probes=tuple(replace(p, runs=runs) if p.probe.id == probe_id else p for p in s.probes),
        )
        for s in result.scenarios
    )
    return replace(result, scenarios=scenarios)


# --- the sentence every report shares -----------------------------------------------------------


def test_the_line_names_each_call_with_its_round_and_the_rounds() -> None:
    assert sentences.tool_calls_line(factories.tool_use()) == (
        "lookup_order (round 1), refund (round 2, error result); 3 rounds"
    )
    assert sentences.tool_calls_line(factories.tool_use(ran_out=True)) == LATE_LINE
    assert sentences.tool_calls_line(ToolUse((), 1)) == "no tool calls; 1 round"


def test_the_line_marks_invalid_arguments_and_escapes_names_as_asked() -> None:
    line = sentences.tool_calls_line(factories.tool_use(hostile=True), lambda n: f"<{n[:6]}>")
    assert line == (
        "<lookup> (round 1), <refund> (round 2, error result), <refund> (round 2, invalid "
        "arguments, unknown tool); 3 rounds"
    )


def test_the_line_counts_the_calls_past_ten() -> None:
    calls = tuple(factories.tool_call(1, f"t{i}", "{}") for i in range(13))
    line = sentences.tool_calls_line(ToolUse(calls, 2))
    assert line.endswith("t9 (round 1), and 3 more; 2 rounds")


def test_runs_that_ran_out_are_counted() -> None:
    late = next(p for p in repeated_with_tools().probes if p.probe.id == "late-secret")
    assert sentences.runs_ran_out(late) == "1 of 3 runs ran out of tool rounds"
    assert sentences.runs_ran_out(replace(late, runs=late.runs[::2])) is None


# --- the terminal --------------------------------------------------------------------------------


def test_the_terminal_shows_a_line_per_probe_that_made_calls() -> None:
    shown = render_terminal(factories.tool_result(), TerminalOptions())
    lines = shown.splitlines()
    assert (
        "         tools: lookup_order (round 1), refund (round 2, error result); 3 rounds" in lines
    )
    assert f"         tools: {LATE_LINE}" in lines
    assert sum(1 for line in lines if line.strip().startswith("tools: ")) == 4  # not the errors
    assert ARGUMENTS_MARKER not in shown


def test_the_terminal_says_how_many_runs_ran_out() -> None:
    lines = render_terminal(repeated_with_tools(), TerminalOptions()).splitlines()
    assert "         1 of 3 runs ran out of tool rounds" in lines


def test_a_vacuous_probe_shows_its_control_s_calls() -> None:
    base = factories.tool_result()
    control = ControlRun(
        "failed",
        3,
        (AssertionResult("contains", False, "no"),),
        factories.response("no"),
        tools=factories.tool_use(),
    )
    early = next(p for p in base.probes if p.probe.id == "early-secret")
    vacuous = replace(early, status="vacuous", control=control)
    result = replace(
        base,
        scenarios=tuple(
            replace(s, probes=tuple(vacuous if p is early else p for p in s.probes))
            for s in base.scenarios
        ),
    )
    lines = [line.strip() for line in render_terminal(result, TerminalOptions()).splitlines()]
    assert (
        "control tools: lookup_order (round 1), refund (round 2, error result); 3 rounds" in lines
    )


def test_hostile_names_and_problems_stay_inert_in_the_terminal() -> None:
    shown = render_terminal(hostile_failure(), TerminalOptions())
    assert "\x1b" not in shown
    assert "\u202e" not in shown
    [line] = [line for line in shown.splitlines() if "refund</testcase>" in line]
    assert line.strip().startswith("tools: ")  # the name's line break did not start a line
    assert "\\x1b[31mred\\x1b[0m ⏎ ::error::forged" in line
    assert line.endswith(RAN_OUT)


# --- JUnit ---------------------------------------------------------------------------------------


def junit_file(tmp_path: Path, result: RunResult, *, include_responses: bool) -> Path:
    path = tmp_path / "junit.xml"
    write_atomic(path, render_junit(result, include_responses=include_responses))
    return path


def cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {case.get("name", "").split(" ")[0]: case for case in root.iter("testcase")}


@pytest.mark.parametrize("include_responses", [False, True])
@pytest.mark.parametrize("build", [hostile_failure, repeated_with_tools])
def test_junit_with_tool_calls_validates_against_the_jenkins_xsd(
    tmp_path: Path, include_responses: bool, build: object
) -> None:
    assert callable(build)
    path = junit_file(tmp_path, build(), include_responses=include_responses)
    schema = xmlschema.XMLSchema(str(XSD))
    assert [str(e.reason) for e in schema.iter_errors(str(path))] == []


def test_junit_lists_each_call_in_system_out_hashed(tmp_path: Path) -> None:
    path = junit_file(tmp_path, factories.tool_result(), include_responses=False)
    out = cases(path)["polite-reply"].findtext("system-out")
    lookup, refund = (factories.tool_call(1, "x", a) for a in (ARGUMENTS_LOOKUP, ARGUMENTS_REFUND))
    assert out == (
        "tool calls: 2 over 3 rounds\n"
        f"round 1: lookup_order: arguments sha256 {lookup.sha256}, {lookup.length} characters: "
        "the mock's result\n"
        f"round 2: refund: arguments sha256 {refund.sha256}, {refund.length} characters: the "
        "mock's error result"
    )
    raw = path.read_text(encoding="utf-8")
    assert ARGUMENTS_MARKER not in raw
    assert SECRET not in raw
    assert cases(path)["slow"].find("system-out") is None  # no calls, no answer shown


def test_junit_shows_the_arguments_and_then_the_answer_with_the_flag(tmp_path: Path) -> None:
    path = junit_file(tmp_path, factories.tool_result(), include_responses=True)
    out = cases(path)["late-secret"].findtext("system-out") or ""
    assert f"\n  arguments: {ARGUMENTS_LOOKUP}\n" in out
    assert out.endswith(f"\n\nanswer:\n{factories.ANSWER_LEAK}")
    assert cases(path)["slow"].find("system-out") is None


def test_a_failure_body_names_the_calls_and_that_the_rounds_ran_out(tmp_path: Path) -> None:
    path = junit_file(tmp_path, factories.tool_result(), include_responses=False)
    case = cases(path)["late-secret"]
    body = case.findtext("failure") or ""
    assert f"\ntools: {LATE_LINE}\n" in body
    out = case.findtext("system-out") or ""
    assert out.startswith(f"tool calls: 4 over 4 rounds; {RAN_OUT}\n")
    assert out.endswith("characters: not run (the rounds ran out)")


def test_junit_marks_each_run_that_ran_out(tmp_path: Path) -> None:
    path = junit_file(tmp_path, repeated_with_tools(), include_responses=False)
    body = cases(path)["late-secret"].findtext("failure") or ""
    assert "\n1 of 3 runs ran out of tool rounds\n" in body
    assert re.search(r"\nrun 1: failed: .*\(ran out of tool rounds\)\n", body)


def test_hostile_names_and_problems_stay_on_their_line_in_junit(tmp_path: Path) -> None:
    path = junit_file(tmp_path, hostile_failure(), include_responses=False)
    out = cases(path)["late-secret"].findtext("system-out") or ""
    [line] = [line for line in out.splitlines() if "refund</testcase>" in line]
    assert line.startswith("round 2: refund</testcase>|`x`*y* \\x1b[31mred")
    assert "\\u202e" in line  # the bidi override shown, not applied
    assert line.endswith("**bold** \\x1b[2J\\x00")
    assert "invalid arguments: /amount: expected a number ::warning::forged ⏎ <script>" in line
    assert all(not line.startswith("::") for line in out.splitlines())


# --- the HTML page -------------------------------------------------------------------------------


def page(result: RunResult, *, include_responses: bool) -> ET.Element:
    text = render_html(result, include_responses=include_responses).decode("utf-8")
    return ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))


def card(root: ET.Element, probe_id: str) -> ET.Element:
    [found] = [a for a in root.iter("article") if a.get("data-probe") == probe_id]
    return found


def text_of(element: ET.Element) -> str:
    return "".join(element.itertext())


def test_a_failed_probe_s_card_has_its_calls_and_says_the_rounds_ran_out() -> None:
    root = page(factories.tool_result(), include_responses=False)
    [calls] = [d for d in card(root, "late-secret").iter("div") if d.get("class") == "tool-calls"]
    assert calls.get("data-ran-out") == "true"
    assert "4 call(s) over 4 rounds." in text_of(calls)
    assert f"{RAN_OUT.capitalize()}: the last answer still asked for calls." in text_of(calls)
    rows = [[text_of(td) for td in tr.iter("td")] for tr in calls.iter("tr")][1:]
    refund = factories.tool_call(1, "x", ARGUMENTS_REFUND)
    assert rows[1] == [
        "2",
        "refund",
        f"sha256 {refund.sha256}, {refund.length} characters",
        "the mock's error result",
        "yes",
    ]
    assert rows[3][3] == "not run (the rounds ran out)"


def test_the_all_probes_table_has_a_tool_calls_column() -> None:
    root = page(factories.tool_result(), include_responses=False)
    [table] = [t for t in root.iter("table") if t.get("class") == "all"]
    header = [text_of(th) for th in table.find("thead").iter("th")]  # type: ignore[union-attr]
    assert header[-1] == "tool calls"
    cells = {
        tr.get("data-probe"): text_of(list(tr)[-1])
        for tr in table.iter("tr")
        if tr.get("data-probe")
    }
    assert cells["late-secret"] == LATE_LINE
    assert cells["slow"] == "—"
    plain = page(factories.run_result(), include_responses=False)
    assert "tool calls" not in text_of(plain)  # a suite without tools: no column


def test_arguments_are_on_the_page_only_with_the_flag() -> None:
    hashed = render_html(factories.tool_result(), include_responses=False).decode()
    assert ARGUMENTS_MARKER not in hashed
    root = page(factories.tool_result(), include_responses=True)
    shown = [text_of(pre) for pre in card(root, "late-secret").iter("pre")]
    assert ARGUMENTS_REFUND in shown
    messages = [d for d in root.iter("div") if d.get("class") == "message"]
    roles = [text_of(d.find("span")) for d in messages[-4:]]  # type: ignore[arg-type]
    assert roles == [
        "user (scripted)",
        "assistant (scripted)",
        "tool result for refund (call call_1) (scripted)",
        "assistant",
    ]
    assert ARGUMENTS_REFUND in text_of(messages[-3])


def test_hostile_names_and_problems_stay_text_on_the_page() -> None:
    for include_responses in (False, True):
        text = render_html(hostile_failure(), include_responses=include_responses).decode()
        root = ET.fromstring(text.removeprefix("<!DOCTYPE html>\n"))
        assert not [e for e in root.iter() if e.tag in ("b", "script", "testcase")]
        assert "\x1b" not in text
        [row] = [
            tr
            for tr in card(root, "late-secret").iter("tr")
            if tr.get("data-outcome") == "unknown-tool"
        ]
        assert text_of(row).count("refund</testcase>") == 1
        assert "no: /amount: expected a number ::warning::forged" in text_of(row)


def test_a_run_that_ran_out_says_so_in_the_runs_list() -> None:
    root = page(repeated_with_tools(), include_responses=False)
    items = [text_of(li) for li in card(root, "late-secret").iter("li")]
    assert any(i.startswith("run 1, seed") or i.startswith("run 1, ran out") for i in items)
    assert any("ran out of tool rounds" in i and i.startswith("run 1") for i in items)


# --- the job summary -----------------------------------------------------------------------------


def summary_tables(result: RunResult) -> dict[str, list[list[str]]]:
    rendered = gfm.render(render_summary(result, "suite.json"))
    return {gfm.table_rows(t)[0][-1]: gfm.table_rows(t) for t in rendered.iter("table")}


def test_the_summary_shows_the_calls_of_failed_probes_and_of_every_probe() -> None:
    tables = summary_tables(factories.tool_result())
    failed = {row[1]: row[-1] for row in tables["Why"][1:]}
    assert failed["late-secret"].endswith(f"tools: {LATE_LINE}")
    every = {row[1]: row[-1] for row in tables["Tool calls"][1:]}
    assert every["late-secret"] == f"tools: {LATE_LINE}"
    assert every["slow"] == "—"
    assert "Tool calls" not in summary_tables(factories.run_result())  # no tools: no column


def test_the_summary_says_how_many_runs_ran_out() -> None:
    failed = {row[1]: row[-1] for row in summary_tables(repeated_with_tools())["Why"][1:]}
    assert "1 of 3 runs ran out of tool rounds" in failed["late-secret"]


def test_hostile_names_and_problems_stay_inert_in_the_summary() -> None:
    markdown = render_summary(hostile_failure(), "suite.json")
    assert ARGUMENTS_MARKER not in markdown
    rendered = gfm.render(markdown)
    assert gfm.stray_markup(rendered) == []
    assert not [e for e in rendered.iter() if e.tag in ("b", "script", "testcase")]
    assert not [e for t in rendered.iter("table") for e in t.iter() if e.tag in ("strong", "em")]
    tables = summary_tables(hostile_failure())
    assert all(len(row) == 8 for row in tables["Tool calls"])  # no "|" split a cell
    [late] = [row for row in tables["Tool calls"] if row[1] == "late-secret"]
    assert "refund</testcase>|`x`*y* \\x1b[31mred\\x1b[0m ⏎ ::error::forged <b>&amp;" in late[-1]


# --- annotations ---------------------------------------------------------------------------------


def located_failure() -> RunResult:
    """`late-secret` failed a tool assertion that knows its line (and a text one that does not)."""
    base = factories.tool_result()
    late = next(p for p in base.probes if p.probe.id == "late-secret")
    checks = (
        AssertionResult("contains", False, 'expected the answer to contain "sorry"'),
        AssertionResult(
            "notCalls",
            False,
            'refund was called (round 2) with amount {"gt": 100}',
            location=Location(42, 13),
        ),
    )
    located = replace(late, assertions=checks)
    return replace(
        base,
        scenarios=tuple(
            replace(s, probes=tuple(located if p is late else p for p in s.probes))
            for s in base.scenarios
        ),
    )


def test_an_annotation_points_at_the_failed_tool_assertion_s_line() -> None:
    lines = render_annotations(located_failure(), CONFIG)
    name, properties, data = parse(lines[0])
    assert (name, properties["line"], properties["col"]) == ("error", "42", "13")
    assert data.endswith('refund was called (round 2) with amount {"gt": 100}')
    for line in lines[1:]:  # the errored probes: at their own line, no column
        assert "col" not in parse(line)[1]


def test_without_a_located_failure_an_annotation_points_at_the_probe() -> None:
    _, properties, _ = parse(render_annotations(factories.tool_result(), CONFIG)[0])
    assert (properties["line"], "col" in properties) == ("1", False)


def test_a_code_quality_issue_stands_at_the_failed_tool_assertion_s_line(tmp_path: Path) -> None:
    issues = json.loads(render_codequality(located_failure(), project_dir=Path.cwd()))
    assert [issue["location"]["lines"]["begin"] for issue in issues] == [42, 1, 1, 1]
    before = json.loads(render_codequality(factories.tool_result(), project_dir=Path.cwd()))
    assert [i["fingerprint"] for i in issues] == [i["fingerprint"] for i in before]


def test_the_probe_s_own_failed_result_decides_where_not_a_passed_one() -> None:
    result = located_failure()
    passed = replace(
        result.probes[1],
        assertions=(
            AssertionResult("calls", True, "lookup_order was called", location=Location(9, 9)),
        ),
    )
    assert passed.status == "passed"
    scenarios = (replace(result.scenarios[1], probes=(passed,)),)
    assert render_annotations(replace(result, scenarios=scenarios), CONFIG) == []
