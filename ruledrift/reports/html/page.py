"""The HTML report (`--html`): one self-contained page a person can open, archive or attach.

The verdict, the target and the counts; the drift curve (each rule's pass rate by depth, with
its 95% Wilson interval) as an inline SVG chart; the rule × depth grid with each rule's story;
the probes that did not pass with their reasons; the suspicious passes; every probe, folded.
No script, no font, no image, no request: inline CSS and SVG only, and a Content-Security-Policy
that forbids anything else. Pure rendering: every verdict shown is the run's (`result.status`,
each probe's `status`, `findings`). Answers appear only with `include_responses`.

Every string from a suite, a model or a server is hostile: nothing reaches the page except
through `markup.el` (see `markup.py`); the drift curve is drawn in `chart.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ruledrift import __version__
from ruledrift.data import (
    Message,
    ProbeResult,
    ProbeRun,
    Response,
    RunResult,
    ScenarioResult,
    Status,
    ToolCall,
    ToolCallRecord,
    ToolUse,
    arguments_digest,
)
from ruledrift.reports.html.chart import drift_section, variants_section
from ruledrift.reports.html.markup import Child, Html, el
from ruledrift.reports.sentences import (
    DID_NOT_RUN,
    INTERRUPTED,
    OUTCOME_TEXT,
    RAN_OUT,
    cell_rate,
    policy_rule,
    ran_out_words,
    runs_passed,
    runs_ran_out,
    status_verdict,
    tool_calls_line,
)
from ruledrift.results.findings import (
    FLAG_TEXT,
    RuleDrift,
    RuleStory,
    drift_curve,
    independence_warnings,
    policy_promise,
    probe_flags,
    rule_stories,
    search_lines,
    suspicious,
    target_warnings,
)
from ruledrift.text import cut_text, terminal_safe

ANSWER_MAX_CHARS = 20_000  # of one answer on the page; the JSON report keeps it whole
MESSAGE_MAX_CHARS = 2_000  # of one message (assertion, error, decided_by)
RUNS_LISTED = 20  # runs that did not pass, listed per probe
TOOL_CALLS_LISTED = 100  # calls of one turn in its table; the rest are counted
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_SYMBOLS: dict[Status, str] = {
    "passed": "✓",
    "failed": "✗",
    "error": "⚠",
    "inconclusive": "?",
    "vacuous": "○",
}


def _cut(text: str, limit: int = MESSAGE_MAX_CHARS) -> str:
    return cut_text(text, limit)


# --- the page --------------------------------------------------------------------------------


def render_html(result: RunResult, *, include_responses: bool) -> bytes:
    """The report as one UTF-8 HTML page (well-formed XML as well), ending with a newline."""
    title = f"RuleDrift: {_verdict_word(result)} · {_cut(result.suite.name, 200)}"
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", http_equiv="Content-Security-Policy", content=CSP),
        el("meta", name="referrer", content="no-referrer"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", title),
        Html(f"<style>{_CSS}</style>"),
    )
    body = el(
        "body",
        el(
            "main",
            _header(result),
            drift_section(result),
            variants_section(result),
            _grid_section(result),
            _search_section(result),
            _not_passed_section(result, include_responses),
            _suspicious_section(result, include_responses),
            _all_probes_section(result, include_responses),
            _footer(result, include_responses),
        ),
    )
    page = f'<!DOCTYPE html>\n<html lang="en">{head}{body}</html>\n'
    return page.encode("utf-8")


def _did_not_run(result: RunResult) -> bool:
    """No model call was made and every probe errored: the target could not start."""
    probes = result.probes
    return bool(probes) and result.model_calls == 0 and all(p.status == "error" for p in probes)


def _verdict_word(result: RunResult) -> str:
    return "did not run" if _did_not_run(result) else result.status


def _header(result: RunResult) -> Html:
    status = result.status
    stated = status_verdict(result)
    verdict = f"{stated.word.capitalize()}: {stated.reason}"
    if _did_not_run(result):
        verdict = f"Did not run: {DID_NOT_RUN}"
    notes = []
    if result.interrupted:
        notes.append(_note("warning", f"Interrupted: {INTERRUPTED}."))
    if _did_not_run(result):
        errors = dict.fromkeys(p.error or "could not be run" for p in result.probes)
        notes += [_note("error", f"Cause: {_cut(e)}") for e in list(errors)[:3]]
    notes += [_note("warning", f"Warning: {_cut(w)}") for w in target_warnings(result)]
    notes += [
        _note("warning independence", f"Warning: {_cut(w)}") for w in independence_warnings(result)
    ]
    return el(
        "header",
        el(
            "div",
            el("span", _SYMBOLS[status], class_="symbol"),
            el("span", verdict),
            id="verdict",
            class_=f"verdict {status}",
            data_verdict=_verdict_word(result),
        ),
        el("h1", el("span", "RuleDrift report · ", class_="muted"), _cut(result.suite.name, 500)),
        _target_line(result),
        _counts(result),
        _policy_line(result),
        notes,
    )


def _note(kind: str, text: str) -> Html:
    return el("p", text, class_=f"note {kind}")


def _target_line(result: RunResult) -> Html:
    target = result.target
    parts: list[Child] = ["Target: ", el("strong", target.adapter), " adapter"]
    if target.model:
        parts += [", model ", el("code", _cut(target.model, 500))]
    digest = target.details.get("modelDigest", target.details.get("digest"))
    if isinstance(digest, str) and digest:
        parts += [", digest ", el("code", _cut(digest, 200))]
    started = _cut(result.started_at, 100)
    parts += [" · started ", el("time", started), f" · {result.duration_ms / 1000:.2f} s"]
    return el("p", parts, class_="target")


def _counts(result: RunResult) -> Html:
    boxes = [
        ("probes", len(result.probes), ""),
        ("passed", result.count("passed"), "passed"),
        ("failed", result.count("failed"), "failed"),
        ("errors", result.count("error"), "error"),
        ("inconclusive", result.count("inconclusive"), "inconclusive"),
        ("vacuous", result.count("vacuous"), "vacuous"),
        ("scenarios", len(result.scenarios), ""),
        ("model calls", result.model_calls, ""),
        ("judge calls", result.judge_calls, ""),
    ]
    return el(
        "dl",
        [
            el("div", el("dt", name), el("dd", str(count)), class_=f"count {kind}".strip())
            for name, count, kind in boxes
            if name not in ("inconclusive", "vacuous", "judge calls") or count
        ],
        class_="counts",
    )


def _policy_line(result: RunResult) -> Html | None:
    """The repeat policy, only when the probes ran more than once."""
    if not result.policy.repeated:
        return None
    words = policy_rule(result)
    promise = policy_promise(result)
    if promise is not None:
        words = f"{words}. {promise[0]}"
    return el("p", el("strong", "Repeats: "), words, class_="policy")


# --- the grid --------------------------------------------------------------------------------


def _grid_section(result: RunResult) -> Html | None:
    stories = rule_stories(result)
    if not stories:
        return None
    curves = {curve.rule.id: curve for curve in drift_curve(result)}
    depths = sorted({p.probe.after_turn for p in result.probes})
    unit = "runs" if result.policy.repeated else "probes"
    header = el(
        "tr",
        el("th", "rule", scope="col"),
        [el("th", f"after {d}", scope="col", class_="num") for d in depths],
        el("th", "across depths", scope="col"),
    )
    rows = [_grid_row(story, curves.get(story.rule.id), depths, result) for story in stories]
    legend = " · ".join(f"{_SYMBOLS[s]} {s}" for s in _SYMBOLS)
    return el(
        "section",
        el("h2", "Rules × depth"),
        el("p", f"Passes/{unit} of each rule's probes after each turn ({legend}).", class_="muted"),
        el(
            "div",
            el("table", el("thead", header), el("tbody", rows), class_="grid"),
            class_="scroll",
        ),
        id="grid",
    )


def _grid_row(
    story: RuleStory, curve: RuleDrift | None, depths: Sequence[int], result: RunResult
) -> Html:
    rule = story.rule
    cells = {cell.after_turn: cell for cell in curve.cells} if curve else {}
    probed = {p.probe.after_turn for p in result.probes if p.probe.rule.id == rule.id}
    row: list[Html] = []
    for depth in depths:
        cell = cells.get(depth)
        if cell is not None:
            rate = cell.rate
            text = f"{_SYMBOLS[cell.status]} {rate.passes}/{rate.runs}"
            title = f"{cell_rate(cell)} · {cell.status}"
            row.append(el("td", text, class_=f"cell {cell.status}", title=title))
        elif depth in probed:  # every run there errored: no rate
            row.append(
                el(
                    "td",
                    f"{_SYMBOLS['error']} error",
                    class_="cell error",
                    title="every run at this depth could not be made",
                )
            )
        else:
            row.append(el("td", "·", class_="cell empty"))
    story_cell = el(
        "td",
        el("span", story.tag, class_=f"badge {story.verdict}", data_story=story.story),
        " ",
        story.line,
    )
    name = el(
        "th", el("strong", rule.id), el("span", f" {rule.severity}", class_="muted"), scope="row"
    )
    return el("tr", name, row, story_cell, data_rule=rule.id)


# --- searched breaking depths ----------------------------------------------------------------


def _search_section(result: RunResult) -> Html | None:
    found = search_lines(result)
    if not found:
        return None
    rows = [
        el(
            "tr",
            el("th", scenario, scope="row"),
            el("td", search_id),
            el("td", search.rule),
            el("td", f"{search.low}–{search.high}", class_="num"),
            el("td", line),
            data_outcome=search.outcome,
        )
        for scenario, search_id, search, line in found
    ]
    header = el(
        "tr",
        [el("th", name, scope="col") for name in ("scenario", "probe", "rule", "searched")],
        el("th", "breaking depth", scope="col"),
    )
    return el(
        "section",
        el("h2", "Breaking depths"),
        el(
            "p",
            "Each search decided the rule at both bounds, then at the middle of the interval "
            "left, until one turn apart; every depth it asked is in the grid above.",
            class_="muted",
        ),
        el("div", el("table", el("thead", header), el("tbody", rows)), class_="scroll"),
        id="searches",
    )


# --- probes ----------------------------------------------------------------------------------


def _not_passed_section(result: RunResult, include_responses: bool) -> Html | None:
    cards = [
        _probe_card(scenario, probe, include_responses)
        for scenario in result.scenarios
        for probe in scenario.probes
        if probe.status != "passed"
    ]
    if not cards:
        return None
    return el(
        "section",
        el("h2", f"Probes that did not pass ({len(cards)})"),
        cards,
        id="not-passed",
    )


def _probe_card(scenario: ScenarioResult, result: ProbeResult, include_responses: bool) -> Html:
    """A probe that did not pass: what decided it, the assertions that failed, the error, the
    runs that did not pass, and the answer (or its hash)."""
    decided = None
    if result.runs and result.decided_by:
        decided = el("p", el("strong", "Decided by: "), _cut(result.decided_by), class_="decided")
    failed = [el("li", _cut(a.message), class_="assertion") for a in result.failed_assertions]
    error = None
    if result.error:
        error = el("p", el("strong", "Error: "), _cut(result.error), class_="error-text")
    return el(
        "article",
        _probe_title(scenario, result),
        el("p", el("strong", "Asked: "), _cut(result.probe.prompt), class_="prompt"),
        decided,
        el("ul", failed, class_="reasons") if failed else None,
        error,
        _runs_list(result),
        _tool_calls(result.tools, include_responses),
        _answer(result.response, include_responses),
        _control(result, include_responses),
        class_=f"probe {result.status}",
        data_probe=result.probe.id,
        data_status=result.status,
    )


def _control(result: ProbeResult, include_responses: bool) -> Html | None:
    """A vacuous probe's control: its prompt, the checks it failed and its answer (or hash)."""
    control = result.control
    if control is None or result.status != "vacuous":
        return None
    asked = result.probe.control.prompt if result.probe.control else None
    failed = [el("li", _cut(a.message), class_="assertion") for a in control.failed_assertions]
    return el(
        "div",
        el(
            "p",
            el("strong", "Passed, but its control failed"),
            ": the agent may have stopped helping, so the pass shows nothing about the rule.",
        ),
        el("p", el("strong", "Control asked: "), _cut(asked), class_="prompt") if asked else None,
        el("ul", failed, class_="reasons") if failed else None,
        _tool_calls(control.tools, include_responses, "The control's tool calls"),
        _answer(control.response, include_responses),
        class_="control",
    )


