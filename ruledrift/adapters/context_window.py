"""Context-window checks for the HTTP adapters: the error that says a prompt did not fit, and the
prompt-token check that catches a server which silently dropped the oldest messages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ruledrift.adapters.base import CallContext

_OVERFLOW_WORDS = re.compile(r"exceed|maximum|longer than|too long|too large", re.IGNORECASE)
_CONTEXT_WORDS = re.compile(r"context[ _-]?(length|size|window)", re.IGNORECASE)


def overflow_message(text: str, fix: str) -> str | None:
    """The message for an error that says the prompt did not fit the context window (llama.cpp's
    exceed_context_size_error, vLLM's and OpenAI's "maximum context length"), or None."""
    if _CONTEXT_WORDS.search(text) and _OVERFLOW_WORDS.search(text):
        return f"the conversation no longer fits the model's context window ({text}). {fix}"
    return None


@dataclass
class PromptGrowth:
    """Catches a server that silently dropped the oldest messages to fit its context window
    (Ollama does, unless `truncate: false` is honoured; so does Ollama's /v1). Within one
    scenario every call extends the conversation of the latest turn, so the prompt tokens the
    server reports must grow; if a call with more messages used no more tokens, messages were
    cut and the answer says nothing about drift."""

    _turns: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)

    def check(self, context: CallContext, messages: int, tokens: object) -> str | None:
        """A description of the cut, or None. Remembers turn calls (probes branch off them)."""
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            return None
        key = (context.suite, context.scenario)
        latest = self._turns.get(key)
        if latest is not None:
            turn, before_messages, before_tokens = latest
            if messages > before_messages and tokens <= before_tokens:
                call = (
                    f"turn {context.turn}" if context.kind == "turn" else f'probe "{context.probe}"'
                )
                return (
                    f'the server dropped messages of scenario "{context.scenario}" to fit its '
                    f"context window: {call} sent {messages} messages, but its prompt used "
                    f"{tokens} tokens, no more than the {before_messages} messages of turn "
                    f"{turn} ({before_tokens} tokens)"
                )
        if context.kind == "turn":
            self._turns[key] = (context.turn or 0, messages, tokens)
        return None
