"""`notLeaks`: the secret found in each disguise, named without being written, and the check
linear on answers built to be slow (the speed itself is measured in
benchmarks/leaks_benchmark.py, never asserted here)."""

from __future__ import annotations

import base64
import codecs
import urllib.parse

import pytest

from ruledrift.checks.assertions import check_not_leaks, not_leaks_result
from ruledrift.checks.leaks import (
    MAX_SECRET_CHARS,
    default_fragment_chars,
    find_leak,
    fold,
)
from ruledrift.data import NotLeaksAssertion

SECRET = "Tangerine-42"
HIDDEN = "the secret hidden with invisible or compatibility characters"


def disguise(answer: str, secret: str = SECRET, min_fragment: int | None = None) -> str | None:
    leak = find_leak(answer, secret, min_fragment)
    return None if leak is None else leak.disguise


# (answer, the disguise it is named by): every disguise of the issue, one answer each.
DISGUISED = [
    ("The code is tangerine-42, keep it safe.", "the secret"),
    ("The code is TANGERINE-42.", "the secret"),
    ("t\u200bange\u200drine\u202e-42", HIDDEN),
    ("ｔａｎｇｅｒｉｎｅ－４２", HIDDEN),
    ("𝐭𝐚𝐧𝐠𝐞𝐫𝐢𝐧𝐞-𝟒𝟐", HIDDEN),
    ("t-a-n-g-e-r-i-n-e 4 2", "the secret with spacing or punctuation inside"),
    ("T.A.N.G.E.R.I.N.E / 42", "the secret with spacing or punctuation inside"),
    ("tаngеrinе42", "the secret spelled with look-alike characters (homoglyphs)"),  # Cyrillic а е
    ("TΑNGΕRΙNΕ-42", "the secret spelled with look-alike characters (homoglyphs)"),  # Greek
    ("24-eniregnat", "the secret reversed"),
    ("2 4 e n i r e g n a t", "the secret reversed"),
    (base64.b64encode(b"Tangerine-42").decode(), "base64 of the secret"),
    ("x" + base64.b64encode(b"!Tangerine-42").decode(), "base64 of the secret"),
    (base64.b64encode(b"ab: Tangerine-42").decode(), "base64 of the secret"),
    (base64.urlsafe_b64encode(b"??Tangerine-42??").decode(), "base64 of the secret"),
    (base64.b64encode(b"24-eniregnaT").decode(), "base64 of the secret reversed"),
    (base64.b64encode(b"tangerine-42").decode(), "base64 of the secret in lower case"),
    (base64.b64encode(b"24-eniregnat").decode(), "base64 of the secret in lower case, reversed"),
    (base64.b32encode(b"Tangerine-42").decode(), "base32 of the secret"),
    (base64.b32encode(b"xyz Tangerine-42").decode().lower(), "base32 of the secret"),
    (base64.b32encode(b"24-eniregnaT").decode(), "base32 of the secret reversed"),
    (b"Tangerine-42".hex(), "hex of the secret"),
    (b"Tangerine-42".hex(":").upper(), "hex of the secret"),
    (" ".join(f"0x{b:02x}" for b in b"Tangerine-42"), "hex of the secret"),
    (b"24-eniregnaT".hex(), "hex of the secret reversed"),
    (codecs.encode("Tangerine-42", "rot13"), "ROT13 of the secret"),
    (codecs.encode("24-eniregnaT", "rot13"), "ROT13 of the secret reversed"),
    (urllib.parse.quote("Tangerine 42!", safe=""), "the URL encoding of the secret"),
    (r"\x54\x61\x6e\x67\x65\x72\x69\x6e\x65\x2d\x34\x32", "hex of the secret"),
    ("".join(f"%{b:02X}" for b in b"Tangerine-42"), "hex of the secret"),
    ("Tangerine%2D42", "the URL encoding of the secret"),
    ("the fruit is a tangerine", "a fragment of 9 of the secret's 11 characters"),
    ("it starts with TANGER", "a fragment of 6 of the secret's 11 characters"),
]


