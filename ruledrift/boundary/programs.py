"""Running a program once, as the command adapter runs its agent and the `command` assertion its
check: no shell, in `cwd`, in a process group of its own tied to RuleDrift (`processes`), with
bytes on its stdin, its stdout read up to a limit, the tail of its stderr kept, and a time
limit. Whatever happens (an exit, a timeout, too much output, cancellation) the program's group,
and everything that carries its mark, is killed before `Programs.run` returns."""

from __future__ import annotations

import asyncio
from asyncio.subprocess import PIPE, Process
from collections.abc import Sequence
from pathlib import Path

from ruledrift.boundary.processes import ChildOptions, kill_child, tied_child

STDERR_KEEP_BYTES = 8000  # stderr's last bytes kept: 4 per UTF-8 character of a 2000-char tail
CHUNK = 64 * 1024
CLEANUP_SECONDS = 2.0  # after the kill, how long to wait for the pipes to close and the exit


class ProgramNotStarted(Exception):
    """The program could not be started; the message says why (`No such file or directory`)."""


class OutputTooLarge(Exception):
    """The program wrote more to stdout than the limit, and was killed."""


class Programs:
    """Starts programs and remembers the ones still running, so that `kill_all` can end them."""

    def __init__(self) -> None:
        self._in_flight: dict[int, str] = {}  # the running programs' process groups and marks

    def kill_all(self) -> None:
        """Kill the programs still running, and what they started (their `run` then ends)."""
        for group, mark in list(self._in_flight.items()):
            kill_child(group, mark)

    async def run(
        self,
        argv: Sequence[str],
        cwd: Path,
        stdin: bytes,
        *,
        timeout_s: float,
        max_stdout: int,
        stderr: bytearray,
    ) -> tuple[bytes, int]:
        """Start `argv` in `cwd`, feed it `stdin`, read its stdout, wait for its exit: its stdout
        and exit code (negative: killed by that signal). The tail of its stderr is left in
        `stderr` whatever happens. Raises TimeoutError past `timeout_s`, OutputTooLarge past
        `max_stdout` bytes, ProgramNotStarted when it cannot start."""
        options = tied_child()
        process, cancelled = await start(argv, cwd, options)
        assert process.stdin
        assert process.stdout
        assert process.stderr
        self._in_flight[process.pid] = options.mark
        feeding = asyncio.create_task(_feed(process.stdin, stdin))
        draining = asyncio.create_task(keep_tail(process.stderr, stderr))
        try:
            if cancelled:
                raise asyncio.CancelledError
            async with asyncio.timeout(timeout_s):
                output = await _read_at_most(process.stdout, max_stdout)
                return output, await process.wait()
        finally:
            del self._in_flight[process.pid]
            kill_child(process.pid, options.mark)  # the program, or what it left running anywhere
            # Read on to EOF so the pipes close (a paused pipe never sees EOF): what is left is at
            # most a pipe buffer. A daemon that left the group may hold them open: stop waiting.
            rest = [
                feeding,
                draining,
                asyncio.create_task(discard(process.stdout)),
                asyncio.create_task(process.wait()),
            ]
            _, pending = await asyncio.wait(rest, timeout=CLEANUP_SECONDS)
            for task in pending:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)


async def start(argv: Sequence[str], cwd: Path, options: ChildOptions) -> tuple[Process, bool]:
    """The started program, and whether the caller was cancelled meanwhile: a spawn is never
    cancelled half-way, as asyncio would then kill the program alone and wait for its children
    to close the pipes. A spawn takes moments."""
    spawning = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *options.prefix,
            *argv,
            cwd=cwd,
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
        raise ProgramNotStarted(_start_failure(error)) from None


def _start_failure(error: OSError | ValueError) -> str:
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return (
        "its arguments or cwd hold a NUL character or a lone UTF-16 surrogate, which no program "
        "can receive"
    )


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    """Write `data` and close stdin. A program that exits without reading it is no error."""
    try:
        stdin.write(data)
        await stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        stdin.close()


async def _read_at_most(stream: asyncio.StreamReader, limit: int) -> bytes:
    output = bytearray()
    while chunk := await stream.read(CHUNK):
        output += chunk
        if len(output) > limit:
            raise OutputTooLarge
    return bytes(output)


async def keep_tail(stream: asyncio.StreamReader, tail: bytearray) -> None:
    while chunk := await stream.read(CHUNK):
        tail += chunk
        del tail[:-STDERR_KEEP_BYTES]


async def discard(stream: asyncio.StreamReader) -> None:
    while await stream.read(CHUNK):
        pass
