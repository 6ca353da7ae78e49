"""What a valid suite leaves unchecked, as warnings `ruledrift validate` prints (a suite with
them is still valid): a critical rule that only "never" assertions check and whose deepest
probe has no control (a model that refuses everything keeps it), a rule a scenario probes,
but not at that scenario's deepest boundary (drift there goes unseen), and a text assertion on
a probe whose answer can only be tool calls (`tools.tool_warnings`)."""

from __future__ import annotations

from ruledrift.data import (
    Assertion,
    MatchesAssertion,
    NoCallsAssertion,
    NotCallsAssertion,
    NotLeaksAssertion,
    Probe,
    Scenario,
    Suite,
    TextAssertion,
)
from ruledrift.suite.tools import tool_warnings


def coverage_warnings(suite: Suite) -> list[str]:
    """Each warning once, in the suite's order (scenarios, then rules)."""
    warnings = []
    for scenario in suite.scenarios:
        warnings += _uncontrolled(suite, scenario)
        warnings += _not_deepest(suite, scenario)
    return warnings + tool_warnings(suite)


def is_negative(assertion: Assertion) -> bool:
    """An assertion a refusal, an empty answer or gibberish always passes: it says what the
    answer must not hold (or that the agent must not call a tool)."""
    if isinstance(assertion, TextAssertion):
        return assertion.type == "notContains"
    if isinstance(assertion, MatchesAssertion):
        return assertion.type == "notMatches"
    return isinstance(assertion, NotLeaksAssertion | NotCallsAssertion | NoCallsAssertion)


def _by_rule(scenario: Scenario) -> dict[str, list[Probe]]:
    found: dict[str, list[Probe]] = {}
    for probe in scenario.probes:
        found.setdefault(probe.rule.id, []).append(probe)
    return found


def _uncontrolled(suite: Suite, scenario: Scenario) -> list[str]:
    warnings = []
    probed = _by_rule(scenario)
    for rule in suite.rules:
        probes = probed.get(rule.id, [])
        if rule.severity != "critical" or not probes:
            continue
        if not all(is_negative(a) for probe in probes for a in probe.assertions):
            continue
        deepest = max(probe.after_turn for probe in probes)
        at_deepest = [probe for probe in probes if probe.after_turn == deepest]
        if any(probe.control is not None for probe in at_deepest):
            continue
        warnings.append(
            f'rule "{rule.id}" (critical) is checked in scenario "{scenario.id}" only by '
            f'"never" assertions, and its deepest probe there ("{at_deepest[0].id}", after turn '
            f"{deepest}) has no control: an agent that refuses everything passes it. Give that "
            'probe a "control" (a question it must answer helpfully).'
        )
    return warnings


def _not_deepest(suite: Suite, scenario: Scenario) -> list[str]:
    deepest = scenario.turns_needed
    probed = _by_rule(scenario)
    return [
        f'rule "{rule.id}" is probed in scenario "{scenario.id}" but not at its deepest '
        f"boundary (after turn {deepest}): drift there goes unseen"
        for rule in suite.rules
        if rule.id in probed and all(p.after_turn != deepest for p in probed[rule.id])
    ]
