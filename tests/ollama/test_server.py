"""The managed Ollama server against real processes: the `ollama` stand-in in
tests/support/ollama_fake/bin, which
serves the loopback fake when called as `ollama serve` and misbehaves on demand (FAKE_OLLAMA_*
variables, described in that file). Pulls against any server use the in-process fake."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from ruledrift.errors import AdapterError
from ruledrift.ollama import server as sidecar
from ruledrift.ollama.api import PullProgress, has_model
from ruledrift.ollama.server import ManagedOllama, ServerSettings, default_models_dir
from tests.support.ollama_fake import OLLAMA_BIN
from tests.support.processes import alive, gone, interruptible, kill_survivors

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
HANG = 30.0  # an upper bound that only says "did not hang"
T = TypeVar("T")


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if name.startswith(("FAKE_OLLAMA_", "OLLAMA_")) or name == sidecar.BIN_VARIABLE:
            monkeypatch.delenv(name)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # where the log dir goes


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return tmp_path / "models"


def settings(models: Path, **changes: Any) -> ServerSettings:
    return ServerSettings(**{"models_dir": models, "executable": str(OLLAMA_BIN), **changes})


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def record(models: Path) -> dict[str, Any]:
    """What the stand-in wrote about itself when it started (argv, pid, address, OLLAMA_*)."""
    seen: dict[str, Any] = json.loads((models / "fake-ollama-env.json").read_text())
    return seen


def started_and_stopped(config: ServerSettings) -> tuple[ManagedOllama, dict[str, Any]]:
    """Start, look around inside, stop. Returns the stopped sidecar and what was seen."""

    async def scenario() -> tuple[ManagedOllama, dict[str, Any]]:
        async with ManagedOllama(config) as server:
            assert server.pid is not None
            seen: dict[str, Any] = {
                "pid": server.pid,
                "environ": Path(f"/proc/{server.pid}/environ").read_bytes().split(b"\0"),
            }
            async with httpx.AsyncClient(base_url=server.base_url, trust_env=False) as client:
                seen["version"] = (await client.get("/api/version")).json()
        return server, seen

    return run(scenario())


def failure(config: ServerSettings) -> tuple[str, float, int | None]:
    """The AdapterError message of a start that fails, how long the failure took, and the pid of
    the server that was started (None if none was)."""
    server = ManagedOllama(config)
    begun = time.monotonic()
    with pytest.raises(AdapterError) as raised:
        run(server.__aenter__())
    return str(raised.value), time.monotonic() - begun, server.pid


def assert_no_leftovers(tmp_path: Path, *pids: int) -> None:
    assert gone(*pids), f"still running: {[p for p in pids if alive(p)]}"
    assert list((tmp_path / "tmp").iterdir()) == []  # the log directory is removed


def wrapped_ollama(tmp_path: Path, *lines: str) -> Path:
    """An `ollama` that runs shell `lines`, then becomes the stand-in."""
    wrapper = tmp_path / "ollama-wrapped"
    wrapper.write_text(
        "#!/bin/sh\n" + "".join(f"{line}\n" for line in lines) + f'exec "{OLLAMA_BIN}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper


def escaped_daemon(pid_file: Path) -> str:
    """Shell lines: start a sleeper that leaves the process group (setsid), and wait until it
    has left and written its pid to `pid_file`."""
    code = (
        "import os, sys, time; os.setsid(); "
        "open(sys.argv[1] + '.partial', 'w').write(str(os.getpid())); "
        "os.rename(sys.argv[1] + '.partial', sys.argv[1]); time.sleep(300)"
    )
    return (
        f'"{sys.executable}" -c "{code}" \'{pid_file}\' </dev/null >/dev/null 2>&1 &\n'
        f"while [ ! -s '{pid_file}' ]; do sleep 0.01; done"
    )


# --- starting -----------------------------------------------------------------------------------


def test_the_server_starts_on_a_free_loopback_port_with_its_environment(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEDRIFT_TEST_INHERITED", "yes ✓")
    config = settings(models, num_parallel=3, keep_alive="90m")
    server, seen = started_and_stopped(config)
    started = record(models)
    port = int(server.base_url.rpartition(":")[2])
    assert server.base_url == f"http://127.0.0.1:{port}"
    assert started["argv"][1:] == ["serve"]
    assert started["pid"] == seen["pid"]
    assert started["address"] == ["127.0.0.1", port]
    assert started["env"] == {
        "OLLAMA_HOST": f"127.0.0.1:{port}",
        "OLLAMA_MODELS": str(models),
        "OLLAMA_NUM_PARALLEL": "3",
        "OLLAMA_KEEP_ALIVE": "90m",
    }
    assert "RULEDRIFT_TEST_INHERITED=yes ✓".encode() in seen["environ"]
    assert seen["version"] == {"version": "0.34.2"}
    assert server.version == "0.34.2"
    assert_no_leftovers(tmp_path, seen["pid"])
    assert server.returncode == 0  # it stopped on SIGTERM
    # kept after the stop (the whole log: on a busy machine readiness polls can push the first
    # line out of the default 20-line tail)
    assert "Listening on 127.0.0.1:" in server.log_tail(lines=100_000)
    server.check_running()  # stopped by us: not an error


def test_the_defaults_are_one_slot_and_a_long_keep_alive(models: Path) -> None:
    started_and_stopped(settings(models))
    env = record(models)["env"]
    assert (env["OLLAMA_NUM_PARALLEL"], env["OLLAMA_KEEP_ALIVE"]) == ("1", "24h")


def test_ollama_is_found_on_path(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{OLLAMA_BIN.parent}{os.pathsep}{os.environ['PATH']}")
    server, _ = started_and_stopped(ServerSettings(models_dir=models))
    assert server.executable == str(OLLAMA_BIN)


def test_ruledrift_ollama_bin_names_the_executable(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RULEDRIFT_OLLAMA_BIN", str(OLLAMA_BIN))  # not on PATH
    server, _ = started_and_stopped(ServerSettings(models_dir=models))
    assert server.executable == str(OLLAMA_BIN)


def test_a_missing_ollama_says_how_to_install_it(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "tmp"))
    message, _, _ = failure(ServerSettings(models_dir=models))
    assert "the ollama executable was not found on PATH" in message
    assert "https://ollama.com/download" in message
    assert "RULEDRIFT_OLLAMA_BIN" in message
    monkeypatch.setenv("RULEDRIFT_OLLAMA_BIN", str(tmp_path / "no-such-ollama"))
    message, _, _ = failure(ServerSettings(models_dir=models))
    assert message.startswith(f"RULEDRIFT_OLLAMA_BIN '{tmp_path / 'no-such-ollama'}' is not")
    assert not models.exists()  # nothing was done


def test_messages_hold_no_lone_surrogates(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte that is not UTF-8 in a path from the environment or argv is a lone surrogate in
    Python (\\udcff): the message shows U+FFFD instead, so every report can encode it."""
    monkeypatch.setenv("RULEDRIFT_OLLAMA_BIN", str(tmp_path / "no-such-ollama-\udcff"))
    message, _, _ = failure(ServerSettings(models_dir=models))
    message.encode("utf-8")
    (tmp_path / "file").write_text("")
    message, _, _ = failure(settings(tmp_path / "file" / "models-\udcff"))
    assert message.startswith(f"cannot create the models directory {tmp_path / 'file'}")
    assert "models-\ufffd" in message
    message.encode("utf-8")


