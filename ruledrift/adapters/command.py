"""The command adapter: one process per model call, a JSON request on its stdin, a JSON answer on
its stdout. The protocol, its limits and its errors are described in docs/command-adapter.md."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import textwrap
from asyncio.subprocess import PIPE, Process
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ruledrift.adapters.base import AdapterError, AdapterType, CallContext, Completion
from ruledrift.boundary.processes import (
    ChildOptions,
    describe_exit,
    exec_failure,
    kill_child,
    tied_child,
)
from ruledrift.data import Message, TargetInfo
from ruledrift.text import cut_text, json_kind, repair_surrogates

PROTOCOL = "ruledrift.command.v1"
MAX_OUTPUT_BYTES = 10_000_000  # stdout cap per call: the agent is killed as soon as it writes more
STDERR_TAIL_LINES = 20  # how much of stderr an error message quotes, at most
STDERR_TAIL_CHARS = 2000
MAX_ERROR_CHARS = 2000  # how much of the agent's `error` a message quotes, at most
_PROBLEM_CHARS = MAX_ERROR_CHARS + 500  # a message before its stderr tail: the words around
_STDERR_KEEP_BYTES = 4 * STDERR_TAIL_CHARS  # stderr's last bytes: 4 per UTF-8 character at most
_CHUNK = 64 * 1024
_CLEANUP_SECONDS = 2.0  # after the kill, how long to wait for the pipes to close and the exit


DEFAULT_TIMEOUT_MS = 30_000


@dataclass(frozen=True)
class CommandAdapterConfig:
    command: str
    args: tuple[str, ...]
    cwd: Path
    timeout_ms: int
    type: Literal["command"] = "command"

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


def parse_config(settings: Mapping[str, Any], suite_dir: Path) -> CommandAdapterConfig:
    return CommandAdapterConfig(
        command=settings["command"],
        args=tuple(settings.get("args", ())),
        cwd=Path(os.path.normpath(suite_dir / settings.get("cwd", "."))),
        timeout_ms=settings.get("timeoutMs", DEFAULT_TIMEOUT_MS),
    )


class _OutputTooLarge(Exception):
    pass


class _BadOutput(Exception):
    pass


class CommandAdapter:
    """Runs `[command, *args]` once per call (no shell) in `cwd`, in a process group of its own,
    and kills the whole group when the call ends, times out or is cancelled."""

    def __init__(
        self, config: CommandAdapterConfig, *, max_output_bytes: int = MAX_OUTPUT_BYTES
    ) -> None:
        self._config = config
        self._argv = (config.command, *config.args)
        self._max_output = max_output_bytes
        self._in_flight: dict[int, str] = {}  # the calls' process groups and their marks

    async def open(self) -> None:
        """Check, without starting anything, that `cwd` is a directory and the command exists."""
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
        return TargetInfo(adapter="command", model=None, details={"command": list(self._argv)})

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        stderr = bytearray()
        try:
            output, code = await self._call(_request(messages, context), stderr)
        except TimeoutError:
            problem = f"did not answer within {self._config.timeout_ms} ms (timeoutMs)"
        except _OutputTooLarge:
            problem = f"wrote more than {self._max_output:,} bytes to stdout (the limit)"
        else:
            failed_exec = exec_failure(bytes(stderr)) if code in (126, 127) else None
            if failed_exec is not None:  # setpriv, which execs the agent, could not
                raise _error(
                    f'could not start the agent command "{self._config.command}" in '
                    f"{self._config.cwd}: {failed_exec}"
                )
            answer = _answer(output, code, stderr)
            if context.seed is None:
                return answer
            return Completion(answer.content, {**answer.metadata, "seed": context.seed})
        raise _error(f"the agent {problem} and was killed", stderr)

    async def aclose(self) -> None:
        """Kill the agents of calls still in flight, and what they started (those calls then
        fail with AdapterError)."""
        for group, mark in list(self._in_flight.items()):
            kill_child(group, mark)

    async def _call(self, request: bytes, stderr: bytearray) -> tuple[bytes, int]:
        """Start the agent, feed it the request, read its answer, wait for its exit. Whatever
        happens (an answer, a timeout, too much output, cancellation) its group is killed."""
        options = tied_child()
        process, cancelled = await self._start(options)
        assert process.stdin
        assert process.stdout
        assert process.stderr
        self._in_flight[process.pid] = options.mark
        feeding = asyncio.create_task(_feed(process.stdin, request))
        draining = asyncio.create_task(_keep_tail(process.stderr, stderr))
        try:
            if cancelled:
                raise asyncio.CancelledError
            async with asyncio.timeout(self._config.timeout_ms / 1000):
                output = await _read_at_most(process.stdout, self._max_output)
                return output, await process.wait()
        finally:
            del self._in_flight[process.pid]
            kill_child(process.pid, options.mark)  # the agent, or what it left running anywhere
            # Read on to EOF so the pipes close (a paused pipe never sees EOF): what is left is at
            # most a pipe buffer. A daemon that left the group may hold them open: stop waiting.
            rest = [
                feeding,
                draining,
                asyncio.create_task(_discard(process.stdout)),
                asyncio.create_task(process.wait()),
            ]
            _, pending = await asyncio.wait(rest, timeout=_CLEANUP_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

    async def _start(self, options: ChildOptions) -> tuple[Process, bool]:
        """The started agent, and whether the call was cancelled meanwhile: a spawn is never
        cancelled half-way, as asyncio would then kill the agent alone and wait for its children
        to close the pipes. A spawn takes moments."""
        spawning = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                *options.prefix,
                *self._argv,
                cwd=self._config.cwd,
                stdin=PIPE,
                stdout=PIPE,
                stderr=PIPE,
                start_new_session=True,  # our own process group: Ctrl-C is ours to pass on
                env=options.env,
                preexec_fn=options.preexec_fn,
            )
        )
        cancelled = False
        while not spawning.done():
            try:
                await asyncio.wait([spawning])
            except asyncio.CancelledError:
                cancelled = True
        try:
            return spawning.result(), cancelled
        except (OSError, ValueError) as error:  # ValueError: a NUL, a lone surrogate in argv
            if cancelled:
                raise asyncio.CancelledError from None
            raise _error(
                f'could not start the agent command "{self._config.command}" in '
                f"{self._config.cwd}: {_start_failure(error)}"
            ) from None


def _start_failure(error: OSError | ValueError) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return (
        "its arguments or cwd hold a NUL character or a lone UTF-16 surrogate, which no program "
        "can receive"
    )


def _executable(path: Path) -> bool:
    try:
        return os.access(path, os.X_OK)
    except ValueError:  # a lone surrogate: it cannot be started either
        return False


def _request(messages: Sequence[Message], context: CallContext) -> bytes:
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
    request = {
        "protocol": PROTOCOL,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "context": where,
    }
    # ASCII with \u escapes: any JSON reader decodes it, whatever its locale.
    return json.dumps(request).encode("ascii") + b"\n"


async def _feed(stdin: asyncio.StreamWriter, request: bytes) -> None:
    """Write the request and close stdin. An agent that exits without reading it is no error."""
    try:
        stdin.write(request)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()


async def _read_at_most(stream: asyncio.StreamReader, limit: int) -> bytes:
    output = bytearray()
    while chunk := await stream.read(_CHUNK):
        output += chunk
        if len(output) > limit:
            raise _OutputTooLarge
    return bytes(output)


async def _keep_tail(stream: asyncio.StreamReader, tail: bytearray) -> None:
    while chunk := await stream.read(_CHUNK):
        tail += chunk
        del tail[:-_STDERR_KEEP_BYTES]


async def _discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(_CHUNK):
        pass


def _answer(output: bytes, code: int, stderr: bytes | bytearray) -> Completion:
    """The answer in the output, or AdapterError: a non-zero exit fails even with a content, and
    an `error` is reported (with the exit) whatever the exit code."""
    try:
        response = _parse(output)
    except _BadOutput as bad:
        problem = str(bad) if code == 0 else f"the agent {describe_exit(code)}"
        raise _error(problem, stderr) from None
    error = response.get("error")
    if error is not None:
        exit_note = "" if code == 0 else f" (the agent {describe_exit(code)})"
        raise _error(f"the agent reported an error: {_quoted_error(error)}{exit_note}", stderr)
    if code != 0:
        raise _error(f"the agent {describe_exit(code)}", stderr)
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
