"""The container's entrypoint (entrypoint.py calls `main`): RuleDrift as a GitHub Docker
action, or the `ruledrift` CLI.

Action mode (the runner sets one `INPUT_<NAME>` variable per input of action.yml, hyphens kept:
`INPUT_BASE-URL`): check the inputs, build the `ruledrift run` arguments, run the CLI in this
process, write the step outputs to `$GITHUB_OUTPUT`, give the files the run wrote back to the
owner of the workspace, and exit with the CLI's exit code. Annotations and the job summary come
from `ruledrift run` itself (it sees GITHUB_ACTIONS=true); this file only reports bad inputs.

Anything else is the CLI: `docker run IMAGE run suite.json` passes its arguments to
`ruledrift.cli.main`, and a shell command (`sh -c …`, as GitLab's runner sends one) runs in
that shell. See docs/github-action.md and docs/gitlab-ci.md.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn
from urllib.parse import urlsplit

from ruledrift import cli
from ruledrift.adapters.http import is_loopback
from ruledrift.adapters.sidecar import server_answers
from ruledrift.config import load_suite, url_problem
from ruledrift.errors import ExitCode, RuleDriftError
from ruledrift.model import Suite
from ruledrift.reports.workflow_commands import workflow_command

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
OUTPUTS = ("exit-code", "status", "probes", "passed", "failed", "errors", "json", "junit")

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
SHELLS = frozenset({"sh", "bash", "dash", "ash", "busybox"})
PROBE_TIMEOUT_S = 2.0


# --- inputs ---------------------------------------------------------------------------------------


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


# --- workflow commands and outputs ----------------------------------------------------------------


def error_command(message: str, title: str) -> str:
    return workflow_command("error", message, {"title": title})


def report_problems(problems: Sequence[Problem], summary_file: str) -> None:
    """Each wrong input as an `::error::` annotation, and a short note in the job summary."""
    for problem in problems:
        title = f"RuleDrift: input {problem.input}"
        print(error_command(f"{problem.message} (see {DOCS}#inputs)", title), flush=True)
    if summary_file:
        lines = ["### RuleDrift did not run: wrong action inputs", ""]
        lines += [f"- `{p.input}`: {_markdown(p.message)}" for p in problems]
        lines += [
            "",
            f"The inputs are described in [the action's documentation]({DOCS}#inputs).",
            "",
        ]
        with open(summary_file, "a", encoding="utf-8") as summary:
            summary.write("\n".join(lines) + "\n")


def _markdown(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("\n", " ")


def write_outputs(path: str, values: Mapping[str, str]) -> None:
    """Append `name<<DELIM` / value / `DELIM` blocks with a random delimiter, as actions/toolkit."""
    if not path:
        print(
            "ruledrift action: GITHUB_OUTPUT is not set: no step outputs written", file=sys.stderr
        )
        return
    with open(path, "a", encoding="utf-8") as outputs:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            if delimiter in value:  # cannot happen with a random delimiter; never write it broken
                raise ValueError(f"output {name} contains its delimiter")
            outputs.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def outputs_for(
    code: int, report: Mapping[str, Any] | None, json_path: str, junit_path: str
) -> dict[str, str]:
    """The step outputs: counts and status from the JSON report when the run wrote one."""
    summary = report.get("summary") if report else None
    values = {"exit-code": str(code), "status": "error"}
    for name in ("probes", "passed", "failed", "errors"):
        values[name] = "0"
    if isinstance(summary, Mapping):
        values["status"] = str(summary.get("status", "error"))
        for name in ("probes", "passed", "failed", "errors"):
            values[name] = str(summary.get(name, 0))
    values["json"] = json_path
    values["junit"] = junit_path
    return values


# --- the managed Ollama server (`start-ollama`) -------------------------------------------------


def _shown(url: str) -> str:
    """A URL for the log, without credentials."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def decide_sidecar(settings: Settings, suite: Suite | None) -> tuple[bool, str]:
    """Whether to pass --start-ollama, and why (for the log)."""
    if settings.start_ollama != "auto":
        return settings.start_ollama == "true", f"start-ollama is {settings.start_ollama}"
    if suite is None:
        return False, "start-ollama is auto and the suite does not load (the run says why)"
    adapter = suite.adapter
    if adapter.type != "ollama":
        return False, f"start-ollama is auto and the suite uses the {adapter.type} adapter"
    url = settings.base_url or adapter.base_url
    if not is_loopback(url):
        return False, f"start-ollama is auto and {_shown(url)} is not a loopback address"
    if server_answers(url, PROBE_TIMEOUT_S):
        return False, f"start-ollama is auto and a server answers at {_shown(url)}"
    return True, f"start-ollama is auto and nothing answers at {_shown(url)}"


def try_load_suite(config: str) -> Suite | None:
    try:
        return load_suite(Path(config))
    except RuleDriftError:
        return None


# --- the CLI arguments ----------------------------------------------------------------------------


def _path_argument(path: str) -> str:
    return f"./{path}" if path.startswith("-") else path


def target_arguments(settings: Settings, sidecar: bool) -> list[str]:
    """--model, --base-url or --start-ollama/--models-dir: shared by `run` and `pull`."""
    argv = ["--model", settings.model] if settings.model else []
    if sidecar:
        argv.append("--start-ollama")
        if settings.models_dir:
            argv += ["--models-dir", _path_argument(settings.models_dir)]
    elif settings.base_url:
        argv += ["--base-url", settings.base_url]
    return argv


