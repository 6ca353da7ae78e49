"""The conversation: the messages a target is sent and answers with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


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
