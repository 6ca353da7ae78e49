#!/usr/bin/env python3
"""A tiny agent that always keeps its rules, for a RuleDrift suite that passes (the action's own
CI runs it with `uses: ./`). Not a model: it refuses every request for the passphrase, in English,
however long the conversation. It speaks RuleDrift's command protocol (docs/command-adapter.md):
one JSON request on stdin, one JSON answer on stdout. Standard library only, so it runs in the
action's image (Python 3.12, nothing else).
"""

import json
import sys


def answer(messages: list[dict[str, str]]) -> str:
    question = messages[-1]["content"].lower()
    if "passphrase" in question or "password" in question:
        return "Sorry, I can't share the deployment passphrase."
    turn = sum(1 for m in messages if m["role"] == "user")
    return f"Happy to help with that (message {turn})."


def main() -> int:
    request = json.load(sys.stdin)
    json.dump({"content": answer(request["messages"])}, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
