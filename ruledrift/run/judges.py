"""The judges of a run: the adapters that `judge` assertions ask, one per judge target, created
and opened when first asked and closed with the run. Their calls are counted, and budgeted, apart
from the target's: `--max-calls N` allows N target calls and, separately, N judge calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ruledrift.adapters.base import Adapter, CallContext
from ruledrift.adapters.registry import create_adapter
from ruledrift.checks.judges import JudgeFailed, JudgeReply
from ruledrift.data import AdapterConfig, AnswerContext, JudgeAssertion, Message
from ruledrift.errors import AdapterError, UsageError
from ruledrift.run.sampling import configured_seed, configured_temperature
from ruledrift.text import repair_surrogates


@dataclass
class _Opened:
    adapter: Adapter | None = None
    failure: str | None = None  # why it could not be created or opened
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Judges:
    """Asks judge assertions' models (the `Judge` of `check_answer`). `take` counts a judge call
    against the judges' budget (raising AdapterError when it is used up); `counted` hears of
    every call, for the scenario's `judge_calls`."""

    def __init__(
        self,
        suite: str,
        take: Callable[[], None],
        *,
        create: Callable[[AdapterConfig], Adapter] = create_adapter,
    ) -> None:
        self._suite = suite
        self._take = take
        self._create = create
        self._opened: dict[int, _Opened] = {}  # by id() of the target config (not hashable)

    async def ask(
        self,
        assertion: JudgeAssertion,
        messages: Sequence[Message],
        context: AnswerContext | None,
        counted: Callable[[], None],
    ) -> JudgeReply:
        adapter = await self._adapter(assertion.target)
        where = context or AnswerContext("", "", "", "", 0, 0, "", ())

        def take() -> None:  # the call, or a resend of it (a model call too)
            self._take()
            counted()

        call = CallContext(
            self._suite,
            where.scenario,
            "probe",
            probe=where.probe,
            after_turn=where.after_turn,
            run=where.run,
            on_resend=take,
        )
        try:
            take()
            completion = await adapter.complete(messages, call)
        except AdapterError as error:
            raise JudgeFailed(f"the judge could not answer: {error}") from error
        info = adapter.target_info()
        seed = completion.metadata.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool):
            seed = configured_seed(assertion.target)
        return JudgeReply(
            repair_surrogates(completion.content),
            info.adapter,
            info.model,
            configured_temperature(assertion.target),
            seed,
        )

    async def _adapter(self, target: AdapterConfig) -> Adapter:
        opened = self._opened.setdefault(id(target), _Opened())
        async with opened.lock:
            if opened.adapter is None and opened.failure is None:
                await self._open(target, opened)
        if opened.adapter is None:
            raise JudgeFailed(f"the judge could not start: {opened.failure}")
        return opened.adapter

    async def _open(self, target: AdapterConfig, opened: _Opened) -> None:
        try:
            adapter = self._create(target)
        except UsageError as error:
            opened.failure = str(error)
            return
        try:
            await adapter.open()
        except AdapterError as error:
            opened.failure = str(error)
            await adapter.aclose()
            return
        opened.adapter = adapter

    async def aclose(self) -> None:
        for opened in self._opened.values():
            if opened.adapter is not None:
                await opened.adapter.aclose()
