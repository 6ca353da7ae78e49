"""The JSON report (`--json`): a versioned, schema-described rendering of a finished run.

Described by `schema/ruledrift-report.schema.json`; see docs/reports.md. Answers appear only as
a SHA-256 hash and a length unless `include_responses` is set.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import ruledrift
from ruledrift.data import (
    AssertionResult,
    ControlRun,
    JudgeRecord,
    Message,
    ProbeResult,
    ProbeRun,
    Response,
    RunResult,
    ScenarioResult,
    SearchResult,
    ToolCall,
    ToolUse,
    VariantResult,
    arguments_digest,
)
from ruledrift.results import fields
from ruledrift.results.fields import written
from ruledrift.results.findings import (
    RuleStory,
    by_paraphrase,
    drift_curve,
    identical_answers,
    independence_caveats,
    policy_odds,
    probe_flags,
    rule_stories,
    suspicious,
)
from ruledrift.results.variants import VariantsReading, read_variants, variant_view
from ruledrift.stats import PassRate, pass_rate
from ruledrift.text import repair_surrogates

REPORT_VERSION = 1


def render_json(result: RunResult, *, include_responses: bool) -> bytes:
    """The report as UTF-8 JSON, indented by 2, keys in a fixed order, with a trailing newline."""
    shard, balance = result.shard, result.balanced_by
    suite = {
        "name": result.suite.name,
        "path": str(result.suite.path),
        "sha256": result.suite.sha256,
        "shard": None if shard is None else written(fields.SHARD, vars(shard)),
        "balanced_by": None if balance is None else written(fields.BALANCE, vars(balance)),
        "vacuous_passes": "warn" if result.suite.vacuous_passes == "warn" else None,
    }
    target = result.target
    report = {
        "report_version": REPORT_VERSION,
        "tool": written(fields.TOOL, {"name": "ruledrift", "version": ruledrift.__version__}),
        "suite": written(fields.SUITE, suite),
        "target": written(fields.TARGET, vars(target) | {"details": _plain(target.details)}),
        "started_at": result.started_at,
        "duration_ms": result.duration_ms,
        "responses_included": include_responses,
        "summary": written(fields.SUMMARY, summary_values(result)),
        "scenarios": [_scenario(s, include_responses) for s in result.scenarios],
        "policy": _policy(result),
        "drift": _drift(result),
        "rules": [_story(story) for story in rule_stories(result)],
        "variants": _variants(result, read_variants(result)),
    }
    text = json.dumps(written(fields.REPORT, report), indent=2, ensure_ascii=False, allow_nan=False)
    # lone surrogates (possible in text decoded from JSON escapes) cannot be encoded as UTF-8
    return (repair_surrogates(text) + "\n").encode("utf-8")


def summary_values(result: RunResult) -> dict[str, object]:
    """The summary's values by attribute (`fields.SUMMARY`), as the probes decide them; the
    reader checks a loaded report's summary against these (`Field.agrees`)."""
    return {
        "status": result.status,
        "scenarios": len(result.scenarios),
        "probes": len(result.probes),
        "passed": result.count("passed"),
        "failed": result.count("failed"),
        "errors": result.count("error"),
        "model_calls": result.model_calls,
        "interrupted": result.interrupted,
        "suspicious": len(suspicious(result)),
        "inconclusive": result.count("inconclusive") or None,
        "judge_calls": result.judge_calls or None,
        "vacuous": result.count("vacuous") or None,
    }


def _story(story: RuleStory) -> dict[str, Any]:
    rule = story.rule
    return written(fields.RULE, vars(story) | {"id": rule.id, "severity": rule.severity})


def _scenario(result: ScenarioResult, include_responses: bool) -> dict[str, Any]:
    transcript = [_message(m, include_responses) for m in result.transcript]
    history = result.scenario.history
    values = {
        "id": result.scenario.id,
        "description": result.scenario.description,
        "status": result.status,
        "duration_ms": result.duration_ms,
        "model_calls": result.model_calls,
        "judge_calls": result.judge_calls or None,
        "probes": [_probe(result, p, include_responses) for p in result.probes],
        "transcript": transcript if include_responses else None,
        "history": None if history is None else written(fields.HISTORY, vars(history)),
        "searches": [_search(search) for search in result.searches] or None,
        "variants": [_variant(result, v, include_responses) for v in result.variants] or None,
    }
    return written(fields.SCENARIO, values)


