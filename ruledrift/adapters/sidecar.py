"""An `ollama serve` of our own for one run (`--start-ollama`), and model pulls (`ruledrift pull`).

The server starts in a session of its own on a free loopback port, logs to a file in a temporary
directory, and is always stopped: SIGTERM to its process group, SIGKILL after a grace period, also
when the run fails or is cancelled. Every failure is an `AdapterError` that quotes the server's log.
The lifecycle and its failure modes are described in docs/ollama.md (Managed Ollama sidecar)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile
import textwrap
from asyncio.subprocess import DEVNULL, STDOUT, Process
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from ruledrift.adapters.http import describe_error, error_text, is_loopback
from ruledrift.adapters.ollama_names import full_model_name
from ruledrift.adapters.processes import describe_exit
from ruledrift.errors import AdapterError

BIN_VARIABLE = "RULEDRIFT_OLLAMA_BIN"
INSTALL_HINT = (
    "install Ollama (https://ollama.com/download; on Linux: "
    "curl -fsSL https://ollama.com/install.sh | sh), "
    f"or set {BIN_VARIABLE} to the path of the ollama executable"
)
LOG_TAIL_LINES = 20  # how much of the server's log an error message quotes
_LOG_KEEP_BYTES = 64 * 1024  # how much of the log is read for a tail, and kept after the stop
_READY_TRY_S = 1.0  # one readiness request may take this long
_READY_INTERVAL_S = (0.05, 0.25)  # pause between readiness tries: doubles from first to last
_REAP_S = 5.0  # after SIGKILL, how long to wait for the exit to be reported
_PORT_ATTEMPTS = 3  # starts on a new port when another process took ours first
PULL_READ_TIMEOUT_S = 300.0  # silence allowed between two progress lines (a big digest check)
_TIMEOUT = httpx.Timeout(30.0, connect=10.0)
_PULL_TIMEOUT = httpx.Timeout(30.0, connect=10.0, read=PULL_READ_TIMEOUT_S)


def default_models_dir() -> Path:
    """Where Ollama itself keeps models: `$OLLAMA_MODELS`, else `~/.ollama/models`."""
    configured = os.environ.get("OLLAMA_MODELS")
    return Path(configured).expanduser() if configured else Path.home() / ".ollama" / "models"


@dataclass(frozen=True)
class SidecarSettings:
    models_dir: Path
    num_parallel: int = 1  # OLLAMA_NUM_PARALLEL: match --concurrency
    keep_alive: str = "24h"  # OLLAMA_KEEP_ALIVE: the model stays loaded for the whole run
    ready_timeout_s: float = 60.0
    stop_grace_s: float = 10.0  # between SIGTERM and SIGKILL
    executable: str | None = None  # None: $RULEDRIFT_OLLAMA_BIN, else "ollama" on PATH


@dataclass(frozen=True)
class PullProgress:
    """One progress line of `POST /api/pull`."""

    status: str  # "pulling manifest", "pulling 6e4c38e1172f", "verifying sha256 digest", "success"
    digest: str | None = None  # the layer being downloaded ("sha256:…")
    total: int | None = None  # its size in bytes
    completed: int | None = None  # bytes downloaded so far


class _PortTaken(Exception):
    pass


class OllamaSidecar:
    """`async with OllamaSidecar(settings) as server:` starts `ollama serve` and waits until it
    answers; leaving the block stops it and everything it started."""

    def __init__(self, settings: SidecarSettings) -> None:
        self._settings = settings
        self._port = 0
        self._process: Process | None = None
        self._exited: asyncio.Task[int] | None = None  # process.wait(), started with the process
        self._stopping = False
        self._log_dir: Path | None = None
        self._kept_log = b""  # the end of the log, kept when the temporary directory is removed
        self.executable: str | None = None  # the resolved path, once started
        self.version: str | None = None  # from GET /api/version, once ready

    async def __aenter__(self) -> OllamaSidecar:
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
        tail = self.log_tail()
        log = textwrap.indent(tail, "  ") if tail.strip() else "  (empty)"
        return AdapterError(f"{problem}\nollama serve log (last lines):\n{log}")

    def check_running(self) -> None:
        """Raise AdapterError (with the log tail) if the server has exited on its own: call it
        after the run to tell "the model failed" from "the server died"."""
        code = self.returncode
        if code is not None and not self._stopping:
            raise self._with_log(f"ollama serve {describe_exit(code)} during the run")

    async def ensure_model(self, model: str, on_progress: Callable[[PullProgress], None]) -> bool:
        """The module's `ensure_model` against this server; its errors quote the server's log."""
        try:
            return await ensure_model(self.base_url, model, on_progress)  # the module function
        except AdapterError as error:
            raise self.error_with_log(str(error)) from None

    async def _start(self) -> None:
        assert self.executable
        self._port = _free_port()
        self._stopping = False
        self._log_dir = Path(tempfile.mkdtemp(prefix="ruledrift-ollama-"))
        env = {
            **os.environ,
            "OLLAMA_HOST": f"127.0.0.1:{self._port}",
            "OLLAMA_MODELS": str(self._settings.models_dir.absolute()),
            "OLLAMA_NUM_PARALLEL": str(self._settings.num_parallel),
            "OLLAMA_KEEP_ALIVE": self._settings.keep_alive,
        }
        with (self._log_dir / "serve.log").open("wb") as log:  # the server keeps its own copy
            try:
                self._process = await asyncio.create_subprocess_exec(
                    self.executable,
                    "serve",
                    env=env,
                    stdin=DEVNULL,
                    stdout=log,
                    stderr=STDOUT,
                    start_new_session=True,  # its own process group: we stop it, not Ctrl-C
                )
            except OSError as error:
                self._remove_log_dir()
                raise AdapterError(
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
        async with httpx.AsyncClient(base_url=self.base_url, trust_env=False) as client:
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
                try:
                    response = await self._ask_version(client, min(_READY_TRY_S, remaining))
                except httpx.HTTPError as error:
                    last = describe_error(error)
                else:
                    if response is None:  # the process exited: said at the top of the loop
                        continue
                    if response.status_code == 200 and not self._exited.done():
                        self.version = _version(response)
                        return
                    last = f"HTTP {response.status_code}"
                pause = min(interval, max(0.0, deadline - loop.time()))
                await asyncio.wait({self._exited}, timeout=pause)
                interval = min(interval * 2, longest)

    async def _ask_version(
        self, client: httpx.AsyncClient, timeout: float
    ) -> httpx.Response | None:
        """GET /api/version, given up as soon as the process exits (None then)."""
        assert self._exited
        request = asyncio.ensure_future(client.get("/api/version", timeout=timeout))
        try:
            await asyncio.wait({request, self._exited}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not request.done():
                request.cancel()
        return request.result() if request.done() else None

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
                _signal_group(process.pid, signal.SIGTERM)
                await asyncio.wait({exited}, timeout=self._settings.stop_grace_s)
        finally:  # also when cancelled again while waiting
            _signal_group(process.pid, signal.SIGKILL)  # a server deaf to SIGTERM, its children
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


# --- models ---------------------------------------------------------------------------------------


def server_answers(base_url: str, timeout_s: float = 2.0) -> bool:
    """Whether any HTTP server answers `GET {base_url}/api/version` within `timeout_s`."""
    try:
        httpx.get(f"{base_url.rstrip('/')}/api/version", timeout=timeout_s, trust_env=False)
    except httpx.HTTPError:
        return False
    return True


async def has_model(base_url: str, model: str) -> bool:
    """Whether the server at `base_url` has `model` (names compared as Ollama does: `qwen3` is
    `qwen3:latest`, `qwen3:1.7b` is `registry.ollama.ai/library/qwen3:1.7b`)."""
    wanted = full_model_name(model)
    async with _client(base_url, _TIMEOUT) as client:
        try:
            response = await client.get("/api/tags")
        except httpx.HTTPError as error:
            raise _connection_error(base_url, "list its models", error) from None
        if response.status_code != 200:
            raise AdapterError(
                f"Ollama at {base_url} could not list its models: {_error_text(response)}"
            )
        try:
            models = response.json().get("models") or []
            names = {m.get(key) for m in models for key in ("name", "model")}
        except (ValueError, AttributeError, TypeError):
            raise AdapterError(
                f"Ollama at {base_url} answered GET /api/tags with something other than a "
                f"model list: {response.text[:80]!r}"
            ) from None
    return any(isinstance(name, str) and full_model_name(name) == wanted for name in names)


async def pull_model(
    base_url: str, model: str, on_progress: Callable[[PullProgress], None]
) -> None:
    """Pull `model` into the server at `base_url`, passing each progress line to `on_progress`.
    Succeeds only on a `{"status": "success"}` line; an `{"error"}` line, a non-200 answer, a
    broken connection or an end without success raise AdapterError."""
    failed = f"pulling {model} from Ollama at {base_url} failed"
    async with _client(base_url, _PULL_TIMEOUT) as client:
        try:
            async with client.stream(
                "POST", "/api/pull", json={"model": model, "stream": True}
            ) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise AdapterError(f"{failed}: {_error_text(response)}")
                async for line in response.aiter_lines():
                    if line.strip() and _progress(line, failed, on_progress).status == "success":
                        return
        except httpx.HTTPError as error:
            raise _connection_error(base_url, f"pull {model}", error) from None
    raise AdapterError(f"{failed}: the progress stream ended without a success line")


async def ensure_model(
    base_url: str, model: str, on_progress: Callable[[PullProgress], None]
) -> bool:
    """Pull `model` unless the server has it. True if it pulled."""
    if await has_model(base_url, model):
        return False
    await pull_model(base_url, model, on_progress)
    return True


def _progress(line: str, failed: str, on_progress: Callable[[PullProgress], None]) -> PullProgress:
    try:
        data = json.loads(line)
    except ValueError:
        raise AdapterError(f"{failed}: a progress line is not JSON: {line[:80]!r}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"{failed}: a progress line is not a JSON object: {line[:80]!r}")
    if "error" in data:
        raise AdapterError(f"{failed}: {data['error']}")
    event = PullProgress(
        status=str(data.get("status", "")),
        digest=data["digest"] if isinstance(data.get("digest"), str) else None,
        total=_count(data.get("total")),
        completed=_count(data.get("completed")),
    )
    on_progress(event)
    return event


# --- helpers ------------------------------------------------------------------------------------


def _find_executable(configured: str | None) -> str:
    name = configured or os.environ.get(BIN_VARIABLE) or "ollama"
    found = shutil.which(name)
    if found:
        return found
    if configured or os.environ.get(BIN_VARIABLE):
        source = "the configured ollama executable" if configured else BIN_VARIABLE
        raise AdapterError(
            f"{source} {name!r} is not an executable file (or not on PATH): {INSTALL_HINT}"
        )
    raise AdapterError(
        f"--start-ollama: the ollama executable was not found on PATH: {INSTALL_HINT}"
    )


def _make_models_dir(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise AdapterError(
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


def _signal_group(group: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # nobody left in the group
        os.killpg(group, sig)


def _client(base_url: str, timeout: httpx.Timeout) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=base_url, timeout=timeout, trust_env=not is_loopback(base_url)
    )


def _connection_error(base_url: str, doing: str, error: httpx.HTTPError) -> AdapterError:
    if isinstance(error, httpx.ConnectError):
        return AdapterError(
            f"could not connect to Ollama at {base_url} to {doing}: {describe_error(error)} "
            "(is the server running there?)"
        )
    return AdapterError(f"Ollama at {base_url} failed to {doing}: {describe_error(error)}")


def _error_text(response: httpx.Response) -> str:
    return f"{error_text(response)} (HTTP {response.status_code})"


def _version(response: httpx.Response) -> str | None:
    with contextlib.suppress(ValueError, AttributeError):
        version = response.json().get("version")
        return version if isinstance(version, str) else None
    return None


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
