"""The MCP server of boundary/mcp_server.py against the official SDK's client, over streamable
HTTP on loopback: its tools listed, its calls answered and recorded per session (concurrent
sessions apart), closed sessions, the limits, and the server's start and stop. What the answers
are (the suite's mocks) is tests/adapters/test_mcp_mock.py's; here `answer` is plain."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Sequence
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from ruledrift.boundary import mcp_server
from ruledrift.boundary.mcp_server import (
    AnswerFailed,
    McpServer,
    SessionFailed,
    bridge_command,
    listening_socket,
)
from ruledrift.data import Location, Message, Tool, ToolCall, canonical_json
from tests.support.processes import run_within

pytestmark = pytest.mark.process

HERE = Location(1, 1)
REFUND_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}
REFUND = Tool("refund", "Refund an order", canonical_json(REFUND_SCHEMA), HERE)
LOOKUP = Tool("lookup", "Look an order up", canonical_json({"type": "object"}), HERE)
MODES = ("auto", "legacy")  # 2026-07-28's requests, and the 2025 handshake


async def echo(tools: Sequence[Tool], call: ToolCall, round_: int) -> tuple[str, bool]:
    """Answers with what it was asked; a call of "fail" is an error result."""
    return f"{call.name} {call.arguments} #{round_}", call.name == "fail"


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions of a task group's (nested) group, or `error` itself."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def text_of(result: Any) -> str:
    (content,) = result.content
    return str(content.text)


@pytest.mark.parametrize("mode", MODES)
def test_a_real_client_lists_the_sessions_tools_and_each_call_is_recorded(mode: str) -> None:
    async def scenario() -> tuple[Message, ...]:
        async with McpServer(echo) as server:
            session = server.open_session((REFUND, LOOKUP))
            assert session.url.startswith("http://127.0.0.1:")
            async with Client(session.url, mode=mode) as client:
                listed = await client.list_tools()
                assert [tool.name for tool in listed.tools] == ["refund", "lookup"]
                assert listed.tools[0].description == "Refund an order"
                assert listed.tools[0].input_schema == REFUND_SCHEMA
                first = await client.call_tool("refund", {"order_id": "A1", "amount": 250})
                assert text_of(first) == 'refund {"amount":250,"order_id":"A1"} #1'
                assert first.is_error is False
                failed = await client.call_tool("fail")
                assert failed.is_error is True
                assert text_of(failed) == "fail {} #2"
            return session.close()

    messages = run_within(scenario())
    assert [m.role for m in messages] == ["assistant", "tool", "assistant", "tool"]
    first, second = messages[0].tool_calls[0], messages[2].tool_calls[0]
    assert (first.name, first.arguments) == ("refund", '{"amount":250,"order_id":"A1"}')
    assert (second.name, second.arguments) == ("fail", "{}")
    assert first.id != second.id
    assert messages[0].content == ""
    assert (messages[1].tool_call_id, messages[1].tool_name) == (first.id, "refund")
    assert messages[1].content == 'refund {"amount":250,"order_id":"A1"} #1'
    assert (messages[3].tool_call_id, messages[3].content) == (second.id, "fail {} #2")


def test_concurrent_sessions_keep_their_own_calls_and_tools() -> None:
    async def agent(url: str, label: str, calls: int) -> None:
        async with Client(url) as client:
            for index in range(calls):
                await client.call_tool("refund", {"order_id": f"{label}-{index}", "amount": 1})
                await asyncio.sleep(0)

    async def scenario() -> list[tuple[Message, ...]]:
        async with McpServer(echo) as server:
            sessions = [server.open_session((REFUND,)) for _ in range(4)]
            other = server.open_session((LOOKUP,))
            async with Client(other.url) as client:
                assert [t.name for t in (await client.list_tools()).tools] == ["lookup"]
            await asyncio.gather(*(agent(s.url, f"s{n}", 3 + n) for n, s in enumerate(sessions)))
            assert other.close() == ()
            return [session.close() for session in sessions]

    for number, messages in enumerate(run_within(scenario())):
        calls = [m.tool_calls[0] for m in messages if m.role == "assistant"]
        orders = [json.loads(call.arguments)["order_id"] for call in calls]
        assert orders == [f"s{number}-{index}" for index in range(3 + number)]
        results = [m.content for m in messages if m.role == "tool"]
        assert [r.rsplit("#", 1)[1] for r in results] == [str(i) for i in range(1, 4 + number)]


def test_a_closed_or_unknown_session_answers_404_and_other_hosts_are_refused() -> None:
    async def scenario() -> None:
        async with McpServer(echo) as server:
            session = server.open_session((REFUND,))
            async with Client(session.url) as client:
                await client.list_tools()
            session.close()
            with pytest.raises(ExceptionGroup) as refused:
                async with Client(session.url) as client:
                    await client.list_tools()
            assert [str(e) for e in leaves(refused.value)] == ["Not Found"]
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            headers = {"Accept": "application/json, text/event-stream"}
            async with httpx.AsyncClient() as http:
                unknown = await http.post(f"{server.base_url}/mcp/guess", json=body)
                assert unknown.status_code == 404
                live = server.open_session((REFUND,))
                forged = await http.post(
                    live.url, json=body, headers={**headers, "Host": "evil.example:80"}
                )
                assert forged.status_code >= 400
                from_a_page = await http.post(
                    live.url, json=body, headers={**headers, "Origin": "http://evil.example"}
                )
                assert from_a_page.status_code >= 400
                assert live.close() == ()

    run_within(scenario())


def test_a_session_past_its_limits_fails_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "MAX_SESSION_CALLS", 2)
    monkeypatch.setattr(mcp_server, "MAX_ARGUMENTS_CHARS", 40)
    monkeypatch.setattr(mcp_server, "MAX_NAME_CHARS", 6)

    async def scenario() -> None:
        async with McpServer(echo) as server:
            many = server.open_session((REFUND,))
            long = server.open_session((REFUND,))
            async with Client(many.url) as client:
                for _ in range(2):
                    assert not (await client.call_tool("refund", {"amount": 1})).is_error
                third = await client.call_tool("refund", {"amount": 1})
                assert third.is_error
                assert "more than 2 tool calls" in text_of(third)
            async with Client(long.url) as client:
                result = await client.call_tool("refund", {"order_id": "x" * 50})
                assert result.is_error
            named = server.open_session((REFUND,))
            async with Client(named.url) as client:
                assert (await client.call_tool("refund!", {})).is_error
            with pytest.raises(SessionFailed, match="named a tool with 7 characters; at most 6"):
                named.close()
            with pytest.raises(SessionFailed, match="more than 2 tool calls in one MCP session"):
                many.close()
            with pytest.raises(SessionFailed, match="65 characters of arguments; at most 40"):
                long.close()

    run_within(scenario())


def test_a_call_that_cannot_be_answered_fails_the_session() -> None:
    async def cannot(tools: Sequence[Tool], call: ToolCall, round_: int) -> tuple[str, bool]:
        raise AnswerFailed("a matcher took too long")

    async def scenario() -> None:
        async with McpServer(cannot) as server:
            session = server.open_session((REFUND,))
            async with Client(session.url) as client:
                result = await client.call_tool("refund", {"amount": 1})
            assert result.is_error
            assert text_of(result) == "RuleDrift's MCP mock server: a matcher took too long"
            with pytest.raises(SessionFailed, match="a matcher took too long"):
                session.close()

    run_within(scenario())


def test_a_bug_in_the_answer_reaches_the_run_as_it_was() -> None:
    async def buggy(tools: Sequence[Tool], call: ToolCall, round_: int) -> tuple[str, bool]:
        raise ZeroDivisionError("a bug")

    async def scenario() -> None:
        async with McpServer(buggy) as server:
            session = server.open_session((REFUND,))
            async with Client(session.url) as client:
                with pytest.raises(MCPError):
                    await client.call_tool("refund", {"amount": 1})
            with pytest.raises(ZeroDivisionError, match="a bug"):
                session.close()

    run_within(scenario())


def test_the_server_starts_and_stops_in_different_tasks_and_frees_its_port() -> None:
    async def scenario() -> None:
        server = McpServer(echo)
        await asyncio.create_task(server.__aenter__())
        session = server.open_session((REFUND,))
        async with Client(session.url) as client:
            await client.call_tool("refund", {"amount": 1})
        await asyncio.create_task(server.__aexit__(None, None, None))
        async with httpx.AsyncClient() as http:
            with pytest.raises(httpx.ConnectError):
                await http.post(session.url, json={})
        with pytest.raises(RuntimeError, match="not running"):
            server.open_session((REFUND,))

    run_within(scenario())


def test_the_bridge_command_runs_this_python_and_names_the_session() -> None:
    command = bridge_command("http://127.0.0.1:9/mcp/t")
    assert command[1:] == ["-m", "ruledrift", "tools", "serve", "--url", "http://127.0.0.1:9/mcp/t"]


def test_the_servers_connections_send_at_once() -> None:
    """TCP_NODELAY on every connection the server accepts: without it, each answer's second
    write waited for the client's delayed ACK (40 ms a call on Linux)."""

    async def scenario() -> int:
        sock = listening_socket()
        assert sock.getsockname()[0] == "127.0.0.1"
        accepted: asyncio.Future[asyncio.BaseTransport] = asyncio.Future()

        class Accept(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                accepted.set_result(transport)

        server = await asyncio.get_running_loop().create_server(Accept, sock=sock)
        async with server:
            _, writer = await asyncio.open_connection(*sock.getsockname())
            transport = await accepted
            option = transport.get_extra_info("socket").getsockopt(
                socket.IPPROTO_TCP, socket.TCP_NODELAY
            )
            writer.close()
            transport.close()
            return int(option)

    assert run_within(scenario()) == 1