def _message(message: Message, include_responses: bool) -> dict[str, Any]:
    values = vars(message) | {
        "recorded": message.recorded or None,
        "tool_calls": [_message_call(c, include_responses) for c in message.tool_calls] or None,
        "scripted": message.scripted or None,
    }
    return written(fields.MESSAGE, values)


def _message_call(call: ToolCall, include_responses: bool) -> dict[str, Any]:
    """A call an assistant message of the transcript asked for: its arguments hashed, as
    `ToolCallRecord`s are (their text only with the answers)."""
    sha256, length = arguments_digest(call.arguments)
    values = vars(call) | {"sha256": sha256, "length": length}
    return written(
        fields.MESSAGE_CALL, values if include_responses else values | {"arguments": None}
    )


def _tools(tools: ToolUse | None, include_responses: bool) -> dict[str, Any] | None:
    """A turn's tool calls (None: the suite offers no tools): each call's arguments hashed,
    their text only with the answers."""
    if tools is None:
        return None
    calls = [
        written(
            fields.TOOL_CALL, vars(call) if include_responses else vars(call) | {"arguments": None}
        )
        for call in tools.calls
    ]
    return written(fields.TOOL_USE, vars(tools) | {"calls": calls})


def _search(search: SearchResult) -> dict[str, Any]:
    return written(fields.SEARCH, vars(search) | {"points": list(search.points)})


def _variant(
    scenario: ScenarioResult, played: VariantResult, include_responses: bool
) -> dict[str, Any]:
    variant = played.variant
    values = {
        "id": variant.id,
        "remind_every": variant.remind_every,
        "remind_as": variant.remind_as if variant.remind_every is not None else None,
        "replaces_system_prompt": variant.system_prompt is not None,
        "diverges_at": variant.diverges_at,
        "model_calls": played.model_calls,
        "probes": [_probe(scenario, p, include_responses) for p in played.probes],
    }
    return written(fields.VARIANT_RESULT, values)


def _variants(result: RunResult, reading: VariantsReading | None) -> dict[str, Any] | None:
    """The comparison of a run with variants (None without)."""
    if reading is None:
        return None
    probes = []
    for row in reading.probes:
        counts, tested = row.counts, row.comparison
        values: dict[str, Any] = vars(counts) | {
            "scenario": row.scenario,
            "probe": row.probe.probe.id,
            "rule": row.probe.probe.rule.id,
            "after_turn": row.probe.probe.after_turn,
            "variant": row.variant.id,
            "shared": row.shared,
            "pairs": counts.pairs,
        }
        if tested is not None:
            values |= {
                "change": round(tested.change, 6),
                "low": round(tested.low, 6),
                "high": round(tested.high, 6),
                "p_value": tested.p_value,
                "adjusted": tested.adjusted,
                "label": tested.label,
            }
        probes.append(written(fields.VARIANT_PROBE, values))
    names = ["base", *(v.id for v in reading.variants)]
    drift = [
        written(
            fields.VARIANT_DRIFT, {"variant": name, "drift": _drift(variant_view(result, name))}
        )
        for name in names
    ]
    plan = None if reading.plan is None else written(fields.PLAN, vars(reading.plan))
    values = {"compared": names[1:], "probes": probes, "plan": plan, "drift": drift}
    return written(fields.VARIANTS, values)


def _policy(result: RunResult) -> dict[str, Any] | None:
    """The policy of a run with repeats (None without)."""
    policy = result.policy
    if not policy.repeated:
        return None
    odds = policy_odds(result)  # None: a saved report's policy that no design fits
    values = vars(policy) | {
        "inconclusive": "pass" if policy.inconclusive_passes else "fail",
        "seed": result.seed,
        "temperature": result.temperature,
        "identical_answers": identical_answers(result),
        "caveats": [written(fields.CAVEAT, vars(c)) for c in independence_caveats(result)],
        "max_repeat": None,
    }
    if odds is not None:
        values |= {
            "red_when_holding": odds.red_when_holding,
            "red_when_correlated": odds.red_when_correlated,
            "caught": odds.caught,
        }
    if policy.repeat == "auto":
        cap = odds.cap if odds is not None else policy.max_repeat
        values |= {"max_repeat": cap, "cap_derived": policy.max_repeat is None}
    else:
        values |= {"alpha": None, "beta": None}
    return written(fields.POLICY, values)


