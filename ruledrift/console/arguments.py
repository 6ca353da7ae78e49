"""The command line's grammar, shared by the two front-ends: `build_parser` for the CLI, and
`parse_run` for `ruledrift run` arguments, which the action's `args` input also takes. It turns
argv into the application's typed request (`app.RunRequest`) and the console's display choices;
it runs nothing."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ruledrift import __version__
from ruledrift.app.options import (
    COMPARISON_FORMATS,
    CONCURRENCY,
    OPTIONS,
    REPORT_FORMATS,
    Option,
)
from ruledrift.errors import EXIT_CODE_MEANINGS, ArgumentsExit, UsageError

if TYPE_CHECKING:
    from ruledrift.app import RunRequest, TargetOverrides
    from ruledrift.console.commands import Display
    from ruledrift.data import VerdictPolicy


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting, so `main` stays the one place for exit codes."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\n{self.format_usage().strip()}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        raise ArgumentsExit(status)


def _concurrency(text: str) -> int:
    low, high = CONCURRENCY
    value = int(text) if text.isdigit() and len(text) <= len(str(high)) else 0
    if not low <= value <= high:
        shown = text if len(text) <= 20 else text[:19] + "…"
        raise argparse.ArgumentTypeError(
            f"expected a whole number from {low} to {high}, got {shown!r}"
        )
    return value


def _report_outputs(
    parser: argparse.ArgumentParser,
    formats: Sequence[Option] = REPORT_FORMATS,
    *,
    json_help: str | None = None,
) -> None:
    """A `--FORMAT PATH` option for each of `formats` (the report files a command can write)."""
    for option in formats:
        what = json_help if json_help and option.name == "json" else option.what
        parser.add_argument(option.flag, metavar="PATH", help=f"write {what} to PATH")


def report_paths(
    args: argparse.Namespace, formats: Sequence[Option] = REPORT_FORMATS
) -> dict[str, Path]:
    """The report paths given on the command line, by format."""
    return {
        option.name: Path(value)
        for option in formats
        if (value := getattr(args, option.name, None))
    }


def _display_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="print only the summary")
    parser.add_argument("--no-color", action="store_true", help="no colour (also: NO_COLOR set)")


def _github_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--github",
        choices=("auto", "off"),
        default="auto",
        help=f"{what} on GitHub Actions: auto (when GITHUB_ACTIONS is true; the default) or off",
    )


def _repeat(text: str) -> int | str:
    if text == "auto":
        return text
    repeat = OPTIONS["repeat"]
    if text.isdigit() and len(text) <= len(str(repeat.high)) and int(text) >= 1:
        return int(text)  # its upper bound: app.check_policy, for every front-end
    raise argparse.ArgumentTypeError(
        f"expected auto or a whole number of at least {repeat.low}, got {text!r}"
    )


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a rate above 0 and at most 1, got {text!r}")
    return value


def _runs(text: str) -> int:
    if text.isdigit() and len(text) <= len(str(OPTIONS["max_calls"].high)):
        return int(text)
    raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}")


def _seed(text: str) -> int:
    digits = len(str(OPTIONS["seed"].high))
    if text.isascii() and text.isdigit() and len(text) <= digits:
        return int(text)
    raise argparse.ArgumentTypeError(
        f"expected a whole number of at most {digits} digits, got {text!r}"
    )


def _repeat_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "repeats", "run each scenario several times and decide each probe from all its runs"
    )
    group.add_argument(
        "--repeat",
        type=_repeat,
        default=OPTIONS["repeat"].default,
        metavar="N|auto",
        help="N runs of every scenario (a probe passes only if every run passes, unless "
        "--min-pass-rate); auto: run until a sequential test decides each probe",
    )
    group.add_argument(
        "--min-pass-rate",
        type=_rate,
        metavar="R",
        help="with --repeat N: a probe passes when at least R of its runs pass (0 < R <= 1)",
    )
    group.add_argument(
        "--holds-at",
        type=_rate,
        default=OPTIONS["holds_at"].default,
        metavar="P",
        help="the pass rate at which a rule holds (default 0.95): --repeat auto tests it; with "
        "--repeat N the summary states the chance that a suite of such rules goes red",
    )
    group.add_argument(
        "--drifted-at",
        type=_rate,
        default=OPTIONS["drifted_at"].default,
        metavar="P",
        help="the pass rate at which a rule has drifted (default 0.80): --repeat auto tests it; "
        "with --repeat N the summary states the chance of catching such a rule",
    )
    group.add_argument(
        "--max-repeat",
        type=_runs,
        metavar="N",
        help="--repeat auto: at most N runs of a probe (default: the cap that decides every "
        "probe, derived from the number of probes: 37 for 1, 66 for 10, 105 for 200); below "
        "that cap an undecided probe is inconclusive",
    )
    group.add_argument(
        "--inconclusive",
        choices=("fail", "pass"),
        default="fail",
        help="with a --max-repeat below the derived cap: what an inconclusive probe does to the "
        "run, fail (exit 1, the default) or pass",
    )


def _target_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", metavar="NAME", help="use this model instead of the config's")
    parser.add_argument(
        "--base-url", metavar="URL", help="use this server URL instead of the config's baseUrl"
    )
    parser.add_argument(
        "--start-ollama",
        action="store_true",
        help="start `ollama serve` on a free loopback port for this run, pull the model if "
        "missing, and stop the server afterwards (ollama adapter only)",
    )
    parser.add_argument(
        "--models-dir",
        metavar="DIR",
        help="OLLAMA_MODELS for --start-ollama (default: $OLLAMA_MODELS, else ~/.ollama/models)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ruledrift",
        description="Test that an LLM agent keeps obeying its critical rules as a conversation "
        "grows.",
        epilog="Exit codes: "
        + ", ".join(f"{int(code)} {meaning}" for code, meaning in EXIT_CODE_MEANINGS.items())
        + ".",
    )
    parser.add_argument("--version", action="version", version=f"ruledrift {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True

    run = commands.add_parser("run", help="run a suite against its target and report")
    run.add_argument("config", metavar="CONFIG", help="the suite (a JSON file)")
    _report_outputs(run)
    run.add_argument(
        "--include-responses",
        action="store_true",
        help="include answer text in the reports and the terminal (only for trusted destinations)",
    )
    run.add_argument(
        "--concurrency",
        type=_concurrency,
        default=OPTIONS["concurrency"].default,
        metavar="N",
        help="scenarios run at once (default 1)",
    )
    run.add_argument(
        "--scenario",
        action="append",
        metavar="ID",
        help="run only this scenario (repeatable)",
    )
    run.add_argument(
        "--variants",
        metavar="base,ID,...",
        help="play every probe under base (the suite as written) and under each of these "
        "variants of the suite, paired run for run, and compare them (docs/statistics.md)",
    )
    _repeat_arguments(run)
    run.add_argument(
        "--shard",
        metavar="K/N|auto",
        help="run only shard K of N (K from 1) of the selected scenarios, balanced by model "
        "calls; auto: from the environment (RULEDRIFT_SHARD_INDEX/_TOTAL, Kubernetes Indexed "
        "Jobs, SLURM arrays, Buildkite, GitLab; see docs/scaling.md)",
    )
    run.add_argument(
        "--shard-balance",
        metavar="REPORT",
        help="with --shard: cut the shards by the scenario times in REPORT (an earlier JSON "
        "report of the suite, such as main's last run) instead of by model calls",
    )
    run.add_argument(
        "--max-calls",
        type=_runs,
        metavar="N",
        help="start no model call once N have been made; what is left is reported as not run",
    )
    run.add_argument(
        "--seed",
        type=_seed,
        metavar="N",
        help="the run's seed: run r sends context.seed N + r to a command agent, and the "
        "paraphrases are drawn from it (default: the suite's seed, else one drawn at random; "
        "kept in the JSON report). The HTTP adapters send the suite's seed + r",
    )
    _display_options(run)
    _github_option(run, "annotations and a job summary")
    _target_arguments(run)

    pull = commands.add_parser(
        "pull", help="pull the suite's Ollama model (with --start-ollama: into --models-dir)"
    )
    pull.add_argument("config", metavar="CONFIG", help="the suite (a JSON file)")
    _target_arguments(pull)

    report = commands.add_parser(
        "report",
        help="show a saved JSON report and re-render it (--html, --junit, ...) without calling "
        "any model; exits with its verdict's code",
    )
    report.add_argument("report", metavar="REPORT", help="a JSON report written by --json")
    _report_outputs(report, json_help="the JSON report again")
    _display_options(report)
    _github_option(report, "a job summary")

    merge = commands.add_parser(
        "merge",
        help="combine the JSON reports of a sharded run (--shard K/N) into one; exits with the "
        "merged verdict's code",
    )
    merge.add_argument("reports", metavar="REPORT", nargs="+", help="the shards' JSON reports")
    _report_outputs(merge, json_help="the merged JSON report")
    merge.add_argument(
        "--allow-partial",
        action="store_true",
        help="merge even when shards are missing (the output says which)",
    )
    _display_options(merge)
    _github_option(merge, "a job summary")

    compare = commands.add_parser(
        "compare",
        help="compare a head report with its base: pass rates, intervals and exact tests per "
        "probe; exits with the head's verdict's code",
    )
    compare.add_argument("base", metavar="BASE", help="the base's JSON report (e.g. from main)")
    compare.add_argument("head", metavar="HEAD", help="the head's JSON report")
    _report_outputs(compare, COMPARISON_FORMATS)
    compare.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="also exit 1 when a probe is significantly worse than in the base",
    )

    validate = commands.add_parser(
        "validate",
        help="check a suite without running it; with --repeat, state what the repeats promise",
    )
    validate.add_argument("config", metavar="CONFIG", help="the suite (a JSON file)")
    validate.add_argument(
        "--scenario", action="append", metavar="ID", help="only this scenario (repeatable)"
    )
    _repeat_arguments(validate)

    commands.add_parser("schema", help="print the suite's JSON Schema")

    imports = commands.add_parser(
        "import",
        help="convert an exported conversation (a JSON message list, an object with "
        '"messages", or JSONL) into a history file a scenario can name',
    )
    imports.add_argument("source", metavar="FILE", help="the export")
    imports.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="the history file to write (default: beside FILE, NAME.history.jsonl)",
    )
    imports.add_argument(
        "--force", action="store_true", help="replace OUT if it exists (default: refuse)"
    )
    _tools_commands(commands.add_parser("tools", help="tools over MCP (docs/mcp.md)"))
    return parser


def _timeout(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value <= 3600:
        shown = text if len(text) <= 20 else text[:19] + "…"
        raise argparse.ArgumentTypeError(
            f"expected seconds above 0 and at most 3600, got {shown!r}"
        )
    return value


def _tools_commands(tools: argparse.ArgumentParser) -> None:
    """`tools import --mcp -- COMMAND…` and `tools serve --url URL`."""
    commands = tools.add_subparsers(dest="tools_command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    imports = commands.add_parser(
        "import",
        help="draft a suite's `tools` block from an MCP server's tools/list, for review",
        description="Start the MCP server COMMAND (over stdio), list its tools and write a "
        "`tools` block for a suite: each tool's name, description and parameters as the server "
        "gives them, and a placeholder mock to replace.",
    )
    imports.add_argument(
        "--mcp",
        action="store_true",
        required=True,
        help="COMMAND is an MCP server that speaks over stdio (the only source, for now)",
    )
    imports.add_argument(
        "-o", "--output", metavar="OUT", help="write the block to OUT (default: stdout)"
    )
    imports.add_argument(
        "--force", action="store_true", help="replace OUT if it exists (default: refuse)"
    )
    imports.add_argument(
        "--timeout",
        type=_timeout,
        metavar="SECONDS",
        help="give up when the server has not listed its tools by then (default 60)",
    )
    imports.add_argument(
        "server_command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND…",
        help="the server program and its arguments, after --",
    )
    serve = commands.add_parser(
        "serve",
        help="for agents: a session of RuleDrift's MCP mock server, over stdin and stdout",
        description="The stdio bridge to a session of RuleDrift's MCP mock server: an agent "
        "framework that starts MCP servers as programs runs this command (RuleDrift hands it "
        "over in the request's context.mcp.command). Every call is answered and recorded by "
        "the run.",
    )
    serve.add_argument(
        "--url",
        required=True,
        metavar="URL",
        help="the session's URL (context.mcp.url): http://127.0.0.1:PORT/mcp/TOKEN",
    )


def tools_command(args: argparse.Namespace) -> tuple[str, ...]:
    """The server command of `tools import`, without the `--` that separates it."""
    command = list(args.server_command)
    if command[:1] == ["--"]:
        command = command[1:]
    return tuple(command)


def run_request(args: argparse.Namespace) -> tuple[RunRequest, Display]:
    """The parsed `run` arguments as the application's request and the display choices."""
    from ruledrift.app import RunRequest  # imported late: `--help` stays fast
    from ruledrift.app.value_checks import parse_shard
    from ruledrift.console.commands import Display

    request = RunRequest(
        config=Path(args.config),
        reports=report_paths(args),
        include_responses=args.include_responses,
        concurrency=args.concurrency,
        scenarios=tuple(args.scenario or ()),
        target=target_overrides(args),
        policy=verdict_policy(args),
        shard=parse_shard(args.shard, os.environ) if args.shard else None,
        shard_balance=Path(args.shard_balance) if args.shard_balance else None,
        max_calls=args.max_calls,
        seed=args.seed,
        variants=tuple(v.strip() for v in args.variants.split(",")) if args.variants else (),
    )
    return request, Display(quiet=args.quiet, no_color=args.no_color, github=args.github)


def verdict_policy(args: argparse.Namespace) -> VerdictPolicy:
    """The repeat options as a policy."""
    from ruledrift.data import VerdictPolicy

    return VerdictPolicy(
        repeat=args.repeat,
        min_pass_rate=args.min_pass_rate,
        holds_at=args.holds_at,
        drifted_at=args.drifted_at,
        max_repeat=args.max_repeat,
        inconclusive_passes=args.inconclusive == "pass",
    )


def target_overrides(args: argparse.Namespace) -> TargetOverrides:
    from ruledrift.app import TargetOverrides

    return TargetOverrides(
        model=args.model,
        base_url=args.base_url,
        start_ollama=args.start_ollama,
        models_dir=Path(args.models_dir) if args.models_dir else None,
    )


def parse_run(argv: Sequence[str]) -> tuple[RunRequest, Display]:
    """`run …` arguments (as the action's `args` input extends them) to a request; raises
    UsageError."""
    args = build_parser().parse_args(list(argv))
    if args.command != "run":
        raise UsageError(f"expected `run` arguments, got {args.command!r}")
    return run_request(args)
