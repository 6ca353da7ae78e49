"""Tied children (adapters/processes.py) against real processes: the parent-death signal, the
marks and their sweep, and the watchdog, each on its own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ruledrift.boundary import processes
from ruledrift.boundary.processes import (
    MARKS_VARIABLE,
    describe_exit,
    kill_child,
    kill_marked,
    tied_child,
)
from tests.support.processes import alive, gone, kill_survivors

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux: prctl, /proc"),
]

# A daemon: forks a child that leaves the process group and session (setsid) and sleeps, holding
# none of our files; prints the child's pid once it has left, and exits.
DAEMON = (
    sys.executable,
    "-c",
    "import os, time\n"
    "left, told = os.pipe()\n"
    "pid = os.fork()\n"
    "if pid:\n"
    "    os.close(told); os.read(left, 1); print(pid, flush=True); os._exit(0)\n"
    "os.setsid(); null = os.open(os.devnull, os.O_RDWR)\n"
    "for fd in (0, 1, 2): os.dup2(null, fd)\n"
    "os.write(told, b'x'); time.sleep(300)\n",
)

# A process that does nothing but exec: sh replaced by sh, again and again. Part of its time it is
# in the middle of an exec, when /proc/PID/environ reads empty.
EXECS_FOREVER = 'exec sh -c "$0" "$0"'


@pytest.fixture
def started() -> Iterator[list[int]]:
    """The pids a test started; whatever still runs is killed afterwards."""
    pids: list[int] = []
    yield pids
    kill_survivors(*pids)


@pytest.fixture
def children() -> Iterator[list[subprocess.Popen[bytes]]]:
    """The children a test started; killed and reaped afterwards, whatever happened."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for child in started:
        child.kill()
        child.wait(timeout=30)


def sleeper(env: dict[str, str], children: list[subprocess.Popen[bytes]]) -> int:
    """A child that sleeps in a process group of its own; returns its pid."""
    children.append(subprocess.Popen(["sleep", "300"], env=env, start_new_session=True))
    return children[-1].pid


def execing(env: dict[str, str], children: list[subprocess.Popen[bytes]]) -> int:
    """A child that execs forever, in a process group of its own; returns its pid."""
    argv = ["sh", "-c", EXECS_FOREVER, EXECS_FOREVER]
    children.append(subprocess.Popen(argv, env=env, start_new_session=True))
    return children[-1].pid


def daemon(env: dict[str, str], started: list[int]) -> int:
    """The pid of a daemon started with `env`, once it has left our session."""
    told = subprocess.run(DAEMON, env=env, stdout=subprocess.PIPE, check=True, timeout=30)
    started.append(int(told.stdout))
    return started[-1]


def still_running(*pids: int) -> bool:
    """Every pid still runs a moment later (a kill, had there been one, has landed by then)."""
    return not any(gone(pid, within=0.3) for pid in pids)


def test_exits_are_described_in_words() -> None:
    assert describe_exit(3) == "exited with code 3"
    assert describe_exit(-signal.SIGKILL) == "was killed by signal SIGKILL"
    assert describe_exit(-200) == "was killed by signal 200"


# --- marks --------------------------------------------------------------------------------------


def test_a_tied_child_is_marked_in_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MARKS_VARIABLE, "an-outer-ruledrift-7")
    first, second = tied_child(), tied_child({"ONLY": "this"})
    assert first.mark != second.mark
    assert first.env[MARKS_VARIABLE] == f"an-outer-ruledrift-7 {first.mark}"  # nested: both
    assert second.env == {"ONLY": "this", MARKS_VARIABLE: second.mark}
    assert first.env["PATH"] == os.environ["PATH"]


def test_kill_marked_kills_the_marked_wherever_they_went(
    started: list[int], children: list[subprocess.Popen[bytes]]
) -> None:
    options = tied_child()
    escaped, grouped = daemon(options.env, started), sleeper(options.env, children)
    kill_marked(options.mark)
    assert gone(escaped, grouped)


def test_a_process_in_the_middle_of_an_exec_is_never_taken_for_an_unmarked_one(
    children: list[subprocess.Popen[bytes]],
) -> None:
    """Until the kernel has laid out its new stack, a process shows no environment: its marks
    are unknown (None), not none (issue 21: a `sleep` just started, swept at once, survived)."""
    options = tied_child()
    pid = execing(options.env, children)
    seen = [processes._marks(pid) for _ in range(3000)]
    assert all(marks is None or options.mark in marks for marks in seen)


def test_a_process_with_an_empty_environment_is_unmarked_not_unknown(
    children: list[subprocess.Popen[bytes]],
) -> None:
    """`env -i`: nothing to wait for, once its execs are done."""
    children.append(subprocess.Popen(["env", "-i", "sleep", "300"], start_new_session=True))
    for _ in range(6000):  # a minute at most, in one of its two execs
        if (marks := processes._marks(children[-1].pid)) is not None:
            break
        time.sleep(0.01)
    assert marks == []


def test_kill_marked_kills_the_marked_caught_in_the_middle_of_an_exec(
    children: list[subprocess.Popen[bytes]],
) -> None:
    """Each sweep reads its process first (`since`: the pid before it), at any point of its
    execs."""
    marked = [tied_child() for _ in range(10)]
    pids = [execing(options.env, children) for options in marked]
    for options, pid in zip(marked, pids, strict=True):
        kill_marked(options.mark, since=pid - 1)
    assert gone(*pids)


