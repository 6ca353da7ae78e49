"""GitHub annotations and job summary: escaping as the toolkit does, GitHub's limits, summary
contents, escaping and size, and no answer text anywhere."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path

import pytest

from ruledrift.model import (
    AssertionResult,
    Location,
    ProbeResult,
    Rule,
    RunResult,
    ScenarioResult,
    Severity,
    TargetInfo,
)
from ruledrift.reports import github, job_summary
from ruledrift.reports import workflow_commands as commands
from tests.support import results as factories
from tests.support.results import ANSWER_LEAK, ANSWER_MARKERS

CONFIG = "suites/secret.json"


def unescape_data(text: str) -> str:
    """As actions/runner's ActionCommand.UnescapeData: CR, LF, then `%`."""
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    """As actions/runner's ActionCommand.UnescapeProperty."""
    for escaped, plain in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%")):
        text = text.replace(escaped, plain)
    return text


def parse(line: str) -> tuple[str, dict[str, str], str]:
    """A workflow command as actions/runner's TryParseV2 reads it: name, properties, data."""
    assert line.startswith("::")
    assert "\n" not in line
    assert "\r" not in line
    end = line.index("::", 2)
    name, _, listed = line[2:end].partition(" ")
    properties = dict(pair.split("=", 1) for pair in listed.split(",") if pair)
    return (
        name,
        {k: unescape_property(v) for k, v in properties.items()},
        unescape_data(line[end + 2 :]),
    )


def rule(severity: Severity) -> Rule:
    return Rule(f"rule-{severity}", "Keep it.", severity, Location(3, 5))


def failing(
    probe_id: str, severity: Severity = "critical", line: int = 7, message: str = "nope"
) -> ProbeResult:
    base = factories.failed(probe_id, ANSWER_LEAK, after_turn=4)
    probe = replace(base.probe, rule=rule(severity), location=Location(line, 9))
    held = AssertionResult("contains", True, "held")
    return replace(base, probe=probe, assertions=(AssertionResult("equals", False, message), held))


def run_of(*scenarios: ScenarioResult, details: dict[str, object] | None = None) -> RunResult:
    base = factories.run_result()
    rules = tuple({p.probe.rule.id: p.probe.rule for s in scenarios for p in s.probes}.values())
    suite = replace(factories.suite(tuple(s.scenario for s in scenarios)), rules=rules)
    target = TargetInfo("ollama", "qwen3:1.7b", details if details is not None else {})
    return replace(base, suite=suite, target=target, scenarios=scenarios)


def many_failures(count: int, severity: Severity = "critical") -> ScenarioResult:
    probes = tuple(failing(f"p{i:02}", severity, line=10 + i) for i in range(count))
    return factories.scenario_result(f"many-{severity}", probes, count)


# --- escaping --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["plain", "100% sure", "%0A::error::x", "a:b,c=d", "line\r\nbreak\rx\ny", "%%25%"]
)
def test_commands_round_trip_through_the_runners_unescaping(text: str) -> None:
    line = commands.workflow_command("warning", text, {"title": text, "line": 3})
    name, properties, data = parse(line)
    assert (name, properties, data) == ("warning", {"title": text, "line": "3"}, text)


def test_command_without_properties() -> None:
    assert commands.workflow_command("notice", "hi") == "::notice::hi"


def test_stop_commands_uses_a_fresh_token_per_block() -> None:
    first, second = commands.stop_commands("a\n"), commands.stop_commands("a")
    match = re.fullmatch(r"::stop-commands::([0-9a-f]{32})\na\n::\1::\n", first)
    assert match
    assert re.fullmatch(r"::stop-commands::([0-9a-f]{32})\na\n::\1::\n", second)
    assert match.group(1) not in second


# --- annotations -----------------------------------------------------------------------------


