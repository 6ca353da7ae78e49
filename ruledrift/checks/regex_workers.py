"""The checks that can take long, bounded in time: JavaScript `test()` (`matches`,
`notMatches`), language identification (`language`) and secrets in disguise (`notLeaks`).
regress cannot be interrupted in-process, and no computation can be on the event loop, where it
would hold up every other call and an interruption; so each runs in a worker process, which is
killed at the time limit.

Workers are `python -P -c ...` subprocesses driven by asyncio (not multiprocessing): they are
awaited natively without helper threads, start without re-importing the caller's `__main__`,
and are killed and reaped individually. A request is one JSON line (what to do, and the length of
the text in UTF-8) followed by the text itself, raw: JSON-encoding a 10 MB answer held the event
loop for up to a second; the reply is one JSON line. A worker also arms
SIGALRM (default action: terminate) for each evaluation, so it cannot outlive an orphaned run by
more than twice the limit, and exits when its stdin closes. What a worker writes to stderr (a
warning, a crash) is written line by line to this process's `sys.stderr`, so that it passes
through the same filter as RuleDrift's own output (on a GitHub runner, `output.protected_streams`
makes every line inert).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import json
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruledrift.boundary.processes import describe_exit
from ruledrift.checks.fluent import check_fluent
from ruledrift.checks.jsregex import js_test, regex_literal
from ruledrift.checks.language import IDENTIFIED_CHARS, check_language, load_model
from ruledrift.checks.leaks import find_leak
from ruledrift.checks.tools import arguments_problem


class RegexTimeout(Exception):
    """One evaluation took longer than the evaluator's time limit."""

    def __init__(self, pattern: str, flags: str, timeout_s: float) -> None:
        self.pattern, self.flags, self.timeout_s = pattern, flags, timeout_s
        literal = regex_literal(pattern, flags)
        super().__init__(f"matching {literal} took longer than {timeout_s:g} s")


class LanguageTimeout(Exception):
    """Identifying an answer's language took longer than the evaluator's time limit."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"identifying the language took longer than {timeout_s:g} s")


class LeaksTimeout(Exception):
    """Looking for a secret in an answer took longer than `LEAKS_TIMEOUT_S`."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"looking for the secret took longer than {timeout_s:g} s")


class WorkerFailed(Exception):
    """No worker could make the check: one could not start, or it died (killed from outside,
    out of memory, a crash) before it answered. The check cannot be judged; the run goes on."""


class _TimedOut(Exception):
    pass


class _Died(Exception):
    """The worker died before it answered (`code`: its exit code, negative for a signal)."""

    def __init__(self, code: int) -> None:
        self.code = code
        super().__init__(code)


_PR_SET_PDEATHSIG = 1  # prctl(2)
# `notLeaks` reads the whole answer, which is linear but takes seconds for 10 MB on a loaded
# machine (benchmarks/leaks_benchmark.py): its own limit, above the regular expressions' one.
LEAKS_TIMEOUT_S = 30.0
_START_TIMEOUT_S = 60.0  # starting (Python, regress, the language model) is not part of the limit
_STDERR_LINE_BYTES = 65536  # a longer line of a worker's stderr is passed on in pieces
_BOOT = (
    "import sys; sys.path[:0] = [p for p in sys.argv[1:2] if p not in sys.path]; "
    "from ruledrift.checks.regex_workers import _serve; "
    "_serve(float(sys.argv[2]), int(sys.argv[3]))"
)
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_LOAD_LANGUAGE = json.dumps(["load-language", 0]).encode() + b"\n"


