"""The fields of the JSON report, each named once: the writer (`json_report`) takes its keys and
their order from these tables and the reader (`json_load`) takes the same keys back to the same
attributes, so adding a field to the report is one row here (and its line in the schema).

Each object of the report is a tuple of `Field`s in the order the writer writes them. A field's
type and range live in `ruledrift/schemas/ruledrift-report.schema.json`, the single validator the
reader applies before it uses any value (tests/results/test_fields.py holds the tables and the
schema's `properties` to the same keys). What the reader checks beyond the schema is a column
here only where it reads the table for it (`agrees`: a summary count the probes must repeat).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Field:
    """One field of one object: its JSON `key`, the Python `attribute` it is written from and
    read back to (a dataclass field of `ruledrift.data`, or the name of a value the writer
    computes), whether it may be left out (`optional`: written only when it has a value, None
    counting as none), whether a report written before the field may lack it (`older`: always
    written, but not required by the schema), and (summary only) whether the reader checks that
    the probes agree with it (`agrees`; a missing optional count is 0)."""

    key: str
    attribute: str
    optional: bool = False
    agrees: bool = False
    older: bool = False  # reports written before this field lack it: the schema does not require it

    @property
    def required(self) -> bool:
        """Whether every report holds it (the schema requires it)."""
        return not (self.optional or self.older)


def _fields(*rows: tuple[str, str] | Field) -> tuple[Field, ...]:
    return tuple(row if isinstance(row, Field) else Field(*row) for row in rows)


REPORT = _fields(
    ("reportVersion", "report_version"),
    ("tool", "tool"),
    ("suite", "suite"),
    ("target", "target"),
    ("startedAt", "started_at"),
    ("durationMs", "duration_ms"),
    ("responsesIncluded", "responses_included"),
    ("summary", "summary"),
    ("scenarios", "scenarios"),
    Field("policy", "policy", optional=True),  # a run with repeats
    Field("drift", "drift", older=True),
    Field("rules", "rules", older=True),
    Field("variants", "variants", optional=True),  # `--variants`: results.variants
)
TOOL = _fields(("name", "name"), ("version", "version"))
SUITE = _fields(
    ("name", "name"),
    ("config", "path"),
    ("configSha256", "sha256"),
    Field("shard", "shard", optional=True),
    Field("balancedBy", "balanced_by", optional=True),
    Field("vacuousPasses", "vacuous_passes", optional=True),  # "warn" only: the default is left out
)
SHARD = _fields(  # ShardInfo
    ("index", "index"),
    ("total", "total"),
    ("scenarios", "scenarios"),
    ("rules", "rules"),
    Field("assigned", "assigned", optional=True),  # None: an older report's
    Field("source", "source", older=True),
)
BALANCE = _fields(  # Balance
    ("report", "report"),
    ("configSha256", "config_sha256"),
    ("startedAt", "started_at"),
)
TARGET = _fields(("adapter", "adapter"), ("model", "model"), ("details", "details"))  # TargetInfo
SUMMARY = _fields(  # counts of the probes' verdicts (`json_report.summary_values`)
    Field("status", "status", agrees=True),
    Field("scenarios", "scenarios", agrees=True),
    Field("probes", "probes", agrees=True),
    Field("passed", "passed", agrees=True),
    Field("failed", "failed", agrees=True),
    Field("errors", "errors", agrees=True),
    Field("modelCalls", "model_calls", agrees=True),
    ("interrupted", "interrupted"),  # RunResult.interrupted
    Field("suspicious", "suspicious", older=True),
    Field("inconclusive", "inconclusive", optional=True, agrees=True),  # when not 0
    Field("judgeCalls", "judge_calls", optional=True, agrees=True),  # when not 0
    Field("vacuous", "vacuous", optional=True, agrees=True),  # when not 0
)
POLICY = _fields(  # VerdictPolicy, the run's seed and temperature, the design's odds
    ("repeat", "repeat"),
    ("minPassRate", "min_pass_rate"),
    ("inconclusive", "inconclusive"),  # "pass" or "fail": VerdictPolicy.inconclusive_passes
    Field("probes", "probes", optional=True),
    Field("holdsAt", "holds_at", older=True),
    Field("driftedAt", "drifted_at", older=True),
    Field("suiteRedWhenHolding", "red_when_holding", optional=True),  # when a design fits
    Field("suiteRedWhenCorrelated", "red_when_correlated", optional=True),
    Field("caughtWhenDrifted", "caught", optional=True),
    Field("seed", "seed", optional=True),  # RunResult.seed
    Field("temperature", "temperature", older=True),  # RunResult.temperature
    Field("identicalAnswers", "identical_answers", older=True),
    Field("caveats", "caveats", older=True),  # findings.independence_caveats
    Field("maxRepeat", "max_repeat", optional=True),  # `--repeat auto` only, from here on
    Field("capDerived", "cap_derived", optional=True),
    Field("alpha", "alpha", optional=True),
    Field("beta", "beta", optional=True),
)
CAVEAT = _fields(("id", "id"), ("message", "text"))  # findings.Caveat
DRIFT = _fields(("rule", "rule"), ("firstBrokenAt", "first_broken"), ("boundaries", "cells"))
BOUNDARY = _fields(  # a cell of the drift curve
    ("afterTurn", "after_turn"),
    ("runs", "runs"),
    ("passes", "passes"),
    ("passRate", "rate"),
    ("low", "low"),
    ("high", "high"),
    ("status", "status"),
    Field("identicalRuns", "identical", older=True),  # DriftCell.identical
)
RULE = _fields(  # a rule's story
    ("id", "id"),
    ("severity", "severity"),
    ("story", "story"),
    ("heldAt", "held_at"),
    ("brokenAt", "broken_at"),
)
SCENARIO = _fields(  # ScenarioResult
    ("id", "id"),
    Field("description", "description", optional=True),
    ("status", "status"),
    ("durationMs", "duration_ms"),
    ("modelCalls", "model_calls"),
    Field("judgeCalls", "judge_calls", optional=True),  # when not 0
    ("probes", "probes"),
    Field("transcript", "transcript", optional=True),  # with the answers only
    Field("history", "history", optional=True),  # a scenario with a recorded history
    Field("searches", "searches", optional=True),  # a scenario with a search (SearchResult)
    Field("variants", "variants", optional=True),  # `--variants`: its probes under each
)
SEARCH = _fields(  # SearchResult
    ("id", "id"),
    ("rule", "rule"),
    ("low", "low"),
    ("high", "high"),
    ("outcome", "outcome"),
    ("heldThrough", "held_through"),
    ("driftedFrom", "drifted_from"),
    ("stoppedAt", "stopped_at"),
    ("points", "points"),
    ("tokensHeld", "tokens_held"),
    ("tokensDrifted", "tokens_drifted"),
)
VARIANT_RESULT = _fields(  # VariantResult, with its Variant's settings
    ("id", "id"),
    Field("remindEvery", "remind_every", optional=True),
    Field("remindAs", "remind_as", optional=True),
    ("replacesSystemPrompt", "replaces_system_prompt"),
    ("divergesAt", "diverges_at"),
    ("modelCalls", "model_calls"),
    ("probes", "probes"),
)
HISTORY = _fields(("path", "path"), ("sha256", "sha256"), ("mode", "mode"))  # History
MESSAGE = _fields(  # Message
    ("role", "role"),
    ("content", "content"),
    Field("recorded", "recorded", optional=True),  # true when from the history (else left out)
    Field("toolCalls", "tool_calls", optional=True),  # an assistant message's, when it has any
    Field("toolCallId", "tool_call_id", optional=True),  # a `tool` message's
    Field("toolName", "tool_name", optional=True),  # a `tool` message's
    Field("scripted", "scripted", optional=True),  # true when the suite authored it (else left out)
)
MESSAGE_CALL = _fields(  # ToolCall, in a transcript's assistant message
    ("id", "id"),
    ("tool", "name"),
    ("argumentsSha256", "sha256"),
    ("argumentsLength", "length"),
    Field("arguments", "arguments", optional=True),  # with the answers only
)
PROBE = _fields(  # ProbeResult
    ("id", "id"),
    ("rule", "rule"),
    ("severity", "severity"),
    ("afterTurn", "after_turn"),
    ("status", "status"),
    ("durationMs", "duration_ms"),
    ("assertions", "assertions"),
    ("response", "response"),
    ("error", "error"),
    ("metadata", "metadata"),  # the adapter's, as it gave it (free-form)
    Field("runs", "runs", optional=True),  # with repeats, from here on
    Field("passRate", "pass_rate", optional=True),
    Field("decidedBy", "decided_by", optional=True),
    Field("identicalRuns", "identical_runs", optional=True),  # with repeats
    Field("paraphrases", "paraphrases", optional=True),
    Field("flags", "flags", optional=True),
    Field("control", "control", optional=True),  # a probe with a control that was asked
    Field("tools", "tools", optional=True),  # a suite with tools: the evidence run's calls
)
RUN = _fields(  # ProbeRun
    ("run", "run"),
    ("status", "status"),
    ("durationMs", "duration_ms"),
    ("assertions", "assertions"),
    ("response", "response"),
    ("error", "error"),
    ("prompt", "prompt"),
    ("seed", "seed"),
    Field("control", "control", optional=True),
    Field("tools", "tools", optional=True),  # a suite with tools: this run's calls
)
CONTROL = _fields(  # ControlRun
    ("status", "status"),
    ("durationMs", "duration_ms"),
    ("assertions", "assertions"),
    ("response", "response"),
    ("error", "error"),
    Field("tools", "tools", optional=True),  # a suite with tools: the control's calls
)
TOOL_USE = _fields(("rounds", "rounds"), ("ranOut", "ran_out"), ("calls", "calls"))  # ToolUse
TOOL_CALL = _fields(  # ToolCallRecord
    ("round", "round"),
    ("tool", "name"),
    ("argumentsSha256", "sha256"),
    ("argumentsLength", "length"),
    ("outcome", "outcome"),
    Field("problem", "problem", optional=True),  # arguments that are not valid
    Field("arguments", "arguments", optional=True),  # with the answers only
)
PASS_RATE = _fields(  # PassRate
    ("passes", "passes"),
    ("runs", "runs"),
    ("rate", "rate"),
    ("low", "low"),
    ("high", "high"),
)
PARAPHRASE = _fields(("prompt", "prompt"), ("passes", "passes"), ("runs", "runs"))
ASSERTION = _fields(
    ("type", "type"),
    ("passed", "passed"),
    ("message", "message"),
    Field("judge", "judge", optional=True),  # a `judge` assertion's
)
JUDGE = _fields(  # JudgeRecord
    ("adapter", "adapter"),
    ("model", "model"),
    ("temperature", "temperature"),
    ("seed", "seed"),
    ("response", "response"),
)
RESPONSE = _fields(  # Response
    ("sha256", "sha256"),
    ("length", "length"),
    Field("text", "text", optional=True),  # with the answers only
)

VARIANTS = _fields(  # results.variants.VariantsReading
    ("compared", "compared"),
    ("probes", "probes"),
    Field("plan", "plan", optional=True),
    ("drift", "drift"),
)
VARIANT_PROBE = _fields(  # results.variants.VariantProbe
    ("scenario", "scenario"),
    ("probe", "probe"),
    ("rule", "rule"),
    ("afterTurn", "after_turn"),
    ("variant", "variant"),
    ("shared", "shared"),
    ("pairs", "pairs"),
    ("both", "both"),
    ("baseOnly", "base_only"),
    ("variantOnly", "variant_only"),
    ("neither", "neither"),
    Field("change", "change", optional=True),  # the rest: only when tested
    Field("low", "low", optional=True),
    Field("high", "high", optional=True),
    Field("pValue", "p_value", optional=True),
    Field("adjusted", "adjusted", optional=True),
    Field("label", "label", optional=True),
)
PLAN = _fields(  # results.variants.PairingPlan
    ("driftedAt", "drifted_at"),
    ("holdsAt", "holds_at"),
    ("pairsIfOnlyFixes", "pairs_if_only_fixes"),
    ("pairsIfIndependent", "pairs_if_independent"),
    ("runsPerArmUnpaired", "runs_per_arm_unpaired"),
)
VARIANT_DRIFT = _fields(("variant", "variant"), ("drift", "drift"))

OBJECTS: Mapping[str, tuple[Field, ...]] = {
    "report": REPORT,
    "tool": TOOL,
    "suite": SUITE,
    "shard": SHARD,
    "balancedBy": BALANCE,
    "target": TARGET,
    "summary": SUMMARY,
    "policy": POLICY,
    "caveat": CAVEAT,
    "drift": DRIFT,
    "boundary": BOUNDARY,
    "rule": RULE,
    "scenario": SCENARIO,
    "history": HISTORY,
    "search": SEARCH,
    "message": MESSAGE,
    "messageCall": MESSAGE_CALL,
    "probe": PROBE,
    "run": RUN,
    "control": CONTROL,
    "toolUse": TOOL_USE,
    "toolCall": TOOL_CALL,
    "passRate": PASS_RATE,
    "paraphrase": PARAPHRASE,
    "assertion": ASSERTION,
    "judge": JUDGE,
    "response": RESPONSE,
    "variantResult": VARIANT_RESULT,
    "variants": VARIANTS,
    "variantProbe": VARIANT_PROBE,
    "plan": PLAN,
    "variantDrift": VARIANT_DRIFT,
}
"""Every object of the report by a name of its own (the test matches each to the schema)."""


def written(fields: tuple[Field, ...], values: Mapping[str, Any]) -> dict[str, Any]:
    """The object `values` (by attribute) describe, keyed and ordered as `fields` say: an
    optional field without a value (missing, or None) is left out; a missing required one is a
    bug (KeyError)."""
    return {
        field.key: values[field.attribute]
        for field in fields
        if not field.optional or values.get(field.attribute) is not None
    }


Reader = Callable[[Mapping[str, Any]], dict[str, Any]]


def reader(fields: tuple[Field, ...]) -> Reader:
    """A function that reads an object of `fields` the schema has checked to its values by
    attribute: every field it holds, and no key the table does not name (a newer RuleDrift's).
    Made once a table: it reads the required fields in one step (`itemgetter`), as fast as
    reading them one by one was."""
    required = [field for field in fields if field.required]
    others = tuple((field.key, field.attribute) for field in fields if not field.required)
    attributes = tuple(field.attribute for field in required)
    getter = operator.itemgetter(*(field.key for field in required))
    get: Callable[[Mapping[str, Any]], tuple[Any, ...]] = (
        getter if len(required) > 1 else lambda rendered: (getter(rendered),)
    )

    def read(rendered: Mapping[str, Any]) -> dict[str, Any]:
        return dict(zip(attributes, get(rendered)))  # noqa: B905 (the getter gives them all)

    def read_others(rendered: Mapping[str, Any]) -> dict[str, Any]:
        values = read(rendered)
        for key, attribute in others:
            if key in rendered:
                values[attribute] = rendered[key]
        return values

    return read_others if others else read


def builder(fields: tuple[Field, ...], into: Callable[..., T]) -> Callable[[Mapping[str, Any]], T]:
    """A function that makes `into` (a dataclass whose fields are, in order, the attributes of
    `fields`, all required) from an object the schema has checked, passing the values by
    position: the reader's fastest path, for its most numerous objects."""
    names = [field.name for field in dataclasses.fields(into)]  # type: ignore[arg-type]
    if not all(f.required for f in fields) or names[: len(fields)] != [f.attribute for f in fields]:
        raise TypeError(f"{into} does not take {[f.attribute for f in fields]} in that order")
    getter = operator.itemgetter(*(field.key for field in fields))
    return lambda rendered: into(*getter(rendered))
