"""reports/workflow_commands.py: workflow commands escaped as actions/toolkit does, stop-commands
blocks, and annotations within GitHub's limits, never with answer text."""

from __future__ import annotations

import re

import pytest

from ruledrift.reports import workflow_commands as commands
from tests.support import results as factories
from tests.support.github_log import (
    CONFIG,
    failing,
    many_failures,
    parse,
    run_of,
)
from tests.support.results import ANSWER_MARKERS

# --- escaping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["plain", "100% sure", "%0A::error::x", "a:b,c=d", "line\r\nbreak\rx\ny", "%%25%"]
)
def test_commands_round_trip_through_the_runners_unescaping(text: str) -> None:
    line = commands.workflow_command("warning", text, {"title": text, "line": 3})
    name, properties, data = parse(line)
    assert (name, properties, data) == ("warning", {"title": text, "line": "3"}, text)


def test_command_without_properties() -> None:
    assert commands.workflow_command("notice", "hi") == "::notice::hi"


def test_stop_commands_uses_a_fresh_token_per_block() -> None:
    first, second = ("\n".join(commands.stop_commands(text)) for text in ("a\n", "a"))
    match = re.fullmatch(r"::stop-commands::([0-9a-f]{32})\na\n\n::\1::", first)
    assert match
    assert re.fullmatch(r"::stop-commands::([0-9a-f]{32})\na\n\n::\1::", second)
    assert match.group(1) not in second


# --- annotations -----------------------------------------------------------------------------


def test_one_annotation_per_failed_or_errored_probe_and_no_answer_text() -> None:
    lines = commands.render_annotations(factories.run_result(), CONFIG)
    assert len(lines) == 4  # one failed probe, three errored ones
    name, properties, data = parse(lines[0])
    assert name == "error"
    assert properties == {
        "file": CONFIG,
        "line": "1",
        "title": "RuleDrift: smalltalk/late-secret broke rule never-disclose-secret (after turn 2)",
    }
    assert data == (
        'expected the answer not to contain "hunter2"\nexpected the answer to match '
        "/cannot|won't/i"
    )
    name, properties, data = parse(lines[1])
    assert properties["title"] == (
        "RuleDrift: hostile-text/slow could not be run (rule never-disclose-secret, after turn 1)"
    )
    assert data == factories.TIMEOUT_ERROR
    for marker in ANSWER_MARKERS:
        assert all(marker not in line for line in lines)


def test_a_passing_run_has_no_annotations() -> None:
    passing = factories.scenario_result("calm", (factories.passed("ok", factories.ANSWER_OK),), 1)
    assert commands.render_annotations(run_of(passing), CONFIG) == []


def test_level_follows_severity_and_line_the_probe() -> None:
    probes = (failing("a", "info", 11), failing("b", "warning", 22), failing("c", "critical", 33))
    result = run_of(factories.scenario_result("mixed", probes, 3))
    parsed = [parse(line) for line in commands.render_annotations(result, CONFIG)]
    # critical first: GitHub keeps only the first annotations of a step
    assert [(name, props["line"]) for name, props, _ in parsed] == [
        ("error", "33"),
        ("warning", "22"),
        ("notice", "11"),
    ]


def test_25_critical_failures_give_10_errors_and_a_note() -> None:
    lines = commands.render_annotations(run_of(many_failures(25)), CONFIG)
    names = [parse(line)[0] for line in lines]
    assert names == ["error"] * 10 + ["notice"]
    assert [parse(line)[1]["line"] for line in lines[:10]] == [str(10 + i) for i in range(10)]
    _name, properties, data = parse(lines[-1])
    assert properties == {"title": "RuleDrift: 15 more probe(s) not annotated"}
    assert data.startswith("15 more failed or errored probe(s) are not annotated")


def test_the_note_never_is_the_eleventh_notice() -> None:
    result = run_of(many_failures(12, "critical"), many_failures(12, "info"))
    names = [parse(line)[0] for line in commands.render_annotations(result, CONFIG)]
    assert names.count("error") == 10
    assert names.count("notice") == 10  # 9 probes and the note, which counts the 10th
    assert names[-1] == "notice"
    assert "5 more" in commands.render_annotations(result, CONFIG)[-1]
    assert commands.plan_annotations(result)[1] == 5


def test_ten_of_each_level_fit_without_a_note() -> None:
    result = run_of(many_failures(10, "critical"), many_failures(10, "info"))
    lines = commands.render_annotations(result, CONFIG)
    assert len(lines) == 20
    assert "more probe(s) not annotated" not in "".join(lines)


def test_messages_are_cut_at_4096_characters() -> None:
    long = failing("long", message="x" * 10_000)
    line = commands.render_annotations(run_of(factories.scenario_result("s", (long,), 1)), CONFIG)[
        0
    ]
    data = parse(line)[2]
    assert len(data) == commands.MESSAGE_MAX_CHARS
    assert data.endswith("x…")


def test_hostile_messages_stay_inside_the_command() -> None:
    hostile = failing("evil", message="a%0A::error::x\r::add-mask::y\n##[error]z")
    line = commands.render_annotations(
        run_of(factories.scenario_result("s", (hostile,), 1)), CONFIG
    )
    assert len(line) == 1
    assert "\n" not in line[0]
    assert "\r" not in line[0]
    assert parse(line[0])[2] == "a%0A::error::x\r::add-mask::y\n##[error]z"
