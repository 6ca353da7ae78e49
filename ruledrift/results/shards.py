"""Sharding a suite across jobs (`--shard K/N`): a deterministic, disjoint, complete and
balanced split of the selected scenarios, by model calls (repeats included) or, with
`--shard-balance REPORT`, by the times a previous report measured.

Greedy longest-first: scenarios from the heaviest to the lightest (config order breaks ties)
each go to the shard with the least load so far (then the fewest scenarios, then the lowest
number). So no shard has more than the heaviest scenario above another, every job computes the
same split from the same inputs, and shards hold their scenarios in config order.

`--shard auto` reads K and N from the environment of the runner: see `AUTO_ORDER`.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from ruledrift.data import RunResult, Scenario, ShardSource
from ruledrift.errors import UsageError


@dataclass(frozen=True)
class Shard:
    """Shard `index` (from 1) of `total`, and where that came from."""

    index: int
    total: int
    source: ShardSource = "flag"

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


MAX_SHARDS = 1000
_WHOLE = re.compile(r"[0-9]{1,9}")  # ASCII digits only: int() would take other scripts' too


# --- K/N from the flag or the environment ----------------------------------------------------


def parse_shard(text: str, environ: Mapping[str, str]) -> Shard:
    """`K/N` (K from 1), or `auto`: the shard the runner's environment names (`AUTO_ORDER`)."""
    if text == "auto":
        return shard_from_environment(environ)
    index_text, slash, total_text = text.partition("/")
    numbers = (index_text, total_text)
    if not slash or not all(n.isascii() and n.isdigit() and len(n) <= 4 for n in numbers):
        raise UsageError(f"--shard: expected K/N, e.g. 2/4, got {text[:20]!r}")
    shard = Shard(int(index_text), int(total_text))
    if shard.index == 0 and shard.total > 0:
        raise UsageError(
            f"--shard: K counts from 1 (1/{shard.total} to {shard.total}/{shard.total}), got "
            f"{text!r}; for an index from 0, such as GitHub's strategy.job-index, set "
            "RULEDRIFT_SHARD_INDEX and RULEDRIFT_SHARD_TOTAL and give --shard auto"
        )
    if not 1 <= shard.index <= shard.total <= MAX_SHARDS:
        raise UsageError(f"--shard: expected 1 <= K <= N <= {MAX_SHARDS}, got {text!r}")
    return shard


_SLURM = ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT")
# What a shard from each source was read from (for messages and the docs).
SOURCE_VARIABLES: dict[ShardSource, str] = {
    "flag": "--shard",
    "ruledrift": "RULEDRIFT_SHARD_INDEX, RULEDRIFT_SHARD_TOTAL",
    "kubernetes": "JOB_COMPLETION_INDEX, RULEDRIFT_SHARD_TOTAL",
    "slurm": ", ".join(_SLURM),
    "buildkite": "BUILDKITE_PARALLEL_JOB, BUILDKITE_PARALLEL_JOB_COUNT",
    "gitlab": "CI_NODE_INDEX, CI_NODE_TOTAL",
}


def _set(environ: Mapping[str, str], name: str) -> bool:
    return environ.get(name, "") != ""


def _whole(environ: Mapping[str, str], name: str) -> int:
    text = environ[name]
    if not _WHOLE.fullmatch(text):
        raise UsageError(f"--shard auto: {name}: expected a whole number, got {text[:20]!r}")
    return int(text)


def _missing(environ: Mapping[str, str], system: str, names: Sequence[str]) -> None:
    """Some but not all of `names` set: an error naming what is missing."""
    given = [n for n in names if _set(environ, n)]
    absent = [n for n in names if not _set(environ, n)]
    if given and absent:
        raise UsageError(
            f"--shard auto: {' and '.join(given)} {'is' if len(given) == 1 else 'are'} set "
            f"({system}) but {' and '.join(absent)} {'is' if len(absent) == 1 else 'are'} not"
        )


def _shard(first: int, index_name: str, index: int, total_name: str, total: int) -> Shard:
    """Shard (index - first + 1) of total, both checked, each message naming its variable."""
    if not 1 <= total <= MAX_SHARDS:
        raise UsageError(f"--shard auto: {total_name}: expected 1 to {MAX_SHARDS}, got {total}")
    if not first <= index < first + total:
        raise UsageError(
            f"--shard auto: {index_name}: expected {first} to {first + total - 1} "
            f"({total_name} is {total}), got {index}"
        )
    return Shard(index - first + 1, total)


