"""Recorded histories (`history`, `historyMode`): read from real files beside a real suite, and
every problem located in the history file (or at the suite's `history` value for its path)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ruledrift.data import History
from ruledrift.errors import ConfigError
from ruledrift.suite.history import MAX_HISTORY_BYTES
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, position_of, write_suite

EXCHANGES = [("my name is Ada", "hello Ada"), ("I live in Berlin", "nice city")]


def history_lines(exchanges: list[tuple[str, str]] = EXCHANGES) -> str:
    lines = []
    for user, answer in exchanges:
        lines.append(json.dumps({"role": "user", "content": user}))
        lines.append(json.dumps({"role": "assistant", "content": answer}))
    return "\n".join(lines) + "\n"


def with_history(
    tmp_path: Path, text: str | bytes | None, *, name: str = "sessions/4711.jsonl", **fields: Any
) -> Path:
    """A suite whose scenario takes its background from `name` (written with `text`), its own
    turns after it."""
    if text is not None:
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    data = base_suite()
    data["scenarios"][0] |= {"history": name, **fields}
    return write_suite(tmp_path, data)


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    return [str(issue) for issue in caught.value.issues]


def one_problem(path: Path) -> str:
    found = problems(path)
    assert len(found) == 1, found
    return found[0]


def test_history_loads_before_the_scenarios_turns(tmp_path: Path) -> None:
    suite = load_suite(with_history(tmp_path, history_lines()))
    scenario = suite.scenarios[0]
    assert isinstance(scenario.history, History)
    assert scenario.history.path == "sessions/4711.jsonl"
    assert scenario.history.mode == "replay"  # the default
    assert scenario.history.exchanges == tuple(EXCHANGES)
    assert scenario.turn_count == 2 + 3
    assert scenario.turn(1) == ("my name is Ada", "hello Ada")
    assert scenario.turn(3) == ("hello", None)  # the scenario's own first turn
    # the deepest probe is at 3: turns 1 and 2 are replayed, turn 3 is played
    assert scenario.model_calls == 1 + 2


def test_regenerate_mode_keeps_no_recorded_answer(tmp_path: Path) -> None:
    suite = load_suite(with_history(tmp_path, history_lines(), historyMode="regenerate"))
    scenario = suite.scenarios[0]
    assert scenario.turn(1) == ("my name is Ada", None)
    assert scenario.model_calls == 3 + 2


def test_after_turn_counts_the_historys_user_messages(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0] |= {"history": "h.jsonl", "turns": []}
    data["scenarios"][0]["probes"][1]["afterTurn"] = 3
    (tmp_path / "h.jsonl").write_text(history_lines(), encoding="utf-8")
    path = write_suite(tmp_path, data)
    found = one_problem(path)
    assert found.endswith(
        '/scenarios/0/probes/1/afterTurn: probe "late": 3 is greater than the 2 turn(s) of '
        'scenario "smalltalk" (2 in its history)'
    )
    data["scenarios"][0]["probes"][1]["afterTurn"] = 2
    assert load_suite(write_suite(tmp_path, data)).scenarios[0].turns == ()


def test_turns_may_be_left_out(tmp_path: Path) -> None:
    data = base_suite()
    del data["scenarios"][0]["turns"]
    data["scenarios"][0]["probes"].pop()
    assert load_suite(write_suite(tmp_path, data)).scenarios[0].turns == ()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"role": "system", "content": "be nice"}', ":2:10: /role: a system message cannot"),
        ('{"role": "tool", "content": "42"}', ":2:10: /role: tool calls in a recorded history"),
        (
            '{"role": "assistant", "content": "x", "tool_calls": []}',
            ":2:39: /tool_calls: tool calls in a recorded history are not supported yet",
        ),
        ('{"role": "user", "content": "x", "name": "ada"}', ':2:34: /name: unknown field "name"'),
        ('{"role": "bot", "content": "x"}', ':2:10: /role: expected the role "user" or'),
        ('{"content": "x"}', ':2:1: /: expected the role "user" or "assistant"; got no role'),
        ('{"role": "user", "content": "  "}', ":2:29: /content: the content is empty"),
        ('{"role": "user", "content": 7}', ":2:29: /content: expected the text as a string"),
        (
            '{"role": "user", "content": [{"type": "text", "text": "x"}]}',
            ":2:29: /content: expected the text as a string, not a list of content parts",
        ),
        ('{"role": "user"}', ':2:1: /: the message has no "content"'),
        ('{"role": "user", "content": "x",}', ":2:33: /: invalid JSON"),
        ("[1, 2]", ":2:1: /: expected a message"),
    ],
)
def test_a_bad_line_is_located_in_the_history_file(
    tmp_path: Path, line: str, expected: str
) -> None:
    text = json.dumps({"role": "user", "content": "hi"}) + "\n" + line + "\n"
    found = one_problem(with_history(tmp_path, text))
    assert found.startswith(str(tmp_path / "sessions" / "4711.jsonl") + ":2:"), found
    assert expected in found, found


def test_every_bad_line_is_reported_and_text_is_never_quoted(tmp_path: Path) -> None:
    text = '{"role": "system", "content": "my card is 4111"}\n\n{"role": "user", "content": 1}\n'
    found = problems(with_history(tmp_path, text))
    assert [f.split(": ", 1)[0].rsplit(":", 2)[1] for f in found] == ["1", "3"]
    assert not any("4111" in f for f in found)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ":1:1: /: the history holds no messages"),
        (
            history_lines()[: history_lines().rindex('{"role": "assistant"')],
            ":3:1: /: the last user message has no recorded answer",
        ),
        (
            '{"role": "assistant", "content": "hi"}\n',
            ":1:1: /role: expected a user message here (message 1)",
        ),
        (
            '{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}\n',
            ":2:1: /role: expected a assistant message here (message 2)",
        ),
        (b'{"role": "user", "content": "caf\xe9"}\n', ":1:33: /: not UTF-8: byte 0xe9"),
    ],
)
def test_the_conversations_shape_is_checked(
    tmp_path: Path, text: str | bytes, expected: str
) -> None:
    assert expected in one_problem(with_history(tmp_path, text))


def test_crlf_lines_and_a_byte_order_mark_are_read(tmp_path: Path) -> None:
    text = "\ufeff" + history_lines().replace("\n", "\r\n")
    suite = load_suite(with_history(tmp_path, text))
    assert suite.scenarios[0].history is not None
    assert suite.scenarios[0].history.exchanges == tuple(EXCHANGES)


def test_a_history_too_large_is_refused_before_it_is_read(tmp_path: Path) -> None:
    text = history_lines() + " " * MAX_HISTORY_BYTES
    found = one_problem(with_history(tmp_path, text))
    assert ":1:1: /: is " in found
    assert "a history may be at most 16 MiB" in found


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../outside.jsonl", "is outside the suite's folder"),
        ("/etc/passwd", "is an absolute path"),
        ("missing.jsonl", 'history "missing.jsonl": file not found'),
        ("sessions", "is a directory"),
    ],
)
def test_the_path_is_checked_at_the_suites_history_value(
    tmp_path: Path, name: str, expected: str
) -> None:
    (tmp_path / "sessions").mkdir()
    (tmp_path / "outside.jsonl").write_text(history_lines(), encoding="utf-8")
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    (suite_dir / "sessions").mkdir()
    path = with_history(suite_dir, None, name=name)
    line, column = position_of(path, json.dumps(name))
    found = one_problem(path)
    assert found.startswith(f"{path}:{line}:{column}: /scenarios/0/history: "), found
    assert expected in found


def test_a_symlink_may_not_lead_outside_the_suites_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.jsonl").write_text(history_lines(), encoding="utf-8")
    suite_dir = tmp_path / "suite"
    suite_dir.mkdir()
    os.symlink(tmp_path / "secret.jsonl", suite_dir / "link.jsonl")
    assert "is outside the suite's folder" in one_problem(
        with_history(suite_dir, None, name="link.jsonl")
    )
    os.symlink("real.jsonl", suite_dir / "inside.jsonl")  # a link within the folder is fine
    (suite_dir / "real.jsonl").write_text(history_lines(), encoding="utf-8")
    assert load_suite(with_history(suite_dir, None, name="inside.jsonl")).scenarios[0].history


def test_history_mode_needs_a_history_and_a_known_value(tmp_path: Path) -> None:
    data = base_suite()
    data["scenarios"][0]["historyMode"] = "replay"
    found = one_problem(write_suite(tmp_path, data))
    assert 'field "historyMode" needs "history" beside it' in found
    found = one_problem(with_history(tmp_path, history_lines(), historyMode="rerun"))
    assert "/scenarios/0/historyMode" in found


def test_the_suite_hash_includes_the_historys_content(tmp_path: Path) -> None:
    path = with_history(tmp_path, history_lines())
    first = load_suite(path).sha256
    assert load_suite(path).sha256 == first
    (tmp_path / "sessions" / "4711.jsonl").write_text(
        history_lines([("my name is Bob", "hello Bob")]), encoding="utf-8"
    )
    assert load_suite(path).sha256 != first


def test_probe_depths_wait_for_a_readable_history(tmp_path: Path) -> None:
    """A history that cannot be read has no known length: its probes' depths are not checked
    against the scenario's own turns (that would be a second, false problem)."""
    data = base_suite()
    data["scenarios"][0] |= {"history": "h.jsonl", "turns": []}
    (tmp_path / "h.jsonl").write_text('{"role": "system", "content": "x"}\n', encoding="utf-8")
    found = one_problem(write_suite(tmp_path, data))
    assert "a system message cannot be recorded" in found
