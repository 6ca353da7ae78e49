"""The `run`, `validate` and `schema` commands. Each takes parsed arguments, returns an exit code,
and lets RuleDrift's errors rise to `cli.main`."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ruledrift.adapters.registry import create_adapter
from ruledrift.config import load_suite, schema_text
from ruledrift.errors import ExitCode, UsageError
from ruledrift.model import AdapterConfig, RunResult, Scenario, Suite
from ruledrift.regex_workers import RegexEvaluator
from ruledrift.reports import github, workflow_commands
from ruledrift.reports.files import write_atomic
from ruledrift.reports.json_report import render_json
from ruledrift.reports.junit import render_junit
from ruledrift.reports.terminal import Progress, TerminalOptions, header, render_terminal
from ruledrift.runner import Events, run_suite
from ruledrift.targets import managed_target, target_config
from ruledrift.targets import pull as pull_model

Renderer = Callable[..., bytes]
REPORTERS: dict[str, Renderer] = {"json": render_json, "junit": render_junit}


def exit_code(result: RunResult) -> ExitCode:
    if result.interrupted:
        return ExitCode.INTERRUPTED
    return {"passed": ExitCode.PASSED, "failed": ExitCode.FAILED, "error": ExitCode.RUN_ERROR}[
        result.status
    ]


def validate(args: argparse.Namespace) -> ExitCode:
    suite = load_suite(Path(args.config))
    turns = sum(s.turns_needed for s in suite.scenarios)
    print(
        f"{args.config}: valid: {len(suite.rules)} rule(s), {len(suite.scenarios)} scenario(s), "
        f"{suite.probe_count} probe(s); a run makes {suite.model_calls} model call(s) "
        f"({turns} background turn(s) + {suite.probe_count} probe(s))"
    )
    return ExitCode.PASSED


def schema(args: argparse.Namespace) -> ExitCode:
    sys.stdout.write(schema_text())
    return ExitCode.PASSED


def select_scenarios(suite: Suite, wanted: Sequence[str] | None) -> tuple[Scenario, ...]:
    if not wanted:
        return suite.scenarios
    known = {s.id for s in suite.scenarios}
    unknown = [w for w in dict.fromkeys(wanted) if w not in known]
    if unknown:
        names = ", ".join(s.id for s in suite.scenarios)
        raise UsageError(f"--scenario {', '.join(unknown)}: no such scenario (scenarios: {names})")
    return tuple(s for s in suite.scenarios if s.id in set(wanted))


def _check_reports(reports: dict[str, Path], config: Path) -> None:
    """Before anything runs: every report path can be written, and none would overwrite the
    suite or another report."""
    seen: dict[Path, str] = {config.resolve(): "the suite itself"}
    for option, path in reports.items():
        _check_report_path(option, path)
        target = path.resolve()
        if target in seen:
            raise UsageError(f"--{option} {path}: would overwrite {seen[target]}")
        seen[target] = f"the --{option} report"


def _check_report_path(option: str, path: Path) -> None:
    if path.is_dir():
        raise UsageError(f"--{option} {path}: is a directory; give a file path")
    parent = path.absolute().parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UsageError(f"--{option} {path}: cannot write there ({parent} is not writable)")


def _terminal_options(args: argparse.Namespace) -> TerminalOptions:
    tty = sys.stdout.isatty()
    return TerminalOptions(
        colour=tty and not args.no_color and not os.environ.get("NO_COLOR"),
        previews=args.include_responses or (tty and not os.environ.get("CI")),
        quiet=args.quiet,
    )


def run(args: argparse.Namespace) -> ExitCode:
    suite = load_suite(Path(args.config))
    scenarios = select_scenarios(suite, args.scenario)
    config = target_config(suite.adapter, args)
    reports = {name: Path(path) for name in REPORTERS if (path := getattr(args, name))}
    _check_reports(reports, suite.path)
    calls = sum(s.model_calls for s in scenarios)
    probes = sum(len(s.probes) for s in scenarios)
    if not args.quiet:
        print(header(suite, len(scenarios), probes, calls), flush=True)
    show_progress = sys.stdout.isatty() and not args.quiet
    progress = Progress(sys.stdout, calls, probes) if show_progress else None
    try:
        result = asyncio.run(_execute(suite, config, args, scenarios, progress))
    finally:
        if progress:
            progress.clear()
    for name, path in reports.items():
        write_atomic(path, REPORTERS[name](result, include_responses=args.include_responses))
    terminal = render_terminal(result, _terminal_options(args))
    # GitHub reads workflow commands from the log: no text in the report (answer previews,
    # errors quoting an agent's output) may run one, even with --github off
    on_github = workflow_commands.enabled(os.environ)
    sys.stdout.write(workflow_commands.stop_commands(terminal) if on_github else terminal)
    for name, path in reports.items():
        print(f"{name} report: {path}")
    if on_github and args.github == "auto":
        github.publish(result, overrides=_overrides(args), environ=os.environ, out=sys.stdout)
    return exit_code(result)


def _overrides(args: argparse.Namespace) -> list[str]:
    """The target options a reproduction command must repeat."""
    given = [("--model", args.model), ("--base-url", args.base_url)]
    return [part for option, value in given if value for part in (option, value)]


async def _execute(
    suite: Suite,
    config: AdapterConfig,
    args: argparse.Namespace,
    scenarios: Sequence[Scenario],
    events: Events | None,
) -> RunResult:
    task = asyncio.current_task()
    if task is not None:  # SIGTERM (CI cancelling a job, docker stop) stops the run like Ctrl-C
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    async with managed_target(config, args, args.concurrency) as target:
        adapter = create_adapter(target)
        regex = RegexEvaluator()
        try:
            await adapter.open()
            return await run_suite(
                suite,
                adapter,
                regex,
                concurrency=args.concurrency,
                scenarios=scenarios,
                events=events,
            )
        finally:
            try:
                await adapter.aclose()
            finally:
                await regex.aclose()


def pull(args: argparse.Namespace) -> ExitCode:
    suite = load_suite(Path(args.config))
    config = target_config(suite.adapter, args)
    model = getattr(config, "model", None)
    pulled = asyncio.run(pull_model(config, args))
    print(f"{model}: {'pulled' if pulled else 'already present'}")
    return ExitCode.PASSED


COMMANDS: dict[str, Callable[[argparse.Namespace], ExitCode]] = {
    "run": run,
    "validate": validate,
    "schema": schema,
    "pull": pull,
}