def _ruledrift(environ: Mapping[str, str]) -> Shard | None:
    if not _set(environ, "RULEDRIFT_SHARD_INDEX"):
        return None
    _missing(environ, "the generic pair", ("RULEDRIFT_SHARD_INDEX", "RULEDRIFT_SHARD_TOTAL"))
    index = _whole(environ, "RULEDRIFT_SHARD_INDEX")
    total = _whole(environ, "RULEDRIFT_SHARD_TOTAL")
    return _shard(0, "RULEDRIFT_SHARD_INDEX", index, "RULEDRIFT_SHARD_TOTAL", total)


def _kubernetes(environ: Mapping[str, str]) -> Shard | None:
    if not _set(environ, "JOB_COMPLETION_INDEX"):
        if _set(environ, "RULEDRIFT_SHARD_TOTAL") and not _set(environ, "RULEDRIFT_SHARD_INDEX"):
            raise UsageError(
                "--shard auto: RULEDRIFT_SHARD_TOTAL is set but neither RULEDRIFT_SHARD_INDEX "
                "nor JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's) is"
            )
        return None
    if not _set(environ, "RULEDRIFT_SHARD_TOTAL"):
        raise UsageError(
            "--shard auto: JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but "
            "RULEDRIFT_SHARD_TOTAL is not: Kubernetes does not export the completion count, so "
            "set RULEDRIFT_SHARD_TOTAL to the Job's completions"
        )
    index = _whole(environ, "JOB_COMPLETION_INDEX")
    total = _whole(environ, "RULEDRIFT_SHARD_TOTAL")
    return _shard(0, "JOB_COMPLETION_INDEX", index, "RULEDRIFT_SHARD_TOTAL", total)


def _slurm(environ: Mapping[str, str]) -> Shard | None:
    _missing(environ, "a SLURM job array", _SLURM)
    if not _set(environ, _SLURM[0]):
        return None
    step = environ.get("SLURM_ARRAY_TASK_STEP", "1") or "1"
    if step != "1":
        raise UsageError(
            f"--shard auto: SLURM_ARRAY_TASK_STEP is {step[:20]!r}: an array with a step "
            "(--array=0-6:2) leaves gaps between its task ids; give --array=0-N (step 1)"
        )
    task, low, count = (_whole(environ, name) for name in _SLURM)
    if _set(environ, "SLURM_ARRAY_TASK_MAX"):
        high = _whole(environ, "SLURM_ARRAY_TASK_MAX")
        if high - low + 1 != count:
            raise UsageError(
                f"--shard auto: the SLURM array runs {count} task(s) with ids from {low} to "
                f"{high}: not one range with step 1 (a list such as --array=1,4,7?); give "
                "--array=0-N"
            )
    return _shard(low, "SLURM_ARRAY_TASK_ID", task, "SLURM_ARRAY_TASK_COUNT", count)


def _buildkite(environ: Mapping[str, str]) -> Shard | None:
    names = ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT")
    _missing(environ, "Buildkite's parallelism", names)
    if not _set(environ, names[0]):
        return None
    index, total = _whole(environ, names[0]), _whole(environ, names[1])
    return _shard(0, names[0], index, names[1], total)


def _gitlab(environ: Mapping[str, str]) -> Shard | None:
    names = ("CI_NODE_INDEX", "CI_NODE_TOTAL")
    if not _set(environ, names[0]) and environ.get(names[1]) == "1":
        return None  # GitLab sets CI_NODE_TOTAL=1 in every job without parallel:
    _missing(environ, "GitLab's parallel:", names)
    if not _set(environ, names[0]):
        return None
    index, total = _whole(environ, names[0]), _whole(environ, names[1])
    return _shard(1, names[0], index, names[1], total)


# The systems `--shard auto` reads, in this order; the first one set names the shard.
AUTO_ORDER: tuple[tuple[ShardSource, Callable[[Mapping[str, str]], Shard | None]], ...] = (
    ("ruledrift", _ruledrift),
    ("kubernetes", _kubernetes),
    ("slurm", _slurm),
    ("buildkite", _buildkite),
    ("gitlab", _gitlab),
)
AUTO_VARIABLES = (
    "RULEDRIFT_SHARD_INDEX/RULEDRIFT_SHARD_TOTAL, JOB_COMPLETION_INDEX with RULEDRIFT_SHARD_TOTAL "
    "(Kubernetes), SLURM_ARRAY_TASK_ID/_MIN/_COUNT, BUILDKITE_PARALLEL_JOB/_COUNT, "
    "CI_NODE_INDEX/CI_NODE_TOTAL (GitLab)"
)


