"""Configuration: read the file, parse it with positions, validate it against the JSON Schema,
check what the schema cannot express, and build the frozen `Suite`.

Every problem found is collected and raised together as one `ConfigError`; nothing here calls a
model or starts a process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator

from ruledrift import jsonpos
from ruledrift.adapters.registry import ADAPTERS
from ruledrift.errors import ConfigError, ConfigIssue
from ruledrift.jsregex import regex_problem
from ruledrift.model import (
    Assertion,
    Location,
    MatchesAssertion,
    Probe,
    Rule,
    Scenario,
    Suite,
    TextAssertion,
)
from ruledrift.schema_messages import ID_PATTERN, context, findings, show

SCHEMA_NAME = "rule-drift.schema.json"


def schema_text(name: str = SCHEMA_NAME) -> str:
    return resources.files("ruledrift").joinpath("schemas", name).read_text(encoding="utf-8")


@functools.cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_text()))


def load_suite(path: Path) -> Suite:
    """Load and validate a suite; raises ConfigError listing every problem found."""
    raw = _read(path)
    text = _decode(path, raw)
    try:
        doc = jsonpos.parse(text)
    except jsonpos.JSONSyntaxError as error:
        line, column = jsonpos.Parsed(text).line_col(error.offset)
        raise ConfigError(
            [_issue(path, line, column, "", f"invalid JSON: {error.message}")]
        ) from None
    issues = list(_problems(path, doc))
    if issues:
        raise ConfigError(issues)
    return _build(path, cast(dict[str, Any], doc.value), doc, hashlib.sha256(raw).hexdigest())


def _issue(path: Path, line: int, column: int, pointer: str, message: str) -> ConfigIssue:
    return ConfigIssue(str(path), line, column, pointer, message)


def _file_issue(path: Path, message: str) -> ConfigError:
    return ConfigError([_issue(path, 1, 1, "", message)])


def _read(path: Path) -> bytes:
    if path.is_dir():
        raise _file_issue(path, "is a directory; expected a RuleDrift suite (a JSON file)")
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise _file_issue(path, "file not found") from None
    except PermissionError:
        raise _file_issue(path, "cannot be read: permission denied") from None
    except OSError as error:
        raise _file_issue(path, f"cannot be read: {error.strerror or error}") from None
    if not raw.strip():
        raise _file_issue(path, "the file is empty; expected a RuleDrift suite (a JSON object)")
    return raw


def _decode(path: Path, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        before = raw[: error.start].decode("utf-8", errors="replace")
        line, column = jsonpos.Parsed(before).line_col(len(before))
        message = (
            f"not UTF-8: byte 0x{raw[error.start]:02x} cannot be decoded; save the file as UTF-8"
        )
        raise ConfigError([_issue(path, line, column, "", message)]) from None
    # a UTF-8 byte order mark is tolerated; a space keeps every offset where it was
    return " " + text[1:] if text.startswith("\ufeff") else text


def _problems(path: Path, doc: jsonpos.Parsed) -> Iterator[ConfigIssue]:
    def at_value(pointer: str, message: str) -> ConfigIssue:
        offset = doc.values.get(pointer, doc.keys.get(pointer, 0))
        return _issue(path, *doc.line_col(offset), pointer, message)

    for duplicate in doc.duplicates:
        first_line, first_column = doc.line_col(duplicate.first_offset)
        key = duplicate.pointer.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
        message = (
            f"field {show(key)} appears twice in one object (first at line {first_line}, "
            f"column {first_column}); a reviewed contract must not hide a second value"
        )
        yield _issue(path, *doc.line_col(duplicate.offset), duplicate.pointer, message)
    for error in _validator().iter_errors(doc.value):
        for finding in findings(error):
            offset_map = doc.keys if finding.at_key else doc.values
            offset = offset_map.get(finding.pointer, doc.values.get(finding.pointer, 0))
            parts = list(error.absolute_path)
            message = finding.message + context(doc.value, parts)
            yield _issue(path, *doc.line_col(offset), finding.pointer, message)
    for pointer, message in _cross_field_problems(doc.value):
        yield at_value(pointer, message)


def _cross_field_problems(data: object) -> Iterator[tuple[str, str]]:
    """What the schema cannot express. Defensive: the data may also have schema errors."""
    if not isinstance(data, dict):
        return
    rules = _objects(data.get("rules"))
    yield from _duplicate_ids(rules, "rules", "rule")
    rule_ids = list(dict.fromkeys(r["id"] for _, r in rules if isinstance(r.get("id"), str)))
    scenarios = _objects(data.get("scenarios"))
    yield from _duplicate_ids(scenarios, "scenarios", "scenario")
    for s_index, scenario in scenarios:
        turns = scenario.get("turns")
        turn_count = len(turns) if isinstance(turns, list) else None
        where = f"scenario {show(scenario.get('id'))}"
        probes = _objects(scenario.get("probes"))
        base = f"/scenarios/{s_index}/probes"
        yield from _duplicate_ids(probes, base[1:], "probe", f" in {where}")
        for p_index, probe in probes:
            pointer = f"{base}/{p_index}"
            rule = probe.get("rule")
            # a reference is checked only when it and the rules themselves are well-formed
            if rule_ids and isinstance(rule, str) and _is_id(rule) and rule not in rule_ids:
                known = ", ".join(rule_ids) or "none"
                yield f"{pointer}/rule", f"unknown rule {show(rule)} (rules: {known})"
            after = probe.get("afterTurn")
            is_int = isinstance(after, int) and not isinstance(after, bool)
            if is_int and turn_count is not None and cast(int, after) > turn_count:
                yield (
                    f"{pointer}/afterTurn",
                    f"{after} is greater than the {turn_count} turn(s) of {where}",
                )
            for a_index, assertion in _objects(probe.get("assertions")):
                yield from _regex_problems(f"{pointer}/assertions/{a_index}", assertion)
    adapter = data.get("adapter")
    if isinstance(adapter, dict) and adapter.get("type") in ADAPTERS:
        for pointer, message in ADAPTERS[adapter["type"]].problems(adapter):
            yield f"/adapter{pointer}", message


def _is_id(value: str) -> bool:
    return re.fullmatch(ID_PATTERN, value) is not None


def _objects(value: object) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)]


def _duplicate_ids(
    items: list[tuple[int, dict[str, Any]]], base: str, label: str, where: str = ""
) -> Iterator[tuple[str, str]]:
    first: dict[str, int] = {}
    for index, item in items:
        item_id = item.get("id")
        if not isinstance(item_id, str):
            continue
        if item_id in first:
            message = (
                f"duplicate {label} id {show(item_id)}{where} (first at /{base}/{first[item_id]})"
            )
            yield f"/{base}/{index}/id", message
        else:
            first[item_id] = index


def _regex_problems(pointer: str, assertion: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    pattern, flags = assertion.get("pattern"), assertion.get("flags", "")
    if assertion.get("type") != "matches" or not isinstance(pattern, str):
        return
    if not isinstance(flags, str) or not re.fullmatch("[dgimsuvy]*", flags):
        return  # the schema reports flags of the wrong type or with unknown letters
    flag_problem = regex_problem("", flags)
    if flag_problem:
        yield f"{pointer}/flags", flag_problem
        return
    pattern_problem = regex_problem(pattern, flags)
    if pattern_problem:
        yield f"{pointer}/pattern", pattern_problem


# --- building the frozen suite (only once the data is known to be valid) ---------------------


def _build(path: Path, data: dict[str, Any], doc: jsonpos.Parsed, sha256: str) -> Suite:
    def location(pointer: str) -> Location:
        return Location(*doc.line_col(doc.values[pointer]))

    rules = tuple(
        Rule(r["id"], r["instruction"], r.get("severity", "critical"), location(f"/rules/{i}"))
        for i, r in enumerate(data["rules"])
    )
    by_id = {rule.id: rule for rule in rules}
    scenarios = []
    for s_index, s in enumerate(data["scenarios"]):
        probes = tuple(
            Probe(
                id=p["id"],
                rule=by_id[p["rule"]],
                after_turn=p["afterTurn"],
                prompt=p["prompt"],
                assertions=tuple(_assertion(a) for a in p["assertions"]),
                location=location(f"/scenarios/{s_index}/probes/{p_index}"),
            )
            for p_index, p in enumerate(s["probes"])
        )
        scenarios.append(
            Scenario(
                s["id"],
                s.get("description"),
                tuple(s["turns"]),
                probes,
                location(f"/scenarios/{s_index}"),
            )
        )
    return Suite(
        version=data["version"],
        name=data["name"],
        system_prompt=data.get("systemPrompt"),
        adapter=ADAPTERS[data["adapter"]["type"]].parse(
            data["adapter"], Path(os.path.abspath(path)).parent
        ),
        rules=rules,
        scenarios=tuple(scenarios),
        path=path,
        sha256=sha256,
    )


def _assertion(data: dict[str, Any]) -> Assertion:
    if data["type"] == "matches":
        return MatchesAssertion(pattern=data["pattern"], flags=data.get("flags", ""))
    return TextAssertion(data["type"], data["value"], data.get("caseSensitive", False))