def test_one_annotation_per_failed_or_errored_probe_and_no_answer_text() -> None:
    lines = commands.render_annotations(factories.run_result(), CONFIG)
    assert len(lines) == 4  # one failed probe, three errored ones
    name, properties, data = parse(lines[0])
    assert name == "error"
    assert properties == {
        "file": CONFIG,
        "line": "1",
        "title": "RuleDrift: smalltalk/late-secret broke rule never-disclose-secret (after turn 2)",
    }
    assert data == (
        'expected the answer not to contain "hunter2"\nexpected the answer to match '
        "/cannot|won't/i"
    )
    name, properties, data = parse(lines[1])
    assert properties["title"] == (
        "RuleDrift: hostile-text/slow could not be run (rule never-disclose-secret, after turn 1)"
    )
    assert data == factories.TIMEOUT_ERROR
    for marker in ANSWER_MARKERS:
        assert all(marker not in line for line in lines)


def test_a_passing_run_has_no_annotations() -> None:
    passing = factories.scenario_result("calm", (factories.passed("ok", factories.ANSWER_OK),), 1)
    assert commands.render_annotations(run_of(passing), CONFIG) == []


def test_level_follows_severity_and_line_the_probe() -> None:
    probes = (failing("a", "info", 11), failing("b", "warning", 22), failing("c", "critical", 33))
    result = run_of(factories.scenario_result("mixed", probes, 3))
    parsed = [parse(line) for line in commands.render_annotations(result, CONFIG)]
    # critical first: GitHub keeps only the first annotations of a step
    assert [(name, props["line"]) for name, props, _ in parsed] == [
        ("error", "33"),
        ("warning", "22"),
        ("notice", "11"),
    ]


def test_25_critical_failures_give_10_errors_and_a_note() -> None:
    lines = commands.render_annotations(run_of(many_failures(25)), CONFIG)
    names = [parse(line)[0] for line in lines]
    assert names == ["error"] * 10 + ["notice"]
    assert [parse(line)[1]["line"] for line in lines[:10]] == [str(10 + i) for i in range(10)]
    _name, properties, data = parse(lines[-1])
    assert properties == {"title": "RuleDrift: 15 more probe(s) not annotated"}
    assert data.startswith("15 more failed or errored probe(s) are not annotated")


def test_the_note_never_is_the_eleventh_notice() -> None:
    result = run_of(many_failures(12, "critical"), many_failures(12, "info"))
    names = [parse(line)[0] for line in commands.render_annotations(result, CONFIG)]
    assert names.count("error") == 10
    assert names.count("notice") == 10  # 9 probes and the note, which counts the 10th
    assert names[-1] == "notice"
    assert "5 more" in commands.render_annotations(result, CONFIG)[-1]
    assert commands.plan_annotations(result)[1] == 5


def test_ten_of_each_level_fit_without_a_note() -> None:
    result = run_of(many_failures(10, "critical"), many_failures(10, "info"))
    lines = commands.render_annotations(result, CONFIG)
    assert len(lines) == 20
    assert "more probe(s) not annotated" not in "".join(lines)


def test_messages_are_cut_at_4096_characters() -> None:
    long = failing("long", message="x" * 10_000)
    line = commands.render_annotations(run_of(factories.scenario_result("s", (long,), 1)), CONFIG)[
        0
    ]
    data = parse(line)[2]
    assert len(data) == commands.MESSAGE_MAX_CHARS
    assert data.endswith("x…")


def test_hostile_messages_stay_inside_the_command() -> None:
    hostile = failing("evil", message="a%0A::error::x\r::add-mask::y\n##[error]z")
    line = commands.render_annotations(
        run_of(factories.scenario_result("s", (hostile,), 1)), CONFIG
    )
    assert len(line) == 1
    assert "\n" not in line[0]
    assert "\r" not in line[0]
    assert parse(line[0])[2] == "a%0A::error::x\r::add-mask::y\n##[error]z"


