"""The run's plan and progress: the header of `--repeat auto` (expected calls beside the most),
the counter against totals that count runs × probes, and plain progress lines in a log without a
TTY, seen from a real `ruledrift run` while it runs."""

from __future__ import annotations

import dataclasses
import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ruledrift import app
from ruledrift.app.running import run_plan
from ruledrift.console.commands import progress_every
from ruledrift.console.run_progress import Counts, ProgressLog, plan_header
from ruledrift.data import Control, ProbeResult, VerdictPolicy
from ruledrift.errors import UsageError
from ruledrift.suite.load import load_suite
from tests.support import AGENTS
from tests.support.cli_process import CI_VARIABLES
from tests.support.suites import base_suite, write_suite

SCRIPTED = str(AGENTS / "scripted.py")
PROGRESS = re.compile(r"^ruledrift: progress \d+(?:m\d\ds|s): ")


def two_scenario_suite(tmp_path: Path, *agent: str) -> Path:
    data = base_suite(command=sys.executable, args=[SCRIPTED, *agent])
    other = dict(data["scenarios"][0], id="other")
    data["scenarios"].append(other)
    return write_suite(tmp_path, data)


def plan_of(tmp_path: Path, policy: VerdictPolicy) -> app.RunPlan:
    suite = load_suite(two_scenario_suite(tmp_path))
    return run_plan(suite, suite.scenarios, policy, suite.probe_count)


def test_the_counter_counts_runs_times_probes_under_repeat_n(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, VerdictPolicy(repeat=3))
    counts = Counts(plan, calls=30, probe_runs=12, not_passed=1)
    assert counts.text() == "30/30 model calls · 12/12 probe runs · 1 not passed"
    once = Counts(plan_of(tmp_path, VerdictPolicy()), calls=10, probe_runs=4)
    assert once.text() == "10/10 model calls · 4/4 probes · 0 not passed"


def test_under_repeat_auto_the_totals_are_maxima(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, VerdictPolicy(repeat="auto"))
    assert plan.expected is not None
    assert plan.expected.calls < plan.model_calls
    counts = Counts(plan, calls=100, probe_runs=40)
    cap = plan.runs
    assert counts.text() == (
        f"100/≤{cap * 10} model calls · 40/≤{cap * 4} probe runs · 0 not passed"
    )


def test_the_header_of_repeat_auto_shows_the_expected_calls_beside_the_most(
    tmp_path: Path,
) -> None:
    plan = plan_of(tmp_path, VerdictPolicy(repeat="auto", holds_at=0.9))
    shown = plan_header(plan)
    expected = plan.expected
    assert expected is not None
    assert (
        f"2 scenario(s), 4 probe(s), about {expected.calls} model call(s), "
        f"at most {plan.model_calls}\n"
    ) in shown + "\n"
    assert shown.endswith(
        f"at most {plan.runs} times: about {expected.calls} calls if every probe passes 90% of "
        f"its runs (--holds-at), {expected.never_failing} if no answer fails"
    )
    fixed = plan_header(plan_of(tmp_path, VerdictPolicy(repeat=2)))
    assert fixed.endswith("2 scenario(s), 4 probe(s), 20 model call(s)")
    assert "about" not in fixed


def test_with_controls_the_calls_are_a_maximum(tmp_path: Path) -> None:
    """A control is asked only after its probe passed: the calls a run plans are the most."""
    plan = plan_of(tmp_path, VerdictPolicy())
    control = Control("How do I reach support?", ())
    first = dataclasses.replace(plan.scenarios[0].probes[0], control=control)
    scenario = dataclasses.replace(plan.scenarios[0], probes=(first, *plan.scenarios[0].probes[1:]))
    controlled = dataclasses.replace(plan, scenarios=(scenario, *plan.scenarios[1:]))
    assert "4 probe(s), at most 10 model call(s) (a control is asked only after its probe " in (
        plan_header(controlled)
    )
    assert Counts(controlled, calls=9, probe_runs=4).text() == (
        "9/≤10 model calls · 4/4 probes · 0 not passed"
    )
    assert "at most" not in plan_header(plan)


def test_a_progress_line_is_one_plain_line_with_the_scenario_id_escaped(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, VerdictPolicy(repeat=2))
    now = [100.0]
    out = io.StringIO()
    counts = Counts(plan, calls=7, scenarios=1)
    counts.probe_finished(ProbeResult(plan.scenarios[0].probes[0], "failed", 1))
    log = ProgressLog(out, counts, clock=lambda: now[0])
    now[0] += 754
    hostile = dataclasses.replace(plan.scenarios[0], id="evil\x1b]0;title\x07\r\n::error::x")
    log.scenario_finished(hostile)
    log.write()
    first, second = out.getvalue().splitlines()
    assert first == (
        "ruledrift: progress 12m34s: scenario evil\\x1b]0;title\\x07 ⏎ ::error::x finished · "
        "1/2 scenarios · 7/20 model calls · 1/8 probe runs · 1 not passed"
    )
    assert second.startswith("ruledrift: progress 12m34s: 1/2 scenarios · 7/20 model calls")
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", out.getvalue().replace("\n", ""))


