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

Measured on English answers: prose, one-sentence answers, Markdown lists and JSON objects with
English keys and values all scored 0.8 to 1.0; random letters 0.0 to 0.1, key-mashing 0.0, German
prose 0.0. A salad of English words scores like English (0.9): the check reads vocabulary, not
grammar. Only the first `IDENTIFIED_CHARS` characters are read; linear in them.
"""

from __future__ import annotations

import re

from ruledrift.checks.language import (
    IDENTIFIED_CHARS,
    SUPPORTED_LANGUAGES,
    identify,
    language_name,
    set_aside,
)

__all__ = ["CHUNK_CONFIDENCE", "CHUNK_WORDS", "DEFAULT_MIN_SHARE", "check_fluent", "fluent_share"]

CHUNK_WORDS = 6
CHUNK_CONFIDENCE = 0.3
DEFAULT_MIN_SHARE = 0.6
# As language.py: a run of letters, or one Chinese or Japanese character.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W\d_]+")


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
    if passed:
        message = f"the answer is fluent {name}: {percent} of its words (at least {bar})"
    else:
        message = f"expected fluent {name}, but {percent} of its words read as {name}, under {bar}"
    if max(len(text), length or 0) > IDENTIFIED_CHARS:
        message += f" (only the first {IDENTIFIED_CHARS} characters were read)"
    return passed, message
