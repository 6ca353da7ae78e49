"""What a person sees of a command in a terminal or a CI log, for both front-ends (the CLI and
the GitHub Action): the header, the progress line, pull progress, warnings, the terminal report,
the report paths, and on a GitHub runner the annotations and job summary.

The application layer (app/) decides and writes files; this module only shows.
"""

from __future__ import annotations

import math
import os
import sys
import threading
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TextIO

from ruledrift import app
from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.app import history, saved
from ruledrift.app.options import OptionError, as_flags
from ruledrift.console import github, output
from ruledrift.console.not_run import render_not_run_annotations, render_not_run_summary
from ruledrift.console.pull_progress import PullProgressPrinter
from ruledrift.console.run_progress import (
    PROGRESS_EVERY,
    Counts,
    Progress,
    ProgressLog,
    plan_header,
)
from ruledrift.data import ProbeResult, RunResult, Scenario, ScenarioResult, Suite, VerdictPolicy
from ruledrift.errors import ConfigError, RuleDriftError, UsageError
from ruledrift.ollama.api import PullProgress
from ruledrift.reports import workflow_commands
from ruledrift.reports.comparison import render_comparison_text
from ruledrift.reports.job_summary import Origin
from ruledrift.reports.terminal import TerminalOptions, render_ending, render_scenario
from ruledrift.results.findings import gate_words
from ruledrift.run.verdicts import gate_odds
from ruledrift.suite.coverage import coverage_warnings
from ruledrift.text import terminal_lines, terminal_safe


@dataclass(frozen=True)
class Display:
    """How a run is shown: `--quiet`, `--no-color`, `--github auto|off`."""

    quiet: bool = False
    no_color: bool = False
    github: Literal["auto", "off"] = "auto"

    def argv(self) -> list[str]:
        """These choices as `ruledrift run` options."""
        flags = [("--quiet", self.quiet), ("--no-color", self.no_color)]
        argv = [flag for flag, on in flags if on]
        return argv + (["--github", "off"] if self.github == "off" else [])


def terminal_options(
    request: app.RunRequest, display: Display, environ: Mapping[str, str], out: TextIO
) -> TerminalOptions:
    """Colour and previews on a TTY outside CI, every answer with --include-responses."""
    tty = out.isatty()
    return TerminalOptions(
        colour=tty and not display.no_color and not environ.get("NO_COLOR"),
        previews=request.include_responses or (tty and not environ.get("CI")),
        responses=request.include_responses,
        quiet=display.quiet,
    )


class ConsoleObserver:
    """A RunObserver that prints: the header, each scenario's results as soon as it finishes,
    and a progress line (on a TTY) to stdout; pull progress and warnings to stderr, and when
    stdout is no TTY (a CI log) plain progress lines, every `progress_every` seconds and when a
    scenario finishes."""

    def __init__(
        self,
        display: Display,
        stdout: TextIO,
        stderr: TextIO,
        options: TerminalOptions | None = None,
        environ: Mapping[str, str] | None = None,
        progress_every: float = PROGRESS_EVERY,
    ) -> None:
        self._display = display
        self._stdout = stdout
        self._stderr = stderr
        self._options = options or TerminalOptions(quiet=display.quiet)
        self._on_github = workflow_commands.enabled(environ or {})
        self._every = progress_every
        self._counts: Counts | None = None
        self._progress: Progress | None = None
        self._log: ProgressLog | None = None
        self._stderr_lock = threading.Lock()  # the progress thread writes to stderr too
        self._pull: PullProgressPrinter | None = None
        self.shown: set[str] = set()  # scenarios whose results are printed
        self.errors: dict[str, str] = {}  # errors printed, each once (render_scenario)

    def scenario_finished(self, result: ScenarioResult) -> None:
        if self._options.quiet:
            return
        if self._progress:
            self._progress.clear()
        shown = render_scenario(result, self._options, self.errors)
        write_report_text(shown, self._stdout, self._on_github)
        self.shown.add(result.scenario.id)
        if self._counts and self._log:
            self._counts.scenarios += 1
            self._log.scenario_finished(result.scenario)

    def run_starting(self, plan: app.RunPlan) -> None:
        if self._display.quiet:
            return
        print(plan_header(plan), file=self._stdout, flush=True)
        self._counts = Counts(plan)
        if self._stdout.isatty():
            self._progress = Progress(self._stdout, self._counts)
        else:
            self._log = ProgressLog(self._stderr, self._counts, self._every, self._stderr_lock)
            self._log.start()

    def run_stopped(self) -> None:
        if self._progress:
            self._progress.clear()
            self._progress = None
        if self._log:
            self._log.stop()
            self._log = None

    def call_finished(self, scenario: Scenario) -> None:
        if self._counts:
            self._counts.calls += 1
        if self._progress:
            self._progress.call_finished(scenario)

    def probe_finished(self, scenario: Scenario, result: ProbeResult) -> None:
        if self._counts:
            self._counts.probe_finished(result)
        if self._progress:
            self._progress.probe_finished(scenario, result)

    def pull_progress(self, event: PullProgress) -> None:
        if self._pull is None:
            self._pull = PullProgressPrinter(self._stderr, self._stderr.isatty())
        with self._stderr_lock:
            self._pull(event)

    def pull_stopped(self) -> None:
        if self._pull is not None:
            with self._stderr_lock:
                self._pull.close()
            self._pull = None

    def warning(self, message: str) -> None:
        with self._stderr_lock:
            self._stderr.write(f"ruledrift: {terminal_safe(message)}\n")


