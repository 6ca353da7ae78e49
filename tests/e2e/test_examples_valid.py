"""The example suites are valid, reproducible, and test the same rules on both targets.

Not marked e2e: these run everywhere, without a model."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ruledrift.suite.load import load_suite
from tests.support.cli_process import ruledrift

ROOT = Path(__file__).parent.parent.parent
EXAMPLES = ROOT / "examples"
SUITES = sorted(
    path
    for path in EXAMPLES.rglob("*.json")
    if '"scenarios"' in path.read_text(encoding="utf-8")  # a suite, not some other JSON file
)
RUN_SH = EXAMPLES / "local-model" / "run.sh"


def load(name: str, file: str = "suite.json") -> Any:
    return json.loads((EXAMPLES / name / file).read_text(encoding="utf-8"))


def test_every_example_has_a_suite() -> None:
    names = {str(path.relative_to(EXAMPLES)) for path in SUITES}
    assert names >= {
        "demo/suite.json",
        "ollama/suite.json",
        "local-model/suite.json",
        "local-model/suite-sampled.json",
        "local-model/suite-search.json",
        "tools/suite.json",
        "tools/suite-report.json",
        "tools/suite-mcp.json",
        "tools/suite-openai.json",
    }


@pytest.mark.process
@pytest.mark.parametrize("suite", SUITES, ids=lambda path: str(path.relative_to(EXAMPLES)))
def test_example_suite_passes_validate(suite: Path) -> None:
    done = ruledrift("validate", suite)
    assert done.returncode == 0, done.stderr
    assert ": valid:" in done.stdout


def test_ollama_example_is_reproducible_and_sized_for_its_conversation() -> None:
    adapter = load("ollama")["adapter"]
    assert (adapter["type"], adapter["model"]) == ("ollama", "qwen3:1.7b")
    assert adapter["think"] is False  # qwen3 thinks unless told not to
    options = adapter["options"]
    assert (options["temperature"], options["seed"]) == (0, 42)
    # Explicit, never the machine-dependent default; room for the longest scenario's turns and
    # probe plus every answer at its num_predict limit, at a cautious 2 characters a token.
    suite = load("ollama")
    longest = max(
        len(suite["systemPrompt"])
        + sum(len(r["instruction"]) for r in suite["rules"])
        + sum(len(t) for t in scenario["turns"])
        + max(len(p["prompt"]) for p in scenario["probes"])
        for scenario in suite["scenarios"]
    )
    turns = max(len(scenario["turns"]) for scenario in suite["scenarios"])
    assert options["num_ctx"] >= longest / 2 + (turns + 1) * options["num_predict"]


def test_local_model_example_runs_the_same_rules_as_the_ollama_example() -> None:
    ollama, local = load("ollama"), load("local-model")
    for key in ("systemPrompt", "rules", "scenarios"):
        assert local[key] == ollama[key], key


def test_local_model_example_targets_what_run_sh_serves() -> None:
    adapter = load("local-model")["adapter"]
    script = RUN_SH.read_text(encoding="utf-8")
    alias = re.search(r"^alias=(\S+)", script, re.MULTILINE)
    port = re.search(r"^suite_port=(\d+)", script, re.MULTILINE)
    assert alias is not None
    assert port is not None
    assert adapter["type"] == "openai"
    assert adapter["model"] == alias.group(1)
    assert adapter["baseUrl"] == f"http://127.0.0.1:{port.group(1)}/v1"
    assert (adapter["options"]["temperature"], adapter["options"]["seed"]) == (0, 42)


def test_the_sampled_local_model_example_differs_only_in_temperature_and_name() -> None:
    """suite-sampled.json (`run.sh --sampled`) is suite.json at temperature 0.8: the same model,
    rules, scenarios and seed (run r sends seed 42 + r, so the runs differ and replay), plus a
    reminder variant for `--variants base,reminder` (issue 24)."""
    fixed, sampled = load("local-model"), load("local-model", "suite-sampled.json")
    assert sampled["adapter"]["options"] == fixed["adapter"]["options"] | {"temperature": 0.8}
    assert sampled["adapter"]["options"]["seed"] == 42
    assert sampled.pop("variants") == [{"id": "reminder", "remindEvery": 3}]
    rest = {k: v for k, v in sampled.items() if k != "name"} | {"adapter": fixed["adapter"]}
    assert rest == {k: v for k, v in fixed.items() if k != "name"}
    assert sampled["name"].startswith(fixed["name"].removesuffix(")"))
    assert "temperature 0.8" in sampled["name"]


def test_the_local_model_example_pairs_its_secret_probes_with_a_control() -> None:
    """Issue 23: a 135M model that stopped answering would keep the secret at every depth; the
    control (a question the system prompt answers) tells that apart."""
    for scenario in load_suite(EXAMPLES / "local-model" / "suite.json").scenarios:
        secret = [p for p in scenario.probes if p.rule.id == "never-disclose-escalation-code"]
        assert secret
        assert all(p.control is not None for p in secret)


def test_the_search_example_is_the_sampled_social_engineering_scenario_searched() -> None:
    """suite-search.json (`run.sh --search`): the sampled suite's social-engineering scenario,
    its code probe at a searched depth between 0 and its 6 turns instead of 0, 3 and 6."""
    sampled, search = (
        load("local-model", "suite-sampled.json"),
        load("local-model", "suite-search.json"),
    )
    same = ("systemPrompt", "adapter", "rules")
    assert {k: search[k] for k in same} == {k: sampled[k] for k in same}
    [scenario] = search["scenarios"]
    [original] = [s for s in sampled["scenarios"] if s["id"] == scenario["id"]]
    [probe], [asked] = scenario.pop("probes"), original.pop("probes")
    assert scenario == original
    assert (scenario["id"], len(scenario["turns"])) == ("social-engineering", 6)
    assert probe.pop("afterTurn") == {"search": [0, 6]}
    assert asked.pop("afterTurn") == [0, 3, 6]
    assert probe == asked


def test_run_sh_runs_the_sampled_and_search_suites_when_asked() -> None:
    script = RUN_SH.read_text(encoding="utf-8")
    assert 'if [ "${1:-}" = "--sampled" ]; then' in script
    assert 'suite="$here/suite-sampled.json"' in script
    assert 'elif [ "${1:-}" = "--search" ]; then' in script
    assert 'suite="$here/suite-search.json"' in script


@pytest.mark.process
def test_run_sh_is_executable_bash() -> None:
    assert os.access(RUN_SH, os.X_OK)
    done = subprocess.run(["bash", "-n", str(RUN_SH)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("name", ["ollama", "local-model"])
def test_the_real_model_suites_write_each_probe_once_with_its_depths(name: str) -> None:
    """One probe at several depths is one object with a list of boundaries, not a copy each."""
    for scenario in load(name)["scenarios"]:
        bodies = [
            json.dumps({k: v for k, v in p.items() if k not in ("id", "afterTurn")}, sort_keys=True)
            for p in scenario["probes"]
        ]
        assert len(set(bodies)) == len(bodies), scenario["id"]
        assert all(isinstance(p["afterTurn"], list) for p in scenario["probes"])


def test_the_expanded_probes_keep_the_ids_the_docs_show() -> None:
    demo = load_suite(EXAMPLES / "demo" / "suite.json")
    assert [[p.id for p in s.probes] for s in demo.scenarios] == [
        ["secret-at-start", "secret-after-4", "secret-after-8", "secret-after-12"],
        ["spanish-at-start", "spanish-after-6", "spanish-after-12"],
    ]
    local = load_suite(EXAMPLES / "local-model" / "suite.json")
    ids = [p.id for p in local.scenarios[0].probes]
    assert ids[:3] == ["code-after-0", "code-after-6", "code-after-12"]
    assert len(ids) == 18
    assert [p.id for p in local.scenarios[1].probes] == [
        "code-after-0",
        "code-after-3",
        "code-after-6",
    ]
