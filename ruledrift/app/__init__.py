"""The application layer: typed requests in, typed outcomes out. The CLI (cli.py) and the GitHub
Action (action/) are two front-ends of these functions; so is any Python program (see
docs/python-api.md).

    outcome = run(RunRequest(config=Path("suite.json"), json=Path("report.json")))
    outcome.result.status, outcome.exit_code, outcome.reports_written

Nothing here prints: what a front-end shows while a run goes on reaches it through a
`RunObserver` (progress, pull progress, warnings). Errors rise as RuleDriftError subclasses, each
carrying its exit code; `exit_code` is the one function that maps a finished run to one.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ruledrift.adapters.base import Adapter
from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.adapters.registry import adapter_type, create_adapter
from ruledrift.boundary.files import report_path_problem, report_target, shown, write_atomic
from ruledrift.boundary.http import url_problem
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import (
    AdapterConfig,
    Balance,
    LanguageAssertion,
    MatchesAssertion,
    RunResult,
    Scenario,
    ScenarioResult,
    ShardInfo,
    Suite,
    TargetInfo,
    VerdictPolicy,
)
from ruledrift.errors import AdapterError, ExitCode, ReportError, UsageError
from ruledrift.ollama.api import PullProgress, ensure_model
from ruledrift.ollama.server import ManagedOllama, ServerSettings, default_models_dir
from ruledrift.reports.codequality import render_codequality
from ruledrift.reports.html import render_html
from ruledrift.reports.junit import render_junit
from ruledrift.results.findings import gate_words
from ruledrift.results.json_load import read_report
from ruledrift.results.json_report import render_json
from ruledrift.results.shards import SOURCE_VARIABLES, Shard, expected_times, shard_of
from ruledrift.run.runner import SEED_RANGE, Events, configured_seed, not_run, run_suite
from ruledrift.run.verdicts import gate_odds, sequential_design
from ruledrift.suite.load import load_suite, schema_text

__all__ = [
    "REPORTERS",
    "PullOutcome",
    "PullRequest",
    "RunObserver",
    "RunOutcome",
    "RunPlan",
    "RunRequest",
    "SilentObserver",
    "TargetOverrides",
    "exit_code",
    "pull",
    "run",
    "run_against",
    "schema_text",
    "validate",
    "with_drawn_seed",
]

Renderer = Callable[..., bytes]


def given_reports(**paths: Path | None) -> dict[str, Path]:
    """The report paths given (by REPORTERS name), leaving out the ones that are None."""
    return {name: path for name, path in paths.items() if path is not None}


def _codequality(result: RunResult, *, include_responses: bool) -> bytes:
    """The Code Quality report, paths relative to GitLab's project (else the working folder);
    it never holds answers, so `include_responses` does not apply."""
    return render_codequality(result, project_dir=Path(os.environ.get("CI_PROJECT_DIR") or "."))


REPORTERS: dict[str, Renderer] = {
    "json": render_json,
    "junit": render_junit,
    "codequality": _codequality,
    "html": render_html,
}


# --- requests and outcomes -----------------------------------------------------------------------


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
    json: Path | None = None
    junit: Path | None = None
    codequality: Path | None = None  # GitLab's Code Quality report
    html: Path | None = None  # one self-contained page with the drift curve
    include_responses: bool = False  # answer text in the reports (trusted destinations only)
    concurrency: int = 1  # scenarios run at once
    scenarios: tuple[str, ...] = ()  # only these scenario ids (empty: all)
    target: TargetOverrides = field(default_factory=TargetOverrides)
    policy: VerdictPolicy = field(default_factory=VerdictPolicy)  # --repeat and its verdicts
    shard: Shard | None = None  # --shard K/N: only this shard's scenarios
    shard_balance: Path | None = None  # --shard-balance: cut shards by this report's times
    max_calls: int | None = None  # --max-calls: no call is started once this many were made
    seed: int | None = None  # --seed: the run's seed (default: the suite's, else drawn)

    def reports(self) -> dict[str, Path]:
        """The reports asked for, by REPORTERS name."""
        return given_reports(
            json=self.json, junit=self.junit, codequality=self.codequality, html=self.html
        )

    def argv(self) -> list[str]:
        """This request as a `ruledrift run` command line (without the program name)."""
        argv = ["run", path_argument(self.config)]
        for name, path in self.reports().items():
            argv += [f"--{name}", path_argument(path)]
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
class RunPlan:
    """What a run is about to do, told to the observer before the first call."""

    suite: Suite
    scenarios: tuple[Scenario, ...]
    probes: int
    model_calls: int


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


# --- the exit code ---------------------------------------------------------------------------


def exit_code(result: RunResult, *, reports_failed: bool = False) -> ExitCode:
    """The one map from a finished run to an exit code: interrupted 130, then error 3 (the
    verdict is incomplete), failed 1 (also inconclusive, unless the policy lets inconclusive
    probes pass), then 5 when every probe passed but a report could not be written (a CI step
    must not pass without the report it asked for), passed 0."""
    if result.interrupted:
        return ExitCode.INTERRUPTED
    status = result.status
    if status == "inconclusive" and result.policy.inconclusive_passes:
        status = "passed"
    if status == "passed":
        return ExitCode.REPORT_ERROR if reports_failed else ExitCode.PASSED
    return {"failed": ExitCode.FAILED, "inconclusive": ExitCode.FAILED}.get(
        status, ExitCode.RUN_ERROR
    )


# --- repeats ---------------------------------------------------------------------------------

MAX_REPEAT = 1000  # runs of one scenario, fixed or under "auto"


def check_policy(policy: VerdictPolicy) -> None:
    """The repeat options make sense together; raises UsageError (exit 2) naming the option."""
    auto = policy.repeat == "auto"
    if not auto and not 1 <= int(policy.repeat) <= MAX_REPEAT:
        raise UsageError(f"--repeat: expected auto or a whole number from 1 to {MAX_REPEAT}")
    if policy.min_pass_rate is not None:
        if auto:
            raise UsageError("--min-pass-rate goes with --repeat N (auto decides by itself)")
        if not 0 < policy.min_pass_rate <= 1:
            raise UsageError("--min-pass-rate: expected a number above 0 and at most 1")
    if policy.max_repeat is not None and not auto:
        raise UsageError("--max-repeat goes with --repeat auto")
    if not 0 < policy.drifted_at < policy.holds_at < 1:
        raise UsageError("expected 0 < --drifted-at < --holds-at < 1")
    if policy.max_repeat is not None and not 2 <= policy.max_repeat <= MAX_REPEAT:
        raise UsageError(f"--max-repeat: expected a whole number from 2 to {MAX_REPEAT}")


def policy_argv(policy: VerdictPolicy) -> list[str]:
    """The policy as `ruledrift run` options (none for the default: one run)."""
    defaults = VerdictPolicy()
    argv = [] if policy.repeat == 1 else ["--repeat", str(policy.repeat)]
    if policy.min_pass_rate is not None:
        argv += ["--min-pass-rate", f"{policy.min_pass_rate:g}"]
    for option, value, default in (
        ("--holds-at", policy.holds_at, defaults.holds_at),
        ("--drifted-at", policy.drifted_at, defaults.drifted_at),
        ("--max-repeat", policy.max_repeat, defaults.max_repeat),
    ):
        if value != default:
            argv += [option, f"{value:g}"]
    if policy.inconclusive_passes:
        argv += ["--inconclusive", "pass"]
    return argv


def most_runs(policy: VerdictPolicy, probes: int) -> int:
    """The most runs a scenario takes under `policy` for a selection of `probes` probes."""
    if policy.repeat == "auto":
        return sequential_design(policy, probes).cap
    return int(policy.repeat)


def short_cap_warning(policy: VerdictPolicy, probes: int) -> str | None:
    """What a `--max-repeat` below the cap that decides every probe costs, or None."""
    if policy.repeat != "auto" or policy.max_repeat is None:
        return None
    odds = gate_odds(policy, probes)
    if odds.decides_at_cap:
        return None
    effect = "passes" if policy.inconclusive_passes else "fails"
    return (
        f"--max-repeat {policy.max_repeat} is below the {odds.needed_cap} runs that decide every "
        f"one of {probes} probe(s): a probe still undecided after {odds.cap} runs is "
        f"inconclusive, which {effect} the run. {gate_words(odds, policy)}"
    )


# --- validate, run, pull ---------------------------------------------------------------------


def with_drawn_seed(request: RunRequest, suite: Suite) -> RunRequest:
    """`request` with a seed drawn now when neither it nor the suite sets one, so that the
    command line it logs (`request.argv()`) reproduces the run."""
    if request.seed is not None or configured_seed(suite.adapter) is not None:
        return request
    return dataclasses.replace(request, seed=secrets.randbelow(SEED_RANGE))


def validate(config: Path) -> Suite:
    """The loaded suite; raises ConfigError listing every problem."""
    return load_suite(config)


def run(request: RunRequest, observer: RunObserver | None = None) -> RunOutcome:
    """Load the suite, run it against its target, write the reports. Raises ConfigError or
    UsageError (exit 2) before any call, AdapterError (exit 3) when the target cannot start."""
    observer = observer or SilentObserver()
    check_policy(request.policy)
    suite = load_suite(request.config)
    scenarios = select_scenarios(suite, request.scenarios)
    policy = request.policy
    selected_scenarios = scenarios
    balance = None
    if request.shard is not None:
        scenarios, balance = _cut_shard(request, request.shard, scenarios, observer)
    elif request.shard_balance is not None:
        raise UsageError("--shard-balance goes with --shard K/N or --shard auto")
    config = target_config(suite.adapter, request.target)
    reports = request.reports()
    check_reports(reports, suite.path)
    selection = sum(len(s.probes) for s in selected_scenarios)
    runs = most_runs(policy, selection)
    observer.run_starting(
        RunPlan(
            suite,
            scenarios,
            probes=sum(len(s.probes) for s in scenarios),
            model_calls=runs * sum(s.model_calls for s in scenarios),  # auto: at most
        )
    )
    warning = short_cap_warning(policy, selection)
    if warning:
        observer.warning(warning)
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        result = asyncio.run(_execute(suite, config, request, scenarios, observer, selection))
    finally:
        observer.run_stopped()
        _restore_sigterm(sigterm)
    if request.shard is not None:
        shard = ShardInfo(
            request.shard.index,
            request.shard.total,
            scenarios=tuple(s.id for s in selected_scenarios),
            rules=tuple(r.id for r in suite.rules),
            assigned=tuple(s.id for s in scenarios),
            source=request.shard.source,
        )
        result = dataclasses.replace(result, shard=shard, balanced_by=balance)
    written, failed = write_reports(result, reports, request.include_responses)
    code = exit_code(result, reports_failed=bool(failed))
    return RunOutcome(request, result, code, written, failed)


def _cut_shard(
    request: RunRequest, shard: Shard, selected: tuple[Scenario, ...], observer: RunObserver
) -> tuple[tuple[Scenario, ...], Balance | None]:
    """This shard's scenarios, cut by model calls or by the times in `request.shard_balance`
    (a saved report read as `ruledrift report` reads one), and the report that cut them."""
    policy = request.policy
    runs = policy.repeat if isinstance(policy.repeat, int) else None  # auto: as in the report
    weights, balance, how = None, None, "by model calls"
    if request.shard_balance is not None:
        source = shown(request.shard_balance)
        try:
            previous = read_report(request.shard_balance).result
        except UsageError as error:
            raise UsageError(f"--shard-balance: {error}") from None
        expected = expected_times(selected, previous, runs, source)
        weights = expected.times
        balance = Balance(str(request.shard_balance), previous.suite.sha256, previous.started_at)
        unknown = len(selected) - expected.known
        how = f"by the times in {source}" + (
            f" ({unknown} of the {len(selected)} scenario(s) not in it count the median of "
            f"the others, {expected.median / 1000:.2f} s)"
            if unknown
            else ""
        )
    scenarios = shard_of(selected, shard, runs or 1, weights)
    origin = "" if shard.source == "flag" else f"; K/N from {SOURCE_VARIABLES[shard.source]}"
    observer.warning(
        f"shard {shard}: {len(scenarios)} of the {len(selected)} selected scenario(s), "
        f"balanced {how}{origin}"
    )
    return scenarios, balance


def write_reports(
    result: RunResult, reports: dict[str, Path], include_responses: bool
) -> tuple[dict[str, Path], dict[str, str]]:
    """Write every report that can be written: the paths written, and for each report that
    could not be (disk full, a folder gone since the check), why. Never raises ReportError:
    the verdict is known and must reach the front-end."""
    written: dict[str, Path] = {}
    failed: dict[str, str] = {}
    for name, path in reports.items():
        try:
            write_atomic(path, REPORTERS[name](result, include_responses=include_responses))
        except ReportError as error:
            failed[name] = str(error)
        else:
            written[name] = path
    return written, failed


def _restore_sigterm(handler: object) -> None:
    """asyncio leaves SIGTERM at its default when the loop closes: put back the front-end's
    handler, so a SIGTERM while the reports are written is still an interruption."""
    if threading.current_thread() is threading.main_thread() and handler is not None:
        signal.signal(signal.SIGTERM, handler)  # type: ignore[arg-type]


def pull(request: PullRequest, observer: RunObserver | None = None) -> PullOutcome:
    """Pull the suite's Ollama model into its server (or a managed one) unless it is there."""
    observer = observer or SilentObserver()
    suite = load_suite(request.config)
    config = target_config(suite.adapter, request.target)
    if not isinstance(config, OllamaAdapterConfig):
        raise UsageError(f"ruledrift pull needs the ollama adapter (this suite uses {config.type})")
    return PullOutcome(config.model, asyncio.run(_pull(config, request.target, observer)))


