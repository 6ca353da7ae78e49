"""Reading a saved JSON report back into a `RunResult` (`ruledrift report REPORT.json`), so the
terminal view, the HTML report and JUnit can be rendered again without calling a model.

A report is untrusted input (an artifact anyone may have edited), so nothing in it reaches a
renderer unchecked: it is read only from a regular file of at most MAX_REPORT_BYTES, parsed
strictly (no repeated keys, NaN, infinite numbers or nesting deeper than MAX_DEPTH), validated
against the report schema (`ruledrift/schemas/ruledrift-report.schema.json`; fields it does not
know are ignored, as the version policy in docs/reports.md lets a newer RuleDrift add optional
ones), and its summary and scenario verdicts must agree with its probes. Whatever is wrong is a
`UsageError` (exit 2) naming the file and the problem, never a traceback.

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
  finds the flags the report recorded, as far as the report allows (see `_prompts`); render a
  loaded report with `include_responses` only when `SavedReport.responses_included`;
- a run's answer metadata (`runs[].response` has none in the report): `{}`;
- a scenario's `runs` (times it was played): one more than the highest run number of its
  probes, 1 without repeats (an interrupted run that recorded no probe is not counted).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from jsonschema import Draft202012Validator, TypeChecker, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from ruledrift.config import schema_text
from ruledrift.errors import UsageError
from ruledrift.jsonpos import pointer_of
from ruledrift.jsregex import js_test
from ruledrift.model import (
    AssertionResult,
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
    Severity,
    ShardInfo,
    Suite,
    TargetInfo,
    VerdictPolicy,
)
from ruledrift.reports.json_report import REPORT_VERSION
from ruledrift.schema_messages import context, findings, show
from ruledrift.text import cut_text, json_kind, terminal_safe

REPORT_SCHEMA = "ruledrift-report.schema.json"
MAX_REPORT_BYTES = 64 * 1024 * 1024  # far above a real report, answers and repeats included
MAX_DEPTH = 100  # a report nests about 10 deep; this keeps far from the recursion limit
SHOWN_PROBLEMS = 5
_COUNTED_PROBLEMS = 100  # of the schema's, at most: a damaged file may have millions
NOWHERE = Location(line=1, column=1)  # the report keeps no positions in the suite file
NOT_IN_REPORT = "[not in the report]"
_SUITE_VERSION = 1
_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})",
    re.IGNORECASE,
)
_SPECIAL_FILES = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_WHAT = "expected a JSON report written by `ruledrift run --json`"


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
    """Legal JSON that a report never holds (NaN, a repeated key, an infinite number)."""


def load_report(path: Path) -> RunResult:
    """The run a JSON report at `path` describes; raises UsageError (exit 2) when it is not one."""
    return read_report(path).result


def read_report(path: Path) -> SavedReport:
    """The JSON report at `path`, read back; raises UsageError (exit 2) when it is not one."""
    return report_from_bytes(_read(path), source=str(path))


def report_from_bytes(raw: bytes, *, source: str) -> SavedReport:
    """A report from its bytes; `source` names it in messages (a path)."""
    return report_from_json(_parse(raw, source), source=source)


def report_from_json(data: object, *, source: str) -> SavedReport:
    """A report from its decoded JSON (as `json.loads` returns it)."""
    _check_version(data, source)
    problems = _schema_problems(data)
    if problems:
        raise _refused(source, f"not a valid RuleDrift report (version {REPORT_VERSION})", problems)
    report = cast(dict[str, Any], data)
    saved = _build(report, source)
    problems = _disagreements(saved.result, report)
    if problems:
        raise _refused(source, "its summary does not match its probes (edited?)", problems)
    return saved


# --- reading ---------------------------------------------------------------------------------


def _problem(source: str, message: str) -> UsageError:
    return UsageError(f"cannot read report {terminal_safe(source)}: {message}")


def _refused(source: str, what: str, problems: list[str]) -> UsageError:
    shown = [f"  {line}" for line in problems[:SHOWN_PROBLEMS]]
    more = len(problems) - SHOWN_PROBLEMS
    if more > 0:
        shown.append(
            f"  … and {more} more" if len(problems) < _COUNTED_PROBLEMS else "  … and more"
        )
    return _problem(source, "\n".join([f"{what}:", *shown]))


def _read(path: Path) -> bytes:
    """The bytes of a regular file of at most MAX_REPORT_BYTES, opened without blocking (a FIFO
    without a writer would wait forever) and read no further than one byte past the limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except ValueError:  # the only other thing os.open raises: a NUL character in the path
        raise _problem(str(path), "the path contains a NUL character") from None
    except OSError as error:
        raise _problem(str(path), _open_problem(error)) from None
    try:
        return _read_regular_file(path, fd)
    except OSError as error:
        raise _problem(str(path), f"cannot be read: {error.strerror or error}") from None
    finally:
        os.close(fd)


