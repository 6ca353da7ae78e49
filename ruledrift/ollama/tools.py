"""Tool calls in Ollama's `POST /api/chat`, as its `api/types.go` defines them: the `tools` a
request offers (OpenAI's shape), the assistant messages with `tool_calls` and the `tool` messages
it sends back, and the `message.tool_calls` of an answer, whose `arguments` is a JSON **object**
(never a string) and whose `id` Ollama sends only from 0.12.10 on.

Ollama has no `tool_choice`: `"none"` is sent as no tools at all; `"required"` and a tool's name
send the tools as `"auto"` does (nothing can force a call). See docs/ollama.md.

An answer is hostile input: its calls are capped (MAX_TOOL_CALLS per answer, MAX_ARGUMENTS_CHARS
per call), and a malformed entry is a ToolCallError whose message never quotes the arguments.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from ruledrift.boundary.http import parse_json
from ruledrift.data import (
    Message,
    ToolCall,
    ToolOffer,
    canonical_json,
    function_entry,
)
from ruledrift.text import json_kind, repair_surrogates

MAX_TOOL_CALLS = 32  # calls one answer may ask for
MAX_ARGUMENTS_CHARS = 100_000  # one call's arguments, as canonical JSON text
MAX_NAME_CHARS = 200  # a tool name (longer is no name a suite can declare)
MAX_ID_CHARS = 100  # a call id the server gave; a longer or odd one is replaced by one made up
MADE_UP_ID = "call_{answer}_{index}"  # `answer`: the messages sent before it (unique per answer)


class ToolCallError(ValueError):
    """A tool call that cannot be read from an answer, or sent back to Ollama. The message names
    the call (by position, and by tool name once that is known to be one) and never quotes its
    arguments."""


# --- the request --------------------------------------------------------------------------------


def tools_field(offer: ToolOffer | None) -> list[dict[str, object]] | None:
    """The request's `tools`, or None when the call offers none: no offer (the suite has no
    tools), no tools in it, or `tool_choice` "none" (Ollama has no `tool_choice`: a call that may
    not use tools is sent without them)."""
    if offer is None or not offer.tools or offer.choice == "none":
        return None
    return [function_entry(tool) for tool in offer.tools]


def message_sent(message: Message) -> dict[str, object]:
    """A message as `/api/chat` takes it. An assistant message carries its `tool_calls` (each
    with its `id`, which Ollama 0.12.10+ templates may pair results by); a tool message carries
    `tool_name` (what Ollama's templates show) and `tool_call_id`. Older servers ignore the
    fields they do not know."""
    sent: dict[str, object] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        sent["tool_calls"] = [call_sent(call) for call in message.tool_calls]
    if message.role == "tool":
        if message.tool_name is not None:
            sent["tool_name"] = message.tool_name
        if message.tool_call_id is not None:
            sent["tool_call_id"] = message.tool_call_id
    return sent


def call_sent(call: ToolCall) -> dict[str, object]:
    """A call of an assistant message: `arguments` as the object Ollama requires (ToolCallError
    when the call's text is not one)."""
    function = {"name": call.name, "arguments": arguments_object(call)}
    return {"type": "function", "id": call.id, "function": function}


def arguments_object(call: ToolCall) -> dict[str, object]:
    """A call's arguments as the JSON object Ollama takes. Empty text is `{}` (as Ollama reads
    a call without arguments); anything else that is not a JSON object cannot be sent: Ollama
    would refuse the whole request, so it is a ToolCallError naming the tool."""
    if not call.arguments.strip():
        return {}
    try:
        value = parse_json(call.arguments)
    except ValueError as problem:
        kind = str(problem)  # "not JSON", "JSON nested too deeply to read"
    else:
        if isinstance(value, dict):
            return value
        kind = f"JSON {json_kind(value)}"
    raise ToolCallError(
        f'the conversation holds a call of tool "{call.name}" whose arguments are {kind}, not a '
        "JSON object: Ollama takes a call's arguments only as an object, so the conversation "
        "cannot be sent to it"
    )


# --- the answer ---------------------------------------------------------------------------------


def read_tool_calls(value: object, answer: int) -> tuple[ToolCall, ...]:
    """The calls of an answer's `message.tool_calls` (absent or null: none). Each entry is
    `{"id"?, "function": {"index"?, "name", "arguments": {…}}}`; the arguments become canonical
    JSON text. An id the server did not give (or gave twice, or of another type) is made up,
    deterministically: `call_<answer>_<position>`, where `answer` is the number of messages
    sent before the answer, so ids are unique within a conversation."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise ToolCallError(f'"message.tool_calls" is {json_kind(value)}, not an array')
    if len(value) > MAX_TOOL_CALLS:
        raise ToolCallError(
            f"the answer asks for {len(value):,} tool calls, more than the {MAX_TOOL_CALLS} one "
            "answer may make"
        )
    calls = [_read_call(entry, number) for number, entry in enumerate(value, 1)]
    ids = _call_ids([given for given, _, _ in calls], answer)
    return tuple(ToolCall(id, name, text) for id, (_, name, text) in zip(ids, calls, strict=True))


def _read_call(entry: object, number: int) -> tuple[object, str, str]:
    """(the id as sent, the name, the arguments as canonical JSON text) of call `number`."""
    where = f"tool call {number} of the answer"
    function = entry.get("function") if isinstance(entry, dict) else None
    if not isinstance(entry, dict) or not isinstance(function, dict):
        got = json_kind(entry) if not isinstance(entry, dict) else "an object without one"
        raise ToolCallError(f'{where} is not an object with a "function" object (it is {got})')
    name = function.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        got = f"{len(name):,} characters" if isinstance(name, str) else json_kind(name)
        raise ToolCallError(
            f"{where} has no tool name (a string of 1 to {MAX_NAME_CHARS} characters; it is {got})"
        )
    name = repair_surrogates(name)
    return entry.get("id"), name, _arguments_text(function.get("arguments"), f'{where} ("{name}")')


def _arguments_text(arguments: object, where: str) -> str:
    """Arguments an answer sent, as canonical JSON text (lone surrogates repaired, so the text
    can be sent back as UTF-8)."""
    if not isinstance(arguments, dict):
        raise ToolCallError(
            f'{where} has "arguments" that are {json_kind(arguments)}, not the JSON object Ollama '
            "sends"
        )
    try:
        text = canonical_json(arguments)
    except RecursionError:
        raise ToolCallError(f"{where} has arguments nested too deeply to read") from None
    if len(text) > MAX_ARGUMENTS_CHARS:
        raise ToolCallError(
            f"{where} has arguments of {len(text):,} characters as JSON, more than the "
            f"{MAX_ARGUMENTS_CHARS:,} one call may send"
        )
    if ("NaN" in text or "Infinity" in text) and not all(map(math.isfinite, _numbers(arguments))):
        raise ToolCallError(f"{where} has arguments holding NaN or Infinity, which are not JSON")
    return repair_surrogates(text)


def _numbers(value: object) -> Iterator[float]:
    """The floats anywhere in a JSON value (integers are always finite)."""
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)


def _call_ids(given: Sequence[object], answer: int) -> list[str]:
    """The server's ids where each is a short string used once in the answer; made-up ids (that
    none of the kept ones equals) for the others."""
    counts: dict[object, int] = {}
    for id in given:
        if _usable_id(id):
            counts[id] = counts.get(id, 0) + 1
    kept = {id for id, count in counts.items() if count == 1}
    ids = []
    for index, id in enumerate(given):
        if isinstance(id, str) and id in kept:
            ids.append(id)
            continue
        made = MADE_UP_ID.format(answer=answer, index=index)
        while made in kept:
            made += "_"
        ids.append(made)
    return ids


def _usable_id(id: object) -> bool:
    return isinstance(id, str) and 0 < len(id) <= MAX_ID_CHARS and id.isprintable()