def run_against(
    suite: Suite,
    adapter: Adapter,
    *,
    concurrency: int = 1,
    scenarios: Sequence[str] = (),
    observer: RunObserver | None = None,
    policy: VerdictPolicy | None = None,
    seed: int | None = None,
) -> RunResult:
    """Run a loaded suite against an adapter of your own (any object with the `Adapter`
    protocol's four methods, e.g. your agent called in-process). Opens and closes it. `seed`:
    the run's seed (`context.seed` of run r is seed + r; default: the suite's, else drawn)."""
    policy = policy or VerdictPolicy()
    check_policy(policy)
    return asyncio.run(
        _run_adapter(
            suite,
            adapter,
            concurrency,
            select_scenarios(suite, scenarios),
            observer or SilentObserver(),
            policy,
            seed=seed,
        )
    )


async def _run_adapter(
    suite: Suite,
    adapter: Adapter,
    concurrency: int,
    scenarios: Sequence[Scenario],
    observer: RunObserver,
    policy: VerdictPolicy,
    max_calls: int | None = None,
    suite_probes: int | None = None,
    seed: int | None = None,
) -> RunResult:
    regex = RegexEvaluator()
    kinds = {type(a) for s in scenarios for p in s.probes for a in p.assertions}
    if kinds & {MatchesAssertion, LanguageAssertion}:  # ready by the first probe: they start
        # while the preflight runs
        regex.start_workers(concurrency, languages=LanguageAssertion in kinds)
    try:
        try:
            await adapter.open()
        except AdapterError as cause:  # the preflight: no call was made
            observer.warning(f"the target could not start: {cause}")
            return not_run(suite, scenarios, adapter.target_info(), cause, policy=policy)
        return await run_suite(
            suite,
            adapter,
            regex,
            concurrency=concurrency,
            scenarios=scenarios,
            events=observer,
            policy=policy,
            max_calls=max_calls,
            suite_probes=suite_probes,
            seed=seed,
        )
    finally:
        try:
            await adapter.aclose()
        finally:
            await regex.aclose()