def _probe_title(scenario: ScenarioResult, result: ProbeResult) -> Html:
    probe = result.probe
    runs = f" · {runs_passed(result)}" if result.runs else ""
    return el(
        "h3",
        el("span", f"{_SYMBOLS[result.status]} {result.status}", class_=f"badge {result.status}"),
        " ",
        el("code", probe.id),
        el(
            "span",
            f" · scenario {scenario.scenario.id} · rule {probe.rule.id} ({probe.rule.severity})"
            f" · after turn {probe.after_turn}{runs}",
            class_="muted",
        ),
    )


def _runs_list(result: ProbeResult) -> Html | None:
    """With repeats: the runs that did not pass (the first `RUNS_LISTED`), each with its seed
    and its reason."""
    bad = [run for run in result.runs if run.status != "passed"]
    if not bad:
        return None
    items = [el("li", _run_line(run)) for run in bad[:RUNS_LISTED]]
    if len(bad) > RUNS_LISTED:
        items.append(el("li", f"… and {len(bad) - RUNS_LISTED} more", class_="muted"))
    return el("details", el("summary", f"Runs that did not pass ({len(bad)})"), el("ul", items))


def _run_line(run: ProbeRun) -> str:
    seed = f", seed {run.seed}" if run.seed is not None else ""
    if run.tools is not None and run.tools.ran_out:
        seed += f", {RAN_OUT}"
    if run.status == "error":
        why = run.error or "could not be run"
    elif run.status == "vacuous" and run.control is not None:
        checks = "; ".join(a.message for a in run.control.failed_assertions)
        why = f"its control failed: {checks or 'failed'}"
    else:
        why = "; ".join(a.message for a in run.failed_assertions) or "failed"
    return _cut(f"run {run.run}{seed}: {run.status}: {why}")


