"""The action's inputs: every wrong value is an input error naming the input (exit 2 before
anything runs), never a traceback, never a step that passes without a run, never a write
outside the workspace, and never a raw control character echoed into the log."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ruledrift.action.inputs import (
    INPUTS,
    InputError,
    Problem,
    Settings,
    exiting_option,
    parse_inputs,
)
from ruledrift.console import arguments
from ruledrift.errors import ArgumentsExit, UsageError
from ruledrift.results.shards import Shard

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "entrypoint.py"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "suite.json").write_text("{}")
    return workspace


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    return outside


def parse(workspace: Path, **inputs: str) -> Settings:
    return parse_inputs({**INPUTS, "config": "suite.json", **inputs}, workspace)


def problems(workspace: Path, **inputs: str) -> list[Problem]:
    with pytest.raises(InputError) as caught:
        parse(workspace, **inputs)
    return caught.value.problems


def only_problem(workspace: Path, **inputs: str) -> Problem:
    (problem,) = problems(workspace, **inputs)
    return problem


def assert_shown_safely(message: str) -> None:
    """One line, no control characters, a bounded length: safe to echo into the log."""
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in message), repr(message)
    assert len(message) < 600, len(message)


# --- numbers ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [str(10**30), "9" * 5000, "257", "0", "-1", "1e3", "²"])
def test_a_concurrency_out_of_range_is_an_input_error_naming_the_range(
    workspace: Path, value: str
) -> None:
    problem = only_problem(workspace, concurrency=value)
    assert problem.input == "concurrency"
    assert 'input "concurrency" must be a whole number of at least 1 and at most 256' in (
        problem.message
    )
    assert_shown_safely(problem.message)


@pytest.mark.parametrize(("value", "expected"), [("1", 1), ("256", 256), ("0008", 8)])
def test_a_concurrency_in_range_is_taken(workspace: Path, value: str, expected: int) -> None:
    assert parse(workspace, concurrency=value).concurrency == expected


# --- args: options that would exit without running ---------------------------------------------


@pytest.mark.parametrize(
    "args", ["-h", "--help", "--he", "--quiet -h", "--version", "--vers", "--help=x"]
)
def test_args_that_would_exit_without_running_are_refused(workspace: Path, args: str) -> None:
    problem = only_problem(workspace, args=args)
    assert problem.input == "args"
    assert "without running the suite: remove it" in problem.message


def _exits(argument: str) -> bool:
    """Whether `ruledrift run suite.json ARGUMENT` prints and exits without running."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            arguments.parse_run(["run", "suite.json", argument])
        except ArgumentsExit:
            return True
        except UsageError:  # an error, exit 2: not a step that passes
            return False
    return False


def _option_strings() -> set[str]:
    parser = arguments.build_parser()
    parsers = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers += list(action.choices.values())
    return {option for p in parsers for action in p._actions for option in action.option_strings}


def test_every_option_that_exits_without_running_is_refused() -> None:
    """Every option of the parser, and every abbreviation argparse accepts of it: those that
    make the CLI exit without running are refused in `args`."""
    arguments = {"-hx"} | {
        option[:end]
        for option in _option_strings()
        for end in range(2 if not option.startswith("--") else 3, len(option) + 1)
    }
    exiting = {argument for argument in arguments if _exits(argument)}
    assert {"-h", "--help", "--he"} <= exiting  # "--h" is ambiguous now: --holds-at
    assert {argument for argument in exiting if not exiting_option(argument)} == set()
    assert exiting_option("--version") == "--version"
    assert exiting_option("--quiet") is None
    assert exiting_option("--scenario=-h") is None


def test_args_over_several_lines_are_taken(workspace: Path) -> None:
    settings = parse(workspace, args="--scenario a\n--scenario 'b c'\n--quiet")
    assert settings.args == ("--scenario", "a", "--scenario", "b c", "--quiet")


