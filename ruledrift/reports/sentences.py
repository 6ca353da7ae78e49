"""The sentences that state a verdict, written once for every report: the run's verdict and why,
the counts, a probe's runs, the repeat policy. Pure wording: every verdict is the run's
(`result.status`, `result.interrupted`, each probe's `status`); nothing here decides one.

Each renderer sets these sentences in its own type (capitals in the terminal, a capital in the
HTML page, a symbol and `RuleDrift:` in the job summary) and escapes what it inserts; the fixed
words here hold nothing from a suite, a model or a server.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ruledrift.data import (
    ProbeResult,
    RunResult,
    Status,
    ToolCallOutcome,
    ToolCallRecord,
    ToolUse,
    combined_status,
)
from ruledrift.results.findings import DriftCell, policy_cap, runs_not_made
from ruledrift.results.variants import PairingPlan, VariantProbe, VariantsReading
from ruledrift.text import cut_text

# Why a run has its status, after the status's word ("failed: the target broke a rule").
REASONS: dict[Status, str] = {
    "passed": "every probe kept its rule",
    "failed": "the target broke a rule",
    "error": "some probes could not be run, so the verdict is incomplete",
    "inconclusive": "some probes were not decided within the run cap",
    "vacuous": "a probe passed only vacuously: its control failed, so the rule is not shown kept",
}
INCONCLUSIVE_PASSES = "--inconclusive pass: they do not fail the run"
VACUOUS_WARNS = 'the suite\'s "vacuousPasses": "warn": they do not fail the run'
INTERRUPTED = "the run was stopped; results are partial"
DID_NOT_RUN = "no model call was made and every probe errored"
TARGET_DID_NOT_START = "the target could not start"


@dataclass(frozen=True)
class Verdict:
    """A run's verdict in words: `word` (`passed`, `failed`, `error`, `inconclusive`,
    `vacuous` or `interrupted`) and `reason`, the sentence that follows it."""

    word: str
    reason: str


def status_verdict(result: RunResult) -> Verdict:
    """The run's status and why; under `--inconclusive pass`, an inconclusive run says that it
    does not fail, and so does a vacuous one when the suite lets vacuous passes warn (but for
    what else its probes found, which then decides)."""
    status = result.status
    if status == "vacuous" and result.suite.vacuous_passes == "warn":
        rest = combined_status([p.status for p in result.probes if p.status != "vacuous"])
        if rest != "passed":
            status = rest
        else:
            return Verdict("vacuous", f"{REASONS['vacuous']} ({VACUOUS_WARNS})")
    reason = REASONS[status]
    if status == "inconclusive" and result.policy.inconclusive_passes:
        reason += f" ({INCONCLUSIVE_PASSES})"
    return Verdict(status, reason)


def run_verdict(result: RunResult) -> Verdict:
    """The verdict a report leads with: `interrupted` when the run was stopped, else the status's
    (`status_verdict`)."""
    if result.interrupted:
        return Verdict("interrupted", INTERRUPTED)
    return status_verdict(result)


def counts(result: RunResult) -> str:
    """`3 probe(s): 1 passed, 1 failed, 1 error(s)`, with `, N inconclusive` and `, N vacuous`
    when there are."""
    others = "".join(
        f", {result.count(status)} {status}"
        for status in ("inconclusive", "vacuous")
        if result.count(status)
    )
    return (
        f"{len(result.probes)} probe(s): {result.count('passed')} passed, "
        f"{result.count('failed')} failed, {result.count('error')} error(s){others}"
    )


def runs_passed(probe: ProbeResult) -> str:
    """`4/5 runs passed`: a repeated probe's passing runs out of its runs; a run `--max-calls`
    did not allow is no run (`5/5 runs passed, 1 not made (--max-calls)`); runs whose answers
    were byte-identical say so (`5/5 runs passed, all identical (no error bound)`)."""
    not_made = runs_not_made(probe)
    shown = f"{probe.passes}/{len(probe.runs) - not_made} runs passed"
    if probe.identical_runs:
        return f"{shown}, {IDENTICAL_RUNS}"
    return f"{shown}, {not_made} not made (--max-calls)" if not_made else shown


# After a repeated probe's counts, when every answer was byte-identical (`identical_runs`).
IDENTICAL_RUNS = "all identical (no error bound)"


def cell_rate(cell: DriftCell) -> str:
    """A drift cell's rate with its 95% interval, `4/5 passed (80.0%, 95% interval …)`; for a
    cell whose runs were all identical, without the interval: `0/5 passed, all identical (no
    error bound)`."""
    rate = cell.rate
    return f"{rate.passes}/{rate.runs} passed, {IDENTICAL_RUNS}" if cell.identical else str(rate)


def policy_rule(result: RunResult, code: Callable[[str], str] = str) -> str:
    """The repeat policy in one sentence, led by its option; `code` sets the option (`--repeat
    auto`) in the renderer's type (a Markdown code span, say)."""
    policy = result.policy
    if policy.repeat == "auto":
        return (
            f"{code('--repeat auto')}: each probe ran until a sequential test decided between a "
            f"pass rate of at least {policy.holds_at:.0%} (holds) and at most "
            f"{policy.drifted_at:.0%} (drifted){policy_cap(result)}"
        )
    option = code(f"--repeat {policy.repeat}")
    if policy.min_pass_rate is not None:
        return f"{option}: a probe passes when at least {policy.min_pass_rate:.0%} of its runs pass"
    return f"{option}: a probe passes only if every run passes"


