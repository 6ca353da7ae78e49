"""A test agent for the command protocol 2, one-shot or persistent: it answers each request line
on stdin with one answer line on stdout, until stdin closes (so it serves one request when run
once per call, and many as a persistent worker). argv[1] picks how it (mis)behaves:

echo              content: JSON of {request, pid, served}: the request as parsed, this process's
                  pid, and how many requests it has served (this one included)
echo-raw          content: the request line exactly as received (decoded as ASCII)
delegate CALLS    a model that wants tools: while no tool message follows the last user
                  message, answer with `toolCalls` CALLS (JSON); then with the content
                  "results: " and the tool messages' contents joined by " | "
report MESSAGES   an agent that ran its own tools: answer "refunded" with `messages` MESSAGES
respond LINE      answer every request with LINE (any text, written as is)
respond-file F    answer every request with the first line of the file F
raw HEX           answer every request with the bytes HEX (no newline added)
crash-on N        answer as echo, but on the N-th request log to stderr and exit 3
hang-on N PIDS    answer as echo, but on the N-th request start a sleeping child, write this
                  process's pid and the child's to the file PIDS, and sleep
extra-line        answer with {pid, served} and a second line, in one write
flood             answer with 10 MB and no newline
sleep S           answer as echo after sleeping S seconds

With AGENT_PID_DIR set, the agent first creates an empty file named by its pid in that folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

served = 0


def answer(response: object) -> None:
    sys.stdout.write(json.dumps(response) + "\n")
    sys.stdout.flush()


def echo(request: dict[str, object]) -> None:
    answer({"content": json.dumps({"request": request, "pid": os.getpid(), "served": served})})


def delegate(request: dict[str, object], calls: str) -> None:
    messages = request["messages"]
    assert isinstance(messages, list)
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    results = [m["content"] for m in messages[last_user:] if m["role"] == "tool"]
    if results:
        answer({"content": "results: " + " | ".join(results)})
    else:
        answer({"content": "", "toolCalls": json.loads(calls)})


def hang(pids: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    partial = Path(pids + ".partial")
    partial.write_text(f"{os.getpid()} {child.pid}")
    partial.rename(pids)  # atomic: the test never reads half a file
    print("thinking very hard", file=sys.stderr, flush=True)
    time.sleep(600)


def serve(line: bytes, mode: str, args: list[str]) -> None:
    request = json.loads(line)
    if mode == "echo-raw":
        answer({"content": line.decode("ascii")})
    elif mode == "delegate":
        delegate(request, args[0])
    elif mode == "report":
        answer({"content": "refunded", "messages": json.loads(args[0])})
    elif mode in ("respond", "respond-file"):
        text = Path(args[0]).read_text().splitlines()[0] if mode == "respond-file" else args[0]
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    elif mode == "raw":
        sys.stdout.buffer.write(bytes.fromhex(args[0]))
        sys.stdout.flush()
    elif mode == "crash-on" and served == int(args[0]):
        for number in range(1, 31):
            print(f"log line {number}", file=sys.stderr)
        print("ValueError: the agent broke", file=sys.stderr, flush=True)
        sys.exit(3)
    elif mode == "hang-on" and served == int(args[0]):
        hang(args[1])
    elif mode == "extra-line":  # both lines in one write: they arrive together
        first = json.dumps({"content": json.dumps({"pid": os.getpid(), "served": served})})
        second = json.dumps({"content": "a second answer nobody asked for"})
        sys.stdout.write(f"{first}\n{second}\n")
        sys.stdout.flush()
    elif mode == "flood":
        sys.stdout.write("x" * 10_000_000)
        sys.stdout.flush()
    else:
        if mode == "sleep":
            time.sleep(float(args[0]))
        echo(request)


def main() -> int:
    global served
    mode, args = sys.argv[1], sys.argv[2:]
    pid_dir = os.environ.get("AGENT_PID_DIR")
    if pid_dir:
        (Path(pid_dir) / str(os.getpid())).touch()
    print(f"agent {os.getpid()} started", file=sys.stderr, flush=True)
    for line in sys.stdin.buffer:
        served += 1
        serve(line, mode, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