def test_a_control_character_inside_an_argument_is_refused(workspace: Path) -> None:
    problem = only_problem(workspace, args="--scenario 'a\n::error::forged'")
    assert problem.input == "args"
    assert "line break or a control character" in problem.message
    assert_shown_safely(problem.message)


# --- paths: inside the workspace, symbolic links followed ---------------------------------------


def test_a_report_through_a_symlinked_folder_out_of_the_workspace_is_refused(
    workspace: Path, outside: Path
) -> None:
    (workspace / "reports").symlink_to(outside)
    for name in ("json", "junit"):
        problem = only_problem(workspace, **{name: "reports/new/r.out"})
        assert problem.input == name
        assert "leads outside the workspace" in problem.message
        # where it leads, shortened in the middle when long (the tmp path under xdist is)
        assert f"(to '{str(outside)[:20]}" in problem.message
    assert os.listdir(outside) == []


def test_a_report_symlinked_out_of_the_workspace_is_refused(workspace: Path, outside: Path) -> None:
    (outside / "r.json").write_text("theirs")
    (workspace / "r.json").symlink_to(outside / "r.json")
    assert only_problem(workspace, json="r.json").input == "json"


@pytest.mark.parametrize("value", ["../r.json", "/tmp/r.json"])
def test_a_report_outside_the_workspace_is_refused(workspace: Path, value: str) -> None:
    problem = only_problem(workspace, json=value)
    assert problem.input == "json"
    assert "leads outside the workspace" in problem.message


def test_a_config_symlinked_out_of_the_workspace_is_refused(workspace: Path, outside: Path) -> None:
    (outside / "secret.json").write_text("{}")
    (workspace / "suite.json").unlink()
    (workspace / "suite.json").symlink_to(outside / "secret.json")
    problem = only_problem(workspace)
    assert problem.input == "config"
    assert "leads outside the workspace" in problem.message


def test_a_models_dir_through_a_symlink_out_of_the_workspace_is_refused(
    workspace: Path, outside: Path
) -> None:
    (workspace / ".ruledrift").symlink_to(outside)
    problem = only_problem(workspace)  # the default, .ruledrift/ollama-models
    assert problem.input == "models-dir"
    assert "leads outside the workspace" in problem.message


def test_a_report_that_is_a_symlink_inside_the_workspace_is_refused(workspace: Path) -> None:
    """Written through, it would replace whatever the committed link names (a workflow file)."""
    (workspace / ".github").mkdir()
    (workspace / ".github" / "ci.yml").write_text("on: push")
    (workspace / "r.json").symlink_to(workspace / ".github" / "ci.yml")
    problem = only_problem(workspace, json="r.json")
    assert problem.input == "json"
    assert "is a symbolic link" in problem.message
    assert (workspace / ".github" / "ci.yml").read_text() == "on: push"


def test_symlinked_folders_inside_the_workspace_are_fine(workspace: Path) -> None:
    (workspace / "real").mkdir()
    (workspace / "reports").symlink_to(workspace / "real")
    settings = parse(workspace, json="reports/r.json", junit=str(workspace / "reports/j.xml"))
    assert settings.json == "reports/r.json"


def test_a_models_dir_that_is_a_file_is_refused(workspace: Path) -> None:
    (workspace / "models").write_text("")
    assert "is not a folder" in only_problem(workspace, **{"models-dir": "models"}).message


@pytest.mark.parametrize("name", ["config", "json", "junit", "models-dir"])
@pytest.mark.parametrize("value", ["x" * 300, "/".join(["d" * 200] * 30)])
def test_an_over_long_path_is_an_input_error(workspace: Path, name: str, value: str) -> None:
    problem = only_problem(workspace, **{name: value})
    assert problem.input == name
    assert "give a shorter" in problem.message
    assert_shown_safely(problem.message)