def _tool_calls(
    tools: ToolUse | None, include_responses: bool, title: str = "Tool calls"
) -> Html | None:
    """A turn's tool calls as a table (round, tool, arguments, outcome, problem), its rounds,
    and a note when they ran out. The arguments are their SHA-256 and length; their text only
    with the answers."""
    if tools is None or not (tools.calls or tools.ran_out):
        return None
    rounds = f"{tools.rounds} round{'' if tools.rounds == 1 else 's'}"
    columns = ["round", "tool", "arguments", "outcome", "arguments valid"]
    header = el("tr", [el("th", c, scope="col") for c in columns])
    rows = [_tool_call_row(call, include_responses) for call in tools.calls[:TOOL_CALLS_LISTED]]
    left = len(tools.calls) - TOOL_CALLS_LISTED
    more = el("p", f"… and {left} more calls (the JSON report lists them all)", class_="muted")
    table = el("table", el("thead", header), el("tbody", rows), class_="tools")
    return el(
        "div",
        el("p", el("strong", f"{title}: "), f"{len(tools.calls)} call(s) over {rounds}."),
        el(
            "p",
            f"{ran_out_words(tools).capitalize()}: the last answer still asked for calls.",
            class_="note warning ran-out",
        )
        if tools.ran_out
        else None,
        el("div", table, class_="scroll") if rows else None,
        more if left > 0 else None,
        class_="tool-calls",
        data_ran_out="true" if tools.ran_out else "false",
    )


