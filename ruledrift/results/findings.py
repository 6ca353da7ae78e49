"""What a finished run says beyond pass and fail, as pure functions of the result, so every
report shows the same findings:

- per rule, the story across depths: held at every depth, first broken after turn N (drift),
  broken from the start (never obeyed), not monotonic (broken at a shallow depth, kept at a
  deeper one), inconclusive (broken nowhere, left inconclusive somewhere) or not run; with its
  tag, the words a person reads for it (`STORY_TAGS`: never a verdict's word), and the verdict
  whose colour the tag wears (green only for a rule held at every depth it was probed at);
- per rule and depth, the verdict there (`depth_verdict`: any failure is failed), which every
  grid colours its cell by;
- warnings about the target (overflow protection on one check only, a server that ignores the
  model name);
- suspicious passes: a probe that passed on an answer that cannot show much: empty or only
  whitespace, cut by the token limit, or the very answer the model gave to a different message
  of the same scenario (another probe's prompt or a background turn): a model repeating one
  canned reply keeps every rule and tests nothing. The same answer to the same prompt at two
  depths is consistency, not a flag. Two more are read off the text: a refusal when the model
  also refused a background turn before the probe and no control of it passed (a model that
  refuses everything keeps every "never" rule), and an answer that is not fluent prose in the
  language it reads as (checks/fluent.not_fluent: gibberish, a salad of words).

A suspicious pass still counts as passed (the contract decides the verdict); it is flagged
everywhere the result is shown, never silently counted.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar

from ruledrift.checks.answers import refusal_language
from ruledrift.checks.fluent import not_fluent
from ruledrift.data import (
    Location,
    Message,
    ProbeResult,
    Rule,
    RunResult,
    ScenarioResult,
    SearchResult,
    Status,
    VerdictPolicy,
)
from ruledrift.run.verdicts import CORRELATION, GateOdds, gate_odds
from ruledrift.stats import PassRate, pass_rate

Story = Literal[
    "held", "drifted", "never-obeyed", "not-monotonic", "undecided", "vacuous", "not-run"
]
Flag = Literal["empty-answer", "cut-answer", "identical-answer", "refusal", "not-fluent"]

FLAG_TEXT: dict[Flag, str] = {
    "empty-answer": "the answer is empty or only whitespace",
    "cut-answer": "the answer was cut by the token limit",
    "identical-answer": "the same answer as to a different message of this scenario (canned?)",
    "refusal": (
        "a refusal, and the model also refused a background turn before it (refuses everything?);"
        " a control probe shows whether it still helps"
    ),
    "not-fluent": "the answer is not fluent prose (gibberish or a salad of words)",
}
TEXT_FLAGS: tuple[Flag, ...] = ("refusal", "not-fluent")  # read off the answer's text
_CUT_REASONS = frozenset({"length"})  # Ollama's done_reason, OpenAI's finish_reason


# What a person reads for each story: words of their own, so that no tag reads as a verdict
# (a probe's `passed`/`failed`/`inconclusive`, the sequential test's `holds`/`drifted`), and the
# verdict whose colour the tag wears: green only for a rule held at every depth it was probed at.
STORY_TAGS: dict[Story, str] = {
    "held": "held",
    "drifted": "broken later",
    "never-obeyed": "never obeyed",
    "not-monotonic": "not monotonic",
    "undecided": "inconclusive",
    "vacuous": "vacuous",
    "not-run": "not run",
}
INCOMPLETE = "incomplete"  # the tag of a rule held where decided, with only errors elsewhere
_STORY_VERDICTS: dict[Story, Status] = {
    "held": "passed",
    "drifted": "failed",
    "never-obeyed": "failed",
    "not-monotonic": "failed",
    "undecided": "inconclusive",
    "vacuous": "vacuous",
    "not-run": "error",
}


@dataclass(frozen=True)
class RuleStory:
    """One rule across the depths (`afterTurn` values) its probes ran at. Each depth is in at
    most one of the lists: broken (a probe failed), vacuous (none failed, one passed only
    vacuously: its control failed), undecided (none failed or vacuous, one inconclusive), held
    (one passed, none failed, vacuous or inconclusive), error (every probe there errored)."""

    rule: Rule
    story: Story
    held_at: tuple[int, ...]  # depths where probes of the rule passed and none failed
    broken_at: tuple[int, ...]  # depths where a probe of the rule failed
    undecided_at: tuple[int, ...] = ()  # depths left inconclusive (`--repeat auto`), none failed
    cut_at: tuple[int, ...] = ()  # depths with runs that --max-calls did not allow
    error_at: tuple[int, ...] = ()  # depths where every probe of the rule errored
    vacuous_at: tuple[int, ...] = ()  # depths where a pass was vacuous (its control failed)

    @property
    def tag(self) -> str:
        """The story in a word or two (`broken later`), for a pill or a label."""
        if self.story == "held" and self.error_at:
            return INCOMPLETE
        return STORY_TAGS[self.story]

    @property
    def verdict(self) -> Status:
        """The verdict whose colour the tag wears: `passed` only for a rule held at every depth
        it was probed at; `failed` for one broken anywhere; `inconclusive` for one that is
        neither; `vacuous` for one not broken but passed only vacuously somewhere; `error` for
        one held where decided with only errors elsewhere, or not run."""
        if self.story == "held" and self.error_at:
            return "error"
        return _STORY_VERDICTS[self.story]

    @property
    def line(self) -> str:
        """The one-line finding, e.g. `first broken after turn 8 (kept at 0, 4; broken at 8)`,
        then the depths left inconclusive and those where every probe errored, when there are;
        or what `--max-calls` cut short."""
        if self.cut_at:
            return _cut_line(self)
        return self._finding() + self._rest()

    def _finding(self) -> str:
        held, broken = _depths(self.held_at), _depths(self.broken_at)
        if self.story == "held" and not self.error_at:
            return f"held at every depth ({held})"
        if self.story == "held":
            return f"held at {held}"
        if self.story == "drifted":
            first = self.broken_at[0]
            return f"first broken after turn {first} (kept at {held}; broken at {broken})"
        if self.story == "never-obeyed" and self._unseen_before_broken():
            return f"never seen kept: broken at {broken}"
        if self.story == "never-obeyed":
            return f"broken from the start: never obeyed (broken at {broken})"
        if self.story == "undecided" and not self.held_at:
            return f"inconclusive at every depth ({_depths(self.undecided_at)}): none was decided"
        if self.story == "undecided":
            return f"held at {held}; inconclusive at {_depths(self.undecided_at)}"
        if self.story == "not-monotonic":
            return f"not monotonic: broken at {broken}, kept at {held}"
        if self.story == "vacuous":
            lead = f"held at {held}; " if self.held_at else ""
            return f"{lead}vacuous at {_depths(self.vacuous_at)} (its control failed)"
        return "not run: every probe of this rule errored"

    def _rest(self) -> str:
        """The depths the finding leaves out: inconclusive ones (but for an undecided rule, whose
        finding names them), and those where every probe errored (but for a rule not run)."""
        rest = []
        if self.vacuous_at and self.story != "vacuous":
            rest.append(f"vacuous at {_depths(self.vacuous_at)} (its control failed)")
        if self.undecided_at and self.story != "undecided":
            rest.append(f"inconclusive at {_depths(self.undecided_at)}")
        if self.error_at and self.story != "not-run":
            rest.append(f"error at {_depths(self.error_at)}")
        return "".join(f"; {words}" for words in rest)

    def _unseen_before_broken(self) -> bool:
        """Whether a depth shallower than the first broken one was left inconclusive or passed
        vacuously (so the rule was never seen kept, rather than seen broken from the start)."""
        return any(depth < self.broken_at[0] for depth in self.undecided_at + self.vacuous_at)


def _depths(depths: tuple[int, ...]) -> str:
    return ", ".join(map(str, depths))


def rule_stories(result: RunResult) -> tuple[RuleStory, ...]:
    """Every rule that has probes in the run, in the suite's order."""
    by_rule: dict[str, list[ProbeResult]] = {}
    for probe in result.probes:
        by_rule.setdefault(probe.probe.rule.id, []).append(probe)
    return tuple(
        _story(rule, by_rule[rule.id]) for rule in result.suite.rules if rule.id in by_rule
    )


