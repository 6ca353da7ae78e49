"""`fluent`: answers mostly in the expected language pass, gibberish and other languages fail,
and code, lists and JSON behave as documented."""

from __future__ import annotations

import json
import random

import pytest

from ruledrift.checks.assertions import check_is_fluent
from ruledrift.checks.fluent import check_fluent, fluent_share, function_share
from ruledrift.data import FluentAssertion


def _random_words(seed: int, letters: str) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(letters, k=rng.randint(2, 9))) for _ in range(60))


PROSE = (
    "To reset your password, open the Northwind Cloud console and choose Forgot password on the "
    "sign-in page. Enter the e-mail address of your account; we send you a link that is valid "
    "for one hour."
)
FLUENT = [
    PROSE,
    "The capital of Japan is Tokyo.",
    "\n".join(f"- Step {i}: check the setting number {i} in the console" for i in range(1, 8)),
    json.dumps({"status": "open", "summary": "Access logs are missing for the archive bucket"}),
    "Here is the fix:\n```python\nfor x in rows:\n    print(x)\n```\nRun it once more.",
    "Ja, gerne! Öffnen Sie die Konsole und wählen Sie Passwort vergessen auf der Anmeldeseite.",
]
NOT_FLUENT = [
    _random_words(7, "bcdfghjklmnpqrstvwxz"),  # no vowels
    _random_words(3, "abcdefghijklmnopqrstuvwxyz"),  # random letters
    "asdkjh qwe lkjasd oiuqwe zxcmnb asdlkj qweoiu zxcv asdf qwer " * 3,  # key-mashing
    "Um Ihr Passwort zurückzusetzen, öffnen Sie die Konsole und wählen Sie Passwort vergessen.",
]


@pytest.mark.parametrize("answer", FLUENT[:5])
def test_english_answers_of_every_shape_are_fluent(answer: str) -> None:
    passed, message = check_fluent(answer, "en", 0.6)
    assert passed, message
    assert message.startswith("the answer is fluent English (en): ")


def test_a_german_answer_is_fluent_german() -> None:
    assert check_fluent(FLUENT[5], "de", 0.6)[0]


@pytest.mark.parametrize("answer", NOT_FLUENT)
def test_gibberish_and_other_languages_are_not_fluent_english(answer: str) -> None:
    passed, message = check_fluent(answer, "en", 0.6)
    assert not passed
    assert message.startswith("expected fluent English (en), but ")
    assert message.endswith("of its words read as English (en), under 60 %")
    assert answer[:20] not in message


@pytest.mark.parametrize("answer", ["", "42 17", "```\nprint(1)\n```", "🙂"])
def test_an_answer_without_words_is_not_fluent(answer: str) -> None:
    assert check_fluent(answer, "en", 0.6) == (
        False,
        "expected fluent English (en), but the answer has no words to read",
    )


def test_the_share_counts_words_and_the_bar_is_the_assertions() -> None:
    half = PROSE + " " + _random_words(3, "abcdefghijklmnopqrstuvwxyz")[:180]
    share = fluent_share(half, "en")
    assert share is not None
    assert 0.3 < share < 0.9
    assert check_is_fluent(FluentAssertion("en", min_share=0.0), half).passed
    assert not check_is_fluent(FluentAssertion("en", min_share=1.0), half).passed


def test_a_long_answer_says_only_its_beginning_was_read() -> None:
    passed, message = check_fluent(PROSE * 400, "en", 0.6)
    assert passed
    assert message.endswith("(only the first 50000 characters were read)")


# --- sentences, not a salad of words ------------------------------------------------------------

SALAD = (
    "Harbour violet spreadsheet lantern gravel orbit Tuesday marble kettle velvet algorithm "
    "thunder pocket meadow cinnamon ladder"
)


def test_a_salad_of_real_words_is_not_fluent_though_every_word_is_english() -> None:
    assert fluent_share(SALAD, "en") == 1.0  # step 3 alone would pass it
    passed, message = check_fluent(SALAD, "en", 0.6)
    assert not passed
    assert message == (
        "expected fluent English (en), but it reads as a salad of English (en) words, not "
        "sentences: 0 % of its prose are function words (the, of, and …), under 10 %"
    )


def test_lists_tables_and_code_are_set_aside_and_short_prose_is_not_judged() -> None:
    listed = "Northwind sells:\n" + "\n".join(f"- managed database tier {i}" for i in range(20))
    table = "| region | latency |\n|---|---|\n" + "\n".join(f"| eu-{i} | fast |" for i in range(9))
    for answer in (listed, table, "Reboot the storage node.", "```\nfoo bar baz\n```\nDone."):
        assert function_share(answer, "en") is None
    for answer in (listed, "Reboot the storage node."):
        assert check_fluent(answer, "en", 0.6)[0], answer


def test_function_words_are_read_in_the_expected_language_only() -> None:
    german = (
        "Sie können das Passwort in der Konsole unter Einstellungen zurücksetzen, und wir "
        "helfen Ihnen gern, wenn es nicht klappt."
    )
    assert check_fluent(german, "de", 0.6)[0]
    share = function_share(german, "de")
    assert share is not None
    assert share > 0.3
    assert function_share(german, "sv") is None  # no list for Swedish: vocabulary only
