"""MCP over stdio (boundary/mcp_stdio.py), against real processes: the bridge (`ruledrift tools
serve`) started by the official SDK's stdio client, in front of an MCP server of this test; and
the tool list of a real SDK server program (tests/support/mcp_servers), with every way such a
program can fail."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from ruledrift.boundary.mcp_server import McpServer
from ruledrift.boundary.mcp_stdio import ServerFailed, list_stdio_tools
from ruledrift.data import Location, Tool, ToolCall, canonical_json
from tests.support import MCP_SERVERS
from tests.support.cli_process import ruledrift
from tests.support.processes import gone, kill_survivors, run_within, wait_for_file

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
SDK_SERVER = str(MCP_SERVERS / "sdk_server.py")
RAW_SERVER = str(MCP_SERVERS / "raw_server.py")
REFUND = Tool(
    "refund",
    "Refund an order",
    canonical_json({"type": "object", "properties": {"amount": {"type": "number"}}}),
    Location(1, 1),
)


async def mocked(tools: Sequence[Tool], call: ToolCall, round_: int) -> tuple[str, bool]:
    amount = json.loads(call.arguments).get("amount", 0)
    if amount > 100:
        return '{"error":"needs a supervisor"}', True
    return f"refunded {amount}", False


def bridge_parameters(
    command: list[str], env: dict[str, str] | None = None
) -> StdioServerParameters:
    """How an agent's MCP client starts the bridge: the command it was handed, with the
    checkout on the path (the SDK passes on only a few variables of the environment)."""
    return StdioServerParameters(
        command=command[0],
        args=command[1:],
        env={"PYTHONPATH": str(ROOT), **(env or {})},
        cwd=str(ROOT),
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_agent_that_starts_the_bridge_reaches_the_session_and_is_recorded(mode: str) -> None:
    async def scenario() -> None:
        async with McpServer(mocked) as server:
            session = server.open_session((REFUND,))
            transport = stdio_client(bridge_parameters(session.command))
            async with Client(transport, mode=mode) as client:
                listed = await client.list_tools()
                assert [(t.name, t.description) for t in listed.tools] == [
                    ("refund", "Refund an order")
                ]
                assert listed.tools[0].input_schema == json.loads(REFUND.parameters_json)
                small = await client.call_tool("refund", {"amount": 20})
                big = await client.call_tool("refund", {"amount": 250})
            assert (small.is_error, small.content[0].text) == (False, "refunded 20")  # type: ignore[union-attr]
            assert big.is_error is True
            messages = session.close()
            calls = [m.tool_calls[0].arguments for m in messages if m.role == "assistant"]
            assert calls == ['{"amount":20}', '{"amount":250}']
            assert [m.content for m in messages if m.role == "tool"] == [
                "refunded 20",
                '{"error":"needs a supervisor"}',
            ]

    run_within(scenario())


def test_on_a_github_runner_the_bridges_stdout_is_still_the_connection() -> None:
    """RuleDrift makes every line of its stdout inert on a runner; the bridge's is MCP's."""
    hostile = dataclasses.replace(REFUND, description="::error::forged ##[error]x")

    async def scenario() -> None:
        async with McpServer(mocked) as server:
            session = server.open_session((hostile,))
            github = {"GITHUB_ACTIONS": "true"}
            async with Client(stdio_client(bridge_parameters(session.command, github))) as client:
                (tool,) = (await client.list_tools()).tools
                assert tool.description == "::error::forged ##[error]x"
                assert not (await client.call_tool("refund", {"amount": 3})).is_error
            assert len(session.close()) == 2

    run_within(scenario())


def test_a_bridge_to_a_closed_session_tells_the_agent_and_to_nowhere_exits_3() -> None:
    async def scenario() -> None:
        async with McpServer(mocked) as server:
            session = server.open_session((REFUND,))
            transport = stdio_client(bridge_parameters(session.command))
            async with Client(transport) as client:
                await client.call_tool("refund", {"amount": 1})
                session.close()
                with pytest.raises(MCPError, match=r"Not Found|cannot be reached"):
                    await client.call_tool("refund", {"amount": 2})

    run_within(scenario())
    done = ruledrift("tools", "serve", "--url", "http://127.0.0.1:9/mcp/none")
    assert done.returncode == 3, done.stderr
    assert "could not reach the MCP session" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "url",
    ["https://127.0.0.1:9/mcp/t", "http://example.com:80/mcp/t", "http://127.0.0.1/mcp/t", "x"],
)
def test_the_bridge_takes_only_a_loopback_session_url(url: str) -> None:
    done = ruledrift("tools", "serve", "--url", url)
    assert done.returncode == 2, done.stderr
    assert "expected the URL of a session of RuleDrift's MCP mock server" in done.stderr


# --- tools/list of a server program ----------------------------------------------------------


def listed(*arguments: str, timeout_s: float = 60.0) -> tuple[dict[str, object], ...]:
    command = [sys.executable, SDK_SERVER, *arguments]
    return asyncio.run(list_stdio_tools(command, timeout_s=timeout_s))


def test_the_tools_of_a_server_program_as_it_sent_them() -> None:
    tools = listed()
    assert [tool["name"] for tool in tools] == ["lookup_order", "refund", "delete_user", "note"]
    refund = tools[1]
    assert refund["description"] == "Refund an order"
    assert refund["inputSchema"] == {
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
    }
    assert refund["annotations"] == {"readOnlyHint": False, "destructiveHint": True}
    assert listed("--page-size", "1") == tools  # every page, in order


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--exit"], "the server ended the connection"),
        (["--fail"], "the server answered with an error: the tool registry is down"),
        (["--endless"], "the server's tool list goes on past 100 pages"),
    ],
)
def test_a_server_that_fails_says_how(arguments: list[str], message: str) -> None:
    with pytest.raises(ServerFailed, match=message) as failed:
        listed(*arguments)
    if arguments == ["--exit"]:
        assert "boom \x1b[2J" in failed.value.stderr  # kept as written: the console makes it safe


def test_an_answer_that_is_no_tool_list_is_located_without_its_values() -> None:
    hostile = "\x1b]0;owned\x07"
    result = json.dumps({"tools": [{"name": {"x": hostile}, "inputSchema": {"type": "object"}}]})
    with pytest.raises(ServerFailed) as failed:
        asyncio.run(list_stdio_tools([sys.executable, RAW_SERVER, result], timeout_s=60))
    assert str(failed.value) == (
        "the server's answer is not a valid MCP tool list: tools.0.name: "
        "Input should be a valid string"
    )


def test_a_server_that_hangs_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    try:
        with pytest.raises(ServerFailed, match="did not list its tools within 2 s"):
            listed("--hang", "--pid-file", str(pid_file), timeout_s=2)
        assert gone(int(pid_file.read_text()))
    finally:
        if pid_file.exists():
            kill_survivors(int(pid_file.read_text()))


def test_what_the_server_started_is_stopped_with_it_even_outside_its_group(
    tmp_path: Path,
) -> None:
    daemon_file = tmp_path / "daemon"
    try:
        assert len(listed("--daemon", str(daemon_file))) == 4
        wait_for_file(daemon_file)
        assert gone(int(daemon_file.read_text()))
    finally:
        if daemon_file.exists():
            kill_survivors(int(daemon_file.read_text()))


def test_a_program_that_is_not_there_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(ServerFailed, match="no-such-mcp-server is not on PATH"):
        asyncio.run(list_stdio_tools(["no-such-mcp-server"], timeout_s=5))
    not_executable = tmp_path / "server.py"
    not_executable.write_text("")
    with pytest.raises(ServerFailed, match="is not an executable file"):
        asyncio.run(list_stdio_tools([str(not_executable)], timeout_s=5))
    assert os.access(sys.executable, os.X_OK)
