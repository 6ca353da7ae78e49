"""The command agent of reaping.json: does the image's init reap what RuleDrift kills?

RuleDrift kills what an agent's call left running (SIGKILL to its process group and to every
process carrying the call's mark). A child whose agent has already exited belongs to PID 1 by
then, and a killed process stays a zombie until its parent waits for it: RuleDrift as PID 1 never
does, an init (tini) does at once.

- A turn starts a background child (a Python that sleeps, its standard streams on /dev/null so
  the call can end), records its pid and start time beside RuleDrift's pid, and answers at once.
- A probe waits up to 10 seconds for that child to be gone, and answers `reaped`, or
  `not reaped: …` with its state and parent.

Standard library only: it runs in the image (docs/releasing.md, tests/test_image.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WAIT_S = 10.0
STATE = Path(tempfile.gettempdir()) / f"ruledrift-reaping-{os.getppid()}.json"


def status(pid: int) -> tuple[str, int, str] | None:
    """(state, parent pid, start time) of `pid` from /proc, or None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    fields = text.rpartition(")")[2].split()  # fields 3 and on: the name may hold spaces
    return fields[0], int(fields[1]), fields[19]


def start_child() -> str:
    devnull = subprocess.DEVNULL
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    child = subprocess.Popen(sleeper, stdin=devnull, stdout=devnull, stderr=devnull)
    now = status(child.pid)
    assert now is not None
    STATE.write_text(json.dumps({"pid": child.pid, "start": now[2]}), encoding="utf-8")
    return "started"


def was_reaped() -> str:
    recorded = json.loads(STATE.read_text(encoding="utf-8"))
    STATE.unlink()
    pid, start = recorded["pid"], recorded["start"]
    deadline = time.monotonic() + WAIT_S
    while (now := status(pid)) is not None and now[2] == start:
        if time.monotonic() > deadline:
            state, parent, _ = now
            return f"not reaped: process {pid} is in state {state} under parent {parent}"
        time.sleep(0.05)
    return "reaped"


request = json.load(sys.stdin)
answer = start_child() if request["context"]["kind"] == "turn" else was_reaped()
json.dump({"content": answer}, sys.stdout)