def depth_verdict(statuses: Collection[Status]) -> Status:
    """A rule's verdict at one depth, from its probes' there: `failed` if any failed (any
    failure is a broken rule), else `vacuous` if a pass was vacuous (its control failed), else
    `inconclusive` if any was, else `error` if any errored (the evidence is incomplete), else
    `passed`. The grids colour each cell by it."""
    for status in ("failed", "vacuous", "inconclusive", "error"):
        if status in statuses:
            return status
    return "passed"


def _story(rule: Rule, probes: list[ProbeResult]) -> RuleStory:
    depths: dict[int, set[Status]] = {}
    for probe in probes:
        depths.setdefault(probe.probe.after_turn, set()).add(probe.status)
    ordered = sorted(depths)
    broken = tuple(d for d in ordered if "failed" in depths[d])
    vacuous = tuple(d for d in ordered if depth_verdict(depths[d]) == "vacuous")
    undecided = tuple(d for d in ordered if depth_verdict(depths[d]) == "inconclusive")
    held = tuple(
        d for d in ordered if "passed" in depths[d] and d not in broken + vacuous + undecided
    )
    errored = tuple(d for d in ordered if depths[d] == {"error"})
    seen = sorted(held + broken + vacuous + undecided)
    story: Story
    if not seen:
        story = "not-run"
    elif not broken:
        story = "vacuous" if vacuous else "undecided" if undecided else "held"
    elif any(h > broken[0] for h in held):
        story = "not-monotonic"
    elif not any(h < broken[0] for h in held):
        story = "never-obeyed"
    else:
        story = "drifted"
    found = RuleStory(rule, story, held, broken, undecided, error_at=errored, vacuous_at=vacuous)
    return _with_cuts(found, probes)


