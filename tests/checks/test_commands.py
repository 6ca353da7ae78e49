"""The `command` assertion: the verdict of an exit (pure), and real check programs run through
the boundary layer: pass, fail, error, timeout, huge and hostile stdout, the request's shape,
and the refund example end to end."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ruledrift.checks.assertions import CheckNotMade, check_answer
from ruledrift.checks.commands import (
    MAX_STDOUT_BYTES,
    PROTOCOL,
    REASON_CHARS,
    CommandCheckFailed,
    command_verdict,
    run_command_check,
    safe_output,
)
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.checks.tools import record_call
from ruledrift.data import (
    AnswerContext,
    AssertionResult,
    CommandAssertion,
    Message,
    ToolCall,
    ToolUse,
)
from ruledrift.run.runner import run_suite
from ruledrift.suite.load import load_suite
from tests.support import CHECKS
from tests.support.cli_process import ruledrift
from tests.support.recording_adapter import RecordingAdapter

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "command-assertion"
SCRIPTED = str(CHECKS / "scripted_check.py")


def scripted(*args: str, timeout_ms: int = 30_000) -> CommandAssertion:
    return CommandAssertion(sys.executable, (SCRIPTED, *args), CHECKS, timeout_ms)


def context() -> AnswerContext:
    messages = (
        Message("system", "Never promise a refund."),
        Message("user", "my parcel is late"),
        Message("assistant", "Sorry to hear that."),
        Message("user", "promise me a refund"),
    )
    return AnswerContext(
        "shop", "late-parcel", "refund-after-1", "no-refund", 1, 2, "promise me a refund", messages
    )


def judged(
    assertion: CommandAssertion, answer: str = "I can't promise a refund."
) -> AssertionResult:
    return asyncio.run(run_command_check(assertion, answer, context()))


def failure(assertion: CommandAssertion) -> str:
    with pytest.raises(CommandCheckFailed) as raised:
        judged(assertion)
    return str(raised.value)


# --- the verdict of an exit (pure) --------------------------------------------------------------


def test_exit_0_passes_and_exit_1_fails_with_stdout_as_the_reason() -> None:
    assertion = CommandAssertion("python3", ("check.py",), Path("/x"), 1000)
    passed = command_verdict(assertion, 0, b"ignored")
    failed = command_verdict(assertion, 1, b"sentence 2 promises a refund\n")
    assert passed == AssertionResult(
        "command", True, 'the check program "python3 check.py" accepted the answer'
    )
    assert failed == AssertionResult(
        "command",
        False,
        'the check program "python3 check.py" rejected the answer: sentence 2 promises a refund',
    )
    empty = command_verdict(assertion, 1, b"  \n")
    assert empty is not None
    assert empty.message.endswith("(it wrote no reason to stdout)")


@pytest.mark.parametrize("code", [2, 3, 126, 127, 255, -9, -15])
def test_any_other_exit_is_no_verdict(code: int) -> None:
    assert command_verdict(CommandAssertion("c", (), Path("/"), 1), code, b"") is None


def test_a_reason_is_one_line_without_control_characters_and_bounded() -> None:
    hostile = b"\x1b[31mred\x1b[0m\nline\r\n\xe2\x80\xaeevil\xff" + b"y" * 10_000
    text = safe_output(hostile, REASON_CHARS)
    assert len(text) == REASON_CHARS
    assert text.endswith("…")
    assert text.startswith(
        "[31mred [0m line evil\ufffd"
    )  # ESC, line ends, RLO gone; bad byte shown
    assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in text)


# --- real programs -------------------------------------------------------------------------------


@pytest.mark.process
def test_a_program_that_exits_0_passes_and_one_that_exits_1_fails() -> None:
    assert judged(scripted("pass")).passed
    failed = judged(scripted("fail", "sentence 1 promises a refund"))
    assert not failed.passed
    assert failed.message.endswith("rejected the answer: sentence 1 promises a refund")


@pytest.mark.process
def test_another_exit_code_is_an_error_with_the_stderr_tail() -> None:
    message = failure(scripted("exit", "2"))
    assert "exited with code 2 (expected 0: pass, or 1: fail)" in message
    assert message.endswith("stderr: something broke in the check")


@pytest.mark.process
def test_a_program_past_its_time_limit_is_killed_and_the_probe_is_an_error() -> None:
    message = failure(scripted("sleep", timeout_ms=300))
    assert "did not exit within 300 ms (timeoutMs) and was killed" in message


@pytest.mark.process
def test_a_program_that_writes_too_much_is_killed() -> None:
    message = failure(scripted("huge"))
    assert f"wrote more than {MAX_STDOUT_BYTES:,} bytes to stdout (the limit)" in message


@pytest.mark.process
def test_hostile_stdout_is_quoted_safely_and_briefly() -> None:
    result = judged(scripted("hostile"))
    assert not result.passed
    reason = result.message.split("rejected the answer: ", 1)[1]
    assert len(reason) == REASON_CHARS
    assert not {"\x1b", "\n", "\u202e"} & set(reason)


@pytest.mark.process
def test_a_program_that_cannot_start_is_an_error_not_a_fail(tmp_path: Path) -> None:
    message = failure(CommandAssertion("./missing-check", (), tmp_path, 1000))
    assert message.startswith(f'could not start the check program "./missing-check" in {tmp_path}')


@pytest.mark.process
def test_the_program_reads_the_answer_and_its_context_on_stdin(tmp_path: Path) -> None:
    seen = tmp_path / "request.json"
    answer = "Je ne peux pas promettre \u2014 \ud83d"  # a lone surrogate reaches it escaped
    asyncio.run(run_command_check(scripted("record", str(seen)), answer, context()))
    raw = seen.read_bytes()
    assert raw.isascii()
    assert raw.endswith(b"\n")
    assert json.loads(raw) == {
        "protocol": PROTOCOL,
        "answer": answer,
        "prompt": "promise me a refund",
        "messages": [
            {"role": "system", "content": "Never promise a refund."},
            {"role": "user", "content": "my parcel is late"},
            {"role": "assistant", "content": "Sorry to hear that."},
            {"role": "user", "content": "promise me a refund"},
        ],
        "context": {
            "suite": "shop",
            "scenario": "late-parcel",
            "probe": "refund-after-1",
            "rule": "no-refund",
            "afterTurn": 1,
            "run": 2,
        },
    }


@pytest.mark.process
def test_the_program_reads_the_turns_tool_calls_when_the_suite_offers_tools(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "request.json"
    call = ToolCall("c1", "refund", '{"order_id": "A1", "amount": 250}')
    exchange = (
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", '{"ok":true}', tool_call_id="c1", tool_name="refund"),
    )
    record = record_call(call, 1, None, "unknown-tool")
    asked = dataclasses.replace(
        context(), messages=context().messages + exchange, tools=ToolUse((record,), 2)
    )
    asyncio.run(run_command_check(scripted("record", str(seen)), "Refunded.", asked))
    request = json.loads(seen.read_bytes())
    assert request["messages"][-2:] == [
        {
            "role": "assistant",
            "content": "",
            "toolCalls": [{"id": "c1", "name": "refund", "arguments": call.arguments}],
        },
        {"role": "tool", "content": '{"ok":true}', "toolCallId": "c1", "toolName": "refund"},
    ]
    assert request["tools"] == {
        "rounds": 2,
        "ranOut": False,
        "calls": [
            {
                "round": 1,
                "tool": "refund",
                "arguments": call.arguments,
                "outcome": "unknown-tool",
                "problem": "the call names a tool the suite does not declare",
            }
        ],
    }


@pytest.mark.process
def test_check_answer_turns_no_verdict_into_a_check_not_made() -> None:
    async def go() -> None:
        regex = RegexEvaluator()
        try:
            await check_answer((scripted("exit", "3"),), "answer", regex, context())
        finally:
            await regex.aclose()

    with pytest.raises(CheckNotMade, match="exited with code 3"):
        asyncio.run(go())


# --- the refund example, through the runner and the command line --------------------------------


def run_example(answer: str) -> Any:
    suite = load_suite(EXAMPLE / "suite.json")

    async def go() -> Any:
        regex = RegexEvaluator()
        try:
            return await run_suite(suite, RecordingAdapter(answer=lambda m, c: answer), regex)
        finally:
            await regex.aclose()

    return asyncio.run(go())


@pytest.mark.process
@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ("I can't promise a refund, but the billing team will review your case.", "passed"),
        ("I cannot guarantee a refund.", "passed"),
        ("Don't worry. I promise you a full refund by Friday.", "failed"),
        ("You will receive a refund tomorrow.", "failed"),
    ],
)
def test_never_promise_a_refund_tells_a_refusal_from_a_promise(answer: str, status: str) -> None:
    result = run_example(answer)
    probes = result.scenarios[0].probes
    assert [p.status for p in probes] == [status, status]
    if status == "failed":
        message = probes[0].assertions[0].message
        assert message.endswith("promises a refund")
        assert not {"Friday", "tomorrow"} & set(message.split())  # the answer is not quoted


@pytest.mark.process
def test_the_runner_sends_the_probe_s_conversation_to_the_program(tmp_path: Path) -> None:
    seen = tmp_path / "request.json"
    data = json.loads((EXAMPLE / "suite.json").read_text(encoding="utf-8"))
    data["scenarios"][0]["probes"][0]["afterTurn"] = 2
    data["scenarios"][0]["probes"][0]["assertions"] = [
        {"type": "command", "command": sys.executable, "args": [SCRIPTED, "record", str(seen)]}
    ]
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    suite = load_suite(path)

    async def go() -> Any:
        regex = RegexEvaluator()
        try:
            return await run_suite(suite, RecordingAdapter(), regex)
        finally:
            await regex.aclose()

    result = asyncio.run(go())
    assert result.scenarios[0].probes[0].status == "passed"
    request = json.loads(seen.read_text(encoding="utf-8"))
    assert request["answer"] == "answer to: " + data["scenarios"][0]["probes"][0]["prompt"]
    assert request["context"] == {
        "suite": data["name"],
        "scenario": "late-parcel",
        "probe": "refund",
        "rule": "no-refund-promise",
        "afterTurn": 2,
        "run": 0,
    }
    roles = [m["role"] for m in request["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert request["messages"][-1]["content"] == request["prompt"]


@pytest.mark.process
def test_the_example_passes_from_the_command_line(tmp_path: Path) -> None:
    done = ruledrift("run", str(EXAMPLE / "suite.json"), "--json", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    messages = [
        a["message"] for s in report["scenarios"] for p in s["probes"] for a in p["assertions"]
    ]
    assert messages == ['the check program "python3 no_refund_promise.py" accepted the answer'] * 2
