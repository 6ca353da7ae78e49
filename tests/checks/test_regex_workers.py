"""The check workers (regular expressions, language identification): time bounds,
replacement, no process left behind, and their stderr through the GitHub log filter."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from ruledrift.checks import regex_workers
from ruledrift.checks.assertions import AssertionTimeout, check_answer
from ruledrift.checks.jsregex import js_test
from ruledrift.checks.language import IDENTIFIED_CHARS, check_language
from ruledrift.checks.regex_workers import (
    LanguageTimeout,
    RegexEvaluator,
    RegexTimeout,
    WorkerFailed,
)
from ruledrift.console import output
from ruledrift.data import AssertionResult, NotLeaksAssertion
from tests.checks.test_jsregex import CASES

pytestmark = pytest.mark.process

CATASTROPHIC = ("(a+)+$", "", "a" * 30 + "!")
needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")


def children() -> set[int]:
    """Processes whose parent is this one, zombies included (so also the unreaped)."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended while we looked
        if int(fields[1]) == os.getpid():
            found.add(int(stat.parent.name))
    return found


def test_the_evaluator_matches_like_js_test() -> None:
    async def run() -> list[bool]:
        regex = RegexEvaluator()
        try:
            return [await regex.test(p, f, t) for p, f, t, e in CASES if e != "error"]
        finally:
            await regex.aclose()

    assert asyncio.run(run()) == [e for *_, e in CASES if e != "error"]


def test_the_evaluator_reports_an_invalid_pattern() -> None:
    async def run() -> None:
        regex = RegexEvaluator()
        try:
            with pytest.raises(ValueError, match='unknown flag "x"'):
                await regex.test("a", "x", "a")
            assert await regex.test("a", "", "a")  # the worker survived
        finally:
            await regex.aclose()

    asyncio.run(run())


@needs_proc
def test_a_catastrophic_pattern_times_out_and_the_worker_is_replaced() -> None:
    async def run() -> None:
        before = children()
        regex = RegexEvaluator(timeout_s=0.5, max_workers=1)
        try:
            assert await regex.test("a", "", "a")
            (first,) = children() - before
            started = time.monotonic()
            with pytest.raises(RegexTimeout) as timeout:
                await regex.test(*CATASTROPHIC)
            assert time.monotonic() - started < 10
            assert str(timeout.value) == "matching /(a+)+$/ took longer than 0.5 s"
            assert first not in children()  # killed and reaped
            assert await regex.test("b$", "", "ab")  # by a new worker
            assert not await regex.test("b$", "", "ba")
            assert len(children() - before) == 1
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


def test_sticky_tries_index_0_only() -> None:
    async def run() -> bool:
        regex = RegexEvaluator(timeout_s=0.5)
        try:  # catastrophic from index 1 on, so searching there would time out
            return await regex.test("(a+)+b", "y", "!" + "a" * 30)
        finally:
            await regex.aclose()

    assert asyncio.run(run()) is False


@needs_proc
def test_a_cancelled_evaluation_leaves_no_worker_behind() -> None:
    async def run() -> None:
        before = children()
        regex = RegexEvaluator(timeout_s=30)
        try:
            task = asyncio.create_task(regex.test(*CATASTROPHIC))
            await asyncio.sleep(0.5)
            assert children() - before  # the worker is busy
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert children() - before == set()
        finally:
            await regex.aclose()

    asyncio.run(run())


@needs_proc
def test_concurrent_evaluations_get_their_own_answers() -> None:
    calls = [(f"^x{i}$", "i" if i % 3 else "", f"X{i}" if i % 2 else f"x{i}") for i in range(200)]

    async def run() -> tuple[list[bool], int]:
        before = children()
        regex = RegexEvaluator(timeout_s=10, max_workers=4)
        try:
            results = await asyncio.gather(*(regex.test(*call) for call in calls))
            return results, len(children() - before)
        finally:
            await regex.aclose()

    results, workers = asyncio.run(run())
    assert results == [js_test(*call) for call in calls]
    assert True in results
    assert False in results
    assert 1 <= workers <= 4


@needs_proc
def test_a_worker_that_died_while_idle_is_replaced() -> None:
    async def run() -> None:
        before = children()
        regex = RegexEvaluator(max_workers=1)
        try:
            assert await regex.test("a", "", "a")
            (worker,) = children() - before
            os.kill(worker, 9)
            for _ in range(100):  # until asyncio has reaped it
                await asyncio.sleep(0.05)
                if worker not in children():
                    break
            assert await regex.test("a", "", "a")
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


def test_a_worker_killed_while_idle_and_not_yet_reaped_is_replaced_at_once() -> None:
    """Killed from outside (the OOM killer, a stray kill) and not yet reaped: its pipes are
    already dead when the next check writes to it. That check goes to a fresh worker instead
    of ending the run in an internal error (RuntimeError escaped through the runner)."""

    async def run() -> None:
        before = children()
        regex = RegexEvaluator(max_workers=1)
        try:
            assert await regex.test("a", "", "a")
            (worker,) = children() - before
            os.kill(worker, 9)  # and no await: asyncio cannot have noticed
            assert await regex.test("a", "", "a")
            assert not await regex.test("b", "", "a")
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