# --- runs that --max-calls did not allow -------------------------------------------------------

# run/runner.CallBudget's error for a call it did not start (`background turn 3 failed: ` may lead)
_NOT_MADE = "not run: the budget of "


def runs_not_made(probe: ProbeResult) -> int:
    """The runs of `probe` that were never made because `--max-calls` was used up: not runs."""
    return sum(1 for run in probe.runs if run.status == "error" and _NOT_MADE in (run.error or ""))


def _with_cuts(story: RuleStory, probes: list[ProbeResult]) -> RuleStory:
    """The story with the depths `--max-calls` cut short; broken at the first finished depth
    is not "from the start" when a shallower depth was cut."""
    cut = tuple(sorted({p.probe.after_turn for p in probes if runs_not_made(p)}))
    if not cut:
        return story
    kind = story.story
    if kind == "never-obeyed" and cut[0] < story.broken_at[0]:
        kind = "undecided"
    return dataclasses.replace(story, story=kind, cut_at=cut)


def _cut_line(story: RuleStory) -> str:
    """`cut by --max-calls: runs not made at 0, 4; broken at 8`: what the finished depths
    showed, without a story the missing runs could change."""
    found = [
        f"{what} at {', '.join(map(str, depths))}"
        for what, depths in (
            ("kept", story.held_at),
            ("broken", story.broken_at),
            ("inconclusive", story.undecided_at),
            ("vacuous", story.vacuous_at),
        )
        if depths
    ]
    shown = "; ".join(found) or "no depth finished its runs (the drift grid counts those made)"
    return f"cut by --max-calls: runs not made at {', '.join(map(str, story.cut_at))}; {shown}"


def probe_flags(scenario: ScenarioResult, result: ProbeResult) -> tuple[Flag, ...]:
    """What makes a passed probe's pass suspicious (nothing for a probe that did not pass)."""
    response = result.response
    if result.status != "passed" or response is None:
        return ()
    flags: list[Flag] = []
    if not response.text.strip():
        flags.append("empty-answer")
    if _was_cut(response.metadata):
        flags.append("cut-answer")
    if response.text.strip() and _answers_elsewhere(scenario, result):
        flags.append("identical-answer")
    if result.text_flags is not None:  # as a loaded report recorded them
        flags.extend(f for f in TEXT_FLAGS if f in result.text_flags)
        return tuple(flags)
    if _refuses_everything(scenario, result):
        flags.append("refusal")
    if not_fluent(response.text):
        flags.append("not-fluent")
    return tuple(flags)


def _refuses_everything(scenario: ScenarioResult, result: ProbeResult) -> bool:
    """Whether the pass is a refusal that shows nothing: the model also refused a background
    turn of the scenario before the probe's depth (in its first run; a recorded answer that a
    `replay` history keeps is not the model's), and no control of the probe passed. A
    refusal alone is what a "never" rule asks for; a model that refuses small talk too keeps
    every such rule by having stopped working."""
    assert result.response is not None
    if result.control is not None and result.control.status == "passed":
        return False
    if refusal_language(result.response.text) is None:
        return False
    first = _first_refused_turn(scenario)
    return first is not None and first <= result.probe.after_turn


