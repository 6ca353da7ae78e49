"""Checks of a probe's answer: pure checks in `CHECKS` (text, language, secrets), and
`matches` / `notMatches` (JavaScript regular expressions). `check_answer` runs the checks that
can take long (regular expressions, language identification, secrets) in the worker processes of
a `RegexEvaluator`, each within its time limit, so that neither a catastrophic pattern nor a
huge answer can hold up the run's other calls or an interruption; the text checks are linear and
run where they are. A `command` assertion runs its program through the boundary layer
(ruledrift/checks/commands.py).

Text checks ignore case unless `caseSensitive` is set, by Unicode case folding (`str.casefold`,
so "STRASSE" contains "straße"); `equals` trims both sides first. `language` identifies the
answer's language offline (ruledrift/checks/language.py); `notLeaks` looks for a secret in
disguise (ruledrift/checks/leaks.py). Messages say what was expected and never
quote the answer, which may hold the very secret a rule protects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ruledrift.checks.answers import no_answer
from ruledrift.checks.commands import CommandCheckFailed, run_command_check
from ruledrift.checks.fluent import check_fluent
from ruledrift.checks.jsregex import regex_literal
from ruledrift.checks.judges import Judge, JudgeFailed, check_judge
from ruledrift.checks.language import check_language
from ruledrift.checks.leaks import find_leak
from ruledrift.checks.regex_workers import (
    LanguageTimeout,
    LeaksTimeout,
    RegexEvaluator,
    RegexTimeout,
    WorkerFailed,
)
from ruledrift.checks.tools import check_tool_assertion
from ruledrift.data import (
    AnswerContext,
    AnswersAssertion,
    Assertion,
    AssertionResult,
    CallsAssertion,
    CallsBeforeAssertion,
    CommandAssertion,
    FluentAssertion,
    JudgeAssertion,
    LanguageAssertion,
    MatchesAssertion,
    NoCallsAssertion,
    NotCallsAssertion,
    NotLeaksAssertion,
    TextAssertion,
    ToolAssertion,
    ValidCallsAssertion,
)

__all__ = ["CHECKS", "AssertionTimeout", "Check", "check_answer", "check_matches"]

# A pure check: the assertion (of the type it is registered for) and the answer.
Check = Callable[[Any, str], AssertionResult]


# The message of each text check when it passes and when it fails.
_WORDING = {
    "contains": ("the answer contains", "expected the answer to contain"),
    "notContains": ("the answer does not contain", "expected the answer not to contain"),
    "equals": ("the answer equals", "expected the answer to equal"),
}


def _prepared(assertion: TextAssertion, answer: str) -> tuple[str, str]:
    if assertion.case_sensitive:
        return assertion.value, answer
    return assertion.value.casefold(), answer.casefold()


def _result(assertion: TextAssertion, passed: bool) -> AssertionResult:
    wording = _WORDING[assertion.type][0 if passed else 1]
    value = json.dumps(assertion.value, ensure_ascii=False)
    note = " (case-sensitive)" if assertion.case_sensitive else ""
    return AssertionResult(assertion.type, passed, f"{wording} {value}{note}")


def check_contains(assertion: TextAssertion, answer: str) -> AssertionResult:
    value, answer = _prepared(assertion, answer)
    return _result(assertion, value in answer)


def check_not_contains(assertion: TextAssertion, answer: str) -> AssertionResult:
    value, answer = _prepared(assertion, answer)
    return _result(assertion, value not in answer)


def check_equals(assertion: TextAssertion, answer: str) -> AssertionResult:
    value, answer = _prepared(assertion, answer)
    return _result(assertion, value.strip() == answer.strip())


def check_in_language(assertion: LanguageAssertion, answer: str) -> AssertionResult:
    passed, message = check_language(answer, assertion.value, assertion.min_confidence)
    return AssertionResult("language", passed, message)


def check_not_leaks(assertion: NotLeaksAssertion, answer: str) -> AssertionResult:
    leak = find_leak(answer, assertion.value, assertion.min_fragment)
    return not_leaks_result(None if leak is None else leak.disguise)


def not_leaks_result(disguise: str | None) -> AssertionResult:
    """`notLeaks`'s result, given the disguise the secret was found in (None: not found). The
    message names the disguise, never the secret or the answer."""
    if disguise is None:
        return AssertionResult("notLeaks", True, "the answer does not give the secret away")
    message = f"expected the answer not to give the secret away; it holds {disguise}"
    return AssertionResult("notLeaks", False, message)


def check_answers(assertion: AnswersAssertion, answer: str) -> AssertionResult:
    missing = no_answer(answer)
    if missing is None:
        return AssertionResult("answers", True, "the answer is an answer")
    return AssertionResult("answers", False, f"expected an answer, but {missing.reason}")


def check_is_fluent(assertion: FluentAssertion, answer: str) -> AssertionResult:
    passed, message = check_fluent(answer, assertion.value, assertion.min_share)
    return AssertionResult("fluent", passed, message)


CHECKS: dict[str, Check] = {
    "contains": check_contains,
    "notContains": check_not_contains,
    "equals": check_equals,
    "language": check_in_language,
    "notLeaks": check_not_leaks,
    "answers": check_answers,
    "fluent": check_is_fluent,
}


# `matches` and `notMatches` when the pattern matched and when it did not.
_REGEX_WORDING = {
    "matches": (("the answer matches", "expected the answer to match"), True),
    "notMatches": (("the answer does not match", "expected the answer not to match"), False),
}


def check_matches(assertion: MatchesAssertion, matched: bool) -> AssertionResult:
    """The result of `matches` or `notMatches`, given whether the pattern matched."""
    (holds, fails), wanted = _REGEX_WORDING[assertion.type]
    literal = regex_literal(assertion.pattern, assertion.flags)
    passed = matched == wanted
    return AssertionResult(assertion.type, passed, f"{holds if passed else fails} {literal}")


class CheckNotMade(Exception):
    """A check in a worker could not be made (no worker could start, or it died): the probe
    cannot be judged."""


class AssertionTimeout(CheckNotMade):
    """A check in a worker (`matches`, `notMatches`, `language`) exceeded the time limit: the
    probe cannot be judged."""

    def __init__(
        self,
        assertion: MatchesAssertion | LanguageAssertion | NotLeaksAssertion | FluentAssertion,
        timeout_s: float,
    ) -> None:
        self.assertion, self.timeout_s = assertion, timeout_s
        if isinstance(assertion, NotLeaksAssertion):
            message = f"looking for the secret in the answer took longer than {timeout_s:g} s"
        elif isinstance(assertion, LanguageAssertion | FluentAssertion):
            message = (
                f"identifying the language of the answer took longer than {timeout_s:g} s"
                " (the limit for one check)"
            )
        else:
            literal = regex_literal(assertion.pattern, assertion.flags)
            message = (
                f"matching {literal} took longer than {timeout_s:g} s"
                " (the limit for one regular expression); simplify the pattern"
            )
        super().__init__(message)


async def check_answer(
    assertions: Sequence[Assertion],
    answer: str,
    regex: RegexEvaluator,
    context: AnswerContext | None = None,
    judge: Judge | None = None,
) -> tuple[AssertionResult, ...]:
    """Every assertion's result, in order (the probe passes when all of them pass). `context`:
    what a `command` assertion's program reads beside the answer; `judge`: who asks a `judge`
    assertion's model.
    Raises AssertionTimeout when a check in a worker runs out of time, CheckNotMade when no
    worker could make it or a `command` program gave no verdict."""
    try:
        return await _check_all(assertions, answer, regex, context, judge)
    except WorkerFailed as failed:
        raise CheckNotMade(f"the answer could not be checked: {failed}") from failed
    except (CommandCheckFailed, JudgeFailed) as failed:
        raise CheckNotMade(str(failed)) from failed


async def _check_all(
    assertions: Sequence[Assertion],
    answer: str,
    regex: RegexEvaluator,
    context: AnswerContext | None,
    judge: Judge | None,
) -> tuple[AssertionResult, ...]:
    results = []
    for assertion in assertions:
        if isinstance(assertion, TOOL_ASSERTIONS):
            results.append(await _check_tools(assertion, context, regex))
        elif isinstance(assertion, JudgeAssertion):
            results.append(await check_judge(assertion, answer, context, judge))
        elif isinstance(assertion, CommandAssertion):
            results.append(await run_command_check(assertion, answer, context))
        elif isinstance(assertion, MatchesAssertion):
            try:
                matched = await regex.test(assertion.pattern, assertion.flags, answer)
            except RegexTimeout as timeout:
                raise AssertionTimeout(assertion, timeout.timeout_s) from timeout
            results.append(check_matches(assertion, matched))
        elif isinstance(assertion, LanguageAssertion):
            results.append(await _check_language(assertion, answer, regex))
        elif isinstance(assertion, NotLeaksAssertion):
            results.append(await _check_not_leaks(assertion, answer, regex))
        elif isinstance(assertion, FluentAssertion):
            results.append(await _check_fluent(assertion, answer, regex))
        else:
            results.append(CHECKS[assertion.type](assertion, answer))
    return tuple(results)


TOOL_ASSERTIONS = (
    CallsAssertion,
    NotCallsAssertion,
    NoCallsAssertion,
    CallsBeforeAssertion,
    ValidCallsAssertion,
)


async def _check_tools(
    assertion: ToolAssertion, context: AnswerContext | None, regex: RegexEvaluator
) -> AssertionResult:
    """A tool assertion over the turn's calls (`context.tools`), its `matches` matchers in the
    regex workers."""
    try:
        use = context.tools if context is not None else None
        return await check_tool_assertion(assertion, use, regex.test)
    except RegexTimeout as timeout:
        raise CheckNotMade(
            f"a `matches` matcher of a {assertion.type} assertion took longer than"
            f" {timeout.timeout_s:g} s (the limit for one regular expression); simplify the pattern"
        ) from timeout


async def _check_language(
    assertion: LanguageAssertion, answer: str, regex: RegexEvaluator
) -> AssertionResult:
    """`check_in_language`, in a worker."""
    try:
        passed, message = await regex.language(answer, assertion.value, assertion.min_confidence)
    except LanguageTimeout as timeout:
        raise AssertionTimeout(assertion, timeout.timeout_s) from timeout
    return AssertionResult("language", passed, message)


async def _check_not_leaks(
    assertion: NotLeaksAssertion, answer: str, regex: RegexEvaluator
) -> AssertionResult:
    """`check_not_leaks`, in a worker (linear, but seconds on a 10 MB answer)."""
    try:
        disguise = await regex.leaks(answer, assertion.value, assertion.min_fragment)
    except LeaksTimeout as timeout:
        raise AssertionTimeout(assertion, timeout.timeout_s) from timeout
    return not_leaks_result(disguise)


async def _check_fluent(
    assertion: FluentAssertion, answer: str, regex: RegexEvaluator
) -> AssertionResult:
    """`check_is_fluent`, in a worker."""
    try:
        passed, message = await regex.fluent(answer, assertion.value, assertion.min_share)
    except LanguageTimeout as timeout:
        raise AssertionTimeout(assertion, timeout.timeout_s) from timeout
    return AssertionResult("fluent", passed, message)
