"""The GitHub Action's inputs: read from `INPUT_*` (hyphens kept, `INPUT_BASE-URL`), checked all
at once, each problem naming its input and how to fix it, and turned into `Settings`."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ruledrift.action.files import inside, real_path
from ruledrift.app.options import CONCURRENCY, REPORT_FORMATS, action_inputs, whole_range
from ruledrift.app.value_checks import (
    Shard,
    parse_shard,
    path_length_problem,
    report_path_problem,
    url_problem,
)
from ruledrift.errors import UsageError
from ruledrift.text import preview, terminal_safe

DOCS = "https://github.com/ruledrift/action/blob/v1/docs/github-action.md"

# The inputs of action.yml and their defaults (tests/action/test_action.py checks they agree). The
# runner always sets every declared input; a variable that is missing (the image run by hand
# with only INPUT_CONFIG) falls back to its default here.
INPUTS: dict[str, str] = {
    "config": "",
    "model": "",
    "base-url": "",
    "start-ollama": "auto",
    "pull": "true",
    "models-dir": ".ruledrift/ollama-models",
    "json": "ruledrift-report.json",
    "junit": "ruledrift-junit.xml",
    "html": "",
    "include-responses": "false",
    "concurrency": "1",
    "repeat": "1",
    "min-pass-rate": "",
    "shard": "",
    "shard-balance": "",
    "baseline": "",
    "args": "",
}
# `ruledrift run` options that have an input of their own (app/options.py says which): refused
# in `args`, so that the reports the outputs are read from are the ones the inputs name.
OWN_OPTIONS: dict[str, str] = action_inputs()
BOOLEANS = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
START_OLLAMA = ("auto", "true", "false")
# `ruledrift` options that print and exit without running anything: refused in `args`, or the
# step would pass without a run.
EXITING_OPTIONS = ("--help", "--version")
# `ruledrift run` options the action does not take: the file would be written past the
# workspace checks and the hand-back of files, for a format GitHub does not read.
NOT_IN_ACTION: dict[str, str] = {
    "--codequality": "GitLab's Code Quality report; on GitHub the annotations show the same",
}
# inputs that name a report file, each its format's
REPORT_INPUTS = tuple(o.action_input for o in REPORT_FORMATS if o.action_input is not None)
SHOWN_CHARS = 80  # of an input's value in a message


@dataclass(frozen=True)
class Problem:
    """A wrong input: which one, and a message that says how to fix it."""

    input: str
    message: str


class InputError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class Settings:
    config: str
    model: str
    base_url: str
    start_ollama: Literal["auto", "true", "false"]
    pull: bool
    models_dir: str
    json: str
    junit: str
    html: str
    include_responses: bool
    concurrency: int
    repeat: int | Literal["auto"]
    min_pass_rate: float | None
    shard: Shard | None
    shard_balance: str
    baseline: str
    args: tuple[str, ...]

    def reports(self) -> dict[str, Path]:
        """The reports the inputs name, by format (an empty input: not written)."""
        given = {"json": self.json, "junit": self.junit, "html": self.html}
        return {
            option.name: Path(path)
            for option in REPORT_FORMATS
            if (path := given.get(option.action_input or ""))
        }


def input_variable(name: str) -> str:
    """The variable the runner sets for an input: upper case, spaces to `_`, hyphens kept."""
    return "INPUT_" + name.replace(" ", "_").upper()


def read_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """Every input, trimmed like actions/toolkit's getInput; missing ones take their default."""
    return {
        name: environ.get(input_variable(name), default).strip() for name, default in INPUTS.items()
    }


def unknown_inputs(environ: Mapping[str, str]) -> list[str]:
    """The `INPUT_*` variables that name no input of this version, sorted: passed by an action.yml
    newer than this image (a workflow on `@main` between releases), or a misspelt `with:` key of
    `uses: docker://…`, which no runner checks. They are ignored; the run warns about them."""
    known = {input_variable(name) for name in INPUTS}
    return sorted(name for name in environ if name.startswith("INPUT_") and name not in known)


