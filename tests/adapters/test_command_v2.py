"""The command adapter's protocol 2 and its persistent workers, against real processes: the
agent in agents/tools_agent.py (one-shot or persistent, it answers each request line)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ruledrift.adapters.base import AdapterError, CallContext, Completion
from ruledrift.adapters.command import CommandAdapter, CommandAdapterConfig
from ruledrift.adapters.command_v2 import (
    MAX_ARGUMENTS_CHARS,
    MAX_EXCHANGE_MESSAGES,
    MAX_TOOL_CALLS,
)
from ruledrift.data import Location, Message, Tool, ToolCall, ToolOffer
from ruledrift.errors import ConfigError
from ruledrift.suite.load import load_suite
from tests.support import AGENTS
from tests.support.processes import gone, interruptible, kill_survivors, wait_for_file
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process

AGENT = str(AGENTS / "tools_agent.py")
T = TypeVar("T")

LOOKUP = Tool(
    name="lookup_order",
    description="Look an order up by its id.",
    parameters_json='{"properties":{"order_id":{"type":"string"}},"type":"object"}',
    location=Location(1, 1),
)
REFUND = Tool(
    name="refund",
    description="Refund an order.",
    parameters_json='{"properties":{"amount":{"type":"number"}},"type":"object"}',
    location=Location(2, 1),
)
OFFER = ToolOffer((LOOKUP, REFUND), "auto")
TURN = CallContext(suite="demo suite", scenario="refunds", kind="turn", turn=1, tools=OFFER)
NO_TOOLS = CallContext(suite="demo suite", scenario="refunds", kind="turn", turn=1)
ASKED = (
    Message("system", "Never refund more than $100 without a supervisor."),
    Message("user", "Refund order A1, ünïcödé ✓"),
)
CALL = ToolCall("call_1", "lookup_order", '{"order_id": "A1"}')
ANSWERED = (
    *ASKED,
    Message("assistant", "", tool_calls=(CALL,)),
    Message("tool", '{"total": 250}', tool_call_id="call_1", tool_name="lookup_order"),
)


def adapter(
    *args: str,
    protocol: int = 2,
    mode: str = "delegate",
    persistent: bool = False,
    timeout_ms: int = 20_000,
    max_output_bytes: int | None = None,
) -> CommandAdapter:
    config = CommandAdapterConfig(
        command=sys.executable,
        args=(AGENT, *args),
        cwd=AGENTS,
        timeout_ms=timeout_ms,
        protocol=protocol,  # type: ignore[arg-type]
        tool_mode=mode,  # type: ignore[arg-type]
        persistent=persistent,
    )
    if max_output_bytes is None:
        return CommandAdapter(config)
    return CommandAdapter(config, max_output_bytes=max_output_bytes)


def using(target: CommandAdapter, body: Callable[[CommandAdapter], Awaitable[T]]) -> T:
    """`body(target)` in one event loop, and the adapter closed (its workers killed) after."""

    async def scenario() -> T:
        try:
            return await body(target)
        finally:
            await target.aclose()

    return asyncio.run(scenario())


def complete(
    target: CommandAdapter, messages: tuple[Message, ...] = ASKED, context: CallContext = TURN
) -> Completion:
    return using(target, lambda a: a.complete(messages, context))


def failure(
    target: CommandAdapter, messages: tuple[Message, ...] = ASKED, context: CallContext = TURN
) -> str:
    with pytest.raises(AdapterError) as raised:
        complete(target, messages, context)
    return str(raised.value)


async def outcome(target: CommandAdapter, context: CallContext = TURN) -> dict[str, Any] | str:
    """What one call gave: the echo agent's report ({request, pid, served}), or the error."""
    try:
        completion = await target.complete(ASKED, context)
    except AdapterError as error:
        return str(error)
    seen: dict[str, Any] = json.loads(completion.content)
    return seen


def echoed(completion: Completion) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(completion.content)
    return seen


def read_pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()]


@pytest.fixture
def worker_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder where each agent started creates a file named by its pid (see the agent)."""
    folder = tmp_path / "workers"
    folder.mkdir()
    monkeypatch.setenv("AGENT_PID_DIR", str(folder))
    return folder


def started(folder: Path) -> list[int]:
    return [int(path.name) for path in folder.iterdir()]


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where an agent writes the pids it started; whatever still runs is killed afterwards."""
    path = tmp_path / "pids"
    yield path
    if path.exists():
        kill_survivors(*read_pids(path))


