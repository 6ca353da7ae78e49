"""Is the head worse than the base? Comparing two pass rates of the same probe.

For each probe, the base (say `main`) passed `x1` of `n1` runs and the head (the change under
review) `x2` of `n2`. Four pieces answer the question:

- the **drop** `x1/n1 − x2/n2` with Newcombe's hybrid score interval (method 10 of Newcombe 1998,
  built from the two Wilson intervals; no continuity correction);
- the **one-sided Fisher exact p-value** that the head is worse: the chance, with both samples'
  pass totals fixed, of the head passing as few runs as it did or fewer if both sides shared one
  pass rate (the hypergeometric tail, computed exactly with `math.comb`);
- **Holm's step-down adjustment** of those p-values over all probes, so that the chance of calling
  any unchanged probe "worse" stays at most `alpha` for the whole suite;
- a **label**: "worse", "better", "no evidence of a change", or "too few runs to tell".

"worse" and "better" are two one-sided tests, each Holm-adjusted over the suite at `alpha`; only
"worse" is meant to gate a change. "too few runs to tell" is defined by the sample sizes alone,
before looking at the results: a probe that is not significant is "too few runs to tell" when the
exact power of its test, at its own run counts, to see the planned drop (from 95% to 80% by
default) is under 80%, the test taken at alpha / m as Holm takes the strongest of m probes (its
power for any probe is at least that). A probe that is not significant though its runs would
probably have shown the planned drop is "no evidence of a change", which is not evidence of no
change: the interval says how large a drop the runs still allow.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ruledrift.stats.intervals import PassRate, binomial_pmf, normal_quantile, wilson_interval

__all__ = [
    "ChangeLabel",
    "Comparison",
    "compare",
    "compare_suite",
    "comparison_power",
    "fisher_head_worse",
    "fisher_power",
    "holm",
    "label_change",
    "newcombe_interval",
    "runs_per_side",
    "smallest_p_value",
]

ChangeLabel = Literal["worse", "better", "no evidence of a change", "too few runs to tell"]


def _check(passes: int, runs: int) -> None:
    if runs < 1 or not 0 <= passes <= runs:
        raise ValueError(f"need 0 <= passes <= runs and runs >= 1, not {passes} of {runs}")


def newcombe_interval(
    base_passes: int, base_runs: int, head_passes: int, head_runs: int, confidence: float = 0.95
) -> tuple[float, float]:
    """Newcombe's hybrid score interval for the drop (base rate − head rate), as (low, high)."""
    base, head = base_passes / base_runs, head_passes / head_runs
    base_low, base_high = wilson_interval(base_passes, base_runs, confidence)
    head_low, head_high = wilson_interval(head_passes, head_runs, confidence)
    drop = base - head
    low = drop - math.hypot(base - base_low, head_high - head)
    high = drop + math.hypot(base_high - base, head - head_low)
    return low, high


def fisher_head_worse(base_passes: int, base_runs: int, head_passes: int, head_runs: int) -> float:
    """The one-sided Fisher exact p-value for "the head passes less often than the base".

    With `t` passes in all, the head's pass count is hypergeometric under "no change"; this is
    P(head passes ≤ observed). Swap the sides for "the head passes more often".
    """
    _check(base_passes, base_runs)
    _check(head_passes, head_runs)
    total = base_passes + head_passes
    tail = sum(
        math.comb(total, x) * math.comb(base_runs + head_runs - total, head_runs - x)
        for x in range(max(0, total - base_runs), head_passes + 1)
    )
    return min(1.0, tail / math.comb(base_runs + head_runs, head_runs))