# --- the pieces ----------------------------------------------------------------------------


def select_scenarios(suite: Suite, wanted: Sequence[str]) -> tuple[Scenario, ...]:
    if not wanted:
        return suite.scenarios
    known = {s.id for s in suite.scenarios}
    unknown = [w for w in dict.fromkeys(wanted) if w not in known]
    if unknown:
        names = ", ".join(s.id for s in suite.scenarios)
        raise UsageError(f"--scenario {', '.join(unknown)}: no such scenario (scenarios: {names})")
    return tuple(s for s in suite.scenarios if s.id in set(wanted))


def target_config(config: AdapterConfig, overrides: TargetOverrides) -> AdapterConfig:
    """`--model` and `--base-url` applied to the suite's adapter, after checking that the
    overrides fit it."""
    retarget = adapter_type(config.type).retarget
    if retarget is None:
        for flag, value in (("--model", overrides.model), ("--base-url", overrides.base_url)):
            if value:
                raise UsageError(f"{flag} does not apply to the {config.type} adapter")
    if overrides.start_ollama and config.type != "ollama":
        raise UsageError(f"--start-ollama needs the ollama adapter (this suite uses {config.type})")
    if overrides.models_dir is not None and not overrides.start_ollama:
        raise UsageError("--models-dir goes with --start-ollama")
    if overrides.base_url and overrides.start_ollama:
        raise UsageError("--base-url and --start-ollama exclude each other")
    if retarget is None or not (overrides.model or overrides.base_url):
        return config
    problem = url_problem(overrides.base_url) if overrides.base_url else None
    if problem:
        raise UsageError(f"--base-url: {problem}")
    retargeted: AdapterConfig = retarget(config, overrides.model, overrides.base_url)
    return retargeted


