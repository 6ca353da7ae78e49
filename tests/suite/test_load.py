from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.data import (
    CommandAssertion,
    JudgeAssertion,
    LanguageAssertion,
    Location,
    MatchesAssertion,
    TextAssertion,
)
from ruledrift.errors import MAX_SHOWN_ISSUES, ConfigError
from ruledrift.suite.load import MAX_SUITE_BYTES, load_suite
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
        'probe "early": 1 is greater than the 0 turn(s) of scenario "smalltalk"'
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
        ('{"a": [1, 2', ":1:12: /a: invalid JSON: expected ',' or ']', found the end of the file"),
        ('{"a": NaN}', ":1:7: /a: invalid JSON: expected a JSON value, found 'N'"),
        ('{"a": 1} {"b": 2}', ":1:10: /: invalid JSON: unexpected text after the JSON value"),
        ('{"a": "x\ty"}', ":1:9: /a: invalid JSON: invalid control character at"),
        ('{"a": {"b" 1}}', ":1:12: /a/b: invalid JSON: expected ':' after a field name, found '1'"),
        ("// comment\n{}", ":1:1: /: invalid JSON: expected a JSON value, found '/'"),
    ],
)
def test_malformed_json_names_the_position(tmp_path: Path, text: str, expected: str) -> None:
    path = write_suite(tmp_path, text)
    assert one_problem(path).startswith(f"{path}{expected}")


def test_deep_nesting_is_an_error_not_a_crash(tmp_path: Path) -> None:
    path = write_suite(tmp_path, "[" * 200_000 + "]" * 200_000)
    assert one_problem(path) == (
        f"{path}:1:102: {'/0' * 101}: nesting deeper than 100 levels; a suite needs about 8"
    )


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
    data["scenarios"][0]["probes"][1]["expect"] = 2
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"expect"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/expect: unknown field "expect" '
        "(allowed fields: afterTurn, assertions, control, id, prompt, rule) "
        '(scenario "smalltalk", probe "late")'
    )


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
            "expected an integer, a list of integers (e.g. [0, 4, 8]) or a search "
            '(e.g. {"search": [0, 64]}), got a boolean',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].update(type="startsWith"),
            "/scenarios/0/probes/0/assertions/0/type",
            'expected one of "contains", "notContains", "equals", "matches", "notMatches", '
            '"language", "notLeaks", "answers", "fluent", "command", "judge", "calls", '
            '"notCalls", "noCalls", "callsBefore", "validCalls"; got "startsWith" '
            '(scenario "smalltalk", probe "early")',
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
        f'{path}:{line}:{column}: /scenarios/0/probes/1/rule: probe "late": unknown rule '
        '"no-such-rule" (rules: never-disclose-secret, english-only)'
    )


