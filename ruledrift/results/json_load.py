"""Reading a saved JSON report back into a `RunResult` (`ruledrift report REPORT.json`), so the
terminal view, the HTML report and JUnit can be rendered again without calling a model.

A report is untrusted input (an artifact anyone may have edited), so nothing in it reaches a
renderer, `merge` or `compare` unchecked: it is read only from a regular file of at most
MAX_REPORT_BYTES, parsed under the suite loader's rules (no repeated keys, NaN or infinity,
integers within 64 bits, nesting at most MAX_DEPTH deep) and without lone surrogates (refused:
RuleDrift writes U+FFFD), validated against the report schema, the single validator of every
field's type and range (`ruledrift/schemas/ruledrift-report.schema.json`; fields it does not
know are ignored, as the version policy in docs/reports.md lets a newer RuleDrift add optional
ones), and it must agree with itself: ids used once, one severity a rule, a summary and
scenario verdicts that agree with the probes, a shard that holds what it was assigned. Whatever
is wrong is a `UsageError` (exit 2) listing the first problems as `FILE:LINE:COLUMN: /pointer:
message`, never a traceback. The schema is checked by fastjsonschema (a 40 MB report in about a
second); jsonschema words the errors, only where that check fails.

The report holds the verdicts, not the suite. What it lacks gets a placeholder a renderer can show
without misleading anyone:

- every `Location` (rules, scenarios, probes) is `NOWHERE`, line 1, column 1: the report keeps no
  positions, so annotations made from a loaded report point at the top of the suite file;
- a rule's instruction is `NOT_IN_REPORT`, the suite's system prompt `None`, a scenario's turns
  `()`, the suite's `version` 1 and its `adapter` a `ReportedAdapter` (the type and model of
  `target`, nothing to run with); rules are those the report names, in its order;
- a probe's prompt: `[not in the report: the prompt of probe ID]`, except where the
  `identical-answer` flags the report recorded say two probes shared a prompt (then they share
  one placeholder) or that a probe asked exactly what a background turn asked (then that turn's
  text, as the transcript holds it); a probe's assertion definitions: `()` (their results are
  kept);
- an answer whose text the report does not hold (no `--include-responses`): `""` for a pass
  flagged `empty-answer`, else `[answer not in the report: sha256 HASH]`; its `sha256` and
  `length` are the report's. Placeholders and prompts are chosen so that `findings.probe_flags`
  finds the flags the report recorded, as far as the report allows (see `_prompts`); the flags
  read off the text (`refusal`, `not-fluent`) are kept as recorded, `ProbeResult.text_flags`,
  with or without the text; render a
  loaded report with `include_responses` only when `SavedReport.responses_included`;
- a run's answer metadata (`runs[].response` has none in the report): `{}`;
- a scenario's `runs` (times it was played): one more than the highest run number of its
  probes, 1 without repeats (an interrupted run that recorded no probe is not counted).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import fastjsonschema
from jsonschema import Draft202012Validator, TypeChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from ruledrift.boundary.files import FileTooBig, UnreadableFile, read_regular_file
from ruledrift.checks.jsregex import js_test
from ruledrift.data import (
    AssertionResult,
    Balance,
    ControlRun,
    History,
    JudgeRecord,
    Location,
    Message,
    Probe,
    ProbeResult,
    ProbeRun,
    Response,
    Rule,
    RunResult,
    Scenario,
    ScenarioResult,
    SearchResult,
    Severity,
    ShardInfo,
    Suite,
    TargetInfo,
    ToolCall,
    ToolCallRecord,
    ToolUse,
    Variant,
    VariantResult,
    VerdictPolicy,
    derived_probe_id,
)
from ruledrift.errors import ConfigIssue, UsageError
from ruledrift.jsondoc import positions as jsonpos
from ruledrift.jsondoc.positions import pointer_of
from ruledrift.jsondoc.schema_messages import context, findings, show
from ruledrift.results import fields
from ruledrift.results.fields import reader
from ruledrift.results.findings import TEXT_FLAGS, answered_turns
from ruledrift.results.json_report import REPORT_VERSION, summary_values
from ruledrift.run.verdicts import identical_reason, runs_identical
from ruledrift.suite.load import schema_text
from ruledrift.text import cut_text, json_kind, preview, terminal_safe

REPORT_SCHEMA = "ruledrift-report.schema.json"
MAX_REPORT_BYTES = 64 * 1024 * 1024  # far above a real report, answers and repeats included
MAX_DEPTH = 100  # a report nests about 10 deep; this keeps far from the recursion limit
SHOWN_PROBLEMS = 5
_COUNTED_PROBLEMS = 100  # of the schema's, at most: a damaged file may have millions
NOWHERE = Location(line=1, column=1)  # the report keeps no positions in the suite file
NOT_IN_REPORT = "[not in the report]"
_SUITE_VERSION = 1
_MAX_LINE = 300  # characters of a problem's line, besides the file's name
_MAX_INTEGER_CHARS = len(str(jsonpos.MIN_INTEGER))  # 19 digits and a sign
_NONZERO_DIGIT = re.compile("[1-9]")
_SPACE = re.compile(r"[ \t\n\r]*")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # how JSON text writes a surrogate
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
    re.IGNORECASE,
)
_WHAT = "expected a JSON report written by `ruledrift run --json`"
_read_assertion = reader(fields.ASSERTION)
_read_judge = reader(fields.JUDGE)
_read_balance = reader(fields.BALANCE)
_read_control = reader(fields.CONTROL)
_read_message = reader(fields.MESSAGE)
_read_policy = reader(fields.POLICY)
_read_probe = reader(fields.PROBE)
_read_report = reader(fields.REPORT)
_read_response = reader(fields.RESPONSE)
_read_run = reader(fields.RUN)
_read_scenario = reader(fields.SCENARIO)
_read_history = reader(fields.HISTORY)
_read_search = reader(fields.SEARCH)
_read_shard = reader(fields.SHARD)
_read_suite = reader(fields.SUITE)
_read_summary = reader(fields.SUMMARY)
_read_target = reader(fields.TARGET)
_read_tool = reader(fields.TOOL)
_read_variant = reader(fields.VARIANT_RESULT)
_read_message_call = reader(fields.MESSAGE_CALL)
_read_tool_use = reader(fields.TOOL_USE)
_read_tool_call = reader(fields.TOOL_CALL)


@dataclass(frozen=True)
class ReportedAdapter:
    """The adapter as a report names it (`target.adapter`, `target.model`): enough for a
    renderer's header, nothing to run with."""

    type: str
    model: str | None