def run_without_tty(args: list[str | Path], env: dict[str, str]) -> subprocess.Popen[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    full_env.update(env)
    return subprocess.Popen(
        [sys.executable, "-m", "ruledrift", *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
    )


@pytest.mark.process
def test_a_run_without_a_tty_prints_progress_lines_while_it_runs(tmp_path: Path) -> None:
    """Every model call of the agent takes a second; lines come every 0.2 s and when a
    scenario finishes, on stderr, before the run ends."""
    suite = two_scenario_suite(tmp_path, "--sleep", "1")
    process = run_without_tty(["run", suite], {"RULEDRIFT_PROGRESS_SECONDS": "0.2"})
    try:
        assert process.stderr is not None
        lines: list[str] = []
        deadline = time.monotonic() + 60
        while not any("scenario smalltalk finished" in line for line in lines):
            assert time.monotonic() < deadline, lines
            line = process.stderr.readline()
            assert line, lines  # stderr ended before the first scenario's line
            lines.append(line)
        assert process.poll() is None  # the other scenario's five calls are still to come
        periodic = [line for line in lines if PROGRESS.match(line) and "finished" not in line]
        assert periodic, lines  # lines came while the first scenario ran
        assert "0/2 scenarios · " in periodic[0]
        assert "/10 model calls · " in periodic[0]
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    lines += stderr.splitlines(keepends=True)
    assert all(PROGRESS.match(line) for line in lines if line.strip()), lines
    assert not any(re.search(r"[\x00-\x09\x0b-\x1f\x7f]", line) for line in lines)
    assert lines[-1].split(": ", 2)[2] == (
        "scenario other finished · 2/2 scenarios · 10/10 model calls · 4/4 probes · 0 not passed\n"
    )
    assert "scenario other: PASSED" in stdout


@pytest.mark.process
def test_quiet_prints_no_progress_lines(tmp_path: Path) -> None:
    suite = two_scenario_suite(tmp_path, "--sleep", "0.3")
    process = run_without_tty(["run", suite, "--quiet"], {"RULEDRIFT_PROGRESS_SECONDS": "0.05"})
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert "progress" not in stderr


@pytest.mark.process
def test_repeats_end_with_every_probe_run_counted_against_its_total(tmp_path: Path) -> None:
    """The line of the last scenario: every call and probe run of --repeat 3 against totals of
    3 × the calls and probes; under --repeat auto counts never beyond the most."""
    suite = two_scenario_suite(tmp_path)
    env = {"RULEDRIFT_PROGRESS_SECONDS": "600"}
    process = run_without_tty(["run", suite, "--repeat", "3"], env)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    assert stderr.splitlines()[-1].endswith(
        "2/2 scenarios · 30/30 model calls · 12/12 probe runs · 0 not passed"
    )
    process = run_without_tty(["run", suite, "--repeat", "auto"], env)
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr
    header = re.search(r"about (\d+) model call\(s\), at most (\d+)", stdout)
    assert header is not None, stdout
    last = re.search(
        r"2/2 scenarios · (\d+)/≤(\d+) model calls · (\d+)/≤(\d+) probe runs",
        stderr.splitlines()[-1],
    )
    assert last is not None, stderr
    calls, most_calls, probe_runs, most_probe_runs = map(int, last.groups())
    assert most_calls == int(header[2])
    assert calls <= most_calls
    assert probe_runs <= most_probe_runs
    runs = probe_runs // 4  # the agent never leaks: every probe holds after the same runs
    assert (calls, probe_runs) == (10 * runs, 4 * runs)  # a run: 3 turns + 2 probes, twice


def run_in_tty(args: list[str | Path]) -> str:
    """Run ruledrift with stdout and stderr on a pseudo-terminal; everything it printed."""
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    process = subprocess.Popen(
        [sys.executable, "-m", "ruledrift", *map(str, args)],
        stdout=follower,
        stderr=follower,
        env=env,
    )
    os.close(follower)
    chunks = []
    while select.select([leader], [], [], 60)[0]:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", errors="replace")


@pytest.mark.process
def test_the_terminal_counter_under_repeats_never_passes_its_total(tmp_path: Path) -> None:
    """Once wrong as `12/4 probes`: with --repeat 3 the counter counts probe runs of 3 x 4."""
    shown = run_in_tty(["run", two_scenario_suite(tmp_path), "--repeat", "3"])
    counters = re.findall(r"(\d+)/(\d+) model calls · (\d+)/(\d+) probe runs", shown)
    assert counters, shown
    assert all(int(done) <= int(total) for c in counters for done, total in (c[:2], c[2:]))
    assert counters[-1] == ("30", "30", "12", "12")
    assert "progress" not in shown  # a TTY has the counter, not the log lines


@pytest.mark.parametrize("given", ["0", "-1", "nan", "inf", "1e9", "soon", ""])
def test_a_progress_pace_out_of_range_is_a_usage_error(given: str) -> None:
    with pytest.raises(UsageError, match="RULEDRIFT_PROGRESS_SECONDS: expected seconds from"):
        progress_every({"RULEDRIFT_PROGRESS_SECONDS": given})
    assert progress_every({"RULEDRIFT_PROGRESS_SECONDS": "2.5"}) == 2.5
    assert progress_every({}) == 60