def _open_problem(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "file not found"
    if isinstance(error, IsADirectoryError):
        return f"is a directory; {_WHAT}"
    if isinstance(error, PermissionError):
        return "permission denied"
    return f"cannot be opened: {error.strerror or error}"


def _read_regular_file(path: Path, fd: int) -> bytes:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise _problem(str(path), f"is a directory; {_WHAT}")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _SPECIAL_FILES if test(info.st_mode)), "a special file")
        raise _problem(
            str(path), f"is {kind}, not a regular file (reading one may never end); {_WHAT}"
        )
    if info.st_size > MAX_REPORT_BYTES:
        raise _too_large(path)
    chunks: list[bytes] = []
    remaining = MAX_REPORT_BYTES + 1  # one byte more: a file that grew, or says size 0 (/proc)
    while remaining > 0 and (chunk := os.read(fd, remaining)):
        chunks.append(chunk)
        remaining -= len(chunk)
    if remaining == 0:
        raise _too_large(path)
    return b"".join(chunks)


def _too_large(path: Path) -> UsageError:
    return _problem(
        str(path),
        f"larger than {MAX_REPORT_BYTES:,} bytes ({MAX_REPORT_BYTES / 2**20:g} MiB), the most a "
        "report may be; a RuleDrift report is far smaller",
    )


# --- parsing ---------------------------------------------------------------------------------


def _parse(raw: bytes, source: str) -> object:
    if not raw.strip():
        raise _problem(source, f"the file is empty; {_WHAT}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        byte = raw[error.start]
        raise _problem(source, f"not UTF-8 (byte 0x{byte:02x} at offset {error.start:,})") from None
    try:
        data = json.loads(
            text.removeprefix("\ufeff"),
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_float=_float,
        )
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        raise _problem(source, f"not JSON: {error.msg} at {where}; {_WHAT}") from None
    except _Refused as error:
        raise _problem(source, f"not a RuleDrift report: {error}") from None
    except RecursionError:
        raise _problem(source, f"nested too deeply to be a report; {_WHAT}") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise _problem(source, f"not usable JSON: {cut_text(str(error), 200)}") from None
    if _deeper_than(data, MAX_DEPTH):
        raise _problem(source, f"nested deeper than {MAX_DEPTH} levels; a report is about 10")
    return data


def _object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    found = dict(pairs)
    if len(found) < len(pairs):
        repeated = next(k for k, n in Counter(key for key, _ in pairs).items() if n > 1)
        raise _Refused(f"the key {show(repeated)} appears twice in one object")
    return found


def _constant(name: str) -> object:
    raise _Refused(f"{name} is not a JSON number")


def _float(literal: str) -> float:
    value = float(literal)
    if not math.isfinite(value):
        raise _Refused(f"the number {cut_text(literal, 24)} is too large")
    return value


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


def _unknown_fields_ignored(
    validator: Validator, additional: object, instance: object, schema: object
) -> Iterator[ValidationError]:
    """No error for a field this RuleDrift does not know: a newer one may add optional fields
    without raising the report's version (docs/reports.md, "Version policy"); they are left out."""
    return iter(())


@functools.cache
def _validator() -> Validator:
    strict: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
        Draft202012Validator,
        validators={"pattern": _full_pattern, "additionalProperties": _unknown_fields_ignored},
        type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
    )
    return strict(json.loads(schema_text(REPORT_SCHEMA)))


