"""Frozen data: the validated suite that goes into a run and the results that come out of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

Severity = Literal["critical", "warning", "info"]
Status = Literal["passed", "failed", "error"]
TextAssertionType = Literal["contains", "notContains", "equals"]


# --- the suite -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """Where something stands in the configuration file (1-based line and column)."""

    line: int
    column: int


@dataclass(frozen=True)
class Rule:
    id: str
    instruction: str
    severity: Severity
    location: Location


@dataclass(frozen=True)
class TextAssertion:
    type: TextAssertionType
    value: str
    case_sensitive: bool = False


@dataclass(frozen=True)
class MatchesAssertion:
    pattern: str
    flags: str = ""
    type: Literal["matches"] = "matches"


Assertion = TextAssertion | MatchesAssertion


@dataclass(frozen=True)
class Probe:
    id: str
    rule: Rule
    after_turn: int
    prompt: str
    assertions: tuple[Assertion, ...]
    location: Location


@dataclass(frozen=True)
class Scenario:
    id: str
    description: str | None
    turns: tuple[str, ...]
    probes: tuple[Probe, ...]
    location: Location

    @property
    def turns_needed(self) -> int:
        """Background turns a run plays: none after the last probe boundary."""
        return max((probe.after_turn for probe in self.probes), default=0)

    @property
    def model_calls(self) -> int:
        return self.turns_needed + len(self.probes)


class AdapterConfig(Protocol):
    """An adapter type's validated settings: a frozen dataclass that lives beside its adapter
    in ruledrift/adapters/ (`CommandAdapterConfig`, `OllamaAdapterConfig`, ...)."""

    @property
    def type(self) -> str: ...

    @property
    def model(self) -> str | None: ...


@dataclass(frozen=True)
class Suite:
    version: int
    name: str
    system_prompt: str | None
    adapter: AdapterConfig
    rules: tuple[Rule, ...]
    scenarios: tuple[Scenario, ...]
    path: Path
    sha256: str

    @property
    def probe_count(self) -> int:
        return sum(len(scenario.probes) for scenario in self.scenarios)

    @property
    def model_calls(self) -> int:
        return sum(scenario.model_calls for scenario in self.scenarios)


# --- the conversation ------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


# --- results ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class AssertionResult:
    type: str
    passed: bool
    message: str


@dataclass(frozen=True)
class Response:
    """A probe's answer. `text` is kept in memory; reporters print it only when asked to."""

    text: str
    sha256: str
    length: int
    metadata: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeResult:
    probe: Probe
    status: Status
    duration_ms: int
    assertions: tuple[AssertionResult, ...] = ()
    response: Response | None = None
    error: str | None = None

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)


def combined_status(statuses: list[Status]) -> Status:
    """`error` if anything errored, else `failed` if anything failed, else `passed`."""
    if "error" in statuses:
        return "error"
    if "failed" in statuses:
        return "failed"
    return "passed"


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    probes: tuple[ProbeResult, ...]
    model_calls: int
    duration_ms: int
    transcript: tuple[Message, ...] = ()

    @property
    def status(self) -> Status:
        return combined_status([p.status for p in self.probes])

    def count(self, status: Status) -> int:
        return sum(1 for p in self.probes if p.status == status)


@dataclass(frozen=True)
class TargetInfo:
    """What was tested, for the reports: adapter type, model and anything that identifies it."""

    adapter: str
    model: str | None
    details: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class RunResult:
    suite: Suite
    target: TargetInfo
    started_at: str  # ISO 8601, UTC
    duration_ms: int
    scenarios: tuple[ScenarioResult, ...]
    interrupted: bool = False

    @property
    def probes(self) -> list[ProbeResult]:
        return [p for s in self.scenarios for p in s.probes]

    @property
    def status(self) -> Status:
        return combined_status([p.status for p in self.probes])

    @property
    def model_calls(self) -> int:
        return sum(s.model_calls for s in self.scenarios)

    def count(self, status: Status) -> int:
        return sum(1 for p in self.probes if p.status == status)