# --- the request ---------------------------------------------------------------------------------


def test_a_request_carries_the_tools_and_structured_messages() -> None:
    context = CallContext(
        suite="demo suite",
        scenario="refunds",
        kind="probe",
        probe="big-refund",
        after_turn=3,
        seed=7,
        tools=ToolOffer((LOOKUP, REFUND), "refund"),
        round=2,
    )
    request = echoed(complete(adapter("echo"), ANSWERED, context))["request"]
    assert request == {
        "protocol": "ruledrift.command.v2",
        "toolMode": "delegate",
        "messages": [
            {"role": "system", "content": "Never refund more than $100 without a supervisor."},
            {"role": "user", "content": "Refund order A1, ünïcödé ✓"},
            {
                "role": "assistant",
                "content": "",
                "toolCalls": [
                    {"id": "call_1", "name": "lookup_order", "arguments": '{"order_id": "A1"}'}
                ],
            },
            {
                "role": "tool",
                "content": '{"total": 250}',
                "toolCallId": "call_1",
                "toolName": "lookup_order",
            },
        ],
        "tools": [
            {
                "name": "lookup_order",
                "description": "Look an order up by its id.",
                "parameters": {"properties": {"order_id": {"type": "string"}}, "type": "object"},
            },
            {
                "name": "refund",
                "description": "Refund an order.",
                "parameters": {"properties": {"amount": {"type": "number"}}, "type": "object"},
            },
        ],
        "toolChoice": {"name": "refund"},
        "context": {
            "suite": "demo suite",
            "scenario": "refunds",
            "kind": "probe",
            "run": 0,
            "seed": 7,
            "probe": "big-refund",
            "afterTurn": 3,
            "round": 2,
        },
    }


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_a_tool_choice_word_is_sent_as_a_string(choice: str) -> None:
    context = dataclasses.replace(TURN, tools=ToolOffer((LOOKUP,), choice))
    assert echoed(complete(adapter("echo"), ASKED, context))["request"]["toolChoice"] == choice


def test_a_call_without_tools_offers_none() -> None:
    request = echoed(complete(adapter("echo", mode="report"), ASKED, NO_TOOLS))["request"]
    assert (request["toolMode"], request["tools"], request["toolChoice"]) == ("report", [], "none")
    assert request["context"] == {
        "suite": "demo suite",
        "scenario": "refunds",
        "kind": "turn",
        "run": 0,
        "turn": 1,
        "round": 1,
    }


V1_REQUEST = (
    '{"protocol": "ruledrift.command.v1", "messages": [{"role": "system", "content": "Never '
    'refund more than $100 without a supervisor."}, {"role": "user", "content": "Refund order '
    'A1, \\u00fcn\\u00efc\\u00f6d\\u00e9 \\u2713"}], "context": {"suite": "demo suite", '
    '"scenario": "refunds", "kind": "turn", "run": 0, "turn": 1}}\n'
)


def test_a_protocol_1_request_is_unchanged_byte_for_byte() -> None:
    assert complete(adapter("echo-raw", protocol=1), ASKED, NO_TOOLS).content == V1_REQUEST


def test_protocol_1_refuses_a_call_with_tools() -> None:
    message = failure(adapter("echo", protocol=1))
    assert message == (
        'the suite offers tools, which command protocol 1 cannot send: set "protocol": 2 in '
        "the command adapter (docs/command-adapter.md#protocol-2-tools)"
    )


# --- delegate mode -------------------------------------------------------------------------------

CALLS = [
    {"id": "call_1", "name": "lookup_order", "arguments": '{"order_id": "A1"}'},
    {"id": "call_2", "name": "refund", "arguments": '{"amount": 250'},  # not JSON: kept as is
]