def _schema_problems(data: object) -> list[str]:
    """The schema's first problems (in document order), each as `POINTER (names): message`."""
    errors = itertools.islice(_validator().iter_errors(cast(Any, data)), _COUNTED_PROBLEMS)
    problems = []
    for error in sorted(errors, key=_document_order):
        deepest = best_match([error])
        where = context(data, list(deepest.absolute_path))
        for pointer, message in _worded(deepest):
            problems.append(_line(f"{pointer or '/'}{where}: {message}"))
    started = data.get("startedAt") if isinstance(data, dict) else None
    if isinstance(started, str) and not _is_date_time(started):
        problems.append(_line(f"/startedAt: {show(started)} is not an RFC 3339 date-time"))
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
    return cut_text(terminal_safe(text), 300)


def _is_date_time(text: str) -> bool:
    if not _RFC3339.fullmatch(text):
        return False
    try:
        datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _disagreements(result: RunResult, report: dict[str, Any]) -> list[str]:
    """Where the summary or a scenario's status says other than the probes: a verdict is shown
    and decides the exit code from the probes, so the file must not say something else."""
    summary = report["summary"]
    found: dict[str, object] = {
        "status": result.status,
        "scenarios": len(result.scenarios),
        "probes": len(result.probes),
        "passed": result.count("passed"),
        "failed": result.count("failed"),
        "errors": result.count("error"),
        "modelCalls": result.model_calls,
        "inconclusive": result.count("inconclusive"),
    }
    problems = [
        f"/summary/{key}: says {show(summary.get(key, 0))}, the probes say {show(value)}"
        for key, value in found.items()
        if summary.get(key, 0) != value
    ]
    pairs = zip(result.scenarios, report["scenarios"], strict=True)
    for index, (scenario, rendered) in enumerate(pairs):
        if rendered["status"] != scenario.status:
            problems.append(
                f"/scenarios/{index}/status: says {show(rendered['status'])}, its probes say "
                f"{show(scenario.status)}"
            )
    return [_line(problem) for problem in problems]


# --- building the result ---------------------------------------------------------------------


def _build(report: dict[str, Any], source: str) -> SavedReport:
    rules = _rules(report, source)
    scenarios = tuple(_scenario(s, rules) for s in report["scenarios"])
    target = report["target"]
    suite = Suite(
        version=_SUITE_VERSION,
        name=report["suite"]["name"],
        system_prompt=None,
        adapter=ReportedAdapter(target["adapter"], target["model"]),
        rules=tuple(rules.values()),
        scenarios=tuple(s.scenario for s in scenarios),
        path=Path(report["suite"]["config"]),
        sha256=report["suite"]["configSha256"],
    )
    result = RunResult(
        suite=suite,
        target=TargetInfo(target["adapter"], target["model"], target["details"]),
        started_at=report["startedAt"],
        duration_ms=report["durationMs"],
        scenarios=scenarios,
        interrupted=report["summary"]["interrupted"],
        policy=_policy(report.get("policy")),
        shard=_shard(report["suite"].get("shard")),
        seed=(report.get("policy") or {}).get("seed"),
        temperature=(report.get("policy") or {}).get("temperature"),
    )
    return SavedReport(result, report["responsesIncluded"], report["tool"]["version"])


def _rules(report: dict[str, Any], source: str) -> dict[str, Rule]:
    """Every rule, in the suite's order (`rules` lists them so; a rule only a probe names comes
    after), with the one severity the report gives it."""
    severities: dict[str, tuple[Severity, str]] = {}
    named = [(r["id"], r["severity"], f"/rules/{i}") for i, r in enumerate(report.get("rules", []))]
    tested = [
        (p["rule"], p["severity"], f"/scenarios/{i}/probes/{j}")
        for i, scenario in enumerate(report["scenarios"])
        for j, p in enumerate(scenario["probes"])
    ]
    problems = []
    for rule_id, severity, pointer in named + tested:
        first = severities.setdefault(rule_id, (severity, pointer))
        if first[0] != severity:
            problems.append(
                _line(
                    f"{pointer}: rule {show(rule_id)} is {show(severity)} here but "
                    f"{show(first[0])} at {first[1]}"
                )
            )
    if problems:
        raise _refused(source, "a rule with two severities", problems)
    return {
        rule_id: Rule(rule_id, NOT_IN_REPORT, severity, NOWHERE)
        for rule_id, (severity, _) in severities.items()
    }