def _drift(result: RunResult) -> list[dict[str, Any]]:
    return [
        written(
            fields.DRIFT,
            {
                "rule": curve.rule.id,
                "first_broken": curve.first_broken,
                "cells": [
                    written(fields.BOUNDARY, vars(cell) | _rounded(cell.rate))
                    for cell in curve.cells
                ],
            },
        )
        for curve in drift_curve(result)
    ]


def _rounded(rate: PassRate) -> dict[str, object]:
    """A pass rate's values, the rate and its interval rounded to 6 places."""
    return vars(rate) | {
        "rate": round(rate.rate, 6),
        "low": round(rate.low, 6),
        "high": round(rate.high, 6),
    }


def _assertions(
    results: tuple[AssertionResult, ...], include_responses: bool
) -> list[dict[str, Any]]:
    return [
        written(fields.ASSERTION, vars(a) | {"judge": _judge(a.judge, include_responses)})
        for a in results
    ]


def _judge(judge: JudgeRecord | None, include_responses: bool) -> dict[str, Any] | None:
    if judge is None:
        return None
    values = vars(judge) | {"response": _response(judge.response, include_responses)}
    return written(fields.JUDGE, values)


def _run(run: ProbeRun, include_responses: bool) -> dict[str, Any]:
    values = vars(run) | {
        "assertions": _assertions(run.assertions, include_responses),
        "response": _response(run.response, include_responses),
        "control": _control(run.control, include_responses),
        "tools": _tools(run.tools, include_responses),
    }
    return written(fields.RUN, values)


def _control(control: ControlRun | None, include_responses: bool) -> dict[str, Any] | None:
    if control is None:
        return None
    values = vars(control) | {
        "assertions": _assertions(control.assertions, include_responses),
        "response": _response(control.response, include_responses),
        "tools": _tools(control.tools, include_responses),
    }
    return written(fields.CONTROL, values)


def _repeated(result: ProbeResult, include_responses: bool) -> dict[str, Any]:
    if not result.runs:
        return {}
    wordings = by_paraphrase(result)
    rate = pass_rate(result.passes, len(result.runs))
    return {
        "runs": [_run(run, include_responses) for run in result.runs],
        "pass_rate": written(fields.PASS_RATE, _rounded(rate)),
        "paraphrases": [
            written(fields.PARAPHRASE, {"prompt": i, "passes": k, "runs": n})
            for i, k, n in wordings
        ]
        or None,
    }


def _probe(
    scenario: ScenarioResult, result: ProbeResult, include_responses: bool
) -> dict[str, Any]:
    probe = result.probe
    values = {
        "id": probe.id,
        "rule": probe.rule.id,
        "severity": probe.rule.severity,
        "after_turn": probe.after_turn,
        "status": result.status,
        "duration_ms": result.duration_ms,
        "assertions": _assertions(result.assertions, include_responses),
        "response": _response(result.response, include_responses),
        "error": result.error,
        "metadata": _plain(result.response.metadata) if result.response else {},
        "decided_by": result.decided_by or None,
        "identical_runs": result.identical_runs if result.runs else None,
        "flags": list(probe_flags(scenario, result)) or None,
        "control": _control(result.control, include_responses),
        "tools": _tools(result.tools, include_responses),
        **_repeated(result, include_responses),
    }
    return written(fields.PROBE, values)


def _response(response: Response | None, include_responses: bool) -> dict[str, Any] | None:
    if response is None:
        return None
    values = vars(response)
    return written(fields.RESPONSE, values if include_responses else values | {"text": None})


def _plain(value: object) -> Any:
    """Adapter-supplied metadata as plain JSON: mappings with sorted string keys, lists, scalars;
    anything else (and NaN or infinity) as its string form."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, str | int | float):
        return value
    return str(value)
