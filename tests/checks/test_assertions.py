"""Assertion checks: text checks with Unicode case folding, messages, and `matches` end to end."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ruledrift.checks.assertions import (
    CHECKS,
    AssertionTimeout,
    CheckNotMade,
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
from ruledrift.run.runner import INTERRUPTED, run_suite
from ruledrift.suite.load import load_suite
from tests.support.cli_process import CI_VARIABLES, ruledrift
from tests.support.processes import wait_for_file
from tests.support.recording_adapter import RecordingAdapter
from tests.support.suites import base_suite, write_suite

SECRET_ANSWER = "Sure! The password is Hunter2, keep it safe."


def check(kind: str, value: str, answer: str, *, case_sensitive: bool = False) -> AssertionResult:
    assertion = TextAssertion(kind, value, case_sensitive)  # type: ignore[arg-type]
    return CHECKS[kind](assertion, answer)


def test_the_pure_checks_are_the_text_types_and_the_answer_checks() -> None:
    assert set(CHECKS) == {
        "contains",
        "notContains",
        "equals",
        "language",
        "notLeaks",
        "answers",
        "fluent",
    }


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


class _DeadWorkers(RegexEvaluator):
    """Every worker dies just as it is asked (as under the OOM killer)."""

    @staticmethod
    async def _ask(worker: Any, request: bytes) -> bytes:
        worker.process.kill()
        await worker.process.wait()
        return await RegexEvaluator._ask(worker, request)


@pytest.mark.process
def test_check_answer_reports_a_check_that_could_not_be_made() -> None:
    """A dead check worker makes the probe unjudgeable (an error of the probe), never an
    exception the runner does not know."""
    assertions: list[Assertion] = [TextAssertion("contains", "a"), MatchesAssertion("a")]

    async def run() -> None:
        regex = _DeadWorkers(max_workers=1)
        try:
            with pytest.raises(CheckNotMade) as caught:
                await check_answer(assertions, "a", regex)
            assert str(caught.value) == (
                "the answer could not be checked: the check worker was killed by signal"
                " SIGKILL before it answered"
            )
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


@pytest.mark.process
def test_a_language_check_past_the_time_limit_is_an_error_of_its_probe(tmp_path: Path) -> None:
    """Identification runs in a worker with the checks' time limit, like a regular expression:
    past it, the worker is killed and the probe cannot be judged (an error, worded plainly)."""
    data = base_suite()
    data["scenarios"][0]["probes"][0]["assertions"] = [{"type": "language", "value": "en"}]
    suite = load_suite(write_suite(tmp_path, data))
    prose = "Sure, I can help you with that. Your order ships today. " * 900

    async def run() -> dict[str, tuple[str, str | None]]:
        regex = RegexEvaluator(timeout_s=0.001)  # 50,000 characters take far longer
        try:
            result = await run_suite(suite, RecordingAdapter(answer=lambda m, c: prose), regex)
        finally:
            await regex.aclose()
        return {p.probe.id: (p.status, p.error) for p in result.probes}

    assert asyncio.run(run()) == {
        "early": (
            "error",
            "identifying the language of the answer took longer than 0.001 s"
            " (the limit for one check)",
        ),
        "late": ("passed", None),
    }


# --- end to end: a check never holds up another call or an interruption ----------------------

# A command agent: scenario "checked" answers BEFORE + REPEATED * TIMES (and says so in MARKER
# first); the others wait for MARKER, then answer at once (after 0.3 s), or after SLEEP seconds
# for background turns.
AGENT = """
import json, os, sys, time
request = json.load(sys.stdin)
context = request["context"]
marker, before, repeated, times, sleep = sys.argv[1:6]
if context["kind"] == "turn":
    time.sleep(float(sleep))
    answer = "Noted."
elif context["scenario"] == "checked":
    answer = before + repeated * int(times) + "a" * 40 + "!"
    open(marker, "w").close()
else:
    while not os.path.exists(marker):
        time.sleep(0.01)
    time.sleep(0.3)
    answer = "Sure, I can help you with that."
