"""Does a variant change a probe's pass rate? Paired comparisons: pure functions.

Each pair is one probe in one run (the same run index and seed), asked under the suite as written
(`base`) and under a variant (a reminder, another system prompt). The pairs fall in four cells:
both passed, only base passed (`base_only`, b), only the variant passed (`variant_only`, c), both
failed. Four pieces answer the question:

- the **change** in pass rate, variant − base = (c − b) / n, with **Newcombe's square-and-add
  interval for paired data** (Newcombe 1998b, method 10: the two Wilson intervals combined with
  the pairs' correlation φ, continuity-corrected as in Fagerland, Lydersen & Laake 2017, ch. 8);
- **McNemar's exact test**: only the discordant pairs carry evidence, and with no effect each of
  the b + c is equally likely to go either way, so the two-sided p-value is
  min(1, 2 · P(Binomial(b + c, ½) ≤ min(b, c))) (1 when b = c), computed in integers;
- **Holm's adjustment** over every probe and variant compared, so that the chance of calling any
  unchanged probe changed stays at most `alpha` for the whole run;
- a **label**: "better", "worse", "no evidence of a change", or "too few pairs to tell" (not
  significant, and even in the most favourable case the test's exact power at its own number of
  pairs, at alpha / m, to see the planned improvement is under 80%).

How many pairs an improvement needs depends on how the two outcomes of a pair go together, which
the pass rates alone do not say. `harm` is the chance that a pair passes under base and fails
under the variant; the discordant pairs the other way then have the chance
harm + (p_variant − p_base). `harm = 0` (the variant only fixes failures: the most favourable
case, and the most correlated pairs) needs the fewest pairs; `independent_harm` (the two outcomes
independent: pairing gains nothing) the most of any positively correlated design.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from ruledrift.stats.compare import holm
from ruledrift.stats.intervals import binomial_pmf, normal_quantile, wilson_interval

__all__ = [
    "PairCounts",
    "PairedComparison",
    "PairedLabel",
    "compare_pairs",
    "independent_harm",
    "mcnemar_exact",
    "pair_counts",
    "paired_interval",
    "paired_power",
    "pairs_needed",
]

PairedLabel = Literal["better", "worse", "no evidence of a change", "too few pairs to tell"]


@dataclass(frozen=True)
class PairCounts:
    """The pairs of one probe, base against one variant, by outcome."""

    both: int  # passed under base and under the variant
    base_only: int  # passed under base, failed under the variant (b)
    variant_only: int  # failed under base, passed under the variant (c)
    neither: int  # failed under both

    def __post_init__(self) -> None:
        if min(self.both, self.base_only, self.variant_only, self.neither) < 0:
            raise ValueError(f"pair counts cannot be negative: {self}")

    @property
    def pairs(self) -> int:
        return self.both + self.base_only + self.variant_only + self.neither

    @property
    def discordant(self) -> int:
        return self.base_only + self.variant_only

    @property
    def base_passes(self) -> int:
        return self.both + self.base_only

    @property
    def variant_passes(self) -> int:
        return self.both + self.variant_only


def pair_counts(outcomes: Sequence[tuple[bool, bool]]) -> PairCounts:
    """Count (base passed, variant passed) outcomes into the four cells."""
    cells = [0, 0, 0, 0]
    for base, variant in outcomes:
        cells[(0 if base else 2) + (0 if variant else 1)] += 1
    both, base_only, variant_only, neither = cells
    return PairCounts(both, base_only, variant_only, neither)


def mcnemar_exact(base_only: int, variant_only: int) -> float:
    """McNemar's exact conditional test, two-sided: min(1, 2 · P(Bin(b + c, ½) ≤ min(b, c))).

    1 when b = c (including no discordant pairs at all). R: `binom.test(b, b + c)$p.value`.
    """
    if base_only < 0 or variant_only < 0:
        raise ValueError(f"need counts >= 0, not {base_only} and {variant_only}")
    if base_only == variant_only:
        return 1.0
    total = base_only + variant_only
    tail = sum(math.comb(total, k) for k in range(min(base_only, variant_only) + 1))
    p_value: float = 2 * tail / 2**total
    return min(1.0, p_value)


def _phi(counts: PairCounts) -> float:
    """The pairs' correlation, continuity-corrected (Newcombe 1998b; Fagerland et al. 2017)."""
    n = counts.pairs
    margins = (
        counts.base_passes,
        n - counts.base_passes,
        counts.variant_passes,
        n - counts.variant_passes,
    )
    if 0 in margins:
        return 0.0
    excess: float = counts.both * counts.neither - counts.base_only * counts.variant_only
    if excess > n / 2:
        excess -= n / 2
    elif excess >= 0:
        return 0.0
    return excess / math.sqrt(math.prod(margins))