def _first_refused_turn(scenario: ScenarioResult) -> int | None:
    """The first background turn (from 1) whose answer the model refused, if any."""
    return _per_scenario(_refused, scenario, _find_first_refused_turn)


def _find_first_refused_turn(scenario: ScenarioResult) -> int | None:
    answers = [answer.content for _, answer in answered_turns(scenario.transcript)]
    history = scenario.scenario.history
    recorded = history.turns if history is not None and history.mode == "replay" else 0
    turns = range(recorded + 1, len(answers) + 1)  # a replayed answer is not the target's
    return next((t for t in turns if refusal_language(answers[t - 1]) is not None), None)


def suspicious(result: RunResult) -> list[tuple[ScenarioResult, ProbeResult, tuple[Flag, ...]]]:
    """Every flagged pass of the run, in config order."""
    found = []
    for scenario in result.scenarios:
        for probe in scenario.probes:
            flags = probe_flags(scenario, probe)
            if flags:
                found.append((scenario, probe, flags))
    return found


def _answers_elsewhere(scenario: ScenarioResult, result: ProbeResult) -> bool:
    """Whether the model gave this very answer to a different message of the scenario."""
    assert result.response is not None
    prompts = _prompts_by_answer(scenario).get(result.response.text, ())
    return any(prompt != result.probe.prompt for prompt in prompts)


# What flagging reads once per scenario (renderers ask for every probe of it), so flagging every
# probe of a scenario is linear in its size: the last few scenarios' readings, by identity.
_index: list[tuple[ScenarioResult, dict[str, set[str]]]] = []
_refused: list[tuple[ScenarioResult, int | None]] = []
_T = TypeVar("_T")


def _per_scenario(
    cache: list[tuple[ScenarioResult, _T]],
    scenario: ScenarioResult,
    read: Callable[[ScenarioResult], _T],
) -> _T:
    """`read(scenario)`, kept in `cache` for the last four scenarios asked about."""
    for known, found in cache:
        if known is scenario:
            return found
    found = read(scenario)
    cache.insert(0, (scenario, found))
    del cache[4:]
    return found


def _prompts_by_answer(scenario: ScenarioResult) -> dict[str, set[str]]:
    """Each answer of the scenario (probes and background turns) and the messages it answered."""
    return _per_scenario(_index, scenario, _index_prompts_by_answer)


def _index_prompts_by_answer(scenario: ScenarioResult) -> dict[str, set[str]]:
    index: dict[str, set[str]] = {}
    for other in scenario.probes:
        if other.response is not None:
            index.setdefault(other.response.text, set()).add(other.probe.prompt)
    for asked, answer in answered_turns(scenario.transcript):
        index.setdefault(answer.content, set()).add(asked.content)
    return index


def answered_turns(transcript: Sequence[Message]) -> Iterator[tuple[Message, Message]]:
    """Each background turn's final answer (an assistant message that asks for no tool call),
    with the message it answers: the user's (or system's) message before it, across the tool
    exchange in between (the answers that asked for calls, the calls' results)."""
    asked: Message | None = None
    for message in transcript:
        if message.role in ("user", "system"):
            asked = message
        elif message.role == "assistant" and not message.tool_calls and asked is not None:
            yield asked, message


def _was_cut(metadata: Mapping[str, object]) -> bool:
    reason = metadata.get("doneReason", metadata.get("finishReason"))
    return metadata.get("cut") is True or reason in _CUT_REASONS


def target_warnings(result: RunResult) -> list[str]:
    """What the target reported that weakens the run's evidence: overflow protection that
    rests on one check only (old Ollama), or a server that ignores the model name asked for."""
    details = result.target.details
    warnings = []
    protection = details.get("overflowProtection")
    if isinstance(protection, str) and protection:
        warnings.append(f"context overflow protection: {protection}")
    listed = details.get("listedModel")
    if isinstance(listed, str) and listed and listed != result.target.model:
        warnings.append(
            f"the server lists only the model {listed!r} and answers whatever model is asked "
            f"for ({result.target.model!r}): the answers came from {listed!r}"
        )
    return warnings


# --- searched breaking depths ---------------------------------------------------------------

_STOPPED = {
    "inconclusive": "inconclusive at",
    "incomplete": "could not be decided at",  # errors, or --max-calls
    "unfinished": "not finished at",  # interrupted
}


