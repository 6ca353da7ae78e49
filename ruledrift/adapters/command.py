"""The command adapter: one process per model call, a JSON request on its stdin, a JSON answer on
its stdout; or, with protocol 2 and `"persistent": true`, long-lived workers that answer one
request line with one answer line (`boundary/workers.py`). Protocol 2's request and answers are
read in `command_v2`. The protocol, its limits and its errors are described in
docs/command-adapter.md."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ruledrift.adapters.base import AdapterError, AdapterType, CallContext, Completion
from ruledrift.adapters.command_v2 import AnswerProblem, ToolMode, read_answer, request_body
from ruledrift.boundary.processes import describe_exit, exec_failure
from ruledrift.boundary.programs import OutputTooLarge, ProgramNotStarted, Programs
from ruledrift.boundary.workers import StrayOutput, WorkerExited, Workers
from ruledrift.data import Message, TargetInfo
from ruledrift.text import cut_text, json_kind, repair_surrogates

if TYPE_CHECKING:
    from ruledrift.adapters.mcp_mock import McpMock

PROTOCOL = "ruledrift.command.v1"
MAX_OUTPUT_BYTES = 10_000_000  # stdout cap per call: the agent is killed as soon as it writes more
STDERR_TAIL_LINES = 20  # how much of stderr an error message quotes, at most
STDERR_TAIL_CHARS = 2000
MAX_ERROR_CHARS = 2000  # how much of the agent's `error` a message quotes, at most
_PROBLEM_CHARS = MAX_ERROR_CHARS + 500  # a message before its stderr tail: the words around


DEFAULT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class CommandAdapterConfig:
    command: str
    args: tuple[str, ...]
    cwd: Path
    timeout_ms: int
    type: Literal["command"] = "command"
    protocol: Literal[1, 2] = 1
    tool_mode: ToolMode = "delegate"  # protocol 2
    persistent: bool = False  # protocol 2: long-lived workers instead of a process per call
    mcp: bool = False  # protocol 2, report mode: the suite's mocks served to the agent over MCP

    @property
    def model(self) -> str | None:
        return None


def settings_problems(settings: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """Strings that JSON allows and no program can receive: a NUL ends a C string. (A lone
    surrogate, the other such string, is U+FFFD once the suite is read: see jsonpos.)"""
    values = {"/command": settings.get("command"), "/cwd": settings.get("cwd")}
    args = settings.get("args")
    if isinstance(args, list):
        values |= {f"/args/{index}": arg for index, arg in enumerate(args)}
    for pointer, value in values.items():
        if isinstance(value, str) and "\0" in value:
            yield (
                pointer,
                "contains a NUL character (\\u0000), which no program can receive; remove it",
            )
    if settings.get("mcp") is True and settings.get("toolMode") != "report":
        yield (
            "/mcp",
            '"mcp" needs "protocol": 2 and "toolMode": "report" (only an agent that runs its '
            'own tool loop calls tools over MCP): set them beside it, or remove "mcp"',
        )
    if settings.get("protocol", 1) == 1:  # another value is the schema's to report
        for key in ("toolMode", "persistent"):
            if key in settings:
                yield (
                    f"/{key}",
                    f'"{key}" needs "protocol": 2 (protocol 1 has neither tools nor persistent '
                    f'workers): set "protocol": 2 beside it, or remove "{key}"',
                )


def parse_config(settings: Mapping[str, Any], suite_dir: Path) -> CommandAdapterConfig:
    return CommandAdapterConfig(
        command=settings["command"],
        args=tuple(settings.get("args", ())),
        cwd=Path(os.path.normpath(suite_dir / settings.get("cwd", "."))),
        timeout_ms=settings.get("timeoutMs", DEFAULT_TIMEOUT_MS),
        protocol=settings.get("protocol", 1),
        tool_mode=settings.get("toolMode", "delegate"),
        persistent=settings.get("persistent", False),
        mcp=settings.get("mcp", False),
    )


class _BadOutput(Exception):
    pass


class CommandAdapter:
    """Runs `[command, *args]` (no shell) in `cwd`, in a process group of its own: once per call,
    killing the whole group when the call ends, times out or is cancelled; or, `persistent`,
    as long-lived workers, one per call in flight, each killed when it fails a call and all of
    them at `aclose`."""

    def __init__(
        self, config: CommandAdapterConfig, *, max_output_bytes: int = MAX_OUTPUT_BYTES
    ) -> None:
        self._config = config
        self._argv = (config.command, *config.args)
        self._max_output = max_output_bytes
        self._programs = Programs()  # the calls in flight
        self._workers = (
            Workers(self._argv, config.cwd, max_line=max_output_bytes)
            if config.persistent
            else None
        )
        self._mcp: McpMock | None = None  # with `mcp`: started by open(), stopped by aclose()

    async def open(self, *, tools: bool = False) -> None:
        """Check that `cwd` is a directory and the command exists (persistent workers start
        with the first calls); with `mcp`, start the MCP server of the suite's mocks."""
        self._check_command()
        if self._config.mcp and self._mcp is None:
            from ruledrift.adapters.mcp_mock import McpMock  # the SDK takes a second to import

            mock = McpMock()
            await mock.__aenter__()
            self._mcp = mock

    def _check_command(self) -> None:
        """That `cwd` is a directory and the command exists, without starting anything."""
        cwd, command = self._config.cwd, self._config.command
        if not cwd.is_dir():
            what = "is not a directory" if cwd.exists() else "does not exist"
            raise _error(
                f'the command adapter\'s cwd {cwd} {what}: fix "cwd" in the configuration '
                "(a relative cwd resolves from the configuration file's directory)"
            )
        if "/" not in command:
            if shutil.which(command) is None:
                raise _error(
                    f'the agent command "{command}" was not found on PATH: install it, or fix '
                    f'"command" (a path that contains "/" resolves from cwd {cwd})'
                )
            return
        path = cwd / command
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise _error(
                f'the agent command "{command}" {what} ({path}): fix "command" '
                f'(a path that contains "/" resolves from cwd {cwd})'
            )
        if not _executable(path):
            raise _error(
                f'the agent command "{command}" is not executable: run `chmod +x {path}`, or run '
                f'it through its interpreter ("command": "python3", "args": ["{command}"])'
            )

    def target_info(self) -> TargetInfo:
        details: dict[str, object] = {"command": list(self._argv)}
        if self._config.protocol == 2:
            details |= {
                "protocol": 2,
                "toolMode": self._config.tool_mode,
                "persistent": self._config.persistent,
            }
            if self._config.mcp:
                details["mcp"] = True
        return TargetInfo(adapter="command", model=None, details=details)

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        if self._mcp is None or context.tools is None:
            return await self._complete(messages, context)
        from ruledrift.boundary.mcp_server import SessionFailed  # imported with the server

        offered = () if context.tools.choice == "none" else context.tools.tools
        session = self._mcp.open_session(offered)
        mcp = {"url": session.url, "command": session.command}
        try:
            answer = await self._complete(messages, context, mcp)
        except BaseException:
            with contextlib.suppress(SessionFailed):
                session.close()
            raise
        try:
            exchange = session.close()
        except SessionFailed as failed:
            raise _error(f"the agent's calls over MCP failed: {failed}") from None
        if answer.exchange:
            raise _error(
                'the agent\'s response has "messages", but its calls are recorded over MCP '
                '("mcp": true): leave "messages" out'
            )
        return dataclasses.replace(answer, exchange=exchange)

    async def _complete(
        self,
        messages: Sequence[Message],
        context: CallContext,
        mcp: Mapping[str, object] | None = None,
    ) -> Completion:
        request = self._request(messages, context, mcp)
        stderr = bytearray()
        if self._workers is None:
            response = await self._run_once(request, stderr)
        else:
            response = await self._ask_worker(self._workers, request, stderr)
        answer = self._completion(response, context, stderr)
        if context.seed is None:
            return answer
        return dataclasses.replace(answer, metadata={**answer.metadata, "seed": context.seed})

    async def aclose(self) -> None:
        """Kill the agents of calls still in flight, and what they started (those calls then
        fail with AdapterError), and every persistent worker; stop the MCP server."""
        self._programs.kill_all()
        if self._workers is not None:
            await self._workers.aclose()
        if self._mcp is not None:
            mock, self._mcp = self._mcp, None
            await mock.__aexit__(None, None, None)

    def _request(
        self,
        messages: Sequence[Message],
        context: CallContext,
        mcp: Mapping[str, object] | None = None,
    ) -> bytes:
        where = _where(context)
        if mcp is not None:
            where["mcp"] = dict(mcp)
        if self._config.protocol == 1:
            request = _request_v1(messages, context, where)
        else:
            request = request_body(messages, context, where, self._config.tool_mode)
        # ASCII with \u escapes: any JSON reader decodes it, whatever its locale; and one line.
        return json.dumps(request).encode("ascii") + b"\n"

    async def _run_once(self, request: bytes, stderr: bytearray) -> dict[str, object]:
        """The response of a process started for this call, its `error` and exit dealt with."""
        try:
            output, code = await self._call(request, stderr)
        except TimeoutError:
            problem = f"did not answer within {self._config.timeout_ms} ms (timeoutMs)"
        except OutputTooLarge:
            problem = f"wrote more than {self._max_output:,} bytes to stdout (the limit)"
        else:
            failed_exec = self._could_not_exec(code, stderr)
            if failed_exec is not None:
                raise failed_exec
            return _response(output, code, stderr)
        raise _error(f"the agent {problem} and was killed", stderr)

    async def _call(self, request: bytes, stderr: bytearray) -> tuple[bytes, int]:
        """Start the agent, feed it the request, read its answer, wait for its exit (see
        `Programs.run`: whatever happens, its group is killed)."""
        try:
            return await self._programs.run(
                self._argv,
                self._config.cwd,
                request,
                timeout_s=self._config.timeout_ms / 1000,
                max_stdout=self._max_output,
                stderr=stderr,
            )
        except ProgramNotStarted as failure:
            raise self._not_started(str(failure)) from None

    async def _ask_worker(
        self, workers: Workers, request: bytes, stderr: bytearray
    ) -> dict[str, object]:
        """The response of a persistent worker (see `Workers.ask`: one that fails is killed),
        its `error` dealt with."""
        try:
            response = await workers.ask(
                request, _parse_line, timeout_s=self._config.timeout_ms / 1000, stderr=stderr
            )
        except TimeoutError:
            problem = f"did not answer within {self._config.timeout_ms} ms (timeoutMs)"
        except OutputTooLarge:
            problem = f"wrote more than {self._max_output:,} bytes to stdout (the limit)"
        except StrayOutput as stray:
            problem = (
                f"wrote {stray.size:,} bytes to stdout after its previous answer (a persistent "
                "agent writes exactly one line per request, and its logs to stderr)"
            )
        except WorkerExited as exited:
            raise self._ended(exited.code, stderr) from None
        except ProgramNotStarted as failure:
            raise self._not_started(str(failure)) from None
        except _BadOutput as bad:
            raise _error(f"{bad}; the agent was killed", stderr) from None
        else:
            return _checked(response, 0, stderr)
        raise _error(f"the agent {problem} and was killed", stderr)

    def _completion(
        self, response: Mapping[str, object], context: CallContext, stderr: bytearray
    ) -> Completion:
        if self._config.protocol == 1:
            return _content(response, stderr)
        try:
            return read_answer(response, self._config.tool_mode, context)
        except AnswerProblem as problem:
            raise _error(f"the agent's response {problem}", stderr) from None

    def _ended(self, code: int, stderr: bytearray) -> AdapterError:
        """A worker that ended before it answered: it could not start, or it crashed."""
        return self._could_not_exec(code, stderr) or _error(
            f"the agent {describe_exit(code)} before it answered", stderr
        )

    def _could_not_exec(self, code: int, stderr: bytearray) -> AdapterError | None:
        """The error when `setpriv`, which execs the agent, could not; else None."""
        failed_exec = exec_failure(bytes(stderr)) if code in (126, 127) else None
        return None if failed_exec is None else self._not_started(failed_exec)

    def _not_started(self, reason: str) -> AdapterError:
        return _error(
            f'could not start the agent command "{self._config.command}" in '
            f"{self._config.cwd}: {reason}"
        )


