"""The conversation: the messages a target is sent and answers with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ruledrift.data.tools import ToolCall, ToolUse


@dataclass(frozen=True)
class Message:
    """One message. `recorded`: it comes from a scenario's recorded history as it was, not
    from this run (a user message of the history, or, in replay mode, a recorded answer).
    `scripted`: the suite authored it as a scripted exchange (`ScriptedTurn`).

    Tools: an assistant message may carry the `tool_calls` its answer asked for (its `content`
    may then be empty); a `tool` message is one call's result, for the call `tool_call_id` of
    the tool `tool_name`, its `content` the result as the agent reads it."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    recorded: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    scripted: bool = False


def message_fields(message: Message) -> dict[str, object]:
    """A message as RuleDrift's own JSON protocols write it (command protocol 2, the `command`
    assertion's request): `role` and `content`, an assistant's `toolCalls` (each `{id, name,
    arguments}`, arguments as JSON text), and a tool message's `toolCallId` and `toolName`."""
    item: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        item["toolCalls"] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in message.tool_calls
        ]
    if message.role == "tool":
        item["toolCallId"] = message.tool_call_id
        item["toolName"] = message.tool_name
    return item


@dataclass(frozen=True)
class AnswerContext:
    """Where a probe's answer was given, for the checks that look beyond its text (`command`):
    the ids, the depth, the run, the wording asked, and every message sent for it (the system
    message, the background turns, the probe's prompt last)."""

    suite: str
    scenario: str
    probe: str
    rule: str
    after_turn: int
    run: int
    prompt: str
    messages: tuple[Message, ...]
    tools: ToolUse | None = None  # the turn's tool calls, when the suite offers tools
