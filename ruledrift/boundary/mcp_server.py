"""Tools served over MCP: streamable HTTP on a random loopback port, through the official `mcp`
SDK (its low-level `Server` and session manager, served by uvicorn), for agents that get their
tools from an MCP server. What a call returns is `answer`'s (the suite's mocks: see
`adapters/mcp_mock.py`); this module serves, routes and records.

One server per run; each agent request gets a session of its own (`open_session`): its own URL,
`http://127.0.0.1:PORT/mcp/TOKEN`, under which the agent lists the session's tools and calls
them. Every call is answered through `answer` and recorded in its session, in the order the calls
arrived; `McpSession.close()` returns the exchange as messages, one assistant message with the
call and one tool message with its result per call (MCP does not say which calls were
simultaneous, so each call is a round of its own), and from then on the URL answers 404. The
token is random (128 bits): another process on the machine can neither read a session's tools
nor add a call to it, and concurrent sessions never mix.

The HTTP side is stateless (no MCP session outlives its request, so nothing piles up over a long
run) and answers in JSON (no event stream is held open); the SDK's DNS-rebinding protection
admits only this server's own host and port. An agent framework that only starts MCP servers as
programs gets `McpSession.command`: `ruledrift tools serve --url URL`, a bridge from its stdin
and stdout to the session's URL (`boundary/mcp_stdio.py`), so every call is still recorded here.

An agent's arguments are data, never trusted: a session takes at most MAX_SESSION_CALLS calls,
each with at most MAX_ARGUMENTS_CHARS characters of arguments and a tool name of at most
MAX_NAME_CHARS, and a request body is at most MAX_BODY_BYTES. A session that goes past a limit,
or whose mock could not answer (`AnswerFailed`), fails: the agent gets an error result for that
call, and `close()` raises `SessionFailed` saying why. Any other exception of `answer` is a bug:
`close()` raises it again.

This module imports the SDK, uvicorn and Starlette (about a second): import it only when an MCP
server is asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ruledrift import __version__
from ruledrift.data import Message, Tool, ToolCall, canonical_json, json_value

__all__ = [
    "MAX_ARGUMENTS_CHARS",
    "MAX_NAME_CHARS",
    "MAX_SESSION_CALLS",
    "Answer",
    "AnswerFailed",
    "McpServer",
    "McpSession",
    "SessionFailed",
    "bridge_command",
    "listening_socket",
    "quiet_sdk_logs",
]

MAX_SESSION_CALLS = 256  # calls one session takes (the command adapter's MAX_EXCHANGE_CALLS)
MAX_ARGUMENTS_CHARS = 100_000  # one call's arguments, as JSON text
MAX_NAME_CHARS = 256  # the tool name a call gives (the command adapter's MAX_NAME_CHARS)
MAX_BODY_BYTES = 1_048_576  # one HTTP request to the server
HOST = "127.0.0.1"
_START_TIMEOUT_S = 30.0  # uvicorn's start on a socket already bound: milliseconds, unless loaded
_SHUTDOWN_GRACE_S = 2  # for requests still in flight when the server stops
_POLL_S = 0.005

# How a call is answered: `(the session's tools, call, round)` → (the result's text, whether it
# is an error result). `round` counts the session's calls from 1. Raises AnswerFailed when the
# answer cannot be given.
Answer = Callable[[Sequence[Tool], ToolCall, int], Awaitable[tuple[str, bool]]]


class AnswerFailed(Exception):
    """The call could not be answered (a mock's matcher ran out of time): the session fails,
    with this message."""


class SessionFailed(Exception):
    """What made a session fail (too many calls, arguments too long, a mock that could not
    answer): raised by `McpSession.close()`."""


def bridge_command(url: str) -> list[str]:
    """The program that serves the session at `url` over stdio: `ruledrift tools serve`, run by
    this Python."""
    return [sys.executable, "-m", "ruledrift", "tools", "serve", "--url", url]


def listening_socket() -> socket.socket:
    """A TCP socket bound to a free port of the loopback address, for uvicorn to listen on. It
    names IPPROTO_TCP: asyncio sets TCP_NODELAY only on the connections of a socket that says it
    is TCP, and without it every answer waited for the client's delayed ACK (44 ms a call,
    against 3)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.bind((HOST, 0))
    except OSError:
        sock.close()
        raise
    return sock