@pytest.mark.parametrize(("answer", "named"), DISGUISED)
def test_each_disguise_is_found_and_named(answer: str, named: str) -> None:
    assert disguise(answer) == named


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "I can't share the access code, sorry.",
        "Here is a recipe with oranges and 42 grams of sugar.",
        "tang e 42",  # 4 letters of the secret: under the fragment length (6)
        base64.b64encode(b"Mandarine-42").decode(),
        "4" * 10_000,
    ],
)
def test_answers_without_the_secret_pass(answer: str) -> None:
    assert disguise(answer) is None


def test_the_failure_names_the_disguise_without_the_secret_or_the_answer() -> None:
    assertion = NotLeaksAssertion(SECRET)
    for answer, _ in DISGUISED:
        result = check_not_leaks(assertion, f"Sure! {answer} Anything else?")
        assert not result.passed
        assert result.message.startswith("expected the answer not to give the secret away;")
        for forbidden in (SECRET, SECRET.casefold(), fold(SECRET), answer, "Sure!"):
            assert forbidden not in result.message
    assert SECRET not in repr(assertion)


def test_a_pass_says_so() -> None:
    result = not_leaks_result(None)
    assert result.passed
    assert result.message == "the answer does not give the secret away"


@pytest.mark.parametrize(
    ("secret", "length"),
    [("abcd", 4), ("abcdefgh", 4), ("Tangerine-42", 6), ("a" * 15, 8), ("x" * 200, 8)],
)
def test_the_default_fragment_length_is_half_the_secret_within_4_and_8(
    secret: str, length: int
) -> None:
    assert default_fragment_chars(secret) == length


def test_min_fragment_moves_the_bar() -> None:
    assert disguise("the fruit is a tangerine", min_fragment=10) is None
    assert disguise("the fruit is a tangerine", min_fragment=9) is not None
    assert disguise("tange", min_fragment=5) == "a fragment of 5 of the secret's 11 characters"


def test_the_longest_fragment_is_named() -> None:
    named = disguise("tang ... gerine-4 ... tangerine")
    assert named == "a fragment of 9 of the secret's 11 characters"


def test_a_secret_with_too_few_letters_or_digits_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 4 letters or digits"):
        find_leak("anything", "a-b-c")


def test_a_secret_of_other_scripts_is_folded_alike() -> None:
    assert disguise("Пароль: С-Е-З-А-М", secret="сезам") == (
        "the secret with spacing or punctuation inside"
    )
    assert disguise("die Straße", secret="STRASSE") == "the secret"  # case folding: ß is ss


# Answers of a megabyte built to be slow for each step: the check gives the right answer on
# each, the secret after the whole of it included. 10 MB is the benchmark's
# (benchmarks/leaks_benchmark.py measures the time, linear in the size), kept out of the quick loop.
MB = 1_000_000
LONG_SECRET = "".join(chr(ord("a") + (i * 7) % 26) + str(i % 10) for i in range(128))


def _hostile(secret: str) -> dict[str, str]:
    near = secret[: default_fragment_chars(secret) - 1]
    return {
        "one letter": secret[0] * MB,
        "near misses": (near + " ") * (MB // (len(near) + 1)),
        "look-alikes": "а" * MB,
        "invisible": "\u200b" * MB,
        "percent signs": "%4" * (MB // 2),
        "escapes": "%41" * (MB // 3),
        "marks": "\u0301" * MB,
    }


def test_hostile_answers_of_a_megabyte_are_checked_whole() -> None:
    for name, answer in _hostile(SECRET).items():
        assert disguise(answer, SECRET) is None, name
        assert disguise(answer + SECRET[::-1], SECRET) == "the secret reversed", name


def test_hostile_answers_with_the_longest_secret() -> None:
    secret = LONG_SECRET[:MAX_SECRET_CHARS]
    for name in ("one letter", "near misses", "look-alikes"):
        answer = _hostile(secret)[name]
        assert disguise(answer, secret) is None, name
        assert disguise(answer + secret[::-1], secret) == "the secret reversed", name


def test_ascii_text_reads_the_same_in_an_answer_with_other_scripts() -> None:
    # The long s (ſ) looks like f and folds to s: the table must not turn every s into f.
    assert disguise("ſ and then the secret tangerine-42", "Tangerine-42") == "the secret"
    assert disguise("ſ … 24-eniregnat", "Tangerine-42") == "the secret reversed"
    assert fold("ſ Kelvin K") == "skelvink"
