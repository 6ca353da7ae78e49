"""The tool loop of one turn (a background turn, a probe or a control) when the suite offers
tools: RuleDrift sends the conversation with the tools, answers each call the answer asks for
from the suite's mocks, appends the assistant message as received and one tool message per call,
and asks again, until an answer asks for no call or `maxToolRounds` model calls were made. An
agent that runs its own tools (command protocol 2, report mode) reports its exchange in one call
instead. Scripted turns put the suite's own exchange into the conversation.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from ruledrift.adapters.base import CallContext, Completion
from ruledrift.checks.regex_workers import RegexEvaluator, RegexTimeout, WorkerFailed
from ruledrift.checks.tools import answer_call, record_call, result_text
from ruledrift.data import (
    Message,
    MockResult,
    ScriptedTurn,
    Suite,
    Tool,
    ToolCall,
    ToolCallRecord,
    ToolOffer,
    ToolUse,
)

__all__ = ["MockFailed", "ToolLoop"]


class MockFailed(Exception):
    """A mock could not answer a call (its `matches` matcher ran out of time, or no regex
    worker could evaluate it): the turn cannot go on."""


@dataclass(frozen=True)
class ToolLoop:
    """One scenario run's tool loop: `call` makes one model call (counted and budgeted by the
    runner), `scrub` removes the environment's secrets from what is kept."""

    suite: Suite
    regex: RegexEvaluator
    call: Callable[[Sequence[Message], CallContext], Awaitable[Completion]]
    scrub: Callable[[str], str]

    async def exchange(
        self, messages: list[Message], context: CallContext
    ) -> tuple[Completion, ToolUse | None]:
        """One turn's model calls, on `messages` (the turn's user message last). Without tools,
        one call. With tools, the loop: each answer that asks for calls is appended with one tool
        message per call (the mock's result), and the model is asked again; the suite's
        `toolChoice` is sent on the first round, its `then` ("auto" by default, so the model can
        answer) after it. When
        `maxToolRounds` calls were made and the last answer still asks for calls, those get a
        "not run" error result (the conversation stays well formed) and the turn ran out.
        Returns the final answer (not appended) and the turn's calls (None: no tools)."""
        suite = self.suite
        if not suite.tools:
            return await self.call(tuple(messages), context), None
        records: list[ToolCallRecord] = []
        for round_ in range(1, suite.max_tool_rounds + 1):
            choice = suite.tool_choice if round_ == 1 else suite.tool_choice_then
            asked = replace(context, tools=ToolOffer(suite.tools, choice), round=round_)
            completion = await self.call(tuple(messages), asked)
            if completion.exchange:
                return completion, await self._reported(completion.exchange, messages)
            if not completion.tool_calls:
                return completion, ToolUse(tuple(records), round_)
            content = self.scrub(completion.content)
            messages.append(Message("assistant", content, tool_calls=completion.tool_calls))
            last = round_ == suite.max_tool_rounds
            for call in completion.tool_calls:
                record, result = await self.mock(call, round_)
                if last:
                    record, result = replace(record, outcome="not-run"), self._not_run()
                records.append(self._kept(record))
                messages.append(
                    Message("tool", result_text(result), tool_call_id=call.id, tool_name=call.name)
                )
        return completion, ToolUse(tuple(records), suite.max_tool_rounds, ran_out=True)

    async def play_script(self, turn: int, script: ScriptedTurn, messages: list[Message]) -> None:
        """A scripted turn's calls, as one answer's, and their results (the suite's, else the
        mock's), appended to `messages` (its user message last) and marked as scripted."""
        calls = tuple(
            ToolCall(f"scripted_{turn}_{index}", call.tool, call.arguments_json)
            for index, call in enumerate(script.calls, start=1)
        )
        messages.append(Message("assistant", "", tool_calls=calls, scripted=True))
        for call, scripted in zip(calls, script.calls, strict=True):
            result = scripted.result
            if result is None:
                _, result = await self.mock(call, 1)
            text = result_text(result)
            messages.append(
                Message("tool", text, tool_call_id=call.id, tool_name=call.name, scripted=True)
            )

    async def mock(self, call: ToolCall, round_: int) -> tuple[ToolCallRecord, MockResult]:
        """How the suite's mocks answer `call`; raises MockFailed when a mock's `matches`
        matcher could not be evaluated."""
        try:
            return await answer_call(call, round_, self.suite.tools, self.regex.test, self._check)
        except RegexTimeout as timeout:
            raise MockFailed(
                f"a `matches` matcher of the mock of {call.name!r} took longer than"
                f" {timeout.timeout_s:g} s; simplify the pattern"
            ) from timeout
        except WorkerFailed as failed:
            message = f"a mock's `matches` matcher could not be evaluated: {failed}"
            raise MockFailed(message) from failed

    async def _check(self, tool: Tool, arguments: str) -> str | None:
        """Why a call's arguments are not valid for `tool`, checked in a regex worker: a
        suite's `pattern` runs on Python's re, which a hostile pattern can hold for ever."""
        return await self.regex.arguments_problem(tool.parameters_json, arguments)

    async def _reported(self, exchange: Sequence[Message], messages: list[Message]) -> ToolUse:
        """An agent's own tool exchange (report mode), appended to `messages`: its calls are
        recorded as `reported`, one round per assistant message that made calls. Raises
        MockFailed when no regex worker could check their arguments."""
        records: list[ToolCallRecord] = []
        round_ = 0
        for message in exchange:
            if message.role == "assistant" and message.tool_calls:
                round_ += 1
                for call in message.tool_calls:
                    tool = self.suite.tool(call.name)
                    problem = await self._checked(tool, call.arguments)
                    record = record_call(call, round_, tool, "reported", problem)
                    records.append(self._kept(record))
            messages.append(replace(message, content=self.scrub(message.content)))
        return ToolUse(tuple(records), round_ + 1)

    async def _checked(self, tool: Tool | None, arguments: str) -> str | None:
        if tool is None:
            return None  # record_call names the undeclared tool
        try:
            return await self._check(tool, arguments)
        except WorkerFailed as failed:
            message = f"a call's arguments could not be checked: {failed}"
            raise MockFailed(message) from failed

    def _kept(self, record: ToolCallRecord) -> ToolCallRecord:
        """A call's record as reports keep it: its arguments' text without the environment's
        secrets (its hash is of the arguments as received)."""
        return replace(record, arguments=self.scrub(record.arguments))

    def _not_run(self) -> MockResult:
        rounds = self.suite.max_tool_rounds
        return MockResult(
            error=f"not run: the turn ran out of tool rounds (maxToolRounds {rounds})"
        )
