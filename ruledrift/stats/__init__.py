"""Statistics for repeated runs: pure functions, standard library only.

- `intervals`: a probe's pass rate with its Wilson score interval (`pass_rate`, `PassRate`).
- `sequential`: run a probe until the evidence says "holds" or "drifted" (a truncated
  sequential test, `decide` with a `SequentialDesign` whose cap decides every probe), with exact
  error rates and run counts; fixed-size designs for comparison (`fixed_design`,
  `zero_failure_runs`).
- `expected`: the model calls `--repeat auto` is expected to make, beside the most
  (`expected_calls`).
- `operating`: the operating table of a whole suite (`python -m ruledrift.stats.operating`).
- `compare`: base against head: Newcombe's interval for the drop, one-sided Fisher exact
  p-values, Holm's adjustment over a suite, a label per probe (power-based "too few runs to
  tell"), and runs needed per side.
- `paired`: base against a variant on the same runs: McNemar's exact test, Newcombe's paired
  interval, Holm over a run, a label per probe, and the pairs an improvement needs.

docs/statistics.md explains the numbers to users.
"""

from ruledrift.stats.compare import (
    ChangeLabel,
    Comparison,
    compare,
    compare_suite,
    comparison_power,
    fisher_head_worse,
    fisher_power,
    holm,
    label_change,
    newcombe_interval,
    runs_per_side,
    smallest_p_value,
)
from ruledrift.stats.expected import expected_calls
from ruledrift.stats.intervals import (
    PassRate,
    beta_binomial_pmf,
    binomial_pmf,
    normal_quantile,
    pass_rate,
    wilson_interval,
    z_for,
)
from ruledrift.stats.paired import (
    PairCounts,
    PairedComparison,
    PairedLabel,
    compare_pairs,
    independent_harm,
    mcnemar_exact,
    pair_counts,
    paired_interval,
    paired_power,
    pairs_needed,
)
from ruledrift.stats.sequential import (
    Decision,
    FixedDesign,
    OperatingCharacteristic,
    SequentialDesign,
    Verdict,
    decide,
    fixed_design,
    operating_characteristic,
    zero_failure_runs,
)

__all__ = [
    "ChangeLabel",
    "Comparison",
    "Decision",
    "FixedDesign",
    "OperatingCharacteristic",
    "PairCounts",
    "PairedComparison",
    "PairedLabel",
    "PassRate",
    "SequentialDesign",
    "Verdict",
    "beta_binomial_pmf",
    "binomial_pmf",
    "compare",
    "compare_pairs",
    "compare_suite",
    "comparison_power",
    "decide",
    "expected_calls",
    "fisher_head_worse",
    "fisher_power",
    "fixed_design",
    "holm",
    "independent_harm",
    "label_change",
    "mcnemar_exact",
    "newcombe_interval",
    "normal_quantile",
    "operating_characteristic",
    "pair_counts",
    "paired_interval",
    "paired_power",
    "pairs_needed",
    "pass_rate",
    "runs_per_side",
    "smallest_p_value",
    "wilson_interval",
    "z_for",
    "zero_failure_runs",
]
