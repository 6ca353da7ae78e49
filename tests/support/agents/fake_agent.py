"""A test agent for the command adapter; argv[1] picks how it (mis)behaves.

Modes that start helpers write their pids (space-separated) to the file named by argv[2].
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path


def read_request() -> dict[str, object]:
    request: dict[str, object] = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    return request


def answer(response: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(response) + "\n")
    sys.stdout.flush()


def sleeper(*, quiet: bool) -> subprocess.Popen[bytes]:
    """A grandchild that sleeps; `quiet` ones don't inherit our stdout and stderr."""
    output = subprocess.DEVNULL if quiet else None
    code = "import time; time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code], stdout=output, stderr=output)


def escaped_sleeper() -> int:
    """A grandchild that leaves our process group and session (setsid) and sleeps, holding
    none of our pipes: a daemon. Returns its pid once it has left."""
    code = "import os, sys, time; os.setsid(); print(flush=True); time.sleep(600)"
    daemon = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert daemon.stdout is not None
    daemon.stdout.readline()  # it has called setsid()
    daemon.stdout.close()
    return daemon.pid


def write_pids(*pids: int) -> None:
    target = Path(sys.argv[2])
    partial = target.with_suffix(".partial")
    partial.write_text(" ".join(str(pid) for pid in pids))
    partial.rename(target)  # atomic: the test never reads half a file


def main() -> int:
    mode = sys.argv[1]
    if mode == "echo":  # the request, where it ran and one variable of its environment
        request = read_request()
        seen = {"request": request, "cwd": os.getcwd(), "env": os.environ.get("RULEDRIFT_TEST")}
        answer({"content": json.dumps(seen)})
    elif mode == "crash":
        read_request()
        for line in range(1, 41):
            print(f"log line {line}", file=sys.stderr)
        print("ValueError: the agent broke", file=sys.stderr)
        return 3
    elif mode == "hang":  # a grandchild that sleeps too, then sleep
        grandchild = sleeper(quiet=False)
        write_pids(os.getpid(), grandchild.pid)
        print("thinking very hard", file=sys.stderr, flush=True)
        time.sleep(600)
    elif mode == "orphan":  # answer and exit, leaving a grandchild behind (not holding our pipes)
        read_request()
        grandchild = sleeper(quiet=True)
        write_pids(grandchild.pid)
        answer({"content": "done"})
    elif mode == "escape":  # answer and exit, leaving a daemon that left our group
        read_request()
        write_pids(escaped_sleeper())
        answer({"content": "escaped"})
    elif mode == "escape-and-hang":  # us, a grandchild in our group, a daemon; then sleep
        grandchild = sleeper(quiet=True)
        write_pids(os.getpid(), grandchild.pid, escaped_sleeper())
        time.sleep(600)
    elif mode == "big-error":  # error: argv[2] argv[3] times, in a list if argv[4] is "list"
        read_request()
        print("about to fail", file=sys.stderr)
        text, times = sys.argv[2], int(sys.argv[3])
        as_list = sys.argv[4:] == ["list"]
        answer({"error": {"trace": [text] * times} if as_list else text * times})
    elif mode == "raw":  # write argv[2], in hex, to stdout (argv[3] times, default once)
        read_request()
        times = int(sys.argv[3]) if len(sys.argv) > 3 else 1
        sys.stdout.buffer.write(bytes.fromhex(sys.argv[2]) * times)
    elif mode == "flood-stdout":
        read_request()
        while True:
            sys.stdout.buffer.write(b"x" * 65536)
    elif mode == "flood-stderr":  # 40 MB of stderr first, then a normal answer
        read_request()
        for _ in range(640):
            sys.stderr.buffer.write(b"e" * 65535 + b"\n")
        answer({"content": "still here"})
    elif mode == "no-stdin":
        answer({"content": "did not read"})
    elif mode == "respond":  # argv[2] is the response object, argv[3] the exit code
        read_request()
        print("about to respond", file=sys.stderr)
        sys.stdout.write(sys.argv[2])
        return int(sys.argv[3])
    elif mode == "slow-echo":  # concurrency: answer with the scenario after a short sleep
        request = read_request()
        context, messages = request["context"], request["messages"]
        assert isinstance(context, dict)
        assert isinstance(messages, list)
        time.sleep(0.05)
        answer({"content": f"{context['scenario']}:{messages[-1]['content']}"})
    else:
        print(f"unknown mode {mode}", file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main())
