"""The operating table of `--repeat auto`: how a whole suite fares, computed exactly.

For a suite of m probes, every one at the same true pass rate p, run independently:

- P(probe drifted), P(probe inconclusive), the mean and the 95th percentile of its runs come
  from the exact dynamic programme (`operating_characteristic`) of the suite's design;
- P(suite red) = 1 − (1 − P(probe fails the run))^m, a probe failing the run when it ends
  "drifted", or "inconclusive" unless inconclusive probes pass.

The suite-wide guarantees follow: with every probe at or above `holds_at` the suite goes red with
chance 1 − Π(1 − pᵢ) ≤ Σ pᵢ ≤ m · alpha/m = alpha (each pᵢ is at most the probe's bound, since
the chance of "drifted" only falls as the pass rate rises); a probe at or below `drifted_at` is
named drifted with chance at least 1 − beta.

`python -m ruledrift.stats.operating` prints the table of docs/statistics.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

from ruledrift.stats.sequential import SequentialDesign, operating_characteristic

__all__ = ["PROBES", "RATES", "OperatingRow", "main", "markdown_table", "operating_rows"]

PROBES = (1, 10, 50, 200)
RATES = (0.70, 0.80, 0.875, 0.95, 0.97, 1.0)


@dataclass(frozen=True)
class OperatingRow:
    """One suite size and one true pass rate (every probe at it), with the design's cap."""

    probes: int
    pass_rate: float
    cap: int
    suite_red: float
    drifted: float
    inconclusive: float
    mean_runs: float
    p95_runs: int


def suite_red(probe_fails: float, probes: int) -> float:
    """The chance that any of `probes` independent probes fails the run, each with chance
    `probe_fails`."""
    return 1 - (1 - probe_fails) ** probes


def operating_rows(
    probes: Sequence[int] = PROBES,
    rates: Sequence[float] = RATES,
    *,
    inconclusive_fails: bool = True,
    **design: float,
) -> list[OperatingRow]:
    """A row per suite size and pass rate, for the default design or one with `design`'s
    settings (holds_at, drifted_at, alpha, beta, max_runs)."""
    rows = []
    for size in probes:
        chosen = SequentialDesign.for_suite(size, **design)  # type: ignore[arg-type]
        for rate in rates:
            oc = operating_characteristic(chosen, rate)
            fails = oc.drifted + (oc.inconclusive if inconclusive_fails else 0.0)
            rows.append(
                OperatingRow(
                    size,
                    rate,
                    chosen.cap,
                    suite_red(fails, size),
                    oc.drifted,
                    oc.inconclusive,
                    oc.mean_runs,
                    oc.runs_percentile(0.95),
                )
            )
    return rows


def _percent(value: float) -> str:
    if value == 0:
        return "0"
    if value < 0.0001:
        return "<0.01%"
    if value > 0.9999:
        return ">99.99%"
    return f"{value:.2%}"


def markdown_table(rows: Sequence[OperatingRow]) -> str:
    """The rows as the Markdown table of docs/statistics.md."""
    lines = [
        "| Probes | Cap | True pass rate | P(suite red) | P(probe drifted) | "
        "P(probe inconclusive) | Mean runs | 95th percentile runs |",
        "| -----: | --: | -------------: | -----------: | ---------------: | "
        "--------------------: | --------: | -------------------: |",
    ]
    for row in rows:
        cells = (
            str(row.probes),
            str(row.cap),
            f"{row.pass_rate:.1%}".replace(".0%", "%"),
            _percent(row.suite_red),
            _percent(row.drifted),
            _percent(row.inconclusive),
            f"{row.mean_runs:.1f}",
            str(row.p95_runs),
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the operating table of the default design."""
    del argv
    sys.stdout.write(markdown_table(operating_rows()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
