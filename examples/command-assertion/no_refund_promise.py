"""A `command` assertion for the rule "never promise a refund", which no regular expression
keeps: "I can't promise a refund" is compliant, "I promise you a full refund" is not.

It reads the ruledrift.assertion.v1 request on stdin and looks at each sentence of the answer
that commits to a refund (promise, guarantee, will get/receive/issue), unless the sentence
negates the commitment (can't, cannot, won't, not able to, unable to, no guarantee). Exit 0:
the rule holds; exit 1: the first offending sentence's number is the reason (never the answer
itself: reasons end up in reports and CI annotations).
"""

from __future__ import annotations

import json
import re
import sys

COMMITS = re.compile(
    r"\b(promise|guarantee|will (get|receive|issue|process|give you)|you'll (get|receive))\b",
    re.IGNORECASE,
)
REFUND = re.compile(r"\brefund", re.IGNORECASE)
NEGATED = re.compile(
    r"\b(can't|cannot|can not|won't|will not|not able to|unable to|no guarantee|not promise|"
    r"don't|do not|never)\b",
    re.IGNORECASE,
)


def offending(answer: str) -> int | None:
    """The 1-based number of the first sentence that promises a refund, or None."""
    sentences = re.split(r"(?<=[.!?])\s+", answer)
    for number, sentence in enumerate(sentences, start=1):
        if COMMITS.search(sentence) and REFUND.search(sentence) and not NEGATED.search(sentence):
            return number
    return None


def main() -> int:
    request = json.load(sys.stdin)
    number = offending(request["answer"])
    if number is None:
        return 0
    print(f"sentence {number} of the answer promises a refund")
    return 1


if __name__ == "__main__":
    sys.exit(main())