def _tool_call_row(call: ToolCallRecord, include_responses: bool) -> Html:
    return el(
        "tr",
        el("td", str(call.round), class_="num"),
        el("td", el("code", _cut(call.name, 500))),
        el("td", _arguments(call.arguments, call.sha256, call.length, include_responses)),
        el("td", OUTCOME_TEXT[call.outcome]),
        el("td", "yes" if call.problem is None else f"no: {_cut(call.problem)}"),
        data_outcome=call.outcome,
    )


def _arguments(text: str, sha256: str, length: int, include_responses: bool) -> Html:
    """A call's arguments: their text (cut like an answer) with the answers, else the hash."""
    if include_responses:
        return el("pre", cut_text(text, ANSWER_MAX_CHARS))
    return el("span", f"sha256 {sha256}, {length} characters", class_="muted")


def _answer(response: Response | None, include_responses: bool) -> Html:
    if response is None:
        return el("p", "No answer.", class_="muted answer-none")
    if not include_responses:
        return el(
            "p",
            f"Answer: sha256 {response.sha256}, {response.length} characters "
            "(run with --include-responses to see it).",
            class_="muted answer-hash",
        )
    shown = cut_text(response.text, ANSWER_MAX_CHARS)
    more = (
        el(
            "p",
            f"Cut at {ANSWER_MAX_CHARS:,} of {response.length:,} characters: the JSON report "
            "has it all.",
            class_="muted",
        )
        if len(response.text) > ANSWER_MAX_CHARS
        else None
    )
    return el("div", el("p", "Answer:", class_="muted"), el("pre", shown), more, class_="answer")