def run(
    request: app.RunRequest,
    display: Display,
    environ: Mapping[str, str] | None = None,
) -> app.RunOutcome:
    """Run `request` with a console observer, then show the outcome."""
    environ = os.environ if environ is None else environ
    options = terminal_options(request, display, environ, sys.stdout)
    every = progress_every(environ)
    observer = ConsoleObserver(display, sys.stdout, sys.stderr, options, environ, every)
    outcome = app.run(request, observer)
    show_outcome(outcome, display, environ, sys.stdout, observer.shown, observer.errors)
    return outcome


PROGRESS_VARIABLE = "RULEDRIFT_PROGRESS_SECONDS"


def progress_every(environ: Mapping[str, str]) -> float:
    """The seconds between two plain progress lines: `RULEDRIFT_PROGRESS_SECONDS`, else a
    minute. Raises UsageError (exit 2) for anything but a number from 0.01 to 86400."""
    given = environ.get(PROGRESS_VARIABLE)
    if given is None:
        return PROGRESS_EVERY
    try:
        seconds = float(given)
    except ValueError:
        seconds = math.nan
    if not 0.01 <= seconds <= 86400:  # also NaN
        raise UsageError(f"{PROGRESS_VARIABLE}: expected seconds from 0.01 to 86400, not {given!r}")
    return seconds


def write_report_text(text: str, out: TextIO, on_github: bool) -> None:
    """Report text (answer previews, errors quoting an agent's output): on a GitHub runner in a
    stop-commands block, so none of it can run a workflow command, even with --github off."""
    if on_github:
        start, body, end = workflow_commands.stop_commands(text)
        output.command(start, out)
        out.write(body)
        output.command(end, out)
    else:
        out.write(text)
    out.flush()


def show_outcome(
    outcome: app.RunOutcome,
    display: Display,
    environ: Mapping[str, str],
    out: TextIO,
    shown: Set[str] = frozenset(),
    errors: dict[str, str] | None = None,
) -> None:
    """The rest of the terminal report (the scenarios not `shown` while the run went on, the
    rules across depths, the verdict), the report paths, then GitHub's annotations and job
    summary. An error printed before (`errors`) is named, not repeated."""
    options = terminal_options(outcome.request, display, environ, out)
    result = outcome.result
    errors = {} if errors is None else errors
    blocks = [
        render_scenario(s, options, errors)
        for s in result.scenarios
        if s.scenario.id not in shown and not options.quiet
    ]
    on_github = workflow_commands.enabled(environ)
    write_report_text("".join(blocks) + render_ending(result, options), out, on_github)
    for name, path in outcome.reports_written.items():
        print(f"{name} report: {terminal_safe(str(path))}", file=out)
    for reason in outcome.reports_failed.values():
        sys.stderr.write(f"ruledrift: error: {terminal_safe(reason)}\n")
    if on_github and display.github == "auto":
        overrides = outcome.request.target.reproduce_argv()
        github.publish(
            outcome.result,
            overrides=overrides,
            environ=environ,
            emit=lambda line: output.command(line, out),
            reports={name: str(path) for name, path in outcome.reports_written.items()},
        )


