"""The results that come out of a run: each run of a probe, each probe's verdict, each scenario,
the whole run, and what identifies its target and its shard."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ruledrift.data.conversation import Message
from ruledrift.data.location import Location
from ruledrift.data.policy import VerdictPolicy
from ruledrift.data.suite import Probe, Scenario, Suite, Variant
from ruledrift.data.tools import ToolUse

# `vacuous`: the probe passed but its control failed (the agent may have stopped working)
Status = Literal["passed", "failed", "error", "inconclusive", "vacuous"]
RunStatus = Literal["passed", "failed", "error", "vacuous"]  # a run is never inconclusive
ControlStatus = Literal["passed", "failed", "error"]
# where a shard's K/N came from: the flag, or `--shard auto` and the variables of one system
ShardSource = Literal["flag", "ruledrift", "kubernetes", "slurm", "buildkite", "gitlab"]


@dataclass(frozen=True)
class Response:
    """A probe's answer. `text` is kept in memory; reporters print it only when asked to."""

    text: str
    sha256: str
    length: int
    metadata: Mapping[str, object] = field(default_factory=dict)


def response_of(text: str, metadata: Mapping[str, object] | None = None) -> Response:
    """An answer with its SHA-256 (of its UTF-8, lone surrogates as they are) and length."""
    return Response(
        text=text,
        sha256=hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest(),
        length=len(text),
        metadata=dict(metadata or {}),
    )


@dataclass(frozen=True)
class JudgeRecord:
    """What a `judge` assertion asked of its model: which model, the sampling it was sent (None:
    not set), and its answer (hashed in every report, its text only with the answers)."""

    adapter: str
    model: str | None
    temperature: float | None
    seed: int | None
    response: Response


@dataclass(frozen=True)
class AssertionResult:
    type: str
    passed: bool
    message: str
    judge: JudgeRecord | None = None  # a `judge` assertion's call
    # Where the assertion stands in the suite, for the annotations of a failed one (tool
    # assertions set it; None: the annotation points at the probe).
    location: Location | None = None


@dataclass(frozen=True)
class ControlRun:
    """What a probe's control got in one run: its status, checks, answer or error."""

    status: ControlStatus
    duration_ms: int
    assertions: tuple[AssertionResult, ...] = ()
    response: Response | None = None
    error: str | None = None
    tools: ToolUse | None = None  # its turn's tool calls (None: the suite offers no tools)

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)


def paired_status(probe: RunStatus, control: ControlRun | None) -> RunStatus:
    """A run's status with its control's: a pass whose control failed is vacuous, and a pass
    whose control could not be made is an error (vacuous or not, nobody can tell)."""
    if probe != "passed" or control is None or control.status == "passed":
        return probe
    return "vacuous" if control.status == "failed" else "error"


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
    control: ControlRun | None = None  # the control's, when the probe has one and passed
    tools: ToolUse | None = None  # its turn's tool calls (None: the suite offers no tools)

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)


@dataclass(frozen=True)
class ProbeResult:
    """A probe's verdict. With one run, its fields are that run's; with repeats (`runs`), the
    status follows the run's VerdictPolicy and `assertions`, `response` and `error` are those
    of the first run that did not pass (else of the last run), `decided_by` says why.
    `identical_runs`: with repeats, every run (at least two) was answered and every answer was
    byte-identical (one SHA-256 and length), so the repeats add no information and no error
    bound holds for the probe (`run.verdicts.runs_identical`)."""

    probe: Probe
    status: Status
    duration_ms: int
    assertions: tuple[AssertionResult, ...] = ()
    response: Response | None = None
    error: str | None = None
    runs: tuple[ProbeRun, ...] = ()
    decided_by: str | None = None
    identical_runs: bool = False
    control: ControlRun | None = None  # the evidence run's control (see ProbeRun.control)
    # The suspicious-pass flags read off the answer's text (`refusal`, `not-fluent`) as a loaded
    # report recorded them; None: read them off `response` and the scenario's transcript.
    text_flags: tuple[str, ...] | None = None
    tools: ToolUse | None = None  # the evidence run's tool calls (see ProbeRun.tools)

    @property
    def failed_assertions(self) -> tuple[AssertionResult, ...]:
        return tuple(a for a in self.assertions if not a.passed)

    @property
    def all_runs(self) -> tuple[ProbeRun, ...]:
        """Every run; a result made without repeats is its own single run."""
        if self.runs:
            return self.runs
        single: RunStatus = "passed" if self.status == "inconclusive" else self.status
        return (
            ProbeRun(
                0,
                single,
                self.duration_ms,
                self.assertions,
                self.response,
                self.error,
                control=self.control,
                tools=self.tools,
            ),
        )

    @property
    def passes(self) -> int:
        return sum(1 for run in self.all_runs if run.status == "passed")


def combined_status(statuses: list[Status]) -> Status:
    """`error` if anything errored, else `failed` if anything failed, else `vacuous` if a pass's
    control failed, else `inconclusive` if anything was undecided, else `passed`."""
    for status in ("error", "failed", "vacuous", "inconclusive"):
        if status in statuses:
            return status
    return "passed"


SearchOutcome = Literal[
    "found",  # held at one depth, drifted at the next: the breaking depth
    "held",  # held at both ends: no break within the bounds
    "broken-at-low",  # drifted at the lower bound already
    "not-monotonic",  # drifted at the lower bound, held at the upper one
    "inconclusive",  # a point was left inconclusive: the search stopped there
    "incomplete",  # a point could not be decided (errors, --max-calls): stopped there
    "unfinished",  # the run was interrupted before the search ended
]


@dataclass(frozen=True)
class SearchResult:
    """Where a search of a probe's breaking depth (`afterTurn: {"search": [low, high]}`)
    ended, as `run.search.search_result` read it from its decided points. `held_through`: the
    deepest depth decided "holds" on its path (None: none); `drifted_from`: the shallowest
    decided "drifted" (None: none); `stopped_at`: the point it stopped at, undecided
    (inconclusive, incomplete, unfinished); `points`: every depth it asked, shallowest first;
    `tokens_held` and `tokens_drifted`: the fewest prompt tokens the server reported for an
    answer at `held_through` and `drifted_from` (None: not reported)."""

    id: str
    rule: str
    low: int
    high: int
    outcome: SearchOutcome
    held_through: int | None
    drifted_from: int | None
    stopped_at: int | None
    points: tuple[int, ...]
    tokens_held: int | None = None
    tokens_drifted: int | None = None


@dataclass(frozen=True)
class VariantResult:
    """A scenario's probes under one variant (`--variants`), run for run beside base's: run r
    of a probe here and run r under base are one pair (the same run index and seed). A probe
    shallower than `variant.diverges_at` was asked once, on the conversation both share, and
    its result is base's."""

    variant: Variant
    probes: tuple[ProbeResult, ...]
    model_calls: int = 0  # the calls this variant made apart from base's


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    probes: tuple[ProbeResult, ...]
    model_calls: int
    duration_ms: int
    transcript: tuple[Message, ...] = ()  # the first run's background conversation
    runs: int = 1  # times the scenario was played (`--repeat`)
    judge_calls: int = 0  # calls of `judge` assertions' models, apart from `model_calls`
    searches: tuple[SearchResult, ...] = ()  # its searched probes; their points are in probes
    variants: tuple[VariantResult, ...] = ()  # `--variants`: the probes under each, not base

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

    @property
    def judge_calls(self) -> int:
        return sum(s.judge_calls for s in self.scenarios)

    def count(self, status: Status) -> int:
        return sum(1 for p in self.probes if p.status == status)