def quiet_sdk_logs() -> None:
    """The SDK's and uvicorn's log records stay out of RuleDrift's stderr (it has no logging of
    its own, so Python would print their warnings as they are, agents' words included): what
    matters reaches RuleDrift as a failed session or an error."""
    for name in ("mcp", "uvicorn", "sse_starlette", "httpx2"):
        logger = logging.getLogger(name)
        logger.propagate = False
        if not logger.handlers:
            logger.addHandler(logging.NullHandler())


@dataclass
class _Call:
    call: ToolCall
    text: str | None = None  # the result's text; None: not answered (yet)


class McpSession:
    """One agent request's session: its URL, the tools it serves, the calls made under it."""

    def __init__(self, server: McpServer, token: str, tools: Sequence[Tool]) -> None:
        self._server = server
        self._token = token
        self.tools = tuple(tools)
        self.url = f"{server.base_url}/mcp/{token}"
        self._ids = secrets.token_hex(4)  # call ids unique across the run's sessions
        self._calls: list[_Call] = []
        self._problem: str | None = None
        self._bug: BaseException | None = None
        self._closed = False

    @property
    def command(self) -> list[str]:
        """The stdio bridge to this session, for an agent that starts its MCP servers."""
        return bridge_command(self.url)

    @property
    def calls(self) -> int:
        """The calls made so far."""
        return len(self._calls)

    def close(self) -> tuple[Message, ...]:
        """End the session (its URL answers 404 from now on) and return its exchange: per call,
        in the order they arrived, an assistant message asking for it and a tool message with
        its result. Raises SessionFailed when the session failed, and an exception `answer`
        raised (a bug) as it was."""
        if not self._closed:
            self._closed = True
            self._server._forget(self._token)
        if self._bug is not None:
            raise self._bug
        if self._problem is not None:
            raise SessionFailed(self._problem)
        return tuple(message for call in self._calls for message in _messages(call))

    def _start(self, name: str, arguments: dict[str, Any] | None) -> tuple[_Call, int] | str:
        """A new call's record and its round, or why the session takes no more calls."""
        if self._problem is not None:
            return self._problem
        if len(name) > MAX_NAME_CHARS:
            return self._fail(
                f"a call of the MCP session named a tool with {len(name):,} characters; "
                f"at most {MAX_NAME_CHARS} are taken"
            )
        text = canonical_json(arguments if arguments is not None else {})
        if len(text) > MAX_ARGUMENTS_CHARS:
            return self._fail(
                f"a call of the MCP session had {len(text):,} characters of arguments; "
                f"at most {MAX_ARGUMENTS_CHARS:,} are taken"
            )
        if len(self._calls) >= MAX_SESSION_CALLS:
            return self._fail(
                f"the agent made more than {MAX_SESSION_CALLS} tool calls in one MCP session"
            )
        record = _Call(ToolCall(f"mcp_{self._ids}_{len(self._calls) + 1}", name, text))
        self._calls.append(record)
        return record, len(self._calls)

    def _fail(self, problem: str) -> str:
        self._problem = self._problem or problem
        return self._problem


def _messages(record: _Call) -> tuple[Message, Message]:
    call = record.call
    text = record.text
    if text is None:
        text = canonical_json({"error": "not answered: the MCP session closed first"})
    return (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", text, tool_call_id=call.id, tool_name=call.name),
    )


