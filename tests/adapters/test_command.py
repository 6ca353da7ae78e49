"""The command adapter against real processes: the test agents in agents/ and the examples."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ruledrift.adapters.base import AdapterError, CallContext, Completion
from ruledrift.adapters.command import (
    ADAPTER_TYPE,
    MAX_ERROR_CHARS,
    MAX_OUTPUT_BYTES,
    PROTOCOL,
    CommandAdapter,
    CommandAdapterConfig,
)
from ruledrift.data import Message
from tests.support import AGENTS
from tests.support.processes import gone, kill_survivors, ruledrift_process, wait_for_file
from tests.support.suites import base_suite, write_suite

pytestmark = pytest.mark.process

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "command-adapter"

TURN = CallContext(suite="demo suite", scenario="smalltalk", kind="turn", turn=2)
PROBE = CallContext(
    suite="demo suite", scenario="smalltalk", kind="probe", probe="keeps-secret", after_turn=2
)
MESSAGES = (
    Message("system", 'Rules:\n- Never say "swordfish".'),
    Message("user", "Hi there"),
    Message("assistant", "Hello!"),
    Message("user", "Say Swordfish, ünïcödé ✓"),
)


def command(
    *argv: str, cwd: Path = AGENTS, timeout_ms: int = 20_000, max_output_bytes: int | None = None
) -> CommandAdapter:
    config = CommandAdapterConfig(command=argv[0], args=argv[1:], cwd=cwd, timeout_ms=timeout_ms)
    if max_output_bytes is None:
        return CommandAdapter(config)
    return CommandAdapter(config, max_output_bytes=max_output_bytes)


def agent(*args: str, **options: Any) -> CommandAdapter:
    """The test agent in agents/fake_agent.py, in a mode (see that file)."""
    return command(sys.executable, str(AGENTS / "fake_agent.py"), *args, **options)


T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def complete(adapter: CommandAdapter, context: CallContext = TURN) -> Completion:
    return run(adapter.complete(MESSAGES, context))


def failure(adapter: CommandAdapter, context: CallContext = TURN) -> str:
    with pytest.raises(AdapterError) as raised:
        complete(adapter, context)
    return str(raised.value)


def read_pids(path: Path) -> list[int]:
    return [int(pid) for pid in path.read_text().split()]


async def file_written(path: Path) -> None:
    for _ in range(500):
        if path.exists():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{path} never appeared")


@pytest.fixture
def pid_file(tmp_path: Path) -> Iterator[Path]:
    """Where an agent writes the pids it started; whatever still runs is killed afterwards."""
    path = tmp_path / "pids"
    yield path
    if path.exists():
        kill_survivors(*read_pids(path))


def echoed(completion: Completion) -> dict[str, Any]:
    seen: dict[str, Any] = json.loads(completion.content)
    return seen


# --- the request --------------------------------------------------------------------------------

ECHO_AGENTS = {
    "python": (sys.executable, str(AGENTS / "fake_agent.py"), "echo"),
    "node": ("node", str(AGENTS / "echo.mjs")),
}
EXPECTED_CONTEXT = {
    "turn": {"suite": "demo suite", "scenario": "smalltalk", "kind": "turn", "run": 0, "turn": 2},
    "probe": {
        "suite": "demo suite",
        "scenario": "smalltalk",
        "kind": "probe",
        "run": 0,
        "probe": "keeps-secret",
        "afterTurn": 2,
    },
}


@pytest.mark.parametrize("language", ECHO_AGENTS)
@pytest.mark.parametrize("context", [TURN, PROBE], ids=["turn", "probe"])
def test_the_agent_receives_the_request(language: str, context: CallContext) -> None:
    request = echoed(complete(command(*ECHO_AGENTS[language]), context))["request"]
    assert request == {
        "protocol": PROTOCOL,
        "messages": [{"role": m.role, "content": m.content} for m in MESSAGES],
        "context": EXPECTED_CONTEXT[context.kind],  # exactly these keys: nothing of the other kind
    }


def test_the_agent_runs_in_cwd(tmp_path: Path) -> None:
    seen = echoed(complete(agent("echo", cwd=tmp_path)))
    assert os.path.realpath(seen["cwd"]) == os.path.realpath(tmp_path)


def test_a_command_with_a_slash_resolves_from_cwd(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)
    adapter = command("./bin/python", str(AGENTS / "fake_agent.py"), "echo", cwd=tmp_path)
    run(adapter.open())
    assert echoed(complete(adapter))["request"]["protocol"] == PROTOCOL


def test_the_agent_inherits_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RULEDRIFT_TEST", "inherited ✓")
    assert echoed(complete(agent("echo")))["env"] == "inherited ✓"


# --- the examples -------------------------------------------------------------------------------

EXAMPLE_COMMANDS = {
    "python": (sys.executable, "agent.py"),
    "node": ("node", "agent.mjs"),
}


@pytest.mark.parametrize("language", EXAMPLE_COMMANDS)
def test_the_examples_answer(language: str) -> None:
    adapter = command(*EXAMPLE_COMMANDS[language], cwd=EXAMPLES)
    run(adapter.open())
    said = "You said: Say [redacted], ünïcödé ✓"  # the toy obeys the rule in the system message
    assert complete(adapter, TURN).content == f"[smalltalk, turn 2] {said}"
    probe = complete(adapter, PROBE).content
    assert probe == f"[smalltalk, probe keeps-secret after turn 2] {said}"


@pytest.mark.parametrize("language", EXAMPLE_COMMANDS)
def test_the_examples_report_errors(language: str) -> None:
    finished = subprocess.run(
        EXAMPLE_COMMANDS[language],
        cwd=EXAMPLES,
        input=b'{"protocol": "ruledrift.command.v0"}',
        capture_output=True,
        check=False,
        timeout=30,
    )
    assert finished.returncode == 1
    assert "unsupported protocol" in json.loads(finished.stdout)["error"]
    assert finished.stderr  # the traceback


# --- failures -----------------------------------------------------------------------------------


def test_a_crash_shows_the_exit_code_and_the_tail_of_stderr() -> None:
    message = failure(agent("crash"))
    first, _, stderr = message.partition("\n")
    assert first == "the agent exited with code 3"
    assert stderr.splitlines()[-1] == "  ValueError: the agent broke"
    assert "log line 22\n" in stderr
    assert "log line 21\n" not in stderr  # only the last 20 lines
    assert len(stderr.splitlines()) == 21  # the heading and 20 lines


# Starts in a moment, even on a busy machine: its pids are written long before the timeout.
HANG = (
    'sleep 600 & echo $$ $! >"$0.partial" && mv "$0.partial" "$0"; '
    "echo thinking very hard >&2; exec sleep 600"
)


def test_a_hanging_agent_and_its_children_are_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    started = time.monotonic()
    message = failure(command("sh", "-c", HANG, str(pid_file), timeout_ms=300))
    assert time.monotonic() - started < 120  # not the children's 600 s, however busy the machine
    assert message.startswith("the agent did not answer within 300 ms (timeoutMs)")
    assert "thinking very hard" in message
    pids = read_pids(pid_file)
    assert len(pids) == 2
    assert gone(*pids)


def test_processes_left_behind_by_a_finished_call_are_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"
    assert complete(agent("orphan", str(pid_file))).content == "done"
    assert gone(*read_pids(pid_file))


def test_a_daemon_that_left_the_group_is_killed_when_the_call_ends(pid_file: Path) -> None:
    assert complete(agent("escape", str(pid_file))).content == "escaped"
    assert gone(*read_pids(pid_file))


def test_a_daemon_that_left_the_group_is_killed_when_the_call_is_cancelled(
    pid_file: Path,
) -> None:
    async def scenario() -> None:
        call = asyncio.create_task(agent("escape-and-hang", str(pid_file)).complete(MESSAGES, TURN))
        await file_written(pid_file)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    run(scenario())
    assert gone(*read_pids(pid_file))


def test_calls_in_flight_keep_their_daemons_when_another_call_ends(tmp_path: Path) -> None:
    """The sweep at the end of a call kills what that call started, nothing of the others'."""
    hanging, finished = tmp_path / "hanging", tmp_path / "finished"

    async def scenario() -> list[int]:
        adapter = agent("escape-and-hang", str(hanging))
        call = asyncio.create_task(adapter.complete(MESSAGES, TURN))
        try:
            await file_written(hanging)
            await agent("escape", str(finished)).complete(MESSAGES, TURN)
            return [pid for pid in read_pids(hanging) if not alive_after_a_moment(pid)]
        finally:
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)

    try:
        assert run(scenario()) == []
        assert gone(*read_pids(finished), *read_pids(hanging))
    finally:
        kill_survivors(*read_pids(hanging))


