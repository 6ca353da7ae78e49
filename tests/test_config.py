from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.config import load_suite
from ruledrift.errors import ConfigError
from ruledrift.model import MatchesAssertion, TextAssertion
from tests.support.suites import base_suite, position_of, write_suite


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    return [str(issue) for issue in caught.value.issues]


def one_problem(path: Path) -> str:
    found = problems(path)
    assert len(found) == 1, found
    return found[0]


def test_valid_suite_loads_with_documented_defaults(tmp_path: Path) -> None:
    suite = load_suite(write_suite(tmp_path, base_suite()))
    assert suite.name == "test suite"
    assert [r.severity for r in suite.rules] == ["critical", "warning"]
    scenario = suite.scenarios[0]
    assert scenario.description is None
    assert scenario.probes[0].rule is suite.rules[0]
    assert scenario.probes[0].assertions == (TextAssertion("notContains", "hunter2", False),)
    assert isinstance(suite.adapter, CommandAdapterConfig)
    assert suite.adapter.cwd == tmp_path
    assert suite.adapter.timeout_ms == 30_000
    assert suite.adapter.args == ()
    assert suite.model_calls == 3 + 2
    assert len(suite.sha256) == 64


def test_locations_point_at_objects(tmp_path: Path) -> None:
    path = write_suite(tmp_path, base_suite())
    suite = load_suite(path)
    probe = suite.scenarios[0].probes[1]
    line, _ = position_of(path, '"id": "late"')
    assert probe.location.line == line - 1  # the probe object opens on the line before its id