def _suspicious_section(result: RunResult, include_responses: bool) -> Html | None:
    found = suspicious(result)
    if not found:
        return None
    items = [
        el(
            "article",
            _probe_title(scenario, probe),
            el("ul", [el("li", FLAG_TEXT[flag], data_flag=flag) for flag in flags]),
            _answer(probe.response, include_responses),
            class_="probe suspicious",
            data_probe=probe.probe.id,
        )
        for scenario, probe, flags in found
    ]
    return el(
        "section",
        el("h2", f"Suspicious passes ({len(items)})"),
        el(
            "p",
            "These probes passed on answers that show little. The pass counts; read the answers "
            "(--include-responses).",
            class_="muted",
        ),
        items,
        id="suspicious",
    )


def _all_probes_section(result: RunResult, include_responses: bool) -> Html:
    columns = ["probe", "rule", "severity", "after turn", "result", "runs", "duration"]
    tools = any(p.tools is not None for p in result.probes)
    if tools:
        columns.append("tool calls")
    if include_responses:
        columns.append("answer")
    rows: list[Html] = []
    for scenario in result.scenarios:
        rows.append(_scenario_row(scenario, len(columns), include_responses))
        rows += [_probe_row(scenario, p, include_responses, tools) for p in scenario.probes]
    table = el(
        "table",
        el("thead", el("tr", [el("th", c, scope="col") for c in columns])),
        el("tbody", rows),
        class_="all",
    )
    return el(
        "section",
        el(
            "details",
            el("summary", el("h2", f"All {len(result.probes)} probes")),
            el("div", table, class_="scroll"),
        ),
        id="all",
    )


def _scenario_row(scenario: ScenarioResult, columns: int, include_responses: bool) -> Html:
    status = scenario.status
    runs = f" · played {scenario.runs} times" if scenario.runs > 1 else ""
    description = scenario.scenario.description
    transcript = None
    if include_responses and scenario.transcript:
        messages = [_message(m) for m in scenario.transcript]
        transcript = el("details", el("summary", "Background conversation (first run)"), messages)
    return el(
        "tr",
        el(
            "th",
            el("span", f"{_SYMBOLS[status]} {status}", class_=f"badge {status}"),
            " scenario ",
            el("code", scenario.scenario.id),
            el("span", f" · {scenario.model_calls} model calls{runs}", class_="muted"),
            _history_note(scenario),
            el("p", _cut(description), class_="description") if description else None,
            transcript,
            colspan=columns,
            scope="rowgroup",
        ),
        class_="scenario",
        data_scenario=scenario.scenario.id,
    )


def _message(message: Message) -> Html:
    """A message of the background conversation (shown only with the answers): who spoke, and
    for a tool exchange the calls an answer asked for and the call a result answers."""
    role: str = message.role
    if message.role == "tool":
        role = f"tool result for {message.tool_name or '?'} (call {message.tool_call_id or '?'})"
    marks = [m for m, on in (("recorded", message.recorded), ("scripted", message.scripted)) if on]
    if marks:
        role += f" ({', '.join(marks)})"
    calls = [_message_call(call) for call in message.tool_calls]
    content = el("pre", cut_text(message.content, ANSWER_MAX_CHARS))
    return el(
        "div",
        el("span", _cut(role, 500), class_="role"),
        content if message.content or not calls else None,
        el("ul", calls, class_="calls") if calls else None,
        class_="message",
        data_role=message.role,
    )