def test_kill_marked_spares_every_other_mark(started: list[int]) -> None:
    """Concurrent calls: one call's sweep never touches another's processes, nor ours, nor a
    process whose mark only begins like it."""
    mine, other = tied_child(), tied_child()
    lookalike = {**mine.env, MARKS_VARIABLE: f"{mine.mark}0"}
    unmarked = {k: v for k, v in mine.env.items() if k != MARKS_VARIABLE}
    spared = [daemon(env, started) for env in (other.env, lookalike, unmarked)]
    doomed = daemon(mine.env, started)
    kill_marked(mine.mark)
    assert gone(doomed)
    assert still_running(*spared)


def test_kill_child_kills_the_group_and_the_mark(
    started: list[int], children: list[subprocess.Popen[bytes]]
) -> None:
    options = tied_child()
    unmarked = {k: v for k, v in options.env.items() if k != MARKS_VARIABLE}
    leader = sleeper(
        unmarked, children
    )  # the child first, as in a call: what it starts comes after
    escaped = daemon(options.env, started)
    kill_child(leader, options.mark)
    assert gone(escaped, leader)


# --- when RuleDrift dies ------------------------------------------------------------------------

# A RuleDrift stand-in: starts argv[1:] as a tied child, prints its pid, then sleeps. With
# "--unmarked" the child has no mark (only the parent-death signal ties it); with "--untied" it
# has no parent-death signal (only the mark ties it, for the watchdog).
PARENT = """
import os, subprocess, sys, time
from ruledrift.boundary.processes import MARKS_VARIABLE, tied_child
options = tied_child()
env = {k: v for k, v in options.env.items() if k != MARKS_VARIABLE or sys.argv[1] != "--unmarked"}
untied = sys.argv[1] == "--untied"
preexec = None if untied else options.preexec_fn
argv = sys.argv[2:] if untied else [*options.prefix, *sys.argv[2:]]
child = subprocess.Popen(argv, env=env, preexec_fn=preexec, start_new_session=True,
                         stdout=subprocess.PIPE)
print(child.stdout.readline().decode().strip() or child.pid, flush=True)
time.sleep(300)
"""


def killed_parent(tie: str, argv: tuple[str, ...], started: list[int]) -> int:
    """Start the stand-in (its child prints a pid, or prints nothing and the child's pid is
    taken), SIGKILL it once the child runs; returns the pid printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-c", PARENT, tie, *argv], stdout=subprocess.PIPE, env=env, text=True
    ) as parent:
        assert parent.stdout is not None
        try:
            pid = int(parent.stdout.readline())
            started.append(pid)
        finally:
            parent.kill()
            parent.wait(timeout=30)
    return pid


def test_the_kernel_kills_a_tied_child_when_its_parent_is_killed(started: list[int]) -> None:
    child = killed_parent("--unmarked", ("sh", "-c", "echo; exec sleep 300"), started)
    assert gone(child), "the parent-death signal did not kill the child"


def test_the_watchdog_kills_what_a_killed_parent_left(started: list[int]) -> None:
    escaped = killed_parent("--untied", DAEMON, started)
    assert gone(escaped), "the watchdog did not kill the marked daemon"


def test_a_child_whose_parent_died_before_the_tie_kills_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Between fork and prctl the parent may die: the child, given to another parent by then,
    must not run on untied. Here its 'parent' is a pid that is not its parent."""
    monkeypatch.setattr(os, "getpid", lambda: 1)  # when the tie is made, in this process
    preexec = processes._parent_death_signal()
    monkeypatch.undo()
    assert preexec is not None
    with subprocess.Popen(["sleep", "300"], preexec_fn=preexec) as child:
        try:
            assert child.wait(timeout=30) == -signal.SIGKILL
        finally:
            child.kill()


def test_a_watchdog_that_died_is_replaced() -> None:
    tied_child()
    first = processes._watchdog._process
    assert first is not None
    assert alive(first.pid)
    first.kill()
    first.wait(timeout=30)
    tied_child()
    second = processes._watchdog._process
    assert second is not None
    assert second.pid != first.pid
    assert alive(second.pid)


def test_a_clean_exit_stops_and_reaps_the_watchdog_without_a_warning() -> None:
    script = (
        "from ruledrift.boundary import processes\n"
        "processes.tied_child()\n"
        "print(processes._watchdog._process.pid, flush=True)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    finished = subprocess.run(
        [sys.executable, "-X", "dev", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert finished.stderr == ""  # -X dev shows ResourceWarnings: a running child, an open pipe
    assert not alive(int(finished.stdout))  # reaped before the exit, not merely orphaned


def test_a_sweep_reads_only_what_started_after_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pids grow until they wrap around: above the child's pid, or up to the last pid given."""
    from ruledrift.boundary import processes

    class Loadavg:
        def __init__(self, last: int) -> None:
            self.last = last

        def read_text(self) -> str:
            return f"0.1 0.2 0.3 1/100 {self.last}\n"

    pids = [1, 50, 100, 150, 200]
    monkeypatch.setattr(processes, "Path", lambda path: Loadavg(180))
    assert processes._started_since(pids, 100) == [150, 200]
    monkeypatch.setattr(processes, "Path", lambda path: Loadavg(60))  # wrapped: 60 < 100
    assert processes._started_since(pids, 100) == [1, 50, 150, 200]
    assert processes._started_since(pids, 0) == pids