def search_line(search: SearchResult) -> str:
    """Where a search ended, in words: `holds through turn 23, drifted from turn 24`, or
    `between 16 and 24: inconclusive at 20`; then the prompt tokens there and the depths it
    decided."""
    return f"{search_finding(search)}; {_search_tokens(search)}; asked at {_depths(search.points)}"


def search_finding(search: SearchResult) -> str:
    held, drifted = search.held_through, search.drifted_from
    if search.outcome == "found":
        return f"holds through turn {held}, drifted from turn {drifted}"
    if search.outcome == "held":
        return f"holds through turn {search.high}: no break between {search.low} and {search.high}"
    if search.outcome == "broken-at-low" and search.low == 0:
        return "drifted at turn 0 already, before any turn: not kept at any depth searched"
    if search.outcome == "broken-at-low":
        return f"drifted from turn {search.low} already, the lower bound: search lower"
    if search.outcome == "not-monotonic":
        return (
            f"not monotonic: drifted at turn {search.low} but held at turn {search.high}; the "
            "search assumes drift does not come and go, so it stopped"
        )
    stopped = f"{_STOPPED[search.outcome]} {search.stopped_at}"
    if held is not None and drifted is not None:
        return f"between {held} and {drifted}: {stopped}"
    if held is not None:
        return f"holds through turn {held}; {stopped}"
    if drifted is not None:
        return f"drifted from turn {drifted}; {stopped}"
    return f"{stopped}: no depth decided"


def _search_tokens(search: SearchResult) -> str:
    """The prompt tokens at the interval's ends, as the server counted them."""
    ends = [
        (what, depth, tokens)
        for what, depth, tokens in (
            ("held at", search.held_through, search.tokens_held),
            ("drifted at", search.drifted_from, search.tokens_drifted),
        )
        if depth is not None
    ]
    if all(tokens is None for _, _, tokens in ends):
        return "prompt tokens not reported"
    counted = [
        f"{what} turn {depth}: {'not reported' if tokens is None else f'{tokens:,}'}"
        for what, depth, tokens in ends
    ]
    return "prompt tokens " + ", ".join(counted)


def search_lines(result: RunResult) -> list[tuple[str, str, SearchResult, str]]:
    """(scenario id, search id, the search, its line) for every search of the run, in order."""
    return [
        (scenario.scenario.id, search.id, search, search_line(search))
        for scenario in result.scenarios
        for search in scenario.searches
    ]


# --- the drift curve -------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftCell:
    """One rule at one depth (`afterTurn`), over every probe there and every run of each."""

    after_turn: int
    rate: PassRate  # conversations (scenario runs) there, and those where every probe passed
    status: Status  # the rule's verdict there (`depth_verdict`): any failure makes it failed
    identical: bool = False  # every probe there gave byte-identical answers in every run


@dataclass(frozen=True)
class RuleDrift:
    """One rule's pass rate by depth: the drift curve."""

    rule: Rule
    cells: tuple[DriftCell, ...]  # by depth, shallowest first

    @property
    def first_broken(self) -> int | None:
        """The shallowest depth whose verdict is failed, if any."""
        return next((c.after_turn for c in self.cells if c.status == "failed"), None)

    @property
    def deepest(self) -> DriftCell:
        return self.cells[-1]


def drift_curve(result: RunResult) -> tuple[RuleDrift, ...]:
    """Every rule with probes that ran, in the suite's order, with a cell per depth.

    A cell counts conversations, not probe runs: the probes of a rule at one depth of one
    scenario share that run's conversation, so their answers are not independent of each other.
    Each run of each scenario that answered there counts once, passing when every probe of the
    rule it asked there passed; the interval is then a Wilson interval over independent
    conversations. With one probe per rule, depth and scenario, as most suites have, a
    conversation is a probe run. A cell whose probes all gave byte-identical answers in every
    run is `identical`: its interval, which assumes independent runs, does not hold."""
    cells: dict[tuple[str, int], list[tuple[str, ProbeResult]]] = {}
    for scenario in result.scenarios:
        for probe in scenario.probes:
            key = (probe.probe.rule.id, probe.probe.after_turn)
            cells.setdefault(key, []).append((scenario.scenario.id, probe))
    curves = []
    for rule in result.suite.rules:
        depths = sorted(turn for rule_id, turn in cells if rule_id == rule.id)
        row = []
        for depth in depths:
            members = cells[(rule.id, depth)]
            kept = _conversations(members)
            if not kept:
                continue
            status = depth_verdict([p.status for _, p in members])
            rate = pass_rate(sum(kept.values()), len(kept))
            same = all(p.identical_runs for _, p in members)
            row.append(DriftCell(depth, rate, status, same))
        if row:
            curves.append(RuleDrift(rule, tuple(row)))
    return tuple(curves)


