"""What a whole suite does under `--repeat auto` with the defaults (issue 18): the three
suite-level rates for suites of 1, 10, 50 and 200 probes, proven exactly, checked by seeded
simulations through `decide`, and published in docs/statistics.md.

- every probe at a true pass rate of 95% or more: the suite goes red at most 5% of the time;
- a probe at 80% or less: it is named drifted (and the suite is red) at least 80% of the time;
- a probe at 100% is decided "holds" within 12 runs; at 95% within 20 runs on average.

The exact proof: under independence P(red) = 1 − Π(1 − pᵢ), where pᵢ, a probe's chance of ending
"drifted", only falls as its pass rate rises (checked on a fine grid), so the suite whose probes
all sit at 95% is the worst case, and it is computed exactly for each size.
"""

from __future__ import annotations

import functools
import math
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from ruledrift.stats import SequentialDesign, decide, operating_characteristic
from ruledrift.stats.operating import markdown_table, operating_rows, suite_red

ROOT = Path(__file__).resolve().parents[2]
SIZES = (1, 10, 50, 200)
GOOD = [0.95 + i / 1000 for i in range(51)]  # 95.0%, 95.1%, ..., 100%
DRIFTED = [0.50 + i / 1000 for i in range(301)]  # 50.0%, ..., 80.0%


@pytest.mark.parametrize("probes", SIZES)
def test_a_suite_of_rules_that_hold_goes_red_at_most_5_percent_of_the_time(probes: int) -> None:
    design = SequentialDesign.for_suite(probes)
    endings = [operating_characteristic(design, rate) for rate in GOOD]
    assert all(oc.inconclusive == 0 for oc in endings)  # no verdict is left open by the cap
    drifted = [oc.drifted for oc in endings]
    assert drifted == sorted(drifted, reverse=True)  # the worst good probe is one at 95%
    assert suite_red(drifted[0], probes) <= 0.05
    # any mix of good probes: 1 − Π(1 − pᵢ) ≤ 1 − (1 − p(95%))^m
    rng = random.Random(probes)
    mix = [drifted[rng.randrange(len(GOOD))] for _ in range(probes)]
    assert 1 - math.prod(1 - p for p in mix) <= suite_red(drifted[0], probes) <= 0.05


@pytest.mark.parametrize("probes", SIZES)
def test_a_drifted_probe_is_named_drifted_at_least_80_percent_of_the_time(probes: int) -> None:
    design = SequentialDesign.for_suite(probes)
    drifted = [operating_characteristic(design, rate).drifted for rate in DRIFTED]
    assert drifted == sorted(drifted, reverse=True)  # the hardest drifted probe is one at 80%
    assert drifted[-1] >= 0.80


@pytest.mark.parametrize("probes", SIZES)
def test_a_clean_rule_holds_in_10_runs_and_one_at_95_percent_in_under_20_on_average(
    probes: int,
) -> None:
    design = SequentialDesign.for_suite(probes)
    clean = operating_characteristic(design, 1.0)
    assert clean.holds == 1.0
    assert clean.runs_percentile(1.0) == 10 <= 12
    assert clean.mean_runs == 10
    assert operating_characteristic(design, 0.95).mean_runs <= 20


def test_without_the_split_a_suite_of_200_is_red_almost_always() -> None:
    """The check above can fail: one probe's design, used for 200 probes, is red 99.97%."""
    unsplit = operating_characteristic(SequentialDesign(), 0.95).drifted
    assert suite_red(unsplit, 200) > 0.99


# --- seeded simulations through `decide` ---------------------------------------------------------


def probe_runner(design: SequentialDesign) -> Callable[[random.Random, float], tuple[str, int]]:
    """Runs a probe as the runner does: decide after every run, stop at the first verdict.
    `decide` is a pure function of (passes, runs), so its verdicts are cached per count: every
    verdict below is one `decide` returned."""
    verdict = functools.cache(lambda passes, runs: decide(passes, runs, design).verdict)

    def run(rng: random.Random, pass_rate: float) -> tuple[str, int]:
        passes = runs = 0
        while (found := verdict(passes, runs)) == "undecided":
            runs += 1
            passes += rng.random() < pass_rate
        return found, runs

    return run


def within(observed: float, exact: float, trials: int, sigmas: float = 4) -> bool:
    return abs(observed - exact) <= sigmas * math.sqrt(max(exact * (1 - exact), 1e-4) / trials)


@pytest.mark.parametrize(("probes", "seed"), [(1, 11), (10, 12)])
def test_ten_thousand_simulated_suites_of_good_probes(probes: int, seed: int) -> None:
    design = SequentialDesign.for_suite(probes)
    run, rng, suites = probe_runner(design), random.Random(seed), 10_000
    red = sum(any(run(rng, 0.95)[0] == "drifted" for _ in range(probes)) for _ in range(suites))
    exact = suite_red(operating_characteristic(design, 0.95).drifted, probes)
    assert red / suites <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / suites)
    assert within(red / suites, exact, suites)


@pytest.mark.parametrize(("probes", "seed"), [(1, 21), (10, 22), (50, 23), (200, 24)])
def test_ten_thousand_simulated_probes_at_80_and_95_percent(probes: int, seed: int) -> None:
    design = SequentialDesign.for_suite(probes)
    run, rng, trials = probe_runner(design), random.Random(seed), 10_000
    for rate in (0.80, 0.95):
        endings = [run(rng, rate) for _ in range(trials)]
        exact = operating_characteristic(design, rate)
        drifted = sum(verdict == "drifted" for verdict, _ in endings) / trials
        assert {verdict for verdict, _ in endings} <= {"holds", "drifted"}
        assert within(drifted, exact.drifted, trials)
        runs = [taken for _, taken in endings]
        mean = sum(runs) / trials
        spread = math.sqrt(sum((r - mean) ** 2 for r in runs) / (trials - 1) / trials)
        assert abs(mean - exact.mean_runs) <= 4 * spread
        assert max(runs) <= design.cap
    assert drifted <= exact.drifted + 4 * math.sqrt(design.probe_alpha / trials)


# --- the published table -----------------------------------------------------------------------


def test_the_operating_table_in_the_docs_is_the_computed_one() -> None:
    docs = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    table = markdown_table(operating_rows())
    assert table in docs
    assert "python -m ruledrift.stats.operating" in docs
    rows = operating_rows()
    for row in rows:
        if row.pass_rate >= 0.95:
            assert row.suite_red <= 0.05
        if row.pass_rate <= 0.80:
            assert row.drifted >= 0.80
        assert row.inconclusive == 0
    assert re.search(r"\| 200 \| 105 \| 95% \| 4\.\d\d% \|", table)
