"""How many model calls `--repeat auto` is expected to make, beside the most it can make.

Under the sequential design each probe runs until its verdict, so the calls of a run are not
known in advance; the cap (every probe running to it) is only the most. The expected number
follows from the design's exact stopping distribution (`operating_characteristic`), under a
stated assumption about the target: every probe passes each run with the same chance
`pass_rate`, independently of its other runs and of the other probes.

A scenario's run r asks only the probes still undecided after r − 1 runs, and plays the
background turns up to the deepest of them (none after it), so run r makes
max(afterTurn of the asked probes) + (number asked) calls. With n probes, the i-th at depth aᵢ,
and F(k) the chance that a probe has stopped within k runs:

    E[calls] = Σ_r [ Σ_{t ≥ 1} (1 − F(r − 1)^{k_t}) + n · (1 − F(r − 1)) ],

where k_t is the number of probes at depth t or deeper: turn t is played in run r unless every
one of those probes has already stopped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import accumulate

from ruledrift.stats.sequential import SequentialDesign, operating_characteristic

__all__ = ["expected_calls"]


def expected_calls(
    design: SequentialDesign,
    pass_rate: float,
    scenarios: Sequence[Sequence[int]],
    replayed: Sequence[int] = (),
) -> float:
    """The expected model calls of `scenarios` (each given as its probes' `afterTurn` depths)
    under `design`, every probe passing each run with chance `pass_rate`, independently.
    `replayed[i]`: the first turns of scenario i whose answers are recorded (no call; 0 when
    not given)."""
    stops = operating_characteristic(design, pass_rate).stops
    stopped = list(accumulate(stops))  # stopped[k]: the chance a probe stopped within k runs
    free = [*replayed, *[0] * (len(scenarios) - len(replayed))]
    return math.fsum(
        _scenario_calls(stopped[: design.cap], depths, skip)
        for depths, skip in zip(scenarios, free, strict=False)
    )


def _scenario_calls(stopped_before: Sequence[float], depths: Sequence[int], skip: int) -> float:
    """E[calls] of one scenario; `stopped_before[r - 1]` is F(r − 1) for run r = 1 … cap;
    turns 1 … `skip` make no call."""
    deepest = max(depths, default=0)
    played = range(skip + 1, deepest + 1)
    at_least = [sum(1 for depth in depths if depth >= turn) for turn in played]
    calls = []
    for done in stopped_before:
        turns = math.fsum(1 - done**count for count in at_least)
        calls.append(turns + len(depths) * (1 - done))
    return math.fsum(calls)