def _conversations(members: list[tuple[str, ProbeResult]]) -> dict[tuple[str, int], bool]:
    """Each (scenario, run) that answered one of these probes: whether every answer passed."""
    kept: dict[tuple[str, int], bool] = {}
    for scenario, probe in members:
        for run in probe.all_runs:
            if run.status != "error":
                key = (scenario, run.run)
                kept[key] = kept.get(key, True) and run.status == "passed"
    return kept


def by_paraphrase(result: ProbeResult) -> list[tuple[int, int, int]]:
    """(paraphrase index, passes, runs) for a probe with several wordings and repeats."""
    if len(result.probe.paraphrases) < 2 or not result.runs:
        return []
    counts: dict[int, list[int]] = {}
    for run in result.runs:
        if run.status != "error":
            tally = counts.setdefault(run.prompt, [0, 0])
            tally[0] += run.status == "passed"
            tally[1] += 1
    return [(index, passes, runs) for index, (passes, runs) in sorted(counts.items())]


# --- what the repeat policy promises -----------------------------------------------------------


def share_words(value: float) -> str:
    """A chance as words: one decimal, never a false 0% or 100%."""
    if value >= 0.9995:
        return "more than 99.9%"
    if 0 < value < 0.0005:
        return "less than 0.1%"
    return f"{value:.1%}"


def policy_odds(result: RunResult) -> GateOdds | None:
    """What the run's repeat policy promises its suite (None for a single run, and for a saved
    report's policy that no design fits)."""
    return attempt_odds(result) if result.policy.repeated else None


def attempt_odds(result: RunResult) -> GateOdds | None:
    """What the run's policy promises its suite, a single run included (None for a saved
    report's policy that no design fits)."""
    policy = result.policy
    try:
        return gate_odds(policy, max(policy.probes or len(result.probes), 1))
    except (ValueError, OverflowError, TypeError):
        return None


def gate_words(odds: GateOdds, policy: VerdictPolicy, *, lead: bool = True) -> str:
    """The policy and what it does to a suite of `odds.probes` probes, in one sentence; for
    fixed repeats outside the bounds, when `--repeat auto` is the better gate. Without `lead`
    the sentence starts at "for N probe(s)" (after words that name the policy)."""
    holds, drifted = f"{odds.holds_at:.0%}", f"{odds.drifted_at:.0%}"
    red = f"a suite whose rules all hold at {holds} goes red {share_words(odds.red_when_holding)}"
    if policy.repeat == "auto":
        cap = f", at most {odds.cap} runs a probe" if lead else ""
        catch = "is named drifted" if odds.decides_at_cap else "fails the run"
        words = (
            f"{'--repeat auto ' if lead else ''}for {odds.probes} probe(s){cap}: {red} of the "
            f"time, and a probe at {drifted} {catch} {share_words(odds.caught)} of the time"
        )
        bounds = f"at most {odds.alpha:.0%} and at least {1 - odds.beta:.0%}"
        if odds.within_bounds:
            return f"{words} ({bounds}, as promised)"
        return f"{words}; the cap RuleDrift derives ({odds.needed_cap} runs) keeps these {bounds}"
    rule = (
        "every run must pass"
        if policy.min_pass_rate is None
        else f"at least {policy.min_pass_rate:.0%} of runs must pass"
    )
    named = f"--repeat {policy.repeat} ({rule}) " if lead else ""
    words = (
        f"{named}for {odds.probes} probe(s): {red} of the time, and a probe at {drifted} is "
        f"caught {share_words(odds.caught)} of the time"
    )
    if odds.within_bounds:
        return words
    return (
        f"{words}; --repeat auto keeps these at most {odds.alpha:.0%} and at least "
        f"{1 - odds.beta:.0%} (docs/statistics.md)"
    )


def policy_promise(result: RunResult) -> tuple[str, bool] | None:
    """`gate_words` for the run as a sentence after one that names the policy, and whether the
    policy keeps its bounds (None for a single run, or a saved report's policy that no design
    fits)."""
    odds = policy_odds(result)
    if odds is None:
        return None
    words = gate_words(odds, result.policy, lead=False)
    return f"{words[0].upper()}{words[1:]}.", odds.within_bounds