@pytest.mark.parametrize("persistent", [False, True], ids=["one-shot", "persistent"])
def test_delegate_returns_the_calls_then_the_answer(persistent: bool) -> None:
    target = adapter("delegate", json.dumps(CALLS), persistent=persistent)

    async def rounds(target: CommandAdapter) -> tuple[Completion, Completion]:
        first = await target.complete(ASKED, TURN)
        results = [
            Message("tool", f"result {n}", tool_call_id=c.id, tool_name=c.name)
            for n, c in enumerate(first.tool_calls)
        ]
        asked = (*ASKED, Message("assistant", first.content, tool_calls=first.tool_calls))
        return first, await target.complete((*asked, *results), TURN)

    first, second = using(target, rounds)
    assert first == Completion(
        "",
        tool_calls=(
            ToolCall("call_1", "lookup_order", '{"order_id": "A1"}'),
            ToolCall("call_2", "refund", '{"amount": 250'),
        ),
    )
    assert second == Completion("results: result 0 | result 1")


def test_delegate_makes_up_the_ids_an_agent_leaves_out() -> None:
    calls = [{"name": "lookup_order", "arguments": "{}"}, {"name": "refund", "arguments": "{}"}]
    context = CallContext(suite="s", scenario="c", kind="turn", turn=1, tools=OFFER, round=3)
    found = complete(adapter("delegate", json.dumps(calls)), ASKED, context).tool_calls
    assert [call.id for call in found] == ["call-3-1", "call-3-2"]


def test_a_seed_is_kept_with_the_calls() -> None:
    context = CallContext(suite="s", scenario="c", kind="turn", turn=1, tools=OFFER, seed=5)
    found = complete(adapter("delegate", json.dumps(CALLS)), ASKED, context)
    assert (found.metadata, len(found.tool_calls)) == ({"seed": 5}, 2)


# --- report mode ---------------------------------------------------------------------------------

EXCHANGE = [
    {"role": "assistant", "content": None, "toolCalls": [CALLS[0]]},
    {"role": "tool", "toolCallId": "call_1", "toolName": "lookup_order", "content": "250"},
    {"role": "assistant", "content": "Refunding now.", "toolCalls": [CALLS[1]]},
    {"role": "tool", "toolCallId": "call_2", "content": '{"ok": true}'},  # toolName is optional
]


@pytest.mark.parametrize("persistent", [False, True], ids=["one-shot", "persistent"])
def test_report_returns_the_messages_the_agent_added(persistent: bool) -> None:
    target = adapter("report", json.dumps(EXCHANGE), mode="report", persistent=persistent)
    assert complete(target) == Completion(
        "refunded",
        exchange=(
            Message("assistant", "", tool_calls=(ToolCall(**CALLS[0]),)),
            Message("tool", "250", tool_call_id="call_1", tool_name="lookup_order"),
            Message("assistant", "Refunding now.", tool_calls=(ToolCall(**CALLS[1]),)),
            Message("tool", '{"ok": true}', tool_call_id="call_2", tool_name="refund"),
        ),
    )


def test_report_mode_accepts_an_answer_without_tools() -> None:
    assert complete(adapter("report", "[]", mode="report"), ASKED, NO_TOOLS) == Completion(
        "refunded"
    )


# --- answers that are refused ----------------------------------------------------------------

SECRET = "hunter2"  # in every hostile value below: no message may quote it
CALL_OK = {"id": "c1", "name": "refund", "arguments": "{}"}
BAD_DELEGATE = [
    ({"content": SECRET, "toolCalls": {"x": SECRET}}, 'has a "toolCalls" that is an object'),
    ({"content": "", "toolCalls": [SECRET]}, 'has a "toolCalls[0]" that is a string, not an obj'),
    ({"toolCalls": [{"arguments": "{}"}]}, 'has no "toolCalls[0].name" (expected a string)'),
    ({"toolCalls": [{"name": 7, "arguments": "{}"}]}, 'has a "toolCalls[0].name" that is an in'),
    ({"toolCalls": [{"name": "", "arguments": "{}"}]}, 'has an empty "toolCalls[0].name"'),
    ({"toolCalls": [{"name": SECRET * 40, "arguments": "{}"}]}, "of 280 characters (at most 256)"),
    ({"toolCalls": [{"id": 1, "name": "x", "arguments": "{}"}]}, '"toolCalls[0].id" that is an'),
    ({"toolCalls": [{"name": "refund"}]}, 'has no "toolCalls[0].arguments" (expected a string of'),
    (
        {"toolCalls": [{"name": "refund", "arguments": {"secret": SECRET}}]},
        'has a "toolCalls[0].arguments" that is an object, not a string (send the arguments as',
    ),
    (
        {"toolCalls": [{"name": "refund", "arguments": SECRET * 20_000}]},
        f'"toolCalls[0].arguments" of 140,000 characters (at most {MAX_ARGUMENTS_CHARS:,})',
    ),
    (
        {"toolCalls": [CALL_OK] * (MAX_TOOL_CALLS + 1)},
        f'has 65 items in "toolCalls" (at most {MAX_TOOL_CALLS} tool calls in one message)',
    ),
    ({"toolCalls": [CALL_OK, CALL_OK]}, 'has a "toolCalls[1].id" that an earlier call already'),
    ({"content": 3}, 'has a "content" that is an integer, not a string'),
    ({"answer": SECRET}, 'has no "content" (expected a string)'),
    ({"content": SECRET, "messages": [{"role": "tool"}]}, 'has "messages", which only report mo'),
]