def pull_arguments(settings: Settings, suite: Suite | None, sidecar: bool) -> list[str] | None:
    """`ruledrift pull` before the run: for the ollama adapter and a server of the user's own
    (the managed server pulls a missing model itself)."""
    if not settings.pull or sidecar or suite is None or suite.adapter.type != "ollama":
        return None
    return ["pull", _path_argument(settings.config), *target_arguments(settings, sidecar)]


def run_arguments(settings: Settings, sidecar: bool, json_path: str) -> list[str]:
    argv = ["run", _path_argument(settings.config), "--json", _path_argument(json_path)]
    if settings.junit:
        argv += ["--junit", _path_argument(settings.junit)]
    if settings.include_responses:
        argv.append("--include-responses")
    argv += ["--concurrency", str(settings.concurrency)]
    argv += target_arguments(settings, sidecar)
    return [*argv, *settings.args]


# --- files written as root, given back to the workspace's owner -----------------------------------


def _inside(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def created_root(path: Path, boundary: Path) -> Path | None:
    """Before the run: what the run will own when it writes `path` — its top-most missing
    ancestor below `boundary`, or `path` itself when it exists. None outside `boundary`."""
    path, boundary = Path(os.path.abspath(path)), Path(os.path.abspath(boundary))
    if not _inside(path, boundary) or path == boundary:
        return None
    root = path
    for parent in path.parents:
        if parent == boundary or parent.exists():
            break
        root = parent
    return root


def _walk(root: Path) -> Iterator[Path]:
    yield root
    if root.is_dir() and not root.is_symlink():
        for directory, subdirectories, files in os.walk(root):
            for name in [*subdirectories, *files]:
                yield Path(directory, name)


def give_back(roots: Sequence[Path], owner: Path) -> None:
    """Chown what the run wrote (as root) to the owner of `owner`, so later steps and checkouts
    on self-hosted runners can change and delete it (actions/runner#434). Never follows links."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    try:
        stat = owner.stat()
    except OSError:
        return
    if stat.st_uid == 0 and stat.st_gid == 0:
        return
    for root in roots:
        if not root.exists() and not root.is_symlink():
            continue
        for path in _walk(root):
            try:
                os.chown(path, stat.st_uid, stat.st_gid, follow_symlinks=False)
            except OSError as error:
                print(f"ruledrift action: cannot give {path} back: {error}", file=sys.stderr)


def _fingerprint(path: str) -> tuple[int, int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


def _read_report(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as report:
            data = json.load(report)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- the two modes --------------------------------------------------------------------------------


def log(message: str) -> None:
    print(f"ruledrift action: {message}", flush=True)


def run_commands(settings: Settings, suite: Suite | None, sidecar: bool, json_path: str) -> int:
    """`ruledrift pull` when asked for, then `ruledrift run`, in this process."""
    pull = pull_arguments(settings, suite, sidecar)
    if pull:
        log(f"ruledrift {shlex.join(pull)}")
        code = cli.main(pull)
        if code != 0:
            return code
    run = run_arguments(settings, sidecar, json_path)
    log(f"ruledrift {shlex.join(run)}")
    return cli.main(run)


def run_action(environ: Mapping[str, str], cwd: Path) -> int:
    workspace = Path(environ.get("GITHUB_WORKSPACE") or cwd)
    outputs_file = environ.get("GITHUB_OUTPUT", "")
    try:
        settings = parse_inputs(read_inputs(environ), cwd)
    except InputError as error:
        report_problems(error.problems, environ.get("GITHUB_STEP_SUMMARY", ""))
        write_outputs(outputs_file, outputs_for(int(ExitCode.USAGE), None, "", ""))
        return int(ExitCode.USAGE)

    suite = try_load_suite(settings.config)
    sidecar, reason = decide_sidecar(settings, suite)
    log(f"{reason}: {'starting' if sidecar else 'not starting'} a managed Ollama server")

    owned = [cwd / p for p in (settings.json, settings.junit) if p]
    if sidecar and settings.models_dir:
        owned.append(cwd / settings.models_dir)
    roots = [root for path in owned if (root := created_root(path, workspace))]
    home = environ.get("HOME")
    if sidecar and home:  # `ollama serve` creates its key pair in ~/.ollama
        roots += [root for root in [created_root(Path(home, ".ollama"), Path(home))] if root]

    with tempfile.TemporaryDirectory(prefix="ruledrift-action-") as scratch:
        json_path = settings.json or os.path.join(scratch, "ruledrift-report.json")
        before = {path: _fingerprint(path) for path in (json_path, settings.junit) if path}
        code = int(ExitCode.INTERNAL)  # the outputs' exit-code if anything below raised
        try:
            code = run_commands(settings, suite, sidecar, json_path)
        finally:
            written = {p for p, seen in before.items() if _fingerprint(p) not in (None, seen)}
            report = _read_report(json_path) if json_path in written else None
            json_output = settings.json if settings.json in written else ""
            junit_output = settings.junit if settings.junit in written else ""
            write_outputs(outputs_file, outputs_for(code, report, json_output, junit_output))
            give_back(roots, workspace)
    return code


def run_shell(argv: Sequence[str]) -> NoReturn:
    """Hand a shell command through (GitLab's runner starts the job's shell this way)."""
    os.execvp(argv[0], list(argv))  # noqa: S606 - the shell the caller asked for, with its argv


def run_cli(argv: Sequence[str]) -> int:
    if argv and os.path.basename(argv[0]) in SHELLS:
        run_shell(argv)
    return cli.main(list(argv))


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    if is_action(argv, environ):
        return run_action(environ, Path.cwd())
    return run_cli(argv)
