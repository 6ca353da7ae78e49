"""saved.py through the real CLI: `ruledrift report` and `ruledrift compare` on saved reports
that another job (or anyone who edited the artifact) wrote. A report that is not one RuleDrift
could have written is a usage error (exit 2) naming FILE:LINE:COLUMN and the JSON pointer, for
every format re-rendered from it, never a traceback; the action's `baseline` input reads the
same way (tests/action/test_run.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, position_of, write_suite

pytestmark = pytest.mark.process


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real report of a run with repeats."""
    folder = tmp_path_factory.mktemp("saved")
    suite = write_suite(
        folder, base_suite(command=sys.executable, args=[str(AGENTS / "scripted.py")])
    )
    report = folder / "report.json"
    done = ruledrift("run", suite, "--repeat", "2", "--json", report)
    assert done.returncode == 0, done.stderr
    return report


def edited(saved: Path, folder: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of `saved` changed by `change`, written as `json.dumps` writes (a lone surrogate
    as its escape, big integers in full)."""
    data = json.loads(saved.read_text(encoding="utf-8"))
    change(data)
    path = folder / "edited.json"
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def value_at(path: Path, literal: str) -> str:
    """`FILE:LINE:COLUMN` of the value written `"key": literal` in `path`."""
    line, column = position_of(path, literal)
    return f"{path}:{line}:{column + literal.index(': ') + 2}"


def set_duration(data: dict[str, Any]) -> None:
    data["durationMs"] = 10**400


def set_probe_duration(data: dict[str, Any]) -> None:
    data["scenarios"][0]["probes"][0]["durationMs"] = 10**30


def set_lone_surrogate(data: dict[str, Any]) -> None:
    data["scenarios"][0]["id"] += "\ud800"


def set_after_turn(data: dict[str, Any]) -> None:
    data["scenarios"][0]["probes"][1]["afterTurn"] = 2**63 - 1


HOSTILE = {
    "durationMs 10**400": (set_duration, '"durationMs": 1000', "/durationMs", "(401 characters)"),
    "a probe's durationMs": (
        set_probe_duration,
        '"durationMs": 1000000000000000000000000000000',
        "/scenarios/0/probes/0/durationMs",
        "out of range: integers must fit in 64 bits",
    ),
    "a lone surrogate in an id": (
        set_lone_surrogate,
        '"id": "smalltalk\\ud800"',
        "/scenarios/0/id",
        "holds a lone UTF-16 surrogate (\\ud800)",
    ),
    "afterTurn 2**63 - 1": (
        set_after_turn,
        '"afterTurn": 9223372036854775807',
        "/scenarios/0/probes/1/afterTurn",
        "expected a number of at most 10000",
    ),
}


def assert_refused(done: Any, where: str, pointer: str, problem: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "internal error" not in done.stderr
    assert f"\n  {where}: {pointer}: " in done.stderr, done.stderr
    assert problem in done.stderr, done.stderr


@pytest.mark.parametrize("case", HOSTILE)
def test_report_refuses_a_hostile_report_for_every_format(
    saved: Path, tmp_path: Path, case: str
) -> None:
    change, literal, pointer, problem = HOSTILE[case]
    report = edited(saved, tmp_path, change)
    outputs: list[str | Path] = [
        *("--json", tmp_path / "again.json", "--junit", tmp_path / "junit.xml"),
        *("--html", tmp_path / "report.html", "--codequality", tmp_path / "cq.json"),
    ]
    done = ruledrift("report", report, *outputs)
    assert_refused(done, value_at(report, literal), pointer, problem)
    assert not list(tmp_path.glob("again.json")) + list(tmp_path.glob("report.html"))


@pytest.mark.parametrize("case", HOSTILE)
def test_compare_refuses_a_hostile_base_or_head(saved: Path, tmp_path: Path, case: str) -> None:
    change, literal, pointer, problem = HOSTILE[case]
    report = edited(saved, tmp_path, change)
    outputs = ("--markdown", tmp_path / "c.md", "--json", tmp_path / "c.json")
    for pair in ((saved, report), (report, saved)):
        done = ruledrift("compare", *pair, *outputs)
        assert_refused(done, value_at(report, literal), pointer, problem)


def test_a_report_left_as_ruledrift_wrote_it_still_renders(saved: Path, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    done = ruledrift("report", saved, "--html", page)
    assert done.returncode == 0, done.stderr
    compared = ruledrift("compare", saved, saved, "--json", tmp_path / "c.json")
    assert compared.returncode == 0, compared.stderr