def answer_file(folder: Path, response: dict[str, Any]) -> str:
    """The answer in a file (it may be longer than an argument may be)."""
    path = folder / "answer.json"
    path.write_text(json.dumps(response) + "\n")
    return str(path)


@pytest.mark.parametrize(("response", "expected"), BAD_DELEGATE)
def test_a_bad_delegate_answer_is_refused_without_quoting_it(
    response: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    message = failure(adapter("respond-file", answer_file(tmp_path, response)))
    first = message.partition("\n")[0]
    assert first.startswith("the agent's response "), message
    assert expected in first, message
    assert SECRET not in message


def test_calls_when_no_tools_are_offered_are_refused() -> None:
    message = failure(adapter("respond", json.dumps({"toolCalls": [CALL_OK]})), ASKED, NO_TOOLS)
    assert message.startswith(
        'the agent\'s response has "toolCalls", but this call offers no tools (the suite has none)'
    )


TOOL_OK = {"role": "tool", "toolCallId": "c1", "content": "ok"}
ASSISTANT_OK = {"role": "assistant", "toolCalls": [CALL_OK]}
BAD_REPORT = [
    ({"content": SECRET, "toolCalls": [CALL_OK]}, 'has "toolCalls", which only delegate mode'),
    ({"messages": []}, 'has no "content" (expected a string)'),
    ({"content": "x", "messages": SECRET}, 'has a "messages" that is a string, not an array'),
    (
        {"content": SECRET, "messages": [TOOL_OK] * (MAX_EXCHANGE_MESSAGES + 1)},
        f'has 257 items in "messages" (at most {MAX_EXCHANGE_MESSAGES} messages in one answer)',
    ),
    ({"content": "x", "messages": [{"content": SECRET}]}, 'has no "messages[0].role" (expected'),
    (
        {"content": "x", "messages": [{"role": "user", "content": SECRET}]},
        'has a "messages[0].role" that is not "assistant" or "tool"',
    ),
    ({"content": "x", "messages": [{"role": "assistant"}]}, 'has no "messages[0].content" (exp'),
    (
        {"content": "x", "messages": [{"role": "assistant", "toolCalls": [{"name": "x"}]}]},
        'has no "messages[0].toolCalls[0].id" (expected a string)',
    ),
    (
        {"content": "x", "messages": [ASSISTANT_OK, ASSISTANT_OK]},
        'has a "messages[1].toolCalls[0].id" that an earlier call already has',
    ),
    ({"content": "x", "messages": [TOOL_OK]}, '"messages[0].toolCallId" that is the id of no c'),
    (
        {"content": "x", "messages": [ASSISTANT_OK, TOOL_OK, TOOL_OK]},
        'has a "messages[2].toolCallId" of a call an earlier message answered',
    ),
    (
        {"content": "x", "messages": [ASSISTANT_OK, TOOL_OK | {"toolName": SECRET}]},
        'has a "messages[1].toolName" that is not the name of the call it answers',
    ),
    (
        {"content": "x", "messages": [ASSISTANT_OK, TOOL_OK | {"content": {"s": SECRET}}]},
        'has a "messages[1].content" that is an object, not a string',
    ),
    (
        {
            "content": "x",
            "messages": [
                {
                    "role": "assistant",
                    "toolCalls": [CALL_OK | {"id": f"c{n}-{i}"} for i in range(50)],
                }
                for n in range(6)
            ],
        },
        'has more than 256 tool calls in "messages" (the limit)',
    ),
]


@pytest.mark.parametrize(("response", "expected"), BAD_REPORT)
def test_a_bad_report_answer_is_refused_without_quoting_it(
    response: dict[str, Any], expected: str, tmp_path: Path
) -> None:
    message = failure(adapter("respond-file", answer_file(tmp_path, response), mode="report"))
    first = message.partition("\n")[0]
    assert first.startswith("the agent's response "), message
    assert expected in first, message
    assert SECRET not in message


def test_an_error_answer_is_reported_as_in_protocol_1() -> None:
    message = failure(adapter("respond", '{"error": "model overloaded", "toolCalls": 3}'))
    assert message.startswith("the agent reported an error: model overloaded\nstderr (last")


# --- persistent workers ------------------------------------------------------------------------


def test_a_persistent_agent_answers_every_call_in_one_process() -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(4)]

    seen = using(adapter("echo", persistent=True), calls)
    assert all(isinstance(one, dict) for one in seen), seen
    pids = {one["pid"] for one in seen if isinstance(one, dict)}
    assert len(pids) == 1
    assert [one["served"] for one in seen if isinstance(one, dict)] == [1, 2, 3, 4]
    assert gone(*pids)  # aclose killed it


