"""Sharding a suite across CI jobs (`--shard K/N`): a deterministic, disjoint, complete and
balanced split of the selected scenarios, by model calls (repeats included).

Greedy longest-first: scenarios from the most calls to the fewest (config order breaks ties)
each go to the shard with the fewest calls so far (the lowest number breaks ties). So no shard
has more than the largest scenario's calls above another, every job computes the same split
from the same suite, and shards hold their scenarios in config order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ruledrift.data import Scenario
from ruledrift.errors import UsageError


@dataclass(frozen=True)
class Shard:
    """Shard `index` (from 1) of `total`."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


MAX_SHARDS = 1000


def parse_shard(text: str, environ: Mapping[str, str]) -> Shard:
    """`K/N`, or `auto` for GitLab's `parallel:` (CI_NODE_INDEX of CI_NODE_TOTAL)."""
    if text == "auto":
        index, total = environ.get("CI_NODE_INDEX", ""), environ.get("CI_NODE_TOTAL", "")
        if not (index and total):
            raise UsageError(
                "--shard auto: CI_NODE_INDEX and CI_NODE_TOTAL are not set (GitLab sets them "
                "for a job with parallel:); give --shard K/N"
            )
        text, where = f"{index}/{total}", "CI_NODE_INDEX/CI_NODE_TOTAL"
    else:
        where = "--shard"
    index_text, slash, total_text = text.partition("/")
    numbers = (index_text, total_text)
    if not slash or not all(n.isdigit() and len(n) <= 4 for n in numbers):
        raise UsageError(f"{where}: expected K/N, e.g. 2/4, got {text[:20]!r}")
    shard = Shard(int(index_text), int(total_text))
    if not 1 <= shard.index <= shard.total <= MAX_SHARDS:
        raise UsageError(f"{where}: expected 1 <= K <= N <= {MAX_SHARDS}, got {text!r}")
    return shard


def assign(scenarios: Sequence[Scenario], total: int, runs: int = 1) -> list[list[Scenario]]:
    """Every shard's scenarios, in config order; `runs`: the runs of each scenario."""
    loads = [0] * total
    chosen: list[list[int]] = [[] for _ in range(total)]
    heaviest_first = sorted(range(len(scenarios)), key=lambda i: (-scenarios[i].model_calls, i))
    for position in heaviest_first:
        lightest = min(range(total), key=lambda s: (loads[s], s))
        chosen[lightest].append(position)
        loads[lightest] += scenarios[position].model_calls * runs
    return [[scenarios[i] for i in sorted(positions)] for positions in chosen]


def shard_of(scenarios: Sequence[Scenario], shard: Shard, runs: int = 1) -> tuple[Scenario, ...]:
    """The scenarios shard `shard` runs (possibly none: a matrix wider than the suite)."""
    return tuple(assign(scenarios, shard.total, runs)[shard.index - 1])
