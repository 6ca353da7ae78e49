"""RuleDrift's tool mocks as an MCP server, for agents that run their own tool loop (command
protocol 2, report mode) and get their tools over MCP: every call the agent makes is answered by
the suite's mocks (`checks/tools.answer_call`, the same answers the tool loop gives) and recorded
per session (`boundary/mcp_server.py`), so the calls the agent really made come back as its
exchange, whatever its framework.

    async with McpMock() as server:              # one server per run, on loopback
        session = server.open_session(tools)     # one session per agent request
        ... the agent gets session.url (streamable HTTP) or session.command (stdio) ...
        exchange = session.close()               # its calls and their results, as messages

Import this module only when an MCP server is asked for: it loads the SDK (about a second).
"""

from __future__ import annotations

from collections.abc import Sequence

from ruledrift.boundary.mcp_server import (
    AnswerFailed,
    McpServer,
    McpSession,
    SessionFailed,
    bridge_command,
)
from ruledrift.checks.regex_workers import RegexEvaluator, RegexTimeout, WorkerFailed
from ruledrift.checks.tools import RegexTest, answer_call, result_text
from ruledrift.data import Tool, ToolCall

__all__ = ["McpMock", "McpSession", "SessionFailed", "bridge_command"]


async def _unchecked(tool: Tool, arguments: str) -> str | None:
    """No check of the arguments here: the record is dropped (the tool loop checks the calls
    the agent reports, in a regex worker)."""
    return None


class McpMock(McpServer):
    """The suite's mocks served over MCP (see `McpServer`). `regex_test` evaluates the `matches`
    matchers of the mocks' `when`; None: the server's own regex workers, started when a matcher
    first needs one and stopped with the server."""

    def __init__(self, regex_test: RegexTest | None = None) -> None:
        super().__init__(self._mocked)
        self._workers: RegexEvaluator | None = None
        if regex_test is None:
            self._workers = RegexEvaluator()
            regex_test = self._workers.test
        self._regex = regex_test

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await super().__aexit__(*exc_info)
        finally:
            if self._workers is not None:
                await self._workers.aclose()

    async def _mocked(self, tools: Sequence[Tool], call: ToolCall, round_: int) -> tuple[str, bool]:
        """The mock's answer to `call`: its result's text (as the tool loop sends it) and
        whether it is an error result."""
        try:
            _, result = await answer_call(call, round_, tools, self._regex, _unchecked)
        except RegexTimeout as timeout:
            raise AnswerFailed(
                f"a `matches` matcher of the mock of {call.name!r} took longer than"
                f" {timeout.timeout_s:g} s; simplify the pattern"
            ) from timeout
        except WorkerFailed as failed:
            raise AnswerFailed(
                f"a mock's `matches` matcher could not be evaluated: {failed}"
            ) from failed
        return result_text(result), result.error is not None