def _executable(path: Path) -> bool:
    try:
        return os.access(path, os.X_OK)
    except ValueError:  # a lone surrogate: it cannot be started either
        return False


def _request_v1(
    messages: Sequence[Message], context: CallContext, where: dict[str, object]
) -> dict[str, object]:
    """Protocol 1's request, which has no tools: a call with tools fails rather than losing
    them (a tool rule would pass on an agent that was never offered the tool)."""
    if context.tools is not None or any(m.role == "tool" for m in messages):
        raise _error(
            "the suite offers tools, which command protocol 1 cannot send: set "
            '"protocol": 2 in the command adapter (docs/command-adapter.md#protocol-2-tools)'
        )
    return {
        "protocol": PROTOCOL,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "context": where,
    }


def _where(context: CallContext) -> dict[str, object]:
    """The request's `context`: which call this is."""
    where: dict[str, object] = {
        "suite": context.suite,
        "scenario": context.scenario,
        "kind": context.kind,
        "run": context.run,
    }
    if context.seed is not None:
        where["seed"] = context.seed
    if context.kind == "turn":
        where["turn"] = context.turn
    else:
        where["probe"] = context.probe
        where["afterTurn"] = context.after_turn
        if context.control:
            where["control"] = True
    return where


def _response(output: bytes, code: int, stderr: bytes | bytearray) -> dict[str, object]:
    """The response in the output, or AdapterError: a non-zero exit fails even with a content,
    and an `error` is reported (with the exit) whatever the exit code."""
    try:
        response = _parse(output)
    except _BadOutput as bad:
        problem = str(bad) if code == 0 else f"the agent {describe_exit(code)}"
        raise _error(problem, stderr) from None
    return _checked(response, code, stderr)