def paired_interval(counts: PairCounts, confidence: float = 0.95) -> tuple[float, float]:
    """Newcombe's square-and-add interval for the change variant − base, as (low, high)."""
    n = counts.pairs
    if n < 1:
        raise ValueError("need at least one pair")
    base, variant = counts.base_passes / n, counts.variant_passes / n
    base_low, base_high = wilson_interval(counts.base_passes, n, confidence)
    variant_low, variant_high = wilson_interval(counts.variant_passes, n, confidence)
    phi = _phi(counts)
    down_v, up_b = variant - variant_low, base_high - base
    up_v, down_b = variant_high - variant, base - base_low
    change = variant - base
    low = change - math.sqrt(max(0.0, down_v**2 + up_b**2 - 2 * phi * down_v * up_b))
    high = change + math.sqrt(max(0.0, up_v**2 + down_b**2 - 2 * phi * up_v * down_b))
    return max(-1.0, low), min(1.0, high)


def independent_harm(p_base: float, p_variant: float) -> float:
    """The `harm` of a pair whose two outcomes are independent: p_base · (1 − p_variant)."""
    return p_base * (1 - p_variant)


def _check_design(p_base: float, p_variant: float, alpha: float, harm: float) -> float:
    if not 0 <= p_base < p_variant <= 1:
        raise ValueError(f"need 0 <= p_base < p_variant <= 1, not {p_base} and {p_variant}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, not {alpha}")
    fixes = harm + p_variant - p_base
    if harm < 0 or harm > p_base or fixes > 1 - p_base:
        raise ValueError(f"harm {harm} is impossible with pass rates {p_base} and {p_variant}")
    return fixes


@functools.lru_cache(maxsize=4096)
def _first_better(m: int, alpha: float) -> int:
    """The smallest c of m discordant pairs that the two-sided exact test calls better (m + 1:
    none). Exact in integers: 2 · Σ_{k ≤ m − c} C(m, k) ≤ alpha · 2^m."""
    level = Fraction(alpha)
    tail, first = 0, m + 1
    for k in range(m + 1):  # k = m − c, as c falls from m
        tail += math.comb(m, k)
        if 2 * k >= m or 2 * tail * level.denominator > level.numerator * 2**m:
            break
        first = m - k
    return first


def _tail(m: int, toward: float, alpha: float) -> float:
    """The chance that enough of m discordant pairs go the variant's way to call it better."""
    first = _first_better(m, alpha)
    if toward == 1.0:  # every discordant pair goes the variant's way
        return 1.0 if first <= m else 0.0
    return sum(binomial_pmf(c, m, toward) for c in range(first, m + 1))


def _summed(pairs: int, discordant: float, tails: Sequence[float]) -> float:
    return sum(binomial_pmf(m, pairs, discordant) * tails[m] for m in range(pairs + 1))


def paired_power(
    pairs: int, p_base: float, p_variant: float, *, alpha: float = 0.05, harm: float = 0.0
) -> float:
    """The exact power of McNemar's two-sided exact test at `alpha` with `pairs` pairs to call
    the variant better, when base passes `p_base` of the time, the variant `p_variant`, and a
    pair passes under base and fails under the variant with chance `harm`.

    The sum over every number m of discordant pairs (binomial, chance harm + fixes) of the
    chance that enough of them go the variant's way (binomial, fixes / discordant)."""
    fixes = _check_design(p_base, p_variant, alpha, harm)
    if pairs < 1:
        raise ValueError(f"need at least one pair, not {pairs}")
    toward = fixes / (harm + fixes)
    return _summed(pairs, harm + fixes, [_tail(m, toward, alpha) for m in range(pairs + 1)])


