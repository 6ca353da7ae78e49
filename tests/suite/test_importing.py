"""`ruledrift import`'s conversion: each export shape read, the history it writes loadable by a
suite, every problem located in the export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruledrift.errors import ConfigError
from ruledrift.suite.history import read_messages
from ruledrift.suite.importing import convert

MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": "hi there", "refusal": None, "annotations": []},
    {"role": "user", "content": "bye"},
    {"role": "assistant", "content": "see you"},
]
EXPECTED = [("hello", "hi there"), ("bye", "see you")]


def problems(raw: bytes) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        convert("export.json", raw)
    return [str(issue) for issue in caught.value.issues]


@pytest.mark.parametrize(
    "raw",
    [
        json.dumps(MESSAGES, indent=2).encode(),  # a message list
        json.dumps({"model": "gpt-4o", "messages": MESSAGES}).encode(),  # a request body
        "\n".join(json.dumps(m) for m in MESSAGES).encode() + b"\n",  # JSONL
        b"\xef\xbb\xbf" + "\r\n".join(json.dumps(m) for m in MESSAGES).encode(),  # BOM, CRLF
    ],
)
def test_each_shape_becomes_the_same_history(raw: bytes) -> None:
    imported = convert("export.json", raw)
    assert imported.messages == 4
    assert imported.dropped == 1  # the system message
    exchanges, issues = read_messages("h.jsonl", imported.data)
    assert issues == []
    assert exchanges == EXPECTED
    assert [set(json.loads(line)) for line in imported.data.splitlines()] == [
        {"role", "content"}
    ] * 4


def test_text_parts_are_joined_and_non_ascii_is_kept() -> None:
    parts = [{"type": "text", "text": "Grüße"}, "und", {"type": "input_text", "text": "🙂"}]
    messages = [{"role": "user", "content": parts}, {"role": "assistant", "content": "ok"}]
    imported = convert("e.json", json.dumps(messages).encode())
    assert read_messages("h", imported.data)[0] == [("Grüße\nund\n🙂", "ok")]
    assert "Grüße".encode() in imported.data


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            '/1/content/0: a content part of type "image_url": a history holds text only',
        ),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]}],
            "/1/tool_calls: tool calls are not supported in a history yet",
        ),
        ([{"role": "tool", "content": "42"}], "/1/role: tool calls are not supported"),
        ([{"role": "bot", "content": "x"}], '/1/role: expected the role "user" or "assistant"'),
        ([{"role": "user", "content": " "}], "/1/content: the content is empty"),
        ([{"role": "user"}], "/1: expected the text; got no content"),
        ([7], "/1: expected a message"),
    ],
)
def test_a_bad_message_is_located_in_the_export(messages: list[object], expected: str) -> None:
    raw = json.dumps([{"role": "user", "content": "a"}, *messages], indent=1).encode()
    found = problems(raw)
    assert len(found) == 1, found
    assert expected in found[0]
    assert found[0].startswith("export.json:")


def test_jsonl_problems_name_their_line() -> None:
    raw = b'{"role": "user", "content": "a"}\n\n{"role": "user", "content": "b", }\n'
    assert problems(raw) == [
        "export.json:3:34: /: invalid JSON: expected a double-quoted field name, found '}' "
        '(expected a list of messages ({"role": …, "content": …}), an object with "messages", '
        "or JSONL with one message a line)"
    ]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"", "export.json:1:1: /: the file is empty"),
        (b'{"title": "x"}', 'an object without a list under "messages"'),
        (b"[1, 2", "export.json:1:6: /: invalid JSON"),
        (b'[{"role": "system", "content": "x"}]', "holds no user or assistant message"),
        (
            json.dumps([{"role": "user", "content": "a"}] * 2).encode(),
            "export.json:1:45: /1/role: expected a assistant message here (message 2",
        ),
        (
            json.dumps([{"role": "user", "content": "a"}]).encode(),
            "export.json:1:2: /0: the last user message has no answer",
        ),
        (b'[{"role": "user", "content": "caf\xe9"}]', "export.json:1:34: /: not UTF-8"),
    ],
)
def test_the_export_as_a_whole_is_checked(raw: bytes, expected: str) -> None:
    found = problems(raw)
    assert len(found) == 1, found
    assert expected in found[0]


def test_no_message_text_is_quoted_in_a_problem(tmp_path: Path) -> None:
    raw = json.dumps([{"role": "patient", "content": "my diagnosis is X-4711"}]).encode()
    assert not any("X-4711" in problem for problem in problems(raw))
