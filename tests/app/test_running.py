"""app.running's event loop: a run's results are never formatted on the way out."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator

import pytest

from ruledrift.app.running import run_loop


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