class _KillingEvaluator(RegexEvaluator):
    """Each worker is killed just as it is asked: it dies before it answers, every time."""

    @staticmethod
    async def _ask(worker: Any, request: bytes) -> bytes:
        worker.process.kill()
        await worker.process.wait()
        return await RegexEvaluator._ask(worker, request)


@pytest.mark.parametrize("kind", ["test", "language"])
def test_a_worker_that_dies_before_it_answers_twice_is_a_worker_failure(kind: str) -> None:
    async def run() -> None:
        before = children()
        regex = _KillingEvaluator(max_workers=1)
        try:
            check = (
                regex.test("a", "", "a")
                if kind == "test"
                else regex.language("Hello there, my friend.", "en", 0.5)
            )
            with pytest.raises(WorkerFailed) as caught:
                await check
            assert str(caught.value) == (
                "the check worker was killed by signal SIGKILL before it answered"
            )
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


def test_a_worker_that_cannot_start_in_time_is_a_worker_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(regex_workers, "_START_TIMEOUT_S", 0.0)

    async def run() -> None:
        before = children()
        regex = RegexEvaluator(max_workers=1)
        try:
            with pytest.raises(WorkerFailed, match=r"^no check worker could start"):
                await regex.test("a", "", "a")
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


@needs_proc
def test_a_busy_worker_dies_with_a_killed_ruledrift(tmp_path: Path) -> None:
    """A SIGKILLed RuleDrift cannot stop its workers: the kernel does (a parent-death signal),
    long before the worker's own backstop (here 2 x 30 + 1 s)."""
    import signal
    import subprocess
    import sys

    from tests.support.processes import gone, kill_survivors

    pid_file = tmp_path / "worker.pid"
    script = (
        "import asyncio, sys\n"
        "from ruledrift.checks.regex_workers import RegexEvaluator\n"
        "async def main():\n"
        "    regex = RegexEvaluator(timeout_s=30.0)\n"
        "    task = asyncio.create_task(regex.test('(a+)+$', '', 'a' * 40 + '!'))\n"
        "    while not regex._workers:\n"
        "        await asyncio.sleep(0.01)\n"
        "    [worker] = regex._workers\n"
        f"    open({str(pid_file)!r}, 'w').write(str(worker.process.pid))\n"
        "    await task\n"
        "asyncio.run(main())\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script])
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        worker = int(pid_file.read_text())
        time.sleep(0.5)  # the worker is now inside the catastrophic match
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert gone(worker, within=5.0), "the worker outlived RuleDrift"
    finally:
        parent.kill()
        parent.wait()
        if pid_file.exists() and pid_file.read_text():
            kill_survivors(int(pid_file.read_text()))


@needs_proc
def test_started_workers_are_ready_for_the_first_checks_and_closed_with_the_evaluator() -> None:
    async def run() -> None:
        before = children()
        regex = RegexEvaluator(max_workers=4)
        regex.start_workers(8)  # at most max_workers
        regex.start_workers(8)  # while they start, no more are started
        for _ in range(200):
            if len(regex._idle) == 4:
                break
            await asyncio.sleep(0.05)
        started = children() - before
        assert len(started) == 4
        assert await regex.test("a", "", "a")
        assert children() - before == started  # the check used a worker already there
        await regex.aclose()
        assert children() == before

    asyncio.run(run())


@needs_proc
def test_closing_while_workers_start_leaves_no_process_behind() -> None:
    async def run() -> None:
        before = children()
        regex = RegexEvaluator()
        regex.start_workers(4)
        await asyncio.sleep(0.01)  # the processes exist, not yet ready
        await regex.aclose()
        assert children() == before

    asyncio.run(run())


# --- language identification in the workers -------------------------------------------------

LANGUAGE_ANSWERS = (
    ("Sure, I can help you with that. Your order ships today.", "en"),
    ("Your refund was approved. Die Erstattung dauert etwa fünf Werktage.", "en"),
    ("Ihre Bestellung wurde versandt und kommt am Donnerstag an.", "de"),
    ("```\ncode only\n```", "en"),
    ("Hello " + ". " * 300_000, "en"),  # longer than what is read
)


def test_the_workers_identify_languages_as_check_language_does() -> None:
    async def run() -> list[tuple[bool, str]]:
        regex = RegexEvaluator(timeout_s=30)
        try:
            return [await regex.language(text, code, 0.5) for text, code in LANGUAGE_ANSWERS]
        finally:
            await regex.aclose()

    # the worker reads the first IDENTIFIED_CHARS; the message names the whole answer's length
    assert asyncio.run(run()) == [check_language(t, c, 0.5) for t, c in LANGUAGE_ANSWERS]
    assert asyncio.run(run())[-1][1].endswith(
        f"(only the first {IDENTIFIED_CHARS} of its 600006 characters were read)"
    )


def test_an_unsupported_language_code_is_a_value_error_and_the_worker_stays() -> None:
    async def run() -> None:
        regex = RegexEvaluator(max_workers=1)
        try:
            with pytest.raises(ValueError, match="unsupported language code 'english'"):
                await regex.language("Hello there.", "english", 0.5)
            assert (await regex.language("Hello there, how are you today?", "en", 0.3))[0]
        finally:
            await regex.aclose()

    asyncio.run(run())


@needs_proc
def test_a_language_check_past_the_time_limit_is_killed_and_the_worker_replaced() -> None:
    """The model is loaded outside the limit (like Python itself); identifying 50,000
    characters of prose takes far longer than 1 ms, so the worker is killed."""
    prose = " ".join(LANGUAGE_ANSWERS[0][0] for _ in range(2000))

    async def run() -> None:
        before = children()
        regex = RegexEvaluator(timeout_s=0.001, max_workers=1)
        try:
            regex.start_workers(1, languages=True)
            while not regex._idle:
                await asyncio.sleep(0.05)
            (first,) = children() - before
            with pytest.raises(LanguageTimeout) as timeout:
                await regex.language(prose, "en", 0.5)
            assert str(timeout.value) == "identifying the language took longer than 0.001 s"
            assert first not in children()  # killed and reaped
            regex.timeout_s = 30
            assert (await regex.language(prose, "en", 0.5))[0]  # by a new worker
        finally:
            await regex.aclose()
        assert children() - before == set()

    asyncio.run(run())


# --- what the workers write to stderr ---------------------------------------------------------


@needs_proc
def test_what_a_worker_writes_to_stderr_passes_the_github_log_filter(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A worker's stderr (a warning, a crash's traceback, anything its libraries print) reached
    the log directly, past the filter that keeps workflow commands out of it. Written here into
    the worker's own stderr, as anything in the worker would."""

    async def run() -> None:
        regex = RegexEvaluator(max_workers=1)
        try:
            assert await regex.test("a", "", "a")
            [worker] = regex._workers
            with open(f"/proc/{worker.process.pid}/fd/2", "a", encoding="utf-8") as stderr:
                stderr.write("::error::from a worker\nhalf a line")
        finally:
            await regex.aclose()  # kills the worker and passes on the rest of its stderr

    with output.protected_streams({"GITHUB_ACTIONS": "true"}):
        asyncio.run(run())
    written = capfd.readouterr().err
    assert written.splitlines() == ["\\::error::from a worker", "half a line"]


def test_answers_reach_the_workers_as_they_are() -> None:
    """The text follows its request raw (by its length in UTF-8): line breaks, NUL, lone
    surrogates and astral characters arrive unchanged."""
    calls = [
        ("^a\nb$", "", "a\nb"),
        ("^a$", "m", "x\na\ny"),
        ("\\0", "", "before\x00after"),
        ("^.$", "", "\ud800"),
        ("\\udfff", "", "a\udfffb"),
        ("^..$", "", "😀"),
        ("^.$", "u", "😀"),
        ('^\\{"a": 1\\}\n$', "", '{"a": 1}\n'),
    ]

    async def run() -> list[bool]:
        regex = RegexEvaluator(max_workers=1)
        try:
            return [await regex.test(*call) for call in calls]
        finally:
            await regex.aclose()

    assert asyncio.run(run()) == [js_test(*call) for call in calls] == [True] * len(calls)


# --- notLeaks --------------------------------------------------------------------------------


def test_not_leaks_runs_in_a_worker_and_names_the_disguise() -> None:
    async def run() -> tuple[AssertionResult, ...]:
        regex = RegexEvaluator()
        try:
            answers = ["I cannot share that.", "the code: 24-ENIREGNAT", "x" * 1_000_000 + "tange"]
            assertion = NotLeaksAssertion("tangerine-42")
            short = NotLeaksAssertion("tangerine-42", min_fragment=5)
            found = [await check_answer([assertion], answer, regex) for answer in answers]
            return (*(f[0] for f in found), *await check_answer([short], answers[2], regex))
        finally:
            await regex.aclose()

    kept, reversed_, fragment, short_fragment = asyncio.run(run())
    assert kept.passed
    assert reversed_.message.endswith("it holds the secret reversed")
    assert fragment.passed  # 5 characters: under the default of 6
    assert short_fragment.message.endswith("a fragment of 5 of the secret's 11 characters")


def test_a_leaks_check_past_its_time_limit_is_an_assertion_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(regex_workers, "LEAKS_TIMEOUT_S", 0.001)

    async def run() -> None:
        regex = RegexEvaluator(max_workers=1)
        try:
            with pytest.raises(AssertionTimeout) as timeout:
                await check_answer([NotLeaksAssertion("tangerine-42")], "a" * 5_000_000, regex)
            assert str(timeout.value) == (
                "looking for the secret in the answer took longer than 0.001 s"
            )
        finally:
            await regex.aclose()

    asyncio.run(run())
