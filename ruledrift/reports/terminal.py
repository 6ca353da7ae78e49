"""The terminal report. Renders finished results; decides nothing, prints nothing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruledrift.data import ProbeResult, RunResult, ScenarioResult, Status, ToolUse
from ruledrift.reports.sentences import (
    counts,
    pairing_words,
    run_verdict,
    runs_passed,
    runs_ran_out,
    tool_calls_line,
    variant_words,
    variants_heading,
)
from ruledrift.results.findings import (
    FLAG_TEXT,
    by_paraphrase,
    drift_curve,
    gate_words,
    independence_warnings,
    policy_odds,
    probe_flags,
    rule_stories,
    runs_not_made,
    search_lines,
    suspicious,
    target_warnings,
)
from ruledrift.results.variants import read_variants, variant_view
from ruledrift.text import preview, terminal_safe

_LABELS: dict[Status, str] = {
    "passed": "PASS",
    "failed": "FAIL",
    "error": "ERROR",
    "inconclusive": "INCONCLUSIVE",  # the one name for it, as in every report
    "vacuous": "VACUOUS",
}
_COLOURS: dict[Status, str] = {
    "passed": "32",
    "failed": "31",
    "error": "33",
    "inconclusive": "35",
    "vacuous": "36",
}
_STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "inconclusive", "vacuous")


@dataclass(frozen=True)
class TerminalOptions:
    colour: bool = False
    previews: bool = False  # show a short preview of failed answers
    responses: bool = False  # show a preview of every answer (--include-responses)
    quiet: bool = False  # only the summary line


def _paint(text: str, code: str, options: TerminalOptions) -> str:
    return f"\x1b[{code}m{text}\x1b[0m" if options.colour else text


def render_terminal(result: RunResult, options: TerminalOptions) -> str:
    """The whole report: every scenario's block, then `render_ending`."""
    errors: dict[str, str] = {}
    shown = [render_scenario(s, options, errors) for s in result.scenarios]
    blocks = [] if options.quiet else shown
    return "".join(blocks) + render_ending(result, options)


def render_scenario(
    scenario: ScenarioResult, options: TerminalOptions, errors: dict[str, str] | None = None
) -> str:
    """One scenario's block (printed as soon as the scenario finishes): its status and a line
    per probe, failed assertions, errors, flags of suspicious passes, answer previews. An error
    already shown (in `errors`, error → the probe that showed it, filled in here; pass the same
    dict for every scenario of a run) is named, not repeated: a misspelt agent fails every
    probe alike."""
    errors = {} if errors is None else errors
    status = _paint(scenario.status.upper(), _COLOURS[scenario.status], options)
    counts = ", ".join(f"{scenario.count(s)} {s}" for s in _STATUSES if scenario.count(s))
    runs = f", {scenario.runs} runs" if scenario.runs > 1 else ""
    lines = [f"\nscenario {terminal_safe(scenario.scenario.id)}: {status} ({counts}{runs})"]
    width = max((len(p.probe.id) for p in scenario.probes), default=0)
    label = max((len(_LABELS[p.status]) for p in scenario.probes), default=0)
    for probe in scenario.probes:
        lines.extend(_probe_lines(scenario, probe, (label, width), options, errors))
    return "\n".join(lines) + "\n"


_TURN_FAILED = re.compile(r"background turn \d+ failed: ")


def _error_line(scenario: ScenarioResult, error: str, errors: dict[str, str], probe: str) -> str:
    """`error: TEXT`, or `error: the same as P above` for an error shown before (a background
    turn's failure is the same as the probe's own)."""
    turn = _TURN_FAILED.match(error)
    cause = error[turn.end() :] if turn else error
    named = f"{scenario.scenario.id}/{probe}"
    first = errors.setdefault(cause, named)
    if first == named:
        return f"error: {terminal_safe(error)}"
    lead = turn.group(0) if turn else ""
    return f"error: {lead}the same as {terminal_safe(first)} above"


