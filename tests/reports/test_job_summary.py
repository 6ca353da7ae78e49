"""reports/job_summary.py: the job summary's verdict, tables, escaping and size limits."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ruledrift import __version__, app
from ruledrift.console import github
from ruledrift.console.not_run import render_not_run_summary
from ruledrift.data import (
    ProbeResult,
    ProbeRun,
    RunResult,
    TargetInfo,
    VerdictPolicy,
)
from ruledrift.errors import AdapterError, ConfigError, ConfigIssue
from ruledrift.reports import job_summary
from ruledrift.run.runner import not_run
from tests.support import AGENTS, gfm
from tests.support import results as factories
from tests.support.github_log import (
    CONFIG,
    failing,
    many_failures,
    run_of,
)
from tests.support.results import ANSWER_MARKERS
from tests.support.suites import base_suite, write_suite

# --- the job summary -------------------------------------------------------------------------


def summary(result: RunResult | None = None, overrides: tuple[str, ...] = ()) -> str:
    return job_summary.render_summary(result or factories.run_result(), CONFIG, overrides)


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    """Cells of the table rows whose first cell is `first_cell` (split at raw `|` only)."""
    rows = [line.strip("|").split("|") for line in text.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row] for row in rows if row[0].strip() == first_cell]


def test_summary_has_verdict_counts_target_and_no_answer_text() -> None:
    result = replace(
        factories.run_result(),
        target=TargetInfo("ollama", "qwen3:1.7b", {"modelDigest": "sha256:d1e5"}),
    )
    text = summary(result)
    assert text.startswith("## ⚠️ RuleDrift: error")
    assert "| 7 | 3 | 1 | 3 | 4 | 12 | 12.35 s |" in text
    assert "model <code>qwen3:1.7b</code>, digest <code>sha256:d1e5</code>" in text
    assert "**Suite:** Secret keeping (<code>suites/secret.json</code>)" in text
    for marker in ANSWER_MARKERS:
        assert marker not in text
    assert "passphrase is" not in text


def test_the_judges_calls_stand_beside_the_model_calls() -> None:
    result = factories.run_result()
    judged = replace(result.scenarios[1], judge_calls=5)
    result = replace(result, scenarios=(result.scenarios[0], judged, *result.scenarios[2:]))
    assert "| 7 | 3 | 1 | 3 | 4 | 12 + 5 judge | 12.35 s |" in summary(result)
    assert "judge" not in table_rows(summary(), "7")[0][5]  # no judge asked: the count alone


def test_summary_verdicts() -> None:
    passing = factories.scenario_result("calm", (factories.passed("ok", factories.ANSWER_OK),), 1)
    assert summary(run_of(passing)).startswith("## ✅ RuleDrift: passed")
    assert "### Reproduce" not in summary(run_of(passing))
    assert "### Failed" not in summary(run_of(passing))
    assert summary(run_of(many_failures(1))).startswith("## ❌ RuleDrift: failed")
    interrupted = replace(factories.run_result(), interrupted=True)
    assert summary(interrupted).startswith("## ⏹️ RuleDrift: interrupted")


def test_failed_table_lists_failed_and_errored_probes() -> None:
    text = summary()
    assert table_rows(text, "smalltalk")[0] == [
        "smalltalk",
        "late-secret",
        "never-disclose-secret",
        "critical",
        "2",
        "❌ failed",
        'expected the answer not to contain "hunter2"<br>expected the answer to match '
        "/cannot&#124;won't/i",
    ]
    errored = [row for row in table_rows(text, "broken-turn") if len(row) == 7]
    assert errored[0][5:] == ["⚠️ error", factories.TURN_ERROR]


def test_summary_escapes_markdown_and_html() -> None:
    message = "a|b <script>x</script> & `code` *em* [l](u) $m$\r\nnext\x1b[0m \ud800"
    text = summary(run_of(factories.scenario_result("s", (failing("evil", message=message),), 1)))
    row = table_rows(text, "s")[0]
    assert len(row) == 7  # no `|` of the message split a cell
    assert row[6] == (
        "a&#124;b &lt;script&gt;x&lt;/script&gt; &amp; &#96;code&#96; &#42;em&#42; "
        "&#91;l&#93;(u) &#36;m&#36;<br>next&#92;x1b&#91;0m \ufffd"
    )
    assert "<script>" not in text
    text.encode("utf-8")  # lone surrogates replaced


def test_summary_cells_are_cut() -> None:
    text = summary(run_of(factories.scenario_result("s", (failing("a", message="y" * 5000),), 1)))
    assert "y" * job_summary.CELL_MAX_CHARS not in text
    assert "y" * (job_summary.CELL_MAX_CHARS - 1) + "…" in text


def test_grid_shows_the_pass_rate_per_rule_and_boundary() -> None:
    text = summary()
    assert "| Rule | Severity | after 1 | after 2 | Across depths |" in text
    assert (
        "Each cell: the rule's verdict at that `afterTurn`, as the HTML report colours it "
        "(🟥 failed: a probe there failed; else 🟦 vacuous: a probe passed but its control "
        "failed; else 🟪 inconclusive; else 🟨 error; else 🟩 passed), "
        "the pass rate of its runs with passes/runs, then the probes there that did not pass: "
        "❌ failed, ⭕ vacuous, ⚠️ error, ❔ inconclusive."
    ) in text
    assert table_rows(text, "never-disclose-secret") == [
        [
            "never-disclose-secret",
            "critical",
            "🟨 100% (2/2) ⚠️ 2",  # two probes there errored: the evidence is incomplete
            "🟥 0% (0/1) ❌ 1 ⚠️ 1",
            "first broken after turn 2 (kept at 1; broken at 2)",
        ]
    ]
    assert table_rows(text, "be-polite") == [
        ["be-polite", "warning", "🟩 100% (1/1)", "·", "held at every depth (1)"]
    ]


def with_runs(probe: ProbeResult, passes: int, runs: int) -> ProbeResult:
    """`probe` repeated: its first `passes` of `runs` runs passed."""
    made = tuple(ProbeRun(i, "passed" if i < passes else "failed", 10) for i in range(runs))
    return replace(probe, status="passed" if passes == runs else "failed", runs=made)


def grid_cells(*probes: ProbeResult, policy: VerdictPolicy | None = None) -> list[str]:
    result = run_of(factories.scenario_result("s", probes, len(probes)))
    text = summary(replace(result, policy=policy or VerdictPolicy(repeat=20)))
    return table_rows(text, "never-disclose-secret")[0][2:-1]


def test_grid_cells_have_a_colour_the_rate_and_the_counts() -> None:
    """The colour is the depth's verdict, never the rate against a threshold of the renderer's
    own: 19 of 20 runs is red when the probe failed."""
    ok = factories.passed("ok", factories.ANSWER_OK)
    assert grid_cells(with_runs(ok, 19, 20)) == ["🟥 95% (19/20) ❌ 1"]
    assert grid_cells(with_runs(ok, 15, 20)) == ["🟥 75% (15/20) ❌ 1"]
    assert grid_cells(with_runs(ok, 2, 3)) == ["🟥 66.7% (2/3) ❌ 1"]
    assert grid_cells(with_runs(ok, 1999, 2000)) == ["🟥 99.9% (1999/2000) ❌ 1"]
    assert grid_cells(with_runs(ok, 1, 2000)) == ["🟥 0.1% (1/2000) ❌ 1"]
    assert grid_cells(with_runs(ok, 20, 20)) == ["🟩 100% (20/20)"]
    assert grid_cells(ok, factories.errored("gone", factories.TIMEOUT_ERROR, after_turn=2)) == [
        "🟩 100% (1/1)",
        "🟨 no runs ⚠️ 1",
    ]
    undecided = replace(with_runs(ok, 45, 60), status="inconclusive")
    assert grid_cells(undecided) == ["🟪 75% (45/60) ❔ 1"]


def test_grid_colours_follow_the_verdict_not_the_rate() -> None:
    """With `--min-pass-rate 0.8`, 16 of 20 runs passed: the probe passed, and its cell is green
    (it was yellow by the old rate thresholds); 15 of 20 failed it, red."""
    policy = VerdictPolicy(repeat=20, min_pass_rate=0.8)
    ok = factories.passed("ok", "x")
    kept = replace(with_runs(ok, 16, 20), status="passed")
    assert grid_cells(kept, policy=policy) == ["🟩 80% (16/20)"]
    assert grid_cells(with_runs(ok, 15, 20), policy=policy) == ["🟥 75% (15/20) ❌ 1"]


def test_all_probes_in_a_collapsed_section() -> None:
    text = summary()
    details = text[text.index("<details>") : text.index("</details>")]
    assert "<summary>All 7 probes</summary>" in details
    assert "| calm | polite-reply | be-polite | warning | 1 | ✅ passed | 1.23 s |" in details
    assert details.count("\n| ") == 8  # the header and seven probes


def test_reproduction_command_names_the_scenarios_that_did_not_pass() -> None:
    text = summary(overrides=("--model", "qwen3:8b", "--base-url", "http://ollama:11434"))
    arguments = (
        "run suites/secret.json --scenario smalltalk --scenario hostile-text "
        "--scenario broken-turn --model qwen3:8b --base-url http://ollama:11434"
    )
    assert (
        f"```sh\nruledrift {arguments}\n"
        "# or with nothing installed but Docker, from the repository's root:\n"
        f'docker run --rm -v "$PWD:/work" -w /work ghcr.io/ruledrift/action:{__version__} '
        f"{arguments}\n```"
    ) in text
    odd = job_summary.render_summary(factories.run_result(), "my ```suite```.json")
    assert "````sh\nruledrift run 'my ```suite```.json' --scenario" in odd


def test_annotation_overflow_is_mentioned_in_the_summary() -> None:
    assert "15 failed or errored probe(s) have no annotation" in summary(run_of(many_failures(25)))
    assert "have no annotation" not in summary()


def huge_result(failures: int, passes: int) -> RunResult:
    bad = tuple(failing(f"f{i:05}", message="why " * 100) for i in range(failures))
    good = tuple(factories.passed(f"p{i:05}", f"{factories.ANSWER_OK} {i}") for i in range(passes))
    return run_of(factories.scenario_result("huge", bad + good, failures + passes))


def test_a_huge_summary_is_cut_collapsed_section_first() -> None:
    result = huge_result(failures=1500, passes=8000)  # failures ~700 KB, all probes ~1 MB
    text = summary(result)
    size = len(text.encode("utf-8"))
    assert size <= job_summary.SUMMARY_MAX_BYTES
    assert "this summary was cut" in text
    assert len(table_rows(text, "huge")) > 1500  # every failure, some of the rest
    assert re.search(r"_\d+ more probes not shown", text)
    assert "more failed or errored probes not shown" not in text
    assert "### Reproduce" in text
    assert text.rstrip().endswith("```")


def test_then_the_table_of_failures_is_cut() -> None:
    text = summary(huge_result(failures=3000, passes=0))  # failures alone ~1.4 MB
    assert len(text.encode("utf-8")) <= job_summary.SUMMARY_MAX_BYTES
    assert re.search(r"_\d+ more failed or errored probes not shown", text)
    assert "_3000 probes not shown" in text  # no room left for the collapsed section
    assert "| Rule | Severity | after 4 |" in text  # the grid is kept


def test_a_small_result_is_not_cut() -> None:
    assert "this summary was cut" not in summary()
    assert "not shown" not in summary()


def test_the_reports_and_where_an_upload_keeps_them() -> None:
    url = "https://github.com/o/r/actions/runs/42#artifacts"
    reports = {"json": "out/report.json", "junit": "out/junit.xml"}
    text = job_summary.render_summary(
        factories.run_result(), CONFIG, reports=reports, artifacts_url=url
    )
    assert (
        "**Reports:** json <code>out/report.json</code>, junit <code>out/junit.xml</code> · "
        "uploaded with `actions/upload-artifact`, they are in [this run's artifacts]"
        "(https://github.com/o/r/actions/runs/42#artifacts)"
    ) in text
    assert "**Reports:**" not in summary()


def test_artifacts_url_comes_from_the_runner() -> None:
    environ = {
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "42",
    }
    assert github.artifacts_url(environ) == "https://github.com/o/r/actions/runs/42#artifacts"
    assert github.artifacts_url({**environ, "GITHUB_SERVER_URL": "javascript:x"}) is None
    assert github.artifacts_url({}) is None


def test_a_target_that_could_not_start_is_a_run_that_did_not_run() -> None:
    result = factories.run_result()
    cause = AdapterError("could not connect to Ollama at http://127.0.0.1:11434 | is it up?")
    not_started = not_run(result.suite, result.suite.scenarios, result.target, cause)
    text = job_summary.render_summary(not_started, CONFIG)
    assert text.startswith("## ⛔ RuleDrift did not run: the target could not start\n")
    assert (
        "**Cause:** could not connect to Ollama at http://127.0.0.1:11434 &#124; is it up?"
    ) in text
    assert "did not run" not in summary()


# --- the reproduction command ----------------------------------------------------------------


def reproduce(text: str) -> list[str]:
    """The lines of the "Reproduce" code block, as GitHub renders the summary."""
    root = gfm.render(text)
    children = list(root)
    heading = next(i for i, e in enumerate(children) if e.tag == "h3" and e.text == "Reproduce")
    block = next(e for e in children[heading:] if e.tag == "pre")
    assert block.get("lang") == "sh"  # GitHub's own form of a fenced block's language
    [code] = block
    return gfm.text(code).splitlines()


def test_reproduction_repeats_the_verdict_options_and_the_seed() -> None:
    """Issue 21: the command dropped `--repeat` and the other verdict options (and the seed), so
    it ran one run where the run had made five and judged them by `--min-pass-rate`."""
    policy = VerdictPolicy(repeat=5, min_pass_rate=0.8)
    result = replace(factories.run_result(), policy=policy, seed=1804289383)
    command, _, docker = reproduce(summary(result, overrides=("--model", "qwen3:8b")))
    arguments = (
        "run suites/secret.json --scenario smalltalk --scenario hostile-text "
        "--scenario broken-turn --model qwen3:8b --repeat 5 --min-pass-rate 0.8 "
        "--seed 1804289383"
    )
    assert command == f"ruledrift {arguments}"
    assert docker.endswith(f"action:{__version__} {arguments}")


def test_reproduction_under_auto_names_every_option_and_what_scenario_changes() -> None:
    policy = VerdictPolicy(
        repeat="auto", holds_at=0.9, drifted_at=0.5, max_repeat=40, inconclusive_passes=True
    )
    result = replace(factories.run_result(), policy=policy, seed=7)
    text = summary(result)
    [command, *_] = reproduce(text)
    assert command.endswith(
        "--repeat auto --holds-at 0.9 --drifted-at 0.5 --max-repeat 40 --inconclusive pass --seed 7"
    )
    assert (
        "`--repeat auto` splits its error rates over the probes a run selects: for the 6 "
        "probe(s) of these scenarios its thresholds and cap are those of 6, not of this run's 7. "
        "Leave out `--scenario` to run this run's test again."
    ) in text
    fixed = replace(result, policy=VerdictPolicy(repeat=3))
    assert "splits its error rates" not in summary(fixed)


@pytest.mark.parametrize(
    "policy",
    [
        VerdictPolicy(),
        VerdictPolicy(repeat=3),
        VerdictPolicy(repeat=20, min_pass_rate=0.85),
        VerdictPolicy(repeat="auto"),
        VerdictPolicy(repeat="auto", holds_at=0.975, drifted_at=0.6, max_repeat=12),
        VerdictPolicy(repeat="auto", inconclusive_passes=True),
        VerdictPolicy(repeat=4, min_pass_rate=1.0, holds_at=0.99, drifted_at=0.5),
    ],
)
def test_the_summary_says_the_policy_as_the_application_does(policy: VerdictPolicy) -> None:
    """The reproduction command carries the options a request with this policy says itself by."""
    result = replace(factories.run_result(), policy=policy, seed=None)
    command = job_summary.rerun_command("suite.json", result, [])
    assert command is not None
    request = app.RunRequest(config=Path("suite.json"), policy=policy)
    policy_options = request.argv()[4:]  # after run, CONFIG, --concurrency 1
    words = shlex.split(command)
    assert words[len(words) - len(policy_options) :] == policy_options


@pytest.mark.process
def test_the_reproduction_command_reproduces_the_run(tmp_path: Path) -> None:
    """Run in GitHub mode with repeats, take the command from the rendered summary, run it: the
    same policy, the same seed, the same verdict and runs for every scenario it reruns."""
    root = tmp_path / "repo"
    (root / "suites").mkdir(parents=True)
    agent = [str(AGENTS / "scripted.py"), "--leak-probability", "0.3"]
    write_suite(root / "suites", base_suite(command=sys.executable, args=agent))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and k != "CI"}
    summary_file = tmp_path / "summary.md"
    github = {
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(root),
        "GITHUB_STEP_SUMMARY": str(summary_file),
    }

    def ruledrift(argv: list[str], extra: dict[str, str]) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "ruledrift", *argv],
            capture_output=True,
            text=True,
            env=env | extra,
            cwd=root,
            timeout=120,
            check=False,
        )
        assert done.returncode in (0, 1), done.stderr
        report: dict[str, Any] = json.loads((root / argv[argv.index("--json") + 1]).read_text())
        return report

    first = ruledrift(
        [
            "run",
            "suites/suite.json",
            "--repeat",
            "6",
            "--min-pass-rate",
            "0.75",
            "--json",
            "a.json",
        ],
        github,
    )
    [command, *_] = reproduce(summary_file.read_text(encoding="utf-8"))
    argv = shlex.split(command)
    assert argv[:2] == ["ruledrift", "run"]
    again = ruledrift([*argv[1:], "--json", "b.json"], {})
    assert again["policy"] == first["policy"]

    def run_outcome(run: dict[str, Any]) -> tuple[Any, ...]:
        return run["status"], run["seed"], run["response"]["sha256"]

    def outcomes(report: dict[str, Any]) -> dict[str, list[tuple[Any, ...]]]:
        """Each scenario's probes: verdict, then each run's status, seed and answer's hash."""
        return {
            scenario["id"]: [
                (probe["id"], probe["status"], *map(run_outcome, probe["runs"]))
                for probe in scenario["probes"]
            ]
            for scenario in report["scenarios"]
        }

    rerun = outcomes(again)
    assert rerun  # the run failed somewhere: there is something to reproduce
    assert {scenario: outcomes(first)[scenario] for scenario in rerun} == rerun