def _checked(
    response: dict[str, object], code: int, stderr: bytes | bytearray
) -> dict[str, object]:
    error = response.get("error")
    if error is not None:
        exit_note = "" if code == 0 else f" (the agent {describe_exit(code)})"
        raise _error(f"the agent reported an error: {_quoted_error(error)}{exit_note}", stderr)
    if code != 0:
        raise _error(f"the agent {describe_exit(code)}", stderr)
    return response


def _content(response: Mapping[str, object], stderr: bytes | bytearray) -> Completion:
    """Protocol 1's answer: its `content`."""
    content = response.get("content")
    if not isinstance(content, str):
        problem = (
            'has no "content" (expected a string)'
            if content is None
            else f'has a "content" that is {json_kind(content)}, not a string'
        )
        raise _error(f"the agent's response {problem}", stderr)
    return Completion(content=content)


def _quoted_error(error: object) -> str:
    """The agent's `error` as it is shown: a string as is, anything else as JSON; at most
    MAX_ERROR_CHARS characters (one agent's 9.5 MB error, copied into every probe it failed,
    once made a 190 MB report)."""
    if isinstance(error, str):
        text = error
    else:
        try:
            text = json.dumps(error)
        except RecursionError:
            text = f"({json_kind(error)} too deeply nested to show)"
    return cut_text(text, MAX_ERROR_CHARS)