@dataclass(frozen=True)
class SavedReport:
    """A report read back: the run, whether its answers are in it (render with
    `include_responses` only then) and the RuleDrift version that wrote it."""

    result: RunResult
    responses_included: bool
    tool_version: str


class _Refused(ValueError):
    """Legal JSON that a report never holds (NaN, a repeated key, a number out of range)."""


class _Whole(float):
    """A number written with a fraction or an exponent whose value is whole (`2.0`, `1e3`): a
    number, never an integer, as the reader's type check says. fastjsonschema, like JSON Schema
    itself, takes such a float for an integer (its check is `isinstance(x, float) and
    x.is_integer()`); a report writes its integers as integers."""

    def is_integer(self) -> bool:
        return False


@dataclass(frozen=True)
class _Problem:
    """One thing wrong with a report: where (a JSON pointer), what, and the value's path (to name
    the scenario and probe it is in)."""

    pointer: str
    message: str
    path: tuple[str | int, ...] = ()


def _at(path: Sequence[str | int], message: str) -> _Problem:
    return _Problem(pointer_of(*path), message, tuple(path))


def load_report(path: Path) -> RunResult:
    """The run a JSON report at `path` describes; raises UsageError (exit 2) when it is not one."""
    return read_report(path).result


def read_report(path: Path) -> SavedReport:
    """The JSON report at `path`, read back; raises UsageError (exit 2) when it is not one."""
    return report_from_bytes(_read(path), source=str(path))


def report_from_bytes(raw: bytes, *, source: str) -> SavedReport:
    """A report from its bytes; `source` names it in messages (a path), each problem located as
    `SOURCE:LINE:COLUMN: /pointer: message`."""
    data, text = _parse(raw, source)
    return _checked(data, source, text)


def report_from_json(data: object, *, source: str) -> SavedReport:
    """A report from its decoded JSON (as `json.loads` returns it), read as the text it encodes
    would be (`2.0` is no integer); problems are named by their pointer only."""
    decoded, _ = _parse(json.dumps(data).encode(), source)
    return _checked(decoded, source, None)


def _checked(data: object, source: str, text: str | None) -> SavedReport:
    """The report, once every check passed; each check may rely on those before it."""
    _check_version(data, source)
    report = cast(dict[str, Any], data)
    invalid = f"not a valid RuleDrift report (version {REPORT_VERSION})"
    _refuse(source, report, text, invalid, _schema_problems(report))
    _refuse(source, report, text, "an id used twice", _repeated_ids(report))
    _refuse(source, report, text, "a rule with two severities", _severity_problems(report))
    variants = _variant_problems(report)
    _refuse(source, report, text, "its variants do not match its probes (edited?)", variants)
    rounds = _round_problems(report)
    _refuse(source, report, text, "a tool call in a round its turn did not take (edited?)", rounds)
    saved = _build(report)
    summary = _disagreements(saved.result, report)
    _refuse(source, report, text, "its summary does not match its probes (edited?)", summary)
    shard = _shard_problems(report)
    _refuse(source, report, text, "its shard does not match its scenarios (edited?)", shard)
    return saved


def _refuse(
    source: str, report: dict[str, Any], text: str | None, what: str, problems: list[_Problem]
) -> None:
    if problems:
        raise _refused(source, what, problems, report, text)


# --- reading ---------------------------------------------------------------------------------


def _problem(source: str, message: str) -> UsageError:
    return UsageError(f"cannot read report {terminal_safe(source)}: {message}")


def _refused(
    source: str, what: str, problems: list[_Problem], data: object, text: str | None
) -> UsageError:
    shown = [f"  {line}" for line in _located(source, problems[:SHOWN_PROBLEMS], data, text)]
    more = len(problems) - SHOWN_PROBLEMS
    if more > 0:
        shown.append(
            f"  … and {more} more" if len(problems) < _COUNTED_PROBLEMS else "  … and more"
        )
    return _problem(source, "\n".join([f"{what}:", *shown]))


def _located(
    source: str, problems: list[_Problem], data: object, text: str | None
) -> Iterator[str]:
    """Each problem as `SOURCE:LINE:COLUMN: /pointer: message (scenario "s", probe "p")`, as
    the suite loader words its problems; `/pointer: message` without the text."""
    lines = jsonpos.Parsed(text) if text is not None else None
    for problem in problems:
        message = problem.message + context(data, problem.path)
        if text is None or lines is None:
            yield _line(f"{problem.pointer or '/'}: {message}")
            continue
        offset = _offset_of(text, problem.pointer)
        issue = ConfigIssue(source, *lines.line_col(offset), problem.pointer, message)
        yield cut_text(str(issue), _MAX_LINE + len(source))


_DECODER = json.JSONDecoder()
_scan_string: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