def pull(request: app.PullRequest) -> app.PullOutcome:
    """Pull with progress on stderr, then one line saying what happened."""
    outcome = app.pull(request, ConsoleObserver(Display(), sys.stdout, sys.stderr))
    print(f"{terminal_safe(outcome.model)}: {'pulled' if outcome.pulled else 'already present'}")
    return outcome


def import_history(request: history.ImportRequest) -> int:
    """`ruledrift import`: convert, write, and say what was written (never the text)."""
    outcome = history.import_history(request)
    exchanges = outcome.messages // 2
    dropped = f"; left out {outcome.dropped} system message(s)" if outcome.dropped else ""
    print(
        f"wrote {terminal_safe(str(outcome.output))}: {outcome.messages} message(s), "
        f"{exchanges} recorded turn(s){dropped}"
    )
    return 0


def show_validation(
    config: Path,
    suite: Suite,
    scenarios: Sequence[Scenario] | None = None,
    policy: VerdictPolicy | None = None,
) -> None:
    """The counts of a valid suite and the model calls a run makes; with repeats, what they
    promise the selected probes (`gate_words`) and the calls the repeats make at most."""
    turns = sum(s.turns_needed - min(s.replayed, s.turns_needed) for s in suite.scenarios)
    replayed = sum(min(s.replayed, s.turns_needed) for s in suite.scenarios)
    shown = terminal_safe(str(config))
    controls = sum(1 for s in suite.scenarios for p in s.probes if p.control is not None)
    asked = f" + {controls} control(s), asked after a pass" if controls else ""
    searches = sum(len(s.searches) for s in suite.scenarios)
    made = (
        f"at most {suite.model_calls} model call(s) ({searches} search(es) of the breaking "
        "depth: a round for each depth decided)"
        if searches
        else f"{'at most ' if controls else ''}{suite.model_calls} model call(s) ({turns} "
        f"background turn(s) + {suite.probe_count} probe(s){asked})"
    )
    rounds = suite.rounds_per_turn
    if rounds > 1:
        made = f"at most {made.removeprefix('at most ')}, each up to {rounds} tool round(s)"
    print(
        f"{shown}: valid: {len(suite.rules)} rule(s), {len(suite.scenarios)} scenario(s), "
        f"{suite.probe_count} probe(s); a run makes {made}"
        + (f"; {replayed} recorded turn(s) replayed without a call" if replayed else "")
    )
    for warning in [*missing_scripts(suite), *coverage_warnings(suite)]:
        print(f"warning: {terminal_safe(warning)}")
    policy = policy or VerdictPolicy()
    if not policy.repeated:
        return
    chosen = suite.scenarios if scenarios is None else tuple(scenarios)
    probes = sum(s.decisions for s in chosen)
    calls = app.most_runs(policy, probes) * sum(s.model_calls for s in chosen)
    odds = gate_odds(policy, probes)
    prefix = "" if odds.within_bounds else "warning: "
    print(f"{prefix}{terminal_safe(gate_words(odds, policy))}")
    print(f"repeats: at most {calls} model call(s) for the {len(chosen)} selected scenario(s)")


# what an argument that names a script file ends with (a misspelt `agnet.py` fails every call)
SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".bash", ".rb", ".pl", ".php")


def missing_scripts(suite: Suite) -> list[str]:
    """The command adapter's arguments that look like a script (`agent.py`) but name no file
    under its `cwd` (where the command runs, so where a relative path resolves)."""
    config = suite.adapter
    if not isinstance(config, CommandAdapterConfig):
        return []
    return [
        f'the command adapter\'s argument "{arg}" looks like a script, but there is no '
        f"{config.cwd / arg} (a relative path resolves from cwd {config.cwd})"
        for arg in config.args
        if arg.lower().endswith(SCRIPT_SUFFIXES) and not (config.cwd / arg).exists()
    ]


