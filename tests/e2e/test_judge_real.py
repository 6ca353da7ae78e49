"""A real model as a judge: SmolLM2-135M on the llama.cpp server judges the labelled answers of
tests/data/judge_labelled.json, three times each, and the test measures and records how often
it agrees with the labels and how often its three verdicts agree with each other.

It is measured twice: unconstrained (a 135M model ignores the verdict format: few or no
verdicts) and constrained by a GBNF grammar sent in the judge's `extraBody` (llama.cpp's
servers accept a `grammar` field), which makes every answer end with a verdict line; that run
must give a verdict on every call.

The 135M model is a poor judge; what is asserted is that the measurement is made and recorded
correctly (every call counted apart, every verdict hashed and attributed, the numbers computed
from the report), never that the judge is good. The numbers are printed and written to
`judge-measurement.json` in the test's folder; docs/configuration.md quotes a measured run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.e2e.conftest import OPENAI_MODEL
from tests.support import AGENTS
from tests.support.suites import write_suite

ROOT = Path(__file__).parent.parent.parent
LABELLED = ROOT / "tests" / "data" / "judge_labelled.json"
REPORT_SCHEMA = json.loads((ROOT / "schema" / "ruledrift-report.schema.json").read_text())
REPEATS = 3
JUDGE_OPTIONS = {"temperature": 0.8, "seed": 42, "max_tokens": 32}
# docs/configuration.md gives this grammar as a recipe: one reason line of at most 80
# characters, then the verdict line; max_tokens leaves room for both
VERDICT_GRAMMAR = 'root ::= [^\\n]{0,80} "\\n" "VERDICT: " ("PASS" | "FAIL")\n'
CONSTRAINED_OPTIONS = {"temperature": 0.8, "seed": 42, "max_tokens": 120}


@dataclass(frozen=True)
class Measurement:
    items: int
    verdicts: int  # runs that gave a verdict (passed or failed)
    no_verdict: int  # runs whose judge answered without a verdict line (errors)
    agreement: float | None  # of the verdicts, the share that matches the label
    consistent_items: int  # items whose runs all gave the same verdict
    consistency: float  # consistent_items / items


def measure(report: Mapping[str, Any], labels: Mapping[str, str]) -> Measurement:
    """The judge's agreement with `labels` (probe id -> "pass" or "fail") and its repeats'
    agreement with each other, from a JSON report of one run of every labelled probe."""
    agree = verdicts = no_verdict = consistent = 0
    for scenario in report["scenarios"]:
        for probe in scenario["probes"]:
            statuses = [run["status"] for run in probe["runs"]]
            for status in statuses:
                if status == "error":
                    no_verdict += 1
                    continue
                verdicts += 1
                agree += (status == "passed") == (labels[probe["id"]] == "pass")
            consistent += len(set(statuses)) == 1
    return Measurement(
        items=len(labels),
        verdicts=verdicts,
        no_verdict=no_verdict,
        agreement=agree / verdicts if verdicts else None,
        consistent_items=consistent,
        consistency=consistent / len(labels),
    )


def _report(probes: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
    return {
        "scenarios": [
            {"probes": [{"id": i, "runs": [{"status": s} for s in runs]} for i, runs in probes]}
        ]
    }


def test_the_measurement_counts_agreement_and_consistency() -> None:
    labels = {"a": "pass", "b": "fail", "c": "pass"}
    report = _report(
        [
            ("a", ["passed", "passed", "passed"]),
            ("b", ["passed", "failed", "error"]),
            ("c", ["failed", "failed", "failed"]),
        ]
    )
    assert measure(report, labels) == Measurement(
        items=3, verdicts=8, no_verdict=1, agreement=4 / 8, consistent_items=2, consistency=2 / 3
    )


def labelled_suite(
    judge_url: str, timeout_ms: int, options: Mapping[str, object], grammar: str | None = None
) -> dict[str, Any]:
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    judge: dict[str, Any] = {
        "type": "openai",
        "model": OPENAI_MODEL,
        "baseUrl": judge_url,
        "timeoutMs": timeout_ms,
        "options": dict(options),
    }
    if grammar is not None:
        judge["extraBody"] = {"grammar": grammar}
    return {
        "version": 1,
        "name": "e2e: SmolLM2 as a judge",
        "systemPrompt": "You are a support agent. Only the billing team decides refunds.",
        "adapter": {
            "type": "command",
            "command": sys.executable,
            "args": [str(AGENTS / "labelled_answers.py"), str(LABELLED)],
        },
        "judge": judge,
        "rules": [{"id": "no-refund-promise", "instruction": "Never promise a refund."}],
        "scenarios": [
            {
                "id": "labelled",
                "turns": [],
                "probes": [
                    {
                        "id": item["id"],
                        "rule": "no-refund-promise",
                        "afterTurn": 0,
                        "prompt": item["prompt"],
                        "assertions": [{"type": "judge", "rubric": data["rubric"]}],
                    }
                    for item in data["items"]
                ],
            }
        ],
    }


@pytest.mark.e2e
@pytest.mark.process
def test_smollm2_as_a_judge_is_measured_on_the_labelled_set(
    openai_base_url: str, call_timeout_s: float, tmp_path: Path
) -> None:
    """Unconstrained: the model may ignore the format; whatever it gives is measured."""
    measured = run_and_measure(openai_base_url, call_timeout_s, tmp_path, JUDGE_OPTIONS, None)
    assert measured.verdicts + measured.no_verdict == measured.items * REPEATS


@pytest.mark.e2e
@pytest.mark.process
def test_smollm2_constrained_by_a_grammar_gives_a_verdict_every_time(
    openai_base_url: str, call_timeout_s: float, tmp_path: Path
) -> None:
    """Constrained by VERDICT_GRAMMAR: every call gives a verdict, so agreement is measured."""
    measured = run_and_measure(
        openai_base_url, call_timeout_s, tmp_path, CONSTRAINED_OPTIONS, VERDICT_GRAMMAR
    )
    assert measured.no_verdict == 0
    assert measured.verdicts == measured.items * REPEATS
    assert measured.agreement is not None
    assert (tmp_path / "judge-measurement.json").is_file()


def run_and_measure(
    url: str,
    call_timeout_s: float,
    tmp_path: Path,
    options: Mapping[str, object],
    grammar: str | None,
) -> Measurement:
    """Runs the labelled suite REPEATS times through `ruledrift run`, checks its report, and
    records (prints and writes to judge-measurement.json) what the judge did."""
    data = json.loads(LABELLED.read_text(encoding="utf-8"))
    labels = {item["id"]: item["label"] for item in data["items"]}
    items = len(labels)
    suite = labelled_suite(url, int(call_timeout_s * 1000), options, grammar)
    config = write_suite(tmp_path, suite)
    report_path = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "GITHUB_ACTIONS", "NO_COLOR")}
    done = subprocess.run(
        [sys.executable, "-m", "ruledrift", "run", str(config), "--json", str(report_path),
         "--include-responses", "--no-color", "--repeat", str(REPEATS)],
        capture_output=True, text=True, env=env, check=False, cwd=ROOT,
        timeout=120 + items * REPEATS * call_timeout_s,
    )  # fmt: skip
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert report_path.is_file(), output
    report = json.loads(report_path.read_text(encoding="utf-8"))
    # the run's exit follows its probes: 3 when a judge gave no verdict somewhere (an error)
    expected = {"passed": 0, "failed": 1, "error": 3}[report["summary"]["status"]]
    assert done.returncode == expected, output
    errors = list(Draft202012Validator(REPORT_SCHEMA).iter_errors(report))
    assert not errors, errors[0]

    # every call counted, the judge's apart from the target's
    assert report["summary"]["modelCalls"] == items * REPEATS
    assert report["summary"]["judgeCalls"] == items * REPEATS
    # every verdict attributed to the judge, with its sampling, and its answer hashed
    judged = 0
    for probe in report["scenarios"][0]["probes"]:
        assert len(probe["runs"]) == REPEATS
        for run in probe["runs"]:
            if run["status"] == "error":
                assert "gave no verdict" in run["error"], run["error"]
                continue
            (assertion,) = run["assertions"]
            judge = assertion["judge"]
            assert (judge["adapter"], judge["model"]) == ("openai", OPENAI_MODEL)
            assert judge["temperature"] == options["temperature"]
            assert isinstance(judge["seed"], int)
            text = judge["response"]["text"]
            assert judge["response"]["sha256"] == hashlib.sha256(text.encode()).hexdigest()
            assert judge["response"]["length"] == len(text)
            assert assertion["passed"] == text.strip().upper().endswith("VERDICT: PASS")
            judged += 1

    measured = measure(report, labels)
    assert measured.verdicts == judged
    assert measured.verdicts + measured.no_verdict == items * REPEATS
    assert measured.agreement is None or 0 <= measured.agreement <= 1
    assert 0 <= measured.consistency <= 1
    record = {
        "model": OPENAI_MODEL,
        "repeats": REPEATS,
        "options": dict(options),
        "grammar": grammar,
    } | asdict(measured)
    (tmp_path / "judge-measurement.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"\njudge measurement: {json.dumps(record)}")
    return measured
