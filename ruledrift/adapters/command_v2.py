"""Protocol 2 of the command adapter (`"protocol": 2`): the request with the tools and the
structured messages, and the agent's answer read strictly in its tool mode: `delegate` (the
agent wraps a model and returns the calls it wants made; RuleDrift answers them from its mocks
and calls again) or `report` (the agent runs its own tools and reports the messages it added).
docs/command-adapter.md#protocol-2 describes every shape; this module is all of its translation,
pure. A problem with an answer names where it is in the answer, never what it holds: the answer
is a model's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from ruledrift.adapters.base import CallContext, Completion
from ruledrift.data import Message, Tool, ToolCall, ToolOffer, json_value, message_fields
from ruledrift.text import json_kind, repair_surrogates

PROTOCOL_V2 = "ruledrift.command.v2"
MAX_TOOL_CALLS = 64  # calls in one answer, or in one assistant message a report-mode answer adds
MAX_EXCHANGE_MESSAGES = 256  # messages one report-mode answer may add
MAX_EXCHANGE_CALLS = 256  # calls in all of them
MAX_ARGUMENTS_CHARS = 100_000  # one call's arguments, as JSON text
MAX_NAME_CHARS = 256  # a tool's name, a call's id

ToolMode = Literal["delegate", "report"]
TOOL_MODES: tuple[ToolMode, ...] = ("delegate", "report")
_CHOICE_WORDS = frozenset({"auto", "none", "required"})


class AnswerProblem(Exception):
    """What is wrong with an answer, worded to follow "the agent's response ": `has no
    "content" (expected a string)`."""


# --- the request -------------------------------------------------------------------------------


def request_body(
    messages: Sequence[Message],
    context: CallContext,
    where: Mapping[str, object],
    mode: ToolMode,
) -> dict[str, object]:
    """The request of protocol 2. `where`: the `context` object protocol 1 sends, to which
    protocol 2 adds `round`. (`context.mcp` is reserved for report mode: the address of an MCP
    server that serves RuleDrift's mocks, once RuleDrift offers one; nothing sets it yet.)"""
    return {
        "protocol": PROTOCOL_V2,
        "toolMode": mode,
        "messages": [message_fields(m) for m in messages],
        "tools": [_tool(t) for t in context.tools.tools] if context.tools else [],
        "toolChoice": _choice(context.tools),
        "context": {**where, "round": context.round},
    }


def _tool(tool: Tool) -> dict[str, object]:
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": json_value(tool.parameters_json),
    }


def _choice(offer: ToolOffer | None) -> object:
    """`"auto"`, `"none"`, `"required"`, or `{"name": tool}`; `"none"` when no tools are
    offered."""
    if offer is None:
        return "none"
    if offer.choice in _CHOICE_WORDS:
        return offer.choice
    return {"name": offer.choice}


# --- the answer ------------------------------------------------------------------------------


def read_answer(response: Mapping[str, object], mode: ToolMode, context: CallContext) -> Completion:
    """The Completion in a protocol-2 answer (its `error` and exit already dealt with), or
    AnswerProblem."""
    if mode == "delegate":
        return _delegated(response, context)
    return _reported(response)


def _delegated(response: Mapping[str, object], context: CallContext) -> Completion:
    if _given(response.get("messages")):
        raise AnswerProblem(
            'has "messages", which only report mode reads: in delegate mode, answer with '
            'the "toolCalls" you want made (RuleDrift runs them against its mocks)'
        )
    calls = _calls(response.get("toolCalls"), "toolCalls", made_up=f"call-{context.round}-")
    _unique_ids(calls, "toolCalls", set())
    if calls and context.tools is None:
        raise AnswerProblem('has "toolCalls", but this call offers no tools (the suite has none)')
    return Completion(_text(response, "content", "content", optional=bool(calls)), tool_calls=calls)


def _reported(response: Mapping[str, object]) -> Completion:
    if _given(response.get("toolCalls")):
        raise AnswerProblem(
            'has "toolCalls", which only delegate mode reads: in report mode, run your tools '
            'and list the messages they added in "messages"'
        )
    content = _text(response, "content", "content")
    return Completion(content, exchange=_exchange(response.get("messages")))


def _exchange(value: object) -> tuple[Message, ...]:
    """The messages a report-mode answer added: assistant messages (with their `toolCalls`)
    and the `tool` messages that answer those calls, in order."""
    items = _array(value, "messages", MAX_EXCHANGE_MESSAGES, "messages in one answer")
    made: dict[str, str] = {}  # the calls of the messages so far: id -> tool name
    answered: set[str] = set()
    exchange: list[Message] = []
    for index, item in enumerate(items):
        at = f"messages[{index}]"
        fields = _object(item, at)
        role = fields.get("role")
        if role == "assistant":
            exchange.append(_assistant(fields, at, made))
        elif role == "tool":
            exchange.append(_tool_result(fields, at, made, answered))
        elif role is None:
            raise AnswerProblem(f'has no "{at}.role" (expected "assistant" or "tool")')
        else:
            raise AnswerProblem(f'has a "{at}.role" that is not "assistant" or "tool"')
    return tuple(exchange)