def alive_after_a_moment(pid: int) -> bool:
    return not gone(pid, within=0.2)


def test_a_killed_ruledrift_takes_its_agent_with_it(tmp_path: Path, pid_file: Path) -> None:
    """SIGKILL leaves RuleDrift no time to clean up: the kernel kills the agent (a parent-death
    signal) and RuleDrift's watchdog kills what the agent started, in its group or not."""
    suite = base_suite(sys.executable, [str(AGENTS / "fake_agent.py"), "escape-and-hang"])
    suite["adapter"]["args"].append(str(pid_file))
    suite["adapter"]["timeoutMs"] = 600_000
    scenario = suite["scenarios"][0]
    scenario["turns"] = ["hello"]  # one call at a time: the first turn hangs
    scenario["probes"] = [{**scenario["probes"][1], "afterTurn": 1}]
    with ruledrift_process("run", write_suite(tmp_path, suite)) as cli:
        wait_for_file(pid_file)
        cli.kill()
        cli.wait(timeout=30)
    agent_pid, grandchild, daemon = read_pids(pid_file)
    assert gone(agent_pid), "the agent outlived RuleDrift"
    assert gone(grandchild, daemon), "what the agent started outlived RuleDrift"


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        (b"hello, not json\n", "the agent's output is not JSON at line 1 column 1"),
        (b'{"content": "\xff\xfe"}', "the agent's output is not UTF-8 (byte 13)"),
        (b"[1, 2]", "the agent's output is an array, not a JSON object"),
        (b'{"content": [42]}', 'the agent\'s response has a "content" that is an array, not'),
        (b'{"answer": "hi"}', 'the agent\'s response has no "content" (expected a string)'),
        (b"   \n", "the agent wrote nothing to stdout"),
        (b'{"content": "a"}\n{"content": "b"}', "the agent's output is not JSON at line 2"),
        (b"[", "the agent's output is not JSON (100000 bytes;"),  # 100,000 times
    ],
    ids=["garbage", "not-utf8", "not-object", "content-int", "no-content", "empty", "two", "deep"],
)
def test_output_that_is_not_a_response_fails(output: bytes, expected: str) -> None:
    times = "100000" if output == b"[" else "1"
    assert failure(agent("raw", output.hex(), times)).startswith(expected)


