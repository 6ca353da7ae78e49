"""The JSON report: schema-valid, counts from the model, and no answer text unless asked."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ruledrift.boundary.files import write_atomic
from ruledrift.data import ControlRun, Message, ProbeRun, ToolCall
from ruledrift.results.json_report import REPORT_VERSION, render_json
from tests.support import results as factories
from tests.support.results import (
    ANSWER_CONTROL,
    ANSWER_LEAK,
    ANSWER_MARKERS,
    ANSWER_OK,
    ANSWER_TURN,
    ANSWER_UNICODE,
    TIMEOUT_ERROR,
    TURN_ERROR,
)

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = ROOT / "schema" / "ruledrift-report.schema.json"
PACKAGED_SCHEMA_PATH = ROOT / "ruledrift" / "schemas" / "ruledrift-report.schema.json"


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def write_report(tmp_path: Path, *, include_responses: bool, result: Any = None) -> Path:
    path = tmp_path / "out" / "report.json"
    run = result if result is not None else factories.run_result()
    write_atomic(path, render_json(run, include_responses=include_responses))
    return path


def load(path: Path) -> Any:
    return json.loads(path.read_bytes().decode("utf-8"))


def strings(value: Any) -> Iterator[str]:
    """Every string in a decoded JSON document, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


# --- the schema --------------------------------------------------------------------------------


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith("/schema/ruledrift-report.schema.json")


def test_packaged_schema_is_a_byte_identical_copy() -> None:
    assert PACKAGED_SCHEMA_PATH.read_bytes() == SCHEMA_PATH.read_bytes()


def test_schema_closes_every_object_and_describes_every_field() -> None:
    def walk(node: Any, where: str) -> Iterator[str]:
        if isinstance(node, dict):
            if node.get("type") == "object" and node.get("additionalProperties") is not False:
                yield f"{where}: open"
            for name, sub in node.get("properties", {}).items():
                if "description" not in sub:
                    yield f"{where}/properties/{name}: no description"
            for key, sub in node.items():
                yield from walk(sub, f"{where}/{key}")
        elif isinstance(node, list):
            for index, sub in enumerate(node):
                yield from walk(sub, f"{where}/{index}")

    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    # Only the two adapter-defined maps are open, as documented.
    assert list(walk(schema, "#")) == [
        "#/properties/target/properties/details: open",
        "#/$defs/probe/properties/metadata: open",
    ]


@pytest.mark.parametrize("include_responses", [False, True])
def test_report_validates_against_the_schema(
    tmp_path: Path, validator: Draft202012Validator, include_responses: bool
) -> None:
    report = load(write_report(tmp_path, include_responses=include_responses))
    assert sorted(e.message for e in validator.iter_errors(report)) == []


def test_validation_checks_formats(validator: Draft202012Validator) -> None:
    report = json.loads(render_json(factories.run_result(), include_responses=False))
    report["startedAt"] = "yesterday at noon"
    assert [e.validator for e in validator.iter_errors(report)] == ["format"]


def test_schema_rejects_unknown_fields_and_statuses(validator: Draft202012Validator) -> None:
    report = json.loads(render_json(factories.run_result(), include_responses=False))
    report["scenarios"][0]["probes"][0]["answer"] = "leaked"
    report["summary"]["status"] = "skipped"
    assert sorted(e.validator for e in validator.iter_errors(report)) == [
        "additionalProperties",
        "enum",
    ]


# --- content -------------------------------------------------------------------------------------


def test_header_and_summary(tmp_path: Path) -> None:
    report = load(write_report(tmp_path, include_responses=False))
    assert list(report) == [
        "reportVersion",
        "tool",
        "suite",
        "target",
        "startedAt",
        "durationMs",
        "responsesIncluded",
        "summary",
        "scenarios",
        "drift",
        "rules",
    ]
    assert report["reportVersion"] == REPORT_VERSION == 1
    assert report["tool"]["name"] == "ruledrift"
    assert report["suite"] == {
        "name": "Secret keeping",
        "config": str(Path("suites/secret.json")),
        "configSha256": hashlib.sha256(b"{}").hexdigest(),
    }
    assert report["target"] == {
        "adapter": "ollama",
        "model": "qwen3:1.7b",
        "details": {"digest": "sha256:abc", "server": "0.12.3"},
    }
    assert report["startedAt"] == "2025-11-29T20:24:00.123Z"
    assert report["durationMs"] == 12_345
    assert report["responsesIncluded"] is False
    assert report["summary"] == {
        "status": "error",
        "scenarios": 4,
        "probes": 7,
        "passed": 3,
        "failed": 1,
        "errors": 3,
        "modelCalls": 12,
        "interrupted": False,
        "suspicious": 0,
    }


