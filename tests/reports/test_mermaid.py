"""reports/job_summary.py: the drift curve as a Mermaid chart in the job summary: where it goes,
what it shows, that no suite text reaches it, its size budget, and its syntax, checked with the
real Mermaid parser (the `mermaid` npm package pinned in tests/mermaid, run by Node)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from ruledrift.data import Location, ProbeResult, ProbeRun, Rule, RunResult, Severity
from ruledrift.reports import job_summary
from tests.support import results as factories
from tests.support.github_log import CONFIG, run_of

ROOT = Path(__file__).resolve().parents[2]
PARSER = ROOT / "tests" / "mermaid"
FENCE = re.compile(r"^```mermaid\n(.*?)^```$", re.DOTALL | re.MULTILINE)
# The colours of the lines, for Mermaid (and no text from the suite).
THEME = (
    '%%{init: {"themeVariables": {"xyChart": {"plotColorPalette": '
    '"#0072B2,#D55E00,#009E73,#CC79A7,#9467BD,#9A6700,#008695,#6E7781"}}}}%%\n'
)
# Every line a chart may hold: fixed words, depths, numbers and the labels `rule N`.
CHART_LINE = re.compile(
    re.escape(THEME.strip())
    + r'|xychart-beta|    title "Pass rate by depth"|    x-axis "after turn" \["\d+"(, "\d+")+\]'
    r'|    y-axis "pass rate \(%\)" 0 --> 100|    line "rule \d+" \[\d+(\.\d)?(, \d+(\.\d)?)+\]'
)
HOSTILE_IDS = (
    'say "hi" [ok]',
    '%%{init: {"theme": "dark"}}%%',
    "%% a comment",
    'a --> b; line "x" [1]',
    "two\nlines\n```\n# heading",
    "</code><script>alert(1)</script>",
    "`tick` | pipe | *em* _u_ $x$",
    "\r\n\x1b[31mred\x1b[0m \ud800",
)

Rates = Mapping[int, tuple[int, int]]  # depth -> (passes, runs)


def rule(rule_id: str, severity: Severity = "critical") -> Rule:
    return Rule(rule_id, "Keep it.", severity, Location(3, 5))


def repeated(the_rule: Rule, depth: int, passes: int, runs: int) -> ProbeResult:
    """A probe of `the_rule` at `depth` whose first `passes` of `runs` runs passed."""
    probe = factories.probe(f"{the_rule.id}@{depth}", the_rule, depth)
    made = tuple(ProbeRun(i, "passed" if i < passes else "failed", 10) for i in range(runs))
    return ProbeResult(probe, "passed" if passes == runs else "failed", 10, runs=made)


def drift(curves: Sequence[tuple[Rule, Rates]]) -> RunResult:
    """One scenario with a probe per rule and depth, each with its passes out of its runs."""
    probes = tuple(
        repeated(the_rule, depth, *counts)
        for the_rule, rates in curves
        for depth, counts in rates.items()
    )
    return run_of(factories.scenario_result("deep", probes, len(probes)))


def summary(result: RunResult, max_bytes: int = job_summary.SUMMARY_MAX_BYTES) -> str:
    return job_summary.render_summary(result, CONFIG, max_bytes=max_bytes)


def charts(text: str) -> list[str]:
    return FENCE.findall(text)


FORGETS = {0: (20, 20), 4: (18, 20), 8: (9, 20), 12: (2, 20)}
HOLDS = {0: (20, 20), 4: (20, 20), 8: (20, 20), 12: (19, 20)}


def fixtures() -> dict[str, RunResult]:
    """Results whose summaries have a chart, for the parser."""
    odd = {0: (1, 3), 7: (2, 3), 250: (0, 3)}
    return {
        "demo": demo(),
        "default": factories.run_result(),
        "drift": drift([(rule("never-disclose"), FORGETS), (rule("be-polite", "warning"), HOLDS)]),
        "hostile": drift(
            [(rule(i), FORGETS if n % 2 else HOLDS) for n, i in enumerate(HOSTILE_IDS)]
        ),
        "capped": drift([(rule(f"r{n:02}"), {0: (20, 20), 5: (20 - n, 20)}) for n in range(15)]),
        "fractions": drift(
            [(rule("thirds"), odd), (rule("never"), {0: (0, 3), 7: (0, 3), 250: (0, 3)})]
        ),
    }


# --- the chart in the summary ----------------------------------------------------------------


def test_the_summary_leads_with_the_curve_when_there_is_more_than_one_depth() -> None:
    text = summary(fixtures()["drift"])
    assert text.index("| Probes |") < text.index("### Drift curve") < text.index("### Failed")
    assert text.index("### Drift curve") < text.index("### Rules × boundaries")
    assert charts(text) == [
        THEME + "xychart-beta\n"
        '    title "Pass rate by depth"\n'
        '    x-axis "after turn" ["0", "4", "8", "12"]\n'
        '    y-axis "pass rate (%)" 0 --> 100\n'
        '    line "rule 1" [100, 90, 45, 10]\n'
        '    line "rule 2" [100, 100, 100, 95]\n'
    ]
    assert (
        "The lines, at depths 0 → 4 → 8 → 12, in the order of their colours (and of the chart's "
        "legend, where GitHub's Mermaid draws one):\n\n"
        "- **rule 1** (blue): <code>never-disclose</code> (critical): 100% → 90% → 45% → 10%\n"
        "- **rule 2** (orange): <code>be-polite</code> (warning): 100% → 100% → 100% → 95%\n\n"
    ) in text


def test_one_depth_has_no_chart() -> None:
    text = summary(drift([(rule("only"), {3: (5, 10)})]))
    assert "### Drift curve" not in text
    assert "```mermaid" not in text
    assert "### Rules × boundaries" in text


def test_no_suite_text_reaches_the_chart() -> None:
    for name, result in fixtures().items():
        for chart in charts(summary(result)):
            for line in chart.splitlines():
                assert CHART_LINE.fullmatch(line), f"{name}: {line!r}"


def test_hostile_rule_ids_are_named_below_the_chart_escaped() -> None:
    text = summary(fixtures()["hostile"])
    assert len(charts(text)) == 1
    assert text.count("```") == 2 + 2  # the chart's fence and the reproduction command's
    assert "<script>" not in text
    assert "</code><script>" not in text
    assert "%%" not in charts(text)[0].removeprefix(THEME)  # only our own directive
    items = [line for line in text.splitlines() if line.startswith("- **rule ")]
    assert len(items) == len(HOSTILE_IDS)
    assert items[0] == (
        '- **rule 1** (blue): <code>say "hi" &#91;ok&#93;</code> (critical): '
        "100% → 100% → 100% → 95%"
    )
    assert items[3] == (
        '- **rule 4** (pink): <code>a --&gt; b; line "x" &#91;1&#93;</code> (critical): '
        "100% → 90% → 45% → 10%"
    )
    assert items[4].startswith(
        "- **rule 5** (purple): <code>two<br>lines<br>&#96;&#96;&#96;<br># heading</code>"
    )
    assert items[5].startswith(
        "- **rule 6** (brown): <code>&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;</code>"
    )
    assert items[7].startswith(
        "- **rule 8** (grey): <code><br>&#92;x1b&#91;31mred&#92;x1b&#91;0m \ufffd</code>"
    )
    text.encode("utf-8")


def test_at_most_eight_rules_are_drawn_the_lowest_with_a_note() -> None:
    text = summary(fixtures()["capped"])
    (chart,) = charts(text)
    assert chart.count("    line ") == job_summary.CHART_MAX_RULES == 8
    drawn = re.findall(r"^- \*\*rule \d+\*\* \(\w+\): <code>(r\d\d)</code>", text, re.M)
    assert drawn == [f"r{n:02}" for n in range(7, 15)]  # r00..r06 lost the least
    assert "_7 more rules are not drawn: the charts show at most 8, those with the lowest" in text
    assert len([row for row in text.splitlines() if row.startswith("| r")]) == 15


def demo() -> RunResult:
    """As examples/demo: one rule probed at 0, 4, 8 and 12, another at 0, 6 and 12."""
    return drift(
        [
            (rule("never-disclose-secret"), {0: (1, 1), 4: (1, 1), 8: (0, 1), 12: (0, 1)}),
            (rule("english-only", "warning"), {0: (1, 1), 6: (1, 1), 12: (0, 1)}),
        ]
    )


def test_rules_probed_at_different_depths_are_drawn_over_their_own_depths() -> None:
    text = summary(demo())
    assert charts(text) == [
        THEME + "xychart-beta\n"
        '    title "Pass rate by depth"\n'
        '    x-axis "after turn" ["0", "4", "8", "12"]\n'
        '    y-axis "pass rate (%)" 0 --> 100\n'
        '    line "rule 1" [100, 100, 0, 0]\n',
        THEME + "xychart-beta\n"
        '    title "Pass rate by depth"\n'
        '    x-axis "after turn" ["0", "6", "12"]\n'
        '    y-axis "pass rate (%)" 0 --> 100\n'
        '    line "rule 2" [100, 100, 0]\n',
    ]
    assert "Rules probed at different depths are drawn in different charts" in text
    assert (
        "The line, at depths 0 → 4 → 8 → 12:\n\n"
        "- **rule 1** (blue): <code>never-disclose-secret</code> (critical): 100% → 100% → 0% → 0%"
    ) in text
    assert (
        "The line, at depths 0 → 6 → 12:\n\n"
        "- **rule 2** (blue): <code>english-only</code> (warning): 100% → 100% → 0%"
    ) in text
    assert "Not drawn" not in text


def test_rules_sharing_their_depths_share_a_chart_in_the_suites_order() -> None:
    early, late = {0: (5, 5), 4: (3, 5)}, {2: (5, 5), 6: (1, 5)}
    text = summary(drift([(rule("a"), early), (rule("b"), late), (rule("c"), early)]))
    first, second = charts(text)
    assert re.findall(r'line "(rule \d)"', first) == ["rule 1", "rule 2"]
    assert '"0", "4"' in first
    assert re.findall(r'line "(rule \d)"', second) == ["rule 3"]
    assert '"2", "6"' in second
    items = re.findall(r"^- \*\*(rule \d)\*\* \((\w+)\): <code>(\w)</code>", text, re.M)
    assert items == [("rule 1", "blue", "a"), ("rule 2", "orange", "c"), ("rule 3", "blue", "b")]


def test_a_rule_with_a_finished_run_at_one_depth_only_is_named_not_drawn() -> None:
    text = summary(factories.run_result())  # be-polite ran at depth 1 only
    (chart,) = charts(text)
    assert chart.count("    line ") == 1
    assert "_Not drawn, with a finished run at one depth only: <code>be-polite</code>._" in text
    scattered = drift([(rule("early"), {0: (3, 3)}), (rule("late"), {9: (1, 3)})])
    text = summary(scattered)
    assert charts(text) == []
    assert (
        "_Not drawn, with a finished run at one depth only: <code>early</code>, <code>late</code>._"
        in text
    )


def test_a_depth_where_every_run_errored_has_no_point() -> None:
    errored = ProbeResult(
        factories.probe("gone@8", rule("gone"), 8), "error", 10, error="timed out"
    )
    result = drift([(rule("gone"), {0: (3, 3), 4: (2, 3), 12: (0, 3)})])
    scenario = result.scenarios[0]
    result = run_of(factories.scenario_result("deep", (*scenario.probes, errored), 4))
    (chart,) = charts(summary(result))
    assert '["0", "4", "12"]' in chart
    assert 'line "rule 1" [100, 66.7, 0]' in chart


def luminance(colour: str) -> float:
    """WCAG 2's relative luminance of `#RRGGBB`."""
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_every_line_colour_reads_on_white_and_on_githubs_dark_background() -> None:
    colours = [colour for colour, _ in job_summary.CHART_COLOURS]
    assert len(colours) == len(set(colours)) == job_summary.CHART_MAX_RULES
    for colour in colours:
        assert contrast(colour, "#ffffff") >= 3, colour  # WCAG 1.4.11, graphics
        assert contrast(colour, "#0d1117") >= 3, colour  # GitHub's dark canvas
    assert contrast("#ECECFF", "#ffffff") < 1.2  # Mermaid's default first line: invisible
    assert THEME.strip() == job_summary._THEME