def _die_with(parent: int) -> None:
    """On Linux, be killed the moment RuleDrift dies (a SIGKILLed RuleDrift cannot stop its
    workers, and a worker stuck in a pattern would run until its backstop); exit at once if it
    died before this was set. Elsewhere the backstop and the closed stdin still end it."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(0)


def _request(what: list[object], text: str) -> bytes:
    """`what` to do with `text`, as a worker reads it (lone surrogates kept)."""
    data = text.encode("utf-8", errors="surrogatepass")
    return json.dumps([*what, len(data)]).encode() + b"\n" + data


def _answer(kind: str, args: list[Any], text: str) -> object:
    """A request's result in the worker (ValueError: the request is invalid)."""
    if kind == "test":
        pattern, flags = args
        return js_test(pattern, flags, text)
    if kind == "language":
        length, expected, min_confidence = args
        return check_language(text, expected, min_confidence, length=length)
    if kind == "fluent":
        length, expected, min_share = args
        return check_fluent(text, expected, min_share, length=length)
    if kind == "leaks":
        secret, min_fragment = args
        leak = find_leak(text, secret, min_fragment)
        return None if leak is None else leak.disguise
    if kind == "arguments":
        (parameters_json,) = args
        return arguments_problem(parameters_json, text)
    if kind == "load-language":
        load_model()
        return None
    raise ValueError(f"unknown request {kind!r}")