def shard_from_environment(environ: Mapping[str, str]) -> Shard:
    """The shard the environment names. Every system's variables are checked (a half-set
    pair is an error naming what is missing); two systems that name different shards are an
    error naming both; systems that agree are fine, and the first in AUTO_ORDER is recorded."""
    found = [(source, shard) for source, read in AUTO_ORDER if (shard := read(environ)) is not None]
    if not found:
        raise UsageError(
            f"--shard auto: no shard in the environment (it reads {AUTO_VARIABLES}); give "
            "--shard K/N"
        )
    (source, first), *others = found
    for other_source, other in others:
        if other != first:
            raise UsageError(
                f"--shard auto: {SOURCE_VARIABLES[source]} name shard {first} but "
                f"{SOURCE_VARIABLES[other_source]} name shard {other}: unset the variables of one"
            )
    return Shard(first.index, first.total, source)


# --- the split -------------------------------------------------------------------------------


def assign_weighted(
    scenarios: Sequence[Scenario], total: int, weights: Sequence[float]
) -> list[list[Scenario]]:
    """Every shard's scenarios, in config order, by greedy longest-first on `weights`."""
    loads = [0.0] * total
    chosen: list[list[int]] = [[] for _ in range(total)]
    heaviest_first = sorted(range(len(scenarios)), key=lambda i: (-weights[i], i))
    for position in heaviest_first:
        lightest = min(range(total), key=lambda s: (loads[s], len(chosen[s]), s))
        chosen[lightest].append(position)
        loads[lightest] += weights[position]
    return [[scenarios[i] for i in sorted(positions)] for positions in chosen]


def assign(scenarios: Sequence[Scenario], total: int, runs: int = 1) -> list[list[Scenario]]:
    """Every shard's scenarios by model calls; `runs`: the runs of each scenario."""
    return assign_weighted(scenarios, total, [s.model_calls * runs for s in scenarios])


def shard_of(
    scenarios: Sequence[Scenario],
    shard: Shard,
    runs: int = 1,
    weights: Sequence[float] | None = None,
) -> tuple[Scenario, ...]:
    """The scenarios shard `shard` runs (possibly none: a matrix wider than the suite), by
    model calls, or by `weights` (expected times) when given."""
    if weights is None:
        weights = [s.model_calls * runs for s in scenarios]
    return tuple(assign_weighted(scenarios, shard.total, weights)[shard.index - 1])


# --- expected times from a previous report (`--shard-balance`) -------------------------------


@dataclass(frozen=True)
class ExpectedTimes:
    """Each selected scenario's expected time in ms, in selection order, and how many of them
    the report measured (the others count `median`)."""

    times: tuple[float, ...]
    known: int
    median: float


def expected_times(
    scenarios: Sequence[Scenario], previous: RunResult, runs: int | None, source: str
) -> ExpectedTimes:
    """What each scenario should take, from `previous` (a report of the same suite, such as
    main's last run): its time per model call there, times the calls it makes now (`runs` of
    its calls under `--repeat N`; under `--repeat auto` (`runs` None), the calls it took in
    the report, so a scenario that needed many runs to be decided is expected to again).
    Scenarios the report does not know, or where it made no call, get the median of the rest.
    Raises UsageError when it knows none (`source` names the report)."""
    measured = {s.scenario.id: s for s in previous.scenarios if s.model_calls > 0}
    known: dict[str, float] = {}
    for scenario in scenarios:
        if (old := measured.get(scenario.id)) is not None:
            calls = old.model_calls if runs is None else scenario.model_calls * runs
            known[scenario.id] = old.duration_ms / old.model_calls * calls
    if scenarios and not known:
        raise UsageError(
            f"--shard-balance {source}: the report has no time for any of the "
            f"{len(scenarios)} selected scenario(s) (a report of another suite?)"
        )
    median = statistics.median(known.values()) if known else 0.0
    return ExpectedTimes(
        tuple(known.get(s.id, median) for s in scenarios), len(known), float(median)
    )
