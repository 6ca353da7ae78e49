"""The children RuleDrift starts (an agent per call, the managed `ollama serve`) and everything
they start: how a child ended, in words; signalling its process group; and, on Linux, making
sure that none of them outlives the call or RuleDrift itself. Shared by the command adapter and
the managed Ollama server; docs/command-adapter.md says what is killed when.

A child started with the `ChildOptions` of `tied_child()` carries three ties:

- a parent-death signal (`prctl(PR_SET_PDEATHSIG, SIGKILL)`): the kernel kills the child as
  soon as RuleDrift dies, even by SIGKILL. util-linux's `setpriv --pdeathsig KILL` sets it and
  execs the child (the signal survives the exec), so the child is started by vfork, as any
  child without a `preexec_fn`; where `setpriv` is missing, a `preexec_fn` sets it between fork
  and exec (a full fork of RuleDrift: a few milliseconds of CPU per call);
- a mark: a token of its own, added to `RULEDRIFT_MARKS` in its environment, which every process
  it starts inherits. `kill_marked(mark)` finds them in /proc wherever they went (a daemon that
  called setsid() left the process group, not the mark);
- the watchdog: one `python -c` process per RuleDrift process, started with the first tied
  child, that waits for its stdin to close (RuleDrift exited, however it exited) and then kills
  every process that carries a mark of this RuleDrift process.

On other systems only the process group remains (no prctl, no /proc); nothing fails there.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import itertools
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MARKS_VARIABLE = "RULEDRIFT_MARKS"  # space-separated marks: one per RuleDrift that owns the process
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_SWEEP_ROUNDS = 10  # a process forked while a round ran is found by the next one
_EXEC_WAIT_S = 1.0  # how long a sweep waits for a process caught in an exec (< _WATCHDOG_EXIT_S)
_EXEC_POLL_S = 0.005  # and how often it looks again meanwhile
_PF_EXITING, _PF_KTHREAD = 0x4, 0x200000  # <linux/sched.h>: flags in /proc/PID/stat
_WATCHDOG_EXIT_S = 2.0  # at our exit, how long to wait for the watchdog's last sweep
_WATCHDOG_BOOT = (
    "import sys; sys.path[:0] = [sys.argv[1]]; "
    "from ruledrift.boundary.processes import watch; watch(sys.argv[2])"
)
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def describe_exit(code: int) -> str:
    """`exited with code 3`, or `was killed by signal SIGKILL` for asyncio's negative codes."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        name = str(-code)
    return f"was killed by signal {name}"


def signal_group(group: int, sig: signal.Signals) -> None:
    """Send `sig` to every process of `group`; nobody left there is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, sig)


def kill_group(group: int) -> None:
    """SIGKILL to every process of `group` (a child and whatever it left running)."""
    signal_group(group, signal.SIGKILL)


# --- tied children ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChildOptions:
    """How to start a child that dies with RuleDrift: pass `env` and `preexec_fn` to
    `asyncio.create_subprocess_exec` (with `start_new_session=True`), and end it with
    `kill_child(pid, mark)`."""

    env: dict[str, str]
    preexec_fn: Callable[[], None] | None  # None where `prefix` sets it, or the kernel cannot
    mark: str
    prefix: tuple[str, ...] = ()  # put in front of the child's argv: `setpriv --pdeathsig KILL --`


def tied_child(env: Mapping[str, str] | None = None) -> ChildOptions:
    """Options for a new child: `env` (default: ours) with a new mark, the parent-death signal,
    and the watchdog running.

    Call it, and start the child, from the thread that runs the event loop: the kernel sends
    the parent-death signal when the thread that forked exits, and asyncio forks from the loop's
    thread, which lives as long as the calls and the server it starts."""
    _watchdog.ensure_running()
    mark = f"{_watchdog.run}-{next(_counter)}"
    env = dict(os.environ if env is None else env)
    env[MARKS_VARIABLE] = " ".join([*env.get(MARKS_VARIABLE, "").split(), mark])
    setpriv = _setpriv()
    if setpriv is not None:
        return ChildOptions(env, None, mark, (setpriv, "--pdeathsig", "KILL", "--"))
    return ChildOptions(env=env, preexec_fn=_parent_death_signal(), mark=mark)


def kill_child(group: int, mark: str) -> None:
    """SIGKILL to the child's process group, then to every process that carries its mark."""
    kill_group(group)
    kill_marked(mark, since=group)