def test_a_report_path_that_is_a_fifo_or_a_folder_is_refused(workspace: Path) -> None:
    os.mkfifo(workspace / "pipe")
    problem = only_problem(workspace, json="pipe")
    assert problem.message.startswith("input \"json\" ('pipe'): is a named pipe (FIFO)")
    (workspace / "out").mkdir()
    assert "is a directory" in only_problem(workspace, junit="out").message
    assert stat.S_ISFIFO(os.lstat(workspace / "pipe").st_mode)


@pytest.mark.parametrize("junit", ["./r.json", "sub/../r.json"])
def test_two_spellings_of_the_same_report_are_refused(workspace: Path, junit: str) -> None:
    (workspace / "sub").mkdir()
    problem = only_problem(workspace, json="r.json", junit=junit)
    assert (problem.input, problem.message) == (
        "junit",
        'inputs "json" and "junit" name the same file: give each its own',
    )


def test_a_report_over_the_suite_is_refused(workspace: Path) -> None:
    problem = only_problem(workspace, json="./suite.json")
    assert problem.input == "json"
    assert "names the suite file itself" in problem.message


# --- control characters and long values are never echoed raw ------------------------------------


@pytest.mark.parametrize("name", ["config", "model", "json", "junit", "models-dir"])
def test_a_line_break_in_a_value_is_refused_and_shown_escaped(workspace: Path, name: str) -> None:
    problem = only_problem(workspace, **{name: "a\n::add-mask::x\x1b[2J"})
    assert problem.input == name
    assert "line break or a control character" in problem.message
    assert "\\x1b[2J" in problem.message
    assert_shown_safely(problem.message)


def test_a_base_url_with_a_control_character_is_refused_without_echoing_it(
    workspace: Path,
) -> None:
    problem = only_problem(workspace, **{"base-url": "http://u:pw-4711@host\x1b/"})
    assert problem.input == "base-url"
    assert "pw-4711" not in problem.message
    assert_shown_safely(problem.message)


@pytest.mark.parametrize("name", ["start-ollama", "pull", "include-responses", "concurrency"])
def test_a_long_wrong_value_is_shown_cut(workspace: Path, name: str) -> None:
    problem = only_problem(workspace, **{name: "\x1b[31m" + "y" * 100_000})
    assert problem.input == name
    assert "\\x1b[31m" in problem.message
    assert "…" in problem.message
    assert_shown_safely(problem.message)


# --- the action as a process --------------------------------------------------------------------


