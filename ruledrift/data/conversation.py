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