def test_without_persistent_every_call_starts_a_process() -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(3)]

    seen = using(adapter("echo"), calls)
    assert len({one["pid"] for one in seen if isinstance(one, dict)}) == 3
    assert [one["served"] for one in seen if isinstance(one, dict)] == [1, 1, 1]


def test_calls_at_once_get_a_worker_each_and_reuse_them() -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        together = await asyncio.gather(outcome(target), outcome(target))
        return [*together, *[await outcome(target) for _ in range(3)]]

    seen = using(adapter("sleep", "0.3", persistent=True), calls)
    pids = [one["pid"] for one in seen if isinstance(one, dict)]
    assert len(pids) == 5, seen
    assert len(set(pids[:2])) == 2  # two calls in flight: two workers
    assert set(pids[2:]) <= set(pids[:2])  # then no more


def test_a_worker_that_crashes_is_replaced() -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(3)]

    first, crashed, after = using(adapter("crash-on", "2", persistent=True), calls)
    assert isinstance(first, dict)
    assert isinstance(after, dict)
    assert isinstance(crashed, str)
    heading, _, stderr = crashed.partition("\n")
    assert heading == "the agent exited with code 3 before it answered"
    assert stderr.splitlines()[-1] == "  ValueError: the agent broke"
    assert after["pid"] != first["pid"]
    assert after["served"] == 1
    assert gone(first["pid"])


def test_a_worker_that_times_out_is_killed_and_replaced(pid_file: Path) -> None:
    target = adapter("hang-on", "2", str(pid_file), persistent=True, timeout_ms=3000)

    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(3)]

    first, hung, after = using(target, calls)
    assert isinstance(first, dict)
    assert isinstance(after, dict)
    assert isinstance(hung, str)
    assert hung.startswith("the agent did not answer within 3000 ms (timeoutMs) and was killed")
    assert "thinking very hard" in hung
    worker, child = read_pids(pid_file)
    assert worker == first["pid"]
    assert gone(worker, child)  # the worker and what it started
    assert after["pid"] != worker


@pytest.mark.parametrize(
    ("mode", "args", "expected"),
    [
        ("respond", ["not json"], "the agent's output is not JSON at line 1 column 1 (8 bytes;"),
        ("respond", [""], "the agent wrote an empty line to stdout (expected one JSON object)"),
        ("respond", ["[1]"], "the agent's output is an array, not a JSON object; the agent was"),
    ],
    ids=["not-json", "empty-line", "not-object"],
)
def test_a_worker_whose_answer_is_not_a_json_object_is_replaced(
    mode: str, args: list[str], expected: str, worker_dir: Path
) -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(2)]

    seen = using(adapter(mode, *args, persistent=True), calls)
    for message in seen:
        assert isinstance(message, str)
        assert message.startswith(expected), message
        assert "; the agent was killed" in message.partition("\n")[0]
    assert len(started(worker_dir)) == 2  # a new worker for the second call


