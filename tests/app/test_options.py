"""The one table of run options: the CLI, the action and the application all read it, and an
error about an option is worded by each front-end its own way."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
import yaml

from ruledrift import app
from ruledrift.action.inputs import INPUTS, OWN_OPTIONS, REPORT_INPUTS
from ruledrift.app.options import (
    COMPARISON_FORMATS,
    OPTIONS,
    REPORT_FORMATS,
    OptionError,
    as_flags,
    whole_range,
)
from ruledrift.console.arguments import build_parser
from ruledrift.data import VerdictPolicy
from tests.support.suites import base_suite, write_suite

ACTION_YML = Path(__file__).resolve().parents[2] / "action.yml"


def _subcommand(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser: argparse.ArgumentParser = commands.choices[name]
    return parser


def _flags(name: str) -> set[str]:
    return {flag for action in _subcommand(name)._actions for flag in action.option_strings}


def test_every_report_format_has_a_renderer_and_every_renderer_a_row() -> None:
    assert list(app.REPORTERS) == [option.name for option in REPORT_FORMATS]


def test_every_option_is_a_flag_of_run() -> None:
    assert {option.flag for option in OPTIONS.values()} - {
        o.flag for o in COMPARISON_FORMATS if o.name not in {r.name for r in REPORT_FORMATS}
    } <= _flags("run")


@pytest.mark.parametrize("command", ["report", "merge"])
def test_report_and_merge_write_every_report_format(command: str) -> None:
    assert {option.flag for option in REPORT_FORMATS} <= _flags(command)


def test_compare_writes_the_comparison_formats() -> None:
    assert {option.flag for option in COMPARISON_FORMATS} <= _flags("compare")


def test_the_actions_own_inputs_are_the_tables() -> None:
    declared = yaml.safe_load(ACTION_YML.read_text(encoding="utf-8"))["inputs"]
    own = {o.action_input: o for o in OPTIONS.values() if o.action_input is not None}
    assert set(own) <= set(declared)
    assert set(own) <= set(INPUTS)
    assert {o.flag: name for name, o in own.items()} == OWN_OPTIONS
    assert set(REPORT_INPUTS) == {o.action_input for o in REPORT_FORMATS if o.action_input}
    for name in ("concurrency", "repeat"):  # the action's defaults are the CLI's
        assert declared[name]["default"] == str(own[name].default) == INPUTS[name]


def test_a_whole_number_range_is_read_from_the_table() -> None:
    low, high = whole_range("concurrency")
    assert (low, high) == (1, 256)
    with pytest.raises(TypeError):
        whole_range("holds_at")


def test_an_option_error_speaks_python_and_each_front_end_its_own_words() -> None:
    error = OptionError("{min_pass_rate} goes with {repeat} N (auto decides by itself)")
    assert str(error) == "min_pass_rate goes with repeat N (auto decides by itself)"
    assert as_flags(error) == "--min-pass-rate goes with --repeat N (auto decides by itself)"
    assert error.worded(lambda o: f'input "{o.action_input}"').startswith('input "min-pass-rate"')


def test_a_value_in_an_option_error_is_never_read_as_a_template() -> None:
    error = OptionError("{json} {path}: no such folder", path="{repeat}/{0}/r.json")
    assert str(error) == 'reports["json"] {repeat}/{0}/r.json: no such folder'
    assert as_flags(error) == "--json {repeat}/{0}/r.json: no such folder"


@pytest.mark.parametrize(
    ("policy", "python", "flags"),
    [
        (
            VerdictPolicy(repeat="auto", min_pass_rate=0.9),
            "min_pass_rate goes with repeat N (auto decides by itself)",
            "--min-pass-rate goes with --repeat N (auto decides by itself)",
        ),
        (
            VerdictPolicy(repeat=2, max_repeat=40),
            "max_repeat goes with repeat auto",
            "--max-repeat goes with --repeat auto",
        ),
        (
            VerdictPolicy(repeat=1001),
            "repeat: expected auto or a whole number from 1 to 1000",
            "--repeat: expected auto or a whole number from 1 to 1000",
        ),
        (
            VerdictPolicy(repeat="auto", drifted_at=0.96),
            "expected 0 < drifted_at < holds_at < 1",
            "expected 0 < --drifted-at < --holds-at < 1",
        ),
    ],
)
def test_the_python_api_names_policy_options_as_python_does(
    policy: VerdictPolicy, python: str, flags: str
) -> None:
    with pytest.raises(OptionError) as caught:
        app.check_policy(policy)
    assert str(caught.value) == python
    assert as_flags(caught.value) == flags


def test_an_unknown_report_format_is_refused_before_the_run(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, base_suite())
    request = app.RunRequest(config=suite, reports={"pdf": tmp_path / "r.pdf"})
    with pytest.raises(OptionError) as caught:
        app.run(request)
    assert str(caught.value) == (
        "reports: no report format 'pdf' (formats: json, junit, html, codequality)"
    )


def test_two_reports_on_one_path_are_named_as_python_names_them(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, base_suite())
    same = tmp_path / "r.xml"
    request = app.RunRequest(config=suite, reports={"json": same, "junit": same})
    with pytest.raises(OptionError) as caught:
        app.run(request)
    assert (
        str(caught.value) == f'reports["junit"] {same}: would overwrite the reports["json"] report'
    )
    assert as_flags(caught.value) == f"--junit {same}: would overwrite the --json report"


def test_a_requests_command_line_lists_its_reports_in_the_tables_order(tmp_path: Path) -> None:
    request = app.RunRequest(
        config=Path("s.json"),
        reports={"codequality": Path("c.json"), "json": Path("r.json"), "html": Path("-r.html")},
    )
    assert request.argv()[:8] == [
        "run",
        "s.json",
        "--json",
        "r.json",
        "--html",
        "./-r.html",
        "--codequality",
        "c.json",
    ]


def test_the_defaults_are_the_tables_for_python_and_the_cli() -> None:
    policy, request = VerdictPolicy(), app.RunRequest(config=Path("s.json"))
    args = build_parser().parse_args(["run", "s.json"])
    for name, python in (
        ("repeat", policy.repeat),
        ("holds_at", policy.holds_at),
        ("drifted_at", policy.drifted_at),
        ("concurrency", request.concurrency),
        ("include_responses", request.include_responses),
    ):
        assert python == OPTIONS[name].default == getattr(args, name), name


def test_bounds_too_close_for_any_sequential_test_are_an_option_error() -> None:
    """Once a ValueError from the design search: an internal error, exit 4."""
    policy = VerdictPolicy(repeat="auto", holds_at=0.9999, drifted_at=0.9998)
    app.check_policy(policy)  # each is in range
    with pytest.raises(OptionError) as caught:
        app.check_design(policy, 1)
    assert as_flags(caught.value) == (
        "--holds-at 0.9999 and --drifted-at 0.9998 are too close for --repeat auto: no cap up "
        "to 5000 runs decides within both bounds; widen the gap"
    )
    assert str(caught.value).startswith("holds_at 0.9999 and drifted_at 0.9998 are too close")
    app.check_design(VerdictPolicy(repeat=5, holds_at=0.9999, drifted_at=0.9998), 1)
