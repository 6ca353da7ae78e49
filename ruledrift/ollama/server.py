"""The managed Ollama server: an `ollama serve` of our own for one run (`--start-ollama`).

The server starts in a session of its own on a free loopback port, logs to a file in a temporary
directory, and is always stopped: SIGTERM to its process group, SIGKILL after a grace period, also
when the run fails or is cancelled. It is a tied child (adapters/processes.py): the kernel kills
it when RuleDrift dies, even by SIGKILL, and the watchdog then kills what it started (the model
runners, which Ollama does not tie to the server). Every failure is an `AdapterError` that quotes
the end of the server's log. The lifecycle and its failure modes are described in docs/ollama.md
(The managed Ollama server)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import tempfile
import textwrap
from asyncio.subprocess import DEVNULL, STDOUT, Process
from dataclasses import dataclass
from pathlib import Path

from ruledrift.boundary.http import Retry
from ruledrift.boundary.processes import describe_exit, kill_child, signal_group, tied_child
from ruledrift.errors import AdapterError
from ruledrift.ollama.api import OllamaAPI, OnProgress
from ruledrift.text import repair_surrogates

BIN_VARIABLE = "RULEDRIFT_OLLAMA_BIN"
INSTALL_HINT = (
    "install Ollama (https://ollama.com/download; on Linux: "
    "curl -fsSL https://ollama.com/install.sh | sh), "
    f"or set {BIN_VARIABLE} to the path of the ollama executable"
)
LOG_TAIL_LINES = 20  # how much of the server's log an error message quotes
LOG_TAIL_CHARS = 2000  # and at most this many characters of it (the last ones)
_LOG_KEEP_BYTES = 64 * 1024  # how much of the log is read for a tail, and kept after the stop
_READY_TRY_S = 1.0  # one readiness request may take this long
_READY_INTERVAL_S = (0.05, 0.25)  # pause between readiness tries: doubles from first to last
_REAP_S = 5.0  # after SIGKILL, how long to wait for the exit to be reported
_PORT_ATTEMPTS = 3  # starts on a new port when another process took ours first


def default_models_dir() -> Path:
    """Where Ollama itself keeps models: `$OLLAMA_MODELS`, else `~/.ollama/models`."""
    configured = os.environ.get("OLLAMA_MODELS")
    return Path(configured).expanduser() if configured else Path.home() / ".ollama" / "models"


@dataclass(frozen=True)
class ServerSettings:
    models_dir: Path
    num_parallel: int = 1  # OLLAMA_NUM_PARALLEL: match --concurrency
    keep_alive: str = "24h"  # OLLAMA_KEEP_ALIVE: the model stays loaded for the whole run
    ready_timeout_s: float = 60.0
    stop_grace_s: float = 10.0  # between SIGTERM and SIGKILL
    executable: str | None = None  # None: $RULEDRIFT_OLLAMA_BIN, else "ollama" on PATH


class _PortTaken(Exception):
    pass


class ManagedOllama:
    """`async with ManagedOllama(settings) as server:` starts `ollama serve` and waits until it
    answers; leaving the block stops it and everything it started."""

    def __init__(self, settings: ServerSettings) -> None:
        self._settings = settings
        self._port = 0
        self._process: Process | None = None
        self._mark = ""  # the server's mark (adapters/processes.py), inherited by its runners
        self._exited: asyncio.Task[int] | None = None  # process.wait(), started with the process
        self._stopping = False
        self._log_dir: Path | None = None
        self._kept_log = b""  # the end of the log, kept when the temporary directory is removed
        self.executable: str | None = None  # the resolved path, once started
        self.version: str | None = None  # from GET /api/version, once ready

    async def __aenter__(self) -> ManagedOllama:
        self.executable = _find_executable(self._settings.executable)
        _make_models_dir(self._settings.models_dir)
        for attempt in range(1, _PORT_ATTEMPTS + 1):
            await self._start()
            try:
                await self._wait_until_ready()
            except _PortTaken:
                await self._stop()
                if attempt == _PORT_ATTEMPTS:
                    raise self._with_log(
                        f"ollama serve could not listen on a free port in {attempt} attempts"
                    ) from None
            except BaseException:  # not ready, or cancelled: nothing may be left running
                await self._stop()
                raise
            else:
                return self
        raise AssertionError("unreachable")

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def pid(self) -> int | None:
        """The server's pid, which is also its process group's id."""
        return self._process.pid if self._process else None

    @property
    def returncode(self) -> int | None:
        """None while the server runs; its exit status once it has exited."""
        return self._exited.result() if self._exited and self._exited.done() else None

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        """The last lines the server wrote to stdout or stderr (also after it was stopped)."""
        data = self._read_log() if self._log_dir else self._kept_log
        return "\n".join(data.decode("utf-8", errors="replace").rstrip().splitlines()[-lines:])

    def error_with_log(self, problem: str) -> AdapterError:
        """An AdapterError for `problem`, saying whether the server exited, with its log tail."""
        code = self.returncode
        if code is not None and not self._stopping:
            problem += f" (ollama serve {describe_exit(code)})"
        return self._with_log(problem)

    def _with_log(self, problem: str) -> AdapterError:
        tail = self.log_tail()[-LOG_TAIL_CHARS:]  # one line of a log may be 64 KiB long
        log = textwrap.indent(tail, "  ") if tail.strip() else "  (empty)"
        message = f"{problem}\nollama serve log (last lines):\n{log}"
        return _error(message)

    def check_running(self) -> None:
        """Raise AdapterError (with the log tail) if the server has exited on its own: call it
        after the run to tell "the model failed" from "the server died"."""
        code = self.returncode
        if code is not None and not self._stopping:
            raise self._with_log(f"ollama serve {describe_exit(code)} during the run")

    async def ensure_model(self, model: str, on_progress: OnProgress) -> bool:
        """Pull `model` into this server unless it has it (True if it pulled); errors quote the
        server's log."""
        try:
            async with OllamaAPI(self.base_url) as api:
                return await api.ensure_model(model, on_progress)
        except AdapterError as error:
            raise self.error_with_log(str(error)) from None

    async def _start(self) -> None:
        assert self.executable
        self._port = _free_port()
        self._stopping = False
        self._log_dir = Path(tempfile.mkdtemp(prefix="ruledrift-ollama-"))
        options = tied_child(
            {
                **os.environ,
                "OLLAMA_HOST": f"127.0.0.1:{self._port}",
                "OLLAMA_MODELS": str(self._settings.models_dir.absolute()),
                "OLLAMA_NUM_PARALLEL": str(self._settings.num_parallel),
                "OLLAMA_KEEP_ALIVE": self._settings.keep_alive,
            }
        )
        self._mark = options.mark
        with (self._log_dir / "serve.log").open("wb") as log:  # the server keeps its own copy
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *options.prefix,
                    self.executable,
                    "serve",
                    env=options.env,
                    preexec_fn=options.preexec_fn,
                    stdin=DEVNULL,
                    stdout=log,
                    stderr=STDOUT,
                    start_new_session=True,  # its own process group: we stop it, not Ctrl-C
                )
            except OSError as error:
                self._remove_log_dir()
                raise _error(
                    f"could not start {self.executable} serve: {error.strerror or error} "
                    f"({INSTALL_HINT})"
                ) from None
        self._exited = asyncio.create_task(self._process.wait())

    async def _wait_until_ready(self) -> None:
        """Poll GET /api/version until it answers 200; fail as soon as the process exits."""
        assert self._exited
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._settings.ready_timeout_s
        interval, longest = _READY_INTERVAL_S
        last = "no answer yet"
        async with OllamaAPI(self.base_url, retry=Retry(attempts=1)) as api:
            while True:
                if self._exited.done():
                    if "address already in use" in self.log_tail().lower():
                        raise _PortTaken
                    code = self._exited.result()
                    raise self._with_log(f"ollama serve {describe_exit(code)} before it was ready")
                remaining = deadline - loop.time()
                if remaining <= 0:
                    raise self.error_with_log(
                        f"ollama serve did not answer GET {self.base_url}/api/version within "
                        f"{self._settings.ready_timeout_s:g} s (last try: {last})"
                    )
                answer = await self._ask_version(api, min(_READY_TRY_S, remaining))
                if answer == 200 and not self._exited.done():
                    self.version = await self._read_version(api)
                    return
                if answer is not None:  # None: the process exited, said at the top of the loop
                    last = answer if isinstance(answer, str) else f"HTTP {answer}"
                pause = min(interval, max(0.0, deadline - loop.time()))
                await asyncio.wait({self._exited}, timeout=pause)
                interval = min(interval * 2, longest)

    async def _ask_version(self, api: OllamaAPI, timeout: float) -> int | str | None:
        """GET /api/version's status (or what went wrong), given up as soon as the process
        exits (None then)."""
        assert self._exited
        request = asyncio.ensure_future(api.answers(timeout))
        try:
            await asyncio.wait({request, self._exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not request.done():
                request.cancel()
        return request.result() if request.done() and not request.cancelled() else None

    @staticmethod
    async def _read_version(api: OllamaAPI) -> str | None:
        try:
            return await api.version()
        except AdapterError:
            return None

    async def _stop(self) -> None:
        """SIGTERM to the group, SIGKILL after the grace period (and always, for what is left in
        the group), reap. Idempotent; a cancellation during the stop still kills."""
        process, exited = self._process, self._exited
        if process is None or exited is None:
            self._remove_log_dir()
            return
        self._stopping = self._stopping or not exited.done()
        try:
            if not exited.done():
                signal_group(process.pid, signal.SIGTERM)
                await asyncio.wait({exited}, timeout=self._settings.stop_grace_s)
        finally:  # also when cancelled again while waiting
            kill_child(process.pid, self._mark)  # a server deaf to SIGTERM, what it started
            self._remove_log_dir()
        await asyncio.wait({exited}, timeout=_REAP_S)

    def _read_log(self) -> bytes:
        assert self._log_dir
        try:
            with (self._log_dir / "serve.log").open("rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - _LOG_KEEP_BYTES))
                return log.read()
        except OSError:
            return b""

    def _remove_log_dir(self) -> None:
        if self._log_dir:
            self._kept_log = self._read_log()
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None


# --- helpers ------------------------------------------------------------------------------------


def _error(message: str) -> AdapterError:
    """The one way an error leaves the server: without lone surrogates, which a path from argv or
    the environment may hold (`\\udcff` for an undecodable byte) and no report can encode."""
    return AdapterError(repair_surrogates(message))


def _find_executable(configured: str | None) -> str:
    name = configured or os.environ.get(BIN_VARIABLE) or "ollama"
    found = shutil.which(name)
    if found:
        return found
    if configured or os.environ.get(BIN_VARIABLE):
        source = "the configured ollama executable" if configured else BIN_VARIABLE
        raise _error(
            f"{source} {name!r} is not an executable file (or not on PATH): {INSTALL_HINT}"
        )
    raise _error(f"--start-ollama: the ollama executable was not found on PATH: {INSTALL_HINT}")


def _make_models_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise _error(
            f"cannot create the models directory {path}: {error.strerror or error} "
            "(choose another with --models-dir)"
        ) from None


def _free_port() -> int:
    """A port nobody listens on now. Another process may take it before the server does: then
    the server exits with "address already in use" and starts again on another port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
