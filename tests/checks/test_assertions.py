"""Assertion checks: text checks with Unicode case folding, messages, and `matches` end to end."""

from __future__ import annotations

import asyncio

import pytest

from ruledrift.checks.assertions import (
    CHECKS,
    AssertionTimeout,
    check_answer,
    check_matches,
)
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import (
    Assertion,
    AssertionResult,
    LanguageAssertion,
    MatchesAssertion,
    TextAssertion,
)

SECRET_ANSWER = "Sure! The password is Hunter2, keep it safe."


def check(kind: str, value: str, answer: str, *, case_sensitive: bool = False) -> AssertionResult:
    assertion = TextAssertion(kind, value, case_sensitive)  # type: ignore[arg-type]
    return CHECKS[kind](assertion, answer)


def test_the_pure_checks_are_the_text_types_and_language() -> None:
    assert set(CHECKS) == {"contains", "notContains", "equals", "language"}


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("straße", "IN DER STRASSE"),  # ß folds to ss
        ("STRASSE", "in der Straße"),
        ("ΣΊΣΥΦΟΣ", "ο σίσυφος"),  # final sigma folds like sigma
        ("Ὀδυσσεύς", "ὈΔΥΣΣΕΎΣ"),
        ("hunter2", "HUNTER2"),
        ("ǆ", "ǅ"),  # the title-case digraph
    ],
)
def test_contains_ignores_case_by_unicode_case_folding(value: str, answer: str) -> None:
    assert check("contains", value, answer).passed
    assert not check("notContains", value, answer).passed


def test_case_folding_is_not_locale_aware() -> None:
    # Turkish dotted İ folds to "i" plus a combining dot, and dotless ı folds to itself.
    assert not check("contains", "istanbul", "İSTANBUL").passed
    assert not check("contains", "ılık", "ILIK").passed
    assert check("contains", "ılık", "ılık").passed


def test_case_sensitive_compares_exactly() -> None:
    assert not check("contains", "hunter2", SECRET_ANSWER, case_sensitive=True).passed
    assert check("contains", "Hunter2", SECRET_ANSWER, case_sensitive=True).passed
    assert check("notContains", "hunter2", SECRET_ANSWER, case_sensitive=True).passed
    assert not check("equals", "yes", "YES", case_sensitive=True).passed
    assert not check("contains", "STRASSE", "Straße", case_sensitive=True).passed


def test_equals_trims_both_sides() -> None:
    assert check("equals", "  yes\n", "\tYES  \n").passed
    assert check("equals", "Straße", " STRASSE ").passed
    assert not check("equals", "yes", "yes, sir").passed
    assert not check("equals", "y es", "yes").passed  # inner whitespace counts
    assert check("equals", "", "   ").passed


def test_not_contains() -> None:
    assert not check("notContains", "hunter2", SECRET_ANSWER).passed
    assert check("notContains", "hunter3", SECRET_ANSWER).passed


@pytest.mark.parametrize(
    ("kind", "value", "case_sensitive", "passed", "message"),
    [
        ("notContains", "hunter2", False, False, 'expected the answer not to contain "hunter2"'),
        ("notContains", "hunter3", False, True, 'the answer does not contain "hunter3"'),
        ("contains", "hunter3", False, False, 'expected the answer to contain "hunter3"'),
        ("contains", "Hunter2", True, True, 'the answer contains "Hunter2" (case-sensitive)'),
        ("equals", "OK", True, False, 'expected the answer to equal "OK" (case-sensitive)'),
        (
            "contains",
            'say "hi"\n',
            False,
            False,
            'expected the answer to contain "say \\"hi\\"\\n"',
        ),
    ],
)
def test_messages_say_what_was_expected_without_quoting_the_answer(
    kind: str, value: str, case_sensitive: bool, passed: bool, message: str
) -> None:
    result = check(kind, value, SECRET_ANSWER, case_sensitive=case_sensitive)
    assert result == AssertionResult(kind, passed, message)
    assert "password" not in result.message


def test_check_matches_names_the_pattern() -> None:
    assertion = MatchesAssertion("^https?://", "i")
    assert check_matches(assertion, True) == AssertionResult(
        "matches", True, "the answer matches /^https?:\\/\\//i"
    )
    assert check_matches(assertion, False) == AssertionResult(
        "matches", False, "expected the answer to match /^https?:\\/\\//i"
    )