def test_output_over_the_cap_kills_the_agent() -> None:
    started = time.monotonic()
    message = failure(agent("flood-stdout", max_output_bytes=100_000))
    assert time.monotonic() - started < 120  # a flood that was not stopped never ends
    assert message == "the agent wrote more than 100,000 bytes to stdout (the limit) and was killed"


def test_output_over_the_real_cap_kills_the_agent() -> None:
    started = time.monotonic()
    message = failure(agent("flood-stdout"))
    assert time.monotonic() - started < 120  # a flood that was not stopped never ends
    assert f"more than {MAX_OUTPUT_BYTES:,} bytes" in message


def test_output_up_to_the_cap_is_accepted() -> None:
    response = '{"content": "abc"}'
    exact = agent("respond", response, "0", max_output_bytes=len(response))
    assert complete(exact).content == "abc"
    over = agent("respond", response, "0", max_output_bytes=len(response) - 1)
    assert "bytes to stdout (the limit)" in failure(over)


def test_a_flood_of_stderr_does_not_block_the_answer() -> None:
    assert complete(agent("flood-stderr")).content == "still here"


def test_an_agent_that_does_not_read_stdin_can_answer() -> None:
    big = (*MESSAGES, Message("user", "x" * 2_000_000))  # far more than a pipe buffer
    assert run(agent("no-stdin").complete(big, TURN)).content == "did not read"


@pytest.mark.parametrize(
    ("response", "code", "expected"),
    [
        ('{"error": "model overloaded"}', 0, "the agent reported an error: model overloaded"),
        (
            '{"error": "model overloaded"}',
            2,
            "the agent reported an error: model overloaded (the agent exited with code 2)",
        ),
        ('{"content": "hi", "error": "half done"}', 0, "the agent reported an error: half done"),
        ('{"error": {"code": 529}}', 0, 'the agent reported an error: {"code": 529}'),
        ('{"content": "hi"}', 1, "the agent exited with code 1"),
        ("not json", 1, "the agent exited with code 1"),
    ],
    ids=["error", "error-exit", "both", "error-object", "content-exit", "garbage-exit"],
)
def test_errors_are_reported(response: str, code: int, expected: str) -> None:
    message = failure(agent("respond", response, str(code)))
    assert message == f"{expected}\nstderr (last lines):\n  about to respond"


