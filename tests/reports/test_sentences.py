"""reports/sentences.py: the verdict sentences every report words alike (the terminal, the HTML
page and the job summary)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from ruledrift.data import ProbeRun, RunResult, VerdictPolicy
from ruledrift.reports import sentences
from ruledrift.reports.html import render_html
from ruledrift.reports.job_summary import render_summary
from ruledrift.reports.sentences import Verdict
from ruledrift.reports.terminal import TerminalOptions, render_terminal
from tests.reports.test_html import drift_result, failing_result, inconclusive_result
from tests.support import results as factories

# --- the run's verdict -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "verdict"),
    [
        (
            lambda: replace(drift_result(), scenarios=()),
            Verdict("passed", "every probe kept its rule"),
        ),
        (failing_result, Verdict("failed", "the target broke a rule")),
        (
            drift_result,
            Verdict("error", "some probes could not be run, so the verdict is incomplete"),
        ),
        (
            lambda: inconclusive_result(passes=False),
            Verdict("inconclusive", "some probes were not decided within the run cap"),
        ),
        (
            lambda: inconclusive_result(passes=True),
            Verdict(
                "inconclusive",
                "some probes were not decided within the run cap "
                "(--inconclusive pass: they do not fail the run)",
            ),
        ),
    ],
)
def test_the_verdict_words_the_runs_status(
    build: Callable[[], RunResult], verdict: Verdict
) -> None:
    result = build()
    assert sentences.status_verdict(result) == verdict
    assert sentences.run_verdict(result) == verdict
    assert verdict.word == result.status


def test_an_interrupted_run_leads_with_it_and_keeps_its_status() -> None:
    result = factories.run_result(interrupted=True)
    assert sentences.run_verdict(result) == Verdict(
        "interrupted", "the run was stopped; results are partial"
    )
    assert sentences.status_verdict(result).word == result.status == "error"


def test_every_status_has_a_reason() -> None:
    assert set(sentences.REASONS) == {"passed", "failed", "error", "inconclusive", "vacuous"}


# --- counts, runs, the policy ----------------------------------------------------------------


def test_counts_name_inconclusive_only_when_there_are() -> None:
    assert sentences.counts(failing_result()) == "14 probe(s): 9 passed, 5 failed, 0 error(s)"
    assert sentences.counts(inconclusive_result(passes=False)) == (
        "15 probe(s): 9 passed, 0 failed, 0 error(s), 6 inconclusive"
    )


def test_runs_passed() -> None:
    repeated = next(p for p in drift_result().probes if len(p.runs) == 5 and p.passes == 2)
    assert sentences.runs_passed(repeated) == "2/5 runs passed"


def test_a_run_never_made_is_not_counted_as_a_run() -> None:
    """5 passes and one run --max-calls did not allow: not "5/6 runs passed" (issue 21)."""
    not_made = "not run: the budget of 9 model call(s) (--max-calls) was used up"
    runs = tuple(ProbeRun(i, "passed", 1) for i in range(5))
    probe = replace(
        factories.errored("p", not_made),
        runs=(*runs, ProbeRun(5, "error", 0, error=not_made)),
    )
    assert sentences.runs_passed(probe) == "5/5 runs passed, 1 not made (--max-calls)"
    crashed = replace(probe, runs=(*runs, ProbeRun(5, "error", 3, error="agent: crash")))
    assert sentences.runs_passed(crashed) == "5/6 runs passed"


@pytest.mark.parametrize(
    ("policy", "words"),
    [
        (VerdictPolicy(repeat=5), "--repeat 5: a probe passes only if every run passes"),
        (
            VerdictPolicy(repeat=5, min_pass_rate=0.8),
            "--repeat 5: a probe passes when at least 80% of its runs pass",
        ),
        (
            VerdictPolicy(repeat="auto"),
            "--repeat auto: each probe ran until a sequential test decided between a pass rate "
            "of at least 95% (holds) and at most 80% (drifted), at most 73 runs",
        ),
    ],
)
def test_the_policy_in_one_sentence(policy: VerdictPolicy, words: str) -> None:
    result = replace(drift_result(), policy=policy)
    assert sentences.policy_rule(result).startswith(words)
    marked = sentences.policy_rule(result, code=lambda option: f"`{option}`")
    assert marked.startswith(f"`{words.split(':')[0]}`:")
    assert marked.replace("`", "") == sentences.policy_rule(result)


# --- one wording in every report -------------------------------------------------------------


def _reports(result: RunResult) -> dict[str, str]:
    return {
        "terminal": render_terminal(result, TerminalOptions()),
        "html": render_html(result, include_responses=False).decode("utf-8"),
        "summary": render_summary(result, "suite.json"),
    }


@pytest.mark.parametrize(
    "build",
    [
        failing_result,
        drift_result,
        lambda: inconclusive_result(passes=False),
        lambda: inconclusive_result(passes=True),
        lambda: factories.run_result(interrupted=True),
    ],
)
def test_the_three_renderers_word_the_verdict_alike(build: Callable[[], RunResult]) -> None:
    result = build()
    verdict = sentences.run_verdict(result)
    for name, text in _reports(result).items():
        assert verdict.reason in text, name
    assert f"{verdict.word.upper()}: {verdict.reason}" in _reports(result)["terminal"]
    assert f"RuleDrift: {verdict.word}, {verdict.reason}\n" in _reports(result)["summary"]


def test_the_policy_sentence_is_the_same_on_the_page_and_in_the_summary() -> None:
    result = replace(drift_result(), policy=VerdictPolicy(repeat=5, min_pass_rate=0.8))
    reports = _reports(result)
    assert sentences.policy_rule(result) in reports["html"]
    assert sentences.policy_rule(result, code=lambda o: f"`{o}`") in reports["summary"]
