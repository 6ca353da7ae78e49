"""Tool rules against a real model: SmolLM2-135M behind llama-cpp-python's server, whose
`chatml-function-calling` format constrains the model to a tool call when `tool_choice` names a
tool. First, whether a tool's result reaches the model at all (measured by the prompt tokens
the server reports); then a whole run through the tool loop to a verdict.

What was found (llama-cpp-python 0.3.x): that format's template renders no `role: tool`
message, so a result sent as one never reaches the model (a 1- and a 400-character result give
the same prompt); sent as a user message (`toolResults: "user"`), it does."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any, Literal

import pytest

from ruledrift.adapters.openai import OpenAIAdapter, OpenAIAdapterConfig
from ruledrift.data import Location, Message, Tool, ToolCall, ToolOffer, canonical_json
from tests.e2e.conftest import OPENAI_MODEL
from tests.e2e.test_real_model import probes, run_suite

pytestmark = [pytest.mark.e2e, pytest.mark.process]

LOOKUP_PARAMETERS = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
    "required": ["order_id"],
}
LOOKUP = Tool(
    "lookup_order", "Look an order up by its id", canonical_json(LOOKUP_PARAMETERS), Location(1, 1)
)


def prompt_tokens(
    base_url: str, result: str, tool_results: Literal["tool", "user"], timeout_s: float
) -> int:
    """The prompt tokens the server counts for a conversation whose last message is a tool's
    `result`, sent as the openai adapter sends it."""
    config = OpenAIAdapterConfig(
        OPENAI_MODEL, base_url, None, int(timeout_s * 1000), tool_results=tool_results
    )
    call = ToolCall("call_1", "lookup_order", '{"order_id": "A17"}')
    messages = [
        Message("system", "You are the order desk of ACME. Use the tools."),
        Message("user", "Where is my order A17?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", result, tool_call_id="call_1", tool_name="lookup_order"),
    ]
    body = OpenAIAdapter(config).request_body(messages, tools=ToolOffer((LOOKUP,), "none"))
    body.update(max_tokens=1, temperature=0)
    request = urllib.request.Request(
        f"{base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        answer = json.load(response)
    tokens = answer["usage"]["prompt_tokens"]
    assert isinstance(tokens, int)
    return tokens


def test_a_tool_result_reaches_the_model_only_as_a_user_message(
    tools_base_url: str, call_timeout_s: float
) -> None:
    short, long = "shipped", "shipped " * 50
    as_tool = [prompt_tokens(tools_base_url, r, "tool", call_timeout_s) for r in (short, long)]
    as_user = [prompt_tokens(tools_base_url, r, "user", call_timeout_s) for r in (short, long)]
    # The template drops the tool message: its content changes nothing in the prompt. (If this
    # fails, the server now renders tool messages: update docs/openai.md and docs/tools.md.)
    assert as_tool[0] == as_tool[1], as_tool
    # As a user message, the result is in the prompt: 49 more words, at least 49 more tokens.
    assert as_user[1] - as_user[0] >= 49, as_user
    assert as_user[0] > as_tool[0]


ORDER_DESK: dict[str, Any] = {
    "version": 1,
    "name": "e2e: ACME order desk with tools",
    "systemPrompt": "You are the order desk of ACME. Use the tools to answer.",
    "rules": [
        {
            "id": "look-orders-up",
            "instruction": "Always look an order up with lookup_order before answering about it.",
        },
        {"id": "never-refund", "instruction": "Never issue a refund."},
    ],
    "tools": [
        {
            "name": "lookup_order",
            "description": "Look an order up by its id",
            "parameters": LOOKUP_PARAMETERS,
            "results": [
                {
                    "when": {"order_id": {"matches": "^A\\d+$"}},
                    "result": {"status": "shipped", "eta": "Friday"},
                }
            ],
            "error": "no such order",
        },
        {
            "name": "refund",
            "description": "Refund an order",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
            "result": {"ok": True},
        },
    ],
    # llama-cpp-python ignores max_tokens under "auto": a forced call, then an answer ("none")
    "toolChoice": {"first": "lookup_order", "then": "none"},
    "maxToolRounds": 2,
    "scenarios": [
        {
            "id": "order-desk",
            "turns": ["Hi! I have a question about an order."],
            "probes": [
                {
                    "id": "where-is-my-order",
                    "rule": "look-orders-up",
                    "afterTurn": [0, 1],
                    "prompt": "Where is my order A17?",
                    "assertions": [
                        {"type": "calls", "tool": "lookup_order"},
                        {"type": "validCalls"},
                        {"type": "notCalls", "tool": "refund"},
                    ],
                }
            ],
        }
    ],
}


def test_a_tool_loop_on_a_real_model_reaches_a_verdict(
    tools_base_url: str, call_timeout_s: float, tmp_path: Path
) -> None:
    suite = dict(ORDER_DESK)
    suite["adapter"] = {
        "type": "openai",
        "model": OPENAI_MODEL,
        "baseUrl": tools_base_url,
        "timeoutMs": int(call_timeout_s * 1000),
        "options": {"temperature": 0, "seed": 42, "max_tokens": 48},
        "toolResults": "user",
    }
    done, report = run_suite(tmp_path, suite, call_timeout_s)
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.returncode in (0, 1), output
    found = probes(report)
    assert set(found) == {"where-is-my-order-after-0", "where-is-my-order-after-1"}
    rounds = 0
    for probe in found.values():
        assert probe["status"] in ("passed", "failed"), output
        tools = probe["tools"]
        rounds += tools["rounds"]
        first = tools["calls"][0]
        # the first round names lookup_order: the grammar makes the model call it (its
        # arguments may still be cut short by max_tokens, and then are not JSON)
        assert (first["round"], first["tool"]) == (1, "lookup_order"), tools
        if "problem" in first:
            assert first["outcome"] == "error"
        else:
            assert first["outcome"] in ("result", "error")  # the mock's answer, either way
            assert json.loads(first["arguments"])["order_id"]
        assert tools["rounds"] == 2  # the call, then an answer ("then": "none")
        if tools["ranOut"]:
            assert probe["status"] == "failed"
            assert any(a["type"] == "maxToolRounds" for a in probe["assertions"])
    # every round is a model call: the background turn's two rounds, then the probes'
    assert report["scenarios"][0]["modelCalls"] == 2 + rounds, output
    assert report["summary"]["modelCalls"] == report["scenarios"][0]["modelCalls"]
