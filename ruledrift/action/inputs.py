"""The GitHub Action's inputs: read from `INPUT_*` (hyphens kept, `INPUT_BASE-URL`), checked all
at once, each problem naming its input and how to fix it, and turned into `Settings`."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ruledrift.adapters.transport import url_problem

DOCS = "https://github.com/ruledrift/action/blob/v1/docs/github-action.md"

# The inputs of action.yml and their defaults (tests/test_action.py checks they agree). The
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
    "include-responses": "false",
    "concurrency": "1",
    "args": "",
}
# `ruledrift run` options that have an input of their own: refused in `args`, so that the
# reports the outputs are read from are the ones the inputs name.
OWN_OPTIONS: dict[str, str] = {
    "--json": "json",
    "--junit": "junit",
    "--model": "model",
    "--base-url": "base-url",
    "--start-ollama": "start-ollama",
    "--models-dir": "models-dir",
    "--include-responses": "include-responses",
    "--concurrency": "concurrency",
}
BOOLEANS = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
START_OLLAMA = ("auto", "true", "false")


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
    include_responses: bool
    concurrency: int
    args: tuple[str, ...]


def input_variable(name: str) -> str:
    """The variable the runner sets for an input: upper case, spaces to `_`, hyphens kept."""
    return "INPUT_" + name.replace(" ", "_").upper()


def read_inputs(environ: Mapping[str, str]) -> dict[str, str]:
    """Every input, trimmed like actions/toolkit's getInput; missing ones take their default."""
    return {
        name: environ.get(input_variable(name), default).strip() for name, default in INPUTS.items()
    }


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


def _config_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    config = inputs["config"]
    if not config:
        yield Problem(
            "config",
            'input "config" is required: the path of your suite relative to the repository root, '
            "e.g. `config: rules/suite.json`",
        )
    elif not (cwd / config).is_file():
        yield Problem(
            "config",
            f'input "config": no file {config!r} in the workspace: give the suite\'s path relative '
            "to the repository root, and check out the repository first (actions/checkout)",
        )


def _server_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    start = inputs["start-ollama"].lower()
    if start not in START_OLLAMA:
        got = inputs["start-ollama"]
        yield Problem(
            "start-ollama", f'input "start-ollama" must be auto, true or false, got {got!r}'
        )
    if not inputs["base-url"]:
        return
    problem = url_problem(inputs["base-url"])  # never echoes the URL: it may hold a password
    if problem:
        yield Problem("base-url", f'input "base-url": {problem}')
    elif start == "true":
        yield Problem(
            "start-ollama",
            'input "start-ollama" is true, which runs a server of its own, but "base-url" names '
            "another: remove one of them (or use start-ollama: auto)",
        )


def _number_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    value = inputs["concurrency"]
    if not (value.isascii() and value.isdigit() and int(value) >= 1):
        yield Problem(
            "concurrency",
            f'input "concurrency" must be a whole number of at least 1, got {value!r}',
        )


def _boolean_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    for name in ("pull", "include-responses"):
        if inputs[name] not in BOOLEANS:
            got = inputs[name]
            yield Problem(name, f'input "{name}" must be true or false, got {got!r}')


def _report_problems(inputs: Mapping[str, str], cwd: Path) -> Iterator[Problem]:
    if inputs["json"] and inputs["json"] == inputs["junit"]:
        yield Problem("junit", 'inputs "json" and "junit" name the same file: give each its own')


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
        if replaced_by:
            option = token.split("=", 1)[0]
            yield Problem(
                "args", f'input "args" contains {option}: use the input "{replaced_by}" instead'
            )


CHECKS = (
    _config_problems,
    _server_problems,
    _number_problems,
    _boolean_problems,
    _report_problems,
    _args_problems,
)


def parse_inputs(inputs: Mapping[str, str], cwd: Path) -> Settings:
    """The checked inputs; raises InputError listing every wrong one."""
    problems = [problem for check in CHECKS for problem in check(inputs, cwd)]
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
        include_responses=BOOLEANS[inputs["include-responses"]],
        concurrency=int(inputs["concurrency"]),
        args=tuple(shlex.split(inputs["args"])),
    )
