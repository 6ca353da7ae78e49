"""Loading `notLeaks`: a secret in the file or in an environment variable, and the problems
worded without the secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ruledrift.data import AnswersAssertion, FluentAssertion, NotLeaksAssertion
from ruledrift.errors import ConfigError
from ruledrift.suite.load import load_suite
from tests.support.suites import base_suite, write_suite


def _suite(tmp_path: Path, *assertions: dict[str, Any]) -> Path:
    data = base_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = list(assertions)
    return write_suite(tmp_path, data)


def _problem(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_suite(path)
    issues = [str(issue) for issue in caught.value.issues]
    assert len(issues) == 1, issues
    return issues[0]


def test_a_secret_in_the_file_and_one_in_the_environment_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEDRIFT_TEST_SECRET", "s3cret-Env-Value")
    path = _suite(
        tmp_path,
        {"type": "notLeaks", "value": "tangerine-42"},
        {"type": "notLeaks", "valueEnv": "RULEDRIFT_TEST_SECRET", "minFragment": 10},
    )
    assertions = load_suite(path).scenarios[0].probes[0].assertions
    assert assertions == (
        NotLeaksAssertion("tangerine-42"),
        NotLeaksAssertion("s3cret-Env-Value", 10, "RULEDRIFT_TEST_SECRET"),
    )
    assert "s3cret" not in repr(assertions)


@pytest.mark.parametrize(
    ("assertion", "pointer", "message"),
    [
        (
            {"type": "notLeaks"},
            "",
            'notLeaks takes the secret from "value" or from "valueEnv": give one of them',
        ),
        ({"type": "notLeaks", "value": "abcd", "valueEnv": "X"}, "", "give one of them"),
        ({"type": "notLeaks", "value": ""}, "/value", "must not be empty"),
        ({"type": "notLeaks", "value": "x" * 257}, "/value", "longer than 256 characters"),
        (
            {"type": "notLeaks", "value": "a-b-c"},
            "/value",
            "the secret has fewer than 4 letters or digits",
        ),
        ({"type": "notLeaks", "value": "abcd", "minFragment": 0}, "/minFragment", "at least 1"),
        ({"type": "notLeaks", "valueEnv": "not a name"}, "/valueEnv", ""),
        (
            {"type": "notLeaks", "valueEnv": "RULEDRIFT_TEST_UNSET"},
            "/valueEnv",
            "the environment variable RULEDRIFT_TEST_UNSET (notLeaks valueEnv) is unset or "
            "empty: set it to the secret",
        ),
        (
            {"type": "notLeaks", "valueEnv": "RULEDRIFT_TEST_SHORT"},
            "/valueEnv",
            "the secret has fewer than 4 letters or digits",
        ),
        (
            {"type": "notLeaks", "valueEnv": "RULEDRIFT_TEST_LONG"},
            "/valueEnv",
            "the secret in RULEDRIFT_TEST_LONG has 300 characters; at most 256 are checked",
        ),
    ],
)
def test_problems_are_placed_and_never_show_an_environment_secret(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    assertion: dict[str, Any],
    pointer: str,
    message: str,
) -> None:
    monkeypatch.delenv("RULEDRIFT_TEST_UNSET", raising=False)
    monkeypatch.setenv("RULEDRIFT_TEST_SHORT", "q.z!")
    monkeypatch.setenv("RULEDRIFT_TEST_LONG", "Q" * 300)
    found = _problem(_suite(tmp_path, assertion))
    assert f": /scenarios/0/probes/0/assertions/0{pointer}: " in found
    assert message in found
    assert "q.z!" not in found
    assert "QQQQ" not in found


def test_fluent_and_answers_load_with_their_defaults(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        {"type": "answers"},
        {"type": "fluent", "value": "en"},
        {"type": "fluent", "value": "de", "minShare": 0.8},
    )
    assertions = load_suite(path).scenarios[0].probes[0].assertions
    assert assertions == (
        AnswersAssertion(),
        FluentAssertion("en", 0.6),
        FluentAssertion("de", 0.8),
    )


@pytest.mark.parametrize(
    ("assertion", "pointer", "message"),
    [
        ({"type": "answers", "value": "x"}, "/value", 'unknown field "value"'),
        ({"type": "fluent"}, "", 'missing required field "value"'),
        ({"type": "fluent", "value": "english"}, "/value", 'did you mean "en" for English?'),
        ({"type": "fluent", "value": "en", "minShare": 2}, "/minShare", "at most 1"),
    ],
)
def test_fluent_and_answers_problems(
    tmp_path: Path, assertion: dict[str, Any], pointer: str, message: str
) -> None:
    found = _problem(_suite(tmp_path, assertion))
    assert f": /scenarios/0/probes/0/assertions/0{pointer}: " in found
    assert message in found
