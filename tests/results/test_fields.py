"""One table of the report's fields: the writer writes, the reader reads and the schema describes
the same keys for each object (`ruledrift.results.fields`)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest

from ruledrift.data import (
    AssertionResult,
    Balance,
    ControlRun,
    History,
    JudgeRecord,
    Location,
    Message,
    ProbeRun,
    RunResult,
    SearchResult,
    ShardInfo,
    ToolCall,
    Variant,
    VariantResult,
    VerdictPolicy,
    response_of,
)
from ruledrift.results import fields
from ruledrift.results.fields import Field
from ruledrift.results.json_load import report_from_bytes
from ruledrift.results.json_report import render_json
from ruledrift.run.verdicts import probe_verdict, sequential_design
from ruledrift.suite.load import schema_text
from tests.support import results as factories

SCHEMA: dict[str, Any] = json.loads(schema_text("ruledrift-report.schema.json"))

WHERE = {  # each table's object in the schema, as a JSON pointer
    "report": "",
    "tool": "/properties/tool",
    "suite": "/properties/suite",
    "shard": "/properties/suite/properties/shard",
    "balancedBy": "/properties/suite/properties/balancedBy",
    "target": "/properties/target",
    "summary": "/properties/summary",
    "policy": "/properties/policy",
    "caveat": "/properties/policy/properties/caveats/items",
    "drift": "/properties/drift/items",
    "boundary": "/properties/drift/items/properties/boundaries/items",
    "rule": "/properties/rules/items",
    "scenario": "/$defs/scenario",
    "history": "/$defs/scenario/properties/history",
    "search": "/$defs/search",
    "message": "/$defs/message",
    "messageCall": "/$defs/message/properties/toolCalls/items",
    "probe": "/$defs/probe",
    "run": "/$defs/probe/properties/runs/items",
    "control": "/$defs/control",
    "toolUse": "/$defs/toolUse",
    "toolCall": "/$defs/toolUse/properties/calls/items",
    "passRate": "/$defs/probe/properties/passRate",
    "paraphrase": "/$defs/probe/properties/paraphrases/items",
    "assertion": "/$defs/assertion",
    "judge": "/$defs/judge",
    "response": "/$defs/response",
    "variantResult": "/$defs/variantResult",
    "variants": "/properties/variants",
    "variantProbe": "/properties/variants/properties/probes/items",
    "plan": "/properties/variants/properties/plan",
    "variantDrift": "/properties/variants/properties/drift/items",
}


def node(pointer: str) -> dict[str, Any]:
    found: Any = SCHEMA
    for token in pointer.split("/")[1:]:
        found = found[int(token)] if isinstance(found, list) else found[token]
    return dict(found)


def closed_objects(value: object, pointer: str = "") -> Iterator[str]:
    """The pointer of every object the schema closes (`additionalProperties: false`); the
    adapter's free-form `metadata` is not one."""
    if isinstance(value, dict):
        if value.get("additionalProperties") is False:
            yield pointer
        for key, child in value.items():
            yield from closed_objects(child, f"{pointer}/{key}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from closed_objects(child, f"{pointer}/{index}")


def schema_mismatches(tables: Mapping[str, tuple[Field, ...]]) -> list[str]:
    """Where the tables and the schema's `properties` disagree: a key one has and the other has
    not, a key the schema requires that the table lets the writer leave out, or one the reader
    counts on that the schema does not require."""
    problems = []
    for name, table in tables.items():
        schema = node(WHERE[name])
        keys = [f.key for f in table]
        problems += [
            f"{name}: {k} is not in the schema" for k in keys if k not in schema["properties"]
        ]
        problems += [
            f"{name}: {k} is not in the table" for k in schema["properties"] if k not in keys
        ]
        optional = {f.key for f in table if f.optional}
        problems += [f"{name}: {k} is required" for k in schema["required"] if k in optional]
        required = [f.key for f in table if f.required]  # the reader counts on these
        demanded = schema["required"]
        problems += [
            f"{name}: {k} is not required"
            for k in required
            if k in schema["properties"] and k not in demanded
        ]
        if len(set(keys)) < len(keys):
            problems.append(f"{name}: a key twice")
    return problems


def where(value: object, pointer: str) -> Iterator[tuple[str, Any]]:
    """Each object of the document `value` with the pointer of its schema, found by walking the
    document and the schema together (`$ref` and a nullable `oneOf` followed)."""
    schema = node(pointer)
    if "$ref" in schema:
        yield from where(value, schema["$ref"].removeprefix("#"))
        return
    for index, branch in enumerate(schema.get("oneOf", ())):
        if "$ref" in branch or branch.get("type") == "object":
            yield from where(value, f"{pointer}/oneOf/{index}")
    if isinstance(value, dict) and schema.get("additionalProperties") is False:
        yield pointer, value
        for key, child in value.items():
            if key in schema["properties"]:
                yield from where(child, f"{pointer}/properties/{key}")
    elif isinstance(value, list) and "items" in schema:
        for child in value:
            yield from where(child, f"{pointer}/items")


def writer_mismatches(document: object, tables: Mapping[str, tuple[Field, ...]]) -> list[str]:
    """Where a written object holds a key its table does not name, or holds its keys in another
    order than the table's."""
    names = {pointer: name for name, pointer in WHERE.items()}
    problems = []
    for pointer, value in where(document, ""):
        keys = [f.key for f in tables[names[pointer]]]
        unknown = [k for k in value if k not in keys]
        if unknown:
            problems.append(f"{names[pointer]}: {unknown} not in the table")
        elif list(value) != sorted(value, key=keys.index):
            problems.append(f"{names[pointer]}: {list(value)} not in the table's order")
    return problems


def everything(*, paraphrased: bool = True) -> RunResult:
    """A run whose report holds every object the schema describes: `--repeat auto` with
    paraphrased prompts, a shard cut by an earlier report's times, a scenario description, a
    search of a breaking depth, tool calls (a probe's, its runs', their controls', and a
    transcript's tool exchange, scripted)."""
    base = factories.run_result()
    policy = VerdictPolicy(repeat="auto", min_pass_rate=0.8, inconclusive_passes=True)
    original = base.scenarios[0]
    first = original.probes[0]
    wordings = ("say it again", "once more") if paraphrased else ()
    probe = replace(first.probe, paraphrases=wordings)
    answer = response_of("Looked at it.\nVERDICT: PASS")
    judged = AssertionResult(
        "judge", True, "the judge answered PASS", JudgeRecord("openai", "j", 0.0, 3, answer)
    )
    assertions = (*first.assertions, judged)
    tools = factories.tool_use(hostile=True)
    answer_control = response_of("Write to help@example.com")
    control = ControlRun("passed", 4, first.assertions, answer_control, tools=tools)
    runs = [
        ProbeRun(i, "passed", 10, assertions, first.response, None, i % 3, 7 + i, control, tools)
        for i in range(6)
    ]
    verdict = replace(probe_verdict(probe, runs, policy, sequential_design(policy, 1)), tools=tools)
    call = ToolCall("c1", "refund", factories.ARGUMENTS_REFUND)
    depth = probe.after_turn
    point = replace(verdict, probe=replace(probe, id=f"deep-after-{depth}"))
    rule = probe.rule.id
    search = SearchResult(
        "deep", rule, depth, depth + 2, "unfinished", depth, None, depth + 1, (depth,), 120, None
    )
    scenario = replace(
        original,
        scenario=replace(
            original.scenario,
            description="the whole report",
            history=History("sessions/4711.jsonl", "f" * 64, "replay", ()),
        ),
        probes=(verdict, *original.probes[1:], point),
        transcript=(
            *original.transcript,
            Message("user", "recorded", recorded=True),
            Message("user", "Refund order A1.", scripted=True),
            Message("assistant", "", tool_calls=(call,), scripted=True),
            Message("tool", '{"ok": true}', tool_call_id="c1", tool_name="refund", scripted=True),
        ),
        runs=6,
        judge_calls=6,
        searches=(search,),
    )
    reminder = Variant("reminder", Location(1, 1), remind_every=1, remind_as="user")
    scenario = replace(scenario, variants=(VariantResult(reminder, scenario.probes, 3),))
    ids = tuple(s.scenario.id for s in base.scenarios)
    rules = tuple(r.id for r in base.suite.rules)
    shard = ShardInfo(1, 2, ids, rules, assigned=ids, source="slurm")
    balance = Balance("main/report.json", "e" * 64, "2026-11-30T09:00:00.000Z")
    scenarios = (scenario, *base.scenarios[1:])
    suite = replace(base.suite, vacuous_passes="warn")
    return replace(
        base,
        suite=suite,
        scenarios=scenarios,
        policy=policy,
        shard=shard,
        balanced_by=balance,
        seed=7,
    )


def test_every_closed_object_of_the_schema_has_a_table() -> None:
    assert sorted(closed_objects(SCHEMA)) == sorted(WHERE.values())
    assert set(WHERE) == set(fields.OBJECTS)


def test_each_table_names_the_keys_the_schema_lists() -> None:
    assert schema_mismatches(fields.OBJECTS) == []


def test_a_table_and_the_schema_apart_are_found() -> None:
    """The check can fail: a key the table lacks, one the schema lacks, a required one left out."""
    tables = dict(fields.OBJECTS)
    tables["summary"] = fields.SUMMARY[:-1]
    tables["run"] = (*fields.RUN, Field("tokens", "tokens"))
    tables["tool"] = (Field("name", "name", optional=True), fields.TOOL[1])
    tables["shard"] = (*fields.SHARD[:-1], Field("source", "source"))
    assert schema_mismatches(tables) == [
        "tool: name is required",
        "shard: source is not required",
        "summary: vacuous is not in the table",
        "run: tokens is not in the schema",
    ]


@pytest.mark.parametrize("include_responses", [False, True])
def test_the_writer_writes_the_tables_keys_in_their_order(include_responses: bool) -> None:
    document = json.loads(render_json(everything(), include_responses=include_responses))
    written = {pointer for pointer, _ in where(document, "")}
    if include_responses:  # every object of the schema, so every table, was written
        assert written == set(WHERE.values())
    assert writer_mismatches(document, fields.OBJECTS) == []


def test_a_key_the_writer_adds_alone_is_found() -> None:
    """The check can fail: a key the table lacks, and keys out of the table's order."""
    document = json.loads(render_json(everything(), include_responses=True))
    probe = document["scenarios"][0]["probes"][0]
    probe["runs"][0]["tokens"] = 12
    document["tool"] = {"version": "1", "name": "ruledrift"}
    assert writer_mismatches(document, fields.OBJECTS) == [
        "tool: ['version', 'name'] not in the table's order",
        "run: ['tokens'] not in the table",
    ]


@pytest.mark.parametrize("include_responses", [False, True])
def test_the_reader_reads_back_every_key_the_writer_wrote(include_responses: bool) -> None:
    """Each written object's keys are each read (`fields.reader`) to an attribute, and the
    report the reader's result renders is the same bytes (but for the count of each paraphrase:
    a report does not hold a probe's paraphrases, so that comes back only as the runs' `prompt`
    numbers; this is older than the table)."""
    raw = render_json(everything(paraphrased=False), include_responses=include_responses)
    document = json.loads(raw)
    names = {pointer: name for name, pointer in WHERE.items()}
    for pointer, value in where(document, ""):
        assert len(fields.reader(fields.OBJECTS[names[pointer]])(value)) == len(value)
    loaded = report_from_bytes(raw, source="report.json").result
    assert render_json(loaded, include_responses=include_responses) == raw
