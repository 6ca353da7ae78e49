"""The application's requests and outcomes, and the observer a front-end gives a run: typed
values in, typed values out. Each request can say itself as the command line that does the same
(`argv()`), for logs and reproduction."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ruledrift.app.options import REPORT_FORMATS
from ruledrift.data import RunResult, Scenario, ScenarioResult, Suite, VerdictPolicy, policy_argv
from ruledrift.errors import ExitCode
from ruledrift.ollama.api import PullProgress
from ruledrift.results.shards import Shard
from ruledrift.run.runner import Events


@dataclass(frozen=True)
class TargetOverrides:
    """What a front-end changes about the suite's target (for CI matrices and services)."""

    model: str | None = None  # instead of the suite's model
    base_url: str | None = None  # instead of the suite's baseUrl
    start_ollama: bool = False  # run a managed `ollama serve` for the run (ollama adapter)
    models_dir: Path | None = None  # its OLLAMA_MODELS (default: Ollama's own)

    def argv(self) -> list[str]:
        """These overrides as `ruledrift run` options."""
        argv = ["--model", self.model] if self.model else []
        if self.base_url:
            argv += ["--base-url", self.base_url]
        if self.start_ollama:
            argv.append("--start-ollama")
        if self.models_dir is not None:
            argv += ["--models-dir", path_argument(self.models_dir)]
        return argv

    def reproduce_argv(self) -> list[str]:
        """The options a reproduction command must repeat (the target, not the server)."""
        given = [("--model", self.model), ("--base-url", self.base_url)]
        return [part for option, value in given if value for part in (option, value)]


@dataclass(frozen=True)
class RunRequest:
    """One run of a suite. Report paths are written after the run (checked before it)."""

    config: Path
    # the reports to write, by format (keys of REPORTERS: "json", "junit", "html", "codequality")
    reports: Mapping[str, Path] = field(default_factory=dict)
    include_responses: bool = False  # answer text in the reports (trusted destinations only)
    concurrency: int = 1  # scenarios run at once
    scenarios: tuple[str, ...] = ()  # only these scenario ids (empty: all)
    target: TargetOverrides = field(default_factory=TargetOverrides)
    policy: VerdictPolicy = field(default_factory=VerdictPolicy)  # --repeat and its verdicts
    shard: Shard | None = None  # --shard K/N: only this shard's scenarios
    shard_balance: Path | None = None  # --shard-balance: cut shards by this report's times
    max_calls: int | None = None  # --max-calls: no call is started once this many were made
    seed: int | None = None  # --seed: the run's seed (default: the suite's, else drawn)
    variants: tuple[str, ...] = ()  # --variants: "base" and the suite's variants to compare

    def argv(self) -> list[str]:
        """This request as a `ruledrift run` command line (without the program name)."""
        argv = ["run", path_argument(self.config)]
        argv += reports_argv(self.reports)
        if self.include_responses:
            argv.append("--include-responses")
        argv += ["--concurrency", str(self.concurrency)]
        for scenario in self.scenarios:
            argv += ["--scenario", scenario]
        if self.shard is not None:
            argv += ["--shard", str(self.shard)]
        if self.shard_balance is not None:
            argv += ["--shard-balance", path_argument(self.shard_balance)]
        if self.max_calls is not None:
            argv += ["--max-calls", str(self.max_calls)]
        if self.seed is not None:
            argv += ["--seed", str(self.seed)]
        if self.variants:
            argv += ["--variants", ",".join(self.variants)]
        return argv + self.target.argv() + policy_argv(self.policy)


@dataclass(frozen=True)
class PullRequest:
    config: Path
    target: TargetOverrides = field(default_factory=TargetOverrides)

    def argv(self) -> list[str]:
        """This request as a `ruledrift pull` command line (without the program name)."""
        return ["pull", path_argument(self.config), *self.target.argv()]


@dataclass(frozen=True)
class PullOutcome:
    model: str
    pulled: bool  # False: the server had it already


@dataclass(frozen=True)
class ExpectedCalls:
    """The model calls a `--repeat auto` run is expected to make (`stats.expected_calls`): when
    every probe passes each run with the chance `pass_rate` (`--holds-at`), independently, and
    when no answer ever fails (every probe stops at its first "holds")."""

    pass_rate: float
    calls: int
    never_failing: int


@dataclass(frozen=True)
class RunPlan:
    """What a run is about to do, told to the observer before the first call."""

    suite: Suite
    scenarios: tuple[Scenario, ...]
    probes: int
    model_calls: int  # under --repeat auto the most (every probe running to the cap)
    runs: int = 1  # runs of each scenario: --repeat N, or under --repeat auto the cap
    expected: ExpectedCalls | None = None  # --repeat auto; None: the calls are known in advance


@dataclass(frozen=True)
class RunOutcome:
    request: RunRequest
    result: RunResult
    exit_code: ExitCode
    reports_written: dict[str, Path]
    reports_failed: dict[str, str] = field(default_factory=dict)  # name → why it was not written


class RunObserver(Events, Protocol):
    """What a front-end hears while a run goes on. Called from the event loop; must not block."""

    def run_starting(self, plan: RunPlan) -> None: ...

    def run_stopped(self) -> None:
        """The run ended (finished, failed or interrupted): clear any progress display."""

    def pull_progress(self, event: PullProgress) -> None: ...

    def pull_stopped(self) -> None:
        """A pull ended (also when it failed)."""

    def warning(self, message: str) -> None: ...


class SilentObserver:
    """An observer that shows nothing (the default for programs)."""

    def run_starting(self, plan: RunPlan) -> None:
        pass

    def run_stopped(self) -> None:
        pass

    def call_finished(self, scenario: Scenario) -> None:
        pass

    def probe_finished(self, scenario: Scenario, result: object) -> None:
        pass

    def scenario_finished(self, result: ScenarioResult) -> None:
        pass

    def pull_progress(self, event: PullProgress) -> None:
        pass

    def pull_stopped(self) -> None:
        pass

    def warning(self, message: str) -> None:
        pass


def path_argument(path: Path) -> str:
    """A path as a command-line argument that cannot be read as an option."""
    text = str(path)
    return f"./{text}" if text.startswith("-") else text


def reports_argv(reports: Mapping[str, Path]) -> list[str]:
    """Report paths as command-line options, in the table's order."""
    argv = []
    for option in REPORT_FORMATS:
        if option.name in reports:
            argv += [option.flag, path_argument(reports[option.name])]
    return argv
