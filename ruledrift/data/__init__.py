"""Frozen data: the validated suite that goes into a run and the results that come out of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

Severity = Literal["critical", "warning", "info"]
Status = Literal["passed", "failed", "error", "inconclusive"]
RunStatus = Literal["passed", "failed", "error"]  # one run of a probe is never inconclusive
TextAssertionType = Literal["contains", "notContains", "equals"]
RegexAssertionType = Literal["matches", "notMatches"]
# where a shard's K/N came from: the flag, or `--shard auto` and the variables of one system
ShardSource = Literal["flag", "ruledrift", "kubernetes", "slurm", "buildkite", "gitlab"]


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
    """`matches` (the pattern matches the answer) or `notMatches` (it does not), JavaScript
    semantics."""

    pattern: str
    flags: str = ""
    type: RegexAssertionType = "matches"


@dataclass(frozen=True)
class LanguageAssertion:
    """The answer is in the language `value` (an ISO 639-1 code), and only in it."""

    value: str
    min_confidence: float = 0.5
    type: Literal["language"] = "language"


Assertion = TextAssertion | MatchesAssertion | LanguageAssertion


@dataclass(frozen=True)
class Probe:
    """One probe at one boundary. A probe object with a list `afterTurn` is loaded as one
    `Probe` per boundary, named `<id>-after-<N>`, all with the object's `location`."""

    id: str
    rule: Rule
    after_turn: int
    prompt: str
    assertions: tuple[Assertion, ...]
    location: Location
    paraphrases: tuple[
        str, ...
    ] = ()  # every wording when `prompt` is a list (the first is `prompt`)

    def wording(self, index: int) -> str:
        """The paraphrase at `index` (`prompt` when there is one wording)."""
        return self.paraphrases[index] if self.paraphrases else self.prompt


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
class ProbeRun:
    """One run of a probe under `--repeat`: its own answer and status. `prompt` is the index
    of the paraphrase it asked, `seed` the seed its target was sent (None: the suite sets none)."""

    run: int
    status: RunStatus
    duration_ms: int
    assertions: tuple[AssertionResult, ...] = ()
    response: Response | None = None
    error: str | None = None
    prompt: int = 0
    seed: int | None = None

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)


@dataclass(frozen=True)
class ProbeResult:
    """A probe's verdict. With one run, its fields are that run's; with repeats (`runs`), the
    status follows the run's VerdictPolicy and `assertions`, `response` and `error` are those
    of the first run that did not pass (else of the last run), `decided_by` says why."""

    probe: Probe
    status: Status
    duration_ms: int
    assertions: tuple[AssertionResult, ...] = ()
    response: Response | None = None
    error: str | None = None
    runs: tuple[ProbeRun, ...] = ()
    decided_by: str | None = None

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)

    @property
    def all_runs(self) -> tuple[ProbeRun, ...]:
        """Every run; a result made without repeats is its own single run."""
        if self.runs:
            return self.runs
        single: RunStatus = "passed" if self.status == "inconclusive" else self.status
        return (ProbeRun(0, single, self.duration_ms, self.assertions, self.response, self.error),)

    @property
    def passes(self) -> int:
        return sum(1 for run in self.all_runs if run.status == "passed")


def combined_status(statuses: list[Status]) -> Status:
    """`error` if anything errored, else `failed` if anything failed, else `inconclusive` if
    anything was undecided, else `passed`."""
    for status in ("error", "failed", "inconclusive"):
        if status in statuses:
            return status
    return "passed"


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    probes: tuple[ProbeResult, ...]
    model_calls: int
    duration_ms: int
    transcript: tuple[Message, ...] = ()  # the first run's background conversation
    runs: int = 1  # times the scenario was played (`--repeat`)

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
class VerdictPolicy:
    """How repeated runs of a probe become its verdict (`--repeat`, `--min-pass-rate`, ...).

    - `repeat` N (default 1): N runs; a probe passes only if every run passed, or, with
      `min_pass_rate` R, if at least R of its runs passed. A run that could not be made makes
      the probe an error.
    - `repeat` "auto": runs until a sequential test decides between "holds" (pass rate at
      least `holds_at`) and "drifted" (at most `drifted_at`), with at most `alpha` chance of any
      false alarm in the suite and `beta` of missing a drifted probe. `max_repeat` None (the
      default) lets the test derive the cap that decides every probe from the number of probes;
      a given `max_repeat` is the most runs a probe takes, and a probe undecided at a cap below
      the derived one is `inconclusive`, which fails the run unless `inconclusive_passes`. A run
      that could not be made counts against the verdict it could change; the probe is an error
      only when such runs could change it.
    `holds_at` and `drifted_at` also state what fixed repeats promise. `probes` is the number of
    probes the suite-wide bounds are split over: the whole selection (also for one shard of
    it), set by the runner; None: the probes of the result.
    """

    repeat: int | Literal["auto"] = 1
    min_pass_rate: float | None = None
    holds_at: float = 0.95
    drifted_at: float = 0.80
    max_repeat: int | None = None
    alpha: float = 0.05
    beta: float = 0.20
    inconclusive_passes: bool = False
    probes: int | None = None

    @property
    def repeated(self) -> bool:
        return self.repeat != 1


@dataclass(frozen=True)
class ShardInfo:
    """Which shard a run was (`--shard K/N`), the scenarios it was assigned, and the order of the
    whole selection, so that `ruledrift merge` can check that the shards hold the selection
    exactly and put their scenarios and rules back in config order."""

    index: int
    total: int
    scenarios: tuple[str, ...]  # every selected scenario's id, in config order
    rules: tuple[str, ...]  # every rule's id, in config order
    assigned: tuple[str, ...] | None = None  # this shard's; None: an older report's
    source: ShardSource = "flag"  # `--shard K/N`, or the system `--shard auto` read


@dataclass(frozen=True)
class Balance:
    """The saved report whose scenario times cut the shards (`--shard-balance`): its path as
    given, and what identifies its run (every shard must be cut by the same one)."""

    report: str
    config_sha256: str  # the suite that report ran
    started_at: str  # when its run started


@dataclass(frozen=True)
class RunResult:
    suite: Suite
    target: TargetInfo
    started_at: str  # ISO 8601, UTC
    duration_ms: int
    scenarios: tuple[ScenarioResult, ...]
    interrupted: bool = False
    policy: VerdictPolicy = field(default_factory=VerdictPolicy)
    shard: ShardInfo | None = None  # `--shard K/N`: this run holds shard K of N
    balanced_by: Balance | None = None  # shards cut by times (a shard, or their merge)
    seed: int | None = None  # run r's context.seed is seed + r; the paraphrases are drawn from it
    temperature: float | None = None  # the temperature the suite sends (None: not set)

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
