#!/usr/bin/env python3
"""The refund agent of agent.py, getting its tools over MCP, as agents built on a framework do.

RuleDrift runs it in report mode with `"mcp": true` (suite-mcp.json): each request's
`context.mcp` holds the address of an MCP server that serves the suite's tools and answers them
from the suite's mocks, `url` (streamable HTTP) and `command` (a program that speaks MCP over
stdio, for frameworks that start their servers). The agent lists the tools, runs its own loop
(`decide` of agent.py), calls each tool over MCP, and answers with its final text only: RuleDrift
records the calls it really made. Start it with `--stdio` to use `command` instead of `url`.

It needs the `mcp` package (installed with RuleDrift).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent import decide


async def run_turn(request: dict[str, Any], stdio: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = request["messages"]
    mcp = request["context"].get("mcp")
    if mcp is None:  # no tools offered on this call
        return {"content": decide(messages).get("content", "")}
    server: str | StdioServerParameters = mcp["url"]
    if stdio:
        server = StdioServerParameters(command=mcp["command"][0], args=mcp["command"][1:])
    async with Client(server) as client:
        offered = {tool.name for tool in (await client.list_tools()).tools}
        added: list[dict[str, Any]] = []
        for number in range(1, 9):
            step = decide(messages + added)
            if "toolCalls" not in step:
                return {"content": step["content"]}
            calls = [{**c, "id": f"mcp-{number}-{i}"} for i, c in enumerate(step["toolCalls"])]
            added.append({"role": "assistant", "content": "", "toolCalls": calls})
            for call in calls:
                if call["name"] not in offered:
                    text = json.dumps({"error": "no such tool"})
                else:
                    result = await client.call_tool(call["name"], json.loads(call["arguments"]))
                    text = "".join(getattr(part, "text", "") for part in result.content)
                added.append({"role": "tool", "toolCallId": call["id"], "content": text})
    return {"content": "I gave up after 8 tool calls."}


def main() -> int:
    stdio = "--stdio" in sys.argv[1:]
    for line in sys.stdin:
        try:
            answer = asyncio.run(run_turn(json.loads(line), stdio))
        except Exception as error:  # noqa: BLE001 - an answer RuleDrift shows, not a traceback
            answer = {"error": f"the agent failed: {type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
