"""A probe's pass rate with its Wilson score interval, and the normal quantile behind it.

The Wilson interval (Wilson 1927) is the set of pass rates `p` for which the observed rate is
within `z` standard errors of `p`, the standard error taken at `p` itself. Unlike the textbook
"rate ± z·√(rate·(1−rate)/n)" it never leaves [0, 1] and does not collapse to a single point
when every run passed or every run failed: 20 passes out of 20 give 83.9%–100%, not 100%–100%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "PassRate",
    "beta_binomial_pmf",
    "binomial_pmf",
    "normal_quantile",
    "pass_rate",
    "wilson_interval",
    "z_for",
]

# Acklam's rational approximation of the standard normal quantile (relative error below 1.2e-9),
# which one Halley step against `math.erfc` then refines to full double precision.
_A = (-39.69683028665376, 220.9460984245205, -275.9285104469687, 138.3577518672690,
      -30.66479806614716, 2.506628277459239)  # fmt: skip
_B = (-54.47609879822406, 161.5858368580409, -155.6989798598866, 66.80131188771972,
      -13.28068155288572)  # fmt: skip
_C = (-0.007784894002430293, -0.3223964580411365, -2.400758277161838, -2.549732539343734,
      4.374664141464968, 2.938163982698783)  # fmt: skip
_D = (0.007784695709041462, 0.3224671290700398, 2.445134137142996, 3.754408661907416)
_LOW_TAIL = 0.02425


def _polynomial(coefficients: tuple[float, ...], x: float) -> float:
    value = 0.0
    for coefficient in coefficients:
        value = value * x + coefficient
    return value


def _acklam(p: float) -> float:
    if p < _LOW_TAIL or p > 1 - _LOW_TAIL:
        q = math.sqrt(-2 * math.log(min(p, 1 - p)))
        x = _polynomial(_C, q) / (_polynomial(_D, q) * q + 1)
        return x if p < _LOW_TAIL else -x
    q = p - 0.5
    r = q * q
    return q * _polynomial(_A, r) / (_polynomial(_B, r) * r + 1)


def normal_quantile(p: float) -> float:
    """The `x` with P(Z ≤ x) = p for a standard normal Z, for 0 < p < 1 (1.959964 for 0.975)."""
    if not 0 < p < 1:
        raise ValueError(f"a probability strictly between 0 and 1 is needed, not {p}")
    x = _acklam(p)
    error = 0.5 * math.erfc(-x / math.sqrt(2)) - p
    step = error * math.sqrt(2 * math.pi) * math.exp(x * x / 2)
    return x - step / (1 + x * step / 2)


def z_for(confidence: float) -> float:
    """The two-sided critical value for a confidence level: 1.959964 for 0.95."""
    if not 0 < confidence < 1:
        raise ValueError(f"a confidence level strictly between 0 and 1 is needed, not {confidence}")
    return normal_quantile(1 - (1 - confidence) / 2)


def _check_counts(passes: int, runs: int) -> None:
    if runs < 1 or not 0 <= passes <= runs:
        raise ValueError(f"need 0 <= passes <= runs and runs >= 1, not {passes} of {runs}")


def wilson_interval(passes: int, runs: int, confidence: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval for a pass rate, as (low, high).

    It is exactly 0 at the low end when no run passed and exactly 1 at the high end when all did.
    """
    _check_counts(passes, runs)
    z = z_for(confidence)
    rate = passes / runs
    shrink = 1 + z * z / runs
    centre = (rate + z * z / (2 * runs)) / shrink
    half = z / shrink * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs))
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == runs else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class PassRate:
    """How often a probe passed: `passes` of `runs`, the observed `rate` and its interval."""

    passes: int
    runs: int
    rate: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def failures(self) -> int:
        return self.runs - self.passes

    def __str__(self) -> str:
        level = f"{self.confidence:.0%}"
        return (
            f"{self.passes}/{self.runs} passed ({self.rate:.1%}, "
            f"{level} interval {self.low:.1%}–{self.high:.1%})"
        )


def pass_rate(passes: int, runs: int, confidence: float = 0.95) -> PassRate:
    """The pass rate of `passes` out of `runs` with its Wilson interval at `confidence`."""
    low, high = wilson_interval(passes, runs, confidence)
    return PassRate(passes, runs, passes / runs, low, high, confidence)


def binomial_pmf(k: int, n: int, p: float) -> float:
    """P(X = k) for X ~ Binomial(n, p), computed in log space so large `n` cannot overflow."""
    if not 0 <= k <= n:
        return 0.0
    if p in (0.0, 1.0):
        return 1.0 if k == (n if p == 1.0 else 0) else 0.0
    log_terms = math.log(math.comb(n, k)) + k * math.log(p) + (n - k) * math.log1p(-p)
    return math.exp(log_terms)


def beta_binomial_pmf(k: int, n: int, p: float, correlation: float) -> float:
    """P(X = k) for n runs whose pass rate is drawn once from a beta distribution with mean `p`
    and intra-class `correlation` ρ (the beta-binomial model; ρ = 0 is the binomial)."""
    if correlation == 0 or p in (0.0, 1.0):
        return binomial_pmf(k, n, p)
    if not 0 <= k <= n:
        return 0.0
    weight = (1 - correlation) / correlation
    a, b = p * weight, (1 - p) * weight

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    log_terms = math.log(math.comb(n, k)) + log_beta(k + a, n - k + b) - log_beta(a, b)
    return math.exp(log_terms)