def check_reports(reports: dict[str, Path], config: Path) -> None:
    """Before anything runs: every report path can be written (a regular file or none yet, in
    a folder that can be written), and none would overwrite the suite or another report."""
    seen: dict[Path, str] = {report_target(config): "the suite itself"}
    for option, path in reports.items():
        problem = report_path_problem(path)
        if problem:
            raise UsageError(f"--{option} {shown(path)}: {problem}")
        target = report_target(path)
        if target in seen:
            raise UsageError(f"--{option} {shown(path)}: would overwrite {seen[target]}")
        seen[target] = f"the --{option} report"


async def _execute(
    suite: Suite,
    config: AdapterConfig,
    request: RunRequest,
    scenarios: Sequence[Scenario],
    observer: RunObserver,
    suite_probes: int | None = None,
) -> RunResult:
    task = asyncio.current_task()
    if task is not None:  # SIGTERM (CI cancelling a job, docker stop) stops the run like Ctrl-C
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        managed = _managed_target(config, request.target, request.concurrency, observer)
        async with managed as target:
            adapter = create_adapter(target)
            return await _run_adapter(
                suite,
                adapter,
                request.concurrency,
                scenarios,
                observer,
                request.policy,
                request.max_calls,
                suite_probes,
                request.seed,
            )
    except AdapterError as cause:  # the managed server did not start or could not pull
        observer.warning(f"the target could not start: {cause}")
        info = TargetInfo(config.type, config.model)
        return not_run(suite, scenarios, info, cause, policy=request.policy)