def kill_marked(mark: str, since: int | None = None) -> None:
    """SIGKILL to every process that carries `mark`, round after round until none is left (see
    `_sweep`).

    `since`: the pid of the child the mark was given to. Everything that carries the mark was
    started after it, so has a higher pid, or, when pids wrapped around meanwhile, one up to
    the last pid given: only those are read (most of /proc is older)."""
    _sweep(lambda marks: mark in marks, since or 0)


def watch(run: str) -> None:
    """The watchdog (started by `tied_child`, see the module's docstring): wait until stdin
    closes, then kill every process marked by the RuleDrift process `run`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # its own session already; Ctrl-C is not for it
    while sys.stdin.buffer.read(4096):
        pass
    prefix = f"{run}-"
    _sweep(lambda marks: any(m.startswith(prefix) for m in marks))


_counter = itertools.count(1)


class _Watchdog:
    """This process' watchdog and the run token in its marks, both made again after a fork."""

    def __init__(self) -> None:
        self.run = ""
        self._owner = 0  # the pid they belong to
        self._process: subprocess.Popen[bytes] | None = None

    def ensure_running(self) -> None:
        if self._owner != os.getpid():  # a new process, or a fork: a run of its own
            self._forget()
            self.run, self._owner = secrets.token_hex(8), os.getpid()
        if not _has_proc():
            return  # no /proc: the watchdog could not find anything
        if self._process is None or self._process.poll() is not None:
            self._forget()
            self._process = _start_watchdog(self.run)

    def stop(self) -> None:
        """At our normal exit: close the watchdog's stdin (it sweeps, finds nothing, exits) and
        reap it, so that nothing is left running or unreaped behind a clean exit."""
        if self._owner != os.getpid() or self._process is None:
            return
        process, self._process = self._process, None
        if process.stdin:
            process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_WATCHDOG_EXIT_S)

    def _forget(self) -> None:
        """Close our end of the watchdog's stdin (in a fork: only the fork's copy)."""
        if self._process and self._process.stdin:
            self._process.stdin.close()
        self._process = None


