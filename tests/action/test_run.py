"""entrypoint.py: the GitHub action's inputs, outputs, exit codes, sidecar decision and file
ownership, and the CLI pass-through. Run as a real process the way the runner runs the container:
cwd = the workspace, every declared input in `INPUT_*` (hyphens kept), GITHUB_OUTPUT and
GITHUB_STEP_SUMMARY files. Offline: command agents and loopback Ollama fakes only."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ruledrift
from ruledrift.action import files as action_files
from ruledrift.action import inputs as action_inputs
from ruledrift.action import outputs as action_outputs
from ruledrift.action import run as entrypoint
from ruledrift.app import targets
from ruledrift.data import VerdictPolicy
from ruledrift.results.shards import Shard
from ruledrift.run.verdicts import gate_odds
from tests.support import AGENTS
from tests.support.ollama_fake import OLLAMA_BIN, FakeOllama, free_port
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "entrypoint.py"
SCRIPTED = AGENTS / "scripted.py"
REPORT_OUTPUTS = (
    "exit-code",
    "status",
    "probes",
    "passed",
    "failed",
    "errors",
    "inconclusive",
    "vacuous",
    "json",
    "junit",
    "html",
    "regressions",
)


# --- helpers --------------------------------------------------------------------------------------


def parse_outputs(text: str) -> dict[str, str]:
    """Read `$GITHUB_OUTPUT` as the runner does: `name<<DELIM`, value lines, `DELIM`."""
    outputs: dict[str, str] = {}
    lines = iter(text.split("\n"))
    for line in lines:
        if not line:
            continue
        name, separator, delimiter = line.partition("<<")
        assert separator, f"not a heredoc output line: {line!r}"
        assert re.fullmatch(r"ghadelimiter_[0-9a-f-]{36}", delimiter), delimiter
        value: list[str] = []
        for value_line in lines:
            if value_line == delimiter:
                break
            value.append(value_line)
        else:
            raise AssertionError(f"output {name} has no closing delimiter")
        assert name not in outputs, f"output {name} written twice"
        outputs[name] = "\n".join(value)
    return outputs


def workflow_commands(log: str) -> list[tuple[str, str]]:
    """The workflow commands the runner would act on in a log: (command with properties,
    message). Like actions/runner: leading whitespace is trimmed, and nothing between
    `::stop-commands::TOKEN` and `::TOKEN::` is a command."""
    commands: list[tuple[str, str]] = []
    stopped_by: str | None = None
    for raw in log.splitlines():
        line = raw.lstrip()
        if stopped_by is not None:
            if line == f"::{stopped_by}::":
                stopped_by = None
            continue
        match = re.match(r"::([^:]+?)::(.*)$", line)
        if not match:
            continue
        command, message = match.groups()
        if command == "stop-commands":
            stopped_by = message
            continue
        commands.append((command, message))
    return commands


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    prefixes = ("CI", "GITHUB_", "INPUT_", "OLLAMA_", "RULEDRIFT_", "FAKE_OLLAMA_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(extra or {})
    return env


class Action:
    """Runs entrypoint.py in a workspace the way the runner runs the action's container."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "workspace"
        self.workspace.mkdir()
        self.files = tmp_path / "github"
        self.files.mkdir()
        self.home = tmp_path / "home"
        self.home.mkdir()

    def run(
        self,
        inputs: Mapping[str, str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        argv: tuple[str, ...] = (),
        timeout: float = 120,
    ) -> Run:
        output = self.files / "output"
        summary = self.files / "summary"
        output.write_text("")
        summary.write_text("")
        values = {**action_inputs.INPUTS, **(inputs or {})}  # the runner sets every declared input
        variables = {f"INPUT_{name.upper()}": value for name, value in values.items()}
        full_env = clean_env(
            {
                **variables,
                "GITHUB_ACTIONS": "true",
                "GITHUB_OUTPUT": str(output),
                "GITHUB_STEP_SUMMARY": str(summary),
                "GITHUB_WORKSPACE": str(self.workspace),
                "HOME": str(self.home),
                **(env or {}),
            }
        )
        done = subprocess.run(
            [sys.executable, str(ENTRYPOINT), *argv],
            cwd=self.workspace,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Run(
            done.returncode,
            done.stdout,
            done.stderr,
            parse_outputs(output.read_text()),
            summary.read_text(),
        )

    def suite(self, *agent_args: str, data: dict[str, Any] | None = None) -> str:
        suite = data or base_suite(sys.executable, [str(SCRIPTED), *agent_args])
        write_suite(self.workspace, suite)
        return "suite.json"


@pytest.fixture
def action(tmp_path: Path) -> Action:
    return Action(tmp_path)


def with_stand_in() -> dict[str, str]:
    """The stand-in `ollama` first on PATH (tests/ollama_fake/bin/ollama)."""
    return {"PATH": f"{OLLAMA_BIN.parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def ollama_suite(base_url: str, model: str = "qwen3:1.7b") -> dict[str, Any]:
    data = base_suite()
    data["adapter"] = {"type": "ollama", "model": model, "baseUrl": base_url}
    return data


def two_scenarios(action: Action) -> str:
    data = base_suite(sys.executable, [str(SCRIPTED)])
    second = json.loads(json.dumps(data["scenarios"][0]))
    second["id"] = "second"
    second["probes"] = second["probes"][:1]
    data["scenarios"].append(second)
    return action.suite(data=data)


# --- outcomes: passed, failed, error --------------------------------------------------------------


def test_a_passing_suite(action: Action) -> None:
    config = action.suite()
    run = action.run({"config": config})
    assert run.code == 0, run.log
    assert run.outputs == {
        "exit-code": "0",
        "status": "passed",
        "probes": "2",
        "passed": "2",
        "failed": "0",
        "errors": "0",
        "inconclusive": "0",
        "vacuous": "0",
        "json": "ruledrift-report.json",
        "junit": "ruledrift-junit.xml",
        "html": "",
        "regressions": "",
    }
    report = json.loads((action.workspace / "ruledrift-report.json").read_text())
    assert report["summary"]["status"] == "passed"
    assert report["suite"]["config"] == config
    assert (action.workspace / "ruledrift-junit.xml").read_text().startswith("<?xml")


def test_a_suite_whose_agent_breaks_a_rule_exits_1(action: Action) -> None:
    run = action.run({"config": action.suite("--leak-after", "1")})
    assert run.code == 1, run.log
    assert run.outputs["exit-code"] == "1"
    assert run.outputs["status"] == "failed"
    assert (run.outputs["passed"], run.outputs["failed"], run.outputs["errors"]) == ("1", "1", "0")


def test_a_suite_whose_agent_crashes_exits_3(action: Action) -> None:
    run = action.run({"config": action.suite("--crash-on", "probe")})
    assert run.code == 3, run.log
    assert run.outputs["exit-code"] == "3"
    assert run.outputs["status"] == "error"
    assert (run.outputs["probes"], run.outputs["errors"]) == ("2", "2")


def test_a_config_error_exits_2_with_error_outputs(action: Action) -> None:
    (action.workspace / "suite.json").write_text('{"version": 1}')
    run = action.run({"config": "suite.json"})
    assert run.code == 2, run.log
    assert "problem(s) in the configuration" in run.stderr
    assert run.outputs["exit-code"] == "2"
    assert run.outputs["status"] == "error"
    assert run.outputs["probes"] == "0"
    assert run.outputs["json"] == ""


def test_a_stale_report_is_not_read_as_this_runs_result(action: Action) -> None:
    stale = {"summary": {"status": "passed", "probes": 9, "passed": 9, "failed": 0, "errors": 0}}
    (action.workspace / "ruledrift-report.json").write_text(json.dumps(stale))
    (action.workspace / "suite.json").write_text("{")
    run = action.run({"config": "suite.json"})
    assert run.code == 2
    assert (run.outputs["status"], run.outputs["probes"], run.outputs["json"]) == ("error", "0", "")


# --- reports and the args input -------------------------------------------------------------------


def test_reports_are_written_at_the_input_paths(action: Action) -> None:
    run = action.run(
        {"config": action.suite(), "json": "out/deep/report.json", "junit": "out/junit.xml"}
    )
    assert run.code == 0, run.log
    assert (run.outputs["json"], run.outputs["junit"]) == ("out/deep/report.json", "out/junit.xml")
    assert json.loads((action.workspace / "out/deep/report.json").read_text())["summary"]
    assert (action.workspace / "out/junit.xml").is_file()
    assert not (action.workspace / "ruledrift-report.json").exists()


def test_empty_report_inputs_write_no_reports_but_still_give_outputs(action: Action) -> None:
    run = action.run({"config": action.suite("--leak-after", "1"), "json": "", "junit": ""})
    assert run.code == 1, run.log
    assert (run.outputs["status"], run.outputs["failed"]) == ("failed", "1")
    assert (run.outputs["json"], run.outputs["junit"]) == ("", "")
    assert sorted(p.name for p in action.workspace.iterdir()) == ["suite.json"]


def test_include_responses_reaches_the_reports(action: Action) -> None:
    run = action.run({"config": action.suite(), "include-responses": "true"})
    assert run.code == 0, run.log
    report = json.loads((action.workspace / "ruledrift-report.json").read_text())
    assert report["responsesIncluded"] is True
    assert report["scenarios"][0]["probes"][0]["response"]["text"] == "I cannot share that."


def test_the_args_input_is_split_like_a_shell_and_passed_to_run(action: Action) -> None:
    config = two_scenarios(action)
    run = action.run({"config": config, "args": "--scenario 'second'  --quiet"})
    assert run.code == 0, run.log
    report = json.loads((action.workspace / "ruledrift-report.json").read_text())
    assert [s["id"] for s in report["scenarios"]] == ["second"]
    assert run.outputs["probes"] == "1"
    assert "scenario smalltalk" not in run.stdout


def test_args_are_never_run_through_a_shell(action: Action) -> None:
    marker = action.workspace / "pwned"
    run = action.run({"config": action.suite(), "args": f"--scenario smalltalk; touch {marker}"})
    assert run.code == 2  # `;` and `touch` are arguments of `ruledrift run`, refused by it
    assert not marker.exists()


def test_concurrency_reaches_the_run(action: Action) -> None:
    config = two_scenarios(action)
    run = action.run({"config": config, "concurrency": "2"})
    assert run.code == 0, run.log
    assert "--concurrency 2" in run.stdout


# --- wrong inputs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("inputs", "input_name", "fix"),
    [
        ({"config": ""}, "config", "is required"),
        ({"config": "missing.json"}, "config", "no file 'missing.json'"),
        ({"concurrency": "0"}, "concurrency", "whole number of at least 1"),
        ({"concurrency": "two"}, "concurrency", "whole number of at least 1"),
        ({"concurrency": "1.5"}, "concurrency", "whole number of at least 1"),
        ({"start-ollama": "maybe"}, "start-ollama", "auto, true or false"),
        ({"include-responses": "yes"}, "include-responses", "true or false"),
        ({"pull": "1"}, "pull", "true or false"),
        ({"args": "--scenario 'unclosed"}, "args", "check its quotes"),
        ({"args": "--quiet --json=other.json"}, "args", 'use the input "json"'),
        ({"args": "--concur 3"}, "args", 'use the input "concurrency"'),
        ({"base-url": "ftp://pw-4711@host"}, "base-url", "http:// or https://"),
        ({"start-ollama": "true", "base-url": "http://127.0.0.1:9"}, "start-ollama", "remove one"),
        ({"json": "same.out", "junit": "same.out"}, "junit", "same file"),
    ],
)
def test_wrong_inputs_are_exit_2_with_an_error_naming_the_input(
    action: Action, inputs: dict[str, str], input_name: str, fix: str
) -> None:
    config = action.suite()
    run = action.run({"config": config, **inputs})
    assert run.code == 2, run.log
    errors = [m for c, m in workflow_commands(run.stdout) if c.startswith("error ")]
    titles = [c for c, _ in workflow_commands(run.stdout) if c.startswith("error ")]
    assert len(errors) == 1, run.stdout
    assert f"title=RuleDrift%3A input {input_name}" in titles[0]
    assert fix in errors[0]
    assert "pw-4711" not in run.log
    assert run.outputs["exit-code"] == "2"
    assert run.outputs["status"] == "error"
    assert f"`{input_name}`" in run.summary
    assert not (action.workspace / "ruledrift-report.json").exists()


def warnings_in(run: Run) -> list[tuple[str, str]]:
    return [(c, m) for c, m in workflow_commands(run.stdout) if c.startswith("warning ")]


def test_inputs_this_image_does_not_know_are_named_in_one_warning(action: Action) -> None:
    """A workflow on @main passes inputs that main's action.yml declares and the released image
    does not know: they are named with the image's version, and the run goes on without them."""
    run = action.run({"config": action.suite(), "shards": "2/4", "min-pass-rates": "0.9"})
    assert run.code == 0, run.log
    ((command, message),) = warnings_in(run)
    version = ruledrift.__version__
    assert command == f"warning title=RuleDrift {version}%3A unknown input(s)"
    assert '"min-pass-rates" (INPUT_MIN-PASS-RATES), "shards" (INPUT_SHARDS)' in message
    assert message.startswith(f"RuleDrift {version}, the image this step runs, does not know")
    assert "use a release (ruledrift/action@v1" in message
    assert message.endswith("check the spelling of the with: keys.")
    assert "docs/github-action.md#which-ref-to-use" in message
    assert run.outputs["probes"] == "2"


def test_the_declared_inputs_give_no_warning(action: Action) -> None:
    run = action.run({"config": action.suite()})
    assert run.code == 0, run.log
    assert warnings_in(run) == []


def test_unknown_inputs_are_named_also_when_the_known_ones_are_wrong(action: Action) -> None:
    run = action.run({"config": action.suite(), "concurrency": "0", "repeats": "5"})
    assert run.code == 2
    ((_, message),) = warnings_in(run)
    assert '"repeats" (INPUT_REPEATS)' in message


def test_a_hostile_variable_name_stays_one_inert_warning(action: Action) -> None:
    name = "INPUT_X%0A::error::forged\x1b]0;title\x07"
    run = action.run({"config": action.suite()}, env={name: "1"})
    assert run.code == 0, run.log
    assert [c for c, _ in workflow_commands(run.stdout) if not c.startswith("warning ")] == []
    ((_, message),) = warnings_in(run)
    assert "%250A::error::forged\\x1b]0;title\\x07" in message  # shown, never acted on
    assert "\x1b" not in run.stdout


def test_every_wrong_input_is_reported_at_once(action: Action) -> None:
    run = action.run({"config": "", "concurrency": "0", "start-ollama": "sometimes"})
    assert run.code == 2
    titles = [c for c, _ in workflow_commands(run.stdout) if c.startswith("error ")]
    assert [t.rsplit(" ", 1)[1] for t in titles] == ["config", "start-ollama", "concurrency"]


def test_error_messages_are_escaped_like_actions_toolkit(action: Action) -> None:
    run = action.run({"config": "x%y\n::add-mask::secret"})
    assert run.code == 2
    assert [c for c, _ in workflow_commands(run.stdout) if c == "add-mask"] == []
    (message,) = [m for c, m in workflow_commands(run.stdout) if c.startswith("error ")]
    assert "x%25y" in message
    assert "\n" not in message


def test_boolean_inputs_accept_the_spellings_of_actions_toolkit(action: Action) -> None:
    run = action.run({"config": action.suite(), "include-responses": "True", "pull": "FALSE"})
    assert run.code == 0, run.log


# --- untrusted model output -----------------------------------------------------------------------


@pytest.mark.parametrize("include_responses", ["true", "false"])
def test_workflow_commands_in_answers_never_reach_the_runner(
    action: Action, include_responses: str
) -> None:
    data = base_suite(sys.executable, [str(SCRIPTED), "--answer", "::error::pwned\n::add-mask::x"])
    for probe in data["scenarios"][0]["probes"]:  # fail, so that failures are reported
        probe["assertions"] = [{"type": "contains", "value": "a word never said"}]
    run = action.run({"config": action.suite(data=data), "include-responses": include_responses})
    assert run.code == 1, run.log
    commands = workflow_commands(run.log)
    assert [c for c, _ in commands if c == "add-mask"] == []
    assert [m for c, m in commands if "pwned" in m or "pwned" in c] == []
    if include_responses == "true":
        assert "pwned" in run.stdout  # shown, but inside a stop-commands block
    else:
        assert "pwned" not in run.log


# --- the CLI pass-through -------------------------------------------------------------------------


def run_cli(
    cwd: Path, *argv: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT), *argv],
        cwd=cwd,
        env=clean_env(env),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_without_inputs_the_entrypoint_is_the_cli(action: Action) -> None:
    config = action.suite()
    done = run_cli(action.workspace, "validate", config)
    assert done.returncode == 0, done.stderr
    assert "valid: 2 rule(s), 1 scenario(s), 2 probe(s)" in done.stdout
    version = run_cli(action.workspace, "--version")
    assert version.returncode == 0
    assert version.stdout.startswith("ruledrift ")


def test_cli_mode_runs_and_returns_the_exit_code(action: Action) -> None:
    config = action.suite("--leak-after", "1")
    done = run_cli(action.workspace, "run", config, "--json", "r.json")
    assert done.returncode == 1
    assert json.loads((action.workspace / "r.json").read_text())["summary"]["status"] == "failed"
    usage = run_cli(action.workspace)
    assert usage.returncode == 2  # no command: argparse's usage error


def test_arguments_win_over_github_actions_without_inputs(action: Action) -> None:
    done = run_cli(action.workspace, "--version", env={"GITHUB_ACTIONS": "true"})
    assert done.returncode == 0
    assert done.stdout.startswith("ruledrift ")


def test_a_shell_command_is_handed_through(action: Action) -> None:
    done = run_cli(action.workspace, "sh", "-c", "echo handed-through; exit 7")
    assert done.returncode == 7
    assert done.stdout == "handed-through\n"


# --- Ollama: the managed server (start-ollama), base-url, model and pull -------------------------


def sidecar_record(action: Action) -> dict[str, Any]:
    record = action.workspace / ".ruledrift" / "ollama-models" / "fake-ollama-env.json"
    data: dict[str, Any] = json.loads(record.read_text())
    return data


def test_start_ollama_true_runs_a_managed_server(action: Action) -> None:
    action.suite(data=ollama_suite("http://127.0.0.1:9"))  # ignored: the managed server wins
    run = action.run({"config": "suite.json", "start-ollama": "true"}, env=with_stand_in())
    assert run.code == 0, run.log
    assert "starting a managed Ollama server" in run.stdout
    record = sidecar_record(action)
    models = action.workspace / ".ruledrift" / "ollama-models"
    assert record["env"]["OLLAMA_MODELS"] == str(models)
    report = json.loads((action.workspace / "ruledrift-report.json").read_text())
    assert report["target"]["details"]["baseUrl"] == f"http://{record['env']['OLLAMA_HOST']}"
    assert run.outputs["status"] == "passed"


def test_start_ollama_auto_starts_one_when_nothing_listens_on_loopback(action: Action) -> None:
    action.suite(data=ollama_suite(f"http://127.0.0.1:{free_port()}"))
    run = action.run(
        {"config": "suite.json", "models-dir": "cache/models", "concurrency": "2"},
        env=with_stand_in(),
    )
    assert run.code == 0, run.log
    assert "start-ollama is auto and nothing answers at http://127.0.0.1:" in run.stdout
    record = json.loads((action.workspace / "cache/models/fake-ollama-env.json").read_text())
    assert record["env"]["OLLAMA_NUM_PARALLEL"] == "2"


def test_start_ollama_auto_uses_a_server_that_answers(action: Action) -> None:
    with FakeOllama(models=["qwen3:1.7b"]) as server:
        action.suite(data=ollama_suite(server.base_url))
        run = action.run({"config": "suite.json"}, env=with_stand_in())
        chats = [r for r in server.requests if r.path == "/api/chat"]
    assert run.code == 0, run.log
    assert "a server answers at" in run.stdout
    assert len(chats) == 5  # 3 turns + 2 probes, all at the suite's server
    assert not (action.workspace / ".ruledrift").exists()


def test_start_ollama_auto_with_another_adapter_starts_nothing(action: Action) -> None:
    run = action.run({"config": action.suite()}, env=with_stand_in())
    assert run.code == 0, run.log
    assert "uses the command adapter: not starting" in run.stdout


def test_base_url_and_model_inputs_override_the_suite(action: Action) -> None:
    action.suite(data=ollama_suite(f"http://127.0.0.1:{free_port()}", model="not-there:1b"))
    with FakeOllama(models=["llama3.2:1b"]) as server:
        run = action.run(
            {"config": "suite.json", "base-url": server.base_url, "model": "llama3.2:1b"},
            env=with_stand_in(),
        )
        models = {r.body.get("model") for r in server.requests if r.path == "/api/chat"}
    assert run.code == 0, run.log
    assert models == {"llama3.2:1b"}
    assert "a server answers at" in run.stdout  # auto looked at base-url, not the suite's URL


def test_pull_fills_a_server_of_your_own_before_the_run(action: Action) -> None:
    with FakeOllama(models=[]) as server:
        action.suite(data=ollama_suite(server.base_url))
        run = action.run({"config": "suite.json"})
        paths = [r.path for r in server.requests]
    assert run.code == 0, run.log
    assert "ruledrift pull suite.json" in run.stdout
    assert "/api/pull" in paths
    assert paths.index("/api/pull") < paths.index("/api/chat")


def test_pull_false_leaves_the_server_alone(action: Action) -> None:
    with FakeOllama(models=[]) as server:
        action.suite(data=ollama_suite(server.base_url))
        run = action.run({"config": "suite.json", "pull": "false"})
        paths = [r.path for r in server.requests]
    assert run.code != 0
    assert "/api/pull" not in paths
    assert "ollama pull qwen3:1.7b" in run.stderr  # the run's own message says how to fix it


def test_a_failed_pull_is_the_exit_code_and_no_run(action: Action) -> None:
    action.suite(data=ollama_suite("http://127.0.0.1:9", model="no-such-model:1b"))
    with FakeOllama(models=[]) as server:
        run = action.run({"config": "suite.json", "base-url": server.base_url})
        chats = [r for r in server.requests if r.path == "/api/chat"]
    assert run.code == 3, run.log
    assert chats == []
    assert "ruledrift action: ruledrift pull" in run.stdout
    assert "ruledrift action: ruledrift run" not in run.stdout
    assert (run.outputs["exit-code"], run.outputs["status"]) == ("3", "error")


# --- files given back to the workspace's owner ----------------------------------------------------


@pytest.fixture
def owned_workspace(action: Action) -> Action:
    if os.geteuid() != 0:
        pytest.skip("chown needs root (the action runs as root)")
    os.chown(action.workspace, 12345, 12345)
    return action


def owners(paths: list[Path]) -> set[tuple[int, int]]:
    return {(p.lstat().st_uid, p.lstat().st_gid) for p in paths}


def test_written_files_are_given_back_to_the_workspace_owner(owned_workspace: Action) -> None:
    action = owned_workspace
    config = action.suite()
    run = action.run({"config": config, "json": "out/deep/report.json"})
    assert run.code == 0, run.log
    written = [
        action.workspace / "out",
        action.workspace / "out" / "deep",
        action.workspace / "out" / "deep" / "report.json",
        action.workspace / "ruledrift-junit.xml",
    ]
    assert owners(written) == {(12345, 12345)}
    assert owners([action.workspace / config]) == {(0, 0)}  # not ours: left alone


def test_the_models_dir_is_given_back_recursively(owned_workspace: Action) -> None:
    action = owned_workspace
    action.suite(data=ollama_suite("http://127.0.0.1:9"))
    run = action.run({"config": "suite.json", "start-ollama": "true"}, env=with_stand_in())
    assert run.code == 0, run.log
    tree = [action.workspace / ".ruledrift", *(action.workspace / ".ruledrift").rglob("*")]
    assert len(tree) > 3  # .ruledrift, ollama-models, blobs, manifests, …
    assert owners(tree) == {(12345, 12345)}


def test_nothing_is_chowned_in_a_root_owned_workspace(action: Action) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root")
    run = action.run({"config": action.suite()})
    assert run.code == 0
    assert owners([action.workspace / "ruledrift-report.json"]) == {(0, 0)}


# --- units ----------------------------------------------------------------------------------------


def test_input_variables_keep_hyphens() -> None:
    assert action_inputs.input_variable("base-url") == "INPUT_BASE-URL"
    assert action_inputs.input_variable("include-responses") == "INPUT_INCLUDE-RESPONSES"
    assert action_inputs.input_variable("my input") == "INPUT_MY_INPUT"


def test_unknown_input_variables() -> None:
    declared = {action_inputs.input_variable(name): "" for name in action_inputs.INPUTS}
    assert action_inputs.unknown_inputs({**declared, "GITHUB_ACTIONS": "true"}) == []
    assert action_inputs.unknown_inputs({**declared, "INPUT_SHARD2": "", "INPUT_A": ""}) == [
        "INPUT_A",
        "INPUT_SHARD2",
    ]
    assert action_inputs.unknown_inputs({"INPUT_BASE_URL": ""}) == ["INPUT_BASE_URL"]  # hyphen


def test_action_mode_detection() -> None:
    assert action_inputs.is_action([], {"INPUT_CONFIG": ""})
    assert action_inputs.is_action(["run"], {"INPUT_CONFIG": "s.json"})
    assert action_inputs.is_action([], {"GITHUB_ACTIONS": "true", "INPUT_ARGS": ""})
    assert not action_inputs.is_action(["run", "s.json"], {"GITHUB_ACTIONS": "true", "INPUT_X": ""})
    assert not action_inputs.is_action(["validate", "s.json"], {"GITHUB_ACTIONS": "true"})
    assert not action_inputs.is_action([], {})


def test_missing_input_variables_take_their_defaults() -> None:
    inputs = action_inputs.read_inputs({"INPUT_CONFIG": " suite.json ", "INPUT_BASE-URL": ""})
    assert inputs["config"] == "suite.json"  # trimmed, as actions/toolkit's getInput
    assert inputs["start-ollama"] == "auto"
    assert inputs["base-url"] == ""
    assert inputs["json"] == "ruledrift-report.json"


def settings(**changes: Any) -> action_inputs.Settings:
    base: dict[str, Any] = {
        "config": "suite.json",
        "model": "",
        "base_url": "",
        "start_ollama": "auto",
        "pull": True,
        "models_dir": ".ruledrift/ollama-models",
        "json": "r.json",
        "junit": "",
        "html": "",
        "include_responses": False,
        "concurrency": 1,
        "repeat": 1,
        "min_pass_rate": None,
        "shard": None,
        "shard_balance": "",
        "baseline": "",
        "args": (),
    }
    return action_inputs.Settings(**{**base, **changes})


def test_auto_never_probes_a_url_that_is_not_loopback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_network(url: str, timeout_s: float = 0) -> bool:
        raise AssertionError(f"probed {url}")

    monkeypatch.setattr(targets, "server_answers", no_network)
    suite = entrypoint.try_load_suite(str(write_suite(tmp_path, ollama_suite("http://10.1.2.3"))))
    assert suite is not None
    sidecar, reason = entrypoint.decide_server(settings(), suite)
    assert not sidecar
    assert "is not a loopback address" in reason
    sidecar, _ = entrypoint.decide_server(settings(base_url="http://ollama:11434"), suite)
    assert not sidecar


def run_arguments(settings: action_inputs.Settings, managed: bool) -> list[str]:
    """The `ruledrift run` line the action logs for these inputs."""
    request, display = entrypoint.run_request(settings, managed)
    return [*request.argv(), *display.argv()]


def test_run_arguments() -> None:
    argv = run_arguments(settings(model="m:1b", args=("--quiet",), junit="j.xml"), True)
    assert argv == [
        "run",
        "suite.json",
        "--json",
        "r.json",
        "--junit",
        "j.xml",
        "--concurrency",
        "1",
        "--model",
        "m:1b",
        "--start-ollama",
        "--models-dir",
        ".ruledrift/ollama-models",
        "--quiet",
    ]
    external = run_arguments(settings(base_url="http://ollama:11434"), False)
    assert external[-2:] == ["--base-url", "http://ollama:11434"]
    assert "--models-dir" not in external
    assert run_arguments(settings(config="-odd.json"), False)[1] == "./-odd.json"
    sharded = run_arguments(settings(shard=Shard(2, 4), shard_balance="main.json"), False)
    assert sharded[6:10] == ["--shard", "2/4", "--shard-balance", "main.json"]


@pytest.mark.parametrize(
    ("token", "input_name"),
    [
        ("--json", "json"),
        ("--json=x.json", "json"),
        ("--jso", "json"),
        ("--start", "start-ollama"),
        ("--models-dir", "models-dir"),
        ("--shard", "shard"),
        ("--shard-balance=main.json", "shard-balance"),
        ("--scenario", None),
        ("--quiet", None),
        ("--github", None),
        ("-h", None),
        ("suite.json", None),
    ],
)
def test_options_with_an_input_of_their_own(token: str, input_name: str | None) -> None:
    assert action_inputs._own_option(token) == input_name


def test_escaping_matches_actions_toolkit() -> None:
    assert action_outputs.error_command("m\n", "t: x") == "::error title=t%3A x::m%0A"


def test_outputs_round_trip_through_the_heredoc_format(tmp_path: Path) -> None:
    path = tmp_path / "output"
    path.write_text(
        "earlier<<ghadelimiter_00000000-0000-0000-0000-000000000000\nx\n"
        "ghadelimiter_00000000-0000-0000-0000-000000000000\n"
    )
    action_outputs.write_outputs(str(path), {"status": "failed", "json": "a b/c.json", "empty": ""})
    assert parse_outputs(path.read_text()) == {
        "earlier": "x",
        "status": "failed",
        "json": "a b/c.json",
        "empty": "",
    }


def test_created_root(tmp_path: Path) -> None:
    (tmp_path / "exists").mkdir()
    assert action_files.created_root(tmp_path / "a/b/c.json", tmp_path) == tmp_path / "a"
    assert (
        action_files.created_root(tmp_path / "exists/c.json", tmp_path)
        == tmp_path / "exists/c.json"
    )
    assert action_files.created_root(tmp_path / "exists", tmp_path) == tmp_path / "exists"
    assert action_files.created_root(tmp_path.parent / "elsewhere.json", tmp_path) is None
    assert action_files.created_root(tmp_path, tmp_path) is None


def test_outputs_for_a_run_without_a_report() -> None:
    assert action_outputs.outputs_for(3, None) == {
        "exit-code": "3",
        "status": "error",
        "probes": "0",
        "passed": "0",
        "failed": "0",
        "errors": "0",
        "inconclusive": "0",
        "vacuous": "0",
        "json": "",
        "junit": "",
        "html": "",
        "regressions": "",
    }
    assert tuple(action_outputs.outputs_for(0, None)) == REPORT_OUTPUTS


# --- the logged command line reproduces the run ---------------------------------------------------


def comparable(report: dict[str, Any]) -> dict[str, Any]:
    """A JSON report without what changes from run to run (times)."""
    text = json.dumps(report)
    for key in ("startedAt", "durationMs"):
        text = re.sub(rf'"{key}": ("[^"]*"|\d+)', f'"{key}": null', text)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def test_the_logged_command_line_reproduces_the_run(action: Action) -> None:
    config = two_scenarios(action)
    inputs = {
        "config": config,
        "json": "out/report.json",
        "junit": "",
        "concurrency": "2",
        "args": "--scenario smalltalk --quiet",
    }
    run = action.run(inputs)
    assert run.code == 0, run.log
    logged = [
        line.removeprefix("ruledrift action: ruledrift ")
        for line in run.stdout.splitlines()
        if line.startswith("ruledrift action: ruledrift run ")
    ]
    assert len(logged) == 1, run.stdout
    argv = shlex.split(logged[0])
    assert argv[argv.index("--json") + 1] == "out/report.json"
    first = json.loads((action.workspace / "out/report.json").read_text())
    (action.workspace / "out/report.json").unlink()
    again = subprocess.run(
        [sys.executable, "-m", "ruledrift", *argv],
        cwd=action.workspace,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert again.returncode == run.code, again.stdout + again.stderr
    second = json.loads((action.workspace / "out/report.json").read_text())
    assert comparable(second) == comparable(first)
    assert [s["id"] for s in second["scenarios"]] == ["smalltalk"]  # --scenario reached the run


# --- when the target cannot start -----------------------------------------------------------------


def test_a_target_that_cannot_start_still_gives_reports_annotations_and_summary(
    action: Action,
) -> None:
    """Nothing answers at the suite's 127.0.0.1 (inside the container, that is the container):
    the reports exist with every probe an error, the summary says it did not run and why, and
    a notice says what 127.0.0.1 means here."""
    action.suite(data=ollama_suite("http://127.0.0.1:9"))
    run = action.run({"config": "suite.json", "start-ollama": "false", "pull": "false"})
    assert run.code == 3, run.log
    assert (run.outputs["exit-code"], run.outputs["status"], run.outputs["errors"]) == (
        "3",
        "error",
        "2",
    )
    report = json.loads((action.workspace / run.outputs["json"]).read_text(encoding="utf-8"))
    assert report["summary"]["modelCalls"] == 0
    assert run.summary.startswith("## ⛔ RuleDrift did not run: the target could not start")
    assert "**Cause:** could not connect to Ollama at http://127.0.0.1:9" in run.summary
    assert "where http://127.0.0.1:9 is the container itself, not the runner" in run.summary
    notices = [line for line in run.stdout.splitlines() if line.startswith("::notice ")]
    assert notices == [
        "::notice title=RuleDrift%3A 127.0.0.1 is the container::"
        + entrypoint.CONTAINER_HINT.format(url="http://127.0.0.1:9")
    ]
    errors = [line for line in run.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2  # one per probe, at its line


def test_a_pull_from_a_loopback_server_that_fails_is_explained(action: Action) -> None:
    action.suite(data=ollama_suite("http://127.0.0.1:9"))
    run = action.run({"config": "suite.json", "start-ollama": "false"})
    assert run.code == 3, run.log
    assert "::error title=RuleDrift did not run::could not connect to Ollama" in run.stdout
    assert "## ⛔ RuleDrift did not run" in run.summary
    assert "is the container itself, not the runner" in run.summary


def test_the_container_hint_is_for_loopback_servers_of_your_own(tmp_path: Path) -> None:
    suite = entrypoint.try_load_suite(
        str(write_suite(tmp_path, ollama_suite("http://127.0.0.1:9")))
    )
    settings = action_inputs.parse_inputs(
        {**action_inputs.INPUTS, "config": str(tmp_path / "suite.json")}, tmp_path
    )
    hint = entrypoint.container_hint(settings, suite, False, 3, None)
    assert hint is not None
    assert "http://127.0.0.1:9 is the container itself" in hint
    assert entrypoint.container_hint(settings, suite, True, 3, None) is None  # managed server
    assert entrypoint.container_hint(settings, suite, False, 1, None) is None  # it ran
    elsewhere = dataclasses.replace(settings, base_url="http://ollama:11434")
    assert entrypoint.container_hint(elsewhere, suite, False, 3, None) is None


def test_repeat_inputs_reach_the_run_and_the_outputs(action: Action) -> None:
    config = action.suite("--leak-runs", "1")
    run = action.run({"config": config, "repeat": "3", "min-pass-rate": "0.6"})
    assert run.code == 0, run.log
    assert "--repeat 3 --min-pass-rate 0.6" in run.stdout
    assert (run.outputs["passed"], run.outputs["inconclusive"]) == ("2", "0")
    report = json.loads((action.workspace / run.outputs["json"]).read_text(encoding="utf-8"))
    assert report["policy"]["repeat"] == 3
    assert "**Repeats:** `--repeat 3`" in run.summary


def test_the_html_input_writes_the_page_and_its_output(action: Action) -> None:
    config = action.suite()
    run = action.run({"config": config, "html": "reports/ruledrift.html"})
    assert run.code == 0, run.log
    assert run.outputs["html"] == "reports/ruledrift.html"
    assert "<svg" in (action.workspace / "reports" / "ruledrift.html").read_text(encoding="utf-8")
    assert "--html reports/ruledrift.html" in run.stdout


def test_a_baseline_gives_the_summary_a_comparison_and_the_regressions_output(
    action: Action,
) -> None:
    base = action.suite()
    first = action.run({"config": base, "repeat": "20", "json": "base.json"})
    assert first.code == 0, first.log
    action.suite("--leak-probability", "0.6")
    run = action.run(
        {"config": base, "repeat": "20", "min-pass-rate": "0.1", "baseline": "base.json"}
    )
    assert run.code == 0, run.log  # the head's own verdict decides the step
    assert int(run.outputs["regressions"]) >= 1
    assert "## RuleDrift compared with base: 🔻 worse than base" in run.summary
    missing = action.run({"config": base, "baseline": "no-such-report.json"})
    assert missing.outputs["regressions"] == ""
    assert "baseline not compared: cannot read report" in missing.stdout


def test_a_hostile_baseline_is_read_as_strictly_as_any_saved_report(action: Action) -> None:
    """The baseline comes from another job's artifact: a report RuleDrift could not have written
    (here two scenarios named alike, which `compare` silently merged into one) is not compared,
    the log says where it is wrong, and the run's own verdict stands."""
    config = action.suite()
    first = action.run({"config": config, "json": "base.json"})
    assert first.code == 0, first.log
    base = action.workspace / "base.json"
    data = json.loads(base.read_text(encoding="utf-8"))
    data["scenarios"].append(data["scenarios"][0])
    data["summary"]["scenarios"] += 1
    data["summary"]["probes"] += len(data["scenarios"][0]["probes"])
    data["summary"]["passed"] += len(data["scenarios"][0]["probes"])
    data["summary"]["modelCalls"] += data["scenarios"][0]["modelCalls"]
    base.write_text(json.dumps(data, indent=2), encoding="utf-8")
    run = action.run({"config": config, "baseline": "base.json"})
    assert run.code == 0, run.log
    assert run.outputs["regressions"] == ""
    assert "baseline not compared: cannot read report" in run.stdout
    assert '/scenarios/1/id: "smalltalk" is used twice (first at /scenarios/0/id)' in run.stdout
    assert "compared with base" not in run.summary


def test_a_rerun_says_what_re_running_does_to_the_miss_rate(action: Action) -> None:
    """Attempt 2 of a workflow run: the summary names the attempt and the chance, computed for
    the run's policy and probes, that a rule at 80% gets through one attempt, two, three."""
    config = action.suite("--leak-after", "0")
    first = action.run({"config": config, "repeat": "auto"})
    assert first.code == 1, first.log
    assert "attempt" not in first.summary
    second = action.run({"config": config, "repeat": "auto"}, env={"GITHUB_RUN_ATTEMPT": "2"})
    assert second.code == 1, second.log
    odds = gate_odds(VerdictPolicy(repeat="auto", probes=2), 2)
    once, twice, thrice = (f"{1 - odds.caught**k:.1%}" for k in (1, 2, 3))
    assert (once, twice, thrice) == ("20.0%", "36.0%", "48.8%")
    assert (
        f"> **Note:** this is attempt 2 of this workflow run. Re-running a red job until it "
        f"goes green defeats the error rates: a probe whose rule passes 80% of the time gets "
        f"through one attempt {once} of the time, and at least one of 2 attempts {twice} (of "
        f"3: {thrice})."
    ) in second.summary
