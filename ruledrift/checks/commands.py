"""The `command` assertion: a program of the suite's author judges the answer.

The seam: `run_command_check` hands the program, and the request it reads on stdin, to the
boundary layer (`boundary.programs`, which runs the command adapter's agents the same way: no
shell, a process group of its own, killed on a timeout); the verdict is `command_verdict`, a
pure function of the exit code and stdout. Exit 0 passes, exit 1 fails with stdout as the
reason; any other exit, a timeout, too much output or a program that cannot start is no verdict
at all (`CheckNotMade`: the probe is an error). stdout and stderr are hostile text: they are
decoded leniently, cut short and stripped of control characters before they enter a message.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ruledrift.boundary.processes import describe_exit, exec_failure
from ruledrift.boundary.programs import OutputTooLarge, ProgramNotStarted, Programs
from ruledrift.data import AnswerContext, AssertionResult, CommandAssertion, ToolUse, message_fields
from ruledrift.text import cut_text, repair_surrogates

PROTOCOL = "ruledrift.assertion.v1"
DEFAULT_TIMEOUT_MS = 10_000
MAX_STDOUT_BYTES = 64 * 1024  # a check's reason; a program that writes more is killed
REASON_CHARS = 500  # how much of stdout a failure's message quotes, at most
STDERR_CHARS = 500  # how much of stderr an error's message quotes, at most
_STDERR_LINES = 5
# C0 and C1 controls (line ends included: a reason is one line), line and paragraph separators,
# and the bidi controls that reorder text
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]+")


class CommandCheckFailed(Exception):
    """The program gave no verdict (another exit code, a timeout, too much output, or it could
    not start); the message says what happened."""


def parse_command_assertion(data: Mapping[str, Any], suite_dir: Path) -> CommandAssertion:
    """The assertion as the suite gives it, `cwd` resolved from the suite's folder (as the
    command adapter's)."""
    return CommandAssertion(
        command=data["command"],
        args=tuple(data.get("args", ())),
        cwd=Path(os.path.normpath(suite_dir / data.get("cwd", "."))),
        timeout_ms=data.get("timeoutMs", DEFAULT_TIMEOUT_MS),
    )


def program_problems(assertion: CommandAssertion) -> Iterator[tuple[str, str]]:
    """(pointer relative to the assertion, message) when the program cannot be run: `cwd` is
    not a directory, the command is not on PATH, or its path is not an executable file. Read
    from the file system when the suite is loaded, so `validate` finds them."""
    cwd, command = assertion.cwd, assertion.command
    if not cwd.is_dir():
        what = "is not a directory" if cwd.exists() else "does not exist"
        yield (
            "/cwd",
            f"the check program's cwd {cwd} {what} (a relative cwd resolves from the suite's "
            "folder)",
        )
        return
    if "/" not in command:
        if shutil.which(command) is None:
            yield (
                "/command",
                (
                    f'the check program "{command}" was not found on PATH: install it, or give its '
                    f'path (a path that contains "/" resolves from cwd {cwd})'
                ),
            )
        return
    path = cwd / command
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        yield (
            "/command",
            (
                f'the check program "{command}" {what} ({path}; a path that contains "/" resolves '
                f"from cwd {cwd})"
            ),
        )
    elif not _executable(path):
        yield (
            "/command",
            (
                f'the check program "{command}" is not executable: run `chmod +x {path}`, or run '
                f'it through its interpreter ("command": "python3", "args": ["{command}"])'
            ),
        )


def _executable(path: Path) -> bool:
    try:
        return os.access(path, os.X_OK)
    except ValueError:  # a lone surrogate: it cannot be started either
        return False


def _tool_use(use: ToolUse) -> dict[str, object]:
    """The probe's own turn's calls, as the tool assertions read them."""
    calls = [
        {
            "round": call.round,
            "tool": call.name,
            "arguments": call.arguments,
            "outcome": call.outcome,
            "problem": call.problem,
        }
        for call in use.calls
    ]
    return {"rounds": use.rounds, "ranOut": use.ran_out, "calls": calls}


