"""The command line: argv → a typed request (its grammar: `console.arguments`) → the application
layer (app/) → an exit code, through `console.exits.guarded`, the one place where exceptions
become exit codes."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from ruledrift.app.options import COMPARISON_FORMATS
from ruledrift.console import output
from ruledrift.console.arguments import (
    build_parser,
    report_paths,
    run_request,
    target_overrides,
    tools_command,
    verdict_policy,
)
from ruledrift.console.exits import guarded, interruptible
from ruledrift.errors import ArgumentsExit, ExitCode


def _run(args: argparse.Namespace) -> int:
    from ruledrift.console import commands as console

    request, display = run_request(args)
    return console.run(request, display).exit_code


def _validate(args: argparse.Namespace) -> int:
    from ruledrift import app
    from ruledrift.console import commands as console

    policy = verdict_policy(args)
    app.check_policy(policy)
    suite = app.validate(Path(args.config))
    scenarios = app.select_scenarios(suite, tuple(args.scenario or ()))
    app.check_design(policy, sum(len(s.probes) for s in scenarios))
    console.show_validation(Path(args.config), suite, scenarios, policy)
    return ExitCode.PASSED


def _pull(args: argparse.Namespace) -> int:
    from ruledrift import app
    from ruledrift.console import commands as console

    console.pull(app.PullRequest(Path(args.config), target_overrides(args)))
    return ExitCode.PASSED


def _report(args: argparse.Namespace) -> int:
    from ruledrift.app import saved
    from ruledrift.console import commands as console

    request = saved.ReportRequest(Path(args.report), report_paths(args))
    display = console.Display(quiet=args.quiet, no_color=args.no_color, github=args.github)
    return console.report(request, display, os.environ)


def _merge(args: argparse.Namespace) -> int:
    from ruledrift.app import saved
    from ruledrift.console import commands as console

    request = saved.MergeRequest(
        tuple(Path(p) for p in args.reports),
        report_paths(args),
        allow_partial=args.allow_partial,
    )
    display = console.Display(quiet=args.quiet, no_color=args.no_color, github=args.github)
    return console.merge(request, display, os.environ)


def _compare(args: argparse.Namespace) -> int:
    from ruledrift.app import saved
    from ruledrift.console import commands as console

    request = saved.CompareRequest(
        Path(args.base),
        Path(args.head),
        report_paths(args, COMPARISON_FORMATS),
        fail_on_regression=args.fail_on_regression,
    )
    return console.compare(request)


def _schema(args: argparse.Namespace) -> int:
    from ruledrift.app import schema_text

    sys.stdout.write(schema_text())
    return ExitCode.PASSED


def _import(args: argparse.Namespace) -> int:
    from ruledrift.app.history import ImportRequest
    from ruledrift.console import commands as console

    output = Path(args.output) if args.output is not None else None
    return console.import_history(ImportRequest(Path(args.source), output, force=args.force))


def _tools(args: argparse.Namespace) -> int:
    from ruledrift.app.tools import ToolsImportRequest
    from ruledrift.console import tools as console

    if args.tools_command == "serve":
        return console.serve(args.url)
    output = Path(args.output) if args.output is not None else None
    request = ToolsImportRequest(tools_command(args), output, force=args.force)
    if args.timeout is not None:
        request = dataclasses.replace(request, timeout_s=args.timeout)
    return console.import_tools(request)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": _run,
    "report": _report,
    "merge": _merge,
    "compare": _compare,
    "validate": _validate,
    "pull": _pull,
    "schema": _schema,
    "import": _import,
    "tools": _tools,
}


def main(argv: Sequence[str] | None = None) -> int:
    with output.protected_streams(os.environ), interruptible():
        return guarded(lambda: _dispatch(argv))


def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except ArgumentsExit as done:
        return done.status
    return int(COMMANDS[args.command](args))