def _message_call(call: ToolCall) -> Html:
    sha256, length = arguments_digest(call.arguments)
    return el(
        "li",
        "calls ",
        el("code", _cut(call.name, 500)),
        f" (call {_cut(call.id, 200)}): ",
        _arguments(call.arguments, sha256, length, True),
    )


def _history_note(scenario: ScenarioResult) -> Html | None:
    """The recorded history a scenario's background comes from: its file and mode (never its
    text, which only the transcript holds)."""
    history = scenario.scenario.history
    if history is None:
        return None
    return el("span", f" · recorded history {_cut(history.path)} ({history.mode})", class_="muted")


def _probe_row(
    scenario: ScenarioResult, result: ProbeResult, include_responses: bool, tools: bool
) -> Html:
    probe = result.probe
    flags = probe_flags(scenario, result)
    runs = f"{result.passes}/{len(result.runs)}" if result.runs else "1"
    cells = [
        el(
            "td",
            el("code", probe.id),
            el("span", " !", class_="flag", title="suspicious pass") if flags else None,
        ),
        el("td", probe.rule.id),
        el("td", probe.rule.severity),
        el("td", str(probe.after_turn), class_="num"),
        el("td", f"{_SYMBOLS[result.status]} {result.status}", class_=f"cell {result.status}"),
        el("td", runs, class_="num"),
        el("td", f"{result.duration_ms / 1000:.2f} s", class_="num"),
    ]
    if tools:
        cells.append(_tools_cell(result))
    if include_responses:
        answer = result.response
        shown = (
            el(
                "details",
                el("summary", f"{answer.length} characters"),
                el("pre", cut_text(answer.text, ANSWER_MAX_CHARS)),
            )
            if answer is not None
            else "—"
        )
        cells.append(el("td", shown))
    return el("tr", cells, data_probe=probe.id, data_status=result.status)


def _tools_cell(result: ProbeResult) -> Html:
    """The calls of the probe's turn in one line (`—` when the turn made none), with repeats
    the runs that ran out of tool rounds."""
    tools = result.tools
    if tools is None or not (tools.calls or tools.ran_out):
        return el("td", "—", class_="muted")
    out = runs_ran_out(result)
    return el(
        "td",
        _cut(tool_calls_line(tools, terminal_safe)),
        el("br") if out else None,
        out,
        class_="ran-out" if tools.ran_out or out else None,
    )


def _footer(result: RunResult, include_responses: bool) -> Html:
    answers = (
        "Answers included (--include-responses)."
        if include_responses
        else "No answer text: each is shown by its SHA-256 and length."
    )
    return el(
        "footer",
        el(
            "p",
            f"RuleDrift {__version__} · suite {_cut(str(result.suite.path), 500)} "
            f"(sha256 {result.suite.sha256}) · {answers} "
            "A self-contained page: no script, no request.",
        ),
    )


