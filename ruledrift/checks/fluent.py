"""Whether an answer is mostly words of the expected language, for the `fluent` assertion
(`{"type": "fluent", "value": "en", "minShare": 0.6}`): gibberish, key-mashing and random letters
fail, while a few foreign names, code or a JSON object's keys do not decide.

The identifier is the `language` assertion's (fastText's lid.176.ftz, language.py), offline:

1. Code and addresses are set aside as `language` does (fenced blocks, inline code, URLs,
   e-mail addresses).
2. The words that remain are read in chunks of `CHUNK_WORDS` (6) in order; each chunk is
   identified, and its words count as fluent when it is identified as the expected language
   with at least `CHUNK_CONFIDENCE` (0.3). Six words is the shortest stretch the model names
   reliably: one word alone is too often another language ("OK" reads as Polish).
3. The answer passes when the fluent words are at least `min_share` of all of them (default
   0.6). An answer without words (empty, only code, only numbers) fails.
4. And it must read as sentences, not as a salad of the language's words: in the languages of
   `function_words.tsv` (English, German, French, Spanish, Italian, Portuguese, Dutch, Russian,
   Polish), when its prose (list items and table rows set aside too) has at least
   `MIN_PROSE_WORDS` (12) words, at least `MIN_FUNCTION_SHARE` (0.1) of them must be function
   words (the, of, and …). Prose has 20 to 60 % of them; the word salad SmolLM2-135M writes at
   temperature 2.5 has 0 to 3 % (tests/data/smollm2_answers.json), yet 91 to 100 % of its words
   read as English, so step 3 alone passes it. Lists, JSON and code are not judged by this step.

Measured on English answers: prose, one-sentence answers, Markdown lists and JSON objects with
English keys and values all scored 0.8 to 1.0; random letters 0.0 to 0.1, key-mashing 0.0, German
prose 0.0. A salad of English words scores like English (0.9) in step 3: step 4 catches it.
Only the first `IDENTIFIED_CHARS` characters are read; linear in them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib import resources
from types import MappingProxyType

from ruledrift.checks.language import (
    IDENTIFIED_CHARS,
    SUPPORTED_LANGUAGES,
    identify,
    language_name,
    set_aside,
)

__all__ = [
    "CHUNK_CONFIDENCE",
    "CHUNK_WORDS",
    "DEFAULT_MIN_SHARE",
    "FLAG_CHARS",
    "FUNCTION_WORDS",
    "MIN_FUNCTION_SHARE",
    "MIN_PROSE_WORDS",
    "check_fluent",
    "fluent_share",
    "function_share",
    "not_fluent",
]

FUNCTION_WORDS_FILE = "function_words.tsv"  # beside this module: LANGUAGE<TAB>words
MIN_FUNCTION_SHARE = 0.1
MIN_PROSE_WORDS = 12
CHUNK_WORDS = 6
CHUNK_CONFIDENCE = 0.3
DEFAULT_MIN_SHARE = 0.6
FLAG_CHARS = 2_000  # not_fluent reads no further
# As language.py: a run of letters, or one Chinese or Japanese character.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W\d_]+")


def _function_words() -> Mapping[str, frozenset[str]]:
    table = {}
    text = resources.files("ruledrift.checks").joinpath(FUNCTION_WORDS_FILE).read_text("utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            code, words = line.split("\t", 1)
            table[code] = frozenset(words.split())
    return MappingProxyType(table)


FUNCTION_WORDS = _function_words()
# A line that is an item of a list or a row of a table: "- x", "* x", "• x", "3. x", "2) x", "| x"
_LIST_ITEM = re.compile(r"[ \t]*(?:[-*•+][ \t]|\d{1,3}[.)][ \t]|\|)")


def function_share(text: str, expected: str) -> float | None:
    """The share of function words among the words of `text`'s prose (code, addresses, list
    items and table rows set aside); None when `expected` has no list or the prose has fewer
    than MIN_PROSE_WORDS words (too little to tell a sentence from a salad)."""
    words_of = FUNCTION_WORDS.get(expected)
    if words_of is None:
        return None
    words = [word.casefold() for word in _WORD.findall(_prose(text))]
    if len(words) < MIN_PROSE_WORDS:
        return None
    return sum(1 for word in words if word in words_of) / len(words)


def _prose(text: str) -> str:
    """`text` with code, addresses, list items and table rows set aside."""
    lines = set_aside(text[:IDENTIFIED_CHARS]).splitlines()
    return "\n".join(line for line in lines if not _LIST_ITEM.match(line))


def fluent_share(text: str, expected: str) -> float | None:
    """The share of the words of `text` (code set aside) in chunks identified as `expected`;
    None when it has no words."""
    words = _WORD.findall(set_aside(text[:IDENTIFIED_CHARS]))
    if not words:
        return None
    fluent = 0
    for start in range(0, len(words), CHUNK_WORDS):
        chunk = words[start : start + CHUNK_WORDS]
        guess = identify(" ".join(chunk))
        if guess.language == expected and guess.confidence >= CHUNK_CONFIDENCE:
            fluent += len(chunk)
    return fluent / len(words)


@functools.lru_cache(maxsize=256)  # every report asks for each flagged pass's answer
def not_fluent(text: str) -> bool:
    """Whether `text` is not fluent prose in the language it reads as, for the
    suspicious-pass flag `not-fluent` (no language is expected there): with at least
    MIN_PROSE_WORDS words of prose (code, addresses, list items and table rows set aside),
    under DEFAULT_MIN_SHARE of them in chunks of that language (gibberish, key-mashing, a mix
    of scripts), or a salad of its words (under MIN_FUNCTION_SHARE function words). Shorter
    answers, lists, tables and code are never flagged here. Only the first FLAG_CHARS
    characters are read: the flag is read in-process by every report, and 2,000 characters
    tell prose from a salad as well as 50,000 (at most about 350 identifications)."""
    prose = _prose(text[:FLAG_CHARS])
    words = _WORD.findall(prose)
    if len(words) < MIN_PROSE_WORDS:
        return False
    language = identify(" ".join(words)).language
    share = fluent_share(prose, language)
    if share is not None and share < DEFAULT_MIN_SHARE:
        return True
    function = function_share(prose, language)
    return function is not None and function < MIN_FUNCTION_SHARE


def check_fluent(
    text: str, expected: str, min_share: float, *, length: int | None = None
) -> tuple[bool, str]:
    """Whether `text` is mostly words of `expected`, with a message that never quotes it."""
    if expected not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language code {expected!r}")
    if not 0.0 <= min_share <= 1.0:
        raise ValueError(f"a share is between 0 and 1, not {min_share}")
    name = language_name(expected)
    share = fluent_share(text, expected)
    if share is None:
        return False, f"expected fluent {name}, but the answer has no words to read"
    percent = f"{int(share * 100)} %"  # rounded down: 59.9 % never shows as a passing 60 %
    bar = f"{min_share:.0%}".replace("%", " %")
    passed = share >= min_share
    function = function_share(text, expected) if passed else None
    if function is not None and function < MIN_FUNCTION_SHARE:
        passed = False
        floor = f"{MIN_FUNCTION_SHARE:.0%}".replace("%", " %")
        message = (
            f"expected fluent {name}, but it reads as a salad of {name} words, not sentences: "
            f"{int(function * 100)} % of its prose are function words (the, of, and …), under "
            f"{floor}"
        )
    elif passed:
        message = f"the answer is fluent {name}: {percent} of its words (at least {bar})"
    else:
        message = f"expected fluent {name}, but {percent} of its words read as {name}, under {bar}"
    if max(len(text), length or 0) > IDENTIFIED_CHARS:
        message += f" (only the first {IDENTIFIED_CHARS} characters were read)"
    return passed, message
