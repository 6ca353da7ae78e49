"""Long-lived programs that answer one line with one line, one request at a time: the command
adapter's persistent agents (protocol 2, `"persistent": true`).

Each worker is started as `programs.Programs.run` starts a program (no shell, in `cwd`, in a
process group of its own tied to RuleDrift: see `processes`) and keeps running between requests.
A worker that times out, ends, writes more than the limit, writes to stdout outside an answer,
gives a line its caller cannot read, or whose request is cancelled is killed with its group and
everything that carries its mark, and never reused: the next request starts another.
`Workers.aclose` (and `kill_all`) end them all."""

from __future__ import annotations

import asyncio
import contextlib
from asyncio.subprocess import Process
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from ruledrift.boundary.processes import kill_child, tied_child
from ruledrift.boundary.programs import CHUNK, CLEANUP_SECONDS, OutputTooLarge, keep_tail, start

T = TypeVar("T")


class WorkerExited(Exception):
    """The worker ended before it answered: `code` is its exit code (negative: the signal)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class StrayOutput(Exception):
    """The worker had written `size` bytes to stdout after its previous answer line, before the
    next request: its answers could no longer be told apart."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class _Worker:
    """One started worker: its stdout read all the time into a buffer (up to a little more than
    one answer line), its stderr's tail kept since its previous answer."""

    def __init__(self, process: Process, mark: str, max_line: int) -> None:
        assert process.stdin
        assert process.stdout
        assert process.stderr
        self.process = process
        self.mark = mark
        self.stderr = bytearray()  # the tail since the previous answer
        self._stdin = process.stdin
        self._max_line = max_line
        self._out = bytearray()  # stdout read and not yet taken as an answer
        self._eof = False
        self._flooded = False  # more than an answer line came without a newline: reading stopped
        self._arrived = asyncio.Event()
        self._tasks = (
            asyncio.create_task(self._read(process.stdout)),
            asyncio.create_task(keep_tail(process.stderr, self.stderr)),
        )

    @property
    def ended(self) -> bool:
        return self._eof or self.process.returncode is not None

    async def ask(self, request: bytes) -> bytes:
        """Send `request` (one line), and return the answer line without its newline."""
        if self._flooded or self._out.strip():
            raise StrayOutput(len(self._out))
        self._out.clear()  # a blank line after the previous answer is harmless
        self._stdin.write(request)
        line = await self._line()
        # an answer given before the whole request was read would be out of step: wait for it
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self._stdin.drain()
        return line

    async def _line(self) -> bytes:
        while True:
            end = self._out.find(b"\n", 0, self._max_line + 1)
            if end >= 0:
                line = bytes(self._out[:end])
                del self._out[: end + 1]
                return line
            if len(self._out) > self._max_line:
                raise OutputTooLarge
            if self._eof:
                raise WorkerExited(await self.process.wait())
            self._arrived.clear()
            await self._arrived.wait()

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        try:
            while chunk := await stdout.read(CHUNK):
                self._out += chunk
                self._arrived.set()
                if len(self._out) > self._max_line + 1:  # enough to tell: no more in memory
                    self._flooded = True
                    return
        finally:
            self._eof = not self._flooded
            self._arrived.set()

    def kill(self) -> None:
        """SIGKILL to the worker's group and to everything that carries its mark."""
        kill_child(self.process.pid, self.mark)

    async def close(self) -> None:
        """Kill the worker, then wait (a moment at most) for its exit and its pipes to close, so
        that its stderr's tail is complete."""
        self.kill()
        self._stdin.close()
        rest = [*self._tasks, asyncio.ensure_future(self.process.wait())]
        _, pending = await asyncio.wait(rest, timeout=CLEANUP_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(*rest, return_exceptions=True)


class Workers:
    """Workers running `argv` in `cwd`: as many as requests in flight at once, started when no
    idle one is left, reused while they answer well. An answer line is at most `max_line`
    bytes."""

    def __init__(self, argv: Sequence[str], cwd: Path, *, max_line: int) -> None:
        self._argv = tuple(argv)
        self._cwd = cwd
        self._max_line = max_line
        self._idle: list[_Worker] = []
        self._running: set[_Worker] = set()

    async def ask(
        self,
        request: bytes,
        read: Callable[[bytes], T],
        *,
        timeout_s: float,
        stderr: bytearray,
    ) -> T:
        """`read(answer line)` for `request`, from an idle worker or a new one, within
        `timeout_s` (a new worker's start-up included). When `read` raises, the worker is killed
        with the rest: its next line could not be trusted. `stderr` gets the tail of the
        worker's stderr since its previous answer, whatever happens.

        Raises TimeoutError, OutputTooLarge, WorkerExited, StrayOutput, ProgramNotStarted (from
        `programs.start`), or what `read` raises."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        worker = await self._take()
        kept = False
        try:
            async with asyncio.timeout_at(deadline):
                line = await worker.ask(request)
            value = read(line)
            kept = True
            return value
        finally:
            if not kept:
                await self._discard(worker)
            stderr[:] = worker.stderr
            if kept:
                del worker.stderr[:]
                self._idle.append(worker)

    def kill_all(self) -> None:
        """Kill every worker, idle or answering (those requests then fail)."""
        for worker in list(self._running):
            worker.kill()

    async def aclose(self) -> None:
        """Kill every worker and wait for them to end."""
        self.kill_all()
        self._idle.clear()
        await asyncio.gather(*(self._discard(w) for w in list(self._running)))

    async def _take(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if not worker.ended:
                return worker
            await self._discard(worker)  # it ended while idle: a new one takes its place
        return await self._start()

    async def _start(self) -> _Worker:
        options = tied_child()
        process, cancelled = await start(self._argv, self._cwd, options)
        worker = _Worker(process, options.mark, self._max_line)
        self._running.add(worker)
        if cancelled:
            await self._discard(worker)
            raise asyncio.CancelledError
        return worker

    async def _discard(self, worker: _Worker) -> None:
        self._running.discard(worker)
        await worker.close()