def _parse_line(line: bytes) -> dict[str, object]:
    """A persistent worker's answer line."""
    if not line.strip():
        raise _BadOutput("the agent wrote an empty line to stdout (expected one JSON object)")
    return _parse(line)


def _parse(output: bytes) -> dict[str, object]:
    if not output.strip():
        raise _BadOutput("the agent wrote nothing to stdout (expected one JSON object)")
    try:
        text = output.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise _BadOutput(f"the agent's output is not UTF-8 (byte {error.start})") from None
    try:
        response = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        where = (
            f" at line {error.lineno} column {error.colno}"
            if isinstance(error, json.JSONDecodeError)
            else ""
        )
        # the text is not quoted: it may be a model's answer, which stays out of reports
        raise _BadOutput(
            f"the agent's output is not JSON{where} ({len(output)} bytes; write only the "
            "response to stdout, and logs to stderr)"
        ) from None
    if not isinstance(response, dict):
        raise _BadOutput(f"the agent's output is {json_kind(response)}, not a JSON object")
    return response


def _error(problem: str, stderr: bytes | bytearray = b"") -> AdapterError:
    """The one way an error leaves this adapter: `problem` (at most _PROBLEM_CHARS characters)
    and the tail of the agent's stderr, without lone surrogates (an agent's `error` may hold
    them, legal in JSON; a report could not encode them)."""
    message = cut_text(repair_surrogates(problem), _PROBLEM_CHARS)
    lines = stderr.decode("utf-8", errors="replace").rstrip().splitlines()
    tail = "\n".join(lines[-STDERR_TAIL_LINES:])[-STDERR_TAIL_CHARS:]
    if tail.strip():
        message += f"\nstderr (last lines):\n{textwrap.indent(tail, '  ')}"
    return AdapterError(message)


ADAPTER_TYPE = AdapterType(parse=parse_config, create=CommandAdapter, problems=settings_problems)