def pairs_needed(
    p_base: float,
    p_variant: float,
    *,
    alpha: float = 0.05,
    power: float = 0.80,
    harm: float = 0.0,
    method: Literal["exact", "normal"] = "exact",
    max_pairs: int = 5_000,
) -> int:
    """How many pairs McNemar's two-sided test at `alpha` needs to call the improvement from
    `p_base` to `p_variant` better with at least `power` (see `paired_power`).

    "exact" is the smallest number of pairs whose exact power reaches `power` (saw-toothed: a
    few more can fall just short); "normal" is Connor's (1987) normal approximation,
    n = (z₁₋α/₂ √ψ + z_power √(ψ − δ²))² / δ², with ψ the discordant share and δ the change."""
    fixes = _check_design(p_base, p_variant, alpha, harm)
    if not 0 < power < 1:
        raise ValueError(f"power must be strictly between 0 and 1, not {power}")
    discordant, change = harm + fixes, p_variant - p_base
    spread = normal_quantile(1 - alpha / 2) * math.sqrt(discordant)
    spread += normal_quantile(power) * math.sqrt(discordant - change**2)
    estimate = math.ceil((spread / change) ** 2)
    if method == "normal":
        return estimate
    tails = [0.0]
    for pairs in range(1, max_pairs + 1):
        tails.append(_tail(pairs, fixes / discordant, alpha))
        if _summed(pairs, discordant, tails) >= power:
            return pairs
    raise ValueError(f"McNemar's test needs more than {max_pairs} pairs (normal: {estimate})")


@dataclass(frozen=True)
class PairedComparison:
    """One probe, base against one variant: the pairs, the change (variant − base) with its
    interval, McNemar's exact p-value, its Holm adjustment over the run, and the label."""

    counts: PairCounts
    change: float
    low: float
    high: float
    p_value: float
    adjusted: float
    label: PairedLabel


def _label(
    counts: PairCounts, adjusted: float, *, alpha: float, family: int, planned: tuple[float, float]
) -> PairedLabel:
    if adjusted <= alpha and counts.variant_only != counts.base_only:
        return "better" if counts.variant_only > counts.base_only else "worse"
    drifted_at, holds_at = planned
    reach = _planned_power(counts.pairs, drifted_at, holds_at, alpha / family)
    return "too few pairs to tell" if reach < 0.80 else "no evidence of a change"


@functools.lru_cache(maxsize=256)
def _planned_power(pairs: int, drifted_at: float, holds_at: float, alpha: float) -> float:
    """`paired_power` in the most favourable case, once per number of pairs in a run."""
    return paired_power(pairs, drifted_at, holds_at, alpha=alpha)


def compare_pairs(
    family: Sequence[PairCounts],
    *,
    alpha: float = 0.05,
    confidence: float = 0.95,
    planned: tuple[float, float] = (0.80, 0.95),
) -> list[PairedComparison]:
    """Compare every (probe, variant) of a run, Holm-adjusting over all of them, in the order
    given. `planned` is the improvement (from, to) whose most favourable power (`harm` 0, at
    alpha / m) decides "too few pairs to tell"."""
    p_values = [mcnemar_exact(c.base_only, c.variant_only) for c in family]
    adjusted = holm(p_values)
    comparisons = []
    for counts, p_value, adjusted_p in zip(family, p_values, adjusted, strict=True):
        low, high = paired_interval(counts, confidence)
        change = (counts.variant_only - counts.base_only) / counts.pairs
        label = _label(counts, adjusted_p, alpha=alpha, family=len(family), planned=planned)
        comparisons.append(PairedComparison(counts, change, low, high, p_value, adjusted_p, label))
    return comparisons
