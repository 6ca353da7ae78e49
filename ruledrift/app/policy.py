"""What a run's verdict policy means before and after the run: its options checked together,
the exit code of a finished run, the most runs a scenario can take, and what a short cap costs."""

from __future__ import annotations

from ruledrift.app.options import OPTIONS, Option, OptionError
from ruledrift.data import RunResult, Status, VerdictPolicy, combined_status
from ruledrift.errors import ExitCode
from ruledrift.results.findings import gate_words
from ruledrift.results.variants import pairing_plan
from ruledrift.run.verdicts import gate_odds, sequential_design


def exit_code(result: RunResult, *, reports_failed: bool = False) -> ExitCode:
    """The one map from a finished run to an exit code: interrupted 130, then error 3 (the
    verdict is incomplete), failed 1 (also inconclusive, unless the policy lets inconclusive
    probes pass, and vacuous, unless the suite's `vacuousPasses` is "warn"), then 5 when every
    probe passed but a report could not be written (a CI step must not pass without the report
    it asked for), passed 0."""
    if result.interrupted:
        return ExitCode.INTERRUPTED
    let_pass: set[Status] = set()
    if result.policy.inconclusive_passes:
        let_pass.add("inconclusive")
    if result.suite.vacuous_passes == "warn":
        let_pass.add("vacuous")
    status = combined_status(
        ["passed" if p.status in let_pass else p.status for p in result.probes]
    )
    if status == "passed":
        return ExitCode.REPORT_ERROR if reports_failed else ExitCode.PASSED
    return ExitCode.RUN_ERROR if status == "error" else ExitCode.FAILED


def check_policy(policy: VerdictPolicy) -> None:
    """The repeat options make sense together and are in range (OPTIONS); raises OptionError
    (exit 2) naming the option."""
    auto = policy.repeat == "auto"
    repeat, max_repeat = OPTIONS["repeat"], OPTIONS["max_repeat"]
    if not auto and not _within(repeat, policy.repeat):
        raise OptionError(f"{{repeat}}: expected auto or a whole number {_range(repeat)}")
    if policy.min_pass_rate is not None:
        if auto:
            raise OptionError("{min_pass_rate} goes with {repeat} N (auto decides by itself)")
        if not 0 < policy.min_pass_rate <= 1:
            raise OptionError("{min_pass_rate}: expected a number above 0 and at most 1")
    if policy.max_repeat is not None and not auto:
        raise OptionError("{max_repeat} goes with {repeat} auto")
    if not 0 < policy.drifted_at < policy.holds_at < 1:
        raise OptionError("expected 0 < {drifted_at} < {holds_at} < 1")
    if policy.max_repeat is not None and not _within(max_repeat, policy.max_repeat):
        raise OptionError(f"{{max_repeat}}: expected a whole number {_range(max_repeat)}")


def _within(option: Option, value: object) -> bool:
    return (
        isinstance(value, int)
        and option.low is not None
        and option.high is not None
        and (option.low <= value <= option.high)
    )


def _range(option: Option) -> str:
    return f"from {option.low} to {option.high}"


def check_design(policy: VerdictPolicy, probes: int) -> None:
    """Under `--repeat auto`, a sequential test exists for `probes` probes: a holds-at and a
    drifted-at a hair apart (0.9999 and 0.9998) need more runs than any test is allowed.
    Raises OptionError naming both."""
    if policy.repeat != "auto":
        return
    try:
        sequential_design(policy, probes)
    except ValueError as error:
        raise OptionError(
            "{holds_at} {holds} and {drifted_at} {drifted} are too close for {repeat} auto: "
            "{why}; widen the gap",
            holds=f"{policy.holds_at:g}",
            drifted=f"{policy.drifted_at:g}",
            why=str(error),
        ) from None


def most_runs(policy: VerdictPolicy, probes: int) -> int:
    """The most runs a scenario takes under `policy` for a selection of `probes` probes."""
    if policy.repeat == "auto":
        check_design(policy, probes)
        return sequential_design(policy, probes).cap
    return int(policy.repeat)


def few_pairs_warning(policy: VerdictPolicy, variants: int) -> str | None:
    """With variants: when the runs (the pairs of each probe) are fewer than even the most
    favourable design needs to see the planned improvement, what they would need (None: enough,
    or no variant)."""
    plan = pairing_plan(policy.drifted_at, policy.holds_at)
    pairs = policy.repeat if isinstance(policy.repeat, int) else None
    if not variants or plan is None or pairs is None or pairs >= plan.pairs_if_only_fixes:
        return None
    return (
        f"--variants with --repeat {pairs}: {pairs} pair(s) per probe, where seeing an "
        f"improvement from {plan.drifted_at:.0%} to {plan.holds_at:.0%} with 80% power takes "
        f"{plan.pairs_if_only_fixes} if the variant only fixes failures and "
        f"{plan.pairs_if_independent} if a pair's outcomes are independent: most probes will "
        "be called 'too few pairs to tell' unless the change is larger (docs/statistics.md)"
    )


def short_cap_warning(policy: VerdictPolicy, probes: int) -> str | None:
    """What a `--max-repeat` below the cap that decides every probe costs, or None."""
    if policy.repeat != "auto" or policy.max_repeat is None:
        return None
    odds = gate_odds(policy, probes)
    if odds.decides_at_cap:
        return None
    effect = "passes" if policy.inconclusive_passes else "fails"
    return (
        f"--max-repeat {policy.max_repeat} is below the {odds.needed_cap} runs that decide every "
        f"one of {probes} probe(s): a probe still undecided after {odds.cap} runs is "
        f"inconclusive, which {effect} the run. {gate_words(odds, policy)}"
    )
