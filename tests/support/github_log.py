"""For the GitHub output tests: reading workflow commands back as the runner does, and small
results with failing probes."""

from __future__ import annotations

from dataclasses import replace

from ruledrift.data import (
    AssertionResult,
    Location,
    ProbeResult,
    Rule,
    RunResult,
    ScenarioResult,
    Severity,
    TargetInfo,
)
from tests.support import results as factories
from tests.support.results import ANSWER_LEAK

CONFIG = "suites/secret.json"


def unescape_data(text: str) -> str:
    """As actions/runner's ActionCommand.UnescapeData: CR, LF, then `%`."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    """As actions/runner's ActionCommand.UnescapeProperty."""
    for escaped, plain in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, plain)
    return text


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as actions/runner's TryParseV2 reads it: name, properties, data."""
    assert line.startswith("::")
    assert "\n" not in line
    assert "\r" not in line
    end = line.index("::", 2)
    name, _, listed = line[2:end].partition(" ")
    properties = dict(pair.split("=", 1) for pair in listed.split(",") if pair)
    return (
        name,
        {k: unescape_property(v) for k, v in properties.items()},
        unescape_data(line[end + 2 :]),
    )


def rule(severity: Severity) -> Rule:
    return Rule(f"rule-{severity}", "Keep it.", severity, Location(3, 5))


def failing(
    probe_id: str, severity: Severity = "critical", line: int = 7, message: str = "nope"
) -> ProbeResult:
    base = factories.failed(probe_id, ANSWER_LEAK, after_turn=4)
    probe = replace(base.probe, rule=rule(severity), location=Location(line, 9))
    held = AssertionResult("contains", True, "held")
    return replace(base, probe=probe, assertions=(AssertionResult("equals", False, message), held))


def run_of(*scenarios: ScenarioResult, details: dict[str, object] | None = None) -> RunResult:
    base = factories.run_result()
    rules = tuple({p.probe.rule.id: p.probe.rule for s in scenarios for p in s.probes}.values())
    suite = replace(factories.suite(tuple(s.scenario for s in scenarios)), rules=rules)
    target = TargetInfo("ollama", "qwen3:1.7b", details if details is not None else {})
    return replace(base, suite=suite, target=target, scenarios=scenarios)


def many_failures(count: int, severity: Severity = "critical") -> ScenarioResult:
    probes = tuple(failing(f"p{i:02}", severity, line=10 + i) for i in range(count))
    return factories.scenario_result(f"many-{severity}", probes, count)