def test_a_worker_that_wrote_a_second_line_is_not_trusted_again() -> None:
    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(3)]

    first, stray, after = using(adapter("extra-line", persistent=True), calls)
    assert isinstance(first, dict)
    assert isinstance(stray, str)
    assert stray.startswith(
        "the agent wrote 48 bytes to stdout after its previous answer (a persistent agent "
        "writes exactly one line per request, and its logs to stderr) and was killed"
    )
    assert isinstance(after, dict)
    assert after["pid"] != first["pid"]
    assert gone(first["pid"])


def test_a_worker_that_floods_stdout_is_killed() -> None:
    message = failure(adapter("flood", persistent=True, max_output_bytes=100_000))
    assert message.startswith(
        "the agent wrote more than 100,000 bytes to stdout (the limit) and was killed"
    )


@pytest.mark.parametrize(
    "response",
    ['{"error": "model overloaded"}', '{"content": 42}'],
    ids=["error", "invalid-answer"],
)
def test_a_worker_that_answered_in_step_is_kept(response: str, worker_dir: Path) -> None:
    """An `error`, or an answer the protocol refuses, is still one answer line: the worker is
    in step, and serves the next call."""

    async def calls(target: CommandAdapter) -> list[dict[str, Any] | str]:
        return [await outcome(target) for _ in range(2)]

    seen = using(adapter("respond", response, persistent=True), calls)
    assert all(isinstance(one, str) for one in seen), seen
    assert len(started(worker_dir)) == 1


def test_a_worker_that_cannot_start_fails_the_call(tmp_path: Path) -> None:
    config = CommandAdapterConfig(
        "./missing-agent", (), tmp_path, 5000, protocol=2, persistent=True
    )
    message = failure(CommandAdapter(config))
    assert message == (
        f'could not start the agent command "./missing-agent" in {tmp_path}: '
        "No such file or directory"
    )


def test_cancelling_a_call_kills_its_worker(pid_file: Path) -> None:
    target = adapter("hang-on", "1", str(pid_file), persistent=True)

    async def scenario(target: CommandAdapter) -> None:
        call = asyncio.create_task(target.complete(ASKED, TURN))
        while not pid_file.exists():
            await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert gone(*read_pids(pid_file))  # before aclose

    using(target, scenario)


def test_aclose_kills_idle_and_busy_workers(pid_file: Path) -> None:
    async def scenario(target: CommandAdapter) -> tuple[list[int], str]:
        idle = await asyncio.gather(outcome(target), outcome(target))
        busy = asyncio.create_task(outcome(target))  # takes a worker, which hangs
        while not pid_file.exists():
            await asyncio.sleep(0.01)
        await target.aclose()
        message = await busy
        assert isinstance(message, str)
        return [one["pid"] for one in idle if isinstance(one, dict)], message

    target = adapter("hang-on", "2", str(pid_file), persistent=True)
    pids, message = asyncio.run(scenario(target))
    assert len(pids) == 2
    assert message.startswith("the agent was killed by signal SIGKILL before it answered")
    assert gone(*pids, *read_pids(pid_file))


# --- RuleDrift's end takes the workers with it ---------------------------------------------------


def persistent_suite(tmp_path: Path, pid_file: Path) -> Path:
    """Two scenarios at once: one that ends (its worker idle), one whose second turn hangs."""
    suite = base_suite(sys.executable, [AGENT, "hang-on", "2", str(pid_file)])
    suite["adapter"] |= {"protocol": 2, "persistent": True, "timeoutMs": 600_000}
    quick = suite["scenarios"][0]
    quick["turns"], quick["probes"] = [], [quick["probes"][0]]
    hanging = {**quick, "id": "hanging", "turns": ["hello", "again"]}
    hanging["probes"] = [{**quick["probes"][0], "afterTurn": 2}]
    suite["scenarios"] = [hanging, quick]
    return write_suite(tmp_path, suite)


def start_ruledrift(suite: Path, pid_dir: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "ruledrift", "run", str(suite), "--concurrency", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "AGENT_PID_DIR": str(pid_dir)},
        preexec_fn=interruptible,
    )