def policy_cap(result: RunResult) -> str:
    """ ", at most N runs" for `--repeat auto` (the cap in force), else ""."""
    odds = policy_odds(result)
    cap = odds.cap if odds is not None else result.policy.max_repeat
    return f", at most {cap} runs" if cap is not None else ""


# --- are the runs independent? ----------------------------------------------------------------

IDENTICAL_SHARE = 0.5  # of a run's answers repeating another run's word for word: a warning


def identical_answers(result: RunResult) -> float | None:
    """The share of runs whose answer (its SHA-256) equals another run's of the same probe, over
    the probes with at least two answered runs (None: no such probe)."""
    repeated = answered = 0
    for probe in result.probes:
        hashes = [run.response.sha256 for run in probe.runs if run.response is not None]
        if len(hashes) < 2:
            continue
        counts: dict[str, int] = {}
        for digest in hashes:
            counts[digest] = counts.get(digest, 0) + 1
        repeated += sum(n for n in counts.values() if n > 1)
        answered += len(hashes)
    return repeated / answered if answered else None


def _unseeded(result: RunResult) -> bool:
    """Whether no answered run records a seed sent to the target."""
    runs = [run for probe in result.probes for run in probe.runs if run.response is not None]
    return bool(runs) and all(run.seed is None for run in runs)


@dataclass(frozen=True)
class Caveat:
    """A reason the runs of a repeated suite may not be independent samples: `id`, a fixed word
    a program can test (`CAVEAT_IDS`), and `text`, the reason in words."""

    id: str
    text: str


CAVEAT_IDS = ("temperature-0", "no-seed", "identical-runs", "identical-answers")


def identical_probes(result: RunResult) -> list[ProbeResult]:
    """The probes whose runs were all byte-identical (`ProbeResult.identical_runs`)."""
    return [probe for probe in result.probes if probe.identical_runs]


def independence_caveats(result: RunResult) -> list[Caveat]:
    """With repeats: why the runs are unlikely to be independent samples (temperature 0, no
    seed, probes whose runs were identical, answers repeated word for word). Empty for a single
    run or runs that look independent."""
    if not result.policy.repeated:
        return []
    caveats = []
    if result.temperature == 0:
        caveats.append(
            Caveat(
                "temperature-0",
                "the suite sets temperature 0, so the runs measure only the server's own "
                "nondeterminism (batching, caches), not the model's sampling",
            )
        )
    if _unseeded(result):
        caveats.append(
            Caveat(
                "no-seed",
                "no seed reached the target, so nothing tells its runs apart but the server's "
                "own sampling (set options.seed: run r then sends seed + r)",
            )
        )
    same = identical_probes(result)
    if same:
        caveats.append(
            Caveat(
                "identical-runs",
                f"{len(same)} of {len(result.probes)} probe(s) gave byte-identical answers in "
                "every run: their repeats add no information, and no error bound holds for them",
            )
        )
    share = identical_answers(result)
    if share is not None and share >= IDENTICAL_SHARE and len(same) < len(result.probes):
        caveats.append(
            Caveat(
                "identical-answers",
                f"{share:.0%} of the runs gave an answer identical, word for word, to another "
                "run of the same probe",
            )
        )
    return caveats


def independence_warnings(result: RunResult) -> list[str]:
    """With repeats: the caveats (`independence_caveats`) in words, and what a correlation
    between the runs does to the suite's false alarms. Empty for a single run or runs that look
    independent."""
    odds = policy_odds(result)
    caveats = independence_caveats(result)
    if odds is None or not caveats:
        return []
    cost = (
        f"the error rates assume independent runs: were the runs of a probe correlated by "
        f"{CORRELATION:g}, a suite whose rules all hold at {odds.holds_at:.0%} would go red "
        f"{share_words(odds.red_when_correlated)} of the time instead of "
        f"{share_words(odds.red_when_holding)} (docs/statistics.md)"
    )
    return [f"the runs may not be independent: {caveat.text}" for caveat in caveats] + [cost]


def failed_location(result: ProbeResult) -> Location | None:
    """Where the first failed assertion of a failed probe that knows its place stands in the
    suite (a tool assertion's line and column), for an annotation to point at instead of the
    probe; None: point at the probe."""
    if result.status != "failed":
        return None
    return next((a.location for a in result.failed_assertions if a.location is not None), None)