def _assistant(fields: Mapping[str, object], at: str, made: dict[str, str]) -> Message:
    calls = _calls(fields.get("toolCalls"), f"{at}.toolCalls", made_up=None)
    _unique_ids(calls, f"{at}.toolCalls", set(made))
    if len(made) + len(calls) > MAX_EXCHANGE_CALLS:
        raise AnswerProblem(
            f'has more than {MAX_EXCHANGE_CALLS} tool calls in "messages" (the limit)'
        )
    made.update((call.id, call.name) for call in calls)
    content = _text(fields, "content", f"{at}.content", optional=bool(calls))
    return Message("assistant", content, tool_calls=calls)


def _tool_result(
    fields: Mapping[str, object], at: str, made: Mapping[str, str], answered: set[str]
) -> Message:
    call_id = _name(fields.get("toolCallId"), f"{at}.toolCallId")
    if call_id not in made:
        raise AnswerProblem(
            f'has a "{at}.toolCallId" that is the id of no call of an earlier message'
        )
    if call_id in answered:
        raise AnswerProblem(f'has a "{at}.toolCallId" of a call an earlier message answered')
    answered.add(call_id)
    name = fields.get("toolName")
    if name is not None and _name(name, f"{at}.toolName") != made[call_id]:
        raise AnswerProblem(f'has a "{at}.toolName" that is not the name of the call it answers')
    content = _text(fields, "content", f"{at}.content")
    return Message("tool", content, tool_call_id=call_id, tool_name=made[call_id])


def _calls(value: object, at: str, *, made_up: str | None) -> tuple[ToolCall, ...]:
    """The calls in `value` (None: none). `made_up`: the prefix of the ids given to calls
    without one (None: an id is required)."""
    items = _array(value, at, MAX_TOOL_CALLS, "tool calls in one message")
    calls = []
    for index, item in enumerate(items):
        here = f"{at}[{index}]"
        fields = _object(item, here)
        given = fields.get("id")
        if given is None and made_up is not None:
            call_id = f"{made_up}{index + 1}"
        else:
            call_id = _name(given, f"{here}.id")
        name = _name(fields.get("name"), f"{here}.name")
        calls.append(ToolCall(call_id, name, _arguments(fields.get("arguments"), here)))
    return tuple(calls)


def _unique_ids(calls: Sequence[ToolCall], at: str, seen: set[str]) -> None:
    for index, call in enumerate(calls):
        if call.id in seen:
            raise AnswerProblem(f'has a "{at}[{index}].id" that an earlier call already has')
        seen.add(call.id)


def _arguments(value: object, at: str) -> str:
    if value is None:
        raise AnswerProblem(f'has no "{at}.arguments" (expected a string of JSON text)')
    if not isinstance(value, str):
        raise AnswerProblem(
            f'has a "{at}.arguments" that is {json_kind(value)}, not a string (send the '
            "arguments as JSON text: serialise the object)"
        )
    if len(value) > MAX_ARGUMENTS_CHARS:
        raise AnswerProblem(
            f'has a "{at}.arguments" of {len(value):,} characters (at most {MAX_ARGUMENTS_CHARS:,})'
        )
    return value  # as received: a call's record keeps the text the model wrote


def _name(value: object, at: str) -> str:
    """A tool's name or a call's id: a string of 1 to MAX_NAME_CHARS characters."""
    if value is None:
        raise AnswerProblem(f'has no "{at}" (expected a string)')
    if not isinstance(value, str):
        raise AnswerProblem(f'has a "{at}" that is {json_kind(value)}, not a string')
    if not value:
        raise AnswerProblem(f'has an empty "{at}"')
    if len(value) > MAX_NAME_CHARS:
        raise AnswerProblem(f'has a "{at}" of {len(value):,} characters (at most {MAX_NAME_CHARS})')
    return repair_surrogates(value)


def _text(fields: Mapping[str, object], key: str, at: str, *, optional: bool = False) -> str:
    """A message's text. `optional`: absent or null is "" (a message that only asks for
    calls)."""
    value = fields.get(key)
    if value is None and optional:
        return ""
    if value is None:
        raise AnswerProblem(f'has no "{at}" (expected a string)')
    if not isinstance(value, str):
        raise AnswerProblem(f'has a "{at}" that is {json_kind(value)}, not a string')
    return repair_surrogates(value)


def _array(value: object, at: str, most: int, what: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AnswerProblem(f'has a "{at}" that is {json_kind(value)}, not an array')
    if len(value) > most:
        raise AnswerProblem(f'has {len(value):,} items in "{at}" (at most {most} {what})')
    return value


def _object(value: object, at: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise AnswerProblem(f'has a "{at}" that is {json_kind(value)}, not an object')
    return value


def _given(value: object) -> bool:
    """Present in the answer: neither absent nor null nor an empty array."""
    return value is not None and value != []