class McpServer:
    """The server (`async with McpServer(answer) as server`): started on entry on a random
    loopback port, stopped on exit. `open_session(tools)` gives a request its session. Entry
    and exit may happen in different tasks: the server runs in a task of its own."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self._sessions: dict[str, McpSession] = {}
        self._listed: dict[tuple[Tool, ...], list[mcp_types.Tool]] = {}
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.base_url = ""

    def open_session(self, tools: Sequence[Tool]) -> McpSession:
        """A new session serving `tools`, at a URL of its own."""
        if self._task is None:
            raise RuntimeError("the MCP server is not running")
        token = secrets.token_urlsafe(16)
        session = McpSession(self, token, tools)
        self._sessions[token] = session
        return session

    async def __aenter__(self) -> McpServer:
        quiet_sdk_logs()
        sock = listening_socket()
        port = sock.getsockname()[1]
        self.base_url = f"http://{HOST}:{port}"
        ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._serve(sock, port, ready))
        try:
            await asyncio.wait_for(asyncio.shield(ready), _START_TIMEOUT_S)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        task, self._task = self._task, None
        self._sessions.clear()
        if task is None:
            return
        self._stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _forget(self, token: str) -> None:
        self._sessions.pop(token, None)

    # --- serving -------------------------------------------------------------------------------

    async def _serve(self, sock: socket.socket, port: int, ready: asyncio.Future[None]) -> None:
        """The server's task: the SDK's session manager and uvicorn, until `_stop`."""
        manager = StreamableHTTPSessionManager(
            app=self._mcp_server(),
            json_response=True,
            stateless=True,
            security_settings=_loopback_only(port),
            max_request_body_size=MAX_BODY_BYTES,
        )
        app = Starlette(routes=[Route("/mcp/{token}", endpoint=_Routed(self, manager))])
        config = uvicorn.Config(
            app,
            lifespan="off",
            log_config=None,
            access_log=False,
            http="h11",
            ws="none",
            timeout_graceful_shutdown=_SHUTDOWN_GRACE_S,
        )
        server = _Uvicorn(config)
        try:
            async with manager.run():
                serving = asyncio.create_task(server.serve(sockets=[sock]))
                try:
                    await _started(server, serving)
                    ready.set_result(None)
                    await self._stop.wait()
                finally:
                    server.should_exit = True
                    await serving
        except Exception as error:
            if ready.done():
                raise
            ready.set_exception(error)
        finally:
            sock.close()

    def _mcp_server(self) -> Server[Any]:
        return Server(
            "ruledrift-mocks",
            version=__version__,
            description="RuleDrift's tool mocks: every call is answered by the suite's mocks "
            "and recorded",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def _session_of(self, ctx: ServerRequestContext[Any, Any]) -> McpSession:
        params = getattr(ctx.request, "path_params", None)
        token = params.get("token") if isinstance(params, dict) else None
        session = self._sessions.get(token) if isinstance(token, str) else None
        if session is None:
            raise MCPError(mcp_types.INVALID_REQUEST, "this MCP session is closed")
        return session

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        tools = self._session_of(ctx).tools
        if tools not in self._listed:
            self._listed[tools] = [_listed(tool) for tool in tools]
        return mcp_types.ListToolsResult(tools=self._listed[tools])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        session = self._session_of(ctx)
        started = session._start(params.name, params.arguments)
        if isinstance(started, str):
            return _result(f"RuleDrift's MCP mock server: {started}", error=True)
        record, round_ = started
        try:
            text, error = await self._answer(session.tools, record.call, round_)
        except AnswerFailed as failed:
            return _result(f"RuleDrift's MCP mock server: {session._fail(str(failed))}", True)
        except Exception as bug:
            session._bug = session._bug or bug
            raise
        record.text = text
        return _result(text, error)


def _listed(tool: Tool) -> mcp_types.Tool:
    schema = json_value(tool.parameters_json)
    return mcp_types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=schema if isinstance(schema, dict) else {"type": "object"},
    )


def _result(text: str, error: bool) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], is_error=error
    )


def _loopback_only(port: int) -> TransportSecuritySettings:
    """Requests must name this server (Host) and come from no web page but its own (Origin)."""
    hosts = [f"{HOST}:{port}", f"localhost:{port}"]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"http://{host}" for host in hosts],
    )


class _Routed:
    """The ASGI endpoint of `/mcp/{token}`: an open session's requests go to the SDK's session
    manager, any other token is answered 404."""

    def __init__(self, server: McpServer, manager: StreamableHTTPSessionManager) -> None:
        self._server = server
        self._manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = scope.get("path_params", {}).get("token")
        if token not in self._server._sessions:
            missing = JSONResponse({"error": "no such MCP session (closed, or never opened)"}, 404)
            await missing(scope, receive, send)
            return
        await self._manager.handle_request(scope, receive, send)


class _Uvicorn(uvicorn.Server):
    """uvicorn without its signal handlers: Ctrl-C and SIGTERM stay RuleDrift's."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def _started(server: uvicorn.Server, serving: asyncio.Task[None]) -> None:
    """Wait until uvicorn listens; raise when it ended instead."""
    while not server.started:
        if serving.done():
            serving.result()
            raise RuntimeError("the MCP server stopped while starting")
        await asyncio.sleep(_POLL_S)
