"""Searching a probe's breaking depth (`"afterTurn": {"search": [low, high]}`): which depths to
decide next, and where the search ended, as pure functions of the verdicts decided so far. The
runner only plays what `next_depths` asks; see docs/statistics.md#searching-the-breaking-depth.

Both ends are decided first. A rule that holds at `low` and drifted at `high` is then bisected:
the middle depth of the interval left is decided, and the half where the change happens is
kept, until the interval is one turn wide ("holds through turn 23, drifted from turn 24"). A
point left inconclusive, or that could not be decided, stops the search there ("between 16 and
24: inconclusive at 20").

The search assumes that drift does not come and go: a rule kept at one depth is kept at every
shallower one (monotonic). Its own points cannot contradict that, since each lies inside the
interval the earlier ones left, except its ends: drifted at `low` and held at `high` is
reported `not-monotonic` and ends the search. Drift that comes and goes between the points it
decides is invisible to it.

Its error: the search ends on the wrong interval only if one of the points on its path was
decided wrongly, so the chance of a wrong interval is at most the sum of the points' error
chances on the path the true verdicts take (`search_error_bound`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ruledrift.data import DepthSearch, ProbeResult, SearchOutcome, SearchResult, Status
from ruledrift.stats import SequentialDesign, operating_characteristic

# the answer metadata where a server reports the prompt's tokens (OpenAI-compatible, Ollama)
TOKEN_KEYS = ("promptTokens", "promptEvalCount")

_STOPS: dict[Status, SearchOutcome] = {"inconclusive": "inconclusive", "error": "incomplete"}


@dataclass(frozen=True)
class Walk:
    """The search replayed over the verdicts decided so far: the depths to decide next (`ask`;
    empty once it ended), and where it stands or ended."""

    ask: tuple[int, ...]
    outcome: SearchOutcome | None = None  # None: still asking
    held_through: int | None = None
    drifted_from: int | None = None
    stopped_at: int | None = None


def walk(low: int, high: int, verdicts: Mapping[int, Status]) -> Walk:
    """Where the search between `low` and `high` stands, given the verdicts of the depths
    decided so far (`passed`: holds, `failed`: drifted, `inconclusive`, `error`). A point whose
    pass was vacuous (its control failed) is not kept: it counts as drifted, as its pairs do."""
    verdicts = {depth: "failed" if v == "vacuous" else v for depth, v in verdicts.items()}
    at_low, at_high = verdicts.get(low), verdicts.get(high)
    held = low if at_low == "passed" else None
    drifted = high if at_high == "failed" else None
    if at_low is None or at_high is None:
        return Walk(tuple(d for d in (low, high) if d not in verdicts), None, held, drifted)
    for depth, verdict in ((low, at_low), (high, at_high)):
        if verdict in _STOPS:
            return Walk((), _STOPS[verdict], held, drifted, depth)
    if at_low == "failed":
        outcome: SearchOutcome = "not-monotonic" if at_high == "passed" else "broken-at-low"
        return Walk((), outcome, high if at_high == "passed" else None, low)
    if at_high == "passed":
        return Walk((), "held", high, None)
    return _bisect(low, high, verdicts)


def _bisect(held: int, drifted: int, verdicts: Mapping[int, Status]) -> Walk:
    while drifted - held > 1:
        middle = (held + drifted) // 2
        verdict = verdicts.get(middle)
        if verdict is None:
            return Walk((middle,), None, held, drifted)
        if verdict in _STOPS:
            return Walk((), _STOPS[verdict], held, drifted, middle)
        if verdict == "passed":
            held = middle
        else:
            drifted = middle
    return Walk((), "found", held, drifted)


def next_depths(search: DepthSearch, verdicts: Mapping[int, Status]) -> tuple[int, ...]:
    """The depths the search asks next (both ends first, then one middle at a time); empty
    once it ended."""
    return walk(search.low, search.high, verdicts).ask


def search_result(
    search: DepthSearch, decided: Mapping[int, Status], points: Mapping[int, ProbeResult]
) -> SearchResult:
    """Where the search ended: `decided` holds the verdicts of the points that were decided,
    `points` the result of every depth it asked (an asked point left undecided, by an
    interruption, makes it `unfinished` there)."""
    found = walk(search.low, search.high, decided)
    outcome, stopped = found.outcome, found.stopped_at
    if outcome is None:
        outcome, stopped = "unfinished", found.ask[0]
    return SearchResult(
        id=search.id,
        rule=search.probe.rule.id,
        low=search.low,
        high=search.high,
        outcome=outcome,
        held_through=found.held_through,
        drifted_from=found.drifted_from,
        stopped_at=stopped,
        points=tuple(sorted(points)),
        tokens_held=_tokens(points.get(found.held_through))
        if found.held_through is not None
        else None,
        tokens_drifted=(
            _tokens(points.get(found.drifted_from)) if found.drifted_from is not None else None
        ),
    )


def prompt_tokens(metadata: Mapping[str, object]) -> int | None:
    """The prompt tokens a server reported for an answer (None: not reported)."""
    for key in TOKEN_KEYS:
        value = metadata.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _tokens(result: ProbeResult | None) -> int | None:
    """The fewest prompt tokens reported for an answer of the point's runs (None: none
    reported)."""
    if result is None:
        return None
    counts = [
        count
        for run in result.all_runs
        if run.response is not None and (count := prompt_tokens(run.response.metadata)) is not None
    ]
    return min(counts, default=None)


# --- its error, computed -----------------------------------------------------------------------


def search_error_bound(
    design: SequentialDesign, low: int, high: int, breaks_at: int, pass_rate: Callable[[int], float]
) -> float:
    """An upper bound on the chance that the search ends on a wrong interval, for a rule that
    holds (its truth) before `breaks_at` and has drifted from it, with the pass rate
    `pass_rate(depth)` at each depth: the sum, over the points of the path the true verdicts
    take, of each point's chance of any other verdict (the sequential test's exact operating
    characteristic). A wrong interval needs at least one wrong point on that path."""
    truth: dict[int, Status] = {}
    total = 0.0
    while (step := walk(low, high, truth)).ask:
        for depth in step.ask:
            holds = depth < breaks_at
            odds = operating_characteristic(design, pass_rate(depth))
            total += 1 - (odds.holds if holds else odds.drifted)
            truth[depth] = "passed" if holds else "failed"
    return min(total, 1.0)