def render_ending(result: RunResult, options: TerminalOptions) -> str:
    """What follows the scenarios: one line per rule across depths, the count of suspicious
    passes, the totals and the verdict."""
    lines: list[str] = []
    if not options.quiet:
        if result.policy.repeated:
            lines += drift_grid(result)
        stories = rule_stories(result)
        if stories:
            lines.append("")
            width = max(len(story.rule.id) for story in stories)
            lines += [f"rule {s.rule.id:<{width}}  {terminal_safe(s.line)}" for s in stories]
        lines += [
            terminal_safe(f"search {scenario}/{search_id}: {line}")
            for scenario, search_id, _, line in search_lines(result)
        ]
        lines += variant_lines(result)
        lines += [f"warning: {terminal_safe(w)}" for w in target_warnings(result)]
        flagged = suspicious(result)
        if flagged:
            lines.append(
                f"{len(flagged)} suspicious pass(es): passed on answers that show little "
                "(flagged ! above; see docs/reports.md)"
            )
        lines.append("")
    lines.append(summary_line(result))
    lines += [terminal_safe(line) for line in repeats_lines(result)]
    lines += [f"warning: {terminal_safe(w)}" for w in independence_warnings(result)]
    verdict = run_verdict(result)
    lines.append(
        _paint(f"{verdict.word.upper()}: {verdict.reason}", _COLOURS[result.status], options)
    )
    return "\n".join(lines) + "\n"


def variant_lines(result: RunResult) -> list[str]:
    """With `--variants`: each variant's drift grid (with repeats), then every probe under
    every variant against base, and the pairs an improvement needs."""
    reading = read_variants(result)
    if reading is None:
        return []
    lines = []
    if result.policy.repeated:
        for variant in reading.variants:
            grid = drift_grid(variant_view(result, variant.id))
            lines += [line.replace("drift:", f"drift under {variant.id}:", 1) for line in grid]
    lines += ["", terminal_safe(variants_heading(reading))]
    for row in reading.probes:
        name = f"{row.scenario}/{row.probe.probe.id} under {row.variant.id}"
        lines.append(f"  {terminal_safe(name)}: {terminal_safe(variant_words(row))}")
    if reading.plan is not None:
        lines.append(terminal_safe(pairing_words(reading.plan)))
    return lines


def summary_line(result: RunResult) -> str:
    repeats = f" · --repeat {result.policy.repeat}" if result.policy.repeated else ""
    judged = f" · {result.judge_calls} judge call(s)" if result.judge_calls else ""
    return (
        f"{counts(result)} · {len(result.scenarios)} scenario(s){repeats} · "
        f"{result.model_calls} model call(s){judged} · {result.duration_ms / 1000:.2f} s"
    )


def repeats_lines(result: RunResult) -> list[str]:
    """Under the summary line, with repeats: what the policy promises this many probes (a
    warning when it does not keep 5% / 80%)."""
    odds = policy_odds(result)
    if odds is None:
        return []
    prefix = "repeats" if odds.within_bounds else "warning"
    return [f"{prefix}: {gate_words(odds, result.policy)}"]


def drift_grid(result: RunResult) -> list[str]:
    """The drift curve as a compact grid: a row per rule, a column per depth, passes/runs;
    `error` where every run of the rule there errored, `·` where it was not probed."""
    cells = {
        (curve.rule.id, cell.after_turn): f"{cell.rate.passes}/{cell.rate.runs}"
        for curve in drift_curve(result)
        for cell in curve.cells
    }
    for probe in result.probes:  # probed there, but every run errored: no rate
        cells.setdefault((probe.probe.rule.id, probe.probe.after_turn), "error")
    if not cells:
        return []
    rules = [rule.id for rule in result.suite.rules if any(r == rule.id for r, _ in cells)]
    depths = sorted({depth for _, depth in cells})
    corner = "rule \\ after turn"
    width = max(len(corner), *map(len, rules))
    column = max(6, *(len(text) + 1 for text in cells.values()))
    lines = ["", "drift: passes/runs by depth (· not probed there)"]
    lines.append(f"  {corner:<{width}} " + "".join(f"{d:>{column}}" for d in depths))
    for rule in rules:
        row = "".join(f"{cells.get((rule, d), '·'):>{column}}" for d in depths)
        lines.append(f"  {rule:<{width}} {row}")
    return lines


