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
from ruledrift.findings import probe_flags, rule_stories, suspicious
from ruledrift.model import ProbeResult, Response, RunResult, ScenarioResult
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
        },
        "scenarios": [_scenario(s, include_responses) for s in result.scenarios],
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