def smallest_p_value(base_runs: int, head_runs: int) -> float:
    """The smallest one-sided Fisher p-value possible at these run counts: 1 / C(n1 + n2, n1)."""
    return 1 / math.comb(base_runs + head_runs, base_runs)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (from 1) is multiplied by m − i + 1, then made
    non-decreasing and capped at 1. A probe is significant at `alpha` when its adjusted p-value is
    at most `alpha`; the chance of any false rejection in the family is then at most `alpha`.
    """
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [0.0] * len(p_values)
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


def label_change(
    worse_p: float,
    better_p: float,
    base_runs: int,
    head_runs: int,
    *,
    alpha: float = 0.05,
    probes: int = 1,
    planned: tuple[float, float] = (0.95, 0.80),
    power: float = 0.80,
) -> ChangeLabel:
    """The label for one probe from its Holm-adjusted one-sided p-values (see the module text):
    not significant with less than `power` to see the `planned` drop is too few runs to tell."""
    if worse_p <= alpha:
        return "worse"
    if better_p <= alpha:
        return "better"
    holds_at, drifted_at = planned
    reach = comparison_power(
        base_runs, head_runs, holds_at=holds_at, drifted_at=drifted_at, alpha=alpha, probes=probes
    )
    if reach < power:
        return "too few runs to tell"
    return "no evidence of a change"


@dataclass(frozen=True)
class Comparison:
    """One probe, base against head: the drop, its interval, the p-values and the label.

    `drop` is base rate − head rate (positive when the head is worse); `low`/`high` its Newcombe
    interval; `worse_p`/`better_p` the raw one-sided Fisher p-values and `worse_adjusted`/
    `better_adjusted` the Holm-adjusted ones over the suite.
    """

    base: PassRate
    head: PassRate
    drop: float
    low: float
    high: float
    worse_p: float
    better_p: float
    worse_adjusted: float
    better_adjusted: float
    label: ChangeLabel


def compare_suite(
    pairs: Sequence[tuple[PassRate, PassRate]],
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    planned: tuple[float, float] = (0.95, 0.80),
) -> list[Comparison]:
    """Compare each (base, head) pair, Holm-adjusting over all of them, in the order given;
    `planned` is the drop whose power decides "too few runs to tell"."""
    worse = [fisher_head_worse(b.passes, b.runs, h.passes, h.runs) for b, h in pairs]
    better = [fisher_head_worse(h.passes, h.runs, b.passes, b.runs) for b, h in pairs]
    worse_adjusted, better_adjusted = holm(worse), holm(better)
    comparisons = []
    for i, (base, head) in enumerate(pairs):
        low, high = newcombe_interval(base.passes, base.runs, head.passes, head.runs, confidence)
        label = label_change(
            worse_adjusted[i],
            better_adjusted[i],
            base.runs,
            head.runs,
            alpha=alpha,
            probes=len(pairs),
            planned=planned,
        )
        p_values = (worse[i], better[i], worse_adjusted[i], better_adjusted[i])
        comparisons.append(
            Comparison(base, head, base.rate - head.rate, low, high, *p_values, label)
        )
    return comparisons


def compare(
    base: PassRate,
    head: PassRate,
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    planned: tuple[float, float] = (0.95, 0.80),
) -> Comparison:
    """Compare one probe on its own (a suite of one: no multiplicity adjustment)."""
    return compare_suite([(base, head)], alpha=alpha, confidence=confidence, planned=planned)[0]


def _rejects_up_to(total: int, base_runs: int, head_runs: int, alpha: float) -> int:
    """The largest head pass count that Fisher's test calls worse with `total` passes in all.

    One below the smallest possible count when none is significant. The hypergeometric tail is
    summed in integers over C(n1 + n2, n2), so a p-value exactly at `alpha` counts.
    """
    denominator = math.comb(base_runs + head_runs, head_runs)
    failures = base_runs + head_runs - total
    head, most = max(0, total - base_runs), min(total, head_runs)
    term = math.comb(total, head) * math.comb(failures, head_runs - head)
    if term / denominator > alpha:
        return head - 1
    tail = term
    while head < most:
        # C(t, h+1)·C(f, n2−h−1) from C(t, h)·C(f, n2−h), exactly in integers
        term = term * (total - head) * (head_runs - head)
        term //= (head + 1) * (failures - head_runs + head + 1)
        if (tail + term) / denominator > alpha:
            break
        tail += term
        head += 1
    return head


# Outcomes this unlikely on either side are left out of the power sum: its error stays below 1e-12
# while runs_per_side stays fast (only totals near the expected ones are summed).
_NEGLIGIBLE = 2.5e-13


def _likely(probabilities: list[float]) -> range:
    """The indices left after trimming each tail of at most `_NEGLIGIBLE` probability."""
    low, high, below, above = 0, len(probabilities) - 1, 0.0, 0.0
    while below + probabilities[low] <= _NEGLIGIBLE:
        below += probabilities[low]
        low += 1
    while above + probabilities[high] <= _NEGLIGIBLE:
        above += probabilities[high]
        high -= 1
    return range(low, high + 1)


def fisher_power(
    runs: int, p_base: float, p_head: float, alpha: float = 0.05, *, head_runs: int | None = None
) -> float:
    """The power of the one-sided Fisher test at `alpha` with `runs` runs of the base and
    `head_runs` of the head (default: as many).

    The sum, over every outcome the test calls worse, of its binomial probability; outcomes of
    negligible probability are skipped, so the result is exact to within 1e-12.
    """
    head_runs = runs if head_runs is None else head_runs
    if runs < 1 or head_runs < 1 or not 0 < alpha < 1:
        raise ValueError(f"need runs >= 1 and 0 < alpha < 1, not {runs}, {head_runs}, {alpha}")
    base = [binomial_pmf(x, runs, p_base) for x in range(runs + 1)]
    head = [binomial_pmf(x, head_runs, p_head) for x in range(head_runs + 1)]
    likely_base, likely_head = _likely(base), _likely(head)
    power = 0.0
    for total in range(
        likely_base.start + likely_head.start, likely_base[-1] + likely_head[-1] + 1
    ):
        last = _rejects_up_to(total, runs, head_runs, alpha)
        first = max(likely_head.start, total - likely_base[-1])
        for head_passes in range(first, min(last, likely_head[-1], total - likely_base.start) + 1):
            power += base[total - head_passes] * head[head_passes]
    return power


@functools.lru_cache(maxsize=1024)
def comparison_power(
    base_runs: int,
    head_runs: int,
    *,
    holds_at: float = 0.95,
    drifted_at: float = 0.80,
    alpha: float = 0.05,
    probes: int = 1,
) -> float:
    """The exact power of one probe's comparison, at its run counts, to call a drop from
    `holds_at` to `drifted_at` worse, the test taken at `alpha / probes` (Holm's first step:
    the power of any probe's Holm-adjusted test is at least this)."""
    return fisher_power(base_runs, holds_at, drifted_at, alpha / probes, head_runs=head_runs)


def _normal_runs(p_base: float, p_head: float, alpha: float, power: float) -> int:
    mean = (p_base + p_head) / 2
    z_alpha, z_beta = normal_quantile(1 - alpha), normal_quantile(power)
    spread = z_alpha * math.sqrt(2 * mean * (1 - mean))
    spread += z_beta * math.sqrt(p_base * (1 - p_base) + p_head * (1 - p_head))
    return math.ceil((spread / (p_base - p_head)) ** 2)


def runs_per_side(
    p_base: float,
    p_head: float,
    alpha: float = 0.05,
    power: float = 0.80,
    *,
    method: Literal["fisher", "normal"] = "fisher",
    max_runs: int = 2_000,
) -> int:
    """How many runs on each side a one-sided test of "head worse" needs for `power`.

    "fisher" (the default) is the smallest n at which the exact power of the one-sided Fisher
    test, summed over all outcomes, reaches `power`; exact power is saw-toothed in n, so a
    slightly larger n can fall just short. "normal" is the textbook normal-approximation formula
    for two proportions, which ignores the exact test's conservatism and is usually a little lower.
    The exact search takes under a second for drops from high pass rates (95% → 90%: 371 runs,
    0.6 s); near 50%, where a small drop needs over a thousand runs, it takes minutes.
    """
    if not 0 < p_head < p_base < 1:
        raise ValueError(f"need 0 < p_head < p_base < 1, not {p_head} and {p_base}")
    if not (0 < alpha < 1 and 0 < power < 1):
        raise ValueError(f"alpha and power must be strictly between 0 and 1, not {alpha}, {power}")
    estimate = _normal_runs(p_base, p_head, alpha, power)
    if method == "normal":
        return estimate
    if estimate > max_runs:  # the exact test is conservative: it needs more, never fewer
        raise ValueError(
            f"Fisher's test needs more than {max_runs} runs per side (normal: {estimate})"
        )
    for runs in range(1, max_runs + 1):
        if fisher_power(runs, p_base, p_head, alpha) >= power:
            return runs
    raise ValueError(f"Fisher's test needs more than {max_runs} runs per side (normal: {estimate})")
