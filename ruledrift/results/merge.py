"""`ruledrift merge`: the JSON reports of a sharded run (`--shard K/N`) as the one report an
unsharded run of the same suite would have written: the same scenarios and probe results in
config order, so the same counts, drift curve and verdicts.

Reports are checked before they are combined: one suite (`configSha256`), one target (adapter
and model), one repeat policy, one shard count N, no shard twice, no scenario twice, and every
shard present unless `allow_partial` (the merged result then lists what is missing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ruledrift.data import RunResult, ScenarioResult
from ruledrift.errors import UsageError


@dataclass(frozen=True)
class Merged:
    result: RunResult
    missing: tuple[int, ...]  # shards not given (only with allow_partial)


def merge_results(named: Sequence[tuple[str, RunResult]], *, allow_partial: bool) -> Merged:
    """The merged result of `(name, result)` pairs (a name says which file a message means)."""
    if not named:
        raise UsageError("merge needs at least one report")
    first_name, first = named[0]
    for name, result in named:
        if result.shard is None:
            raise UsageError(f"{name} is not a shard (it was not run with --shard K/N)")
        _same(first_name, first, name, result)
    shards: dict[int, str] = {}
    for name, result in named:
        assert result.shard is not None
        if result.shard.index in shards:
            earlier = shards[result.shard.index]
            raise UsageError(f"{name} and {earlier} are both shard {result.shard.index}")
        shards[result.shard.index] = name
    assert first.shard is not None
    missing = tuple(k for k in range(1, first.shard.total + 1) if k not in shards)
    if missing and not allow_partial:
        listed = ", ".join(f"{k}/{first.shard.total}" for k in missing)
        raise UsageError(f"shard(s) {listed} missing (--allow-partial merges what is there)")
    return Merged(_combined([r for _, r in named]), missing)


def _same(first_name: str, first: RunResult, name: str, result: RunResult) -> None:
    checks = (
        ("suites (configSha256)", first.suite.sha256, result.suite.sha256),
        ("targets", _target(first), _target(result)),
        ("repeat settings", first.policy, result.policy),
        ("shard counts", _total(first), _total(result)),
        ("selections of scenarios", _order(first), _order(result)),
        ("shard balancing (--shard-balance)", _balance(first), _balance(result)),
    )
    for what, mine, theirs in checks:
        if mine != theirs:
            raise UsageError(f"{first_name} and {name} are reports of different {what}")


def _target(result: RunResult) -> tuple[str, str | None]:
    return result.target.adapter, result.target.model


def _total(result: RunResult) -> int | None:
    return result.shard.total if result.shard else None


def _order(result: RunResult) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    return (result.shard.scenarios, result.shard.rules) if result.shard else None


def _balance(result: RunResult) -> tuple[str, str] | None:
    """The report that cut the shards, by its run (its path may differ from job to job)."""
    balance = result.balanced_by
    return (balance.config_sha256, balance.started_at) if balance else None


def _combined(results: Sequence[RunResult]) -> RunResult:
    first = results[0]
    assert first.shard is not None
    position = {scenario_id: i for i, scenario_id in enumerate(first.shard.scenarios)}
    seen: dict[str, ScenarioResult] = {}
    for result in results:
        for scenario in result.scenarios:
            if scenario.scenario.id in seen:
                raise UsageError(f"scenario {scenario.scenario.id!r} is in two shards")
            seen[scenario.scenario.id] = scenario
    scenarios = tuple(
        sorted(seen.values(), key=lambda s: position.get(s.scenario.id, len(position)))
    )
    rule_position = {rule_id: i for i, rule_id in enumerate(first.shard.rules)}
    rules = {rule.id: rule for result in results for rule in result.suite.rules}
    ordered_rules = tuple(
        sorted(rules.values(), key=lambda r: rule_position.get(r.id, len(rule_position)))
    )
    suite = dataclasses.replace(
        first.suite, rules=ordered_rules, scenarios=tuple(s.scenario for s in scenarios)
    )
    return dataclasses.replace(
        first,
        suite=suite,
        scenarios=scenarios,
        started_at=min(r.started_at for r in results),
        duration_ms=max(r.duration_ms for r in results),
        interrupted=any(r.interrupted for r in results),
        shard=None,
    )