def test_after_turn_beyond_the_turns(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = 5
    assert one_problem(write_suite(tmp_path, data)).endswith(
        '/scenarios/0/probes/1/afterTurn: probe "late": 5 is greater than the 3 turn(s) of '
        'scenario "smalltalk"'
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


# --- numbers: integers are integers, and every number can be used -----------------------------


def suite_with(tmp_path: Path, data: dict[str, Any], placeholder: str, literal: str) -> Path:
    """The suite with the JSON string `placeholder` replaced by a raw number literal."""
    text = json.dumps(data, indent=2).replace(json.dumps(placeholder), literal)
    return write_suite(tmp_path, text)


def openai_suite(**adapter: object) -> dict[str, Any]:
    data = base_suite()
    data["adapter"] = {"type": "openai", "model": "m", "baseUrl": "http://127.0.0.1:9/v1"}
    data["adapter"].update(adapter)
    return data


def test_an_integral_float_is_not_an_integer(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = "AT"
    path = suite_with(tmp_path, data, "AT", "2.0")
    line, column = position_of(path, "2.0")
    assert one_problem(path) == (
        f"{path}:{line}:{column}: /scenarios/0/probes/1/afterTurn: expected an integer, e.g. 2 "
        '(not 2.0) (scenario "smalltalk", probe "late")'
    )


@pytest.mark.parametrize(
    ("data", "pointer", "literal", "message"),
    [
        (
            base_suite(),
            "/version",
            "1.0",
            "unsupported version 1.0: this RuleDrift reads version 1",
        ),
        (
            base_suite(),
            "/adapter/timeoutMs",
            "3e4",
            "expected an integer, e.g. 30000 (not 30000.0)",
        ),
        (openai_suite(), "/adapter/timeoutMs", "1000.0", "expected an integer, e.g. 1000"),
        (openai_suite(options={}), "/adapter/options/seed", "42.0", "e.g. 42 (not 42.0)"),
        (openai_suite(options={}), "/adapter/options/max_tokens", "1E2", "e.g. 100 (not 100.0)"),
        (
            base_suite(),
            "/scenarios/0/probes/1/afterTurn",
            "1e300",  # no "at most 10000" as well: the type is what is wrong
            "expected an integer (digits only, no fraction or exponent), got 1e+300",
        ),
    ],
)
def test_every_integer_field_refuses_a_float(
    tmp_path: Path, data: dict[str, Any], pointer: str, literal: str, message: str
) -> None:
    data = copy.deepcopy(data)  # the parameter is shared by reruns
    parts = pointer.strip("/").split("/")
    target: Any = data
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    target[parts[-1]] = "NUMBER"
    path = suite_with(tmp_path, data, "NUMBER", literal)
    line, column = position_of(path, literal)
    found = one_problem(path)
    assert found.startswith(f"{path}:{line}:{column}: {pointer}: ")
    assert message in found


@pytest.mark.parametrize(
    ("literal", "message"),
    [
        ("1e400", "the number 1e400 is out of range: numbers must be finite (at most ~1.8e308)"),
        ("-1e999", "the number -1e999 is out of range"),
        ("1e-400", "the number 1e-400 is too small to represent: it would become 0 (write 0)"),
        ("9" * 5000, "the integer 99999999999999999999999… (5,000 characters) is out of range"),
        ("9" * 400, "(400 characters) is out of range: integers must fit in 64 bits"),
        ("9223372036854775808", "is out of range: integers must fit in 64 bits"),
    ],
)
@pytest.mark.parametrize(
    ("adapter", "field"),
    [
        ({"type": "command", "command": "python3"}, "/adapter/timeoutMs"),
        ({"type": "ollama", "model": "m", "options": {}}, "/adapter/options/num_ctx"),
        ({"type": "ollama", "model": "m", "options": {"nested": {}}}, "/adapter/options/nested/x"),
        (openai_suite(extraBody={})["adapter"], "/adapter/extraBody/top_k"),
        (openai_suite(options={})["adapter"], "/adapter/options/temperature"),
    ],
)
def test_numbers_that_cannot_be_used_are_located_errors(
    tmp_path: Path, literal: str, message: str, adapter: dict[str, Any], field: str
) -> None:
    data = base_suite()
    data["adapter"] = target = copy.deepcopy(adapter)  # the parameter is shared by literals
    for part in field.split("/")[2:-1]:
        target = target[part]
    target[field.rsplit("/", 1)[1]] = "NUMBER"
    path = suite_with(tmp_path, data, "NUMBER", literal)
    line, column = position_of(path, literal)
    found = one_problem(path)
    assert found.startswith(f"{path}:{line}:{column}: {field}: ")
    assert message in found


@pytest.mark.parametrize(
    "adapter",
    [
        {"type": "command", "command": "python3"},
        {"type": "ollama", "model": "m"},
        openai_suite()["adapter"],
    ],
)
def test_timeout_is_at_most_a_day(tmp_path: Path, adapter: dict[str, Any]) -> None:
    data = base_suite()
    data["adapter"] = copy.deepcopy(adapter)
    data["adapter"]["timeoutMs"] = 86_400_000
    loaded = load_suite(write_suite(tmp_path, data)).adapter
    assert getattr(loaded, "timeout_ms", None) == 86_400_000
    data["adapter"]["timeoutMs"] = 86_400_001
    assert one_problem(write_suite(tmp_path, data)).endswith(
        "/adapter/timeoutMs: expected at most 86400000 milliseconds (a day), got 86400001"
    )


def test_turns_and_after_turn_are_bounded(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["turns"] = ["hi"] * 10_000
    data["scenarios"][0]["probes"][1]["afterTurn"] = 10_000
    assert load_suite(write_suite(tmp_path, data)).model_calls == 10_000 + 2
    data["scenarios"][0]["turns"].append("one more")
    data["scenarios"][0]["probes"][1]["afterTurn"] = 10_001
    assert [p.split(": ", 1)[1] for p in problems(write_suite(tmp_path, data))] == [
        "/scenarios/0/turns: expected at most 10000 item(s) in turns, got 10,001 "
        '(scenario "smalltalk")',
        "/scenarios/0/probes/1/afterTurn: expected a number of at most 10000, got 10001 "
        '(scenario "smalltalk", probe "late")',
    ]


# --- files that are not suites -----------------------------------------------------------------


# `ruledrift validate` in a child bounded in time and memory: a reader that blocks or never
# stops would otherwise hang the test run or take the machine's memory with it
_BOUNDED_VALIDATE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2**31, 2**31))
from ruledrift.cli import main
sys.exit(main(["validate", sys.argv[1]]))
"""


def validate_bounded(path: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", _BOUNDED_VALIDATE, str(path)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.process
def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "suite.json"
    os.mkfifo(fifo)  # nobody writes to it: reading it would wait forever
    done = validate_bounded(fifo)
    assert (done.returncode, done.stderr) == (
        2,
        f"{fifo}:1:1: /: is a FIFO (named pipe), not a regular file; expected a RuleDrift suite "
        "(a JSON file): pipes and devices are refused, as reading one may never end\n"
        "error: 1 problem(s) in the configuration\n",
    )


@pytest.mark.process
def test_a_device_that_never_ends_is_refused() -> None:
    done = validate_bounded(Path("/dev/zero"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("/dev/zero:1:1: /: is a character device, not a regular file")


def test_a_suite_over_16_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    with path.open("wb") as file:
        file.truncate(MAX_SUITE_BYTES + 1)  # sparse: no 16 MiB written, none read
    assert one_problem(path) == (
        f"{path}:1:1: /: is 16,777,217 bytes; a suite may be at most 16 MiB (16,777,216 bytes): "
        "split it into several suites"
    )
    path.write_bytes(b" " * MAX_SUITE_BYTES)
    assert one_problem(path).endswith(
        "the file is empty; expected a RuleDrift suite (a JSON object)"
    )


@pytest.mark.parametrize("name", ["a" * 5000, "a" * 256 + ".json", "d/" * 2100 + "suite.json"])
def test_a_path_too_long_is_a_configuration_error(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert one_problem(path) == (
        f"{path}:1:1: /: cannot be opened: the path, or a name in it, is too long for the "
        "operating system (File name too long); use a shorter path"
    )


def test_a_path_with_a_nul_character_is_a_configuration_error(tmp_path: Path) -> None:
    path = tmp_path / "suite\0.json"
    assert one_problem(path) == (
        f"{tmp_path}/suite\\x00.json:1:1: /: cannot be opened: the path contains a NUL character"
    )


# --- many problems -----------------------------------------------------------------------------


def test_a_hundred_problems_are_shown_and_all_are_kept(tmp_path: Path) -> None:
    data = base_suite()
    data.update({f"k{i}": 1 for i in range(100_000)})
    path = write_suite(tmp_path, data)
    with pytest.raises(ConfigError) as caught:  # its time: benchmarks/config_errors_benchmark.py
        load_suite(path)
    assert len(caught.value.issues) == 100_000
    shown = str(caught.value).split("\n")
    assert len(shown) == MAX_SHOWN_ISSUES + 1
    assert shown[0].startswith(f"{path}:")
    assert shown[-1] == "… and 99,900 more problem(s)"
    assert len(str(caught.value)) < 30_000


def test_exactly_a_hundred_problems_have_no_count_line(tmp_path: Path) -> None:
    data = base_suite()
    data.update({f"k{i}": 1 for i in range(100)})
    with pytest.raises(ConfigError) as caught:
        load_suite(write_suite(tmp_path, data))
    assert str(caught.value).split("\n")[-1].startswith(str(tmp_path))


def test_an_unknown_rule_names_a_few_of_the_rules(tmp_path: Path) -> None:
    data = base_suite()
    data["rules"] = [{"id": f"r{i}", "instruction": "x"} for i in range(5_000)]
    data["scenarios"][0]["probes"][0]["rule"] = "nope"
    data["scenarios"][0]["probes"][1]["rule"] = "r4999"
    assert one_problem(write_suite(tmp_path, data)).endswith(
        '/scenarios/0/probes/0/rule: probe "early": unknown rule "nope" '
        "(rules: r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, … and 4,990 more)"
    )


# --- hostile text: surrogates, control characters ----------------------------------------------


def test_lone_surrogates_are_repaired_where_they_enter(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "m", "options": {"stop": "LONE"}}
    data["name"] = data["systemPrompt"] = data["rules"][0]["instruction"] = "LONE"
    scenario = data["scenarios"][0]
    scenario["description"] = scenario["turns"][0] = scenario["probes"][0]["prompt"] = "LONE"
    scenario["probes"][0]["assertions"] = [
        {"type": "contains", "value": "LONE"},
        {"type": "matches", "pattern": "LONE"},
    ]
    text = json.dumps(data).replace("LONE", "a\\ud83db\\ude00 \\ud83d\\ude00")
    text = text.replace('"stop"', '"key\\udfff"')
    suite = load_suite(write_suite(tmp_path, text))
    repaired = "a\ufffdb\ufffd 😀"
    scenario_ = suite.scenarios[0]
    probe = scenario_.probes[0]
    assert isinstance(suite.adapter, OllamaAdapterConfig)
    assert suite.adapter.options == {"key\ufffd": repaired}
    assert {
        suite.name,
        suite.system_prompt,
        suite.rules[0].instruction,
        scenario_.description,
        scenario_.turns[0],
        probe.prompt,
    } == {repaired}
    assert probe.assertions == (
        TextAssertion("contains", repaired, False),
        MatchesAssertion(repaired, ""),
    )


HOSTILE = "x\n/tmp/forged.json:1:1: /: forged\r\x1b[31m\x9b2J\u2028\t::error::y"


def assert_one_clean_line(issue: str) -> None:
    assert re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", issue) is None, repr(issue)


def test_hostile_keys_and_values_cannot_forge_a_line(tmp_path: Path) -> None:
    data = base_suite()
    data[HOSTILE] = 1
    data["rules"].append({"id": HOSTILE, "instruction": "x"})
    data["rules"][0]["severity"] = HOSTILE
    data["scenarios"][0]["probes"][0]["rule"] = "no-such-rule"
    path = write_suite(tmp_path, data)
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    issues = [str(issue) for issue in caught.value.issues]
    assert len(issues) == 4, issues
    for issue in issues:
        assert issue.startswith(f"{path}:")
        assert_one_clean_line(issue)
    assert str(caught.value).split("\n") == issues
    assert "/x ⏎ ~1tmp~1forged.json:1:1: ~1: forged\\r\\x1b[31m\\x9b2J\\u2028\\t::error::y: " in (
        "\n".join(issues)
    )


def test_a_hostile_file_name_cannot_forge_a_line(tmp_path: Path) -> None:
    path = tmp_path / "a\nb.json:1:1: /: forged\x1b]0;x\x07"
    issue = one_problem(path)
    assert_one_clean_line(issue)
    assert issue.endswith(": /: file not found")


# --- everything that validates can run ---------------------------------------------------------


def test_ollama_think_accepts_max(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "m", "think": "max"}
    adapter = load_suite(write_suite(tmp_path, data)).adapter
    assert isinstance(adapter, OllamaAdapterConfig)
    assert adapter.think == "max"
    data["adapter"]["think"] = "maximum"
    assert one_problem(write_suite(tmp_path, data)).endswith(
        '/adapter/think: expected true, false, "low", "medium", "high" or "max"; got "maximum"'
    )


@pytest.mark.parametrize(
    ("change", "pointer", "fragment"),
    [
        (lambda d: d["rules"][1].update(id="english\n"), "/rules/1/id", "invalid id"),
        (
            lambda d: d["scenarios"][0]["probes"][1].update(id="late\n"),
            "/scenarios/0/probes/1/id",
            "invalid id",
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0].update(
                assertions=[{"type": "matches", "pattern": "a", "flags": "g\n"}]
            ),
            "/scenarios/0/probes/0/assertions/0/flags",
            'invalid flags "g\\n"',
        ),
        (
            lambda d: d.update(adapter=openai_suite(apiKeyEnv="KEY\n")["adapter"]),
            "/adapter/apiKeyEnv",
            'invalid environment variable name "KEY\\n": use letters, digits and underscores',
        ),
    ],
)
def test_patterns_are_ecmascript_a_final_newline_does_not_pass(
    tmp_path: Path, change: Any, pointer: str, fragment: str
) -> None:
    data = base_suite()
    change(data)
    found = one_problem(write_suite(tmp_path, data))
    assert f": {pointer}: " in found
    assert fragment in found


def test_deep_nesting_in_options_is_a_located_error(tmp_path: Path) -> None:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": "m", "options": {"x": "DEEP"}}
    path = suite_with(tmp_path, data, "DEEP", "[" * 200_000 + "]" * 200_000)
    line, column = position_of(path, "[" * 99)  # x is at depth 3: the 99th "[" is too deep
    assert one_problem(path) == (
        f"{path}:{line}:{column + 98}: /adapter/options/x{'/0' * 98}: nesting deeper than 100 "
        "levels; a suite needs about 8"
    )


def test_long_strings_load_and_messages_stay_short(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["prompt"] = "p" * 10_000_000
    data["rules"][0]["severity"] = "s" * 1_000_000
    found = one_problem(write_suite(tmp_path, data))
    assert found.endswith(f'got "{"s" * 56}... (rule "never-disclose-secret")')
    assert len(found) < 400
    del data["rules"][0]["severity"]
    assert len(load_suite(write_suite(tmp_path, data)).scenarios[0].probes[0].prompt) == 10**7


# --- one probe at several depths: afterTurn lists ----------------------------------------------


def test_an_after_turn_list_makes_one_probe_per_boundary(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0].update(id="secret", afterTurn=[0, 3, 1])
    path = write_suite(tmp_path, data)
    suite = load_suite(path)
    probes = suite.scenarios[0].probes
    # config order, then the list's order; the single-boundary probe keeps its id
    assert [(p.id, p.after_turn) for p in probes] == [
        ("secret-after-0", 0),
        ("secret-after-3", 3),
        ("secret-after-1", 1),
        ("late", 3),
    ]
    line, _ = position_of(path, '"id": "secret"')
    assert {p.location for p in probes[:3]} == {Location(line - 1, 9)}  # the object's location
    assert len({(p.rule, p.prompt, p.assertions) for p in probes[:3]}) == 1
    assert probes[0].rule is suite.rules[0]
    assert suite.probe_count == 4
    assert suite.model_calls == 3 + 4


def test_a_one_item_list_still_names_the_probe_by_its_boundary(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = [3]
    probes = load_suite(write_suite(tmp_path, data)).scenarios[0].probes
    assert [(p.id, p.after_turn) for p in probes] == [("early", 0), ("late-after-3", 3)]


@pytest.mark.parametrize(
    ("after", "pointer", "message"),
    [
        ([], "/afterTurn", "expected at least 1 item(s) in afterTurn, got 0"),
        (
            [0, 2, 2],
            "/afterTurn/2",
            "2 is listed twice (first at /scenarios/0/probes/1/afterTurn/1); list each "
            'boundary once (scenario "smalltalk", probe "late")',
        ),
        ([0, 5], "/afterTurn/1", 'probe "late": 5 is greater than the 3 turn(s) of scenario'),
        ([0, -1], "/afterTurn/1", "expected a number of at least 0, got -1"),
        ([0, 10_001], "/afterTurn/1", "expected a number of at most 10000, got 10001"),
        ([0, "2"], "/afterTurn/1", 'expected an integer, got a string (scenario "smalltalk"'),
        ([0, True], "/afterTurn/1", "expected an integer, got a boolean"),
        ([[1]], "/afterTurn/0", "expected an integer, got an array"),
        (
            "3",
            "/afterTurn",
            "expected an integer, a list of integers (e.g. [0, 4, 8]) or a search "
            '(e.g. {"search": [0, 64]}), got a string',
        ),
    ],
)
def test_after_turn_list_problems_point_at_the_item(
    tmp_path: Path, after: object, pointer: str, message: str
) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = copy.deepcopy(after)
    found = one_problem(write_suite(tmp_path, data))
    assert f": /scenarios/0/probes/1{pointer}: {message}" in found


def test_an_after_turn_item_is_located_at_its_line_and_column(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][1]["afterTurn"] = [0, 2.0, 9]
    path = write_suite(tmp_path, json.dumps(data))  # on one line: the column tells the items apart
    _, column = position_of(path, "2.0")
    _, nine = position_of(path, "9]")
    assert problems(path) == [
        f"{path}:1:{column}: /scenarios/0/probes/1/afterTurn/1: expected an integer, e.g. 2 "
        '(not 2.0) (scenario "smalltalk", probe "late")',
        f'{path}:1:{nine}: /scenarios/0/probes/1/afterTurn/2: probe "late": 9 is greater '
        'than the 3 turn(s) of scenario "smalltalk"',
    ]


def test_a_made_id_that_another_probe_has_is_a_located_error(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0].update(id="late-after-3")
    data["scenarios"][0]["probes"][1]["afterTurn"] = [1, 3]
    path = write_suite(tmp_path, data)
    line, column = position_of(path, "3\n", occurrence=1)
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/afterTurn/1: probe "late": afterTurn 3 '
        'makes the id "late-after-3", which probe "late-after-3" in scenario "smalltalk" '
        "already has (first at /scenarios/0/probes/0); rename one of them"
    )
    data["scenarios"][0]["probes"].reverse()  # the list first: the later, plain id is the error
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"late-after-3"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/id: duplicate probe id "late-after-3" '
        'in scenario "smalltalk": probe "late" makes it from afterTurn 3 (first at '
        "/scenarios/0/probes/0/afterTurn/1); rename one of them"
    )


def test_two_lists_with_one_id_are_one_duplicate_id(tmp_path: Path) -> None:
    data = base_suite()
    for probe in data["scenarios"][0]["probes"]:
        probe.update(id="secret", afterTurn=[0, 3])
    assert one_problem(write_suite(tmp_path, data)).endswith(
        '/scenarios/0/probes/1/id: duplicate probe id "secret" in scenario "smalltalk" '
        "(first at /scenarios/0/probes/0)"
    )


def test_made_ids_are_ids_of_at_most_128_characters(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["turns"] = ["hi"] * 100
    data["scenarios"][0]["probes"][1].update(id="p" * 119, afterTurn=[0, 100])
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"' + "p" * 119)
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/id: probe "{"p" * 56}...: with '
        f'afterTurn 100 its id would be "{"p" * 56}..., 129 characters; ids are at most 128: '
        "shorten the probe's id"
    )
    data["scenarios"][0]["probes"][1]["afterTurn"] = [0, 99]
    assert load_suite(write_suite(tmp_path, data)).scenarios[0].probes[-1].id == (
        "p" * 119 + "-after-99"
    )


# --- did you mean ------------------------------------------------------------------------------


def test_an_unknown_rule_suggests_the_rule_probably_meant(tmp_path: Path) -> None:
    data = base_suite()
    data["rules"].append({"id": "no-competitors", "instruction": "Never name a competitor."})
    data["scenarios"][0]["probes"][1].update(id="secret-late", rule="no-competitor")
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"no-competitor"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/rule: probe "secret-late": unknown '
        'rule "no-competitor" (did you mean "no-competitors"?)'
    )


@pytest.mark.parametrize(
    ("change", "pointer", "message"),
    [
        (
            lambda d: d["scenarios"][0]["probes"][1].update(afterTurns=2),
            "/scenarios/0/probes/1/afterTurns",
            'unknown field "afterTurns" (did you mean "afterTurn"?) '
            '(scenario "smalltalk", probe "late")',
        ),
        (
            lambda d: d["rules"][0].update(Severity="info"),
            "/rules/0/Severity",
            'unknown field "Severity" (did you mean "severity"?) (rule "never-disclose-secret")',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].update(type="notMatch"),
            "/scenarios/0/probes/0/assertions/0/type",
            'got "notMatch" (did you mean "notMatches"?) (scenario "smalltalk", probe "early")',
        ),
        (
            lambda d: d["scenarios"][0]["probes"][0]["assertions"][0].update(type="Contains"),
            "/scenarios/0/probes/0/assertions/0/type",
            'got "Contains" (did you mean "contains"?)',
        ),
        (
            lambda d: d["rules"][0].update(severity="critcal"),
            "/rules/0/severity",
            'got "critcal" (did you mean "critical"?)',
        ),
    ],
)
def test_misspellings_get_a_suggestion(
    tmp_path: Path, change: Any, pointer: str, message: str
) -> None:
    data = base_suite()
    change(data)
    found = one_problem(write_suite(tmp_path, data))
    assert f": {pointer}: " in found
    assert message in found


def test_many_unknown_fields_in_one_object_are_listed_not_guessed(tmp_path: Path) -> None:
    data = base_suite()
    data["rules"][0].update({f"severity{i}": 1 for i in range(101)})
    found = problems(write_suite(tmp_path, data))
    assert len(found) == 101
    assert all("(allowed fields: id, instruction, severity)" in issue for issue in found)
    del data["rules"][0]["severity100"]
    found = problems(write_suite(tmp_path, data))
    assert all('(did you mean "severity"?)' in issue for issue in found)


def test_suggestions_for_unknown_rules_stay_within_a_budget(tmp_path: Path) -> None:
    data = base_suite()
    data["rules"] = [{"id": f"rule-{i}", "instruction": "x"} for i in range(5_000)]
    probe = data["scenarios"][0]["probes"][0]
    data["scenarios"][0]["probes"] = [
        {**probe, "id": f"p{i}", "rule": f"rule-{i}x"} for i in range(1_000)
    ]
    found = problems(write_suite(tmp_path, data))  # its time: benchmarks/config_errors_benchmark.py
    assert len(found) == 1_000
    suggested = [issue for issue in found if "(did you mean" in issue]
    assert found[0].endswith('probe "p0": unknown rule "rule-0x" (did you mean "rule-0"?)')
    assert 10 <= len(suggested) < 1_000
    assert found[-1].endswith(
        "(rules: rule-0, rule-1, rule-2, rule-3, rule-4, rule-5, rule-6, "
        "rule-7, rule-8, rule-9, … and 4,990 more)"
    )


# --- notMatches and language -------------------------------------------------------------------


def test_not_matches_and_language_load(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = [
        {"type": "notMatches", "pattern": "beta[\\s-]*corp", "flags": "i"},
        {"type": "notMatches", "pattern": "x"},
        {"type": "language", "value": "en"},
        {"type": "language", "value": "de", "minConfidence": 0.3},
        {"type": "language", "value": "es", "minConfidence": 1},
    ]
    assertions = load_suite(write_suite(tmp_path, data)).scenarios[0].probes[0].assertions
    assert assertions == (
        MatchesAssertion("beta[\\s-]*corp", "i", "notMatches"),
        MatchesAssertion("x", "", "notMatches"),
        LanguageAssertion("en", 0.5),
        LanguageAssertion("de", 0.3),
        LanguageAssertion("es", 1.0),
    )
    assert isinstance(assertions[4], LanguageAssertion)
    assert type(assertions[4].min_confidence) is float


@pytest.mark.parametrize(
    ("assertion", "pointer", "message"),
    [
        (
            {"type": "notMatches", "pattern": "(unclosed"},
            "/pattern",
            'probe "early": invalid regular expression',
        ),
        ({"type": "notMatches", "pattern": "a", "flags": "gg"}, "/flags", 'probe "early": '),
        ({"type": "notMatches", "pattern": ""}, "/pattern", "must not be empty"),
        ({"type": "notMatches", "pattern": "a", "value": "b"}, "/value", 'unknown field "value"'),
        (
            {"type": "language", "value": "english"},
            "/value",
            'unsupported language "english" (did you mean "en" for English?) '
            '(scenario "smalltalk", probe "early")',
        ),
        (
            {"type": "language", "value": "de-AT"},
            "/value",
            'unsupported language "de-AT" (did you mean "de" for German?)',
        ),
        (
            {"type": "language", "value": "xx"},
            "/value",
            'unsupported language "xx": use a two-letter ISO 639-1 code such as "en", "de", '
            '"es" or "fr"; docs/language-assertion.md lists the 123 supported',
        ),
        (
            {"type": "language", "value": "nds"},  # the model knows Low German, but no ISO code
            "/value",
            'unsupported language "nds": use a two-letter ISO 639-1 code',
        ),
        ({"type": "language", "value": 5}, "/value", "expected a string, got an integer"),
        ({"type": "language"}, "", 'missing required field "value"'),
        (
            {"type": "language", "value": "en", "minConfidence": 1.5},
            "/minConfidence",
            "expected a number of at most 1, got 1.5",
        ),
        (
            {"type": "language", "value": "en", "minConfidence": "high"},
            "/minConfidence",
            "expected a number, got a string",
        ),
        (
            {"type": "language", "value": "en", "confidence": 0.3},
            "/confidence",
            'unknown field "confidence" (did you mean "minConfidence"?)',
        ),
    ],
)
def test_not_matches_and_language_problems(
    tmp_path: Path, assertion: dict[str, Any], pointer: str, message: str
) -> None:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = [assertion]
    found = one_problem(write_suite(tmp_path, data))
    assert f": /scenarios/0/probes/0/assertions/0{pointer}: " in found
    assert message in found


def test_a_valid_suite_is_checked_the_quick_way_and_an_invalid_one_the_full_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each distinct assertion is checked once; only a suite with a problem pays for the full
    schema, which places and words every error."""
    from ruledrift.suite import load as config

    def full_schema() -> None:
        raise AssertionError("the full schema ran for a valid suite")

    valid = base_suite()
    monkeypatch.setattr(config, "_validator", full_schema)
    assert load_suite(write_suite(tmp_path, valid)).probe_count == 2
    monkeypatch.undo()
    broken = base_suite()
    broken["scenarios"][0]["probes"][1]["assertions"][0]["caseSensitive"] = "yes"
    messages = problems(write_suite(tmp_path, broken))
    assert any("/assertions/0/caseSensitive" in m for m in messages), messages


# --- a scenario's own systemPrompt and rules ---------------------------------------------------


def test_a_scenario_keeps_its_prompt_mode_and_rules(tmp_path: Path) -> None:
    data = base_suite()
    plain = copy.deepcopy(data["scenarios"][0])
    data["scenarios"][0].update(
        systemPrompt="You are Ada.", systemPromptMode="append", rules=["never-disclose-secret"]
    )
    data["scenarios"].append({**plain, "id": "plain"})
    suite = load_suite(write_suite(tmp_path, data))
    own, default = suite.scenarios
    assert (own.system_prompt, own.system_prompt_mode) == ("You are Ada.", "append")
    assert own.rules == (suite.rules[0],)
    assert own.rules[0] is suite.rules[0]
    assert (default.system_prompt, default.system_prompt_mode, default.rules) == (
        None,
        "replace",
        None,
    )


def test_a_scenario_rule_that_does_not_exist_is_located_with_a_suggestion(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["rules"] = ["never-disclose-secret", "english-onyl"]
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"english-onyl"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/rules/1: scenario "smalltalk": unknown rule '
        '"english-onyl" (did you mean "english-only"?)'
    )


def test_a_probe_of_a_rule_the_scenario_does_not_render_is_located(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["rules"] = ["english-only"]
    data["scenarios"][0]["probes"][0]["rule"] = "english-only"
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"never-disclose-secret"', occurrence=2)
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/probes/1/rule: probe "late": rule '
        '"never-disclose-secret" is not among the rules scenario "smalltalk" renders '
        '("rules": english-only); add it to the scenario\'s "rules" or check another rule'
    )


def test_an_unknown_probe_rule_is_one_problem_not_two(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["rules"] = ["never-disclose-secret"]
    data["scenarios"][0]["probes"][1]["rule"] = "no-such-rule"
    assert "unknown rule" in one_problem(write_suite(tmp_path, data))


def test_a_prompt_mode_without_a_prompt_is_located_at_its_key(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["systemPromptMode"] = "append"
    path = write_suite(tmp_path, data)
    line, column = position_of(path, '"systemPromptMode"')
    assert one_problem(path) == (
        f'{path}:{line}:{column}: /scenarios/0/systemPromptMode: field "systemPromptMode" '
        'needs "systemPrompt" beside it: set the scenario\'s "systemPrompt", or remove '
        '"systemPromptMode" (scenario "smalltalk")'
    )


@pytest.mark.parametrize(
    ("change", "pointer", "message"),
    [
        (
            {"systemPrompt": "x", "systemPromptMode": "prepend"},
            "/scenarios/0/systemPromptMode",
            'expected one of "replace", "append"; got "prepend"',
        ),
        ({"systemPrompt": 3}, "/scenarios/0/systemPrompt", "expected a string, got an integer"),
        ({"rules": []}, "/scenarios/0/rules", "expected at least 1 item(s) in rules, got 0"),
        ({"rules": "english-only"}, "/scenarios/0/rules", "expected an array, got a string"),
        (
            {"rules": ["never-disclose-secret", "never-disclose-secret"]},
            "/scenarios/0/rules/1",
            '"never-disclose-secret" is listed twice (first at /scenarios/0/rules/0)',
        ),
        ({"rules": ["English Only"]}, "/scenarios/0/rules/0", 'invalid id "English Only"'),
        ({"rules": [{"id": "x"}]}, "/scenarios/0/rules/0", "expected a string, got an object"),
        ({"systemPromt": "x"}, "/scenarios/0/systemPromt", '(did you mean "systemPrompt"?)'),
    ],
)
def test_scenario_prompt_and_rules_schema_problems(
    tmp_path: Path, change: dict[str, Any], pointer: str, message: str
) -> None:
    data = base_suite()
    data["scenarios"][0].update(change)
    found = one_problem(write_suite(tmp_path, data))
    assert f": {pointer}: " in found
    assert message in found


def test_values_of_the_wrong_kind_in_a_scenarios_rules_are_reported_not_raised(
    tmp_path: Path,
) -> None:
    data = base_suite()
    data["scenarios"][0]["rules"] = [["never-disclose-secret"], {"id": "english-only"}, 3]
    data["scenarios"][0]["probes"][0]["rule"] = {"id": "never-disclose-secret"}
    found = problems(write_suite(tmp_path, data))
    assert sorted(issue.split(": ")[1] for issue in found) == [
        "/scenarios/0/probes/0/rule",
        "/scenarios/0/rules/0",
        "/scenarios/0/rules/1",
        "/scenarios/0/rules/2",
    ]


# --- the command assertion ----------------------------------------------------------------------


def with_command_check(tmp_path: Path, **fields: Any) -> Path:
    data = base_suite()
    check = {"type": "command", "command": "python3", "args": ["check.py"], **fields}
    data["scenarios"][0]["probes"][0]["assertions"] = [check]
    return write_suite(tmp_path, data)


def test_a_command_check_resolves_its_cwd_from_the_suite_s_folder(tmp_path: Path) -> None:
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "refund.sh").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (tmp_path / "checks" / "refund.sh").chmod(0o755)
    path = with_command_check(tmp_path, command="./refund.sh", args=["-v"], cwd="x/../checks")
    assertion = load_suite(path).scenarios[0].probes[0].assertions[0]
    assert assertion == CommandAssertion("./refund.sh", ("-v",), tmp_path / "checks", 10_000)
    defaults = load_suite(with_command_check(tmp_path)).scenarios[0].probes[0].assertions[0]
    assert defaults == CommandAssertion("python3", ("check.py",), tmp_path, 10_000)


@pytest.mark.parametrize(
    ("fields", "pointer", "message"),
    [
        ({"cwd": "nowhere"}, "/cwd", "the check program's cwd {tmp}/nowhere does not exist"),
        (
            {"command": "./missing.py"},
            "/command",
            'the check program "./missing.py" does not exist',
        ),
        ({"command": "./"}, "/command", 'the check program "./" is not a file'),
        (
            {"command": "./check.txt"},
            "/command",
            'the check program "./check.txt" is not executable',
        ),
        ({"command": "no-such-program-x9"}, "/command", "was not found on PATH"),
        ({"args": ["a\u0000b"]}, "/args/0", "contains a NUL character"),
        ({"timeoutMs": 0}, "/timeoutMs", ""),
        ({"shell": True}, "/shell", 'unknown field "shell"'),
    ],
)
def test_a_command_check_that_cannot_run_is_a_located_config_error(
    tmp_path: Path, fields: dict[str, Any], pointer: str, message: str
) -> None:
    (tmp_path / "check.txt").write_text("not a program", encoding="utf-8")
    path = with_command_check(tmp_path, **fields)
    problem = one_problem(path)
    at = "/scenarios/0/probes/0/assertions/0" + pointer
    assert f": {at}: " in problem, problem
    assert message.format(tmp=tmp_path) in problem
    assert problem.startswith(f"{path}:")


# --- the judge assertion ------------------------------------------------------------------------

OLLAMA_JUDGE = {"type": "ollama", "model": "smollm2:135m", "options": {"temperature": 0}}


def with_judge_check(tmp_path: Path, suite_judge: Any = None, **fields: Any) -> Path:
    data = base_suite()
    if suite_judge is not None:
        data["judge"] = suite_judge
    data["scenarios"][0]["probes"][0]["assertions"] = [
        {"type": "judge", "rubric": "Does it keep the secret?", **fields}
    ]
    return write_suite(tmp_path, data)


def test_a_judge_check_asks_its_own_target_else_the_suite_s_judge(tmp_path: Path) -> None:
    suite = load_suite(with_judge_check(tmp_path, OLLAMA_JUDGE))
    assertion = suite.scenarios[0].probes[0].assertions[0]
    assert isinstance(assertion, JudgeAssertion)
    assert assertion.rubric == "Does it keep the secret?"
    assert assertion.target is suite.judge
    assert isinstance(suite.judge, OllamaAdapterConfig)
    own = {"type": "command", "command": "python3", "args": ["judge.py"], "cwd": "judges"}
    suite = load_suite(with_judge_check(tmp_path, OLLAMA_JUDGE, target=own))
    target = suite.scenarios[0].probes[0].assertions[0].target  # type: ignore[union-attr]
    assert target == CommandAdapterConfig("python3", ("judge.py",), tmp_path / "judges", 30_000)


def test_a_judge_check_without_a_judge_is_a_located_config_error(tmp_path: Path) -> None:
    path = with_judge_check(tmp_path)
    problem = one_problem(path)
    assert ": /scenarios/0/probes/0/assertions/0: " in problem
    assert 'a judge assertion needs a judge: give it a "target"' in problem
    line, _ = position_of(path, '"type": "judge"')
    assert f"suite.json:{line - 1}:" in problem  # the assertion object opens a line earlier


@pytest.mark.parametrize(
    ("suite_judge", "fields", "pointer", "message"),
    [
        (
            None,
            {"target": {"type": "command", "command": "a\u0000b"}},
            "/scenarios/0/probes/0/assertions/0/target/command",
            "NUL",
        ),
        ({"type": "command", "command": "a\u0000b"}, {}, "/judge/command", "NUL"),
        (
            None,
            {"target": {"type": "ollama"}},
            "/scenarios/0/probes/0/assertions/0/target",
            'missing required field "model"',
        ),
        (OLLAMA_JUDGE, {"rubric": ""}, "/scenarios/0/probes/0/assertions/0/rubric", ""),
        ({"type": "gemini"}, {}, "/judge/type", "gemini"),
    ],
)
def test_judge_settings_are_checked_like_an_adapter_s(
    tmp_path: Path, suite_judge: Any, fields: dict[str, Any], pointer: str, message: str
) -> None:
    problem = one_problem(with_judge_check(tmp_path, suite_judge, **fields))
    assert f": {pointer}: " in problem, problem
    assert message in problem