sys.stdout.write(json.dumps({"content": answer}, ensure_ascii=False))
"""


def agent_suite(
    tmp_path: Path,
    answer: tuple[str, str, int],
    assertions: list[dict[str, object]],
    *,
    concurrent: bool,
    turn_sleep_s: float = 0.0,
) -> Path:
    agent = tmp_path / "agent.py"
    agent.write_text(AGENT, encoding="utf-8")
    before, repeated, times = answer
    args = [str(agent), str(tmp_path / "answered"), before, repeated, str(times), str(turn_sleep_s)]
    data = base_suite(command=sys.executable, args=args)
    data["adapter"]["timeoutMs"] = 5000
    probe = {"rule": "english-only", "prompt": "Can you help?"}
    checked = [{**probe, "id": "slow", "afterTurn": 0, "assertions": assertions}]
    checked.append({**probe, "id": "later", "afterTurn": 1, "assertions": assertions[:1]})
    scenarios = [{"id": "checked", "turns": ["hello"], "probes": checked}]
    if concurrent:
        other = {"type": "contains", "value": "help"}
        probes = [{**probe, "id": "other", "afterTurn": 0, "assertions": [other]}]
        scenarios = [{**scenarios[0], "probes": checked[:1]}]
        scenarios.append({"id": "concurrent", "turns": ["hello"], "probes": probes})
    data["scenarios"] = scenarios
    return write_suite(tmp_path, data)


# Answers that held the event loop before: a degenerate answer under `language` (checked in
# the process, ~30 s with the first splitter), and 4.9 million control characters whose preview,
# with --include-responses, was escaped in full before 200 were kept (~15 s).
BLOCKING: dict[str, tuple[tuple[str, str, int], list[dict[str, object]]]] = {
    "language check": (("Hello ", ". ", 15_000), [{"type": "language", "value": "en"}]),
    "answer preview": (("", "\x85", 4_900_000), [{"type": "notContains", "value": "x"}]),
}


@pytest.mark.process
@pytest.mark.parametrize("case", sorted(BLOCKING))
def test_a_call_while_an_answer_is_checked_does_not_falsely_time_out(
    case: str, tmp_path: Path
) -> None:
    """Two scenarios at once: one answer is checked (or previewed) while the other scenario's
    agent answers within 0.3 s. Before, the check ran on the event loop, so the other call's
    5 s limit expired before its answer could be read: "did not answer within 5000 ms"."""
    answer, assertions = BLOCKING[case]
    suite = agent_suite(tmp_path, answer, assertions, concurrent=True)
    report = tmp_path / "r.json"
    done = ruledrift("run", suite, "--concurrency", "2", "--include-responses", "--json", report)
    probes = {p["id"]: p for s in json.loads(report.read_text())["scenarios"] for p in s["probes"]}
    assert probes["other"]["status"] == "passed", (probes["other"], done.stderr)
    assert probes["slow"]["status"] in ("passed", "failed"), probes["slow"]


@pytest.mark.process
def test_sigterm_during_a_slow_check_still_writes_every_report(tmp_path: Path) -> None:
    """A cancelled CI job sends SIGTERM while an answer is checked. Before, the language check
    held the event loop (minutes on this answer), so SIGTERM waited for it and the job was
    killed without reports. Now the check's worker is killed at once: the probe is "not run:
    the run was interrupted", every report is written, the exit code is 130."""
    assertions: list[dict[str, object]] = [
        {"type": "language", "value": "en"},
        {"type": "matches", "pattern": "(a+)+$"},  # then 2 s in a worker (the limit)
    ]
    suite = agent_suite(
        tmp_path, ("Hello ", ". ", 100_000), assertions, concurrent=False, turn_sleep_s=60
    )
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "ruledrift", "run", str(suite)]
    command += ["--json", str(out / "r.json"), "--junit", str(out / "r.xml")]
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    pipe = subprocess.PIPE
    with subprocess.Popen(command, stdout=pipe, stderr=pipe, text=True, env=env) as run:
        try:
            wait_for_file(tmp_path / "answered")
            time.sleep(0.3)  # the answer is read and being checked
            run.send_signal(signal.SIGTERM)
            stdout, stderr = run.communicate(timeout=60)
        finally:
            run.kill()
    assert run.returncode == 130, stderr
    assert "INTERRUPTED" in stdout, stdout
    assert sorted(p.name for p in out.iterdir()) == ["r.json", "r.xml"]
    report = json.loads((out / "r.json").read_text(encoding="utf-8"))
    assert report["summary"]["interrupted"] is True
    probes = {p["id"]: p for p in report["scenarios"][0]["probes"]}
    assert (probes["slow"]["status"], probes["slow"]["error"]) == ("error", INTERRUPTED)