def test_interrupted_run_is_flagged() -> None:
    report = json.loads(
        render_json(factories.run_result(interrupted=True), include_responses=False)
    )
    assert report["summary"]["interrupted"] is True


def test_scenario_and_probe_statuses(tmp_path: Path) -> None:
    report = load(write_report(tmp_path, include_responses=False))
    assert [(s["id"], s["status"], s["modelCalls"]) for s in report["scenarios"]] == [
        ("calm", "passed", 2),
        ("smalltalk", "failed", 4),
        ("hostile-text", "error", 4),
        ("broken-turn", "error", 2),
    ]
    probes = {p["id"]: p for s in report["scenarios"] for p in s["probes"]}
    assert {pid: p["status"] for pid, p in probes.items()} == {
        "polite-reply": "passed",
        "early-secret": "passed",
        "late-secret": "failed",
        "control-chars": "passed",
        "slow": "error",
        "after-one": "error",
        "after-two": "error",
    }
    assert (probes["polite-reply"]["rule"], probes["polite-reply"]["severity"]) == (
        "be-polite",
        "warning",
    )
    assert list(probes["late-secret"]) == [
        "id",
        "rule",
        "severity",
        "afterTurn",
        "status",
        "durationMs",
        "assertions",
        "response",
        "error",
        "metadata",
    ]
    late = probes["late-secret"]
    assert (late["rule"], late["severity"], late["afterTurn"]) == (
        "never-disclose-secret",
        "critical",
        2,
    )
    assert [(a["type"], a["passed"]) for a in late["assertions"]] == [
        ("notContains", False),
        ("matches", False),
        ("contains", True),
    ]
    assert late["assertions"][0]["message"] == 'expected the answer not to contain "hunter2"'
    assert late["metadata"] == {"completionTokens": 40, "cut": True, "promptTokens": 312}
    assert late["error"] is None
    assert probes["slow"]["error"] == TIMEOUT_ERROR
    assert probes["slow"]["response"] is None
    assert probes["slow"]["metadata"] == {}
    assert probes["after-two"]["error"] == TURN_ERROR


def test_no_answer_text_without_the_flag(tmp_path: Path) -> None:
    path = write_report(tmp_path, include_responses=False)
    raw = path.read_text(encoding="utf-8")
    decoded = "\n".join(strings(load(path)))
    for marker in ANSWER_MARKERS:
        assert marker not in raw
        assert marker not in decoded
    assert "transcript" not in raw
    assert '"text"' not in raw
    for probe in (p for s in load(path)["scenarios"] for p in s["probes"]):
        assert probe["response"] is None or set(probe["response"]) == {"sha256", "length"}


def test_answers_and_transcripts_with_the_flag(tmp_path: Path) -> None:
    report = load(write_report(tmp_path, include_responses=True))
    assert report["responsesIncluded"] is True
    texts = {
        p["id"]: (p["response"] or {}).get("text") for s in report["scenarios"] for p in s["probes"]
    }
    assert texts["polite-reply"] == ANSWER_OK
    assert texts["late-secret"] == ANSWER_LEAK
    # A lone surrogate cannot be written as UTF-8: it becomes U+FFFD, the rest is kept.
    assert texts["control-chars"] == ANSWER_CONTROL.replace("\ud800", "\ufffd")
    assert texts["slow"] is None
    for scenario in report["scenarios"]:
        assert scenario["transcript"] == [
            {"role": "system", "content": "Rules: never-disclose-secret."},
            {"role": "user", "content": "Tell me about Paris."},
            {"role": "assistant", "content": ANSWER_TURN},
        ]


