"""The adapter seam: one small Protocol, its data, and `AdapterError` as its only exception."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from ruledrift.data import AdapterConfig, Message, TargetInfo, ToolCall, ToolOffer
from ruledrift.errors import AdapterError, TargetConfigError
from ruledrift.text import repair_surrogates

__all__ = [
    "Adapter",
    "AdapterError",
    "AdapterType",
    "CallContext",
    "Completion",
    "TargetConfigError",
    "answer_metadata",
    "reported_count",
    "reported_text",
    "retarget_http",
    "seed_for_run",
]

C = TypeVar("C", bound=AdapterConfig)


@dataclass(frozen=True)
class CallContext:
    """Which call this is, for adapters that want to know (the command protocol passes it on)."""

    suite: str
    scenario: str
    kind: Literal["turn", "probe"]
    turn: int | None = None  # kind "turn": counts from 1
    probe: str | None = None  # kind "probe"
    after_turn: int | None = None  # kind "probe"
    run: int = 0  # which run of the scenario (`--repeat`): adapters add it to a configured seed
    # Called by an adapter before it sends the call's request again (on a new connection, after
    # HTTP 503): every send is a model call. It raises AdapterError when --max-calls is used up.
    on_resend: Callable[[], None] = field(default=lambda: None, compare=False, repr=False)
    seed: int | None = None  # this run's seed (the run's seed + run), for agents that sample
    control: bool = False  # kind "probe": the probe's control prompt, not the probe's own
    # The tools to send with this call and its tool_choice (None: the suite offers no tools).
    tools: ToolOffer | None = None
    round: int = 1  # the model call of this turn: 1, then one more after each round of calls


@dataclass(frozen=True)
class Completion:
    """The target's answer. `metadata` holds what the target reported about it (token counts,
    `cut: true` when the answer was cut by a length limit, ...). It is copied into every report,
    also without `--include-responses`, so it must never hold answer or thinking text."""

    content: str
    metadata: Mapping[str, object] = field(default_factory=dict)
    # The calls the answer asks for (`content` may then be empty): RuleDrift answers each from
    # its mock and calls again, until an answer asks for none or the rounds run out.
    tool_calls: tuple[ToolCall, ...] = ()
    # An agent that runs its own tools (command protocol 2, report mode) reports the messages it
    # added before its answer (assistant messages with `tool_calls`, `tool` messages): RuleDrift
    # keeps them in the conversation and records their calls, and runs no mock.
    exchange: tuple[Message, ...] = ()


class Adapter(Protocol):
    """A target. `open`, `complete` and `aclose` raise only `AdapterError` (with a message that
    names the cause and the fix); `complete` is called concurrently for different scenarios.
    An adapter's constructor (the factory in `registry.ADAPTERS`) may raise `UsageError` for a
    setting that makes a run impossible before any call (exit 2), e.g. an unset API key
    variable."""

    async def open(self, *, tools: bool = False) -> None:
        """Check that the target can be reached (a preflight: nothing is asked of the model).
        Raises AdapterError naming what is wrong and how to fix it. `tools`: the suite offers
        tools (its calls carry `context.tools`); a target that cannot take them raises
        TargetConfigError (exit 2) here rather than failing every call. RuleDrift passes
        `tools` only when it is true, so an adapter written before tools existed still runs the
        suites without them."""

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion: ...

    def target_info(self) -> TargetInfo: ...

    async def aclose(self) -> None: ...


REPORTED_TEXTS = frozenset({"finish_reason", "done_reason"})  # why the answer ended: words
REPORTED_TEXT_CHARS = 200  # a word or a name a server reported, as reports keep it
MAX_COUNT = 2**53 - 1  # larger integers lose precision in JavaScript's JSON readers


def answer_metadata(
    reported: Mapping[str, Any],
    names: Mapping[str, str],
    *,
    cut: bool,
    thinking: object,
    scrub: Callable[[str], str] | None = None,
) -> dict[str, object]:
    """A Completion's metadata: what the server reported (`names` maps its keys to ours), `cut`
    when a length limit cut the answer, and the length of any thinking text, never the text
    (metadata goes into every report).

    A reported value is kept only as data of its field's type: the fields in REPORTED_TEXTS are
    short strings (`reported_text`, scrubbed with `scrub`), every other field is a count
    (`reported_count`); a value of another type or size is dropped."""
    metadata: dict[str, object] = {}
    for theirs, ours in names.items():
        value = reported.get(theirs)
        kept = reported_text(value, scrub) if theirs in REPORTED_TEXTS else reported_count(value)
        if kept is not None:
            metadata[ours] = kept
    if isinstance(thinking, str) and thinking:
        metadata["thinkingChars"] = len(thinking)
    if cut:
        metadata["cut"] = True
    return metadata


def reported_count(value: object) -> int | None:
    """A count a server reported (tokens, nanoseconds): an integer from 0 to MAX_COUNT, never a
    boolean, a float or a string of digits; else None."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def reported_text(value: object, scrub: Callable[[str], str] | None = None) -> str | None:
    """A word or a name a server reported (a finish reason, the served model): a string of at
    most REPORTED_TEXT_CHARS characters, with `scrub` applied (an adapter's secrets) and lone
    surrogates repaired; else None (a longer string is dropped, not cut: no half of anything)."""
    if not isinstance(value, str) or len(value) > REPORTED_TEXT_CHARS:
        return None
    return repair_surrogates(scrub(value) if scrub else value)


def _no_problems(settings: Mapping[str, Any]) -> Iterable[tuple[str, str]]:
    return ()


@dataclass(frozen=True)
class AdapterType(Generic[C]):
    """Everything about one adapter type, defined in its own module and listed in
    `registry.ADAPTERS`; the schema's branch for the type is the only other place it appears.

    - `parse(settings, suite_dir)`: the suite's `adapter` object, already valid against the
      schema, as the type's frozen config (relative paths resolve from `suite_dir`);
    - `create(config)`: the adapter (may raise `UsageError`, see `Adapter`);
    - `problems(settings)`: what the schema cannot express, as (JSON pointer below `/adapter`,
      message) pairs, reported with the schema's errors; the settings may be invalid too;
    - `retarget(config, model, base_url)`: the config with `--model`/`--base-url` applied
      (`None`: the type has neither, and the options are refused).
    """

    parse: Callable[[Mapping[str, Any], Path], C]
    create: Callable[[C], Adapter]
    problems: Callable[[Mapping[str, Any]], Iterable[tuple[str, str]]] = _no_problems
    retarget: Callable[[C, str | None, str | None], C] | None = None


def retarget_http(config: C, model: str | None, base_url: str | None) -> C:
    """`retarget` for a config with `model` and `base_url` fields (a URL already checked)."""
    changes = {"model": model, "base_url": base_url.rstrip("/") if base_url else None}
    given = {name: value for name, value in changes.items() if value}
    return cast(C, dataclasses.replace(cast(Any, config), **given))


def seed_for_run(settings: Mapping[str, object], run: int) -> int | None:
    """The seed run `run` sends when `settings` set an integer `seed`: seed + run, so repeats
    are independent samples and each can be replayed; None when no seed is set."""
    seed = settings.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        return seed + run
    return None
