"""Configuration: read the file, parse it with positions, validate it against the JSON Schema,
check what the schema cannot express, and build the frozen `Suite`.

Every problem found is collected and raised together as one `ConfigError`; nothing here calls a
model or starts a process.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, TypeGuard, cast

from jsonschema import Draft202012Validator, TypeChecker, validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from ruledrift.adapters.command import settings_problems
from ruledrift.adapters.registry import ADAPTERS
from ruledrift.boundary.files import FileTooBig, UnreadableFile, read_regular_file
from ruledrift.checks.commands import parse_command_assertion, program_problems
from ruledrift.checks.jsregex import js_test, regex_problem
from ruledrift.checks.language import SUPPORTED_LANGUAGES, suggested_language
from ruledrift.checks.leaks import MAX_SECRET_CHARS, MIN_SECRET_CHARS, fold
from ruledrift.data import (
    AdapterConfig,
    AnswersAssertion,
    Assertion,
    Control,
    DepthSearch,
    FluentAssertion,
    History,
    JudgeAssertion,
    LanguageAssertion,
    Location,
    MatchesAssertion,
    NotLeaksAssertion,
    Probe,
    Rule,
    Scenario,
    Suite,
    TextAssertion,
    Variant,
    derived_probe_id,
)
from ruledrift.errors import ConfigError, ConfigIssue
from ruledrift.jsondoc import positions as jsonpos
from ruledrift.jsondoc.schema_messages import ID_PATTERN, SchemaFinding, context, findings, show
from ruledrift.suite.history import Loaded, load_history
from ruledrift.suite.tools import (
    TOOL_ASSERTIONS,
    TOOL_NAME_PATTERN,
    build_scripts,
    build_tool_assertion,
    build_tools,
    tool_choice,
    tool_problems,
    turn_text,
)
from ruledrift.suite.walk import objects, probe_assertions

SCHEMA_NAME = "rule-drift.schema.json"
MAX_SUITE_BYTES = 16 * 1024 * 1024  # far above any real suite, far below any memory limit
_LISTED_IDS = 10  # ids named in a message, e.g. the rules an unknown reference could mean
_MAX_ID_LENGTH = 128  # as the schema's id
_MAX_AFTER_TURN = 10_000  # as the schema's afterTurn
# Ids compared to find what an unknown rule reference meant ("did you mean"), in all, per load:
# about a second at most, however many rules and wrong references a file holds.
_SUGGESTION_BUDGET = 100_000
_LANGUAGE_CODES = sorted(SUPPORTED_LANGUAGES)  # the schema's enum for a language's value


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
    return _strict_validator()(json.loads(schema_text()))


def _strict_validator() -> type[Validator]:
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={"const": _strict_const, "pattern": _ecmascript_pattern},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return strict


@functools.cache
def _quick_validators() -> tuple[Validator, Validator]:
    """The schema with assertions accepted as they are, and the assertion schema alone: a valid
    suite is checked with the first, and each *distinct* assertion once with the second (a
    suite repeats the same few assertions over hundreds of probes, and each assertion's
    `if`/`then` per type is most of the schema's work)."""
    schema = json.loads(schema_text())
    assertion = {"$defs": schema["$defs"], "$ref": "#/$defs/assertion"}
    schema["$defs"] = {**schema["$defs"], "assertion": {}}
    strict = _strict_validator()
    return strict(schema), strict(assertion)


def _valid_quickly(data: object) -> bool:
    """True when the suite has no schema error at all, found the quick way; False means "look
    again, the slow way", where every error gets its place and words."""
    suite_checker, assertion_checker = _quick_validators()
    if not suite_checker.is_valid(cast(Any, data)):
        return False
    seen: set[str] = set()
    for assertion in _assertions(data):
        key = json.dumps(
            assertion, sort_keys=True
        )  # 2 and 2.0 stay apart, as the schema keeps them
        if key not in seen:
            if not assertion_checker.is_valid(cast(Any, assertion)):
                return False
            seen.add(key)
    return True


def _assertions(data: object) -> Iterator[object]:
    for scenario in data.get("scenarios", []) if isinstance(data, dict) else []:
        for probe in scenario.get("probes", []) if isinstance(scenario, dict) else []:
            yield from probe.get("assertions", []) if isinstance(probe, dict) else []
            control = probe.get("control") if isinstance(probe, dict) else None
            yield from control.get("assertions", []) if isinstance(control, dict) else []


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
    histories = _histories(path, doc.value)
    issues = list(_problems(path, doc, histories))
    if issues:
        raise ConfigError(issues)
    loaded = {index: found.history for index, found in histories.items() if found.history}
    return _build(path, cast(dict[str, Any], doc.value), doc, _suite_hash(raw, loaded), loaded)


def _histories(path: Path, data: object) -> dict[int, Loaded]:
    """Each scenario's history (by scenario index), read when its `history` is a string."""
    found = {}
    for index, scenario in objects(data.get("scenarios") if isinstance(data, dict) else None):
        name, mode = scenario.get("history"), scenario.get("historyMode")
        if isinstance(name, str) and name:  # a wrong mode is the schema's to report
            found[index] = load_history(
                path, name, "regenerate" if mode == "regenerate" else "replay"
            )
    return found


def _suite_hash(raw: bytes, histories: Mapping[int, History]) -> str:
    """The suite file's SHA-256; with histories, the SHA-256 of the file's bytes followed by
    each history's path and SHA-256, so that runs of different histories never merge."""
    if not histories:
        return hashlib.sha256(raw).hexdigest()
    digest = hashlib.sha256(raw)
    for index in sorted(histories):
        history = histories[index]
        digest.update(f"\n{index}\t{history.path}\t{history.sha256}".encode())
    return digest.hexdigest()


def _issue(path: Path, line: int, column: int, pointer: str, message: str) -> ConfigIssue:
    return ConfigIssue(str(path), line, column, pointer, message)


def _file_issue(path: Path, message: str) -> ConfigError:
    return ConfigError([_issue(path, 1, 1, "", message)])


_WHAT = "expected a RuleDrift suite (a JSON file)"


def _read(path: Path) -> bytes:
    """The bytes of the suite file (`files.read_regular_file`: a regular file, at most
    MAX_SUITE_BYTES), and not blank."""
    try:
        raw = read_regular_file(path, MAX_SUITE_BYTES, what=_WHAT)
    except FileTooBig as error:
        raise _too_big(path, error.size) from None
    except UnreadableFile as error:
        raise _file_issue(path, error.problem) from None
    if not raw.strip():
        raise _file_issue(path, "the file is empty; expected a RuleDrift suite (a JSON object)")
    return raw


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


def _problems(
    path: Path, doc: jsonpos.Parsed, histories: Mapping[int, Loaded]
) -> Iterator[ConfigIssue]:
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
        for finding in _findings(error):
            offset_map = doc.keys if finding.at_key else doc.values
            offset = offset_map.get(finding.pointer, doc.values.get(finding.pointer, 0))
            parts = list(error.absolute_path)
            message = finding.message + (context(doc.value, parts) or _tool_named(doc.value, parts))
            yield _issue(path, *doc.line_col(offset), finding.pointer, message)
    for index, found in histories.items():
        yield from found.issues
        if found.at_suite:
            yield at_value(f"/scenarios/{index}/history", found.at_suite)
    # a scenario whose history could not be read has no known depth: its probes' are not checked
    recorded = {i: found.history.turns if found.history else None for i, found in histories.items()}
    suite_dir = Path(os.path.abspath(path)).parent
    for pointer, message in _cross_field_problems(doc.value, recorded, suite_dir):
        yield at_value(pointer, message)


def _tool_named(data: object, path: list[str | int]) -> str:
    """' (tool "refund")' for a problem inside a declared tool (`context` names the rules,
    scenarios and probes a problem is in)."""
    tools = data.get("tools") if isinstance(data, dict) else None
    if len(path) < 2 or path[0] != "tools" or not isinstance(tools, list):
        return ""
    index = path[1]
    tool = tools[index] if isinstance(index, int) and index < len(tools) else None
    name = tool.get("name") if isinstance(tool, dict) else None
    return f" (tool {show(name)})" if isinstance(name, str) else ""


def _findings(error: ValidationError) -> Iterator[SchemaFinding]:
    """The schema's findings; an unsupported language is worded here, where the languages are
    known (the schema's message would list all 123 codes)."""
    if error.validator == "enum" and error.validator_value == _LANGUAGE_CODES:
        yield SchemaFinding(list(error.absolute_path), _unsupported_language(error.instance))
    elif error.validator == "pattern" and error.validator_value == TOOL_NAME_PATTERN:
        message = (
            f"invalid tool name {show(error.instance)}: tool names use letters, digits, "
            "underscores and hyphens, 1 to 64 characters"
        )
        yield SchemaFinding(list(error.absolute_path), message)
    elif error.validator == "dependentRequired" and isinstance(error.instance, dict):
        needs = cast(Mapping[str, list[str]], error.validator_value)
        yield from _needs_fields(list(error.absolute_path), error.instance, needs)
    else:
        yield from findings(error)


def _needs_fields(
    path: list[str | int], instance: dict[str, Any], needs: Mapping[str, list[str]]
) -> Iterator[SchemaFinding]:
    """`systemPromptMode` without a `systemPrompt`, at the key that has nothing to apply to."""
    for key, required in needs.items():
        missing = [name for name in required if key in instance and name not in instance]
        if missing:
            owner = "suite" if not path else "variant" if path[0] == "variants" else "scenario"
            message = (
                f"field {show(key)} needs {show(missing[0])} beside it: set the {owner}'s "
                f"{show(missing[0])}, or remove {show(key)}"
            )
            yield SchemaFinding([*path, key], message, at_key=True)


def _unsupported_language(value: object) -> str:
    code = suggested_language(value) if isinstance(value, str) else None
    if code is not None:
        meant = f"{show(code)} for {SUPPORTED_LANGUAGES[code]}"
        return f"unsupported language {show(value)} (did you mean {meant}?)"
    return (
        f'unsupported language {show(value)}: use a two-letter ISO 639-1 code such as "en", '
        f'"de", "es" or "fr"; docs/language-assertion.md lists the '
        f"{len(_LANGUAGE_CODES)} supported"
    )


def _schema_errors(data: object) -> list[ValidationError]:
    """The schema's errors, without those about a value that already has the wrong type (`2.0`
    for afterTurn is "expected an integer", not also "at most 10000" or "at least 0")."""
    if _valid_quickly(data):
        return []
    errors = list(_validator().iter_errors(cast(Any, data)))
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    return [e for e in errors if e.validator == "type" or tuple(e.absolute_path) not in mistyped]


def _cross_field_problems(
    data: object, recorded: Mapping[int, int | None], suite_dir: Path
) -> Iterator[tuple[str, str]]:
    """What the schema cannot express. Defensive: the data may also have schema errors."""
    if not isinstance(data, dict):
        return
    rules = objects(data.get("rules"))
    yield from _duplicate_ids(rules, "rules", "rule")
    rule_ids = _RuleIds(list(dict.fromkeys(r["id"] for _, r in rules if _is_id(r.get("id")))))
    scenarios = objects(data.get("scenarios"))
    yield from _duplicate_ids(scenarios, "scenarios", "scenario")
    for s_index, scenario in scenarios:
        turns = recorded.get(s_index, 0)
        yield from _scenario_problems(scenario, f"/scenarios/{s_index}", rule_ids, turns, suite_dir)
    yield from _duplicate_ids(objects(data.get("variants")), "variants", "variant")
    yield from _adapter_problems(data.get("adapter"), "/adapter")
    yield from _adapter_problems(data.get("judge"), "/judge")
    yield from _judge_problems(scenarios, has_judge=isinstance(data.get("judge"), dict))
    yield from tool_problems(data)


def _adapter_problems(adapter: object, at: str) -> Iterator[tuple[str, str]]:
    if isinstance(adapter, dict) and adapter.get("type") in ADAPTERS:
        for pointer, message in ADAPTERS[adapter["type"]].problems(adapter):
            yield f"{at}{pointer}", message


def _judge_problems(
    scenarios: list[tuple[int, dict[str, Any]]], *, has_judge: bool
) -> Iterator[tuple[str, str]]:
    """`judge` assertions: their own target's problems, and a judge to ask."""
    for s_index, scenario in scenarios:
        for p_index, probe in objects(scenario.get("probes")):
            for where, a_index, assertion in probe_assertions(probe):
                if assertion.get("type") != "judge":
                    continue
                at = f"/scenarios/{s_index}/probes/{p_index}{where}/assertions/{a_index}"
                yield from _adapter_problems(assertion.get("target"), f"{at}/target")
                if "target" not in assertion and not has_judge:
                    yield (
                        at,
                        (
                            'a judge assertion needs a judge: give it a "target" (an adapter, as '
                            '"adapter"), or give the suite a top-level "judge"'
                        ),
                    )


def _scenario_problems(
    scenario: dict[str, Any],
    at: str,
    rule_ids: _RuleIds,
    recorded: int | None,
    suite_dir: Path,
) -> Iterator[tuple[str, str]]:
    """A scenario's problems: its probes', and its own `rules` list's. `recorded`: the user
    messages of its history, boundaries before its own turns (None: a history not read)."""
    turns = scenario.get("turns", [])
    repeat = scenario.get("repeatTurns", 1)
    known = isinstance(turns, list) and recorded is not None and _is_count(repeat)
    turn_count = (recorded or 0) + len(turns) * repeat if known else None
    where = f"scenario {show(scenario.get('id'))}"
    if turn_count is not None and turn_count > _MAX_AFTER_TURN and repeat != 1:
        played = f"{len(turns)} turn(s) played {repeat} times"
        history = f" after {recorded} in its history" if recorded else ""
        yield (
            f"{at}/repeatTurns",
            f"{where}: {played}{history} make {turn_count} turns; at most {_MAX_AFTER_TURN:,} "
            "are played: lower repeatTurns",
        )
        turn_count = None
    probes = objects(scenario.get("probes"))
    base = f"{at}/probes"
    yield from _duplicate_ids(probes, base[1:], "probe", f" in {where}")
    yield from _derived_id_problems(probes, base, where)
    rendered = _Rendered(scenario.get("rules"), where)
    for k_index, rule in rendered.unknown(rule_ids):
        yield f"{at}/rules/{k_index}", f"{where}: unknown rule {show(rule)} {rule_ids.hint(rule)}"
    for p_index, probe in probes:
        depth_where = f"{where} ({recorded} in its history)" if recorded else where
        problems = _probe_problems(probe, turn_count, depth_where, rule_ids, suite_dir)
        for pointer, message in problems:
            yield f"{base}/{p_index}{pointer}", message
        for message in rendered.missing(probe, rule_ids):
            yield f"{base}/{p_index}/rule", message


def _probe_problems(
    probe: dict[str, Any],
    turn_count: int | None,
    where: str,
    rule_ids: _RuleIds,
    suite_dir: Path,
) -> Iterator[tuple[str, str]]:
    """A probe's problems, each message naming the probe; pointers relative to the probe."""
    probe_id = probe.get("id")
    name = f"probe {show(probe_id)}: " if isinstance(probe_id, str) else ""
    rule = probe.get("rule")
    # a reference is checked only when it and the rules themselves are well-formed
    if rule_ids.ids and _is_id(rule) and rule not in rule_ids.known:
        yield "/rule", f"{name}unknown rule {show(rule)} {rule_ids.hint(rule)}"
    for pointer, after in _boundaries(probe.get("afterTurn")):
        if turn_count is not None and after > turn_count:
            yield (
                pointer,
                f"{name}{after} is greater than the {turn_count} turn(s) of {where}",
            )
    yield from _search_problems(probe.get("afterTurn"), name)
    boundaries = [after for _, after in _boundaries(probe.get("afterTurn"))]
    if _is_id(probe_id) and isinstance(probe.get("afterTurn"), list | dict) and boundaries:
        made = derived_probe_id(probe_id, max(boundaries))
        if len(made) > _MAX_ID_LENGTH:
            yield (
                "/id",
                (
                    f"{name}with afterTurn {max(boundaries)} its id would be {show(made)}, "
                    f"{len(made)} characters; ids are at most {_MAX_ID_LENGTH}: shorten the "
                    "probe's id"
                ),
            )
    for where, a_index, assertion in probe_assertions(probe):
        for pointer, message in _assertion_problems(assertion, suite_dir):
            yield f"{where}/assertions/{a_index}{pointer}", name + message


def _assertion_problems(assertion: Mapping[str, Any], suite_dir: Path) -> Iterator[tuple[str, str]]:
    yield from _regex_problems(assertion)
    yield from _secret_problems(assertion)
    yield from _command_problems(assertion, suite_dir)


def _search_problems(after: object, name: str) -> Iterator[tuple[str, str]]:
    """A search's bounds out of order (the schema reports the rest)."""
    bounds = _search_bounds(after)
    if bounds is not None and bounds[0] >= bounds[1]:
        low, high = bounds
        yield (
            "/afterTurn/search/1",
            f"{name}expected the upper bound of the search to be greater than its lower bound "
            f"{low}, got {high} (write [low, high], e.g. [0, 64])",
        )


def _search_bounds(after: object) -> tuple[int, int] | None:
    """`[low, high]` of an `afterTurn` search whose bounds the schema accepts (None: not a
    search, or bounds it reports)."""
    bounds = after.get("search") if isinstance(after, dict) and len(after) == 1 else None
    if isinstance(bounds, list) and len(bounds) == 2 and all(map(_is_depth, bounds)):
        return bounds[0], bounds[1]
    return None


def _is_depth(item: object) -> bool:
    return type(item) is int and 0 <= item <= _MAX_AFTER_TURN


def _is_count(item: object) -> TypeGuard[int]:
    return type(item) is int and 1 <= item <= _MAX_AFTER_TURN


def _boundaries(value: object) -> list[tuple[str, int]]:
    """(pointer relative to the probe, boundary) for each integer in `afterTurn` that the schema
    accepts (it reports the others): a search's are its bounds."""
    if _is_depth(value):
        return [("/afterTurn", cast(int, value))]
    if isinstance(value, list):
        return [(f"/afterTurn/{k}", item) for k, item in enumerate(value) if _is_depth(item)]
    bounds = _search_bounds(value)
    if bounds is not None:
        return [(f"/afterTurn/search/{k}", item) for k, item in enumerate(bounds)]
    return []


class _Rendered:
    """A scenario's own `rules`: the rules its system message renders (None: all of them)."""

    def __init__(self, value: object, where: str) -> None:
        self.where = where
        items = value if isinstance(value, list) else []
        self.listed = [(k, rule) for k, rule in enumerate(items) if _is_id(rule)]
        # the schema reports an empty list, a repeated id and an item that is not an id
        ids = {rule for _, rule in self.listed}
        self.whole = bool(items) and len(self.listed) == len(ids) == len(items)

    def unknown(self, rule_ids: _RuleIds) -> list[tuple[int, str]]:
        """(index, id) of each listed id that names no rule of the suite."""
        if not rule_ids.ids:  # the rules themselves are malformed: reported already
            return []
        return [(k, rule) for k, rule in self.listed if rule not in rule_ids.known]

    def missing(self, probe: dict[str, Any], rule_ids: _RuleIds) -> Iterator[str]:
        """A problem when the probe checks a rule of the suite that this scenario does not
        render: the target was never told it. Only for a list without problems of its own
        (one problem, one message: a misspelt id in the list is reported there)."""
        rule = probe.get("rule")
        if not (self.whole and _is_id(rule) and rule in rule_ids.known) or self.unknown(rule_ids):
            return
        ids = [listed for _, listed in self.listed]
        if rule not in ids:
            probe_id = probe.get("id")
            name = f"probe {show(probe_id)}: " if isinstance(probe_id, str) else ""
            yield (
                f"{name}rule {show(rule)} is not among the rules {self.where} renders "
                f'("rules": {_listing(ids)}); add it to the scenario\'s "rules" or check '
                "another rule"
            )


class _RuleIds:
    """The suite's rule ids, and what an unknown reference most likely meant: suggestions are
    looked up within a budget of comparisons, so a file with thousands of rules and thousands
    of wrong references is still checked in about a second."""

    def __init__(self, ids: list[str]) -> None:
        self.ids, self.known = ids, set(ids)
        self._budget = _SUGGESTION_BUDGET
        self._meant: dict[str, str | None] = {}

    def hint(self, rule: str) -> str:
        meant = self._close(rule)
        return f"(did you mean {show(meant)}?)" if meant else f"(rules: {_listing(self.ids)})"

    def _close(self, rule: str) -> str | None:
        if rule not in self._meant and self._budget >= len(self.ids):
            self._budget -= len(self.ids)
            found = difflib.get_close_matches(rule, self.ids, n=1, cutoff=0.6)
            self._meant[rule] = found[0] if found else None
        return self._meant.get(rule)


@dataclasses.dataclass(frozen=True)
class _ProbeName:
    """An id a probe object gives a probe: its own, or one made from a list `afterTurn`."""

    id: str
    pointer: str  # the object, or the afterTurn item that made the id
    source: str  # the object's own id
    boundary: int | None = None  # that afterTurn item


def _probe_names(probes: list[tuple[int, dict[str, Any]]], base: str) -> Iterator[_ProbeName]:
    for p_index, probe in probes:
        probe_id, after = probe.get("id"), probe.get("afterTurn")
        if not _is_id(probe_id):
            continue
        at = f"{base}/{p_index}"
        bounds = _search_bounds(after)
        if bounds is not None:  # every depth it may decide
            for depth in range(bounds[0], bounds[1] + 1):
                made = derived_probe_id(probe_id, depth)
                yield _ProbeName(made, f"{at}/afterTurn/search", probe_id, depth)
            continue
        if not isinstance(after, list):
            yield _ProbeName(probe_id, at, probe_id)
            continue
        for pointer, boundary in _boundaries(after):
            made = derived_probe_id(probe_id, boundary)
            yield _ProbeName(made, f"{at}{pointer}", probe_id, boundary)


def _derived_id_problems(
    probes: list[tuple[int, dict[str, Any]]], base: str, where: str
) -> Iterator[tuple[str, str]]:
    """Ids that a list `afterTurn` makes (`secret-after-4`) and that another probe has too. Two
    objects with the same id are `_duplicate_ids`' to report."""
    first: dict[str, _ProbeName] = {}
    for name in _probe_names(probes, base):
        earlier = first.setdefault(name.id, name)
        if earlier.source == name.source:  # itself, or one id twice: a duplicate id
            continue
        if name.boundary is not None:
            made_by = (
                f"its search may decide depth {name.boundary}, named"
                if name.pointer.endswith("/search")
                else f"afterTurn {name.boundary} makes the id"
            )
            yield (
                name.pointer,
                (
                    f"probe {show(name.source)}: {made_by} "
                    f"{show(name.id)}, which probe {show(earlier.id)} in {where} already has "
                    f"(first at {earlier.pointer}); rename one of them"
                ),
            )
        else:
            yield (
                f"{name.pointer}/id",
                (
                    f"duplicate probe id {show(name.id)} in {where}: probe {show(earlier.source)} "
                    f"makes it from afterTurn {earlier.boundary} (first at {earlier.pointer}); "
                    "rename one of them"
                ),
            )


def _is_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and re.fullmatch(ID_PATTERN, value) is not None


def _listing(ids: list[str]) -> str:
    """`a, b, c`, or the first few and how many more: a message stays short."""
    more = len(ids) - _LISTED_IDS
    return ", ".join(ids[:_LISTED_IDS]) + (f", … and {more:,} more" if more > 0 else "")


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


def _regex_problems(assertion: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    pattern, flags = assertion.get("pattern"), assertion.get("flags", "")
    if assertion.get("type") not in ("matches", "notMatches") or not isinstance(pattern, str):
        return
    if not isinstance(flags, str) or not re.fullmatch("[dgimsuvy]*", flags):
        return  # the schema reports flags of the wrong type or with unknown letters
    flag_problem = regex_problem("", flags)
    if flag_problem:
        yield "/flags", flag_problem
        return
    pattern_problem = regex_problem(pattern, flags)
    if pattern_problem:
        yield "/pattern", pattern_problem


def _secret_problems(assertion: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """A `notLeaks` secret too short to check, or its variable unset; never quoting it."""
    if assertion.get("type") != "notLeaks":
        return
    value, variable = assertion.get("value"), assertion.get("valueEnv")
    if ("value" in assertion) == ("valueEnv" in assertion):
        yield "", 'notLeaks takes the secret from "value" or from "valueEnv": give one of them'
        return
    if isinstance(variable, str) and re.fullmatch("[A-Za-z_][A-Za-z0-9_]*", variable):
        value = os.environ.get(variable)
        if not value:
            yield (
                "/valueEnv",
                (
                    f"the environment variable {variable} (notLeaks valueEnv) is unset or empty: "
                    "set it to the secret"
                ),
            )
            return
        if len(value) > MAX_SECRET_CHARS:
            yield (
                "/valueEnv",
                (
                    f"the secret in {variable} has {len(value)} characters; at most "
                    f"{MAX_SECRET_CHARS} are checked"
                ),
            )
            return
    if (
        isinstance(value, str)
        and 0 < len(value) <= MAX_SECRET_CHARS
        and (len(fold(value)) < MIN_SECRET_CHARS)
    ):
        where = "/valueEnv" if "value" not in assertion else "/value"
        yield (
            where,
            (
                f"the secret has fewer than {MIN_SECRET_CHARS} letters or digits: too short to "
                "tell from chance once disguised"
            ),
        )


def _command_problems(assertion: Mapping[str, Any], suite_dir: Path) -> Iterator[tuple[str, str]]:
    """A `command` assertion whose program cannot run: a NUL in its settings, or (when the
    schema accepts them) a cwd or command that is not there."""
    if assertion.get("type") != "command":
        return
    unreceivable = list(settings_problems(assertion))
    yield from unreceivable
    if unreceivable or not _command_settings(assertion):
        return  # the schema reports settings of the wrong type
    yield from program_problems(parse_command_assertion(assertion, suite_dir))


def _command_settings(assertion: Mapping[str, Any]) -> bool:
    command, args, cwd = assertion.get("command"), assertion.get("args", []), assertion.get("cwd")
    return (
        isinstance(command, str)
        and bool(command)
        and isinstance(args, list)
        and all(isinstance(arg, str) for arg in args)
        and (cwd is None or (isinstance(cwd, str) and bool(cwd)))
    )


# --- building the frozen suite (only once the data is known to be valid) ---------------------


def _build(
    path: Path,
    data: dict[str, Any],
    doc: jsonpos.Parsed,
    sha256: str,
    histories: Mapping[int, History],
) -> Suite:
    def location(pointer: str) -> Location:
        return Location(*doc.line_col(doc.values[pointer]))

    rules = tuple(
        Rule(r["id"], r["instruction"], r.get("severity", "critical"), location(f"/rules/{i}"))
        for i, r in enumerate(data["rules"])
    )
    by_id = {rule.id: rule for rule in rules}
    suite_dir = Path(os.path.abspath(path)).parent
    judge = _parsed_adapter(data["judge"], suite_dir) if "judge" in data else None
    context = _Context(suite_dir, judge, location)
    scenarios = []
    for s_index, s in enumerate(data["scenarios"]):
        made = [
            _probe(p, by_id, f"/scenarios/{s_index}/probes/{p_index}", context)
            for p_index, p in enumerate(s["probes"])
        ]
        probes = tuple(
            probe
            for p, made_probe in zip(s["probes"], made, strict=True)
            for probe in _boundary_probes(p["afterTurn"], made_probe)
        )
        searches = tuple(
            DepthSearch(made_probe, p["afterTurn"]["search"][0], p["afterTurn"]["search"][1])
            for p, made_probe in zip(s["probes"], made, strict=True)
            if isinstance(p["afterTurn"], dict)
        )
        repeat, turns = s.get("repeatTurns", 1), s.get("turns", [])
        scenarios.append(
            Scenario(
                s["id"],
                s.get("description"),
                tuple(turn_text(turn) for turn in turns) * repeat,
                probes,
                location(f"/scenarios/{s_index}"),
                system_prompt=s.get("systemPrompt"),
                system_prompt_mode=s.get("systemPromptMode", "replace"),
                rules=tuple(by_id[r] for r in s["rules"]) if "rules" in s else None,
                history=histories.get(s_index),
                searches=searches,
                repeat_turns=repeat,
                scripts=build_scripts(turns, f"/scenarios/{s_index}/turns", location) * repeat,
            )
        )
    variants = tuple(
        Variant(
            v["id"],
            location(f"/variants/{index}"),
            remind_every=v.get("remindEvery"),
            remind_as=v.get("remindAs", "system"),
            system_prompt=v.get("systemPrompt"),
        )
        for index, v in enumerate(data.get("variants", []))
    )
    return Suite(
        version=data["version"],
        name=data["name"],
        system_prompt=data.get("systemPrompt"),
        adapter=_parsed_adapter(data["adapter"], suite_dir),
        rules=rules,
        scenarios=tuple(scenarios),
        path=path,
        sha256=sha256,
        judge=judge,
        vacuous_passes=data.get("vacuousPasses", "fail"),
        variants=variants,
        tools=build_tools(data, location),
        tool_choice=tool_choice(data.get("toolChoice"), "first"),
        tool_choice_then=tool_choice(data.get("toolChoice"), "then"),
        max_tool_rounds=data.get("maxToolRounds", 4),
    )


def _parsed_adapter(settings: dict[str, Any], suite_dir: Path) -> AdapterConfig:
    parsed: AdapterConfig = ADAPTERS[settings["type"]].parse(settings, suite_dir)
    return parsed


@dataclasses.dataclass(frozen=True)
class _Context:
    """What building a probe needs beside its object: the suite's folder (a command
    assertion's cwd), its judge, and where a pointer stands in the file."""

    suite_dir: Path
    judge: AdapterConfig | None
    locate: Callable[[str], Location]


def _probe(data: dict[str, Any], rules: dict[str, Rule], at: str, context: _Context) -> Probe:
    """The probe object at `at` as a probe at boundary 0 (`_boundary_probes` places it)."""
    return Probe(
        id=data["id"],
        rule=rules[data["rule"]],
        after_turn=0,
        prompt=data["prompt"] if isinstance(data["prompt"], str) else data["prompt"][0],
        assertions=_assertions_of(data, at, context),
        location=context.locate(at),
        paraphrases=() if isinstance(data["prompt"], str) else tuple(data["prompt"]),
        control=_control(data.get("control"), f"{at}/control", context),
    )


def _boundary_probes(after: int | list[int] | dict[str, Any], probe: Probe) -> Iterator[Probe]:
    """The probe object's probes: one, or one per boundary of a list `afterTurn`, in the list's
    order, named by `derived_probe_id`; all at the object's location. A search has none: its
    points are asked as the run decides them (`Scenario.searches`)."""
    if isinstance(after, dict):
        return
    if isinstance(after, int):
        yield dataclasses.replace(probe, after_turn=after)
        return
    for boundary in after:
        yield dataclasses.replace(
            probe, id=derived_probe_id(probe.id, boundary), after_turn=boundary
        )


def _control(data: dict[str, Any] | None, at: str, context: _Context) -> Control | None:
    if data is None:
        return None
    return Control(data["prompt"], _assertions_of(data, at, context))


def _assertions_of(data: dict[str, Any], at: str, context: _Context) -> tuple[Assertion, ...]:
    """The assertions of the probe or control object at `at`."""
    return tuple(
        _assertion(item, context, f"{at}/assertions/{index}")
        for index, item in enumerate(data["assertions"])
    )


def _assertion(data: dict[str, Any], context: _Context, at: str) -> Assertion:
    suite_dir, judge = context.suite_dir, context.judge
    if data["type"] in TOOL_ASSERTIONS:
        return build_tool_assertion(data, context.locate(at))
    if data["type"] == "judge":
        target = _parsed_adapter(data["target"], suite_dir) if "target" in data else judge
        assert target is not None  # _judge_problems: a judge assertion has a judge
        return JudgeAssertion(data["rubric"], target)
    if data["type"] == "command":
        return parse_command_assertion(data, suite_dir)
    if data["type"] in ("matches", "notMatches"):
        return MatchesAssertion(data["pattern"], data.get("flags", ""), data["type"])
    if data["type"] == "language":
        if "minConfidence" in data:
            return LanguageAssertion(data["value"], float(data["minConfidence"]))
        return LanguageAssertion(data["value"])
    if data["type"] == "notLeaks":
        variable = data.get("valueEnv")
        secret = data["value"] if variable is None else os.environ[variable]
        return NotLeaksAssertion(secret, data.get("minFragment"), variable)
    if data["type"] == "answers":
        return AnswersAssertion()
    if data["type"] == "fluent":
        return FluentAssertion(data["value"], float(data.get("minShare", 0.6)))
    return TextAssertion(data["type"], data["value"], data.get("caseSensitive", False))
