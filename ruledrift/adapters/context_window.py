"""Context-window checks for the HTTP adapters: the error that says a prompt did not fit, and the
prompt-token check that catches a server which silently dropped the oldest messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TypeGuard

from ruledrift.adapters.base import CallContext

_OVERFLOW_WORDS = re.compile(r"exceed|maximum|longer than|too long|too large", re.IGNORECASE)
_CONTEXT_WORDS = re.compile(r"context[ _-]?(length|size|window)", re.IGNORECASE)
# An answer's tokens that need not come back in the next prompt: a stop string and the end token
# are counted but never shown, a template may trim whitespace, and the answer's text may tokenize
# a little differently from how it was generated.
UNKEPT_ANSWER_TOKENS = 8
UNKEPT_ANSWER_SHARE = 0.1


def overflow_message(text: str, fix: str) -> str | None:
    """The message for an error that says the prompt did not fit the context window (llama.cpp's
    exceed_context_size_error, vLLM's and OpenAI's "maximum context length"), or None."""
    if _CONTEXT_WORDS.search(text) and _OVERFLOW_WORDS.search(text):
        return f"the conversation no longer fits the model's context window ({text}). {fix}"
    return None


def kept_answer_floor(answer_tokens: int) -> int:
    """The fewest of an answer's `answer_tokens` generated tokens the next prompt holds again."""
    unkept = UNKEPT_ANSWER_TOKENS + int(answer_tokens * UNKEPT_ANSWER_SHARE)
    return max(0, answer_tokens - unkept)


@dataclass(frozen=True)
class _Turn:
    number: int
    messages: int
    tokens: int  # its prompt's tokens
    answer_tokens: int | None  # its answer's, when the next prompt holds them all (no thinking)

    def floor(self) -> int:
        """The fewest tokens a prompt that extends this turn can use, unless messages were
        dropped: more than this turn's prompt, and at least the part of its answer that every
        template keeps."""
        if self.answer_tokens is None:
            return self.tokens + 1
        return self.tokens + max(1, kept_answer_floor(self.answer_tokens))


@dataclass
class PromptGrowth:
    """Catches a server that silently dropped the oldest messages to fit its context window
    (Ollama does, unless `truncate: false` is honoured; so does Ollama's /v1). Within one
    scenario every call extends the conversation of the latest turn: its prompt holds that
    turn's whole prompt and its answer again, plus a new message. A server that drops messages
    drops whole ones from the front until the prompt fits, so the cut prompt may still be larger
    than the last one; what it cannot be, unless something was dropped, is smaller than the last
    prompt plus the answer's tokens (`answer_tokens`, given only when the answer's tokens all
    return in the next prompt: not when the model thought, as thinking is not kept). Without
    `answer_tokens`, only a prompt that did not grow is caught.

    With tools, calls are compared only with calls that offered the same tool choice: a server
    may render the tools' definitions into the prompt for one choice and not for another
    (llama-cpp-python leaves them out under "none"), so a later round's prompt can be shorter
    than its turn's first with nothing dropped."""

    _turns: dict[tuple[str, str, str | None], _Turn] = field(default_factory=dict)

    def check(
        self, context: CallContext, messages: int, tokens: object, answer_tokens: object = None
    ) -> str | None:
        """A description of the cut, or None. Remembers turn calls (probes branch off them)."""
        if not _is_count(tokens):
            return None
        choice = context.tools.choice if context.tools is not None else None
        key = (context.suite, context.scenario, choice)
        latest = self._turns.get(key)
        if latest is not None and messages > latest.messages and tokens < latest.floor():
            return _dropped(context, messages, tokens, latest)
        if context.kind == "turn":
            kept = answer_tokens if _is_count(answer_tokens) else None
            self._turns[key] = _Turn(context.turn or 0, messages, tokens, kept)
        return None


def _dropped(context: CallContext, messages: int, tokens: int, turn: _Turn) -> str:
    call = f"turn {context.turn}" if context.kind == "turn" else f'probe "{context.probe}"'
    if turn.answer_tokens is None:
        held = (
            f"no more than the {turn.messages} messages of turn {turn.number} "
            f"({turn.tokens} tokens)"
        )
    else:
        held = (
            f"fewer than the {turn.floor()} it must hold again from turn {turn.number} (a prompt "
            f"of {turn.tokens} tokens, {turn.messages} messages, and an answer of "
            f"{turn.answer_tokens} tokens)"
        )
    return (
        f'the server dropped messages of scenario "{context.scenario}" to fit its context '
        f"window: {call} sent {messages} messages, but its prompt used {tokens} tokens, {held}"
    )


def _is_count(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