def test_the_chart_counts_against_the_size_budget() -> None:
    result = fixtures()["drift"]
    full = summary(result)
    start = full.index("### Drift curve")
    head, chart, tail = (
        full[:start],
        full[start : full.index("### Failed")],
        full[full.index("### Reproduce") :],
    )
    fits = sum(len(part.encode("utf-8")) for part in (head, chart, tail)) + 1024  # and the notes
    kept = summary(result, max_bytes=fits)
    assert chart in kept
    assert "### Rules × boundaries" not in kept  # no room left for the grid
    cut = summary(result, max_bytes=fits - 1)
    assert "```mermaid" not in cut
    assert "_The drift chart is not shown: the summary reached its size limit._" in cut
    assert "this summary was cut" in cut


# --- the real Mermaid parser -----------------------------------------------------------------


def parser_missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    if not (PARSER / "node_modules" / "mermaid").is_dir():
        return "tests/mermaid/node_modules is missing: run `npm ci --prefix tests/mermaid`"
    return None


needs_parser = pytest.mark.skipif(parser_missing() is not None, reason=str(parser_missing()))


def parse(files: Sequence[Path]) -> tuple[int, dict[str, dict[str, object]]]:
    """`node tests/mermaid/parse.mjs FILE...`: its exit code and its verdict per file."""
    done = subprocess.run(
        ["node", str(PARSER / "parse.mjs"), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    verdicts = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(verdicts) == len(files), done.stderr
    return done.returncode, {Path(str(v["file"])).stem: v for v in verdicts}


@pytest.mark.process
@needs_parser
def test_every_chart_parses_with_mermaid(tmp_path: Path) -> None:
    files = []
    for name, result in fixtures().items():
        for n, chart in enumerate(charts(summary(result)), 1):
            files.append(tmp_path / f"{name}-{n}.mmd")
            files[-1].write_text(chart, encoding="utf-8")
    assert len(files) == len(fixtures()) + 1  # the demo has two charts
    code, verdicts = parse(files)
    assert {name: v["ok"] for name, v in verdicts.items()} == {f.stem: True for f in files}
    assert {v["diagramType"] for v in verdicts.values()} == {"xychart"}
    assert code == 0
    palette = [colour for colour, _ in job_summary.CHART_COLOURS]
    for name, verdict in verdicts.items():  # Mermaid reads the chart's own colours
        lines = files[[f.stem for f in files].index(name)].read_text().count("    line ")
        assert verdict["lineColours"] == palette[:lines], name


@pytest.mark.process
@needs_parser
def test_a_broken_chart_fails_to_parse(tmp_path: Path) -> None:
    (chart,) = charts(summary(fixtures()["drift"]))
    broken = {
        "unclosed": chart.replace("45, 10]", "45, 10"),
        "quote": chart.replace('"rule 1"', '"rule "1"'),
        "no-type": chart.replace("xychart-beta", "xychart-gamma"),
    }
    files = []
    for name, text in {"good": chart, **broken}.items():
        files.append(tmp_path / f"{name}.mmd")
        files[-1].write_text(text, encoding="utf-8")
    code, verdicts = parse(files)
    assert {name: v["ok"] for name, v in verdicts.items()} == {
        "good": True,
        "unclosed": False,
        "quote": False,
        "no-type": False,
    }
    assert "Parse error on line" in str(verdicts["unclosed"]["error"])
    assert code == 1