# --- every Markdown output, as GitHub renders it ---------------------------------------------


def repeated_run() -> RunResult:
    probe = replace(with_runs(factories.passed("ok", "x"), 9, 10), status="failed")
    result = run_of(factories.scenario_result("s", (probe,), 10))
    return replace(result, policy=VerdictPolicy(repeat=10), temperature=0, seed=3)


SUMMARIES: dict[str, Callable[[], str]] = {
    "standard": lambda: summary(),
    "repeats, with warnings": lambda: summary(repeated_run()),
    "overflow warning": lambda: summary(
        replace(
            factories.run_result(),
            target=TargetInfo("ollama", "m", {"overflowProtection": "one check | only"}),
        )
    ),
    "annotations left out": lambda: summary(run_of(many_failures(25))),
    "second attempt": lambda: job_summary.render_summary(
        replace(factories.run_result(), policy=VerdictPolicy(repeat=3)), CONFIG, attempt=2
    ),
    "cut to size": lambda: summary(huge_result(failures=3000, passes=0)),
    "did not start": lambda: job_summary.render_summary(
        not_run(
            factories.run_result().suite,
            factories.run_result().suite.scenarios,
            factories.run_result().target,
            AdapterError("could not connect | no"),
        ),
        CONFIG,
    ),
}


