"""Configuration: read the file, parse it with positions, validate it against the JSON Schema,
check what the schema cannot express, and build the frozen `Suite`.

Every problem found is collected and raised together as one `ConfigError`; nothing here calls a
model or starts a process.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, TypeChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from ruledrift import jsonpos
from ruledrift.adapters.registry import ADAPTERS
from ruledrift.errors import ConfigError, ConfigIssue
from ruledrift.jsregex import js_test, regex_problem
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
MAX_SUITE_BYTES = 16 * 1024 * 1024  # far above any real suite, far below any memory limit
_LISTED_IDS = 10  # ids named in a message, e.g. the rules an unknown reference could mean


def schema_text(name: str = SCHEMA_NAME) -> str:
    return resources.files("ruledrift").joinpath("schemas", name).read_text(encoding="utf-8")


def _is_integer(checker: TypeChecker, instance: object) -> bool:
    """An integer literal. jsonschema would also take `2.0`; here that is a number, never an
    integer (the parser keeps the difference), so `afterTurn: 2.0` is refused, not run."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _strict_const(
    validator: Validator, const: object, instance: object, schema: object
) -> Iterator[ValidationError]:
    """`const`, with `1.0` not equal to the integer 1 (nor `true` to 1)."""
    if type(instance) is not type(const) or instance != const:
        yield ValidationError(f"{const!r} was expected")


def _ecmascript_pattern(
    validator: Validator, pattern: str, instance: object, schema: object
) -> Iterator[ValidationError]:
    """`pattern` as JSON Schema defines it, an ECMAScript regular expression: with Python's `re`
    (jsonschema's choice), `$` also matches before a final newline, so `"late\\n"` was an id."""
    if isinstance(instance, str) and not js_test(pattern, "", instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def _validator() -> Validator:
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={"const": _strict_const, "pattern": _ecmascript_pattern},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return strict(json.loads(schema_text()))


def load_suite(path: Path) -> Suite:
    """Load and validate a suite; raises ConfigError listing every problem found."""
    raw = _read(path)
    text = _decode(path, raw)
    try:
        doc = jsonpos.parse(text)
    except jsonpos.JSONSyntaxError as error:
        line, column = jsonpos.Parsed(text).line_col(error.offset)
        prefix = "" if isinstance(error, jsonpos.JSONLimitError) else "invalid JSON: "
        issue = _issue(path, line, column, error.pointer, prefix + error.message)
        raise ConfigError([issue]) from None
    issues = list(_problems(path, doc))
    if issues:
        raise ConfigError(issues)
    return _build(path, cast(dict[str, Any], doc.value), doc, hashlib.sha256(raw).hexdigest())


def _issue(path: Path, line: int, column: int, pointer: str, message: str) -> ConfigIssue:
    return ConfigIssue(str(path), line, column, pointer, message)


def _file_issue(path: Path, message: str) -> ConfigError:
    return ConfigError([_issue(path, 1, 1, "", message)])


_IS_A_DIRECTORY = "is a directory; expected a RuleDrift suite (a JSON file)"
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _read(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_SUITE_BYTES. Opened without blocking (a FIFO
    without a writer would wait forever) and read no further than the limit (`/dev/zero`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # the only other thing os.open raises: a NUL character in the path
        raise _file_issue(path, "cannot be opened: the path contains a NUL character") from None
    except OSError as error:
        raise _file_issue(path, _open_problem(error)) from None
    try:
        raw = _read_regular_file(path, fd)
    except OSError as error:
        raise _file_issue(path, f"cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)
    if not raw.strip():
        raise _file_issue(path, "the file is empty; expected a RuleDrift suite (a JSON object)")
    return raw


def _open_problem(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "file not found"
    if isinstance(error, IsADirectoryError):
        return _IS_A_DIRECTORY
    if isinstance(error, PermissionError):
        return "cannot be read: permission denied"
    if error.errno == errno.ENAMETOOLONG:
        return (
            "cannot be opened: the path, or a name in it, is too long for the operating system "
            "(File name too long); use a shorter path"
        )
    return f"cannot be opened: {error.strerror or error}"


def _read_regular_file(path: Path, fd: int) -> bytes:
    info = os.fstat(fd)
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        raise _file_issue(path, _IS_A_DIRECTORY)
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _SPECIAL_FILES if test(mode)), "a special file")
        raise _file_issue(
            path,
            f"is {kind}, not a regular file; expected a RuleDrift suite (a JSON file): pipes and "
            "devices are refused, as reading one may never end",
        )
    if info.st_size > MAX_SUITE_BYTES:
        raise _too_big(path, f"{info.st_size:,} bytes")
    chunks: list[bytes] = []
    remaining = MAX_SUITE_BYTES + 1  # one byte more: a file that grew while it was read
    while remaining > 0 and (chunk := os.read(fd, remaining)):
        chunks.append(chunk)
        remaining -= len(chunk)
    if remaining == 0:
        raise _too_big(path, f"more than {MAX_SUITE_BYTES:,} bytes")
    return b"".join(chunks)


def _too_big(path: Path, size: str) -> ConfigError:
    return _file_issue(
        path,
        f"is {size}; a suite may be at most 16 MiB ({MAX_SUITE_BYTES:,} bytes): split it into "
        "several suites",
    )


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
    for error in _schema_errors(doc.value):
        for finding in findings(error):
            offset_map = doc.keys if finding.at_key else doc.values
            offset = offset_map.get(finding.pointer, doc.values.get(finding.pointer, 0))
            parts = list(error.absolute_path)
            message = finding.message + context(doc.value, parts)
            yield _issue(path, *doc.line_col(offset), finding.pointer, message)
    for pointer, message in _cross_field_problems(doc.value):
        yield at_value(pointer, message)


def _schema_errors(data: object) -> list[ValidationError]:
    """The schema's errors, without those about a value that already has the wrong type (`2.0`
    for afterTurn is "expected an integer", not also "at most 10000" or "at least 0")."""
    errors = list(_validator().iter_errors(cast(Any, data)))
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    return [e for e in errors if e.validator == "type" or tuple(e.absolute_path) not in mistyped]


def _cross_field_problems(data: object) -> Iterator[tuple[str, str]]:
    """What the schema cannot express. Defensive: the data may also have schema errors."""
    if not isinstance(data, dict):
        return
    rules = _objects(data.get("rules"))
    yield from _duplicate_ids(rules, "rules", "rule")
    rule_ids = list(dict.fromkeys(r["id"] for _, r in rules if _is_id(r.get("id"))))
    known_rules = set(rule_ids)
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
            if rule_ids and _is_id(rule) and rule not in known_rules:
                known = _listing(rule_ids)
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


def _is_id(value: object) -> bool:
    return isinstance(value, str) and re.fullmatch(ID_PATTERN, value) is not None


def _listing(ids: list[str]) -> str:
    """`a, b, c`, or the first few and how many more: a message stays short."""
    more = len(ids) - _LISTED_IDS
    return ", ".join(ids[:_LISTED_IDS]) + (f", … and {more:,} more" if more > 0 else "")


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
