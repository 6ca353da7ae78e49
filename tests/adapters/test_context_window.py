"""The context-window checks (ruledrift/adapters/context_window.py): overflow errors in words, and
the prompt-token check that catches silently dropped messages without false alarms."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ruledrift.adapters.base import CallContext
from ruledrift.adapters.context_window import PromptGrowth, kept_answer_floor, overflow_message
from ruledrift.data import Location, Tool, ToolOffer


def turn(n: int, scenario: str = "chat") -> CallContext:
    return CallContext("suite", scenario, "turn", turn=n)


def probe(after: int, scenario: str = "chat") -> CallContext:
    return CallContext("suite", scenario, "probe", probe="late", after_turn=after)


def test_a_prompt_that_did_not_grow_is_a_drop() -> None:
    growth = PromptGrowth()
    assert growth.check(turn(1), 2, 100) is None
    cut = growth.check(turn(2), 4, 100)
    assert cut == (
        'the server dropped messages of scenario "chat" to fit its context window: turn 2 sent '
        "4 messages, but its prompt used 100 tokens, no more than the 2 messages of turn 1 "
        "(100 tokens)"
    )


def test_a_drop_that_still_grows_is_caught_when_the_answer_is_known() -> None:
    """Turn 5 used 171 tokens and answered in 40; turn 6 must hold both again. A server that
    dropped the first messages to fit reported 191: more than turn 5, less than it must hold."""
    growth = PromptGrowth()
    assert growth.check(turn(5), 10, 171, 40) is None
    cut = growth.check(turn(6), 12, 191)
    assert cut is not None
    assert "turn 6 sent 12 messages, but its prompt used 191 tokens, fewer than the 199" in cut
    assert "from turn 5 (a prompt of 171 tokens, 10 messages, and an answer of 40 tokens)" in cut
    # without the answer's size, the same numbers pass: the weaker check cannot see it
    blind = PromptGrowth()
    assert blind.check(turn(5), 10, 171) is None
    assert blind.check(turn(6), 12, 191) is None


def test_a_probe_is_checked_against_the_turn_it_branches_from_and_never_remembered() -> None:
    growth = PromptGrowth()
    assert growth.check(turn(1), 2, 50, 20) is None
    assert growth.check(probe(1), 4, 90, 500) is None  # a probe's answer is not kept
    assert growth.check(turn(2), 4, 80, 20) is None  # checked against turn 1, not the probe
    cut = growth.check(probe(2), 6, 89)  # turn 2 (80 tokens) and 10 of its answer: 90
    assert cut is not None
    assert cut.startswith(
        'the server dropped messages of scenario "chat" to fit its context '
        'window: probe "late" sent 6 messages'
    )


@pytest.mark.parametrize("answer", [0, 1, 8, 9, 30, 120, 1000])
def test_the_answer_is_allowed_tokens_it_need_not_bring_back(answer: int) -> None:
    """A stop string, the end token, trimmed whitespace and a different tokenization of the
    same text: up to 8 tokens and a tenth of the answer may be missing from the next prompt."""
    floor = kept_answer_floor(answer)
    assert floor == max(0, answer - 8 - answer // 10)
    growth = PromptGrowth()
    assert growth.check(turn(1), 2, 100, answer) is None
    least = 100 + max(1, floor)
    assert growth.check(turn(2), 4, least) is None
    assert PromptGrowth().check(turn(1), 2, 100, answer) is None
    again = PromptGrowth()
    again.check(turn(1), 2, 100, answer)
    assert again.check(turn(2), 4, least - 1) is not None


def test_measured_growth_of_a_real_model_raises_no_alarm() -> None:
    """Prompt and answer tokens SmolLM2-135M reported for ten turns (llama.cpp, no thinking):
    each prompt held the previous one, its answer and 13 to 20 tokens more."""
    measured = [(32, 120), (172, 120), (307, 37), (362, 41), (421, 32), (470, 87), (574, 71)]
    growth = PromptGrowth()
    for n, (prompt, answer) in enumerate(measured, start=1):
        assert growth.check(turn(n), 2 * n, prompt, answer) is None


def test_scenarios_are_checked_apart() -> None:
    growth = PromptGrowth()
    assert growth.check(turn(1, "a"), 2, 500, 10) is None
    assert growth.check(turn(1, "b"), 2, 50, 10) is None
    assert growth.check(turn(2, "b"), 4, 70) is None


@pytest.mark.parametrize("tokens", [None, "120", True, -1, 1.5])
def test_no_count_or_a_count_of_the_wrong_type_checks_nothing(tokens: object) -> None:
    growth = PromptGrowth()
    assert growth.check(turn(1), 2, 100) is None
    assert growth.check(turn(2), 4, tokens) is None
    assert growth.check(turn(3), 6, 101) is None  # still compared with turn 1


@pytest.mark.parametrize("answer", ["40", True, -3, 2.5])
def test_an_answer_count_of_the_wrong_type_means_the_weaker_check(answer: object) -> None:
    growth = PromptGrowth()
    assert growth.check(turn(1), 2, 100, answer) is None
    assert growth.check(turn(2), 4, 101) is None


@pytest.mark.parametrize(
    "text",
    [
        "request (8889 tokens) exceeds the available context size (8192 tokens), try increasing "
        "it (exceed_context_size_error)",
        "the input length exceeds the context length",
        "input length (131 tokens) exceeds the model's maximum context length (120 tokens)",
        "the prompt is longer than the context length currently available to the model; shorten "
        "the prompt",
        "This model's maximum context length is 4096 tokens.",
    ],
)
def test_overflow_errors_are_recognised(text: str) -> None:
    said = overflow_message(text, "Raise it.")
    assert said == f"the conversation no longer fits the model's context window ({text}). Raise it."


def test_other_errors_are_not_overflow() -> None:
    assert overflow_message('option "num_ctx" must be of type integer', "fix") is None
    assert overflow_message("model runner has unexpectedly stopped", "fix") is None


def test_calls_with_another_tool_choice_are_not_compared() -> None:
    """llama-cpp-python leaves the tools' definitions out of the prompt under "none": a turn's
    later round, sent with "none", uses fewer tokens than its first with nothing dropped (seen
    with SmolLM2: 318 tokens, then 221 with two more messages)."""
    offer = ToolOffer((Tool("lookup", "", "{}", Location(1, 1)),), "lookup")
    growth = PromptGrowth()
    first = replace(turn(1), tools=offer)
    assert growth.check(first, 2, 318) is None
    later = replace(turn(1), tools=replace(offer, choice="none"), round=2)
    assert growth.check(later, 4, 221) is None
    # within one choice, the check still holds
    assert growth.check(replace(turn(2), tools=offer), 6, 300) is not None
