"""The conversation: the messages a target is sent and answers with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Message:
    """One message. `recorded`: it comes from a scenario's recorded history as it was, not
    from this run (a user message of the history, or, in replay mode, a recorded answer)."""

    role: Literal["system", "user", "assistant"]
    content: str
    recorded: bool = False


@dataclass(frozen=True)
class AnswerContext:
    """Where a probe's answer was given, for the checks that look beyond its text (`command`):
    the ids, the depth, the run, the wording asked, and every message sent for it (the system
    message, the background turns, the probe's prompt last)."""

    suite: str
    scenario: str
    probe: str
    rule: str
    after_turn: int
    run: int
    prompt: str
    messages: tuple[Message, ...]