def _start_watchdog(run: str) -> subprocess.Popen[bytes] | None:
    """The watchdog for `run`: in a session of its own (a Ctrl-C or a kill of RuleDrift's
    group leaves it alone), holding none of our files but its stdin. None if it cannot start:
    it is a safety net, and the parent-death signal and the sweeps still work without it."""
    try:
        return subprocess.Popen(
            [sys.executable, "-P", "-c", _WATCHDOG_BOOT, _PACKAGE_ROOT, run],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError:
        return None


_watchdog = _Watchdog()
atexit.register(_watchdog.stop)


# --- Linux: the parent-death signal and /proc ---------------------------------------------------


@cache
def _prctl() -> Callable[..., int] | None:
    """libc's prctl, resolved once here, in the parent (never between fork and exec)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return prctl


def _parent_death_signal() -> Callable[[], None] | None:
    """A `preexec_fn` that asks the kernel to SIGKILL the child when we die.

    It runs in the child between fork and exec, where Python is unsafe if it needs a lock that
    another thread held at the fork: this one only calls a libc function resolved beforehand and
    two system calls (no import, no I/O, no lock), as is common practice. If we died before the
    prctl, the child was already given to another parent: it kills itself."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    death_signal = ctypes.c_ulong(signal.SIGKILL)
    option = ctypes.c_int(_PR_SET_PDEATHSIG)

    def die_with_parent() -> None:
        prctl(option, death_signal)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return die_with_parent


_SETPRIV_FAILED = b"setpriv: failed to execute "


@cache
def _has_proc() -> bool:
    return Path("/proc/self/environ").exists()


def exec_failure(stderr: bytes) -> str | None:
    """Why `setpriv` could not exec the child (its last stderr line, e.g. `Permission denied`),
    when that is what a 126/127 exit means; else None."""
    for line in stderr.splitlines()[-3:]:
        if line.startswith(_SETPRIV_FAILED):
            reason = line.rpartition(b": ")[2].decode("utf-8", errors="replace").strip()
            return reason or "it could not be executed"
    return None


@cache
def _setpriv() -> str | None:
    """util-linux's setpriv where it can set a parent-death signal (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    found = shutil.which("setpriv")
    if found is None:
        return None
    try:
        done = subprocess.run(
            [found, "--pdeathsig", "KILL", "--", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if done.returncode == 0 else None


def _started_since(pids: list[int], since: int) -> list[int]:
    """The pids that can belong to processes started after `since`: those above it, and, if
    pids wrapped around since (the last pid given, in /proc/loadavg, is below it), those up to
    the last one. All of them when `since` is 0 or the last pid cannot be read."""
    if since <= 0:
        return pids
    try:
        last = int(Path("/proc/loadavg").read_text().split()[4])
    except (OSError, ValueError, IndexError):
        return pids
    return [pid for pid in pids if pid > since or (last < since and pid <= last)]


def _sweep(wanted: Callable[[list[str]], bool], since: int = 0) -> None:
    """SIGKILL to every process whose marks are `wanted`, round after round, until a round finds
    none to kill (at most `_SWEEP_ROUNDS` that kill: a process forked while a round ran is found
    by the next one) and none in the middle of an exec. Such a process shows no environment
    until its exec is done (see `_marks`): the sweep looks again every few milliseconds, for at
    most `_EXEC_WAIT_S`."""
    rounds, deadline = 0, time.monotonic() + _EXEC_WAIT_S
    while True:
        killed, in_exec = _kill_matching(wanted, since)
        rounds += 1 if killed else 0
        if killed and rounds < _SWEEP_ROUNDS:
            continue
        if not in_exec or time.monotonic() > deadline:
            return
        time.sleep(_EXEC_POLL_S)


def _kill_matching(wanted: Callable[[list[str]], bool], since: int = 0) -> tuple[int, int]:
    """SIGKILL to every process started after pid `since` (see `_started_since`; 0: any) whose
    marks are `wanted`; returns how many were signalled, and how many were in the middle of an
    exec (their marks could not be read yet)."""
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return 0, 0
    killed = in_exec = 0
    me = os.getpid()
    for pid in _started_since(pids, since):
        marks = _marks(pid) if pid != me else []
        if marks is None:
            in_exec += 1
        elif wanted(marks) and _kill(pid, wanted):
            killed += 1
    return killed, in_exec


def _marks(pid: int) -> list[str] | None:
    """The marks in a process' environment as it was started (empty: none, or unreadable, e.g.
    another user's process); None while the process is in the middle of an exec.

    From the moment an exec closes the close-on-exec files (a `Popen` of the parent returns
    then) until the kernel has laid out the new program's stack, /proc/PID/environ reads
    empty. An empty read is believed only when the kernel says the environment is empty (see
    `_empty_for_good`); else the process is read once more, and if that read is empty too (a
    process that execs again and again may be in its next exec by then), its marks are
    unknown."""
    environ = _environ(pid)
    if environ == b"" and not _empty_for_good(pid):
        environ = _environ(pid)  # the exec under way may have ended since
        if environ == b"":
            return None
    if not environ:
        return []
    prefix = MARKS_VARIABLE.encode() + b"="
    if prefix not in environ:
        return []
    for entry in environ.split(b"\0"):
        if entry.startswith(prefix):
            return entry[len(prefix) :].decode("ascii", errors="replace").split()
    return []


def _environ(pid: int) -> bytes | None:
    """A process' /proc/PID/environ (None: unreadable, e.g. another user's process, or gone)."""
    try:  # os.open and os.read: a sweep reads every process' environ, twice as fast as Path
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
    except OSError:
        return None
    try:
        return b"".join(iter(lambda: os.read(fd, 65536), b""))
    except OSError:
        return None
    finally:
        os.close(fd)


def _empty_for_good(pid: int) -> bool:
    """Whether `pid`, whose environment just read empty, has no environment to wait for: a
    kernel thread, an exiting process, a zombie, one that is gone, or a program whose
    environment the kernel says is empty (its start and end, /proc/PID/stat fields 50 and 51,
    are equal). Not one in the middle of an exec: its new memory has no end of code yet (field
    27), which the kernel sets only once the stack with the environment is in place
    (fs/binfmt_elf.c, after `create_elf_tables`)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        flags, end_code, env_start, env_end = (int(fields[i]) for i in (6, 24, 47, 48))
    except (OSError, ValueError, IndexError):  # gone, or a kernel before 3.5 (no such fields)
        return True
    if fields[0] in ("Z", "X") or flags & (_PF_EXITING | _PF_KTHREAD):
        return True
    return end_code != 0 and env_start == env_end


def _kill(pid: int, wanted: Callable[[list[str]], bool]) -> bool:
    """SIGKILL to `pid` if its marks are still `wanted`, through a pidfd where the kernel has
    them: opened before the marks are read again, it cannot reach a process that took the pid
    of one that has ended."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (OSError, AttributeError):  # before Linux 5.3: the pid itself
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            return True
        return False
    try:
        marks = _marks(pid)
        if marks is None or not wanted(marks):
            return False
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return True
        return False
    finally:
        os.close(pidfd)
