"""JavaScript `test()` bounded in time: regress cannot be interrupted in-process, so a
catastrophic pattern is bounded by killing the worker process that evaluates it.

Workers are `python -P -c ...` subprocesses driven by asyncio (not multiprocessing): they are
awaited natively without helper threads, start without re-importing the caller's `__main__`,
speak one JSON line per request, and are killed and reaped individually. A worker also arms
SIGALRM (default action: terminate) for each evaluation, so it cannot outlive an orphaned run by
more than twice the limit, and exits when its stdin closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import sys
from pathlib import Path

from ruledrift.checks.jsregex import js_test, regex_literal


class RegexTimeout(Exception):
    """One evaluation took longer than the evaluator's time limit."""

    def __init__(self, pattern: str, flags: str, timeout_s: float) -> None:
        self.pattern, self.flags, self.timeout_s = pattern, flags, timeout_s
        literal = regex_literal(pattern, flags)
        super().__init__(f"matching {literal} took longer than {timeout_s:g} s")


_PR_SET_PDEATHSIG = 1  # prctl(2)
_START_TIMEOUT_S = 60.0  # a worker's start-up (Python and regress) is not part of the limit
_BOOT = (
    "import sys; sys.path[:0] = [p for p in sys.argv[1:2] if p not in sys.path]; "
    "from ruledrift.checks.regex_workers import _serve; "
    "_serve(float(sys.argv[2]), int(sys.argv[3]))"
)
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def _die_with(parent: int) -> None:
    """On Linux, be killed the moment RuleDrift dies (a SIGKILLed RuleDrift cannot stop its
    workers, and a worker stuck in a pattern would run until its backstop); exit at once if it
    died before this was set. Elsewhere the backstop and the closed stdin still end it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _serve(backstop_s: float, parent: int) -> None:
    """The worker loop: one JSON request per line in, "1", "0" or a JSON error message out."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        pattern, flags, text = json.loads(line)
        signal.setitimer(signal.ITIMER_REAL, backstop_s)  # no handler: SIGALRM terminates
        try:
            reply = b"1\n" if js_test(pattern, flags, text) else b"0\n"
        except ValueError as problem:
            reply = json.dumps(str(problem)).encode() + b"\n"
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.write(reply)
        out.flush()


class RegexEvaluator:
    """Evaluates JavaScript `test()` in worker processes, each evaluation bounded in time.

    Safe for many asyncio tasks of one event loop at once: up to `max_workers` workers, started
    on demand and reused; a worker that times out is killed and replaced by the next call.
    `aclose()` kills and reaps them all."""

    def __init__(self, timeout_s: float = 2.0, max_workers: int = 4) -> None:
        self.timeout_s = timeout_s
        self._max_workers = max_workers
        self._slots = asyncio.Semaphore(max_workers)
        self._idle: list[asyncio.subprocess.Process] = []
        self._workers: set[asyncio.subprocess.Process] = set()
        self._warming: set[asyncio.Task[None]] = set()
        self._closed = False

    def start_workers(self, count: int) -> None:
        """Start up to `count` workers in the background, so that the first checks find them
        ready instead of waiting for Python and regress to load. A worker that fails to start
        here is forgotten: the first check that needs one starts it and reports the failure."""
        for _ in range(min(count, self._max_workers) - len(self._warming)):
            task = asyncio.create_task(self._start_idle())
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)

    async def _start_idle(self) -> None:
        async with self._slots:
            try:
                worker = await self._start()
            except Exception:  # noqa: BLE001 - reported by the first check that needs a worker
                return
            self._idle.append(worker)

    async def test(self, pattern: str, flags: str, text: str) -> bool:
        """Raises RegexTimeout past the limit, ValueError for an invalid pattern or flags."""
        request = json.dumps([pattern, flags, text]).encode() + b"\n"
        async with self._slots:
            worker = await self._acquire()
            try:
                reply = await asyncio.wait_for(self._ask(worker, request), self.timeout_s)
            except TimeoutError:
                await self._discard(worker)
                raise RegexTimeout(pattern, flags, self.timeout_s) from None
            except BaseException:
                await self._discard(worker)
                raise
            if not reply:
                code = await self._discard(worker)
                if code == -signal.SIGALRM:
                    raise RegexTimeout(pattern, flags, self.timeout_s)
                raise RuntimeError(f"the regular-expression worker exited with code {code}")
            if self._closed:
                await self._discard(worker)
            else:
                self._idle.append(worker)
        if reply in (b"1\n", b"0\n"):
            return reply == b"1\n"
        raise ValueError(json.loads(reply))

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._warming):
            task.cancel()
        await asyncio.gather(*self._warming, return_exceptions=True)
        self._idle.clear()
        for worker in list(self._workers):
            await self._discard(worker)

    async def _acquire(self) -> asyncio.subprocess.Process:
        while self._idle:
            worker = self._idle.pop()
            if worker.returncode is None:
                return worker
            await self._discard(worker)  # it died while idle
        return await self._start()

    async def _start(self) -> asyncio.subprocess.Process:
        if self._closed:
            raise RuntimeError("the RegexEvaluator is closed")
        backstop = str(self.timeout_s * 2 + 1)
        worker = await asyncio.create_subprocess_exec(
            *(sys.executable, "-P", "-c", _BOOT, _PACKAGE_ROOT, backstop, str(os.getpid())),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        self._workers.add(worker)
        try:
            assert worker.stdout is not None
            ready = await asyncio.wait_for(worker.stdout.readline(), _START_TIMEOUT_S)
        except BaseException:
            await self._discard(worker)
            raise
        if ready != b"ready\n":
            code = await self._discard(worker)
            raise RuntimeError(f"the regular-expression worker did not start (exit code {code})")
        return worker

    @staticmethod
    async def _ask(worker: asyncio.subprocess.Process, request: bytes) -> bytes:
        assert worker.stdin is not None
        assert worker.stdout is not None
        worker.stdin.write(request)
        await worker.stdin.drain()
        return await worker.stdout.readline()

    async def _discard(self, worker: asyncio.subprocess.Process) -> int:
        """Kill and reap a worker; returns its exit code (negative: the signal)."""
        self._workers.discard(worker)
        if worker.returncode is None:
            worker.kill()
        return await worker.wait()
