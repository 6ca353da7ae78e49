"""Running: a suite against its target (`run`, or `run_against` an adapter of your own),
pulling its model (`pull`), and the pieces in between (scenario selection, target overrides,
shards, a managed Ollama server). Nothing here prints; an observer hears what happens."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import secrets
import signal
import threading
from collections.abc import AsyncIterator, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ruledrift.adapters.base import Adapter
from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.adapters.registry import adapter_type, create_adapter
from ruledrift.app.options import OptionError
from ruledrift.app.policy import (
    check_design,
    check_policy,
    exit_code,
    few_pairs_warning,
    most_runs,
    short_cap_warning,
)
from ruledrift.app.reports import check_reports, write_reports
from ruledrift.app.requests import (
    ExpectedCalls,
    PullOutcome,
    PullRequest,
    RunObserver,
    RunOutcome,
    RunPlan,
    RunRequest,
    SilentObserver,
    TargetOverrides,
)
from ruledrift.boundary.files import report_target, shown
from ruledrift.boundary.http import url_problem
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import (
    BASE,
    AdapterConfig,
    Balance,
    FluentAssertion,
    LanguageAssertion,
    MatchesAssertion,
    NotLeaksAssertion,
    Probe,
    RunResult,
    Scenario,
    ShardInfo,
    Suite,
    TargetInfo,
    Variant,
    VerdictPolicy,
)
from ruledrift.errors import AdapterError, TargetConfigError, UsageError
from ruledrift.ollama.api import ensure_model
from ruledrift.ollama.server import ManagedOllama, ServerSettings, default_models_dir
from ruledrift.results.json_load import read_report
from ruledrift.results.shards import SOURCE_VARIABLES, Shard, expected_times, shard_of
from ruledrift.run.runner import SEED_RANGE, not_run, run_suite
from ruledrift.run.sampling import configured_seed
from ruledrift.run.verdicts import sequential_design
from ruledrift.stats import expected_calls
from ruledrift.suite.load import load_suite


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
    variants = select_variants(suite, request.variants, policy, sharded=request.shard is not None)
    selected_scenarios = scenarios
    balance = None
    if request.shard is not None:
        scenarios, balance = _cut_shard(request, request.shard, scenarios, observer)
    elif request.shard_balance is not None:
        raise OptionError("{shard_balance} goes with {shard} K/N or {shard} auto")
    config = target_config(suite.adapter, request.target)
    reports = request.reports
    check_reports(reports, {report_target(suite.path): "the suite itself"})
    selection = sum(s.decisions for s in selected_scenarios)
    observer.run_starting(run_plan(suite, scenarios, policy, selection, variants))
    for warning in (short_cap_warning(policy, selection), few_pairs_warning(policy, len(variants))):
        if warning:
            observer.warning(warning)
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        result = run_loop(
            _execute(suite, config, request, scenarios, observer, selection, variants)
        )
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


def run_plan(
    suite: Suite,
    scenarios: tuple[Scenario, ...],
    policy: VerdictPolicy,
    selection: int,
    variants: Sequence[Variant] = (),
) -> RunPlan:
    """What running `scenarios` (of a selection of `selection` probes) under `policy` takes:
    exact calls for N runs (with `variants`, their calls too); for --repeat auto the most, and
    the numbers expected if every probe passes each run with the chance `--holds-at` names and
    if none ever fails."""
    runs = most_runs(policy, selection)
    expected = None
    if policy.repeat == "auto":
        design = sequential_design(policy, selection)
        depths = [_first_round(s) for s in scenarios]
        replayed = [s.replayed for s in scenarios]
        expected = ExpectedCalls(
            policy.holds_at,
            calls=round(expected_calls(design, policy.holds_at, depths, replayed)),
            never_failing=round(expected_calls(design, 1.0, depths, replayed)),
        )
    return RunPlan(
        suite,
        scenarios,
        probes=sum(s.decisions for s in scenarios),
        model_calls=runs
        * suite.rounds_per_turn
        * sum(s.model_calls + sum(s.variant_calls(v) for v in variants) for s in scenarios),
        runs=runs,
        expected=expected,
    )


def _first_round(scenario: Scenario) -> list[int]:
    """The depths a scenario's first round asks: its probes', and each search's ends (the
    expected calls leave out a search's later rounds)."""
    ends = [depth for s in scenario.searches for depth in (s.low, s.high)]
    return [p.after_turn for p in scenario.probes] + ends


