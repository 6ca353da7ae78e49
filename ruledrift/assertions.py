"""Checks of a probe's answer: pure text checks in `CHECKS`, and `matches` (JavaScript regular
expressions, evaluated by a `RegexEvaluator` in a worker process so that a catastrophic pattern
cannot hang the run).

Text checks ignore case unless `caseSensitive` is set, by Unicode case folding (`str.casefold`,
so "STRASSE" contains "straße"); `equals` trims both sides first. Messages say what was expected
and never quote the answer, which may hold the very secret a rule protects.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

from ruledrift.jsregex import regex_literal
from ruledrift.model import Assertion, AssertionResult, MatchesAssertion, TextAssertion
from ruledrift.regex_workers import RegexEvaluator, RegexTimeout

__all__ = ["CHECKS", "AssertionTimeout", "TextCheck", "check_answer", "check_matches"]

TextCheck = Callable[[TextAssertion, str], AssertionResult]


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


CHECKS: dict[str, TextCheck] = {
    "contains": check_contains,
    "notContains": check_not_contains,
    "equals": check_equals,
}


def check_matches(assertion: MatchesAssertion, matched: bool) -> AssertionResult:
    literal = regex_literal(assertion.pattern, assertion.flags)
    if matched:
        return AssertionResult("matches", True, f"the answer matches {literal}")
    return AssertionResult("matches", False, f"expected the answer to match {literal}")


class AssertionTimeout(Exception):
    """A `matches` evaluation exceeded the time limit: the probe cannot be judged."""

    def __init__(self, assertion: MatchesAssertion, timeout_s: float) -> None:
        self.assertion, self.timeout_s = assertion, timeout_s
        literal = regex_literal(assertion.pattern, assertion.flags)
        super().__init__(
            f"matching {literal} took longer than {timeout_s:g} s"
            " (the limit for one regular expression); simplify the pattern"
        )


async def check_answer(
    assertions: Sequence[Assertion], answer: str, regex: RegexEvaluator
) -> tuple[AssertionResult, ...]:
    """Every assertion's result, in order (the probe passes when all of them pass).
    Raises AssertionTimeout when a regular expression runs out of time."""
    results = []
    for assertion in assertions:
        if isinstance(assertion, MatchesAssertion):
            try:
                matched = await regex.test(assertion.pattern, assertion.flags, answer)
            except RegexTimeout as timeout:
                raise AssertionTimeout(assertion, timeout.timeout_s) from timeout
            results.append(check_matches(assertion, matched))
        else:
            results.append(CHECKS[assertion.type](assertion, answer))
    return tuple(results)
