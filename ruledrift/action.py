"""The container's entrypoint (entrypoint.py calls `main`): RuleDrift as a GitHub Docker
action, or the `ruledrift` CLI.

Action mode (the runner sets one `INPUT_<NAME>` variable per input of action.yml, hyphens kept:
`INPUT_BASE-URL`): check the inputs, build the `ruledrift run` arguments, run the CLI in this
process, write the step outputs to `$GITHUB_OUTPUT`, give the files the run wrote back to the
owner of the workspace, and exit with the CLI's exit code. Inputs: action_inputs.py; giving
files back: action_files.py. Annotations and the job summary come
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from ruledrift import cli
from ruledrift.action_files import created_root, give_back
from ruledrift.action_inputs import (
    DOCS,
    InputError,
    Problem,
    Settings,
    is_action,
    parse_inputs,
    read_inputs,
)
from ruledrift.adapters.http import is_loopback
from ruledrift.adapters.sidecar import server_answers
from ruledrift.config import load_suite
from ruledrift.errors import ExitCode, RuleDriftError
from ruledrift.model import Suite
from ruledrift.reports.workflow_commands import workflow_command

OUTPUTS = ("exit-code", "status", "probes", "passed", "failed", "errors", "json", "junit")

SHELLS = frozenset({"sh", "bash", "dash", "ash", "busybox"})
PROBE_TIMEOUT_S = 2.0


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