def _offset_of(text: str, pointer: str) -> int:
    """Where the value at `pointer` starts in `text` (JSON that parsed), found by walking down
    to it and skipping every other value with the C scanner: a tenth of a second in 40 MB, where
    keeping every value's position (`jsonpos`) takes six. 0 if it is not there."""
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]
    at = _skip_space(text, 0)
    for token in tokens:
        found = _member(text, at, token) if text.startswith("{", at) else None
        if text.startswith("[", at) and token.isdigit():
            found = _element(text, at, int(token))
        if found is None:
            return 0
        at = found
    return at


def _member(text: str, at: int, key: str) -> int | None:
    """The offset of member `key`'s value in the object at `at`."""
    at = _skip_space(text, at + 1)
    while text.startswith('"', at):
        name, at = _scan_string(text, at + 1)
        at = _skip_space(text, _skip_space(text, at) + 1)  # past the colon
        if name == key:
            return at
        at = _skip_space(text, _DECODER.raw_decode(text, at)[1])
        at = _skip_space(text, at + 1) if text.startswith(",", at) else at
    return None


def _element(text: str, at: int, index: int) -> int | None:
    """The offset of element `index` of the array at `at`."""
    at = _skip_space(text, at + 1)
    for _ in range(index):
        if text.startswith("]", at):
            return None
        at = _skip_space(text, _DECODER.raw_decode(text, at)[1])
        at = _skip_space(text, at + 1) if text.startswith(",", at) else at
    return None if text.startswith("]", at) else at


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def _read(path: Path) -> bytes:
    """The bytes of the report file (`files.read_regular_file`: a regular file, at most
    MAX_REPORT_BYTES)."""
    try:
        return read_regular_file(path, MAX_REPORT_BYTES, what=_WHAT)
    except FileTooBig:
        raise _too_large(path) from None
    except UnreadableFile as error:
        raise _problem(str(path), error.problem) from None


def _too_large(path: Path) -> UsageError:
    return _problem(
        str(path),
        f"larger than {MAX_REPORT_BYTES:,} bytes ({MAX_REPORT_BYTES / 2**20:g} MiB), the most a "
        "report may be; a RuleDrift report is far smaller",
    )


# --- parsing ---------------------------------------------------------------------------------


