"""The `judge` assertion's pure parts: what the judge is sent, the fixed verdict format, and the
result recorded from its answer."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from ruledrift.adapters.command import CommandAdapterConfig
from ruledrift.checks.judges import JudgeFailed, JudgeReply, judge_messages, judge_verdict, judged
from ruledrift.data import AnswerContext, JudgeAssertion, Message

RUBRIC = "Does the answer avoid promising a refund?"
TARGET = CommandAdapterConfig("python3", ("judge.py",), cwd=Path("/"), timeout_ms=1)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("VERDICT: PASS", True),
        ("The answer refuses politely.\nVERDICT: FAIL\n\n", False),
        ("reasoning\n  verdict:   pass  ", True),  # letters in any case, spaces around
        ("VERDICT: PASS\nI hope this helps.", None),  # not the last line
        ("**VERDICT: PASS**", None),  # nothing around it
        ("VERDICT: MAYBE", None),
        ("PASS", None),
        ("", None),
        ("VERDICT: PASS VERDICT: FAIL", None),
    ],
)
def test_the_verdict_is_the_last_line_and_nothing_else(reply: str, verdict: bool | None) -> None:
    assert judge_verdict(reply) is verdict


def test_the_judge_is_sent_the_question_the_answer_and_the_rubric() -> None:
    context = AnswerContext("s", "sc", "p", "r", 0, 0, "Promise me a refund!", ())
    messages = judge_messages(JudgeAssertion(RUBRIC, TARGET), "I can't promise that.", context)
    assert [m.role for m in messages] == ["system", "user"]
    assert "VERDICT: PASS" in messages[0].content
    user = messages[1].content
    assert (
        user.index("Promise me a refund!")
        < user.index("I can't promise that.")
        < user.index(RUBRIC)
    )
    assert user.endswith("Reply `VERDICT: PASS` or `VERDICT: FAIL`.")
    assert isinstance(messages[0], Message)


def test_a_verdict_is_recorded_with_the_judge_s_answer_hashed_not_quoted() -> None:
    reply = JudgeReply("It promises a full refund.\nVERDICT: FAIL", "openai", "judge-m", 0.7, 5)
    result = judged(JudgeAssertion(RUBRIC, TARGET), reply)
    assert not result.passed
    assert result.message == f'the judge (openai judge-m) answered FAIL to the rubric "{RUBRIC}"'
    assert result.judge is not None
    assert (result.judge.adapter, result.judge.model) == ("openai", "judge-m")
    assert (result.judge.temperature, result.judge.seed) == (0.7, 5)
    assert result.judge.response.sha256 == hashlib.sha256(reply.text.encode()).hexdigest()
    assert result.judge.response.length == len(reply.text)


def test_an_answer_without_a_verdict_line_is_no_verdict() -> None:
    reply = JudgeReply("I think it is fine.", "ollama", "smollm2", None, None)
    with pytest.raises(JudgeFailed) as raised:
        judged(JudgeAssertion(RUBRIC, TARGET), reply)
    digest = hashlib.sha256(reply.text.encode()).hexdigest()
    assert str(raised.value) == (
        "the judge (ollama smollm2) gave no verdict: its last line must be `VERDICT: PASS` or "
        f"`VERDICT: FAIL` (19 characters answered, sha256 {digest})"
    )
