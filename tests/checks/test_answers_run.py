"""`answers` and `fluent` end to end: `ruledrift run` against scripted agents (real subprocesses)
that refuse everything, loop, say nothing or write gibberish; and the suspicious-pass flags those
agents earn where only `notContains` is asked."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from ruledrift.suite.load import schema_text
from tests.support import AGENTS
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process


def nonanswer_suite(tmp_path: Path, mode: str) -> Path:
    data = base_suite(command=sys.executable, args=[str(AGENTS / "nonanswer.py"), mode])
    for probe in data["scenarios"][0]["probes"]:
        probe["assertions"].append({"type": "answers"})
    return write_suite(tmp_path, data)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("refuse", "it reads as a refusal (a refusal phrase in English at its start)"),
        ("refuse-de", "it reads as a refusal (a refusal phrase in German at its start)"),
        ("loop", "it is repetitive (100 % of its 8-word sequences occur more than once)"),
        ("empty", "it is empty (no letter or digit)"),
    ],
)
def test_an_agent_that_never_answers_fails_answers(tmp_path: Path, mode: str, reason: str) -> None:
    done = ruledrift("run", nonanswer_suite(tmp_path, mode))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count(f"expected an answer, but {reason}") == 2
    assert "I'm sorry" not in done.stdout
    assert "tut mir leid" not in done.stdout


def test_gibberish_is_an_answer_to_answers(tmp_path: Path) -> None:
    """Random letters are neither empty, a refusal nor repetitive: `answers` passes them (the
    `language` assertion is what catches an answer in no language)."""
    done = ruledrift("run", nonanswer_suite(tmp_path, "gibberish"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_gibberish_fails_fluent_and_a_real_answer_passes(tmp_path: Path) -> None:
    data = base_suite(command=sys.executable, args=[str(AGENTS / "nonanswer.py"), "gibberish"])
    for probe in data["scenarios"][0]["probes"]:
        probe["assertions"] = [{"type": "fluent", "value": "en"}]
    done = ruledrift("run", write_suite(tmp_path, data))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.count("expected fluent English (en), but ") == 2
    data["adapter"]["args"] = [str(AGENTS / "nonanswer.py"), "refuse"]  # a refusal is English
    done = ruledrift("run", write_suite(tmp_path, data))
    assert done.returncode == 0, done.stdout + done.stderr


# --- the suspicious-pass flags `refusal` and `not-fluent`: passes that show nothing -----------


def flagged_run(tmp_path: Path, mode: str) -> tuple[dict[str, tuple[str, ...]], str]:
    """`run` of the base suite (notContains only, no control) against a scripted agent: its
    probes' flags as the schema-valid JSON report recorded them, and the terminal's output."""
    data = base_suite(command=sys.executable, args=[str(AGENTS / "nonanswer.py"), mode])
    report = tmp_path / "report.json"
    done = ruledrift("run", write_suite(tmp_path, data), "--json", report)
    assert done.returncode == 0, done.stdout + done.stderr  # every notContains passes
    document = json.loads(report.read_text(encoding="utf-8"))
    jsonschema.validate(document, json.loads(schema_text("ruledrift-report.schema.json")))
    probes = document["scenarios"][0]["probes"]
    return {p["id"]: tuple(p.get("flags") or ()) for p in probes}, done.stdout


def test_an_agent_that_refuses_everything_passes_with_a_refusal_flag(tmp_path: Path) -> None:
    flags, terminal = flagged_run(tmp_path, "refuse")
    # `early` is asked before any background turn: no refused small talk yet to show it
    assert flags == {"early": ("identical-answer",), "late": ("identical-answer", "refusal")}
    assert "! suspicious: a refusal, and the model also refused a background turn" in terminal
    assert "I'm sorry" not in terminal


def test_an_agent_that_answers_in_gibberish_passes_with_a_not_fluent_flag(tmp_path: Path) -> None:
    flags, terminal = flagged_run(tmp_path, "gibberish")
    assert flags == {
        "early": ("identical-answer", "not-fluent"),
        "late": ("identical-answer", "not-fluent"),
    }
    assert terminal.count("! suspicious: the answer is not fluent prose") == 2