def request(answer: str, context: AnswerContext | None) -> bytes:
    """What the program reads on stdin: one JSON object, ASCII with \\u escapes, and a newline
    (the shape is in docs/configuration.md#command-assertion)."""
    body: dict[str, object] = {"protocol": PROTOCOL, "answer": answer}
    if context is not None:
        body["prompt"] = context.prompt
        body["messages"] = [message_fields(m) for m in context.messages]
        if context.tools is not None:
            body["tools"] = _tool_use(context.tools)
        body["context"] = {
            "suite": context.suite,
            "scenario": context.scenario,
            "probe": context.probe,
            "rule": context.rule,
            "afterTurn": context.after_turn,
            "run": context.run,
        }
    return json.dumps(body).encode("ascii") + b"\n"


async def run_command_check(
    assertion: CommandAssertion, answer: str, context: AnswerContext | None
) -> AssertionResult:
    """Run the assertion's program on the answer; its verdict. Raises CommandCheckFailed when it
    gives none."""
    stderr = bytearray()
    try:
        stdout, code = await Programs().run(
            assertion.argv,
            assertion.cwd,
            request(answer, context),
            timeout_s=assertion.timeout_ms / 1000,
            max_stdout=MAX_STDOUT_BYTES,
            stderr=stderr,
        )
    except ProgramNotStarted as failure:
        raise CommandCheckFailed(f"{_could_not_start(assertion)}: {failure}") from None
    except TimeoutError:
        problem = f"did not exit within {assertion.timeout_ms} ms (timeoutMs) and was killed"
        raise CommandCheckFailed(_failure(assertion, problem, stderr)) from None
    except OutputTooLarge:
        problem = f"wrote more than {MAX_STDOUT_BYTES:,} bytes to stdout (the limit) and was killed"
        raise CommandCheckFailed(_failure(assertion, problem, stderr)) from None
    failed_exec = exec_failure(bytes(stderr)) if code in (126, 127) else None
    if failed_exec is not None:  # setpriv, which execs the program, could not
        raise CommandCheckFailed(f"{_could_not_start(assertion)}: {failed_exec}")
    verdict = command_verdict(assertion, code, stdout)
    if verdict is None:
        problem = f"{describe_exit(code)} (expected 0: pass, or 1: fail)"
        raise CommandCheckFailed(_failure(assertion, problem, stderr))
    return verdict


def command_verdict(
    assertion: CommandAssertion, code: int, stdout: bytes
) -> AssertionResult | None:
    """The verdict of an exit: 0 passes, 1 fails with stdout as the reason; None for any other
    exit (no verdict)."""
    name = _name(assertion)
    if code == 0:
        return AssertionResult("command", True, f"the check program {name} accepted the answer")
    if code != 1:
        return None
    reason = safe_output(stdout, REASON_CHARS) or "(it wrote no reason to stdout)"
    return AssertionResult(
        "command", False, f"the check program {name} rejected the answer: {reason}"
    )


def safe_output(output: bytes | bytearray, limit: int) -> str:
    """A program's output as a message may quote it: decoded (invalid UTF-8 as U+FFFD), on one
    line (each run of control characters, line ends included, as one space), trimmed, and cut to
    `limit` characters. Only the beginning that can be shown is decoded."""
    text = bytes(output[: 4 * limit + 4]).decode("utf-8", errors="replace")
    text = _CONTROL.sub(" ", repair_surrogates(text)).strip()
    return cut_text(text, limit)


def _name(assertion: CommandAssertion) -> str:
    return json.dumps(" ".join(assertion.argv), ensure_ascii=False)


def _could_not_start(assertion: CommandAssertion) -> str:
    return f"could not start the check program {_name(assertion)} in {assertion.cwd}"


def _failure(assertion: CommandAssertion, problem: str, stderr: bytes | bytearray) -> str:
    message = f"the check program {_name(assertion)} {problem}"
    lines = bytes(stderr).decode("utf-8", errors="replace").rstrip().splitlines()
    tail = safe_output("\n".join(lines[-_STDERR_LINES:]).encode(), STDERR_CHARS)
    return f"{message}; stderr: {tail}" if tail else message