def is_action(argv: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Action mode: the runner set INPUT_CONFIG, or GITHUB_ACTIONS with inputs and no arguments."""
    if input_variable("config") in environ:
        return True
    has_inputs = any(name.startswith("INPUT_") for name in environ)
    return environ.get("GITHUB_ACTIONS") == "true" and has_inputs and not argv


def _own_option(token: str) -> str | None:
    """The input that replaces `token` when it is (an abbreviation of) one of OWN_OPTIONS."""
    name = token.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return None
    for option, input_name in OWN_OPTIONS.items():
        if option.startswith(name):
            return input_name
    return None


def _not_in_action(token: str) -> str | None:
    name = token.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 5:
        return None
    return next((why for option, why in NOT_IN_ACTION.items() if option.startswith(name)), None)


def exiting_option(argument: str) -> str | None:
    """The option `argument` is when it makes `ruledrift` print and exit without running (`-h`,
    an abbreviation of `--help` or `--version`), else None."""
    if argument.startswith("-h"):
        return "--help"
    name = argument.split("=", 1)[0]
    if not name.startswith("--") or len(name) < 3:
        return None
    return next((option for option in EXITING_OPTIONS if option.startswith(name)), None)


def quoted(value: str) -> str:
    """An input's value for a message: quoted, cut, control characters shown as escapes."""
    return f"'{preview(value, SHOWN_CHARS)}'"


def has_control(value: str) -> bool:
    """Whether `value` holds a line break or another control character (or an undecodable byte):
    text that would be echoed into the log differently from how it reads."""
    return terminal_safe(value) != value


def _on_one_line(name: str, value: str, what: str) -> Problem:
    return Problem(
        name,
        f'input "{name}" contains a line break or a control character ({quoted(value)}): '
        f"give {what} on one line, without control characters",
    )


def _path_problem(name: str, value: str, cwd: Path) -> str | None:
    """What makes an input's path unusable before anything runs: control characters, a length
    the file system refuses, or a real path (symbolic links followed) outside the workspace."""
    path = cwd / value
    too_long = path_length_problem(path)
    if too_long:
        return f'input "{name}": {too_long}'
    try:
        real, workspace = real_path(path), real_path(cwd)
    except (OSError, ValueError) as error:
        return f'input "{name}": cannot use the path {quoted(value)} ({error})'
    if not inside(real, workspace):
        return (
            f'input "{name}": {quoted(value)} leads outside the workspace (to {quoted(str(real))}, '
            "symbolic links followed): give a path inside the repository, through no symbolic "
            "link that leads out of it"
        )
    return None


def _config_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    config = inputs["config"]
    if not config:
        yield Problem(
            "config",
            'input "config" is required: the path of your suite relative to the repository root, '
            "e.g. `config: rules/suite.json`",
        )
    elif has_control(config):
        yield _on_one_line("config", config, "the suite's path")
    elif problem := _path_problem("config", config, cwd):
        yield Problem("config", problem)
    elif not _is_file(cwd / config):
        yield Problem(
            "config",
            f'input "config": no file {quoted(config)} in the workspace: give the suite\'s path '
            "relative to the repository root, and check out the repository first "
            "(actions/checkout)",
        )


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def _server_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    start = inputs["start-ollama"].lower()
    if start not in START_OLLAMA:
        got = quoted(inputs["start-ollama"])
        yield Problem(
            "start-ollama", f'input "start-ollama" must be auto, true or false, got {got}'
        )
    if not inputs["base-url"]:
        return
    if has_control(inputs["base-url"]):  # never echoed: a URL may hold a password
        yield Problem(
            "base-url",
            'input "base-url" contains a line break or a control character: give the URL on one '
            "line, without control characters",
        )
    elif problem := url_problem(inputs["base-url"]):  # never echoes the URL either
        yield Problem("base-url", f'input "base-url": {problem}')
    elif start == "true":
        yield Problem(
            "start-ollama",
            'input "start-ollama" is true, which runs a server of its own, but "base-url" names '
            "another: remove one of them (or use start-ollama: auto)",
        )


def _number_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    value = inputs["concurrency"]
    digits = value.lstrip("0")  # compared as text first: int() of 5,000 digits raises
    low, high = CONCURRENCY
    if not (
        value.isascii()
        and value.isdigit()
        and len(digits) <= len(str(high))
        and low <= int(value) <= high
    ):
        yield Problem(
            "concurrency",
            f'input "concurrency" must be a whole number of at least {low} and at most {high}, '
            f"got {quoted(value)}",
        )


def _repeat_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    repeat, rate = inputs["repeat"], inputs["min-pass-rate"]
    low, high = whole_range("repeat")
    digits = repeat.isascii() and repeat.isdigit() and len(repeat) <= len(str(high))
    if repeat != "auto" and not (digits and low <= int(repeat) <= high):
        yield Problem(
            "repeat",
            f'input "repeat" must be auto or a whole number from {low} to {high}, '
            f"got {quoted(repeat)}",
        )
    if rate and _rate(rate) is None:
        yield Problem(
            "min-pass-rate",
            f'input "min-pass-rate" must be a number above 0 and at most 1, got {quoted(rate)}',
        )
    elif rate and repeat == "auto":
        yield Problem(
            "min-pass-rate",
            'input "min-pass-rate" goes with a number of repeats: repeat: auto decides by itself',
        )


def _baseline_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    """A base report to compare with: a path inside the workspace (it need not exist: a first
    run on a branch has none, and the comparison is then skipped with a note)."""
    value = inputs["baseline"]
    if not value:
        return
    if has_control(value):
        yield _on_one_line("baseline", value, "the path")
    elif problem := _path_problem("baseline", value, cwd):
        yield Problem("baseline", problem)


def _shard_problems(
    inputs: Mapping[str, str], cwd: Path, environ: Mapping[str, str]
) -> Iterator[Problem]:
    """`shard`: K/N, or auto (read from the step's environment, as `--shard auto` reads it);
    `shard-balance`: a report inside the workspace, only with a shard."""
    if inputs["shard"]:
        try:
            parse_shard(inputs["shard"], environ)
        except UsageError as error:
            message = str(error).removeprefix("--shard: ").replace("--shard auto: ", "auto: ")
            yield Problem("shard", f'input "shard": {message}')
    balance = inputs["shard-balance"]
    if not balance:
        return
    if not inputs["shard"]:
        yield Problem(
            "shard-balance",
            'input "shard-balance" goes with "shard" (K/N or auto): it says how to cut the shards',
        )
    elif has_control(balance):
        yield _on_one_line("shard-balance", balance, "the path")
    elif problem := _path_problem("shard-balance", balance, cwd):
        yield Problem("shard-balance", problem)


def _rate(text: str) -> float | None:
    try:
        value = float(text) if len(text) <= 20 else -1.0
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def _model_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    if has_control(inputs["model"]):
        yield _on_one_line("model", inputs["model"], "the model's name")


def _boolean_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    for name in ("pull", "include-responses"):
        if inputs[name] not in BOOLEANS:
            got = quoted(inputs[name])
            yield Problem(name, f'input "{name}" must be true or false, got {got}')


def _models_dir_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    value = inputs["models-dir"]
    if not value:
        return
    if has_control(value):
        yield _on_one_line("models-dir", value, "the folder")
    elif problem := _path_problem("models-dir", value, cwd):
        yield Problem("models-dir", problem)
    elif os.path.exists(cwd / value) and not os.path.isdir(cwd / value):  # never raise
        yield Problem(
            "models-dir",
            f'input "models-dir": {quoted(value)} is not a folder: give a folder for the models '
            "(it is created when missing)",
        )


def _one_report_problem(name: str, value: str, cwd: Path) -> Problem | None:
    if has_control(value):
        return _on_one_line(name, value, "the report's path")
    problem = _path_problem(name, value, cwd)
    if problem is None and os.path.islink(cwd / value):
        problem = (
            f'input "{name}" ({quoted(value)}): is a symbolic link: the action does not write '
            "a report through a link (one committed in the repository could send it over "
            "another file); give the path of the file itself"
        )
    if problem is None and (unusable := report_path_problem(cwd / value)):
        problem = f'input "{name}" ({quoted(value)}): {unusable}'
    return Problem(name, problem) if problem else None


def _report_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    problems = [
        problem
        for name in REPORT_INPUTS
        if inputs[name] and (problem := _one_report_problem(name, inputs[name], cwd))
    ]
    yield from problems
    if problems:
        return
    reports = {name: real_path(cwd / inputs[name]) for name in REPORT_INPUTS if inputs[name]}
    seen: dict[Path, str] = {}
    for name, report in reports.items():
        if report in seen:
            yield Problem(
                name, f'inputs "{seen[report]}" and "{name}" name the same file: give each its own'
            )
        seen.setdefault(report, name)
    config = inputs["config"]
    for name, report in reports.items():
        if config and not has_control(config) and report == real_path(cwd / config):
            yield Problem(
                name, f'input "{name}" names the suite file itself: give the report its own path'
            )


def _args_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    try:
        args = shlex.split(inputs["args"])
    except ValueError as error:
        yield Problem(
            "args", f'input "args" cannot be split into arguments ({error}): check its quotes'
        )
        return
    for token in args:
        replaced_by = _own_option(token)
        exits = exiting_option(token)
        not_here = _not_in_action(token)
        if has_control(token):
            yield _on_one_line("args", token, "each argument")
        elif not_here:
            option = token.split("=", 1)[0]
            yield Problem(
                "args",
                f'input "args" contains {option}, which the action does not take: {not_here}',
            )
        elif replaced_by:
            option = token.split("=", 1)[0]
            yield Problem(
                "args", f'input "args" contains {option}: use the input "{replaced_by}" instead'
            )
        elif exits:
            yield Problem(
                "args",
                f'input "args" contains {quoted(token)} ({exits}), which makes ruledrift print '
                "and exit without running the suite: remove it (the options are listed in the "
                "action's documentation)",
            )


CHECKS = (
    _config_problems,
    _server_problems,
    _number_problems,
    _repeat_problems,
    _baseline_problems,
    _model_problems,
    _boolean_problems,
    _models_dir_problems,
    _report_problems,
    _args_problems,
)


def parse_inputs(
    inputs: Mapping[str, str], cwd: Path, environ: Mapping[str, str] | None = None
) -> Settings:
    """The checked inputs; raises InputError listing every wrong one. `environ`: the step's
    environment, where `shard: auto` reads its shard."""
    environ = environ or {}
    problems = [problem for check in CHECKS for problem in check(inputs, cwd)]
    problems += _shard_problems(inputs, cwd, environ)
    if problems:
        raise InputError(problems)
    start = inputs["start-ollama"].lower()
    return Settings(
        config=inputs["config"],
        model=inputs["model"],
        base_url=inputs["base-url"],
        start_ollama="true" if start == "true" else "false" if start == "false" else "auto",
        pull=BOOLEANS[inputs["pull"]],
        models_dir=inputs["models-dir"],
        json=inputs["json"],
        junit=inputs["junit"],
        html=inputs["html"],
        include_responses=BOOLEANS[inputs["include-responses"]],
        concurrency=int(inputs["concurrency"]),
        repeat="auto" if inputs["repeat"] == "auto" else int(inputs["repeat"]),
        min_pass_rate=_rate(inputs["min-pass-rate"]) if inputs["min-pass-rate"] else None,
        shard=parse_shard(inputs["shard"], environ) if inputs["shard"] else None,
        shard_balance=inputs["shard-balance"],
        baseline=inputs["baseline"],
        args=tuple(shlex.split(inputs["args"])),
    )
