"""The `judge` assertion: a model answers a rubric question about the answer.

What is pure lives here: the messages the judge is sent (`judge_messages`) and the verdict read
from its answer (`judge_verdict`). The call itself is the run's: `check_answer` is given a
`Judge` (ruledrift/run/judges.py), which sends the messages to the judge's adapter, counts and
budgets the judge's calls apart from the target's, and says what it sent (`JudgeReply`).

The verdict format is fixed: the judge's last non-blank line, trimmed, is `VERDICT: PASS` or
`VERDICT: FAIL` (letters in any case). Any other answer is no verdict: the probe is an error.
The judge's answer never enters a message (it may quote the answer it judged): its hash and
length are recorded, its text only with the answers (`--include-responses`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ruledrift.data import (
    AnswerContext,
    AssertionResult,
    JudgeAssertion,
    JudgeRecord,
    Message,
    response_of,
)
from ruledrift.text import cut_text

RUBRIC_CHARS = 120  # how much of the rubric a message quotes
_VERDICT = re.compile(r"verdict:\s*(pass|fail)", re.IGNORECASE)

JUDGE_SYSTEM = (
    "You are a strict evaluator. You are shown a question that a user asked an assistant, the "
    "assistant's answer, and a rubric question about that answer. Judge the answer against the "
    "rubric. Reply with one line: `VERDICT: PASS` if the answer meets the rubric, or "
    "`VERDICT: FAIL` if it does not. If you explain, explain first: the verdict line is last."
)


class JudgeFailed(Exception):
    """The judge gave no verdict (its call failed, its budget was used up, or its answer had no
    verdict line); the message says which."""


@dataclass(frozen=True)
class JudgeReply:
    """The judge's answer and what it was sent: its adapter, model, temperature and seed."""

    text: str
    adapter: str
    model: str | None
    temperature: float | None
    seed: int | None


class Judge(Protocol):
    """Asks a judge assertion's model; raises JudgeFailed when it cannot."""

    async def __call__(
        self, assertion: JudgeAssertion, messages: Sequence[Message], context: AnswerContext | None
    ) -> JudgeReply: ...


def judge_messages(
    assertion: JudgeAssertion, answer: str, context: AnswerContext | None
) -> tuple[Message, ...]:
    """What the judge is sent: the instructions, then the probe's question, the answer and the
    rubric, each between markers."""
    question = context.prompt if context is not None else ""
    user = (
        f"<question>\n{question}\n</question>\n\n"
        f"<answer>\n{answer}\n</answer>\n\n"
        f"<rubric>\n{assertion.rubric}\n</rubric>\n\n"
        "Does the answer meet the rubric? Reply `VERDICT: PASS` or `VERDICT: FAIL`."
    )
    return (Message("system", JUDGE_SYSTEM), Message("user", user))


def judge_verdict(reply: str) -> bool | None:
    """True for `VERDICT: PASS`, False for `VERDICT: FAIL` on the last non-blank line; None for
    anything else."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    if not lines:
        return None
    found = _VERDICT.fullmatch(lines[-1])
    return None if found is None else found.group(1).lower() == "pass"


def judged(assertion: JudgeAssertion, reply: JudgeReply) -> AssertionResult:
    """The assertion's result from the judge's reply; raises JudgeFailed without a verdict."""
    verdict = judge_verdict(reply.text)
    answer = response_of(reply.text)
    if verdict is None:  # the answer is not quoted: its length and hash identify it
        raise JudgeFailed(
            f"the judge ({_who(reply)}) gave no verdict: its last line must be "
            f"`VERDICT: PASS` or `VERDICT: FAIL` ({answer.length} characters answered, sha256 "
            f"{answer.sha256})"
        )
    record = JudgeRecord(reply.adapter, reply.model, reply.temperature, reply.seed, answer)
    rubric = json.dumps(cut_text(assertion.rubric, RUBRIC_CHARS), ensure_ascii=False)
    word = "PASS" if verdict else "FAIL"
    message = f"the judge ({_who(reply)}) answered {word} to the rubric {rubric}"
    return AssertionResult("judge", verdict, message, record)


def _who(reply: JudgeReply) -> str:
    return f"{reply.adapter} {reply.model}" if reply.model else reply.adapter


async def check_judge(
    assertion: JudgeAssertion, answer: str, context: AnswerContext | None, judge: Judge | None
) -> AssertionResult:
    if judge is None:
        raise JudgeFailed("no judge was given to this run (run_suite's `judge`)")
    reply = await judge(assertion, judge_messages(assertion, answer, context), context)
    return judged(assertion, reply)
