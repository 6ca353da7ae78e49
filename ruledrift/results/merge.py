"""`ruledrift merge`: the JSON reports of a sharded run (`--shard K/N`) as the one report an
unsharded run of the same suite would have written: the same scenarios and probe results in
config order, so the same counts, drift curve and verdicts.

Reports are checked before they are combined: each is a shard that records the scenarios it
was assigned (`suite.shard.assigned`; reading the report checked that it holds exactly those),
one suite (`configSha256`), one target (adapter and model), one repeat policy, one shard count N
and one selection, no shard twice, no scenario in two shards, every shard present unless
`allow_partial` (the merged result then lists what is missing), and then the shards' scenarios
together exactly the selection. Nothing is sized by a number a report claims: N is at most
`shards.MAX_SHARDS` by the report schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from ruledrift.data import RunResult, ScenarioResult, ShardInfo
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
        _check_shard(name, result)
        _same(first_name, first, name, result)
    shards = [(name, _shard(result)) for name, result in named]
    given, owners = _indexes(shards), _owners(shards)
    selection = _shard(first)
    missing = tuple(k for k in range(1, selection.total + 1) if k not in given)  # N <= 1000
    if missing and not allow_partial:
        listed = ", ".join(_few([f"{k}/{selection.total}" for k in missing]))
        raise UsageError(f"shard(s) {listed} missing (--allow-partial merges what is there)")
    unheld = [scenario_id for scenario_id in selection.scenarios if scenario_id not in owners]
    if unheld and not missing:
        raise UsageError(
            f"scenario(s) {', '.join(_few([repr(s) for s in unheld]))} of the run's selection "
            f"are in no shard: the {len(named)} shards together do not hold the suite's "
            "scenarios (a report edited, or shards of different runs)"
        )
    return Merged(_combined([r for _, r in named]), missing)


def _indexes(shards: list[tuple[str, ShardInfo]]) -> dict[int, str]:
    """Each shard number given, and the report that is it; no number twice."""
    given: dict[int, str] = {}
    for name, shard in shards:
        if shard.index in given:
            raise UsageError(f"{name} and {given[shard.index]} are both shard {shard.index}")
        given[shard.index] = name
    return given


def _owners(shards: list[tuple[str, ShardInfo]]) -> dict[str, str]:
    """Each scenario the shards were assigned, and the report that holds it; no scenario in two."""
    owners: dict[str, str] = {}
    for name, shard in shards:
        for scenario_id in shard.assigned or ():
            if scenario_id in owners:
                raise UsageError(
                    f"{name} and {owners[scenario_id]} both hold scenario {scenario_id!r}"
                )
            owners[scenario_id] = name
    return owners


_LISTED = 10  # ids or shards named in a message, at most


def _few(items: Sequence[str]) -> list[str]:
    more = [f"… {len(items) - _LISTED} more"] if len(items) > _LISTED else []
    return [*items[:_LISTED], *more]


def _check_shard(name: str, result: RunResult) -> None:
    if any(scenario.variants for scenario in result.scenarios):
        raise UsageError(
            f"{name} holds variants (--variants), which merge does not combine: run the "
            "variants unsharded, in one report"
        )
    if result.shard is None:
        raise UsageError(f"{name} is not a shard (it was not run with --shard K/N)")
    if result.shard.assigned is None:
        raise UsageError(
            f"{name} does not record which scenarios its shard was assigned "
            "(suite.shard.assigned: it was written before RuleDrift recorded that), so "
            "the merge cannot check that the shards hold the suite's scenarios exactly; run the "
            "shards again with this RuleDrift"
        )


def _shard(result: RunResult) -> ShardInfo:
    assert result.shard is not None  # _check_shard
    return result.shard


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
