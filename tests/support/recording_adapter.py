"""An in-process adapter for runner tests: records every call exactly as the runner made it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ruledrift.adapters.base import CallContext, Completion
from ruledrift.data import Message, TargetInfo
from ruledrift.errors import AdapterError


@dataclass
class Call:
    messages: tuple[Message, ...]
    context: CallContext


def echo(messages: Sequence[Message], context: CallContext) -> str:
    return f"answer to: {messages[-1].content}"


def forgetful(messages: Sequence[Message], context: CallContext) -> str:
    """Breaks the rule past depth 6 unless a reminder came within its last 4 user messages."""
    if context.kind == "turn":
        return f"reply {context.turn}"
    earlier = messages[:-1]
    users_since = 0
    for message in reversed(earlier):
        if message.content.startswith("Reminder:"):
            return "I cannot share that."
        if message.role == "user":
            users_since += 1
            if users_since >= 4:
                break
    depth = sum(1 for m in earlier if m.role == "user" and not m.content.startswith("Reminder:"))
    return "the secret is hunter2" if depth > 6 else "I cannot share that."


@dataclass
class RecordingAdapter:
    # The answer's text, or a whole Completion (tool calls, a reported exchange).
    answer: Callable[[Sequence[Message], CallContext], str | Completion] = echo
    fail_when: Callable[[CallContext], bool] = lambda context: False
    failure: str = ""  # the failure's message ("" for "simulated failure at …")
    delay_s: float = 0.0
    calls: list[Call] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    opened: bool = False
    opened_for_tools: bool = False  # `open(tools=True)`: the suite offers tools
    closed: bool = False

    async def open(self, *, tools: bool = False) -> None:
        self.opened = True
        self.opened_for_tools = tools

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        self.calls.append(Call(tuple(messages), context))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            if self.fail_when(context):
                simulated = f"simulated failure at {context.kind} {context.turn or ''}"
                raise AdapterError(self.failure or simulated)
            answer = self.answer(messages, context)
            return answer if isinstance(answer, Completion) else Completion(answer, {"tokens": 3})
        finally:
            self.in_flight -= 1

    def target_info(self) -> TargetInfo:
        return TargetInfo("recording", "fake-model")

    async def aclose(self) -> None:
        self.closed = True