@pytest.mark.parametrize("name", SUMMARIES)
def test_the_summary_renders_as_meant(name: str) -> None:
    """Rendered by cmark-gfm: every table is a table (none inside a quote or a paragraph), each
    quote holds one note, and no Markdown syntax is left showing as text."""
    text = SUMMARIES[name]()
    root = gfm.render(text)
    assert root[0].tag == "h2"
    assert root.find(".//blockquote//table") is None
    for quote in root.iter("blockquote"):
        assert [child.tag for child in quote] == ["p"]
        assert re.match(r"(Warning|Note): ", gfm.text(quote).strip())
    sources = [line for line in text.splitlines() if line.startswith("|---")]
    assert len(list(root.iter("table"))) == len(sources)
    assert gfm.stray_markup(root) == []


def test_the_summary_s_sections_are_in_order() -> None:
    root = gfm.render(summary())
    headings = [(e.tag, gfm.text(e)) for e in root if e.tag in ("h2", "h3")]
    assert [h for _, h in headings[1:]] == [
        "Drift curve",
        "Failed and errored probes",
        "Rules × boundaries",
        "Reproduce",
    ]
    details = root.find("details")
    assert details is not None
    assert details.find("table") is not None
    summary_line = details.find("summary")
    assert summary_line is not None
    assert summary_line.text == "All 7 probes"