def test_the_models_directory_is_created(tmp_path: Path) -> None:
    nested = tmp_path / "cache" / "ollama" / "models"
    started_and_stopped(settings(nested))
    assert nested.is_dir()


def test_a_models_directory_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    message, _, _ = failure(settings(tmp_path / "file" / "models"))
    assert message.startswith(f"cannot create the models directory {tmp_path / 'file' / 'models'}")


def test_the_default_models_directory_is_ollamas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_models_dir() == tmp_path / ".ollama" / "models"
    monkeypatch.setenv("OLLAMA_MODELS", "~/ci/models")
    assert default_models_dir() == tmp_path / "ci" / "models"


def test_a_slow_start_is_waited_for(models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_START_DELAY", "1.5")
    _, seen = started_and_stopped(settings(models))
    assert seen["version"] == {"version": "0.34.2"}


def test_a_port_taken_before_the_server_listens_is_replaced(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        ports = iter([busy, sidecar._free_port()])
        monkeypatch.setattr(sidecar, "_free_port", lambda: next(ports))
        server, seen = started_and_stopped(settings(models))
        assert server.base_url != f"http://127.0.0.1:{busy}"
        monkeypatch.setattr(sidecar, "_free_port", lambda: busy)
        message, _, _ = failure(settings(models))
    assert message.startswith("ollama serve could not listen on a free port in 3 attempts")
    assert "address already in use" in message.lower()
    assert_no_leftovers(tmp_path, seen["pid"])


# --- failing to start ---------------------------------------------------------------------------


def test_a_server_that_exits_at_once_fails_fast_with_its_log(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_MODE", "exit")
    monkeypatch.setenv("FAKE_OLLAMA_EXIT_CODE", "7")
    message, took, pid = failure(settings(models, ready_timeout_s=120))
    assert took < HANG  # not the ready timeout
    first, _, log = message.partition("\n")
    assert first == "ollama serve exited with code 7 before it was ready"
    assert log.startswith("ollama serve log (last lines):\n  time=")
    assert log.endswith("\n  Error: simulated startup failure (FAKE_OLLAMA_MODE=exit)")
    assert pid is not None
    assert_no_leftovers(tmp_path, pid)


@pytest.mark.parametrize(
    ("mode", "last_try"), [("hang", "connection refused"), ("unready", "HTTP 503")]
)
def test_a_server_that_never_gets_ready_is_stopped(
    mode: str, last_try: str, models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_MODE", mode)
    message, took, pid = failure(settings(models, ready_timeout_s=1.0))
    assert took < HANG
    first, _, log = message.partition("\n")
    assert first.startswith("ollama serve did not answer GET http://127.0.0.1:")
    assert first.endswith(f"/api/version within 1 s (last try: {last_try})")
    assert log.startswith("ollama serve log (last lines):\n  time=")
    assert "server config env=map[OLLAMA_HOST:127.0.0.1:" in log
    assert pid is not None
    assert_no_leftovers(tmp_path, pid)


def test_the_log_quoted_in_an_error_is_cut_to_its_end(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last 20 lines may be one 64 KiB line: an error quotes at most 2,000 characters."""
    monkeypatch.setenv("FAKE_OLLAMA_MODE", "exit")
    executable = wrapped_ollama(tmp_path, f"printf '%0{100_000}d\\n' 0")
    message, _, _ = failure(settings(models, executable=str(executable)))
    log = message.partition("\nollama serve log (last lines):\n")[2]
    assert log.endswith("Error: simulated startup failure (FAKE_OLLAMA_MODE=exit)")
    assert len(log) <= sidecar.LOG_TAIL_CHARS + 2 * sidecar.LOG_TAIL_LINES


# --- stopping -----------------------------------------------------------------------------------


def test_a_server_that_ignores_sigterm_is_killed_after_the_grace_period(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_IGNORE_SIGTERM", "1")
    begun = time.monotonic()
    server, seen = started_and_stopped(settings(models, stop_grace_s=0.5))
    assert time.monotonic() - begun < HANG
    assert server.returncode == -signal.SIGKILL
    assert_no_leftovers(tmp_path, seen["pid"])


def test_what_the_server_started_is_stopped_with_it(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child that ignores SIGTERM (a model runner, say) is killed with the process group."""
    wrapper = tmp_path / "ollama-with-child"
    wrapper.write_text(
        "#!/bin/sh\n"
        "(trap '' TERM; exec sleep 300) &\n"
        'echo $! > "$CHILD_PID_FILE"\n'
        f'exec "{OLLAMA_BIN}" "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setenv("CHILD_PID_FILE", str(tmp_path / "child.pid"))
    server, seen = started_and_stopped(settings(models, executable=str(wrapper)))
    child = int((tmp_path / "child.pid").read_text())
    assert server.returncode == 0
    assert_no_leftovers(tmp_path, seen["pid"], child)


def test_what_the_server_started_outside_its_group_is_stopped_with_it(
    models: Path, tmp_path: Path
) -> None:
    """A child that left the server's process group (setsid) is found by its mark."""
    daemon_pid = tmp_path / "daemon.pid"
    executable = wrapped_ollama(tmp_path, escaped_daemon(daemon_pid))
    server, seen = started_and_stopped(settings(models, executable=str(executable)))
    daemon = int(daemon_pid.read_text())
    try:
        assert server.returncode == 0
        assert_no_leftovers(tmp_path, seen["pid"], daemon)
    finally:
        kill_survivors(daemon)


def test_a_killed_ruledrift_takes_the_server_and_what_it_started_with_it(
    models: Path, tmp_path: Path
) -> None:
    """SIGKILL leaves RuleDrift no time to stop the server: the kernel kills the server (a
    parent-death signal), RuleDrift's watchdog what it started (Ollama's model runners are not
    tied to the server), in its process group or not."""
    runner_pid, daemon_pid = tmp_path / "runner.pid", tmp_path / "daemon.pid"
    executable = wrapped_ollama(
        tmp_path,
        f"(trap '' TERM; exec sleep 300) & echo $! > '{runner_pid}'",
        escaped_daemon(daemon_pid),
    )
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from ruledrift.ollama.server import ManagedOllama, ServerSettings\n"
        "async def main():\n"
        "    config = ServerSettings(models_dir=Path(sys.argv[1]), executable=sys.argv[2])\n"
        "    async with ManagedOllama(config):\n"
        "        print('ready', flush=True)\n"
        "        await asyncio.sleep(3600)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp")}
    with subprocess.Popen(
        [sys.executable, "-c", script, str(models), str(executable)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    ) as driver:
        assert driver.stdout is not None
        try:
            assert driver.stdout.readline() == "ready\n"
        finally:
            driver.kill()
            driver.wait(timeout=HANG)
    pids = [record(models)["pid"], int(runner_pid.read_text()), int(daemon_pid.read_text())]
    try:
        assert gone(pids[0]), "ollama serve outlived RuleDrift"
        assert gone(*pids[1:]), "what ollama serve started outlived RuleDrift"
    finally:
        kill_survivors(*pids)


def test_cancelling_inside_the_block_stops_the_server(models: Path, tmp_path: Path) -> None:
    async def scenario() -> int:
        inside = asyncio.Event()
        pids: list[int] = []

        async def body() -> None:
            async with ManagedOllama(settings(models)) as server:
                assert server.pid is not None
                pids.append(server.pid)
                inside.set()
                await asyncio.sleep(3600)

        task = asyncio.create_task(body())
        await asyncio.wait_for(inside.wait(), HANG)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not alive(pids[0])  # stopped and reaped before the cancellation arrived
        return pids[0]

    assert_no_leftovers(tmp_path, run(scenario()))


def test_cancelling_while_waiting_for_readiness_stops_the_server(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_START_DELAY", "300")

    async def scenario() -> int:
        server = ManagedOllama(settings(models))
        task = asyncio.create_task(server.__aenter__())
        for _ in range(int(HANG / 0.05)):
            if server.pid is not None:
                break
            await asyncio.sleep(0.05)
        assert server.pid is not None
        await asyncio.sleep(0.3)  # a few readiness tries
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return server.pid

    assert_no_leftovers(tmp_path, run(scenario()))


def test_ctrl_c_stops_the_server(models: Path, tmp_path: Path) -> None:
    script = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from ruledrift.ollama.server import ManagedOllama, ServerSettings\n"
        "async def main():\n"
        "    config = ServerSettings(models_dir=Path(sys.argv[1]), executable=sys.argv[2])\n"
        "    async with ManagedOllama(config) as server:\n"
        "        print(server.pid, flush=True)\n"
        "        await asyncio.sleep(3600)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp_path / "tmp")}
    with subprocess.Popen(
        [sys.executable, "-c", script, str(models), str(OLLAMA_BIN)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        preexec_fn=interruptible,
    ) as driver:
        assert driver.stdout is not None
        pid = int(driver.stdout.readline())
        assert alive(pid)
        driver.send_signal(signal.SIGINT)
        try:
            _, stderr = driver.communicate(timeout=HANG)
        except subprocess.TimeoutExpired:
            driver.kill()
            raise
    assert "KeyboardInterrupt" in stderr
    assert_no_leftovers(tmp_path, pid)


# --- pulls through the sidecar ------------------------------------------------------------------


def test_a_missing_model_is_pulled_once_into_the_models_directory(
    models: Path, tmp_path: Path
) -> None:
    async def start_and_ensure() -> tuple[bool, list[PullProgress], bool]:
        events: list[PullProgress] = []
        async with ManagedOllama(settings(models)) as server:
            pulled = await server.ensure_model("qwen3:1.7b", events.append)
            present = await has_model(server.base_url, "qwen3:1.7b")
        return pulled, events, present

    pulled, events, present = run(start_and_ensure())
    assert (pulled, present) == (True, True)
    assert events[0] == PullProgress("pulling manifest")
    layers = [e for e in events if e.digest]
    assert layers
    assert all(e.status == f"pulling {e.digest[7:19]}" and e.total for e in layers if e.digest)
    assert any(e.completed == e.total for e in layers)
    assert [e.status for e in events[-3:]] == [
        "verifying sha256 digest",
        "writing manifest",
        "success",
    ]
    assert (models / "manifests" / "registry.ollama.ai" / "library" / "qwen3" / "1.7b").is_file()

    pulled, events, present = run(start_and_ensure())  # a second run, the same models directory
    assert (pulled, events, present) == (False, [], True)
    assert_no_leftovers(tmp_path)


def test_a_pull_that_fails_mid_stream_quotes_the_server_log(
    models: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_PULL_FAIL", "max retries exceeded: connection reset")
    events: list[PullProgress] = []

    async def scenario() -> tuple[str, str]:
        async with ManagedOllama(settings(models)) as server:
            with pytest.raises(AdapterError) as raised:
                await server.ensure_model("qwen3:1.7b", events.append)
            assert not await has_model(server.base_url, "qwen3:1.7b")
        return str(raised.value), server.log_tail(lines=100_000)

    message, whole_log = run(scenario())
    first, _, log = message.partition("\n")
    assert first == (
        "pulling qwen3:1.7b from Ollama at http://127.0.0.1:"
        f"{record(models)['address'][1]} failed: max retries exceeded: connection reset"
    )
    assert log.startswith("ollama serve log (last lines):\n")
    # the server's own lines: its log as it stood (on a busy machine readiness polls can push
    # "Listening on" out of the quoted tail, so the quote is checked against the whole log)
    quoted = log.splitlines()[1:]
    assert quoted
    assert all(line.strip() in whole_log for line in quoted)  # quoted indented, maybe cut
    assert "Listening on 127.0.0.1:" in whole_log
    assert events[0] == PullProgress("pulling manifest")  # progress came before the error


def test_a_server_that_dies_during_the_run_is_reported_with_its_log(
    models: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_OLLAMA_DIE_AFTER", "2")

    async def scenario() -> tuple[ManagedOllama, str, str]:
        async with ManagedOllama(settings(models)) as server:
            for _ in range(int(HANG / 0.05)):
                if server.returncode is not None:
                    break
                await asyncio.sleep(0.05)
            with pytest.raises(AdapterError, match="could not connect to Ollama"):
                await has_model(server.base_url, "qwen3:1.7b")
            with pytest.raises(AdapterError) as pulling:
                await server.ensure_model("qwen3:1.7b", lambda _: None)
            with pytest.raises(AdapterError) as checking:
                server.check_running()
        return server, str(pulling.value), str(checking.value)

    server, pulling, checking = run(scenario())
    assert server.returncode == 2
    assert pulling.startswith("could not connect to Ollama at http://127.0.0.1:")
    assert "(ollama serve exited with code 2)\nollama serve log (last lines):\n" in pulling
    assert checking.startswith("ollama serve exited with code 2 during the run\n")
    assert checking.endswith('msg="simulated crash (FAKE_OLLAMA_DIE_AFTER)"')
    assert "simulated crash" in server.log_tail()  # also after the stop
    with pytest.raises(AdapterError):
        server.check_running()
    assert_no_leftovers(tmp_path, record(models)["pid"])


def test_the_log_tail_is_the_last_lines(models: Path) -> None:
    server, _ = started_and_stopped(settings(models))
    assert len(server.log_tail(2).splitlines()) == 2
    assert server.log_tail(2) == "\n".join(server.log_tail().splitlines()[-2:])