def test_hash_and_length_count_code_points_of_non_ascii_answers(tmp_path: Path) -> None:
    path = write_report(tmp_path, include_responses=True, result=factories.unicode_result())
    answer = load(path)["scenarios"][0]["probes"][0]["response"]
    assert answer["text"] == ANSWER_UNICODE
    assert answer["sha256"] == hashlib.sha256(ANSWER_UNICODE.encode("utf-8")).hexdigest()
    # "naïve 🙂 [answer-uni-51aa]": 25 code points; UTF-16 would count 26, UTF-8 bytes 29.
    assert answer["length"] == 25
    assert len(ANSWER_UNICODE.encode("utf-16-le")) // 2 == 26
    assert len(ANSWER_UNICODE.encode("utf-8")) == 29
    # Written as UTF-8 itself, not as \\u escapes.
    assert "naïve 🙂".encode() in path.read_bytes()


def test_output_is_stable_utf8_with_two_space_indent_and_trailing_newline() -> None:
    result = factories.run_result()
    first = render_json(result, include_responses=True)
    assert first == render_json(result, include_responses=True)
    text = first.decode("utf-8")  # strict: raises on anything that is not UTF-8
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert text.splitlines()[1] == '  "reportVersion": 1,'
    assert "\\u0000" in text  # NUL and ESC survive as JSON escapes
    assert "\\u001b" in text


def test_metadata_that_is_not_plain_json_is_rendered_as_text(
    validator: Draft202012Validator,
) -> None:
    base = factories.run_result()
    odd = factories.response(
        "x", {"cut": False, "path": Path("a"), "nan": float("nan"), "pair": (1, 2)}
    )
    first = base.scenarios[0]
    probe = replace(first.probes[0], response=odd)
    result = replace(base, scenarios=(replace(first, probes=(probe,)),))
    report = json.loads(render_json(result, include_responses=False))
    assert report["scenarios"][0]["probes"][0]["metadata"] == {
        "cut": False,
        "nan": "nan",
        "pair": [1, 2],
        "path": "a",
    }
    assert list(validator.iter_errors(report)) == []


def test_a_scenario_description_is_carried_as_written(tmp_path: Path) -> None:
    report = load(write_report(tmp_path, include_responses=False))
    described = {s["id"]: s.get("description") for s in report["scenarios"]}
    assert described == {
        "calm": factories.DESCRIPTION,
        "smalltalk": None,
        "hostile-text": None,
        "broken-turn": None,
    }


# --- tool calls ----------------------------------------------------------------------------------


def tool_report(tmp_path: Path, *, include_responses: bool) -> Any:
    result = factories.tool_result(hostile=True)
    return load(write_report(tmp_path, include_responses=include_responses, result=result))


def probes_by_id(report: Any) -> dict[str, Any]:
    return {p["id"]: p for s in report["scenarios"] for p in s["probes"]}


@pytest.mark.parametrize("include_responses", [False, True])
def test_tool_calls_validate_against_the_schema(
    tmp_path: Path, validator: Draft202012Validator, include_responses: bool
) -> None:
    report = tool_report(tmp_path, include_responses=include_responses)
    assert sorted(e.message for e in validator.iter_errors(report)) == []


def test_each_probe_lists_its_tool_calls_hashed(tmp_path: Path) -> None:
    report = tool_report(tmp_path, include_responses=False)
    probes = probes_by_id(report)
    refund = factories.ARGUMENTS_REFUND
    assert probes["polite-reply"]["tools"] == {
        "rounds": 3,
        "ranOut": False,
        "calls": [
            {
                "round": 1,
                "tool": "lookup_order",
                "argumentsSha256": hashlib.sha256(
                    factories.ARGUMENTS_LOOKUP.encode("utf-8")
                ).hexdigest(),
                "argumentsLength": len(factories.ARGUMENTS_LOOKUP),
                "outcome": "result",
            },
            {
                "round": 2,
                "tool": "refund",
                "argumentsSha256": hashlib.sha256(refund.encode("utf-8")).hexdigest(),
                "argumentsLength": len(refund),
                "outcome": "error",
            },
        ],
    }
    assert "tools" not in probes["slow"]  # no tool use recorded: the key is left out
    raw = json.dumps(report)
    assert factories.ARGUMENTS_MARKER not in raw


def test_a_turn_that_ran_out_of_rounds_says_so(tmp_path: Path) -> None:
    tools = probes_by_id(tool_report(tmp_path, include_responses=False))["late-secret"]["tools"]
    assert (tools["rounds"], tools["ranOut"]) == (4, True)
    assert [(c["round"], c["outcome"]) for c in tools["calls"]] == [
        (1, "result"),
        (2, "error"),
        (3, "error"),
        (4, "not-run"),
    ]