def run_action(workspace: Path, **inputs: str) -> subprocess.CompletedProcess[str]:
    values = {**INPUTS, "config": "suite.json", **inputs}
    prefixes = ("CI", "GITHUB_", "INPUT_", "OLLAMA_", "RULEDRIFT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env |= {f"INPUT_{name.upper()}": value for name, value in values.items()}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace)}
    return subprocess.run(
        [sys.executable, str(ENTRYPOINT)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.process
@pytest.mark.parametrize(
    ("inputs", "input_name"),
    [
        ({"json": "reports/r.json"}, "json"),
        ({"concurrency": "9" * 5000}, "concurrency"),
        ({"concurrency": str(10**30)}, "concurrency"),
        ({"args": "--help"}, "args"),
        ({"args": "--version"}, "args"),
        ({"junit": "x" * 300}, "junit"),
        ({"models-dir": "m" * 300}, "models-dir"),
    ],
)
def test_the_action_stops_with_an_input_error_before_anything_runs(
    workspace: Path, outside: Path, inputs: dict[str, str], input_name: str
) -> None:
    (workspace / "reports").symlink_to(outside)
    done = run_action(workspace, **inputs)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"::error title=RuleDrift%3A input {input_name}::" in done.stdout
    assert "Traceback" not in done.stderr
    assert "usage:" not in done.stdout + done.stderr
    assert os.listdir(outside) == []
    assert sorted(os.listdir(workspace)) == ["reports", "suite.json"]


@pytest.mark.parametrize("args", ["--codequality out.json", "--codequality=out.json", "--codeq x"])
def test_codequality_in_args_is_refused(workspace: Path, args: str) -> None:
    """GitLab's report has no place in the action: its file would skip the workspace checks."""
    problem = only_problem(workspace, args=args)
    assert problem.input == "args"
    assert "--code" in problem.message
    assert "which the action does not take" in problem.message


@pytest.mark.parametrize(
    ("inputs", "input_name", "fragment"),
    [
        ({"repeat": "0"}, "repeat", "auto or a whole number from 1 to 1000"),
        ({"repeat": "9" * 5000}, "repeat", "auto or a whole number from 1 to 1000"),
        ({"repeat": "sometimes"}, "repeat", "auto or a whole number"),
        ({"min-pass-rate": "1.5"}, "min-pass-rate", "above 0 and at most 1"),
        ({"min-pass-rate": "nan"}, "min-pass-rate", "above 0 and at most 1"),
        ({"repeat": "auto", "min-pass-rate": "0.9"}, "min-pass-rate", "repeat: auto decides"),
    ],
)
def test_wrong_repeat_inputs_are_input_errors(
    workspace: Path, inputs: dict[str, str], input_name: str, fragment: str
) -> None:
    problem = only_problem(workspace, **inputs)
    assert problem.input == input_name
    assert fragment in problem.message


def test_repeat_inputs_reach_the_settings(workspace: Path) -> None:
    settings = parse(workspace, **{"repeat": "5", "min-pass-rate": "0.8"})
    assert (settings.repeat, settings.min_pass_rate) == (5, 0.8)
    assert parse(workspace, repeat="auto").repeat == "auto"


def test_the_shard_input(workspace: Path) -> None:
    assert parse(workspace, shard="2/3").shard == Shard(2, 3)
    problem = only_problem(workspace, shard="4/3")
    assert (problem.input, problem.message) == (
        "shard",
        "input \"shard\": expected 1 <= K <= N <= 1000, got '4/3'",
    )


def test_shard_auto_reads_the_steps_environment(workspace: Path) -> None:
    inputs = {**INPUTS, "config": "suite.json", "shard": "auto"}
    matrix = {"RULEDRIFT_SHARD_INDEX": "1", "RULEDRIFT_SHARD_TOTAL": "3"}  # strategy.job-index
    assert parse_inputs(inputs, workspace, matrix).shard == Shard(2, 3, "ruledrift")
    problem = only_problem(workspace, shard="auto")
    assert problem.input == "shard"
    assert problem.message.startswith('input "shard": auto: no shard in the environment (it reads')
    with pytest.raises(InputError) as caught:
        parse_inputs(inputs, workspace, {"RULEDRIFT_SHARD_INDEX": "1"})
    assert [p.message for p in caught.value.problems] == [
        'input "shard": auto: RULEDRIFT_SHARD_INDEX is set (the generic pair) but '
        "RULEDRIFT_SHARD_TOTAL is not"
    ]


def test_the_shard_balance_input(workspace: Path, outside: Path) -> None:
    settings = parse(workspace, shard="1/2", **{"shard-balance": "main/ruledrift-report.json"})
    assert settings.shard_balance == "main/ruledrift-report.json"
    alone = only_problem(workspace, **{"shard-balance": "main.json"})
    assert (alone.input, alone.message) == (
        "shard-balance",
        'input "shard-balance" goes with "shard" (K/N or auto): it says how to cut the shards',
    )
    away = only_problem(workspace, shard="1/2", **{"shard-balance": str(outside / "r.json")})
    assert away.input == "shard-balance"
    assert "leads outside the workspace" in away.message
    broken = only_problem(workspace, shard="1/2", **{"shard-balance": "a\nb.json"})
    assert "contains a line break or a control character" in broken.message


def test_the_baseline_input_must_lead_inside_the_workspace(workspace: Path, outside: Path) -> None:
    assert parse(workspace, baseline="base/ruledrift-report.json").baseline == (
        "base/ruledrift-report.json"
    )
    problem = only_problem(workspace, baseline=str(outside / "r.json"))
    assert problem.input == "baseline"
    assert "leads outside the workspace" in problem.message
