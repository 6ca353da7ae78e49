"""`answers` and `fluent` against real answers of a real model: SmolLM2-135M's, recorded on
2026-12-02 (tests/data/smollm2_answers.json, labelled by hand): its refusals fail `answers`, its
word salad at temperature 2.5 fails `fluent`, and every other answer it gave passes both (the
Spanish ones failing English fluency, as they should)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruledrift.checks.answers import no_answer, refusal_language
from ruledrift.checks.fluent import (
    FLAG_CHARS,
    MIN_FUNCTION_SHARE,
    check_fluent,
    function_share,
    not_fluent,
)

DATA = json.loads(
    (Path(__file__).parents[1] / "data" / "smollm2_answers.json").read_text(encoding="utf-8")
)
ANSWERS: list[dict[str, Any]] = DATA["prompted"]["answers"] + DATA["example"]["answers"]


def labelled(label: str) -> list[str]:
    return [item["answer"] for item in ANSWERS if item["label"] == label]


def test_the_set_holds_each_kind() -> None:
    counts = {
        label: len(labelled(label)) for label in ("refusal", "gibberish", "answer", "spanish")
    }
    assert counts == {"refusal": 2, "gibberish": 4, "answer": 58, "spanish": 2}


@pytest.mark.parametrize("answer", labelled("refusal"))
def test_a_real_refusal_is_no_answer(answer: str) -> None:
    assert refusal_language(answer) == "en"
    found = no_answer(answer)
    assert found is not None
    assert found.reason.startswith("it reads as a refusal")


@pytest.mark.parametrize("answer", labelled("gibberish"))
def test_real_word_salad_is_not_fluent(answer: str) -> None:
    share = function_share(answer, "en")
    assert share is not None
    assert share < MIN_FUNCTION_SHARE
    passed, message = check_fluent(answer, "en", 0.6)
    assert not passed
    assert "reads as a salad of English (en) words, not sentences" in message
    assert answer[:20] not in message


@pytest.mark.parametrize("answer", labelled("answer"))
def test_every_other_real_answer_answers_and_is_fluent(answer: str) -> None:
    assert no_answer(answer) is None
    passed, message = check_fluent(answer, "en", 0.6)
    assert passed, message


@pytest.mark.parametrize("answer", labelled("spanish"))
def test_a_real_spanish_answer_is_not_fluent_english(answer: str) -> None:
    assert no_answer(answer) is None
    assert not check_fluent(answer, "en", 0.6)[0]
    assert check_fluent(answer, "es", 0.6)[0]


# --- the suspicious-pass flag `not-fluent`: no language expected ---------------------------


@pytest.mark.parametrize("answer", labelled("gibberish"))
def test_a_real_salad_of_words_is_not_fluent(answer: str) -> None:
    assert not_fluent(answer)


@pytest.mark.parametrize("answer", labelled("answer") + labelled("refusal") + labelled("spanish"))
def test_real_prose_in_any_language_is_fluent(answer: str) -> None:
    """SmolLM2's answers, its refusals and its Spanish: none is flagged (no false alarm on 62)."""
    assert not not_fluent(answer)


@pytest.mark.parametrize(
    "answer",
    [
        "Yes.",  # too short to judge
        "- Northwind Storage\n- Northwind Compute\n- Northwind Backup\n- Northwind Mail\n" * 4,
        "```python\n" + "value = compute(alpha, beta, gamma)\n" * 20 + "```",
        '{"status": "ok", "items": ["storage", "compute", "backup"], "count": 3}',
        "Nous vendons du stockage, du calcul et des sauvegardes pour les petites entreprises "
        "de la région, avec une assistance en français tous les jours de la semaine.",
    ],
)
def test_lists_code_json_and_other_languages_are_not_flagged(answer: str) -> None:
    assert not not_fluent(answer)


def test_random_letters_are_not_fluent() -> None:
    letters = "qzx vbnm plkj hgf wrtz xcvb nmlk jhgf dsaq wert zuio pasd fghj klyx cvbn mqwe"
    assert not_fluent(letters)


def test_only_the_first_flag_chars_are_read_for_the_flag() -> None:
    """The flag is read in-process by every report: what follows FLAG_CHARS does not count."""
    prose = labelled("answer")[1]
    salad = labelled("gibberish")[0]
    padded = (prose + " ") * (FLAG_CHARS // len(prose) + 1)
    assert not not_fluent(padded[:FLAG_CHARS] + salad * 50)
    salads = (salad + " ") * (FLAG_CHARS // len(salad) + 1)
    assert not_fluent(salads[:FLAG_CHARS] + padded)