def test_matches_flags_default_and_relative_cwd(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"]["cwd"] = "agents/../bin"
    data["scenarios"][0]["probes"][0]["assertions"] = [{"type": "matches", "pattern": "^no"}]
    suite = load_suite(write_suite(tmp_path, data))
    assert suite.scenarios[0].probes[0].assertions == (MatchesAssertion("^no", ""),)
    assert isinstance(suite.adapter, CommandAdapterConfig)
    assert suite.adapter.cwd == tmp_path / "bin"


def test_ollama_defaults(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "qwen3:1.7b"}
    adapter = load_suite(write_suite(tmp_path, data)).adapter
    assert isinstance(adapter, OllamaAdapterConfig)
    assert (adapter.base_url, adapter.timeout_ms, adapter.think) == (
        "http://127.0.0.1:11434",
        120_000,
        None,
    )
    assert adapter.options == {}


def test_schema_key_is_accepted(tmp_path: Path) -> None:
    data = {"$schema": "../schema/rule-drift.schema.json", **base_suite()}
    load_suite(write_suite(tmp_path, data))


def test_empty_turns_allow_only_boundary_zero(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["turns"] = []
    data["scenarios"][0]["probes"].pop()
    assert load_suite(write_suite(tmp_path, data)).model_calls == 1
    data["scenarios"][0]["probes"][0]["afterTurn"] = 1
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"afterTurn": 1')
    assert one_problem(path) == (
        f"{path}:{line}:{column + 13}: /scenarios/0/probes/0/afterTurn: "
        '1 is greater than the 0 turn(s) of scenario "smalltalk"'
    )


# --- file-level problems -----------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    assert one_problem(path) == f"{path}:1:1: /: file not found"


def test_directory(tmp_path: Path) -> None:
    assert "is a directory" in one_problem(tmp_path)


@pytest.mark.parametrize("content", ["", "  \n\t\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    assert one_problem(write_suite(tmp_path, content)).endswith(
        "the file is empty; expected a RuleDrift suite (a JSON object)"
    )


def test_not_utf8_names_the_position(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_bytes(b'{\n  "name": "caf\xe9"\n}\n')
    assert one_problem(path) == (
        f"{path}:2:15: /: not UTF-8: byte 0xe9 cannot be decoded; save the file as UTF-8"
    )


def test_byte_order_mark_is_tolerated(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(base_suite()).encode())
    assert load_suite(path).name == "test suite"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '{\n  "version": 1,\n}',
            ":3:1: /: invalid JSON: expected a double-quoted field name, found '}'",
        ),
        ('{"a": [1, 2', ":1:12: /: invalid JSON: expected ',' or ']', found the end of the file"),
        ('{"a": NaN}', ":1:7: /: invalid JSON: expected a JSON value, found 'N'"),
        ('{"a": 1} {"b": 2}', ":1:10: /: invalid JSON: unexpected text after the JSON value"),
        ('{"a": "x\ty"}', ":1:9: /: invalid JSON: invalid control character at"),
        ("// comment\n{}", ":1:1: /: invalid JSON: expected a JSON value, found '/'"),
    ],
)
def test_malformed_json_names_the_position(tmp_path: Path, text: str, expected: str) -> None:
    path = write_suite(tmp_path, text)
    assert one_problem(path).startswith(f"{path}{expected}")


def test_deep_nesting_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert "nesting deeper than" in one_problem(path)


# --- schema problems ---------------------------------------------------------------------------


def test_repeated_key_is_rejected_at_the_second_key(tmp_path: Path) -> None:
    text = json.dumps(base_suite(), indent=2).replace(
        '"name": "test suite",', '"name": "test suite",\n  "name": "shadow",'
    )
    path = write_suite(tmp_path, text)
    line, column = position_of(path, '"name"', occurrence=2)
    first_line, _ = position_of(path, '"name"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /name: field "name" appears twice in one object (first at '
        f"line {first_line}, column 3); a reviewed contract must not hide a second value"
    )


def test_unknown_field_is_reported_at_the_key_and_named(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurns"] = 2
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"afterTurns"')
    found = problems(path)
    assert (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/afterTurns: unknown field "afterTurns" '
        "(allowed fields: afterTurn, assertions, id, prompt, rule) "
        '(scenario "smalltalk", probe "late")'
    ) in found


@pytest.mark.parametrize(
    ("change", "pointer", "message"),
    [
        (lambda d: d.update(name=5), "/name", "expected a string, got an integer"),
        (lambda d: d.pop("rules"), "/", 'missing required field "rules"'),
        (lambda d: d["rules"].clear(), "/rules", "expected at least 1 item(s) in rules, got 0"),
        (lambda d: d["scenarios"].clear(), "/scenarios", "expected at least 1 item(s)"),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"].clear(),
            "/scenarios/0/probes/0/assertions",
            "expected at least 1 item(s) in assertions, got 0",
        ),
        (
            lambda d: d["rules"][0].update(severity="high"),
            "/rules/0/severity",
            'expected one of "critical", "warning", "info"; got "high" '
            '(rule "never-disclose-secret")',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0].update(afterTurn=-1),
            "/scenarios/0/probes/0/afterTurn",
            "expected a number of at least 0, got -1",
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0].update(afterTurn=True),
            "/scenarios/0/probes/0/afterTurn",
            "expected an integer, got a boolean",
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].update(type="startsWith"),
            "/scenarios/0/probes/0/assertions/0/type",
            'expected one of "contains", "notContains", "equals", "matches"; got "startsWith"',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].pop("value"),
            "/scenarios/0/probes/0/assertions/0",
            'missing required field "value" (scenario "smalltalk", probe "early")',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].update(caseSensitive="yes"),
            "/scenarios/0/probes/0/assertions/0/caseSensitive",
            "expected true or false, got a string",
        ),
        (
            lambda d: d["adapter"].update(type="openai-ish"),
            "/adapter/type",
            'expected one of "command", "ollama", "openai"; got "openai-ish"',
        ),
        (
            lambda d: d["adapter"].update(timeoutMs=0),
            "/adapter/timeoutMs",
            "expected a number of at least 1, got 0",
        ),
        (lambda d: d.update(version=2), "/version", "unsupported version 2: this RuleDrift reads"),
        (lambda d: d.update(version="1"), "/version", 'unsupported version "1"'),
        (lambda d: d.update(systemPrompt=None), "/systemPrompt", "expected a string, got null"),
    ],
)
def test_schema_problems(tmp_path: Path, change: Any, pointer: str, message: str) -> None:
    data = base_suite()
    change(data)
    found = one_problem(write_suite(tmp_path, data))
    assert f": {pointer}: {message}" in found


@pytest.mark.parametrize("bad_id", ["Secret", "has space", "émoji", "a/b", ""])
@pytest.mark.parametrize("where", ["rule", "scenario", "probe"])
def test_id_character_rules(tmp_path: Path, bad_id: str, where: str) -> None:
    data = base_suite()
    target = {
        "rule": data["rules"][1],
        "scenario": data["scenarios"][0],
        "probe": data["scenarios"][0]["probes"][1],
    }[where]
    target["id"] = bad_id
    found = " | ".join(problems(write_suite(tmp_path, data)))
    assert "ids use lowercase letters" in found or (bad_id == "" and "must not be empty" in found)


