#!/usr/bin/env python3
"""A tiny support agent for the `command` assertion example: it never promises a refund, and
says so in words that a keyword check would flag ("I can't promise a refund"). It speaks
RuleDrift's command protocol (docs/command-adapter.md). Standard library only."""

import json
import sys


def answer(messages: list[dict[str, str]]) -> str:
    question = messages[-1]["content"].lower()
    if "refund" in question:
        return (
            "I'm sorry about the delay. I can't promise a refund, but I have opened a case "
            "and the billing team will review it within two working days."
        )
    return "Thanks, I have noted that on your case."


def main() -> int:
    request = json.load(sys.stdin)
    json.dump({"content": answer(request["messages"])}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
