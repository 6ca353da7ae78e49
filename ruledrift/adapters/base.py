"""The adapter seam: one small Protocol, its data, and `AdapterError` as its only exception."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ruledrift.errors import AdapterError
from ruledrift.model import Message, TargetInfo

__all__ = ["Adapter", "AdapterError", "CallContext", "Completion", "answer_metadata"]


@dataclass(frozen=True)
class CallContext:
    """Which call this is, for adapters that want to know (the command protocol passes it on)."""

    suite: str
    scenario: str
    kind: Literal["turn", "probe"]
    turn: int | None = None  # kind "turn": counts from 1
    probe: str | None = None  # kind "probe"
    after_turn: int | None = None  # kind "probe"


@dataclass(frozen=True)
class Completion:
    """The target's answer. `metadata` holds what the target reported about it (token counts,
    `cut: true` when the answer was cut by a length limit, ...). It is copied into every report,
    also without `--include-responses`, so it must never hold answer or thinking text."""

    content: str
    metadata: Mapping[str, object] = field(default_factory=dict)


class Adapter(Protocol):
    """A target. `open`, `complete` and `aclose` raise only `AdapterError` (with a message that
    names the cause and the fix); `complete` is called concurrently for different scenarios.
    An adapter's constructor (the factory in `registry.ADAPTERS`) may raise `UsageError` for a
    setting that makes a run impossible before any call (exit 2), e.g. an unset API key
    variable."""

    async def open(self) -> None:
        """Check that the target can be reached (a preflight: nothing is asked of the model).
        Raises AdapterError naming what is wrong and how to fix it."""

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion: ...

    def target_info(self) -> TargetInfo: ...

    async def aclose(self) -> None: ...


def answer_metadata(
    reported: Mapping[str, Any], names: Mapping[str, str], *, cut: bool, thinking: object
) -> dict[str, object]:
    """A Completion's metadata: what the server reported (`names` maps its keys to ours), `cut`
    when a length limit cut the answer, and the length of any thinking text, never the text
    (metadata goes into every report)."""
    metadata = {
        ours: reported[theirs] for theirs, ours in names.items() if reported.get(theirs) is not None
    }
    if isinstance(thinking, str) and thinking:
        metadata["thinkingChars"] = len(thinking)
    if cut:
        metadata["cut"] = True
    return metadata
