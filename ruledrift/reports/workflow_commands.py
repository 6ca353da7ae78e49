"""GitHub workflow commands: escaping as actions/toolkit does, `stop-commands` blocks, and one
annotation per probe that did not pass (at its line, level by severity, within GitHub's limits).

Pure renderings of a finished run; annotations never contain answer text, even with
`--include-responses`. Conventions: docs/github-action.md (Annotations and job summary).
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Mapping

from ruledrift.data import ProbeResult, RunResult, Severity
from ruledrift.results.findings import failed_location
from ruledrift.text import cut_text, escape_data, escape_property, repair_surrogates

ANNOTATIONS_PER_LEVEL = 10  # GitHub keeps the first 10 errors, warnings and notices of a step
MESSAGE_MAX_CHARS = 4096  # GitHub cuts an annotation's message there

LEVELS: dict[Severity, str] = {"critical": "error", "warning": "warning", "info": "notice"}
_SEVERITY_ORDER: tuple[Severity, ...] = ("critical", "warning", "info")

Flagged = tuple[str, ProbeResult]  # a probe that did not pass, with its scenario's id


def enabled(environ: Mapping[str, str]) -> bool:
    """True on a GitHub Actions runner, whose log is read for workflow commands."""
    return environ.get("GITHUB_ACTIONS") == "true"


# --- workflow commands -----------------------------------------------------------------------


def workflow_command(
    name: str, message: str, properties: Mapping[str, str | int] | None = None
) -> str:
    """`::name key=value,…::message`, escaped as actions/toolkit's `issueCommand` does (and
    lone surrogates, which cannot be written as UTF-8, replaced)."""
    listed = ",".join(f"{k}={escape_property(str(v))}" for k, v in (properties or {}).items())
    line = f"::{name}{' ' + listed if listed else ''}::{escape_data(message)}"
    return repair_surrogates(line)


def stop_commands(text: str) -> tuple[str, str, str]:
    """`text` in a block GitHub reads no workflow commands from, closed by a fresh random token:
    the opening command, the body (ending with a line end), the closing command."""
    token = secrets.token_hex(16)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"::stop-commands::{token}", body, f"::{token}::"


# --- annotations -----------------------------------------------------------------------------


def plan_annotations(result: RunResult) -> tuple[list[Flagged], int]:
    """The probes to annotate (critical first, then config order; at most 10 per level) and how
    many are left out. When some are, the closing notice takes one of the 10 notice slots."""
    flagged = [
        (s.scenario.id, p) for s in result.scenarios for p in s.probes if p.status != "passed"
    ]
    flagged.sort(key=lambda item: _SEVERITY_ORDER.index(item[1].probe.rule.severity))
    shown: list[Flagged] = []
    used: Counter[str] = Counter()
    for item in flagged:
        level = LEVELS[item[1].probe.rule.severity]
        if used[level] < ANNOTATIONS_PER_LEVEL:
            shown.append(item)
            used[level] += 1
    if len(shown) < len(flagged) and used["notice"] == ANNOTATIONS_PER_LEVEL:
        last_notice = max(i for i, (_, p) in enumerate(shown) if p.probe.rule.severity == "info")
        del shown[last_notice]
    return shown, len(flagged) - len(shown)


def render_annotations(result: RunResult, file: str) -> list[str]:
    """One workflow command per annotated probe, and a closing notice if some were left out."""
    shown, omitted = plan_annotations(result)
    lines = [_annotation(scenario, probe, file) for scenario, probe in shown]
    if omitted:
        lines.append(
            workflow_command(
                "notice",
                f"{omitted} more failed or errored probe(s) are not annotated: GitHub shows at "
                f"most {ANNOTATIONS_PER_LEVEL} annotations of each level per step. The job "
                "summary and the log list every probe.",
                {"title": f"RuleDrift: {omitted} more probe(s) not annotated"},
            )
        )
    return lines


def _annotation(scenario: str, result: ProbeResult, file: str) -> str:
    probe = result.probe
    name, rule, turn = f"{scenario}/{probe.id}", probe.rule.id, probe.after_turn
    if result.status == "failed":
        title = f"RuleDrift: {name} broke rule {rule} (after turn {turn})"
        message = "\n".join(a.message for a in result.failed_assertions)
        if result.runs and result.decided_by:
            message = f"{result.decided_by}\n{message}"
    elif result.status == "inconclusive":
        title = f"RuleDrift: {name} is inconclusive (rule {rule}, after turn {turn})"
        message = result.decided_by or "not decided within the run cap"
    elif result.status == "vacuous":
        title = f"RuleDrift: {name} passed vacuously (rule {rule}, after turn {turn})"
        checks = result.control.failed_assertions if result.control else ()
        message = "\n".join(["its control failed:", *(a.message for a in checks)])
    else:
        title = f"RuleDrift: {name} could not be run (rule {rule}, after turn {turn})"
        message = result.error or ""
    properties: dict[str, str | int] = {"file": file, "line": probe.location.line}
    located = failed_location(result)
    if located is not None:
        properties |= {"line": located.line, "col": located.column}
    properties["title"] = title
    message = cut_text(message or result.status, MESSAGE_MAX_CHARS)
    return workflow_command(LEVELS[probe.rule.severity], message, properties)


# --- the job summary -------------------------------------------------------------------------