def _probe_objects(scenario: Scenario) -> tuple[Probe, ...]:
    """Its probes and its searches' (whose assertions every point checks)."""
    return (*scenario.probes, *(search.probe for search in scenario.searches))


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
            raise OptionError("{shard_balance}: {error}", error=str(error)) from None
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


def _restore_sigterm(handler: object) -> None:
    """asyncio leaves SIGTERM at its default when the loop closes: put back the front-end's
    handler, so a SIGTERM while the reports are written is still an interruption."""
    if threading.current_thread() is threading.main_thread() and handler is not None:
        signal.signal(signal.SIGTERM, handler)  # type: ignore[arg-type]


T = TypeVar("T")


def run_loop(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)`, without the repr of its result. On its way out `asyncio.run` puts
    back the SIGINT handler, and `signal.signal` words the old handler (a partial that holds the
    finished main task) into a ValueError it catches at once (CPython 3.11 to 3.13): that is the
    repr of the task, result included, which for a run's results cost 0.1 ms of CPU per model
    call. Here the task's result is None and the value travels beside it."""
    box: list[T] = []

    async def boxed() -> None:
        box.append(await main)

    asyncio.run(boxed())
    return box[0]


def pull(request: PullRequest, observer: RunObserver | None = None) -> PullOutcome:
    """Pull the suite's Ollama model into its server (or a managed one) unless it is there."""
    observer = observer or SilentObserver()
    suite = load_suite(request.config)
    config = target_config(suite.adapter, request.target)
    if not isinstance(config, OllamaAdapterConfig):
        raise UsageError(f"ruledrift pull needs the ollama adapter (this suite uses {config.type})")
    return PullOutcome(config.model, run_loop(_pull(config, request.target, observer)))


def run_against(
    suite: Suite,
    adapter: Adapter,
    *,
    concurrency: int = 1,
    scenarios: Sequence[str] = (),
    observer: RunObserver | None = None,
    policy: VerdictPolicy | None = None,
    seed: int | None = None,
    variants: Sequence[str] = (),
) -> RunResult:
    """Run a loaded suite against an adapter of your own (any object with the `Adapter`
    protocol's four methods, e.g. your agent called in-process). Opens and closes it. `seed`:
    the run's seed (`context.seed` of run r is seed + r; default: the suite's, else drawn).
    `variants`: as `--variants` ("base" and the suite's variants to compare with it)."""
    policy = policy or VerdictPolicy()
    check_policy(policy)
    selected = select_scenarios(suite, scenarios)
    played = select_variants(suite, variants, policy)
    check_design(policy, sum(s.decisions for s in selected))
    return run_loop(
        _run_adapter(
            suite,
            adapter,
            concurrency,
            selected,
            observer or SilentObserver(),
            policy,
            seed=seed,
            variants=played,
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
    variants: Sequence[Variant] = (),
) -> RunResult:
    regex = RegexEvaluator()
    kinds = {type(a) for s in scenarios for p in _probe_objects(s) for a in p.all_assertions}
    if kinds & {MatchesAssertion, LanguageAssertion, NotLeaksAssertion, FluentAssertion}:
        # ready by the first probe: they start while the preflight runs
        languages = bool(kinds & {LanguageAssertion, FluentAssertion})
        regex.start_workers(concurrency, languages=languages)
    try:
        try:
            await _open(adapter, suite)
        except TargetConfigError:
            raise  # the suite asks what the target cannot do: a configuration error (exit 2)
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
            variants=variants,
        )
    finally:
        try:
            await adapter.aclose()
        finally:
            await regex.aclose()


async def _open(adapter: Adapter, suite: Suite) -> None:
    """The adapter's preflight, told whether the suite offers tools. `tools` is passed only when
    it is true: an adapter of one's own written before tools existed takes no keyword."""
    if suite.tools:
        await adapter.open(tools=True)
    else:
        await adapter.open()


def select_variants(
    suite: Suite, wanted: Sequence[str], policy: VerdictPolicy, *, sharded: bool = False
) -> tuple[Variant, ...]:
    """The variants `--variants` names, base aside (every variant is compared with base):
    a usage error for a name the suite does not declare, a list without base, `--repeat auto`
    (pairs need the same runs under every variant) or a shard (merge does not combine them)."""
    if not wanted:
        return ()
    names = ", ".join([BASE, *(v.id for v in suite.variants)])
    unknown = [w for w in dict.fromkeys(wanted) if w != BASE and suite.variant(w) is None]
    if unknown:
        raise OptionError(
            "{variants} {unknown}: no such variant (variants: {names})",
            unknown=", ".join(unknown),
            names=names,
        )
    if BASE not in wanted or len(set(wanted)) < 2:
        raise OptionError(
            "{variants} lists base and at least one variant to compare with it (variants: {names})",
            names=names,
        )
    if policy.repeat == "auto":
        raise OptionError(
            "{variants} needs fixed repeats ({repeat} N): --repeat auto stops each probe at its "
            "own verdict, and a pair needs the same run under every variant"
        )
    if sharded:
        raise OptionError("{variants} and {shard} exclude each other: merge cannot pair shards")
    if any(scenario.searches for scenario in suite.scenarios):
        raise OptionError(
            "{variants} and a search of the breaking depth exclude each other: a search decides "
            "its depths from base's runs, so a variant's would not pair with them"
        )
    return tuple(v for v in suite.variants if v.id in set(wanted))


def select_scenarios(suite: Suite, wanted: Sequence[str]) -> tuple[Scenario, ...]:
    if not wanted:
        return suite.scenarios
    known = {s.id for s in suite.scenarios}
    unknown = [w for w in dict.fromkeys(wanted) if w not in known]
    if unknown:
        names = ", ".join(s.id for s in suite.scenarios)
        raise OptionError(
            "{scenarios} {unknown}: no such scenario (scenarios: {names})",
            unknown=", ".join(unknown),
            names=names,
        )
    return tuple(s for s in suite.scenarios if s.id in set(wanted))


def target_config(config: AdapterConfig, overrides: TargetOverrides) -> AdapterConfig:
    """`--model` and `--base-url` applied to the suite's adapter, after checking that the
    overrides fit it."""
    retarget = adapter_type(config.type).retarget
    if retarget is None:
        for key, value in (("model", overrides.model), ("base_url", overrides.base_url)):
            if value:
                raise OptionError(
                    f"{{{key}}} does not apply to the {{type}} adapter", type=config.type
                )
    if overrides.start_ollama and config.type != "ollama":
        raise OptionError(
            "{start_ollama} needs the ollama adapter (this suite uses {type})", type=config.type
        )
    if overrides.models_dir is not None and not overrides.start_ollama:
        raise OptionError("{models_dir} goes with {start_ollama}")
    if overrides.base_url and overrides.start_ollama:
        raise OptionError("{base_url} and {start_ollama} exclude each other")
    if retarget is None or not (overrides.model or overrides.base_url):
        return config
    problem = url_problem(overrides.base_url) if overrides.base_url else None
    if problem:
        raise OptionError("{base_url}: {problem}", problem=problem)
    retargeted: AdapterConfig = retarget(config, overrides.model, overrides.base_url)
    return retargeted


async def _execute(
    suite: Suite,
    config: AdapterConfig,
    request: RunRequest,
    scenarios: Sequence[Scenario],
    observer: RunObserver,
    suite_probes: int | None = None,
    variants: Sequence[Variant] = (),
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
                variants,
            )
    except TargetConfigError:
        raise
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
