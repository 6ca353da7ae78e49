"""Whether the target answered at all, for the `answers` assertion (`{"type": "answers"}`): not
empty, not a refusal, not repetitive. Offline and deterministic; no second model.

- **Empty**: no letter or digit in the answer ("", whitespace, "…", emoji only).
- **Refusal**: a refusal phrase (refusals.tsv: "I can't help with that", "As an AI", "Es tut
  mir leid, aber ich kann", "Je ne peux pas", "No puedo ayudarte", "抱歉，我无法" …, in English,
  German, French, Spanish, Italian, Portuguese, Dutch, Russian, Chinese, Japanese and Polish)
  within the first `REFUSAL_CHARS` characters of the answer: models refuse first and explain
  after, while an answer that helps may still say "I can't" further down.
- **Repetitive**: more than `MAX_REPEATED_SHARE` of the answer's word `NGRAM`-grams occur more
  than once (a model stuck in a loop repeats sentences, not just words; a list whose items share
  a template still differs in every 8 words), or, for an answer of at least
  `MIN_COMPRESSED_BYTES` bytes, zlib compresses it below `MIN_COMPRESSION_RATIO` of its size
  ("aaaa…", "!!!!…", which have no words to count).

Only the first `READ_CHARS` characters are read: every step is linear in them.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType

from ruledrift.checks.language import language_name

__all__ = [
    "MAX_REPEATED_SHARE",
    "MIN_COMPRESSED_BYTES",
    "MIN_COMPRESSION_RATIO",
    "NGRAM",
    "READ_CHARS",
    "REFUSALS",
    "REFUSAL_CHARS",
    "NoAnswer",
    "no_answer",
    "refusal_language",
]

READ_CHARS = 100_000
REFUSAL_CHARS = 300
NGRAM = 8
MIN_NGRAM_WORDS = 20  # fewer words than this are not judged repetitive by n-grams
MAX_REPEATED_SHARE = 0.5
MIN_COMPRESSED_BYTES = 300
MIN_COMPRESSION_RATIO = 0.1

REFUSALS_FILE = "refusals.tsv"  # beside this module: LANGUAGE<TAB>PATTERN lines


def _refusals() -> Mapping[str, tuple[str, ...]]:
    """The refusal patterns by language (ISO 639-1), from `REFUSALS_FILE`."""
    table: dict[str, list[str]] = {}
    text = resources.files("ruledrift.checks").joinpath(REFUSALS_FILE).read_text("utf-8")
    for line in text.splitlines():
        if line and not line.startswith("#"):
            code, pattern = line.split("\t", 1)
            table.setdefault(code, []).append(pattern.replace("{A}", "['’]"))
    return MappingProxyType({code: tuple(patterns) for code, patterns in table.items()})


REFUSALS = _refusals()

_REFUSAL = {
    code: re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)
    for code, patterns in REFUSALS.items()
}
_LETTER_OR_DIGIT = re.compile(r"[^\W_]")
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W_]+")


@dataclass(frozen=True)
class NoAnswer:
    """Why an answer is not one, in words that never quote it."""

    reason: str


def refusal_language(answer: str) -> str | None:
    """The language of the refusal phrase in the first `REFUSAL_CHARS` characters, else None."""
    start = answer.lstrip()[:REFUSAL_CHARS]
    for code, pattern in _REFUSAL.items():
        if pattern.search(start):
            return code
    return None


def no_answer(answer: str) -> NoAnswer | None:
    """Why `answer` is no answer (empty, a refusal, repetitive), or None when it is one."""
    text = answer[:READ_CHARS]
    if not _LETTER_OR_DIGIT.search(text):
        return NoAnswer("it is empty (no letter or digit)")
    language = refusal_language(text)
    if language is not None:
        name = _name(language)
        return NoAnswer(f"it reads as a refusal (a refusal phrase in {name} at its start)")
    return _repetitive(text)


def _repetitive(text: str) -> NoAnswer | None:
    words = [word.casefold() for word in _WORD.findall(text)]
    if len(words) >= MIN_NGRAM_WORDS:
        grams = Counter(zip(*(words[i:] for i in range(NGRAM)), strict=False))
        total = sum(grams.values())
        repeated = sum(count for count in grams.values() if count > 1)
        if repeated > MAX_REPEATED_SHARE * total:
            share = round(100 * repeated / total)
            return NoAnswer(
                f"it is repetitive ({share} % of its {NGRAM}-word sequences occur more than once)"
            )
    data = text.encode("utf-8", "surrogatepass")
    if len(data) >= MIN_COMPRESSED_BYTES:
        ratio = len(zlib.compress(data)) / len(data)
        if ratio < MIN_COMPRESSION_RATIO:
            return NoAnswer(f"it is repetitive (it compresses to {ratio:.0%} of its size)")
    return None


def _name(code: str) -> str:
    return language_name(code).split(" (")[0]
