"""app.running's event loop: a run's results are never formatted on the way out."""

from __future__ import annotations

import asyncio
import dataclasses
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruledrift.app import run_against
from ruledrift.app.running import run_loop
from ruledrift.data import Suite, Tool, canonical_json
from ruledrift.data.location import Location
from ruledrift.suite.load import load_suite
from tests.support.recording_adapter import RecordingAdapter
from tests.support.suites import base_suite, write_suite


class Noisy:
    """A result whose repr is counted: the run's results are large, and formatting them for
    nothing cost 0.1 ms of CPU per model call."""

    reprs = 0

    def __repr__(self) -> str:
        Noisy.reprs += 1
        return "Noisy()"


async def noisy() -> Noisy:
    await asyncio.sleep(0)
    return Noisy()


@pytest.fixture(autouse=True)
def default_sigint() -> Iterator[None]:
    """asyncio.run installs its own SIGINT handler (and formats the old one on the way out)
    only while the default one is in place, as it is in a command-line run. The tests may run
    where SIGINT is ignored (started in the background by a shell, or under nohup), so they
    put the default in place themselves, and the handler they found back after."""
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    Noisy.reprs = 0
    yield
    signal.signal(signal.SIGINT, found)


def test_run_loop_returns_the_result_without_formatting_it() -> None:
    result = run_loop(noisy())
    assert isinstance(result, Noisy)
    assert Noisy.reprs == 0


def test_asyncio_run_formats_it_which_is_why_run_loop_exists() -> None:
    # if a later CPython stops doing this, run_loop can go back to being asyncio.run
    asyncio.run(noisy())
    assert Noisy.reprs >= 1


def test_run_loop_passes_exceptions_through() -> None:
    async def fails() -> None:
        raise LookupError("from the run")

    with pytest.raises(LookupError, match="from the run"):
        run_loop(fails())


# --- the preflight and tools ---------------------------------------------------------------------


class LegacyAgent(RecordingAdapter):
    """An adapter of one's own written before tools existed: `open` takes no keyword."""

    async def open(self) -> None:  # type: ignore[override]
        self.opened = True


def tools_suite(tmp_path: Path) -> Suite:
    suite = load_suite(write_suite(tmp_path, base_suite()))
    tool = Tool("lookup", "Look an order up", canonical_json({"type": "object"}), Location(1, 1))
    return dataclasses.replace(suite, tools=(tool,))


def test_the_preflight_is_told_when_the_suite_offers_tools(tmp_path: Path) -> None:
    agent = RecordingAdapter()
    assert run_against(tools_suite(tmp_path), agent).status == "passed"
    assert agent.opened_for_tools


def test_an_adapter_without_the_tools_keyword_still_runs_suites_without_tools(
    tmp_path: Path,
) -> None:
    agent = LegacyAgent()
    suite = load_suite(write_suite(tmp_path, base_suite()))
    # the type checker says what the docs say: for a suite with tools, `open` needs the keyword
    assert run_against(suite, agent).status == "passed"  # type: ignore[arg-type]
    assert agent.opened
