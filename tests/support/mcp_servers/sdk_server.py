"""A real MCP server over stdio, written with the official SDK's low-level `Server`, for
`ruledrift tools import --mcp` and the MCP client tests. Steered by its arguments:

(no argument)   list four tools: lookup_order (read-only), refund and delete_user (destructive),
                and note, whose description carries terminal escapes, `##[error]` and a bidi
                override, and which has no hints
--page-size N   list them N to a page (cursors "1", "2", …)
--endless       page forever: every page names a next cursor
--huge          add a tool whose schema is 200,000 characters of JSON
--no-tools      list no tool
--fail          answer tools/list with an error
--exit          write escapes to stderr and exit 3 before reading anything
--hang          read requests but never answer
--stderr TEXT   write TEXT to stderr first
--pid-file PATH write this process's id to PATH first
--daemon PATH   first start a daemon (a child in a session of its own, which sleeps) and write
                its process id to PATH
"""

import argparse
import os
import sys
import time
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

parser = argparse.ArgumentParser()
parser.add_argument("--page-size", type=int, default=0)
parser.add_argument("--endless", action="store_true")
parser.add_argument("--huge", action="store_true")
parser.add_argument("--no-tools", action="store_true")
parser.add_argument("--fail", action="store_true")
parser.add_argument("--exit", action="store_true")
parser.add_argument("--hang", action="store_true")
parser.add_argument("--stderr", default="")
parser.add_argument("--pid-file")
parser.add_argument("--daemon")
args = parser.parse_args()

OBJECT = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
}
TOOLS = [
    types.Tool(
        name="lookup_order",
        description="Look an order up",
        input_schema=OBJECT,
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="refund",
        description="Refund an order",
        input_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
        annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=True),
    ),
    types.Tool(
        name="delete_user",
        description="Delete a user",
        input_schema={"type": "object", "properties": {"user": {"type": "string"}}},
        annotations=types.ToolAnnotations(destructive_hint=True),
    ),
    types.Tool(
        name="note",
        description="Take a note \x1b[31mred\x1b[0m ##[error]forged \u202eevil",
        input_schema={"type": "object", "properties": {}},
    ),
]
if args.huge:
    TOOLS.append(
        types.Tool(
            name="huge",
            description="A tool with a huge schema",
            input_schema={"type": "object", "description": "x" * 200_000},
        )
    )


async def list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    if args.hang:
        await anyio.sleep_forever()
    if args.fail:
        raise MCPError(types.INTERNAL_ERROR, "the tool registry is down")
    if args.no_tools:
        return types.ListToolsResult(tools=[])
    cursor = params.cursor if params else None
    if args.endless:
        page = int(cursor or 0)
        return types.ListToolsResult(tools=TOOLS[:1], next_cursor=str(page + 1))
    if not args.page_size:
        return types.ListToolsResult(tools=TOOLS)
    start = int(cursor or 0)
    end = start + args.page_size
    following = str(end) if end < len(TOOLS) else None
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=following)


async def call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="done")])


async def main() -> None:
    server = Server("test-tools", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if args.daemon and os.fork() == 0:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(args.daemon + ".tmp", "w") as daemon_file:
        daemon_file.write(str(os.getpid()))
    os.rename(args.daemon + ".tmp", args.daemon)
    time.sleep(3600)
    os._exit(0)
if args.pid_file:
    with open(args.pid_file, "w") as pid_file:
        pid_file.write(str(os.getpid()))
if args.stderr:
    sys.stderr.write(args.stderr + "\n")
    sys.stderr.flush()
if args.exit:
    sys.stderr.write("boom \x1b[2J\x1b]0;owned\x07 the server cannot start\n")
    sys.exit(3)
anyio.run(main)