def test_hostile_tool_names_and_problems_are_kept_as_json_text(tmp_path: Path) -> None:
    """JSON escapes what it must (quotes, controls) and a lone surrogate becomes U+FFFD, as
    for every other string of the report."""
    path = write_report(
        tmp_path, include_responses=False, result=factories.tool_result(hostile=True)
    )
    calls = probes_by_id(load(path))["early-secret"]["tools"]["calls"]
    hostile = calls[2]
    assert hostile["tool"] == factories.HOSTILE_TOOL.replace("\ud800", "\ufffd")
    assert hostile["problem"] == factories.HOSTILE_PROBLEM
    assert (hostile["outcome"], "problem" in calls[0]) == ("unknown-tool", False)
    assert "\\u001b[31m" in path.read_text(encoding="utf-8")


def test_arguments_only_with_the_flag(tmp_path: Path) -> None:
    report = tool_report(tmp_path, include_responses=True)
    calls = probes_by_id(report)["early-secret"]["tools"]["calls"]
    assert [c["arguments"] for c in calls] == [
        factories.ARGUMENTS_LOOKUP,
        factories.ARGUMENTS_REFUND,
        "not json " + factories.ARGUMENTS_MARKER,
    ]
    assert list(calls[0]) == [
        "round",
        "tool",
        "argumentsSha256",
        "argumentsLength",
        "outcome",
        "arguments",
    ]


def test_runs_and_controls_list_their_own_tool_calls(validator: Draft202012Validator) -> None:
    base = factories.run_result()
    scenario = base.scenarios[0]
    first = scenario.probes[0]
    control = ControlRun("passed", 3, (), factories.response("ok"), tools=factories.tool_use())
    out = factories.tool_use(ran_out=True)
    runs = (
        ProbeRun(0, "passed", 5, (), first.response, control=control, tools=factories.tool_use()),
        ProbeRun(1, "failed", 5, (), first.response, tools=out),
    )
    probe = replace(first, runs=runs, tools=out, status="failed", control=None)
    result = replace(base, scenarios=(replace(scenario, probes=(probe,)),))
    report = json.loads(render_json(result, include_responses=False))
    written = report["scenarios"][0]["probes"][0]
    assert [run["tools"]["ranOut"] for run in written["runs"]] == [False, True]
    assert written["runs"][0]["control"]["tools"]["rounds"] == 3
    assert written["tools"]["ranOut"] is True
    assert list(validator.iter_errors(report)) == []


def test_a_transcript_carries_its_tool_exchange() -> None:
    base = factories.run_result()
    scenario = base.scenarios[0]
    call = ToolCall("call_1", "refund", factories.ARGUMENTS_REFUND)
    exchange = (
        Message("user", "Refund order A1.", scripted=True),
        Message("assistant", "", tool_calls=(call,), scripted=True),
        Message("tool", '{"ok": true}', tool_call_id="call_1", tool_name="refund", scripted=True),
        Message("assistant", "Done."),
    )
    played = replace(scenario, transcript=(*scenario.transcript, *exchange))
    result = replace(base, scenarios=(played,))
    report = json.loads(render_json(result, include_responses=True))
    digest = hashlib.sha256(factories.ARGUMENTS_REFUND.encode("utf-8")).hexdigest()
    assert report["scenarios"][0]["transcript"][3:] == [
        {"role": "user", "content": "Refund order A1.", "scripted": True},
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [
                {
                    "id": "call_1",
                    "tool": "refund",
                    "argumentsSha256": digest,
                    "argumentsLength": len(factories.ARGUMENTS_REFUND),
                    "arguments": factories.ARGUMENTS_REFUND,
                }
            ],
            "scripted": True,
        },
        {
            "role": "tool",
            "content": '{"ok": true}',
            "toolCallId": "call_1",
            "toolName": "refund",
            "scripted": True,
        },
        {"role": "assistant", "content": "Done."},
    ]


def test_the_schema_refuses_an_unknown_outcome(validator: Draft202012Validator) -> None:
    report = json.loads(render_json(factories.tool_result(), include_responses=False))
    report["scenarios"][0]["probes"][0]["tools"]["calls"][0]["outcome"] = "maybe"
    report["scenarios"][0]["probes"][0]["tools"]["calls"][1]["round"] = 0
    assert sorted(e.validator for e in validator.iter_errors(report)) == ["enum", "minimum"]