def _parse(raw: bytes, source: str) -> tuple[object, str]:
    """The JSON value and text of a report. Parsed fast by `json.loads`, under the rules of
    `jsonpos` (the suite loader's parser, which keeps positions): no repeated keys, no NaN or
    infinity, integers within 64 bits, no number that would become 0, nesting at most MAX_DEPTH
    deep; and no lone UTF-16 surrogate (`"\\ud800"`: RuleDrift writes U+FFFD in its place, so a
    report that holds one was not written by RuleDrift). A syntax problem is found again with
    `jsonpos`, for its line and column."""
    if not raw.strip():
        raise _problem(source, f"the file is empty; {_WHAT}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _not_utf8(raw, error, source) from None
    text = text.removeprefix("\ufeff")
    try:
        data = json.loads(
            text,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except _Refused as refused:
        raise _syntax_problem(text, source, str(refused)) from None
    except (ValueError, RecursionError):  # not JSON (JSONDecodeError), or too deep for it
        raise _syntax_problem(text, source) from None
    if _deeper_than(data, MAX_DEPTH):
        raise _syntax_problem(text, source)
    surrogate = _lone_surrogate(data, text)
    if surrogate is not None:
        raise _refused(source, "not a RuleDrift report", [surrogate], data, text)
    return data, text


def _not_utf8(raw: bytes, error: UnicodeDecodeError, source: str) -> UsageError:
    before = raw[: error.start].decode("utf-8", "replace")
    line, column = jsonpos.Parsed(before).line_col(len(before))
    byte = raw[error.start]
    issue = ConfigIssue(source, line, column, "", f"byte 0x{byte:02x} is not UTF-8")
    return _problem(source, f"not UTF-8 (at offset {error.start:,}):\n  {issue}")


def _syntax_problem(text: str, source: str, refused: str = "") -> UsageError:
    """What `jsonpos` says is wrong with `text`, at its line and column (`refused`: the words
    for a value `json.loads` reads but a report never holds, such as NaN)."""
    try:
        doc = jsonpos.parse(text)
    except jsonpos.JSONSyntaxError as error:
        line, column = jsonpos.Parsed(text).line_col(error.offset)
        message = error.message
        if refused and message.startswith("expected a JSON value"):
            message = refused
        elif message.startswith("nesting deeper"):
            message = f"nesting deeper than {MAX_DEPTH} levels; a report nests about 10"
        usable = isinstance(error, jsonpos.JSONLimitError)
        what = f"not usable JSON; {_WHAT}" if usable else f"not JSON; {_WHAT}"
        issue = ConfigIssue(source, line, column, error.pointer, message)
        return _problem(source, f"{what}:\n  {cut_text(str(issue), _MAX_LINE + len(source))}")
    if doc.duplicates:
        repeated = doc.duplicates[0]
        first_line, first_column = doc.line_col(repeated.first_offset)
        key = repeated.pointer.rsplit("/", 1)[1].replace("~1", "/").replace("~0", "~")
        message = (
            f"the key {show(key)} appears twice in one object (first at line {first_line}, "
            f"column {first_column})"
        )
        line, column = doc.line_col(repeated.offset)
        issue = ConfigIssue(source, line, column, repeated.pointer, message)
        return _problem(source, f"not a RuleDrift report:\n  {cut_text(str(issue), 500)}")
    return _problem(source, f"not JSON; {_WHAT}")  # not expected: jsonpos is the stricter


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) < len(pairs):
        raise _Refused("a repeated key")
    return found


def _constant(name: str) -> object:
    raise _Refused(f"{name} is not a JSON number")


def _int(literal: str) -> int:
    if len(literal) <= _MAX_INTEGER_CHARS:  # int() refuses a literal of more than 4,300 digits
        value = int(literal)
        if jsonpos.MIN_INTEGER <= value <= jsonpos.MAX_INTEGER:
            return value
    raise _Refused("an integer outside 64 bits")


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused("an infinite number")
    if value == 0 and _NONZERO_DIGIT.search(re.split("[eE]", literal)[0]):
        raise _Refused("a number that would become 0")
    return _Whole(value) if value.is_integer() else value


def _deeper_than(data: object, limit: int) -> bool:
    """Whether `data` nests deeper than `limit` arrays and objects (without recursion)."""
    level: list[object] = [data]  # after k rounds: the values inside k arrays and objects
    for _ in range(limit):
        level = [
            child
            for node in level
            if isinstance(node, dict | list)
            for child in (node.values() if isinstance(node, dict) else node)
        ]
        if not level:
            return False
    return any(isinstance(node, dict | list) for node in level)


def _lone_surrogate(data: object, text: str) -> _Problem | None:
    """The first string or key holding a lone UTF-16 surrogate. JSON text can hold one only as
    an escape (`\\ud800`; as UTF-8 bytes it is not UTF-8), so a text without such an escape is
    not searched."""
    if not _SURROGATE_ESCAPE.search(text):
        return None
    stack: list[tuple[tuple[str | int, ...], object]] = [((), data)]
    while stack:
        path, node = stack.pop()
        children: list[tuple[str | int, object]] = []
        if isinstance(node, str) and (found := _SURROGATE.search(node)):
            return _at(path, _surrogate_message(found.group()))
        if isinstance(node, dict):
            for key in node:
                if found := _SURROGATE.search(key):
                    return _at((*path, key), "the key " + _surrogate_message(found.group()))
            children = list(node.items())
        elif isinstance(node, list):
            children = list(enumerate(node))
        stack.extend(((*path, part), child) for part, child in reversed(children))
    return None


def _surrogate_message(surrogate: str) -> str:
    return (
        f"holds a lone UTF-16 surrogate (\\u{ord(surrogate):04x}), which no RuleDrift report "
        "holds (RuleDrift writes U+FFFD in its place)"
    )


# --- validation ------------------------------------------------------------------------------


def _check_version(data: object, source: str) -> None:
    """A clear word for a file that is not a report at all, or a report of another version."""
    if not isinstance(data, dict):
        raise _problem(source, f"not a RuleDrift report: {json_kind(data)}; {_WHAT}")
    if "reportVersion" not in data:
        hint = " (this looks like a suite: `ruledrift run` runs those)" if "rules" in data else ""
        raise _problem(source, f"not a RuleDrift report: no reportVersion{hint}; {_WHAT}")
    version = data["reportVersion"]
    if type(version) is not int or version != REPORT_VERSION:
        raise _problem(
            source,
            f"report version {show(version)}: this RuleDrift reads version {REPORT_VERSION}; "
            "render it with the RuleDrift that wrote it",
        )


def _is_integer(checker: TypeChecker, instance: object) -> bool:
    """An integer literal: `2.0` is a number, never an integer (a report writes integers)."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _full_pattern(
    validator: Validator, pattern: str, instance: object, schema: object
) -> Iterator[ValidationError]:
    """`pattern` with ECMAScript semantics: Python's `$` also matches before a final newline."""
    if isinstance(instance, str) and not js_test(pattern, "", instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _open_objects(node: object) -> None:
    """Drop every `"additionalProperties": false`: a field this RuleDrift does not know is
    ignored, as a newer one may add optional fields without raising the report's version
    (docs/reports.md, "Version policy"); unknown fields are left out of the result."""
    if isinstance(node, dict):
        if node.get("additionalProperties") is False:
            del node["additionalProperties"]
        for child in node.values():
            _open_objects(child)
    elif isinstance(node, list):
        for child in node:
            _open_objects(child)


@functools.cache
def _reader_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_text(REPORT_SCHEMA))
    _open_objects(schema)
    return schema


def _schema_of(definition: str) -> dict[str, Any]:
    """The reader's schema of a whole report (""), or of one of its definitions ("scenario")."""
    schema = _reader_schema()
    if not definition:
        return schema
    root = {key: schema[key] for key in ("$schema", "$id", "$defs")}
    return root | {"$ref": f"#/$defs/{definition}"}


@functools.cache
def _validator(definition: str = "") -> Validator:
    """The schema's errors, every one worded (slow: about 10 µs a value)."""
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={"pattern": _full_pattern},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return strict(_schema_of(definition))


@functools.cache
def _quick_check(definition: str = "") -> Callable[[object], object]:
    """The same schema compiled to Python (about 25 times faster): whether a report is valid.
    Dates are checked by `_is_date_time`; `2.0` is no integer here either (`_Whole`)."""
    schema = copy.deepcopy(_schema_of(definition))
    _items_apart(schema, schema["$defs"])
    return cast(Callable[[object], object], fastjsonschema.compile(schema, use_formats=False))


def _items_apart(node: object, definitions: dict[str, Any]) -> None:
    """Each array's inline object schema for its items moved to a definition of its own (the
    same schema): fastjsonschema names every item it checks with `str.format(**locals())`, whose
    cost grows with the function it is in, and a probe's 1,000 runs were checked inline in the
    probe's large function (half the time of the check)."""
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in list(children):  # `definitions` grows meanwhile
        _items_apart(child, definitions)
    items = node.get("items") if isinstance(node, dict) else None
    if isinstance(node, dict) and isinstance(items, dict) and items.get("type") == "object":
        name = f"items-{len(definitions)}"
        definitions[name] = items
        node["items"] = {"$ref": f"#/$defs/{name}"}


def _valid_quickly(data: object, definition: str = "") -> bool:
    try:
        _quick_check(definition)(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _schema_errors(data: dict[str, Any]) -> list[ValidationError]:
    """The schema's first errors (at most _COUNTED_PROBLEMS), looked for with jsonschema only
    where the quick check fails: the report without its scenarios, then each scenario that
    fails on its own (a report of 40 MB with one wrong value: 1 s, not 20 s)."""
    if _valid_quickly(data):
        return []
    scenarios = data.get("scenarios")
    if not isinstance(scenarios, list):
        return list(itertools.islice(_validator().iter_errors(data), _COUNTED_PROBLEMS))
    rest = data | {"scenarios": []}
    errors = list(itertools.islice(_validator().iter_errors(rest), _COUNTED_PROBLEMS))
    for index, scenario in enumerate(scenarios):
        if len(errors) >= _COUNTED_PROBLEMS:
            break
        if _valid_quickly(scenario, "scenario"):
            continue
        found = _validator("scenario").iter_errors(scenario)
        for error in itertools.islice(found, _COUNTED_PROBLEMS - len(errors)):
            error.path.extendleft(reversed(("scenarios", index)))
            errors.append(error)
    return errors


def _schema_problems(data: dict[str, Any]) -> list[_Problem]:
    """The schema's first problems, in document order, without those about a value that already
    has the wrong type (`2.0` is "expected an integer", not also "at most 10000")."""
    errors = sorted((best_match([e]) for e in _schema_errors(data)), key=_document_order)
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    problems = [
        _Problem(pointer, message, tuple(error.absolute_path))
        for error in errors
        if error.validator == "type" or tuple(error.absolute_path) not in mistyped
        for pointer, message in _worded(error)
    ]
    started = data.get("startedAt")
    if isinstance(started, str) and not _is_date_time(started):
        problems.append(_at(["startedAt"], f"{show(started)} is not an RFC 3339 date-time"))
    return problems


def _document_order(error: ValidationError) -> list[tuple[int, int, str]]:
    return [(0, p, "") if isinstance(p, int) else (1, 0, p) for p in error.absolute_path]


def _worded(error: ValidationError) -> Iterator[tuple[str, str]]:
    if error.validator == "pattern":  # the schema's one pattern: a SHA-256 digest
        value = show(error.instance)
        yield pointer_of(*error.absolute_path), f"expected 64 lowercase hex digits, got {value}"
    else:
        yield from ((finding.pointer, finding.message) for finding in findings(error))


def _line(text: str) -> str:
    return preview(text, _MAX_LINE)


def _is_date_time(text: str) -> bool:
    if not _RFC3339.fullmatch(text):
        return False
    try:
        datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _repeated_ids(report: dict[str, Any]) -> list[_Problem]:
    """Scenario ids, rule ids and each scenario's probe ids name one thing each: results are
    merged and compared by them."""
    scenarios = report["scenarios"]
    problems = _first_twice([(("scenarios", i, "id"), s["id"]) for i, s in enumerate(scenarios)])
    problems += _first_twice(
        [(("rules", i, "id"), r["id"]) for i, r in enumerate(report.get("rules", []))]
    )
    for i, scenario in enumerate(scenarios):
        probes = enumerate(scenario["probes"])
        problems += _first_twice(
            [(("scenarios", i, "probes", j, "id"), p["id"]) for j, p in probes]
        )
    return problems


def _first_twice(ids: list[tuple[tuple[str | int, ...], str]]) -> list[_Problem]:
    first: dict[str, str] = {}
    problems = []
    for path, item_id in ids:
        if item_id in first:
            problems.append(_at(path, f"{show(item_id)} is used twice (first at {first[item_id]})"))
        first.setdefault(item_id, pointer_of(*path))
    return problems


def _severity_problems(report: dict[str, Any]) -> list[_Problem]:
    """A rule has one severity: wherever the report names it, it must say the same."""
    first: dict[str, tuple[Severity, str]] = {}
    problems = []
    for rule_id, severity, path in _severities(report):
        earlier = first.setdefault(rule_id, (severity, pointer_of(*path)))
        if earlier[0] != severity:
            problems.append(
                _at(
                    path,
                    f"rule {show(rule_id)} is {show(severity)} here but {show(earlier[0])} at "
                    f"{earlier[1]}",
                )
            )
    return problems


def _variant_problems(report: dict[str, Any]) -> list[_Problem]:
    """Each scenario's variants: named once, with exactly the scenario's probes (id and rule, in
    order), since a variant's run r pairs with base's run r of the same probe."""
    problems = []
    for i, scenario in enumerate(report["scenarios"]):
        played = scenario.get("variants", [])
        problems += _first_twice(
            [(("scenarios", i, "variants", j, "id"), v["id"]) for j, v in enumerate(played)]
        )
        expected = [(p["id"], p["rule"]) for p in scenario["probes"]]
        for j, variant in enumerate(played):
            if [(p["id"], p["rule"]) for p in variant["probes"]] != expected:
                problems.append(
                    _at(
                        ("scenarios", i, "variants", j, "probes"),
                        "a variant holds other probes than its scenario (ids and rules, in order)",
                    )
                )
    return problems


def _round_problems(report: dict[str, Any]) -> list[_Problem]:
    """Each tool call was asked for in a round of its turn (`round` at most `rounds`): the
    reports name the round beside the call."""
    problems = []
    for path, tools in _tool_uses(report):
        for k, call in enumerate(tools["calls"]):
            if call["round"] > tools["rounds"]:
                message = f"round {call['round']}, but the turn took {tools['rounds']} round(s)"
                problems.append(_at((*path, "calls", k, "round"), message))
    return problems


_Path = tuple[str | int, ...]


def _tool_uses(report: dict[str, Any]) -> Iterator[tuple[_Path, dict[str, Any]]]:
    """Every `tools` object of the report (a probe's, a run's, a control's) and its path."""
    for i, scenario in enumerate(report["scenarios"]):
        groups: list[tuple[_Path, dict[str, Any]]] = [(("scenarios", i), scenario)]
        groups += [
            (("scenarios", i, "variants", j), v) for j, v in enumerate(scenario.get("variants", ()))
        ]
        for where, group in groups:
            for j, probe in enumerate(group["probes"]):
                turns: list[tuple[_Path, dict[str, Any]]] = [((*where, "probes", j), probe)]
                turns += [
                    ((*where, "probes", j, "runs", k), r)
                    for k, r in enumerate(probe.get("runs", ()))
                ]
                for path, turn in turns:
                    yield from _turn_tools(path, turn)


def _turn_tools(path: _Path, turn: dict[str, Any]) -> Iterator[tuple[_Path, dict[str, Any]]]:
    """A probe's or a run's `tools`, and its control's."""
    if "tools" in turn:
        yield (*path, "tools"), turn["tools"]
    control = turn.get("control")
    if control is not None and "tools" in control:
        yield (*path, "control", "tools"), control["tools"]


def _severities(report: dict[str, Any]) -> Iterator[tuple[str, Severity, tuple[str | int, ...]]]:
    """Each rule id with a severity and where, in the suite's order (`rules` lists them so; a
    rule only a probe names comes after)."""
    for i, rule in enumerate(report.get("rules", [])):
        yield rule["id"], rule["severity"], ("rules", i)
    for i, scenario in enumerate(report["scenarios"]):
        for j, probe in enumerate(scenario["probes"]):
            yield probe["rule"], probe["severity"], ("scenarios", i, "probes", j)


def _disagreements(result: RunResult, report: dict[str, Any]) -> list[_Problem]:
    """Where the summary or a scenario's status says other than the probes: a verdict is shown
    and decides the exit code from the probes, so the file must not say something else."""
    summary = report["summary"]
    values = summary_values(result)
    found = {f.key: values[f.attribute] or 0 for f in fields.SUMMARY if f.agrees}
    problems = [
        _at(["summary", key], f"says {show(summary.get(key, 0))}, the probes say {show(value)}")
        for key, value in found.items()
        if summary.get(key, 0) != value
    ]
    pairs = zip(result.scenarios, report["scenarios"], strict=True)
    for index, (scenario, rendered) in enumerate(pairs):
        problems += _search_problems(scenario, index)
        if rendered["status"] != scenario.status:
            problems.append(
                _at(
                    ["scenarios", index, "status"],
                    f"says {show(rendered['status'])}, its probes say {show(scenario.status)}",
                )
            )
    return problems


def _search_problems(scenario: ScenarioResult, index: int) -> list[_Problem]:
    """A search whose points are not probes of its scenario (`<id>-after-<N>`, its rule, at
    that depth): the drift curve shows the points from the probes, so they must be there."""
    probes = {p.probe.id: p.probe for p in scenario.probes}
    problems = []
    for k, search in enumerate(scenario.searches):
        for j, depth in enumerate(search.points):
            point = probes.get(derived_probe_id(search.id, depth))
            if point is None or point.rule.id != search.rule or point.after_turn != depth:
                name = show(derived_probe_id(search.id, depth))
                problems.append(
                    _at(
                        ["scenarios", index, "searches", k, "points", j],
                        f"names depth {depth}, but the scenario has no probe {name} of rule "
                        f"{show(search.rule)} after turn {depth}",
                    )
                )
    return problems


def _shard_problems(report: dict[str, Any]) -> list[_Problem]:
    """A shard report holds exactly the scenarios it was assigned (`assigned`; without it, as
    older reports are, at least scenarios of the run's selection), and K is at most N."""
    shard = report["suite"].get("shard")
    if shard is None:
        return []
    problems = []
    if shard["index"] > shard["total"]:
        message = f"shard {shard['index']} of {shard['total']}: K is at most N"
        problems.append(_at(["suite", "shard", "index"], message))
    held = {s["id"]: i for i, s in enumerate(report["scenarios"])}
    assigned = shard.get("assigned")
    if assigned is None:
        allowed, what = set(shard["scenarios"]), "in the run's selection (/suite/shard/scenarios)"
    else:
        problems += _assignment_problems(assigned, set(shard["scenarios"]), held)
        allowed, what = set(assigned), "assigned to this shard"
    problems += [
        _at(["scenarios", i, "id"], f"{show(scenario_id)} is not {what}")
        for scenario_id, i in held.items()
        if scenario_id not in allowed
    ]
    return problems


def _assignment_problems(
    assigned: list[str], selection: set[str], held: dict[str, int]
) -> list[_Problem]:
    problems = []
    for i, scenario_id in enumerate(assigned):
        if scenario_id not in selection:
            message = f"{show(scenario_id)} is not in the run's selection (/suite/shard/scenarios)"
            problems.append(_at(["suite", "shard", "assigned", i], message))
        elif scenario_id not in held:
            message = f"the shard was assigned {show(scenario_id)}, which is not in /scenarios"
            problems.append(_at(["suite", "shard", "assigned", i], message))
    return problems


# --- building the result ---------------------------------------------------------------------


def _build(report: dict[str, Any]) -> SavedReport:
    values = _read_report(report)
    rules = _rules(report)
    rendered_policy = values.get("policy")
    policy = {} if rendered_policy is None else _read_policy(rendered_policy)
    verdict_policy = _policy(policy)
    scenarios = tuple(_scenario(s, rules, verdict_policy) for s in values["scenarios"])
    target = TargetInfo(**_read_target(values["target"]))
    suite_values = _read_suite(values["suite"])
    suite = Suite(
        version=_SUITE_VERSION,
        name=suite_values["name"],
        system_prompt=None,
        adapter=ReportedAdapter(target.adapter, target.model),
        rules=tuple(rules.values()),
        scenarios=tuple(s.scenario for s in scenarios),
        path=Path(suite_values["path"]),
        sha256=suite_values["sha256"],
        vacuous_passes=suite_values.get("vacuous_passes", "fail"),
        variants=tuple({v.variant.id: v.variant for s in scenarios for v in s.variants}.values()),
    )
    result = RunResult(
        suite=suite,
        target=target,
        started_at=values["started_at"],
        duration_ms=values["duration_ms"],
        scenarios=scenarios,
        interrupted=_read_summary(values["summary"])["interrupted"],
        policy=verdict_policy,
        shard=_shard(suite_values.get("shard")),
        balanced_by=_balance(suite_values.get("balanced_by")),
        seed=policy.get("seed"),
        temperature=policy.get("temperature"),
    )
    tool = _read_tool(values["tool"])
    return SavedReport(result, values["responses_included"], tool["version"])


def _rules(report: dict[str, Any]) -> dict[str, Rule]:
    """Every rule, in the suite's order, with the one severity the report gives it."""
    severities: dict[str, Severity] = {}
    for rule_id, severity, _ in _severities(report):
        severities.setdefault(rule_id, severity)
    return {
        rule_id: Rule(rule_id, NOT_IN_REPORT, severity, NOWHERE)
        for rule_id, severity in severities.items()
    }


def _scenario(
    rendered: dict[str, Any], rules: dict[str, Rule], policy: VerdictPolicy
) -> ScenarioResult:
    values = _read_scenario(rendered)
    messages = values.get("transcript", [])
    transcript = tuple(_message(m) for m in messages)
    results = _probe_results(values["probes"], rules, policy, transcript)
    history = values.get("history")
    scenario = Scenario(
        id=values["id"],
        description=values.get("description"),
        turns=(),
        probes=tuple(r.probe for r in results),
        location=NOWHERE,
        history=None if history is None else History(**_read_history(history), exchanges=()),
    )
    played = [run.run for result in results for run in result.runs]
    return ScenarioResult(
        scenario=scenario,
        probes=results,
        model_calls=values["model_calls"],
        duration_ms=values["duration_ms"],
        transcript=transcript,
        runs=max(played) + 1 if played else 1,
        judge_calls=values.get("judge_calls", 0),
        searches=tuple(_search(search) for search in values.get("searches", ())),
        variants=tuple(_variant(v, rules, policy) for v in values.get("variants", ())),
    )


def _message(rendered: dict[str, Any]) -> Message:
    values = _read_message(rendered)
    calls = values.get("tool_calls", ())
    values["tool_calls"] = tuple(_message_call(call) for call in calls)
    return Message(**values)


def _message_call(rendered: dict[str, Any]) -> ToolCall:
    values = _read_message_call(rendered)
    arguments = values.get("arguments", _arguments_placeholder(values["sha256"]))
    return ToolCall(values["id"], values["name"], arguments)


def _tool_use(rendered: dict[str, Any] | None) -> ToolUse | None:
    """A turn's tool calls (None: the report has none there)."""
    if rendered is None:
        return None
    values = _read_tool_use(rendered)
    calls = tuple(_tool_call(call) for call in values["calls"])
    return ToolUse(calls, values["rounds"], values["ran_out"])


def _tool_call(rendered: dict[str, Any]) -> ToolCallRecord:
    """A call as the report holds it: its arguments' text only when the report has the
    answers (else a placeholder with their hash), never parsed again (`parsed_json` None: the
    checks that read it have run)."""
    values = _read_tool_call(rendered)
    values.setdefault("arguments", _arguments_placeholder(values["sha256"]))
    return ToolCallRecord(**values)


def _arguments_placeholder(sha256: str) -> str:
    return f"[arguments not in the report: sha256 {sha256}]"


def _search(rendered: dict[str, Any]) -> SearchResult:
    values = _read_search(rendered)
    return SearchResult(**values | {"points": tuple(values["points"])})


def _probe_results(
    rendered: list[dict[str, Any]],
    rules: dict[str, Rule],
    policy: VerdictPolicy,
    transcript: Sequence[Message],
) -> tuple[ProbeResult, ...]:
    probes: list[dict[str, Any]] = [_read_probe(p) for p in rendered]
    texts = [_probe_text(p) for p in probes]
    prompts = _prompts(probes, texts, transcript)
    return tuple(
        _identical(_probe_result(p, rules, prompt, text), "identical_runs" in p, policy)
        for p, prompt, text in zip(probes, prompts, texts, strict=True)
    )


def _variant(
    rendered: dict[str, Any], rules: dict[str, Rule], policy: VerdictPolicy
) -> VariantResult:
    """A scenario's probes under one variant; the variant's settings as far as the report
    keeps them (not its system prompt's text)."""
    values = _read_variant(rendered)
    variant = Variant(
        values["id"],
        NOWHERE,
        remind_every=values.get("remind_every"),
        remind_as=values.get("remind_as", "system"),
        system_prompt=NOT_IN_REPORT if values["replaces_system_prompt"] else None,
    )
    probes = _probe_results(values["probes"], rules, policy, ())
    return VariantResult(variant, probes, values["model_calls"])


def _probe_text(probe: dict[str, Any]) -> str | None:
    """The probe's answer text, or its placeholder (None: no answer); `probe` by attribute."""
    response = probe["response"]
    if response is None:
        return None
    response = _read_response(response)
    if "text" in response:
        return cast(str, response["text"])
    if "empty-answer" in probe.get("flags", ()):
        return ""
    return _placeholder(response)


def _placeholder(response: dict[str, Any]) -> str:
    """The text of an answer the report holds only as a hash: one per distinct answer."""
    return f"[answer not in the report: sha256 {response['sha256']}]"


def _prompts(
    probes: Sequence[dict[str, Any]], texts: Sequence[str | None], transcript: Sequence[Message]
) -> list[str]:
    """Placeholder prompts under which `findings.probe_flags` finds the `identical-answer` flags
    the report recorded. That flag marks a pass whose answer the model also gave to a different
    message of the scenario (another probe's prompt, a background turn); so passes with one
    answer, whose prompts are equal, are flagged alike. An unflagged pass therefore shares its
    prompt with every probe that gave its answer, and with the background turn that got it when
    there is one; every other probe keeps a prompt of its own. Exact for every report
    render_json writes, but for an answer repeated from a background turn when the report holds
    no transcript (no `--include-responses`): that flag is lost."""
    prompts = [f"[not in the report: the prompt of probe {p['id']}]" for p in probes]
    asked: dict[str, set[str]] = {}
    for question, answer in answered_turns(transcript):
        asked.setdefault(answer.content, set()).add(question.content)
    answers: dict[str, list[int]] = {}
    for index, text in enumerate(texts):
        if text is not None and text.strip():
            answers.setdefault(text, []).append(index)
    for text, same in answers.items():
        if any(_unflagged_pass(probes[i]) for i in same):
            turns = asked.get(text, set())
            shared = next(iter(turns)) if len(turns) == 1 else prompts[same[0]]
            for index in same:
                prompts[index] = shared
    return prompts


def _unflagged_pass(probe: dict[str, Any]) -> bool:
    return probe["status"] == "passed" and "identical-answer" not in probe.get("flags", ())


def _probe_result(
    values: dict[str, Any], rules: dict[str, Rule], prompt: str, text: str | None
) -> ProbeResult:
    """A probe's result from its values by attribute (`fields.PROBE`)."""
    probe = Probe(
        id=values["id"],
        rule=rules[values["rule"]],
        after_turn=values["after_turn"],
        prompt=prompt,
        assertions=(),
        location=NOWHERE,
    )
    response = values["response"]
    return ProbeResult(
        probe=probe,
        status=values["status"],
        duration_ms=values["duration_ms"],
        assertions=_assertions(values["assertions"]),
        response=None if text is None else _response(response, text, values["metadata"]),
        error=values["error"],
        runs=tuple(_run(run) for run in values.get("runs", [])),
        decided_by=values.get("decided_by"),
        identical_runs=values.get("identical_runs", False),
        control=_control(values.get("control")),
        text_flags=_text_flags(values),
        tools=_tool_use(values.get("tools")),
    )


def _text_flags(values: dict[str, Any]) -> tuple[str, ...] | None:
    """The flags read off an answer's text as the report recorded them (None without an
    answer). Kept even when the report holds the text: the `refusal` flag also rests on the
    scenario's history, which a report holds only in part."""
    if values["response"] is None:
        return None
    return tuple(f for f in values.get("flags") or () if f in TEXT_FLAGS)


def _identical(result: ProbeResult, recorded: bool, policy: VerdictPolicy) -> ProbeResult:
    """The result of a report written before `identicalRuns` (`recorded` False) with the field
    worked out from its runs' hashes, and, when they were identical, the words that say so in
    place of the error bound its `decidedBy` claimed."""
    if recorded or not result.runs or not runs_identical(result.runs):
        return result
    reason = identical_reason(result.runs, result.status, policy)
    return dataclasses.replace(result, identical_runs=True, decided_by=reason)


def _run(rendered: dict[str, Any]) -> ProbeRun:
    values = _read_run(rendered)
    response = values["response"]
    text = None if response is None else response.get("text", _placeholder(response))
    values["assertions"] = _assertions(values["assertions"])
    values["response"] = None if text is None else _response(response, text, {})
    values["control"] = _control(values.get("control"))
    values["tools"] = _tool_use(values.get("tools"))
    return ProbeRun(**values)


def _control(rendered: dict[str, Any] | None) -> ControlRun | None:
    if rendered is None:
        return None
    values = _read_control(rendered)
    response = values["response"]
    text = None if response is None else response.get("text", _placeholder(response))
    values["assertions"] = _assertions(values["assertions"])
    values["response"] = None if text is None else _response(response, text, {})
    values["tools"] = _tool_use(values.get("tools"))
    return ControlRun(**values)


def _assertions(rendered: list[dict[str, Any]]) -> tuple[AssertionResult, ...]:
    return tuple(_assertion(a) for a in rendered)


def _assertion(rendered: dict[str, Any]) -> AssertionResult:
    values = _read_assertion(rendered)
    if "judge" in values:
        judge = _read_judge(values["judge"])
        response = judge["response"]
        judge["response"] = _response(response, response.get("text", _placeholder(response)), {})
        values["judge"] = JudgeRecord(**judge)
    return AssertionResult(**values)


def _response(rendered: dict[str, Any], text: str, metadata: dict[str, Any]) -> Response:
    values = _read_response(rendered)
    values["text"], values["metadata"] = text, metadata
    return Response(**values)


def _policy(values: dict[str, Any]) -> VerdictPolicy:
    """The run's policy from its values by attribute (`fields.POLICY`); one run (the default)
    when the report has none."""
    if not values:
        return VerdictPolicy()
    known = {f.name for f in dataclasses.fields(VerdictPolicy)}
    return VerdictPolicy(
        **{name: value for name, value in values.items() if name in known}
        | {
            "max_repeat": None if values.get("cap_derived") else values.get("max_repeat"),
            "inconclusive_passes": values["inconclusive"] == "pass",
        }
    )


def _shard(rendered: dict[str, Any] | None) -> ShardInfo | None:
    if rendered is None:
        return None
    values = _read_shard(rendered)
    return ShardInfo(
        **values
        | {
            name: tuple(values[name])
            for name in ("scenarios", "rules", "assigned")
            if values.get(name) is not None
        }
    )


def _balance(rendered: dict[str, Any] | None) -> Balance | None:
    return None if rendered is None else Balance(**_read_balance(rendered))