def _serve(backstop_s: float, parent: int) -> None:
    """The worker loop: a request in (a JSON line, then its text), `[true, result]` or
    `[false, why it is invalid]` out (a JSON line)."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    requests, out = sys.stdin.buffer, sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    while line := requests.readline():
        kind, *args, size = json.loads(line)
        text = requests.read(size).decode("utf-8", errors="surrogatepass")
        if kind != "load-language":  # loading is bounded by the start-up limit
            limit = max(backstop_s, 2 * LEAKS_TIMEOUT_S + 1) if kind == "leaks" else backstop_s
            signal.setitimer(signal.ITIMER_REAL, limit)  # no handler: SIGALRM terminates
        try:
            reply = [True, _answer(kind, args, text)]
        except ValueError as problem:
            reply = [False, str(problem)]
        signal.setitimer(signal.ITIMER_REAL, 0)
        out.write(json.dumps(reply).encode() + b"\n")
        out.flush()


@dataclass(eq=False)
class _Worker:
    process: asyncio.subprocess.Process
    stderr: asyncio.Task[None]  # passing its stderr on, until it ends
    reads_languages: bool = False  # the language model is loaded


class RegexEvaluator:
    """Evaluates JavaScript `test()` and identifies languages in worker processes, each
    evaluation bounded in time.

    Safe for many asyncio tasks of one event loop at once: up to `max_workers` workers, started
    on demand and reused; a worker that times out is killed and replaced by the next call.
    `aclose()` kills and reaps them all."""

    def __init__(self, timeout_s: float = 2.0, max_workers: int = 4) -> None:
        self.timeout_s = timeout_s
        self._max_workers = max_workers
        self._slots = asyncio.Semaphore(max_workers)
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._warming: set[asyncio.Task[None]] = set()
        self._closed = False

    def start_workers(self, count: int, *, languages: bool = False) -> None:
        """Start up to `count` workers in the background (with the language model loaded, if
        `languages`), so that the first checks find them ready instead of waiting for Python,
        regress and the model to load. A worker that fails to start here is forgotten: the
        first check that needs one starts it and reports the failure."""
        for _ in range(min(count, self._max_workers) - len(self._warming)):
            task = asyncio.create_task(self._start_idle(languages))
            self._warming.add(task)
            task.add_done_callback(self._warming.discard)

    async def _start_idle(self, languages: bool) -> None:
        async with self._slots:
            try:
                worker = await self._start()
                if languages:
                    await self._load_language(worker)
            except Exception:  # noqa: BLE001 - reported by the first check that needs a worker
                return
            self._idle.append(worker)

    async def test(self, pattern: str, flags: str, text: str) -> bool:
        """Raises RegexTimeout past the limit, ValueError for an invalid pattern or flags,
        WorkerFailed when no worker could make the check."""
        try:
            matched = await self._evaluate(_request(["test", pattern, flags], text))
        except _TimedOut:
            raise RegexTimeout(pattern, flags, self.timeout_s) from None
        return bool(matched)

    async def language(self, text: str, expected: str, min_confidence: float) -> tuple[bool, str]:
        """`language.check_language` on the answer `text`. Raises LanguageTimeout past the
        limit, ValueError for an unsupported code or a confidence out of range, WorkerFailed
        when no worker could make the check."""
        return await self._identify("language", text, expected, min_confidence)

    async def fluent(self, text: str, expected: str, min_share: float) -> tuple[bool, str]:
        """`fluent.check_fluent` on the answer `text`. Raises LanguageTimeout past the limit,
        ValueError for an unsupported code, WorkerFailed when no worker could make the check."""
        return await self._identify("fluent", text, expected, min_share)

    async def _identify(
        self, kind: str, text: str, expected: str, bound: float
    ) -> tuple[bool, str]:
        """A check by the language identifier (`language`, `fluent`) on the answer's first
        IDENTIFIED_CHARS characters."""
        what: list[object] = [kind, len(text), expected, bound]
        try:
            passed, message = await self._evaluate(
                _request(what, text[:IDENTIFIED_CHARS]), languages=True
            )
        except _TimedOut:
            raise LanguageTimeout(self.timeout_s) from None
        return bool(passed), str(message)

    async def leaks(self, text: str, secret: str, min_fragment: int | None) -> str | None:
        """`leaks.find_leak` on the answer `text`: the disguise found, or None. Raises
        LeaksTimeout past `LEAKS_TIMEOUT_S`, ValueError for a secret too short,
        WorkerFailed when no worker could make the check."""
        try:
            found = await self._evaluate(
                _request(["leaks", secret, min_fragment], text), timeout_s=LEAKS_TIMEOUT_S
            )
        except _TimedOut:
            raise LeaksTimeout(LEAKS_TIMEOUT_S) from None
        return None if found is None else str(found)

    async def arguments_problem(self, parameters_json: str, arguments: str) -> str | None:
        """`tools.arguments_problem` on a call's `arguments`: why they are not valid for a tool
        with these parameters (None: valid). A check past the limit (a `pattern` of the
        parameters that backtracks) is a problem of its own; WorkerFailed when no worker could
        make the check."""
        try:
            problem = await self._evaluate(_request(["arguments", parameters_json], arguments))
        except _TimedOut:
            return (
                "checking the arguments against the tool's parameters took longer than"
                f" {self.timeout_s:g} s (a pattern in the parameters may be too slow)"
            )
        return None if problem is None else str(problem)

    async def _evaluate(
        self, request: bytes, *, languages: bool = False, timeout_s: float | None = None
    ) -> Any:
        async with self._slots:
            try:
                reply = await self._reply(request, languages, reused_ok=True, timeout_s=timeout_s)
            except _Died:  # an idle worker died unseen (killed, out of memory): a fresh one
                try:
                    reply = await self._reply(
                        request, languages, reused_ok=False, timeout_s=timeout_s
                    )
                except _Died as died:
                    raise WorkerFailed(
                        f"the check worker {describe_exit(died.code)} before it answered"
                    ) from None
        ok, result = json.loads(reply)
        if not ok:
            raise ValueError(result)
        return result

    async def _reply(
        self, request: bytes, languages: bool, *, reused_ok: bool, timeout_s: float | None = None
    ) -> bytes:
        """One worker's reply line to `request` (the worker goes back to the idle ones).
        Raises _TimedOut past the limit, _Died when it died before it answered."""
        try:
            worker = await self._acquire(languages, reused_ok=reused_ok)
        except (OSError, TimeoutError, RuntimeError) as error:
            raise WorkerFailed(f"no check worker could start: {error}") from None
        try:
            reply = await asyncio.wait_for(self._ask(worker, request), timeout_s or self.timeout_s)
        except TimeoutError:
            await self._discard(worker)
            raise _TimedOut from None
        except (BrokenPipeError, ConnectionResetError):
            raise _Died(await self._discard(worker)) from None
        except BaseException:
            await self._discard(worker)
            raise
        if not reply.endswith(b"\n"):  # EOF, or a reply cut short: it died
            code = await self._discard(worker)
            if code == -signal.SIGALRM:
                raise _TimedOut
            raise _Died(code)
        if self._closed:
            await self._discard(worker)
        else:
            self._idle.append(worker)
        return reply

    async def aclose(self) -> None:
        self._closed = True
        for task in list(self._warming):
            task.cancel()
        await asyncio.gather(*self._warming, return_exceptions=True)
        self._idle.clear()
        for worker in list(self._workers):
            await self._discard(worker)

    async def _acquire(self, languages: bool, *, reused_ok: bool = True) -> _Worker:
        """An idle worker (for `languages`, preferably one with the model loaded), else (or
        without `reused_ok`) a new one; with the model loaded if `languages`."""
        if languages:
            self._idle.sort(key=lambda idle: idle.reads_languages)  # those last: popped first
        while self._idle and reused_ok:
            worker = self._idle.pop()
            if worker.process.returncode is None:
                break
            await self._discard(worker)  # it died while idle
        else:
            worker = await self._start()
        if languages and not worker.reads_languages:
            await self._load_language(worker)
        return worker

    async def _start(self) -> _Worker:
        if self._closed:
            raise RuntimeError("the RegexEvaluator is closed")
        backstop = str(self.timeout_s * 2 + 1)
        process = await asyncio.create_subprocess_exec(
            *(sys.executable, "-P", "-c", _BOOT, _PACKAGE_ROOT, backstop, str(os.getpid())),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        worker = _Worker(process, asyncio.create_task(_pass_on(process.stderr)))
        self._workers.add(worker)
        try:
            assert process.stdout is not None
            ready = await asyncio.wait_for(process.stdout.readline(), _START_TIMEOUT_S)
        except BaseException:
            await self._discard(worker)
            raise
        if ready != b"ready\n":
            code = await self._discard(worker)
            raise RuntimeError(f"the check worker did not start (exit code {code})")
        return worker

    async def _load_language(self, worker: _Worker) -> None:
        """Load the language model in `worker`, within the start-up limit (not the check's)."""
        try:
            reply = await asyncio.wait_for(self._ask(worker, _LOAD_LANGUAGE), _START_TIMEOUT_S)
        except TimeoutError:
            await self._discard(worker)
            raise RuntimeError(
                f"the check worker did not load the language model in {_START_TIMEOUT_S:g} s"
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            raise _Died(await self._discard(worker)) from None
        except BaseException:
            await self._discard(worker)
            raise
        if not reply.endswith(b"\n"):
            raise _Died(await self._discard(worker))
        if reply != b"[true, null]\n":
            code = await self._discard(worker)
            raise RuntimeError(
                f"the check worker could not load the language model (exit code {code})"
            )
        worker.reads_languages = True

    @staticmethod
    async def _ask(worker: _Worker, request: bytes) -> bytes:
        stdin, stdout = worker.process.stdin, worker.process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(request)
        await stdin.drain()
        return await stdout.readline()

    async def _discard(self, worker: _Worker) -> int:
        """Kill and reap a worker, and pass on the rest of its stderr; returns its exit code
        (negative: the signal)."""
        self._workers.discard(worker)
        if worker.process.returncode is None:
            worker.process.kill()
        code = await worker.process.wait()
        await asyncio.gather(worker.stderr, return_exceptions=True)  # its end: EOF
        return code


async def _pass_on(stderr: asyncio.StreamReader) -> None:
    """Write each line of a worker's stderr to `sys.stderr`, as it is when the line ends."""
    pending = b""
    while chunk := await stderr.read(_STDERR_LINE_BYTES):
        *lines, pending = (pending + chunk).split(b"\n")
        if len(pending) >= _STDERR_LINE_BYTES:
            lines.append(pending)
            pending = b""
        for line in lines:
            _write_line(line)
    if pending:
        _write_line(pending)


def _write_line(line: bytes) -> None:
    sys.stderr.write(line.decode("utf-8", errors="replace") + "\n")
    sys.stderr.flush()