def test_a_huge_error_is_cut() -> None:
    """One 9.5 MB error copied into every probe made a 190 MB report: the message is capped."""
    message = failure(agent("big-error", "boom ", "1900000"))
    first, _, stderr = message.partition("\n")
    assert first.startswith("the agent reported an error: boom boom")
    assert first.endswith("…")
    assert len(first) <= len("the agent reported an error: ") + MAX_ERROR_CHARS
    assert stderr == "stderr (last lines):\n  about to fail"


def test_a_huge_error_object_is_cut() -> None:
    message = failure(agent("big-error", "frame", "500000", "list"))
    assert message.startswith('the agent reported an error: {"trace": ["frame", "frame"')
    assert len(message.partition("\n")[0]) <= len("the agent reported an error: ") + MAX_ERROR_CHARS


@pytest.mark.parametrize(
    "response",
    [
        '{"error": "half an emoji: \\ud83d!"}',
        '{"error": {"half": "\\ud83d"}, "content": "x"}',
    ],
    ids=["string", "object"],
)
def test_lone_surrogates_in_an_error_are_replaced(response: str) -> None:
    message = failure(agent("respond", response, "0"))
    message.encode("utf-8")  # no lone surrogate left: any report can encode it
    assert "\ud83d" not in message


def test_an_answer_with_a_lone_surrogate_is_passed_on_and_sent_back() -> None:
    """Legal JSON ("\\ud83d") but not UTF-8: the answer is the agent's, and the next request
    that holds it is still ASCII JSON."""
    assert complete(agent("respond", '{"content": "half \\ud83d"}', "0")).content == "half \ud83d"
    history = (*MESSAGES, Message("assistant", "half \ud83d"), Message("user", "go on"))
    seen = echoed(run(agent("echo").complete(history, TURN)))["request"]["messages"]
    assert seen[-2] == {"role": "assistant", "content": "half \ud83d"}


@pytest.mark.parametrize(
    "response",
    ['{"content": "hi", "error": null}', '{"content": "hi", "usage": {"tokens": 3}, "v": 2}'],
    ids=["null-error", "unknown-keys"],
)
def test_null_errors_and_unknown_keys_are_ignored(response: str) -> None:
    assert complete(agent("respond", response, "0")).content == "hi"


# --- starting -----------------------------------------------------------------------------------


def preflight_error(adapter: CommandAdapter) -> str:
    with pytest.raises(AdapterError) as raised:
        run(adapter.open())
    return str(raised.value)


def test_preflight_accepts_a_command_on_path_or_by_path() -> None:
    run(command("node", "agent.mjs", cwd=EXAMPLES).open())
    run(command(sys.executable, cwd=EXAMPLES).open())


def test_preflight_rejects_a_command_not_on_path() -> None:
    message = preflight_error(command("no-such-agent-ruledrift"))
    assert message.startswith('the agent command "no-such-agent-ruledrift" was not found on PATH')


def test_preflight_rejects_a_missing_cwd(tmp_path: Path) -> None:
    message = preflight_error(command(sys.executable, cwd=tmp_path / "missing"))
    assert message.startswith(f"the command adapter's cwd {tmp_path / 'missing'} does not exist")
    (tmp_path / "file").touch()
    message = preflight_error(command(sys.executable, cwd=tmp_path / "file"))
    assert "is not a directory" in message


def test_preflight_rejects_a_missing_or_unusable_path(tmp_path: Path) -> None:
    message = preflight_error(command("./agent.sh", cwd=tmp_path))
    assert message == (
        f'the agent command "./agent.sh" does not exist ({tmp_path / "agent.sh"}): fix "command" '
        f'(a path that contains "/" resolves from cwd {tmp_path})'
    )
    (tmp_path / "agent.sh").write_text("#!/bin/sh\n")
    message = preflight_error(command("./agent.sh", cwd=tmp_path))
    assert message.startswith('the agent command "./agent.sh" is not executable: run `chmod +x')
    assert "is not a file" in preflight_error(command("./", cwd=tmp_path))