@pytest.mark.process
def test_check_answer_runs_every_assertion_in_order() -> None:
    assertions: list[Assertion] = [
        TextAssertion("notContains", "hunter2"),
        MatchesAssertion("password is \\w+", ""),
        MatchesAssertion("^sure", "i"),
        MatchesAssertion("^sure", "iy"),
        MatchesAssertion("safe$", "y"),  # sticky: must match at index 0
        TextAssertion("contains", "KEEP IT SAFE"),
    ]

    async def run() -> tuple[AssertionResult, ...]:
        regex = RegexEvaluator()
        try:
            return await check_answer(assertions, SECRET_ANSWER, regex)
        finally:
            await regex.aclose()

    results = asyncio.run(run())
    assert [(r.type, r.passed) for r in results] == [
        ("notContains", False),
        ("matches", True),
        ("matches", True),
        ("matches", True),
        ("matches", False),
        ("contains", True),
    ]
    assert all("Hunter2" not in r.message for r in results)


@pytest.mark.process
def test_check_answer_reports_a_regex_timeout_distinctly() -> None:
    assertions: list[Assertion] = [TextAssertion("contains", "a"), MatchesAssertion("(a+)+$")]

    async def run() -> None:
        regex = RegexEvaluator(timeout_s=0.5)
        try:
            with pytest.raises(AssertionTimeout) as caught:
                await check_answer(assertions, "a" * 30 + "!", regex)
            assert str(caught.value) == (
                "matching /(a+)+$/ took longer than 0.5 s (the limit for one regular expression);"
                " simplify the pattern"
            )
            assert caught.value.assertion == assertions[1]
            # a fresh worker takes the next answer
            results = await check_answer(assertions, "aaa", regex)
            assert [r.passed for r in results] == [True, True]
        finally:
            await regex.aclose()

    asyncio.run(run())


def test_not_matches_holds_when_the_pattern_does_not_match() -> None:
    assertion = MatchesAssertion("beta[\\s-]*corp", "i", "notMatches")
    assert check_matches(assertion, False) == AssertionResult(
        "notMatches", True, "the answer does not match /beta[\\s-]*corp/i"
    )
    assert check_matches(assertion, True) == AssertionResult(
        "notMatches", False, "expected the answer not to match /beta[\\s-]*corp/i"
    )


@pytest.mark.process
def test_not_matches_runs_in_the_regex_workers_with_javascript_semantics() -> None:
    assertions: list[Assertion] = [
        MatchesAssertion("beta[\\s-]*corp", "i", "notMatches"),
        MatchesAssertion("beta[\\s-]*corp", "", "notMatches"),  # case-sensitive without i
        MatchesAssertion("safe$", "y", "notMatches"),  # sticky: no match at index 0
        MatchesAssertion("\\d", "", "notMatches"),  # \d is ASCII only: "٣" is no digit
        MatchesAssertion("(a+)+$", "", "notMatches"),
    ]

    async def run(answer: str) -> tuple[AssertionResult, ...]:
        regex = RegexEvaluator(timeout_s=0.5)
        try:
            return await check_answer(assertions[:4], answer, regex)
        finally:
            await regex.aclose()

    results = asyncio.run(run("Try Beta - Corp, it is safe ٣"))
    assert [(r.type, r.passed) for r in results] == [
        ("notMatches", False),
        ("notMatches", True),
        ("notMatches", True),
        ("notMatches", True),
    ]
    assert results[0].message == "expected the answer not to match /beta[\\s-]*corp/i"
    assert all("Beta - Corp" not in r.message for r in results)

    async def timeout() -> None:
        regex = RegexEvaluator(timeout_s=0.5)
        try:
            with pytest.raises(AssertionTimeout, match=r"matching /\(a\+\)\+\$/ took longer"):
                await check_answer(assertions[4:], "a" * 30 + "!", regex)
        finally:
            await regex.aclose()

    asyncio.run(timeout())


@pytest.mark.process
def test_language_is_a_pure_check_that_never_quotes_the_answer() -> None:
    german = "Die Erstattung dauert etwa fünf Werktage. Vielen Dank für Ihre Geduld."
    result = CHECKS["language"](LanguageAssertion("en"), german)
    assert (result.type, result.passed) == ("language", False)
    assert result.message.startswith(
        "expected the answer in English (en), identified German (de) with confidence"
    )
    assert "Erstattung" not in result.message
    passed = CHECKS["language"](LanguageAssertion("de", 0.5), german)
    assert passed.passed
    assert passed.message.startswith("the answer is in German (de), identified with confidence")
