"""What a person sees of `ruledrift tools`: the drafted `tools` block on stdout (or where it was
written), and on stderr what to review: the destructive tools, the placeholders, what
`validate` will refuse. `tools serve` prints nothing: its stdout is the MCP connection."""

from __future__ import annotations

import sys

from ruledrift.app.tools import (
    ToolsImportOutcome,
    ToolsImportRequest,
    serve_tools,
    shown_name,
    tools_import,
)
from ruledrift.boundary.files import shown
from ruledrift.errors import ExitCode

__all__ = ["import_tools", "serve"]


def import_tools(request: ToolsImportRequest) -> int:
    """`ruledrift tools import --mcp -- COMMAND…`."""
    outcome = tools_import(request)
    if outcome.output is None:
        sys.stdout.write(outcome.text)
        sys.stdout.flush()
    else:
        print(f"wrote {shown(outcome.output)}: {len(outcome.tools)} tool(s)")
    for line in review_notes(outcome):
        sys.stderr.write(f"ruledrift: {line}\n")
    return ExitCode.PASSED


def review_notes(outcome: ToolsImportOutcome) -> list[str]:
    """What the person who reviews the draft must do, for stderr (already terminal-safe)."""
    count = len(outcome.tools)
    notes = [
        f"listed {count} tool(s); each mock is a placeholder error result: replace it with "
        "what the tool should answer (result, error or results) before running the suite"
    ]
    destructive = outcome.destructive
    if destructive:
        names = ", ".join(shown_name(name) for name in destructive)
        notes.append(
            f"warning: the server marks {len(destructive)} tool(s) destructive "
            f"(destructiveHint): {names}. Every probe forks the conversation and every fork "
            "runs the agent's tools: give the agent these tools only as mocks (RuleDrift's MCP "
            "mock server) or in a sandbox"
        )
    unhinted = sum(1 for tool in outcome.tools if not tool.hinted)
    if unhinted:
        notes.append(
            f"{unhinted} tool(s) carry no behaviour hints (readOnlyHint, destructiveHint): MCP "
            "presumes such a tool may be destructive"
        )
    notes.extend(f"warning: {warning}" for warning in outcome.warnings)
    return notes


def serve(url: str) -> int:
    """`ruledrift tools serve --url URL`: the stdio bridge, until stdin closes."""
    serve_tools(url)
    return ExitCode.PASSED