def test_annotation_file_is_relative_to_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    (workspace / "suites").mkdir(parents=True)
    inside = Path("suites/s.json")
    assert commands.annotation_file(inside, str(workspace), cwd=workspace) == "suites/s.json"
    absolute = workspace / "suites" / "s.json"
    assert commands.annotation_file(absolute, str(workspace), cwd=tmp_path) == "suites/s.json"
    assert (
        commands.annotation_file(Path("repo/./x/../s.json"), str(workspace), tmp_path) == "s.json"
    )
    outside = tmp_path / "elsewhere.json"
    assert commands.annotation_file(outside, str(workspace), cwd=workspace) == outside.as_posix()
    assert commands.annotation_file(inside, None, cwd=tmp_path) == "suites/s.json"
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert commands.annotation_file(link / "s.json", str(workspace), cwd=tmp_path) == "s.json"


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


def test_grid_counts_per_rule_and_boundary() -> None:
    text = summary()
    assert "| Rule | Severity | after 1 | after 2 |" in text
    assert table_rows(text, "never-disclose-secret") == [
        ["never-disclose-secret", "critical", "✅ 2 ⚠️ 2", "❌ 1 ⚠️ 1"]
    ]
    assert table_rows(text, "be-polite") == [["be-polite", "warning", "✅ 1", "·"]]


def test_all_probes_in_a_collapsed_section() -> None:
    text = summary()
    details = text[text.index("<details>") : text.index("</details>")]
    assert "<summary>All 7 probes</summary>" in details
    assert "| calm | polite-reply | be-polite | warning | 1 | ✅ passed | 1.23 s |" in details
    assert details.count("\n| ") == 8  # the header and seven probes


def test_reproduction_command_names_the_scenarios_that_did_not_pass() -> None:
    text = summary(overrides=("--model", "qwen3:8b", "--base-url", "http://ollama:11434"))
    assert (
        "```sh\nruledrift run suites/secret.json --scenario smalltalk --scenario hostile-text "
        "--scenario broken-turn --model qwen3:8b --base-url http://ollama:11434\n```"
    ) in text
    odd = job_summary.render_summary(factories.run_result(), "my ```suite```.json")
    assert "````sh\nruledrift run 'my ```suite```.json' --scenario" in odd


def test_annotation_overflow_is_mentioned_in_the_summary() -> None:
    assert "15 failed or errored probe(s) have no annotation" in summary(run_of(many_failures(25)))
    assert "have no annotation" not in summary()


def huge_result(failures: int, passes: int) -> RunResult:
    bad = tuple(failing(f"f{i:05}", message="why " * 100) for i in range(failures))
    good = tuple(factories.passed(f"p{i:05}", factories.ANSWER_OK) for i in range(passes))
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


# --- publishing ------------------------------------------------------------------------------


def test_publish_writes_annotations_and_appends_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    path.write_text("earlier step output\n", encoding="utf-8")
    out = io.StringIO()
    environ = {"GITHUB_STEP_SUMMARY": str(path), "GITHUB_WORKSPACE": str(tmp_path)}
    github.publish(factories.run_result(), overrides=[], environ=environ, out=out)
    assert [line.split(" ")[0] for line in out.getvalue().splitlines()] == ["::error"] * 4
    text = path.read_text(encoding="utf-8")
    assert text.startswith("earlier step output\n## ⚠️ RuleDrift: error")


def test_publish_without_a_summary_file(tmp_path: Path) -> None:
    out = io.StringIO()
    github.publish(factories.run_result(), overrides=[], environ={}, out=out)
    assert out.getvalue().count("\n") == 4
    assert list(tmp_path.iterdir()) == []


def test_publish_leaves_a_full_summary_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "summary.md"
    path.write_bytes(b"x" * (job_summary.SUMMARY_MAX_BYTES - 1000))
    environ = {"GITHUB_STEP_SUMMARY": str(path)}
    github.publish(factories.run_result(), overrides=[], environ=environ, out=io.StringIO())
    assert path.stat().st_size == job_summary.SUMMARY_MAX_BYTES - 1000
    assert "no room left in the job summary" in capsys.readouterr().err


def test_publish_reports_an_unwritable_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    environ = {"GITHUB_STEP_SUMMARY": str(tmp_path / "missing-dir" / "summary.md")}
    github.publish(factories.run_result(), overrides=[], environ=environ, out=io.StringIO())
    assert "cannot write the job summary" in capsys.readouterr().err