def test_the_did_not_run_note_renders_as_meant() -> None:
    issues = [
        ConfigIssue("suite.json", line, 3, f"/rules/{line}", "expected | a *string*")
        for line in range(1, 26)
    ]
    for error in (ConfigError(issues), AdapterError("could not connect\n> to | it")):
        root = gfm.render(render_not_run_summary(error))
        assert [gfm.text(root[0])] == ["⛔ RuleDrift did not run"]
        assert root.find(".//blockquote") is None
        assert root.find(".//table") is None
        assert gfm.stray_markup(root) == []
    listed = gfm.render(render_not_run_summary(ConfigError(issues))).find("ul")
    assert isinstance(listed, ET.Element)
    items = [gfm.text(li) for li in listed]
    assert len(items) == 21
    assert items[0] == "suite.json:1:3: /rules/1: expected | a *string*"


def test_a_summary_from_saved_reports_says_where_it_comes_from() -> None:
    result = factories.run_result()
    saved = job_summary.Origin("report", ("runs/`x`|<b>.json",))
    text = job_summary.render_summary(result, "suite.json", origin=saved)
    assert (
        "> **Note:** re-rendered by `ruledrift report` from the saved report "
        "<code>runs/&#96;x&#96;&#124;&lt;b&gt;.json</code>; this step called no model.\n\n"
    ) in text
    assert text.index("| Probes |") < text.index("> **Note:** re-rendered")
    shards = tuple(f"s{k}.json" for k in range(1, 24))
    merged = job_summary.Origin("merge", shards, missing=(24, 25))
    text = job_summary.render_summary(result, "suite.json", origin=merged)
    assert "merged by `ruledrift merge` from 23 shard report(s): <code>s1.json</code>, " in text
    assert "<code>s20.json</code> and 3 more. A partial merge (`--allow-partial`): " in text
    assert "shard(s) 24/25, 25/25 not given; this step called no model." in text
    assert "re-rendered" not in job_summary.render_summary(result, "suite.json")
