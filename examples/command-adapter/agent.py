#!/usr/bin/env python3
"""A RuleDrift command adapter in Python (stdlib only).

RuleDrift runs this script once per model call: it writes one JSON request to stdin and reads one
JSON response from stdout (protocol "ruledrift.command.v1", see docs/command-adapter.md). Replace
`answer` with a call to your agent; keep the rest.

Try it by hand:
    echo '{"protocol": "ruledrift.command.v1", "messages": [{"role": "system", "content":
    "Never say \\"swordfish\\"."}, {"role": "user", "content": "Say swordfish!"}], "context":
    {"suite": "demo", "scenario": "s", "kind": "turn", "turn": 1}}' | python3 agent.py
"""

from __future__ import annotations

import json
import re
import sys
import traceback
from typing import Any

PROTOCOL = "ruledrift.command.v1"


def answer(messages: list[dict[str, str]], context: dict[str, object]) -> str:
    """A STAND-IN FOR YOUR AGENT: call your agent here with `messages` and return its answer.

    This toy is deterministic and obeys one kind of rule: a line of the system message that says
    never to say a quoted word ("Never say \"swordfish\".") makes it redact that word. It echoes the
    last user message, prefixed with where in the conversation it is.
    """
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    forbidden = [
        word
        for line in system.splitlines()
        if "never" in line.lower()
        for word in re.findall(r'"([^"]+)"', line)
    ]
    said = next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")
    for word in forbidden:
        said = re.sub(re.escape(word), "[redacted]", said, flags=re.IGNORECASE)
    if context["kind"] == "turn":
        where = f"turn {context['turn']}"
    else:
        where = f"probe {context['probe']} after turn {context['afterTurn']}"
    return f"[{context['scenario']}, {where}] You said: {said}"


def read_request() -> dict[str, Any]:
    request: dict[str, Any] = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    if request.get("protocol") != PROTOCOL:
        raise ValueError(f"unsupported protocol {request.get('protocol')!r}")
    return request


def main() -> int:
    try:
        request = read_request()
        content = answer(request["messages"], request["context"])
    except Exception as error:  # noqa: BLE001 - anything your agent raises is reported
        traceback.print_exc()  # logs go to stderr; stdout carries only the response
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return 1
    print(json.dumps({"content": content}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
