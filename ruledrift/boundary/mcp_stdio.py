"""MCP over stdio, through the official `mcp` SDK, both ways:

- `bridge(url)`: serve an MCP session of RuleDrift's mock server (`boundary/mcp_server.py`) on
  this process's stdin and stdout, for an agent framework that only starts MCP servers as
  programs (`ruledrift tools serve --url URL`). Every request is passed on to the session's URL,
  so the calls are answered and recorded there, in the run; the bridge keeps nothing. It ends
  when its stdin closes (the agent is done, or gone).
- `list_stdio_tools(argv)`: start an MCP server program, ask for its tools (`tools/list`, every
  page) and stop it (`ruledrift tools import --mcp -- COMMAND…`).

A server program is hostile: it may not start, hang, die, answer what is not a tool list, or
write escape sequences to its stderr. Each of these is a `ServerFailed` with a message in plain
words; its stderr is kept (the last STDERR_KEEP_CHARS characters), never passed through to
RuleDrift's own, for the caller to show made safe. The program runs in a process group of its
own, carries RuleDrift's mark (`processes.tied_child`), and is killed with everything it started
once the tools are listed.

This module imports the SDK (about a second): import it only when MCP is asked for.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

import anyio
import mcp_types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ruledrift import __version__
from ruledrift.boundary.mcp_server import quiet_sdk_logs
from ruledrift.boundary.processes import kill_marked, tied_child

__all__ = ["MAX_PAGES", "MAX_TOOLS", "BridgeFailed", "ServerFailed", "bridge", "list_stdio_tools"]

MAX_PAGES = 100  # pages of a tool list (a server that pages forever is refused)
MAX_TOOLS = 1_000  # tools in all (a suite offers at most 128)
STDERR_KEEP_CHARS = 2_000  # the end of a server's stderr, kept for the error message


class ServerFailed(Exception):
    """An MCP server program could not be started, or did not list its tools. `stderr`: the
    end of what it wrote there (hostile: make it safe where it is shown)."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class BridgeFailed(Exception):
    """The bridge could not reach its session's URL (closed, or no RuleDrift listens)."""


# --- tools/list of a server program ---------------------------------------------------------


async def list_stdio_tools(argv: Sequence[str], *, timeout_s: float) -> tuple[dict[str, Any], ...]:
    """The tools the MCP server `argv` lists, each as the JSON object it sent (camelCase keys:
    `name`, `description`, `inputSchema`, `annotations`, …), in its order. The program gets
    this process's environment. Raises ServerFailed."""
    if not argv:
        raise ServerFailed("no server program to start")
    _check_startable(argv[0])
    quiet_sdk_logs()
    options = tied_child()
    command = [*options.prefix, *argv]
    parameters = StdioServerParameters(command=command[0], args=command[1:], env=options.env)
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
        try:
            with anyio.fail_after(timeout_s):
                return await _listed(parameters, errlog)
        except TimeoutError:
            message = f"the server did not list its tools within {timeout_s:g} s"
            raise ServerFailed(message, _tail(errlog)) from None
        except ServerFailed as failed:
            raise ServerFailed(str(failed), _tail(errlog)) from None
        except MCPError as error:
            raise ServerFailed(_mcp_problem(error), _tail(errlog)) from None
        except ValidationError as error:
            raise ServerFailed(_invalid_answer(error), _tail(errlog)) from None
        except OSError as error:
            message = f"could not start the server: {error.strerror or error}"
            raise ServerFailed(message, _tail(errlog)) from None
        finally:
            kill_marked(options.mark)


def _check_startable(program: str) -> None:
    """A program that is not there is said so, before anything starts (`setpriv`, which ties the
    server to RuleDrift, would otherwise be what starts and then fails)."""
    if os.sep in program:
        if not os.access(program, os.X_OK) or os.path.isdir(program):
            raise ServerFailed(f"could not start the server: {program} is not an executable file")
    elif shutil.which(program) is None:
        raise ServerFailed(f"could not start the server: {program} is not on PATH")


async def _listed(parameters: StdioServerParameters, errlog: TextIO) -> tuple[dict[str, Any], ...]:
    try:
        async with Client(stdio_client(parameters, errlog=errlog), cache=None) as client:
            return await _all_tools(client)
    except BaseExceptionGroup as group:
        raise _first_leaf(group) from None


async def _all_tools(client: Client) -> tuple[dict[str, Any], ...]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools.extend(
            tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in page.tools
        )
        if len(tools) > MAX_TOOLS:
            raise ServerFailed(f"the server lists more than {MAX_TOOLS:,} tools")
        cursor = page.next_cursor
        if cursor is None:
            return tuple(tools)
    raise ServerFailed(f"the server's tool list goes on past {MAX_PAGES} pages")


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first exception in a task group's group that is not a group itself."""
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


def _mcp_problem(error: MCPError) -> str:
    if error.code == mcp_types.CONNECTION_CLOSED:
        return "the server ended the connection (it exited, or closed its stdout) before listing"
    return f"the server answered with an error: {error.message} (code {error.code})"


def _invalid_answer(error: ValidationError) -> str:
    """Where the server's answer is not MCP, by position and kind (never its values)."""
    details = error.errors(include_url=False, include_input=False, include_context=False)
    where = ".".join(str(part) for part in details[0]["loc"]) if details else ""
    more = f" (and {len(details) - 1} more problem(s))" if len(details) > 1 else ""
    return f"the server's answer is not a valid MCP tool list: {where}: {details[0]['msg']}{more}"


def _tail(errlog: TextIO) -> str:
    errlog.flush()
    errlog.seek(0, os.SEEK_END)
    size = errlog.tell()
    errlog.seek(max(0, size - 4 * STDERR_KEEP_CHARS))
    return errlog.read()[-STDERR_KEEP_CHARS:].strip()


# --- the stdio bridge -------------------------------------------------------------------------


async def bridge(url: str) -> None:
    """Serve the MCP session at `url` on stdin and stdout until stdin closes. Raises BridgeFailed
    when the session cannot be reached at the start."""
    quiet_sdk_logs()
    try:
        async with Client(url, cache=None) as client:
            server = _forwarding(client)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
    except BaseExceptionGroup as group:
        raise _bridge_failure(_first_leaf(group)) from None
    except (MCPError, OSError) as error:
        raise _bridge_failure(error) from None


def _bridge_failure(error: BaseException) -> BaseException:
    if isinstance(error, MCPError | OSError) or type(error).__module__.startswith("httpx"):
        return BridgeFailed(f"could not reach the MCP session: {error}")
    return error


def _forwarding(client: Client) -> Server[Any]:
    """A stdio server that passes `tools/list` and `tools/call` on to `client`'s session."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        with _reaching():
            page = await client.list_tools(cursor=params.cursor if params else None)
        return mcp_types.ListToolsResult(tools=page.tools, next_cursor=page.next_cursor)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        with _reaching():
            result = await client.call_tool(params.name, params.arguments)
        return mcp_types.CallToolResult(
            content=result.content,
            structured_content=result.structured_content,
            is_error=result.is_error,
        )

    return Server(
        "ruledrift-mocks",
        version=__version__,
        description="RuleDrift's tool mocks, over stdio: every call is answered and recorded by "
        "the run's MCP mock server",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


@contextlib.contextmanager
def _reaching() -> Iterator[None]:
    """A failure to reach the session, as an error the agent reads."""
    try:
        yield
    except MCPError:
        raise
    except Exception as error:  # any failure to reach the session is one answer to the agent
        raise MCPError(
            mcp_types.INTERNAL_ERROR, f"RuleDrift's MCP mock session cannot be reached: {error}"
        ) from error