# --- tool calls ------------------------------------------------------------------------------

TOOL_CALLS_LISTED = 10  # calls a compact line names; the rest are counted
TOOL_NAME_MAX_CHARS = 100  # of a tool's name in a line (a model may write any name)
RAN_OUT = "ran out of tool rounds"
# How a call was answered, in a call's own line (`ToolCallOutcome`)
OUTCOME_TEXT: dict[ToolCallOutcome, str] = {
    "result": "the mock's result",
    "error": "the mock's error result",
    "unknown-tool": "unknown tool (not declared)",
    "unmatched": "no case of its mock matched",
    "not-run": "not run (the rounds ran out)",
    "reported": "run by the agent (reported)",
}
# The same, in a compact line: nothing for a call answered as asked
_OUTCOME_NOTE: dict[ToolCallOutcome, str] = {
    "result": "",
    "reported": "",
    "error": "error result",
    "unknown-tool": "unknown tool",
    "unmatched": "no mock case matched",
    "not-run": "not run",
}


def ran_out_words(tools: ToolUse) -> str:
    """`ran out of tool rounds (maxToolRounds 4)`: a turn that ran out took every round the
    suite allows, so `rounds` is the suite's `maxToolRounds` (which a saved report lacks)."""
    return f"{RAN_OUT} (maxToolRounds {tools.rounds})"


def tool_calls_line(tools: ToolUse, name: Callable[[str], str] = str) -> str:
    """A turn's calls in one line: `lookup_order (round 1), refund (round 2, unknown tool); 3
    rounds`, or `…; ran out of tool rounds (maxToolRounds 4)`; `no tool calls; 1 round` for a
    turn without any. `name` sets a tool's name (from the model: hostile) in the renderer's
    type and escapes it; the other words are fixed."""
    listed = [_call_words(call, name) for call in tools.calls[:TOOL_CALLS_LISTED]]
    left = len(tools.calls) - TOOL_CALLS_LISTED
    if left > 0:
        listed.append(f"and {left} more")
    calls = ", ".join(listed) or "no tool calls"
    rounds = f"{tools.rounds} round{'' if tools.rounds == 1 else 's'}"
    ending = ran_out_words(tools) if tools.ran_out else rounds
    return f"{calls}; {ending}"


def _call_words(call: ToolCallRecord, name: Callable[[str], str]) -> str:
    notes = [f"round {call.round}"]
    if call.problem is not None:
        notes.append("invalid arguments")
    if _OUTCOME_NOTE[call.outcome]:
        notes.append(_OUTCOME_NOTE[call.outcome])
    return f"{name(cut_text(call.name, TOOL_NAME_MAX_CHARS))} ({', '.join(notes)})"


def runs_ran_out(probe: ProbeResult) -> str | None:
    """With repeats, when some runs ran out of tool rounds: `2 of 5 runs ran out of tool
    rounds`; None when none did."""
    out = sum(1 for run in probe.runs if run.tools is not None and run.tools.ran_out)
    return f"{out} of {len(probe.runs)} runs {RAN_OUT}" if out else None


def tool_lines(probe: ProbeResult, safe: Callable[[str], str]) -> list[str]:
    """A probe's tool calls for a report's text: its turn's calls in one line (`tools:
    lookup_order (round 1); 2 rounds`, names made safe by `safe`), and with repeats how many
    runs ran out of tool rounds; nothing for a turn that made no call and did not run out."""
    lines = []
    tools = probe.tools
    if tools is not None and (tools.calls or tools.ran_out):
        lines.append(f"tools: {tool_calls_line(tools, safe)}")
    out = runs_ran_out(probe)
    return [*lines, out] if out else lines


def variants_heading(reading: VariantsReading) -> str:
    """The line above the variants' comparison."""
    tested = sum(1 for row in reading.probes if row.comparison is not None)
    names = ", ".join(v.id for v in reading.variants)
    return (
        f"variants: base against {names}, paired run for run (McNemar's exact test, Holm over "
        f"{tested} tested probe(s))"
    )


def variant_words(row: VariantProbe) -> str:
    """One probe under one variant against base: its pairs, the change and the label."""
    counts, tested = row.counts, row.comparison
    rates = (
        f"{counts.base_passes}/{counts.pairs} under base → {counts.variant_passes}/{counts.pairs}"
    )
    if row.shared:
        return (
            f"shared with base: asked once on the same conversation (the variant starts to "
            f"differ at turn {row.variant.diverges_at})"
        )
    if tested is None:
        return "no pair: no run was answered under both base and the variant"
    points = f"{tested.change * 100:+.1f} points"
    interval = f"95% interval {tested.low * 100:+.1f} to {tested.high * 100:+.1f}"
    return (
        f"{rates} ({points}, {interval}; {counts.base_only} pair(s) passed only under base, "
        f"{counts.variant_only} only under the variant; p {tested.p_value:.3g}, Holm-adjusted "
        f"{tested.adjusted:.3g}): {tested.label}"
    )


def pairing_words(plan: PairingPlan) -> str:
    """How many pairs the planned improvement needs, and runs per arm without pairing."""
    return (
        f"pairs: to see {plan.drifted_at:.0%} → {plan.holds_at:.0%} (80% power, 5%, two-sided) "
        f"takes {plan.pairs_if_only_fixes} pairs if the variant only fixes failures, "
        f"{plan.pairs_if_independent} if a pair's two outcomes are independent; two unpaired "
        f"samples would need {plan.runs_per_arm_unpaired} runs each (docs/statistics.md)"
    )