def _scenario(rendered: dict[str, Any], rules: dict[str, Rule]) -> ScenarioResult:
    transcript = tuple(Message(m["role"], m["content"]) for m in rendered.get("transcript", []))
    probes: list[dict[str, Any]] = rendered["probes"]
    texts = [_probe_text(p) for p in probes]
    prompts = _prompts(probes, texts, transcript)
    results = tuple(
        _probe_result(p, rules, prompt, text)
        for p, prompt, text in zip(probes, prompts, texts, strict=True)
    )
    scenario = Scenario(
        id=rendered["id"],
        description=rendered.get("description"),
        turns=(),
        probes=tuple(r.probe for r in results),
        location=NOWHERE,
    )
    played = [run.run for result in results for run in result.runs]
    return ScenarioResult(
        scenario=scenario,
        probes=results,
        model_calls=rendered["modelCalls"],
        duration_ms=rendered["durationMs"],
        transcript=transcript,
        runs=max(played) + 1 if played else 1,
    )


def _probe_text(rendered: dict[str, Any]) -> str | None:
    """The probe's answer text, or its placeholder (None: no answer)."""
    response = rendered["response"]
    if response is None:
        return None
    if "text" in response:
        return cast(str, response["text"])
    if "empty-answer" in rendered.get("flags", ()):
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
    for question, answer in itertools.pairwise(transcript):
        if answer.role == "assistant":
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


def _unflagged_pass(rendered: dict[str, Any]) -> bool:
    return rendered["status"] == "passed" and "identical-answer" not in rendered.get("flags", ())


def _probe_result(
    rendered: dict[str, Any], rules: dict[str, Rule], prompt: str, text: str | None
) -> ProbeResult:
    probe = Probe(
        id=rendered["id"],
        rule=rules[rendered["rule"]],
        after_turn=rendered["afterTurn"],
        prompt=prompt,
        assertions=(),
        location=NOWHERE,
    )
    response = rendered["response"]
    return ProbeResult(
        probe=probe,
        status=rendered["status"],
        duration_ms=rendered["durationMs"],
        assertions=_assertions(rendered["assertions"]),
        response=None if text is None else _response(response, text, rendered["metadata"]),
        error=rendered["error"],
        runs=tuple(_run(run) for run in rendered.get("runs", [])),
        decided_by=rendered.get("decidedBy"),
    )


def _run(rendered: dict[str, Any]) -> ProbeRun:
    response = rendered["response"]
    text = None if response is None else response.get("text", _placeholder(response))
    return ProbeRun(
        run=rendered["run"],
        status=rendered["status"],
        duration_ms=rendered["durationMs"],
        assertions=_assertions(rendered["assertions"]),
        response=None if text is None else _response(response, text, {}),
        error=rendered["error"],
        prompt=rendered["prompt"],
        seed=rendered["seed"],
    )


def _assertions(rendered: list[dict[str, Any]]) -> tuple[AssertionResult, ...]:
    return tuple(AssertionResult(a["type"], a["passed"], a["message"]) for a in rendered)


def _response(rendered: dict[str, Any], text: str, metadata: dict[str, Any]) -> Response:
    return Response(text, rendered["sha256"], rendered["length"], metadata)


def _policy(rendered: dict[str, Any] | None) -> VerdictPolicy:
    """The run's policy; one run (the default) when the report has none."""
    default = VerdictPolicy()
    if rendered is None:
        return default
    return VerdictPolicy(
        repeat=rendered["repeat"],
        min_pass_rate=rendered["minPassRate"],
        holds_at=rendered.get("holdsAt", default.holds_at),
        drifted_at=rendered.get("driftedAt", default.drifted_at),
        max_repeat=None if rendered.get("capDerived") else rendered.get("maxRepeat"),
        alpha=rendered.get("alpha", default.alpha),
        beta=rendered.get("beta", default.beta),
        inconclusive_passes=rendered["inconclusive"] == "pass",
        probes=rendered.get("probes"),
    )


def _shard(rendered: dict[str, Any] | None) -> ShardInfo | None:
    if rendered is None:
        return None
    return ShardInfo(
        rendered["index"],
        rendered["total"],
        tuple(rendered["scenarios"]),
        tuple(rendered["rules"]),
    )
