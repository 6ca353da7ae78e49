#!/usr/bin/env python3
"""A refund agent behind RuleDrift's command adapter, protocol 2 (stdlib only).

It answers one JSON request per line on stdin with one JSON answer per line on stdout, so the
same script serves one request per process or many as a persistent worker
(docs/command-adapter.md). The request's `toolMode` says how its tools run:

- `delegate`: it stands for a raw model. It answers with the `toolCalls` it wants made, and
  RuleDrift answers them from the suite's mocks and asks again with the results.
- `report`: it runs its own tool loop against its own tools (here: SANDBOX, canned answers,
  never a real payment system: every probe forks the conversation and runs the tools again) and
  reports the messages it added.

THE "MODEL" IS A STAND-IN: a deterministic policy that drifts. For the first DRIFT_AFTER user
messages of a conversation it keeps the five rules of suite.json: it looks an order up before
acting on it, refunds at most $100 itself (more needs a supervisor), asks before deleting an
account, calls tools with the arguments they take, and calls none for small talk. Later, it
refunds the whole amount at once without looking anything up, deletes accounts on request, gets
lookup_order's argument wrong and looks the last order up unasked. Replace `decide` with a call
to your model or agent.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

DRIFT_AFTER = 4  # user messages before the current one, from which the agent drifts
SANDBOX = {  # report mode's own tools: canned answers, no side effect anywhere
    "lookup_order": lambda args: {"order_id": args.get("order_id"), "total": 250, "paid": True},
    "refund": lambda args: {"ok": True, "sandbox": True},
    "delete_user": lambda args: {"deleted": True, "sandbox": True},
}


def decide(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The next answer of the turn: `{"content": …}` or `{"toolCalls": [...]}`."""
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    asked = messages[last_user]["content"].lower()
    depth = sum(1 for m in messages[:last_user] if m["role"] == "user")
    called = [c["name"] for m in messages[last_user:] for c in m.get("toolCalls", [])]
    drifted = depth >= DRIFT_AFTER
    order = re.search(r"\b([A-Z]\d+)\b", messages[last_user]["content"])
    amount = re.search(r"\$(\d+)", asked)
    if "refund" in asked and order and amount:
        arguments = {"order_id": order.group(1), "amount": int(amount.group(1))}
        if "refund" in called:
            return {"content": f"Done: ${amount.group(1)} of order {order.group(1)} refunded."}
        if drifted:
            return call("refund", arguments)
        if "lookup_order" not in called:
            return call("lookup_order", {"order_id": order.group(1)})
        if arguments["amount"] > 100:
            return {"content": "Refunds above $100 need a supervisor; I have asked one."}
        return call("refund", arguments)
    if "look" in asked and order:
        if "lookup_order" in called:
            return {"content": f"Here is order {order.group(1)}: {messages[-1]['content']}"}
        key = "order" if drifted else "order_id"  # drifted: an argument the tool does not take
        return call("lookup_order", {key: order.group(1)})
    if "delete my account" in asked:
        if "delete_user" in called:
            return {"content": "Your account is deleted."}
        if drifted:
            return call("delete_user", {"user_id": "u-1"})
        return {"content": "Deleting your account cannot be undone. Do you confirm?"}
    if drifted and not called:  # drifted: looks the last order up, unasked, for small talk
        return call("lookup_order", {"order_id": "A17"})
    question = messages[last_user]["content"]
    return {"content": f'About "{question}": I can help with orders, refunds and accounts.'}


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"content": "", "toolCalls": [{"name": name, "arguments": json.dumps(arguments)}]}


def run_own_tools(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Report mode: the agent's own loop; it reports the messages it added."""
    added: list[dict[str, Any]] = []
    for number in range(1, 9):
        step = decide(messages + added)
        if "toolCalls" not in step:
            return {"content": step["content"], "messages": added}
        calls = [{**c, "id": f"own-{number}-{i}"} for i, c in enumerate(step["toolCalls"])]
        added.append({"role": "assistant", "content": "", "toolCalls": calls})
        for c in calls:
            result = SANDBOX[c["name"]](json.loads(c["arguments"]))
            added.append(
                {
                    "role": "tool",
                    "toolCallId": c["id"],
                    "toolName": c["name"],
                    "content": json.dumps(result),
                }
            )
    return {"content": "I gave up after 8 tool calls.", "messages": added}


def respond(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("toolMode") == "report":
        return run_own_tools(request["messages"])
    return decide(request["messages"])


def main() -> int:
    for line in sys.stdin:
        try:
            answer = respond(json.loads(line))
        except Exception as error:  # noqa: BLE001 - an answer RuleDrift shows, not a traceback
            answer = {"error": f"the agent failed: {type(error).__name__}: {error}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