def started_pids(pid_dir: Path, count: int) -> list[int]:
    deadline = time.monotonic() + 60
    while len(started(pid_dir)) < count:
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.02)
    return started(pid_dir)


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill"])
def test_stopping_ruledrift_kills_its_workers(
    tmp_path: Path, pid_file: Path, how: signal.Signals
) -> None:
    pid_dir = tmp_path / "workers"
    pid_dir.mkdir()
    with start_ruledrift(persistent_suite(tmp_path, pid_file), pid_dir) as cli:
        try:
            wait_for_file(pid_file)
            workers = started_pids(pid_dir, 2)
            cli.send_signal(how)
            _, err = cli.communicate(timeout=60)
        finally:
            cli.kill()
    assert cli.returncode == (130 if how == signal.SIGINT else -signal.SIGKILL), err
    try:
        assert gone(*workers, *read_pids(pid_file))
    finally:
        kill_survivors(*workers)


def test_a_finished_run_leaves_no_worker(tmp_path: Path) -> None:
    pid_dir = tmp_path / "workers"
    pid_dir.mkdir()
    suite = base_suite(sys.executable, [AGENT, "echo"])
    suite["adapter"] |= {"protocol": 2, "persistent": True}
    with start_ruledrift(write_suite(tmp_path, suite), pid_dir) as cli:
        _, err = cli.communicate(timeout=120)
    assert cli.returncode == 1, err  # finished: the echo quotes the secret of the rules
    workers = started(pid_dir)
    assert len(workers) == 1  # one scenario: one call at a time, 5 calls, one worker
    assert gone(*workers)


# --- the configuration -------------------------------------------------------------------------


def test_the_suite_sets_the_protocol_the_tool_mode_and_persistence(tmp_path: Path) -> None:
    suite = base_suite(sys.executable, [AGENT])
    suite["adapter"] |= {"protocol": 2, "toolMode": "report", "persistent": True}
    config = load_suite(write_suite(tmp_path, suite)).adapter
    assert isinstance(config, CommandAdapterConfig)
    assert (config.protocol, config.tool_mode, config.persistent) == (2, "report", True)
    details = CommandAdapter(config).target_info().details
    assert details == {
        "command": [sys.executable, AGENT],
        "protocol": 2,
        "toolMode": "report",
        "persistent": True,
    }


def test_protocol_1_is_the_default(tmp_path: Path) -> None:
    config = load_suite(write_suite(tmp_path, base_suite(sys.executable, [AGENT]))).adapter
    assert isinstance(config, CommandAdapterConfig)
    assert (config.protocol, config.tool_mode, config.persistent) == (1, "delegate", False)
    assert CommandAdapter(config).target_info().details == {"command": [sys.executable, AGENT]}


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"toolMode": "report"},
            '/adapter/toolMode: "toolMode" needs "protocol": 2 (protocol 1 has neither tools '
            'nor persistent workers): set "protocol": 2 beside it, or remove "toolMode"',
        ),
        (
            {"protocol": 1, "persistent": True},
            '/adapter/persistent: "persistent" needs "protocol": 2',
        ),
        ({"protocol": 3}, "/adapter/protocol: expected one of 1, 2; got 3"),
        ({"protocol": 2.0}, "/adapter/protocol: expected an integer, e.g. 2 (not 2.0)"),
        (
            {"protocol": 2, "toolMode": "delegated"},
            '/adapter/toolMode: expected one of "delegate", "report"; got "delegated" (did you '
            'mean "delegate"?)',
        ),
        ({"protocol": 2, "persistent": "yes"}, "/adapter/persistent: expected true or false"),
        (
            {"protocol": 2, "mcp": True},
            '/adapter/mcp: "mcp" needs "protocol": 2 and "toolMode": "report"',
        ),
        (
            {"protocol": 2, "toolMode": "delegate", "mcp": True},
            '/adapter/mcp: "mcp" needs "protocol": 2 and "toolMode": "report"',
        ),
    ],
    ids=[
        "mode-v1",
        "persistent-v1",
        "protocol-3",
        "protocol-float",
        "mode-typo",
        "persistent-str",
        "mcp-default-mode",
        "mcp-delegate",
    ],
)
def test_protocol_2_settings_are_checked(
    tmp_path: Path, fields: dict[str, Any], expected: str
) -> None:
    suite = base_suite(sys.executable, [AGENT])
    suite["adapter"] |= fields
    with pytest.raises(ConfigError) as caught:
        load_suite(write_suite(tmp_path, suite))
    found = [str(issue) for issue in caught.value.issues]
    assert len(found) == 1, found
    assert expected in found[0]