def _probe_lines(
    scenario: ScenarioResult,
    result: ProbeResult,
    widths: tuple[int, int],
    options: TerminalOptions,
    errors: dict[str, str],
) -> list[str]:
    """The probe's line, its label padded to the widest of its scenario's (at least 5, so a
    scenario without an inconclusive probe lines up as it always has), then what explains it."""
    probe = result.probe
    label_width, width = max(widths[0], 5), widths[1]
    label = _paint(f"{_LABELS[result.status]:<{label_width}}", _COLOURS[result.status], options)
    lines = [
        f"  {label}  {probe.id:<{width}}  rule {probe.rule.id}  {probe.rule.severity}  "
        f"after turn {probe.after_turn}"
    ]
    indent = " " * (label_width + 4)
    if result.runs:
        lines[0] += f"  {runs_passed(result)}"
        failed = sum(1 for run in result.runs if run.status == "error") - runs_not_made(result)
        if failed:
            lines[0] += f", {failed} could not be made"
        wordings = by_paraphrase(result)
        if wordings:
            tallies = ", ".join(f"#{i} {k}/{n}" for i, k, n in wordings)
            lines.append(f"{indent}by paraphrase: {tallies}")
        if result.status != "passed" and result.decided_by:
            lines.append(f"{indent}{terminal_safe(result.decided_by)}")
    lines.extend(f"{indent}- {terminal_safe(a.message)}" for a in result.failed_assertions)
    if result.error:
        lines.append(indent + _error_line(scenario, result.error, errors, probe.id))
    lines += _tool_lines(result, indent)
    lines.extend(f"{indent}! suspicious: {FLAG_TEXT[f]}" for f in probe_flags(scenario, result))
    shown = options.responses or (options.previews and result.status != "passed")
    if shown and result.response is not None:
        lines.append(f"{indent}answer: {preview(result.response.text)}")
    lines += _control_lines(result, indent, shown)
    return lines


def _tools_line(tools: ToolUse | None, indent: str, lead: str = "tools") -> list[str]:
    """`tools: lookup_order (round 1), refund (round 2); 3 rounds` for a turn that made calls
    (or ran out of rounds), the names made terminal-safe."""
    if tools is None or not (tools.calls or tools.ran_out):
        return []
    return [f"{indent}{lead}: {tool_calls_line(tools, terminal_safe)}"]


def _tool_lines(result: ProbeResult, indent: str) -> list[str]:
    """The calls of the run the verdict rests on and, with repeats, how many runs ran out of
    tool rounds."""
    lines = _tools_line(result.tools, indent)
    out = runs_ran_out(result)
    return [*lines, f"{indent}{out}"] if out else lines


def _control_lines(result: ProbeResult, indent: str, shown: bool) -> list[str]:
    """Under a probe whose control was asked: why a pass was vacuous (the control's failed
    checks), and the control's answer when answers are shown."""
    control = result.control
    if control is None:
        return []
    lines = []
    if result.status == "vacuous":
        lines.append(
            f"{indent}passed, but its control failed (the agent may have stopped helping):"
        )
        lines += [
            f"{indent}- control: {terminal_safe(a.message)}" for a in control.failed_assertions
        ]
        lines += _tools_line(control.tools, indent, "control tools")
    if shown and control.response is not None:
        lines.append(f"{indent}control answer: {preview(control.response.text)}")
    return lines