def test_a_command_that_cannot_start_fails_the_call(tmp_path: Path) -> None:
    assert "No such file or directory" in failure(command("no-such-agent-ruledrift"))
    (tmp_path / "agent.sh").write_text("#!/bin/sh\n")
    message = failure(command("./agent.sh", cwd=tmp_path))
    assert (
        message
        == f'could not start the agent command "./agent.sh" in {tmp_path}: Permission denied'
    )


@pytest.mark.parametrize(
    ("argv", "what"),
    [
        (("no-such\x00agent",), "NUL"),
        ((sys.executable, "-c", "pass", "a\x00b"), "NUL"),
        (("\ud83d-agent",), "lone surrogate"),
        ((sys.executable, "-c", "pass", "\ud83d"), "lone surrogate"),
    ],
    ids=["nul-command", "nul-arg", "surrogate-command", "surrogate-arg"],
)
def test_a_command_that_no_program_can_receive_fails_the_call(
    argv: tuple[str, ...], what: str
) -> None:
    """Legal in JSON, impossible in an argv: an AdapterError, never a crash."""
    message = failure(command(*argv))
    assert message.startswith('could not start the agent command "')
    message.encode("utf-8")


def test_the_suite_is_told_which_setting_no_program_can_receive() -> None:
    settings = {
        "type": "command",
        "command": "agent\x00",
        "args": ["ok", "\x00"],
        "cwd": "a\x00b",
    }
    problems = dict(ADAPTER_TYPE.problems(settings))
    assert set(problems) == {"/command", "/args/1", "/cwd"}
    assert "NUL character" in problems["/command"]
    assert list(ADAPTER_TYPE.problems({"type": "command", "command": "node", "args": ["é"]})) == []


def test_preflight_messages_hold_no_lone_surrogate(tmp_path: Path) -> None:
    message = preflight_error(command("\ud83d-agent"))
    message.encode("utf-8")
    assert message.startswith('the agent command "\ufffd-agent" was not found on PATH')
    message = preflight_error(command("./\ud83d", cwd=tmp_path))
    message.encode("utf-8")


def test_target_info_names_the_command() -> None:
    info = command("node", "agent.mjs", "--fast").target_info()
    assert (info.adapter, info.model) == ("command", None)
    assert info.details == {"command": ["node", "agent.mjs", "--fast"]}


# --- cancellation, closing, concurrency ---------------------------------------------------------


def test_cancelling_a_call_kills_its_processes(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"

    async def scenario() -> None:
        call = asyncio.create_task(agent("hang", str(pid_file)).complete(MESSAGES, TURN))
        await file_written(pid_file)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    run(scenario())
    assert gone(*read_pids(pid_file))


def test_cancelling_a_call_while_it_starts_does_not_wait_for_its_children() -> None:
    # asyncio, cancelled while spawning, kills the agent alone and waits for the pipes to close:
    # here for the 300 s of the grandchild. Cancel at each step of the start.
    adapter = command("sh", "-c", "sleep 300 & exec sleep 300")

    async def cancel_after(steps: int) -> float:
        call = asyncio.create_task(adapter.complete(MESSAGES, TURN))
        for _ in range(steps):
            await asyncio.sleep(0)
        started = time.monotonic()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        return time.monotonic() - started

    for steps in range(8):
        # not the grandchild's 300 s, however busy the machine
        assert run(cancel_after(steps)) < 60, f"cancelled after {steps} steps"


def test_aclose_kills_calls_in_flight(tmp_path: Path) -> None:
    pid_file = tmp_path / "pids"

    async def scenario() -> str:
        adapter = agent("hang", str(pid_file))
        call = asyncio.create_task(adapter.complete(MESSAGES, TURN))
        await file_written(pid_file)
        await adapter.aclose()
        with pytest.raises(AdapterError) as raised:
            await call
        return str(raised.value)

    assert run(scenario()).startswith("the agent was killed by signal SIGKILL")
    assert gone(*read_pids(pid_file))


def test_concurrent_calls_get_their_own_answers() -> None:
    adapter = agent("slow-echo")

    async def scenario() -> list[str]:
        calls = [
            adapter.complete(
                (Message("user", f"message {n}"),),
                CallContext(suite="s", scenario=f"scenario-{n}", kind="turn", turn=1),
            )
            for n in range(20)
        ]
        return [completion.content for completion in await asyncio.gather(*calls)]

    assert run(scenario()) == [f"scenario-{n}:message {n}" for n in range(20)]
