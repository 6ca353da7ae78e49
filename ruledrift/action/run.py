"""The GitHub Action's run: inputs → the same typed request the CLI builds → the application
layer → step outputs read from the outcome, files given back to the workspace owner.

It logs the equivalent `ruledrift run …` line (which reproduces the run on any machine), starts
a managed Ollama server when `start-ollama` says so, pulls the model into a server of the user's
own when `pull` says so, and goes through `console.exits.guarded`, the one place where
exceptions become exit codes. Annotations and the job summary come from the console (as for
`ruledrift run` on a runner); this module only reports wrong inputs.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from pathlib import Path

from ruledrift import app
from ruledrift.action.files import created_root, give_back
from ruledrift.action.inputs import (
    InputError,
    Settings,
    parse_inputs,
    read_inputs,
    unknown_inputs,
)
from ruledrift.action.outputs import (
    outputs_for,
    report_problems,
    warn_unknown_inputs,
    write_outputs,
)
from ruledrift.app import saved, targets
from ruledrift.console import arguments, commands, github
from ruledrift.console.exits import guarded
from ruledrift.data import Suite
from ruledrift.errors import ExitCode, RuleDriftError
from ruledrift.text import markdown_inline, terminal_safe


def log(message: str) -> None:
    print(f"ruledrift action: {message}", flush=True)


# --- the managed Ollama server (`start-ollama`) -------------------------------------------------


def decide_server(settings: Settings, suite: Suite | None) -> tuple[bool, str]:
    """Whether to start a managed Ollama server, and why (for the log)."""
    return targets.start_managed_server(settings.start_ollama, suite, settings.base_url or None)


CONTAINER_HINT = (
    "RuleDrift runs inside the action's Docker container, where {url} is the container itself, "
    "not the runner: a server started in an earlier step is not there. Use a service container "
    "(base-url: http://ollama:11434 with a service named ollama), or let the action start "
    "Ollama (start-ollama: true)."
)


def container_hint(
    settings: Settings,
    suite: Suite | None,
    managed: bool,
    code: int,
    outcome: app.RunOutcome | None,
) -> str | None:
    """Why a loopback server could not be reached from inside the container, when that is the
    likely cause of exit 3: a pull that failed, or a target that could not start."""
    if code != ExitCode.RUN_ERROR or managed or suite is None:
        return None
    url = targets.loopback_url(suite, settings.base_url or None)
    if url is None:
        return None
    if outcome is not None:
        errors = {p.error or "" for p in outcome.result.probes}
        if outcome.result.model_calls or not any("could not connect" in e for e in errors):
            return None
    return CONTAINER_HINT.format(url=url)


def explain_container(hint: str, summary_file: str) -> None:
    github.annotate("notice", hint, "RuleDrift: 127.0.0.1 is the container")
    if summary_file:
        github.add_to_summary(Path(summary_file), f"> **Note:** {markdown_inline(hint, 2000)}\n\n")


def try_load_suite(config: str) -> Suite | None:
    try:
        return app.validate(Path(config))
    except RuleDriftError:
        return None


# --- the requests ---------------------------------------------------------------------------------


def target_overrides(settings: Settings, managed: bool) -> app.TargetOverrides:
    """--model, --base-url or --start-ollama/--models-dir: shared by the run and the pull."""
    return app.TargetOverrides(
        model=settings.model or None,
        base_url=None if managed else settings.base_url or None,
        start_ollama=managed,
        models_dir=Path(settings.models_dir) if managed and settings.models_dir else None,
    )


def run_request(
    settings: Settings, managed: bool, suite: Suite | None = None
) -> tuple[app.RunRequest, commands.Display]:
    """The request the inputs describe: `args` parsed as `ruledrift run` options, then the
    inputs that have options of their own (refused in `args`). For a `suite` (the loaded
    config) that sets no seed, unless `args` give one, a seed is drawn, so that the logged
    command line reproduces the run."""
    config = Path(settings.config)
    request, display = arguments.parse_run(["run", app.path_argument(config), *settings.args])
    request = dataclasses.replace(
        request,
        reports=settings.reports(),
        include_responses=settings.include_responses,
        concurrency=settings.concurrency,
        target=target_overrides(settings, managed),
        policy=dataclasses.replace(
            request.policy, repeat=settings.repeat, min_pass_rate=settings.min_pass_rate
        ),
        shard=settings.shard,
        shard_balance=Path(settings.shard_balance) if settings.shard_balance else None,
    )
    if suite is not None:
        request = app.with_drawn_seed(request, suite)
    return request, display


def pull_request(settings: Settings, suite: Suite | None, managed: bool) -> app.PullRequest | None:
    """A pull before the run: for the ollama adapter and a server of the user's own (the
    managed server pulls a missing model itself)."""
    if not settings.pull or managed or suite is None or suite.adapter.type != "ollama":
        return None
    return app.PullRequest(Path(settings.config), target_overrides(settings, managed))


# --- the run --------------------------------------------------------------------------------------


def _pull_then_run(
    settings: Settings, suite: Suite | None, managed: bool
) -> tuple[int, app.RunOutcome | None]:
    """The pull when asked for (stopping at its exit code if it fails), then the run: the exit
    code, and the outcome when the run finished."""
    pull = pull_request(settings, suite, managed)
    if pull is not None:
        log(f"ruledrift {shlex.join(pull.argv())}")

        def pull_model() -> int:
            commands.pull(pull)
            return int(ExitCode.PASSED)

        code = guarded(pull_model)
        if code != ExitCode.PASSED:
            return code, None
    outcomes: list[app.RunOutcome] = []

    def run() -> int:
        request, display = run_request(settings, managed, suite)
        log(f"ruledrift {shlex.join([*request.argv(), *display.argv()])}")
        outcomes.append(commands.run(request, display))
        return int(outcomes[0].exit_code)

    code = guarded(run)
    return code, outcomes[0] if outcomes else None


def run_action(environ: Mapping[str, str], cwd: Path) -> int:
    workspace = Path(environ.get("GITHUB_WORKSPACE") or cwd)
    outputs_file = environ.get("GITHUB_OUTPUT", "")
    if unknown := unknown_inputs(environ):
        warn_unknown_inputs(unknown)
    try:
        settings = parse_inputs(read_inputs(environ), cwd, environ)
    except InputError as error:
        report_problems(error.problems, environ.get("GITHUB_STEP_SUMMARY", ""))
        write_outputs(outputs_file, outputs_for(int(ExitCode.USAGE), None))
        return int(ExitCode.USAGE)

    suite = try_load_suite(settings.config)
    managed, reason = decide_server(settings, suite)
    log(f"{reason}: {'starting' if managed else 'not starting'} a managed Ollama server")

    owned = [cwd / path for path in settings.reports().values()]
    if managed and settings.models_dir:
        owned.append(cwd / settings.models_dir)
    roots = [root for path in owned if (root := created_root(path, workspace))]
    home = environ.get("HOME")
    if managed and home:  # `ollama serve` creates its key pair in ~/.ollama
        roots += [root for root in [created_root(Path(home, ".ollama"), Path(home))] if root]

    code, outcome = int(ExitCode.INTERNAL), None  # the outputs if anything below raised
    regressions: int | None = None
    try:
        code, outcome = _pull_then_run(settings, suite, managed)
        hint = container_hint(settings, suite, managed, code, outcome)
        if hint:
            explain_container(hint, environ.get("GITHUB_STEP_SUMMARY", ""))
        if settings.baseline and outcome is not None:
            regressions = compare_with_baseline(
                Path(settings.baseline), outcome, environ.get("GITHUB_STEP_SUMMARY", "")
            )
    finally:
        write_outputs(outputs_file, outputs_for(code, outcome, regressions))
        give_back(roots, workspace)
    return code


def compare_with_baseline(baseline: Path, outcome: app.RunOutcome, summary_file: str) -> int | None:
    """The run compared with a base report (e.g. the latest from main): a "compared with base"
    section in the job summary, and the number of significantly worse probes (None when the
    base report cannot be read: said in the log, the run's own verdict stands)."""
    try:
        comparison = saved.compare_with_base(baseline, outcome.result)
    except RuleDriftError as error:
        log(f"baseline not compared: {terminal_safe(str(error))}")
        return None
    log(
        f"compared with {terminal_safe(str(baseline))}: {len(comparison.regressions)} regression(s)"
    )
    if summary_file:
        github.summarize_comparison(Path(summary_file), comparison)
    return len(comparison.regressions)