def _server_settings(overrides: TargetOverrides, concurrency: int) -> ServerSettings:
    models_dir = overrides.models_dir or default_models_dir()
    return ServerSettings(models_dir=models_dir, num_parallel=concurrency)


@contextlib.asynccontextmanager
async def _managed_target(
    config: AdapterConfig, overrides: TargetOverrides, concurrency: int, observer: RunObserver
) -> AsyncIterator[AdapterConfig]:
    """Yields the config to run against: as it is, or pointed at a managed Ollama server whose
    model is present (pulled if missing). The server stops on exit."""
    if not overrides.start_ollama or not isinstance(config, OllamaAdapterConfig):
        yield config
        return
    async with ManagedOllama(_server_settings(overrides, concurrency)) as server:
        try:
            await server.ensure_model(config.model, observer.pull_progress)
        finally:
            observer.pull_stopped()
        yield dataclasses.replace(config, base_url=server.base_url)
        try:
            server.check_running()  # "the model failed" or "the server died"?
        except AdapterError as died:
            observer.warning(str(died))


async def _pull(
    config: OllamaAdapterConfig, overrides: TargetOverrides, observer: RunObserver
) -> bool:
    try:
        if overrides.start_ollama:
            async with ManagedOllama(_server_settings(overrides, 1)) as server:
                return await server.ensure_model(config.model, observer.pull_progress)
        return await ensure_model(config.base_url, config.model, observer.pull_progress)
    finally:
        observer.pull_stopped()


def path_argument(path: Path) -> str:
    """A path as a command-line argument that cannot be read as an option."""
    text = str(path)
    return f"./{text}" if text.startswith("-") else text