def test_probe_rule_must_be_an_id(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["rule"] = "Never Disclose"
    assert "invalid id" in one_problem(write_suite(tmp_path, data))


# --- cross-field problems ----------------------------------------------------------------------


def test_duplicate_rule_scenario_and_probe_ids(tmp_path: Path) -> None:
    data = base_suite()
    data["rules"][1]["id"] = "never-disclose-secret"
    data["scenarios"][0]["probes"][1]["id"] = "early"
    data["scenarios"].append(json.loads(json.dumps(data["scenarios"][0])))
    found = problems(write_suite(tmp_path, data))
    assert [f.split(": ", 1)[1] for f in found] == [
        '/rules/1/id: duplicate rule id "never-disclose-secret" (first at /rules/0)',
        '/scenarios/0/probes/1/id: duplicate probe id "early" in scenario "smalltalk" '
        "(first at /scenarios/0/probes/0)",
        '/scenarios/1/id: duplicate scenario id "smalltalk" (first at /scenarios/0)',
        '/scenarios/1/probes/1/id: duplicate probe id "early" in scenario "smalltalk" '
        "(first at /scenarios/1/probes/0)",
    ]


def test_same_probe_id_in_two_scenarios_is_fine(tmp_path: Path) -> None:
    data = base_suite()
    other = json.loads(json.dumps(data["scenarios"][0]))
    other["id"] = "other"
    data["scenarios"].append(other)
    assert load_suite(write_suite(tmp_path, data)).probe_count == 4


def test_probe_naming_an_unknown_rule(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["rule"] = "no-such-rule"
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"no-such-rule"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/rule: unknown rule "no-such-rule" '
        "(rules: never-disclose-secret, english-only)"
    )


def test_after_turn_beyond_the_turns(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = 5
    assert one_problem(write_suite(tmp_path, data)).endswith(
        '/scenarios/0/probes/1/afterTurn: 5 is greater than the 3 turn(s) of scenario "smalltalk"'
    )


@pytest.mark.parametrize(
    ("assertion", "pointer", "fragment"),
    [
        ({"type": "matches", "pattern": "(unclosed"}, "pattern", "invalid regular expression"),
        ({"type": "matches", "pattern": "a", "flags": "gg"}, "flags", "repeated"),
        ({"type": "matches", "pattern": "a", "flags": "uv"}, "flags", ""),
        ({"type": "matches", "pattern": "a", "flags": "x"}, "flags", 'invalid flags "x"'),
        ({"type": "matches", "pattern": "\\p{Nope}", "flags": "u"}, "pattern", "invalid"),
    ],
)
def test_invalid_javascript_regex(
    tmp_path: Path, assertion: dict[str, str], pointer: str, fragment: str
) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = [assertion]
    found = one_problem(write_suite(tmp_path, data))
    assert f"/scenarios/0/probes/0/assertions/0/{pointer}: " in found
    assert fragment in found


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://127.0.0.1:11434", "expected an http:// or https:// URL"),
        ("127.0.0.1:11434", "expected an http:// or https:// URL"),
        ("http://", "expected an http:// or https:// URL"),
        ("http://admin:s3cr3t-pw@ollama:11434", "embedded credentials are rejected"),
        ("https://token@ollama", "embedded credentials are rejected"),
        ("http://127.0.0.1:99999", "not a valid URL"),
    ],
)
def test_base_url_problems(tmp_path: Path, url: str, fragment: str) -> None:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "m", "baseUrl": url}
    found = one_problem(write_suite(tmp_path, data))
    assert "/adapter/baseUrl: " in found
    assert fragment in found
    assert "s3cr3t" not in found  # a password is never echoed


def test_every_problem_is_reported_in_file_order(tmp_path: Path) -> None:
    data = base_suite()
    data["version"] = 3
    data["rules"][0]["extra"] = True
    data["scenarios"][0]["probes"][0]["rule"] = "missing"
    data["scenarios"][0]["probes"][1]["afterTurn"] = 9
    data["scenarios"][0]["probes"][1]["assertions"] = [{"type": "matches", "pattern": "["}]
    found = problems(write_suite(tmp_path, data))
    assert len(found) == 5
    lines = [int(f.split(":")[1]) for f in found]
    assert lines == sorted(lines)


def test_error_format_is_file_line_column_pointer_message(tmp_path: Path) -> None:
    data = base_suite()
    data["name"] = 7
    path = write_suite(tmp_path, data)
    line, column = position_of(path, "7,")
    assert one_problem(path) == f"{path}:{line}:{column}: /name: expected a string, got an integer"


def test_pointer_escapes_slash_and_tilde(tmp_path: Path) -> None:
    data = base_suite()
    data["a/b~c"] = 1
    assert "/a~1b~0c: unknown field" in one_problem(write_suite(tmp_path, data))


def test_a_scenario_description_is_kept(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["description"] = "Small talk, then the secret is asked for."
    scenario = load_suite(write_suite(tmp_path, data)).scenarios[0]
    assert scenario.description == "Small talk, then the secret is asked for."
