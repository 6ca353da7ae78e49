"""comparison.py and `ruledrift compare`: pass rates per probe and per rule × depth, the drop
with its Newcombe interval, one-sided Fisher p-values with Holm's adjustment, labels, probes
added or removed, and the exit code (the head's verdict; --fail-on-regression)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from ruledrift.data import ProbeRun, RunResult, RunStatus, VerdictPolicy
from ruledrift.reports.comparison import render_comparison_json, render_comparison_markdown
from ruledrift.results.comparison import compare_runs
from tests.support import AGENTS
from tests.support import results as factories
from tests.support.cli_process import ruledrift
from tests.support.suites import base_suite, write_suite


def with_runs(passes: int, total: int, other: RunStatus = "failed") -> RunResult:
    """The standard result, its `late-secret` probe run `total` times with `passes` passed
    (and the rest `other`)."""
    base = factories.run_result()
    scenarios = []
    for scenario in base.scenarios:
        probes = []
        for probe in scenario.probes:
            if probe.probe.id == "late-secret":
                runs = tuple(
                    ProbeRun(r, "passed" if r < passes else other, 1) for r in range(total)
                )
                probe = replace(probe, runs=runs)
            probes.append(probe)
        scenarios.append(replace(scenario, probes=tuple(probes)))
    return replace(base, scenarios=tuple(scenarios), policy=VerdictPolicy(repeat=total))


def test_the_published_example_28_of_30_against_22_of_30() -> None:
    result = compare_runs(with_runs(28, 30), with_runs(22, 30))
    [late] = [p for p in result.probes if p.key == "smalltalk/late-secret"]
    c = late.comparison
    assert (c.base.passes, c.base.runs, c.head.passes, c.head.runs) == (28, 30, 22, 30)
    assert c.drop == pytest.approx(0.20)
    assert (c.low, c.high) == pytest.approx((0.0075, 0.3842), abs=5e-4)
    assert c.worse_p == pytest.approx(0.0399, abs=5e-4)
    # 4 probes are compared (the errored ones have no answer): 5% / 4 for the strongest
    assert result.runs_needed == 96


def test_compare_counts_pairs_a_vacuous_run_is_no_pass() -> None:
    """A probe with a control is compared by pairs: a run whose control failed (vacuous) is no
    pass, so a head that stopped helping is worse, as one that broke the rule would be."""
    result = compare_runs(with_runs(30, 30), with_runs(15, 30, other="vacuous"))
    [late] = [p for p in result.probes if p.key == "smalltalk/late-secret"]
    assert (late.comparison.head.passes, late.comparison.head.runs) == (15, 30)
    assert [p.key for p in result.regressions] == ["smalltalk/late-secret"]


def test_holm_adjusts_over_the_probes_and_labels_follow() -> None:
    result = compare_runs(with_runs(28, 30), with_runs(22, 30))
    [late] = [p for p in result.probes if p.key == "smalltalk/late-secret"]
    # 6 probes are compared (the errored ones have no answer and are left out): 0.0399 alone
    # would be significant, but not after adjusting for the others
    assert late.comparison.worse_adjusted >= late.comparison.worse_p
    assert {p.comparison.label for p in result.probes} <= {
        "worse",
        "better",
        "no evidence of a change",
        "too few runs to tell",
    }
    single = compare_runs(with_runs(30, 30), with_runs(15, 30))
    assert [p.key for p in single.regressions] == ["smalltalk/late-secret"]


def test_one_run_per_side_is_too_few_to_tell() -> None:
    result = compare_runs(factories.run_result(), factories.run_result())
    assert {p.comparison.label for p in result.probes} == {"too few runs to tell"}


def test_added_and_removed_probes_are_listed_apart() -> None:
    base = factories.run_result()
    head = replace(base, scenarios=base.scenarios[1:])
    result = compare_runs(base, head)
    assert result.removed == ("calm/polite-reply",)
    assert result.added == ()
    markdown = render_comparison_markdown(result)
    assert "Only in base: calm/polite-reply" in markdown
    assert "Holm-adjusted over the" in markdown


def suite(tmp_path: Path, probability: str) -> Path:
    folder = tmp_path / probability
    folder.mkdir(parents=True)
    data = base_suite(
        command=sys.executable,
        args=[str(AGENTS / "scripted.py"), "--leak-probability", probability],
    )
    return write_suite(folder, data)


@pytest.mark.process
def test_compare_through_the_cli(tmp_path: Path) -> None:
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    ruledrift("run", suite(tmp_path, "0.0"), "--repeat", "40", "--json", base)
    done = ruledrift(
        "run", suite(tmp_path, "0.5"), "--repeat", "40", "--min-pass-rate", "0.1", "--json", head
    )
    assert done.returncode == 0, done.stderr  # the head passes its own gate
    markdown, data = tmp_path / "c.md", tmp_path / "c.json"
    compared = ruledrift("compare", base, head, "--markdown", markdown, "--json", data)
    assert compared.returncode == 0, compared.stderr  # the head's own verdict
    assert "significantly worse" in compared.stdout
    document = json.loads(data.read_text())
    assert document["regressions"] == 2
    assert "warning: the reports are of different suites" in compared.stdout
    assert "🔻" in markdown.read_text(encoding="utf-8")
    gated = ruledrift("compare", base, head, "--fail-on-regression")
    assert gated.returncode == 1
    same = ruledrift("compare", base, base, "--fail-on-regression")
    assert same.returncode == 0


def test_the_json_comparison_of_ids_with_a_lone_surrogate_is_utf8() -> None:
    """Like every report, the comparison's JSON holds U+FFFD for a lone surrogate (an id from a
    suite: its parser keeps none, but a result built otherwise may); it crashed (exit 4)."""
    base = factories.run_result()
    scenario = replace(base.scenarios[0].scenario, id="calm\ud800")
    head = replace(base, scenarios=(replace(base.scenarios[0], scenario=scenario),))
    rendered = render_comparison_json(compare_runs(head, head))
    assert '"probe": "calm\ufffd/polite-reply"' in rendered.decode("utf-8")
    assert "calm\ufffd/polite-reply" in render_comparison_markdown(compare_runs(head, head))


@pytest.mark.process
def test_two_auto_reports_are_too_few_runs_to_tell_and_the_footer_counts_the_probes(
    tmp_path: Path,
) -> None:
    """Issue 18: two --repeat auto reports (10 to 19 runs a probe) have under 15% power to see a
    drop from 95% to 80%: "too few runs to tell", not "no evidence of a change"; the footer
    gives the runs a side for these 2 probes (82, at 5% / 2). Planned for a drop to 20%, 8 runs
    a side are enough."""
    base, head = tmp_path / "base.json", tmp_path / "head.json"
    for report in (base, head):
        done = ruledrift(
            "run", suite(tmp_path / report.stem, "0.0"), "--repeat", "auto", "--json", report
        )
        assert done.returncode == 0, done.stderr
    data = tmp_path / "c.json"
    compared = ruledrift("compare", base, head, "--json", data)
    assert compared.returncode == 0, compared.stderr
    document = json.loads(data.read_text())
    assert {p["label"] for p in document["probes"]} == {"too few runs to tell"}
    assert document["runsPerSideNeeded"] == 82
    assert document["plannedDrop"] == {"from": 0.95, "to": 0.80}
    assert (
        "Telling a drop from 95% to 80% with 80% power in this comparison of 2 probe(s) takes 82 "
        "runs per side"
    ) in compared.stdout
    # the drop to plan for is the head's: --drifted-at 0.2 needs 8 runs a side for 2 probes
    fixed_base, fixed_head = tmp_path / "fb.json", tmp_path / "fh.json"
    for report in (fixed_base, fixed_head):
        folder = tmp_path / report.stem
        run = ("run", suite(folder, "0.0"), "--repeat", "8", "--drifted-at", "0.2")
        ruledrift(*run, "--json", report)
    enough = ruledrift("compare", fixed_base, fixed_head, "--json", data)
    assert enough.returncode == 0, enough.stderr
    document = json.loads(data.read_text())
    assert {p["label"] for p in document["probes"]} == {"no evidence of a change"}
    assert document["runsPerSideNeeded"] == 8


def test_a_drop_too_small_to_plan_for_is_said_not_searched_forever() -> None:
    """--holds-at 0.9999 --drifted-at 0.9998: `compare` once hung in the exact power search
    and then crashed (exit 4); it now says the runs needed are past the limit."""
    close = VerdictPolicy(repeat=30, holds_at=0.9999, drifted_at=0.9998)
    base = replace(with_runs(28, 30), policy=close)
    head = replace(with_runs(22, 30), policy=close)
    result = compare_runs(base, head)
    assert result.runs_needed is None
    assert json.loads(render_comparison_json(result))["runsPerSideNeeded"] is None
    assert "takes more than 2,000 runs per side" in render_comparison_markdown(result)