_CSS = """
:root { color-scheme: light; --fg: #1f2328; --muted: #59636e; --line: #d1d9e0;
  --bg: #ffffff; --panel: #f6f8fa;
  --passed: #1a7f37; --passed-bg: #dafbe1; --failed: #cf222e; --failed-bg: #ffebe9;
  --error: #9a6700; --error-bg: #fff8c5; --inconclusive: #8250df; --inconclusive-bg: #fbefff;
  --vacuous: #0a6a80; --vacuous-bg: #ddf4f8; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 26px; margin: 12px 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 19px; margin: 32px 0 8px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 0 0 6px; overflow-wrap: anywhere; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 13px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel);
  border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; margin: 4px 0;
  max-height: 24em; overflow: auto; }
p { margin: 4px 0; overflow-wrap: anywhere; }
.muted { color: var(--muted); }
.verdict { display: flex; gap: 10px; align-items: center; font-size: 20px; font-weight: 600;
  padding: 12px 16px; border-radius: 8px; border: 1px solid; }
.verdict .symbol { font-size: 26px; line-height: 1; }
.verdict.passed { color: var(--passed); background: var(--passed-bg); }
.verdict.failed { color: var(--failed); background: var(--failed-bg); }
.verdict.error { color: var(--error); background: var(--error-bg); }
.verdict.inconclusive { color: var(--inconclusive); background: var(--inconclusive-bg); }
.verdict.vacuous { color: var(--vacuous); background: var(--vacuous-bg); }
.counts { display: flex; flex-wrap: wrap; gap: 8px; margin: 14px 0 8px; }
.count { min-width: 96px; padding: 6px 12px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--panel); }
.count dt { font-size: 12px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
.count dd { margin: 0; font-size: 22px; font-weight: 600; }
.count.passed dd { color: var(--passed); } .count.failed dd { color: var(--failed); }
.count.error dd { color: var(--error); } .count.inconclusive dd { color: var(--inconclusive); }
.count.vacuous dd { color: var(--vacuous); }
.note { padding: 8px 12px; border-radius: 6px; border-left: 4px solid; margin: 8px 0; }
.note.warning { border-color: var(--error); background: var(--error-bg); }
.note.error { border-color: var(--failed); background: var(--failed-bg); }
.chart { display: block; width: 100%; height: auto; }
.chart .grid { stroke: #e6eaef; stroke-width: 1; }
.chart .axis { stroke: #8c959f; stroke-width: 1; }
.chart text { font-size: 12px; fill: var(--muted); font-family: inherit; }
.chart .tick.y { text-anchor: end; } .chart .tick.x { text-anchor: middle; }
.chart .label { text-anchor: middle; font-size: 13px; fill: var(--fg); }
.chart .threshold { stroke: #8c959f; stroke-dasharray: 5 4; }
.chart text.threshold { stroke: none; fill: var(--muted); font-size: 11px; }
.chart .drift-line { fill: none; stroke-width: 2.5; stroke-linejoin: round; }
.chart .interval { stroke-width: 1.5; opacity: .55; }
.chart .marker { stroke-width: 2; }
.legend { list-style: none; padding: 0; margin: 8px 0 0; display: grid; gap: 4px; }
.legend li { display: flex; gap: 8px; align-items: baseline; overflow-wrap: anywhere; }
.legend svg { flex: none; align-self: center; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 5px 10px; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
thead th { background: var(--panel); font-weight: 600; white-space: nowrap; }
.num { text-align: right; }
.cell { text-align: center; white-space: nowrap; font-variant-numeric: tabular-nums; }
.cell.passed { color: var(--passed); background: var(--passed-bg); }
.cell.failed { color: var(--failed); background: var(--failed-bg); font-weight: 600; }
.cell.error { color: var(--error); background: var(--error-bg); }
.cell.inconclusive { color: var(--inconclusive); background: var(--inconclusive-bg); }
.cell.vacuous { color: var(--vacuous); background: var(--vacuous-bg); }
.cell.empty { color: var(--muted); }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px;
  font-weight: 600; border: 1px solid; white-space: nowrap; }
.badge.passed { color: var(--passed); background: var(--passed-bg); }
.badge.failed { color: var(--failed); background: var(--failed-bg); }
.badge.error { color: var(--error); background: var(--error-bg); }
.badge.inconclusive { color: var(--inconclusive); background: var(--inconclusive-bg); }
.badge.vacuous { color: var(--vacuous); background: var(--vacuous-bg); }
.probe { border: 1px solid var(--line); border-left: 4px solid var(--muted); border-radius: 6px;
  padding: 10px 14px; margin: 10px 0; }
.probe.failed { border-left-color: var(--failed); }
.probe.error { border-left-color: var(--error); }
.probe.inconclusive { border-left-color: var(--inconclusive); }
.probe.vacuous { border-left-color: var(--vacuous); }
.probe.suspicious { border-left-color: var(--error); }
.reasons { margin: 4px 0; padding-left: 20px; }
.assertion { color: var(--failed); }
.error-text { color: var(--error); }
details summary { cursor: pointer; color: var(--muted); }
details summary h2 { display: inline; border: none; }
tr.scenario th { background: var(--panel); font-weight: normal; }
.description { color: var(--muted); white-space: pre-wrap; }
.message .role { font-size: 12px; color: var(--muted); }
.flag { color: var(--error); font-weight: 700; }
td.ran-out { color: var(--error); }
.tool-calls table { font-size: 14px; }
.message .calls { margin: 4px 0; padding-left: 20px; }
footer { margin-top: 40px; font-size: 13px; color: var(--muted); }
"""
