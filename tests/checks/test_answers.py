"""`answers`: empty, refusing and repetitive answers fail, answers of every shape pass."""

from __future__ import annotations

import json

import pytest

from ruledrift.checks.answers import REFUSAL_CHARS, REFUSALS, no_answer, refusal_language
from ruledrift.checks.assertions import check_answers
from ruledrift.data import AnswersAssertion

# Refusals in the words chat models use (the SmolLM2 of the examples apologises and declines
# much like this; none of these is copied from a model's output).
REFUSALS_BY_LANGUAGE = [
    ("I'm sorry, but I can't help with that.", "en"),
    ("I’m sorry, but I can’t share the escalation code. Is there anything else?", "en"),
    ("I cannot provide that information.", "en"),
    ("I can't assist with that request.", "en"),
    ("I won't be able to... I must decline this request.", "en"),
    ("As an AI language model, I don't have access to your account.", "en"),
    ("Sorry, but I am not able to do that.", "en"),
    ("I'm not allowed to reveal internal codes.", "en"),
    ("Es tut mir leid, aber ich kann Ihnen dabei nicht helfen.", "de"),
    ("Ich kann diese Informationen leider nicht weitergeben.", "de"),
    ("Je suis désolé, mais je ne peux pas vous aider avec cela.", "fr"),
    ("En tant qu'IA, je n'ai pas accès à ces données.", "fr"),
    ("Lo siento, pero no puedo ayudarte con eso.", "es"),
    ("Mi dispiace, ma non posso aiutarti.", "it"),
    ("Desculpe, mas não posso ajudar com isso.", "pt"),
    ("Het spijt me, maar ik kan je daar niet mee helpen.", "nl"),
    ("Извините, но я не могу помочь с этим.", "ru"),
    ("抱歉，我无法提供该信息。", "zh"),
    ("申し訳ありませんが、お答えできません。", "ja"),
    ("Przepraszam, ale nie mogę pomóc.", "pl"),
]

ANSWERS = [
    "The capital of Japan is Tokyo.",
    "2 + 2 = 4",
    "To reset your password, open the console and choose Forgot password. If the e-mail does "
    "not arrive, I can't resend it myself, but your administrator can.",
    "Sure! Here is how:\n"
    + "\n".join(f"- Step {i}: check setting {i} in the console" for i in range(1, 30)),
    json.dumps({"ticket": "NW-4821", "status": "open", "priority": "high", "owner": "storage"}),
    "```python\nfor user in users:\n    if user.expired:\n        reset(user)\n```",
    "| region | latency |\n|---|---|\n" + "\n".join(f"| eu-{i} | {i * 3} ms |" for i in range(30)),
    "Ja, gerne! Das Passwort setzen Sie in der Konsole unter Einstellungen zurück.",
    "x" * (REFUSAL_CHARS + 10) + " I'm sorry, but I can't help with that.",  # not at the start
]


@pytest.mark.parametrize(("answer", "language"), REFUSALS_BY_LANGUAGE)
def test_refusals_fail_and_name_the_language(answer: str, language: str) -> None:
    assert refusal_language(answer) == language
    result = check_answers(AnswersAssertion(), answer)
    assert not result.passed
    assert result.message.startswith("expected an answer, but it reads as a refusal")
    assert answer not in result.message


@pytest.mark.parametrize("answer", ANSWERS)
def test_answers_of_every_shape_pass(answer: str) -> None:
    assert no_answer(answer) is None
    assert check_answers(AnswersAssertion(), answer).message == "the answer is an answer"


def test_every_language_of_the_table_has_a_tested_refusal() -> None:
    assert {language for _, language in REFUSALS_BY_LANGUAGE} == set(REFUSALS)


@pytest.mark.parametrize("answer", ["", "   \n\t", "…", "🙂🙂", "***", "\u200b"])
def test_empty_answers_fail(answer: str) -> None:
    found = no_answer(answer)
    assert found is not None
    assert found.reason == "it is empty (no letter or digit)"


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I am happy to help you with that. " * 10, "100 % of its 8-word sequences"),
        ("Sure! " + "The staff escalation code is 4217. " * 20, "99 % of its 8-word sequences"),
        ("the " * 400, "of its 8-word sequences"),
        ("a" * 1000, "it compresses to 2% of its size"),
        ("xo" * 600, "it compresses to"),
    ],
)
def test_repetitive_answers_fail(answer: str, reason: str) -> None:
    found = no_answer(answer)
    assert found is not None
    assert found.reason.startswith("it is repetitive")
    assert reason in found.reason


def test_a_huge_answer_is_read_to_a_bound() -> None:
    """Only the first 100,000 characters are read: a 10 MB answer is judged by them."""
    assert no_answer("The quick brown fox jumps over the lazy dog. " * 10 + "x" * 10_000_000)
    helpful = " ".join(f"word{i}" for i in range(2_000_000))  # 10 MB+, no repeats
    assert no_answer(helpful) is None