def show_failure(error: RuleDriftError, environ: Mapping[str, str]) -> None:
    """What stopped a command before or instead of a run, on stderr; on a GitHub runner also as
    annotations (a configuration problem at its FILE:LINE:COL) and a job-summary note. An
    option is named as the command line names it (`--min-pass-rate`)."""
    if isinstance(error, OptionError):
        error = UsageError(as_flags(error))
    if isinstance(error, ConfigError):
        shown = terminal_lines(str(error))
        sys.stderr.write(f"{shown}\nerror: {len(error.issues)} problem(s) in the configuration\n")
    else:
        prefix = "usage error" if isinstance(error, UsageError) else "error"
        sys.stderr.write(f"ruledrift: {prefix}: {terminal_lines(str(error))}\n")
    sys.stderr.flush()
    if not workflow_commands.enabled(environ):
        return
    for line in render_not_run_annotations(error, environ.get("GITHUB_WORKSPACE")):
        output.command(line)
    if environ.get("GITHUB_STEP_SUMMARY"):
        github.append_summary(Path(environ["GITHUB_STEP_SUMMARY"]), render_not_run_summary(error))


def report(request: saved.ReportRequest, display: Display, environ: Mapping[str, str]) -> int:
    """`ruledrift report`: the terminal view of a saved report, the files it re-rendered, and on
    a GitHub runner the job summary."""
    origin = Origin("report", (str(request.report),))
    return show_saved(saved.report(request), display, environ, origin)


def merge(request: saved.MergeRequest, display: Display, environ: Mapping[str, str]) -> int:
    """`ruledrift merge`: the merged run's terminal view, the files written, and on a GitHub
    runner the job summary."""
    outcome = saved.merge(request)
    if outcome.missing_shards:
        total = len(request.shards) + len(outcome.missing_shards)
        missing = ", ".join(f"{k}/{total}" for k in outcome.missing_shards)
        sys.stderr.write(f"ruledrift: warning: partial merge: shard(s) {missing} not given\n")
    if balance := outcome.result.balanced_by:
        sys.stderr.write(
            f"ruledrift: the shards were cut by the times in {terminal_safe(balance.report)} "
            f"(the run started at {terminal_safe(balance.started_at)})\n"
        )
    origin = Origin("merge", tuple(map(str, request.shards)), outcome.missing_shards)
    return show_saved(outcome, display, environ, origin)


def show_saved(
    outcome: saved.ReportOutcome,
    display: Display,
    environ: Mapping[str, str],
    origin: Origin,
) -> int:
    """A saved or merged result: the terminal report, the report paths, and on a GitHub runner
    (unless `--github off`) the job summary, with a note of where the result came from. No
    annotations: the run that saved the report made them, and a second set would repeat them."""
    out = sys.stdout
    tty = out.isatty()
    options = TerminalOptions(
        colour=tty and not display.no_color and not environ.get("NO_COLOR"),
        previews=outcome.responses_included,
        responses=outcome.responses_included,
        quiet=display.quiet,
    )
    rendered = render_scenarios(outcome.result, options) + render_ending(outcome.result, options)
    write_report_text(rendered, out, workflow_commands.enabled(environ))
    for name, path in outcome.reports_written.items():
        print(f"{name} report: {terminal_safe(str(path))}", file=out)
    for reason in outcome.reports_failed.values():
        sys.stderr.write(f"ruledrift: error: {terminal_safe(reason)}\n")
    if workflow_commands.enabled(environ) and display.github == "auto":
        written = {name: str(path) for name, path in outcome.reports_written.items()}
        github.summarize(outcome.result, environ=environ, reports=written, origin=origin)
    return int(outcome.exit_code)


def render_scenarios(result: RunResult, options: TerminalOptions) -> str:
    errors: dict[str, str] = {}
    shown = (render_scenario(s, options, errors) for s in result.scenarios)
    return "" if options.quiet else "".join(shown)


def compare(request: saved.CompareRequest) -> int:
    """`ruledrift compare`: the comparison on stdout, the files written."""
    outcome = saved.compare(request)
    sys.stdout.write(render_comparison_text(outcome.comparison))
    for name, path in outcome.written.items():
        print(f"{name} comparison: {terminal_safe(str(path))}")
    return int(outcome.exit_code)
