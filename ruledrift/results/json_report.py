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
from ruledrift.data import ProbeResult, ProbeRun, Response, RunResult, ScenarioResult
from ruledrift.results.findings import (
    by_paraphrase,
    drift_curve,
    identical_answers,
    policy_odds,
    probe_flags,
    rule_stories,
    suspicious,
)
from ruledrift.stats import pass_rate
from ruledrift.text import repair_surrogates

REPORT_VERSION = 1


def render_json(result: RunResult, *, include_responses: bool) -> bytes:
    """The report as UTF-8 JSON, indented by 2, keys in a fixed order, with a trailing newline."""
    report = {
        "reportVersion": REPORT_VERSION,
        "tool": {"name": "ruledrift", "version": ruledrift.__version__},
        "suite": {
            "name": result.suite.name,
            "config": str(result.suite.path),
            "configSha256": result.suite.sha256,
            **(
                {
                    "shard": {
                        "index": result.shard.index,
                        "total": result.shard.total,
                        "scenarios": list(result.shard.scenarios),
                        "rules": list(result.shard.rules),
                        **(
                            {"assigned": list(result.shard.assigned)}
                            if result.shard.assigned is not None
                            else {}
                        ),
                        "source": result.shard.source,
                    }
                }
                if result.shard
                else {}
            ),
            **(
                {
                    "balancedBy": {
                        "report": balance.report,
                        "configSha256": balance.config_sha256,
                        "startedAt": balance.started_at,
                    }
                }
                if (balance := result.balanced_by)
                else {}
            ),
        },
        "target": {
            "adapter": result.target.adapter,
            "model": result.target.model,
            "details": _plain(result.target.details),
        },
        "startedAt": result.started_at,
        "durationMs": result.duration_ms,
        "responsesIncluded": include_responses,
        "summary": {
            "status": result.status,
            "scenarios": len(result.scenarios),
            "probes": len(result.probes),
            "passed": result.count("passed"),
            "failed": result.count("failed"),
            "errors": result.count("error"),
            "modelCalls": result.model_calls,
            "interrupted": result.interrupted,
            "suspicious": len(suspicious(result)),
            **({"inconclusive": n} if (n := result.count("inconclusive")) else {}),
        },
        "scenarios": [_scenario(s, include_responses) for s in result.scenarios],
        **_repeats(result),
        "rules": [
            {
                "id": story.rule.id,
                "severity": story.rule.severity,
                "story": story.story,
                "heldAt": list(story.held_at),
                "brokenAt": list(story.broken_at),
            }
            for story in rule_stories(result)
        ],
    }
    text = json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False)
    # lone surrogates (possible in text decoded from JSON escapes) cannot be encoded as UTF-8
    return (repair_surrogates(text) + "\n").encode("utf-8")


def _scenario(result: ScenarioResult, include_responses: bool) -> dict[str, Any]:
    rendered: dict[str, Any] = {
        "id": result.scenario.id,
        **({"description": d} if (d := result.scenario.description) is not None else {}),
        "status": result.status,
        "durationMs": result.duration_ms,
        "modelCalls": result.model_calls,
        "probes": [_probe(result, p, include_responses) for p in result.probes],
    }
    if include_responses:
        rendered["transcript"] = [{"role": m.role, "content": m.content} for m in result.transcript]
    return rendered


def _repeats(result: RunResult) -> dict[str, Any]:
    """The policy (with repeats) and the drift curve."""
    policy = result.policy
    drift = {"drift": _drift(result)}
    if not policy.repeated:
        return drift
    odds = policy_odds(result)  # None: a saved report's policy that no design fits
    rendered: dict[str, Any] = {
        "repeat": policy.repeat,
        "minPassRate": policy.min_pass_rate,
        "inconclusive": "pass" if policy.inconclusive_passes else "fail",
        **({"probes": policy.probes} if policy.probes is not None else {}),
        "holdsAt": policy.holds_at,
        "driftedAt": policy.drifted_at,
    }
    if odds is not None:
        rendered |= {
            "suiteRedWhenHolding": odds.red_when_holding,
            "caughtWhenDrifted": odds.caught,
        }
    rendered |= {
        **({"seed": result.seed} if result.seed is not None else {}),
        "temperature": result.temperature,
        "identicalAnswers": identical_answers(result),
    }
    if policy.repeat == "auto":
        cap = odds.cap if odds is not None else policy.max_repeat
        rendered |= {
            **({"maxRepeat": cap} if cap is not None else {}),
            "capDerived": policy.max_repeat is None,
            "alpha": policy.alpha,
            "beta": policy.beta,
        }
    return {"policy": rendered, **drift}


def _drift(result: RunResult) -> list[dict[str, Any]]:
    return [
        {
            "rule": curve.rule.id,
            "firstBrokenAt": curve.first_broken,
            "boundaries": [
                {
                    "afterTurn": cell.after_turn,
                    "runs": cell.rate.runs,
                    "passes": cell.rate.passes,
                    "passRate": round(cell.rate.rate, 6),
                    "low": round(cell.rate.low, 6),
                    "high": round(cell.rate.high, 6),
                    "status": cell.status,
                }
                for cell in curve.cells
            ],
        }
        for curve in drift_curve(result)
    ]


def _run(run: ProbeRun, include_responses: bool) -> dict[str, Any]:
    return {
        "run": run.run,
        "status": run.status,
        "durationMs": run.duration_ms,
        "assertions": [
            {"type": a.type, "passed": a.passed, "message": a.message} for a in run.assertions
        ],
        "response": _response(run.response, include_responses),
        "error": run.error,
        "prompt": run.prompt,
        "seed": run.seed,
    }


def _repeated(result: ProbeResult, include_responses: bool) -> dict[str, Any]:
    if not result.runs:
        return {}
    rate = pass_rate(result.passes, len(result.runs))
    return {
        "runs": [_run(run, include_responses) for run in result.runs],
        "passRate": {
            "passes": rate.passes,
            "runs": rate.runs,
            "rate": round(rate.rate, 6),
            "low": round(rate.low, 6),
            "high": round(rate.high, 6),
        },
        **({"decidedBy": result.decided_by} if result.decided_by else {}),
        **(
            {"paraphrases": [{"prompt": i, "passes": k, "runs": n} for i, k, n in wordings]}
            if (wordings := by_paraphrase(result))
            else {}
        ),
    }


def _probe(
    scenario: ScenarioResult, result: ProbeResult, include_responses: bool
) -> dict[str, Any]:
    probe = result.probe
    flags = probe_flags(scenario, result)
    return {
        "id": probe.id,
        "rule": probe.rule.id,
        "severity": probe.rule.severity,
        "afterTurn": probe.after_turn,
        "status": result.status,
        "durationMs": result.duration_ms,
        "assertions": [
            {"type": a.type, "passed": a.passed, "message": a.message} for a in result.assertions
        ],
        "response": _response(result.response, include_responses),
        "error": result.error,
        "metadata": _plain(result.response.metadata) if result.response else {},
        **_repeated(result, include_responses),
        **({"flags": list(flags)} if flags else {}),
    }


def _response(response: Response | None, include_responses: bool) -> dict[str, Any] | None:
    if response is None:
        return None
    rendered: dict[str, Any] = {"sha256": response.sha256, "length": response.length}
    if include_responses:
        rendered["text"] = response.text
    return rendered


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
