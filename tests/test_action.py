"""action.yml, the workflows in .github/workflows and examples/gitlab-ci.yml: valid against their
schemas (vendored SchemaStore copies, check-jsonschema's GitLab schema), in step with
entrypoint.py and the docs, least-privileged, pinned, and clean under zizmor --offline."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator

from ruledrift import action as entrypoint
from ruledrift.action import inputs as action_inputs
from tests.support.processes import tool

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = Path(__file__).resolve().parent / "data" / "schemastore"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
SCHEMA_SHA256 = {
    "github-action.json": "83bd3bf0c4122ceb764927bc189d9e3794931306b53cdf89816f6f3472cadf88",
    "github-workflow.json": "7a952fdb7c1b130732e40ccea9db9bced906c1198e97834f8a49ae3b411f3161",
}
PINNED_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as the boolean true
        data["on"] = data.pop(True)
    return data


@cache
def schema(name: str) -> Draft7Validator:
    return Draft7Validator(json.loads((SCHEMAS / name).read_text(encoding="utf-8")))


def schema_errors(name: str, document: dict[str, Any]) -> list[str]:
    return [
        f"/{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in schema(name).iter_errors(document)
    ]


def action() -> dict[str, Any]:
    return load_yaml(ROOT / "action.yml")


def workflow(name: str) -> dict[str, Any]:
    return load_yaml(ROOT / ".github" / "workflows" / name)


def steps(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for job in document["jobs"].values() for step in job.get("steps", [])]


# --- vendored schemas ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEMA_SHA256))
def test_vendored_schemas_are_unchanged(name: str) -> None:
    assert hashlib.sha256((SCHEMAS / name).read_bytes()).hexdigest() == SCHEMA_SHA256[name]
    assert "Apache License" in (SCHEMAS / "LICENSE.schemastore.txt").read_text()


def test_the_schemas_reject_what_they_should() -> None:
    """The validation below is not vacuous."""
    broken = action()
    del broken["runs"]["image"]
    broken["inputs"]["config"].pop("description")
    assert len(schema_errors("github-action.json", broken)) >= 1
    assert schema_errors("github-workflow.json", {"on": "push", "jobs": {"x": {}}})


# --- action.yml ---------------------------------------------------------------------------------


def test_action_yml_is_valid() -> None:
    assert schema_errors("github-action.json", action()) == []


def test_action_is_a_docker_action_built_from_the_dockerfile() -> None:
    runs = action()["runs"]
    assert runs == {"using": "docker", "image": "Dockerfile"}
    assert (ROOT / runs["image"]).is_file()
    branding = action()["branding"]
    assert branding["icon"]
    assert branding["color"]


def test_inputs_are_kebab_case_described_and_agree_with_the_entrypoint() -> None:
    inputs = action()["inputs"]
    assert list(inputs) == list(action_inputs.INPUTS)
    for name, spec in inputs.items():
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name), name
        assert len(spec["description"]) > 20, name
        assert str(spec.get("default", "")) == action_inputs.INPUTS[name], name
        if name != "config":
            assert "Default" in spec["description"], f"{name}: document its default"
    assert inputs["config"]["required"] is True
    assert inputs["start-ollama"]["default"] == "auto"
    assert inputs["include-responses"]["default"] == "false"


def test_outputs_agree_with_the_entrypoint() -> None:
    outputs = action()["outputs"]
    assert tuple(outputs) == entrypoint.OUTPUTS
    assert all(spec["description"] for spec in outputs.values())


# --- workflows ----------------------------------------------------------------------------------


def test_there_are_ci_and_release_workflows() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "release.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_are_valid(path: Path) -> None:
    assert schema_errors("github-workflow.json", load_yaml(path)) == []


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_are_least_privileged(path: Path) -> None:
    document = load_yaml(path)
    assert document["permissions"] == {}
    for name, job in document["jobs"].items():
        assert "permissions" in job, f"job {name} must declare its permissions"
        for scope, level in job["permissions"].items():
            if level == "write":
                allowed = {
                    ("release.yml", "image", "packages"),
                    ("release.yml", "major-tag", "contents"),
                }
                assert (path.name, name, scope) in allowed, f"{name}: {scope}: write"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_actions_are_pinned_by_commit(path: Path) -> None:
    lines = path.read_text().splitlines()
    uses = [line.split("uses:", 1)[1].strip() for line in lines if re.match(r"\s*-? *uses:", line)]
    assert uses
    for reference in uses:
        if reference.startswith("./"):
            continue
        assert PINNED_USES.match(reference), f"pin by full SHA with a version comment: {reference}"
    checkouts = [
        s for s in steps(load_yaml(path)) if s.get("uses", "").startswith("actions/checkout")
    ]
    assert all(s["with"]["persist-credentials"] is False for s in checkouts)


def local_action_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in job["steps"] if s.get("uses", "").startswith("./")]


def test_ci_runs_the_action_on_a_passing_suite_and_a_failing_one() -> None:
    jobs = workflow("ci.yml")["jobs"]
    action_steps = [s for job in jobs.values() for s in local_action_steps(job)]
    configs = {s["with"]["config"] for s in action_steps}
    assert {"examples/passing/suite.json", "examples/demo/suite.json"} <= configs
    job = jobs["action"]
    (demo,) = [
        s for s in local_action_steps(job) if s["with"]["config"].startswith("examples/demo")
    ]
    assert demo["continue-on-error"] is True
    later = job["steps"][job["steps"].index(demo) + 1 :]
    checks = [s for s in later if f"steps.{demo['id']}.outputs.exit-code" in json.dumps(s)]
    assert checks, "a later step must check the demo's exit-code"
    assert 'test "$EXIT_CODE" = 1' in checks[0]["run"]


def test_ci_runs_a_real_model_with_a_cached_models_dir() -> None:
    job = workflow("ci.yml")["jobs"]["ollama-sidecar"]
    caches = [s for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert [c["with"]["path"] for c in caches] == [action_inputs.INPUTS["models-dir"]]
    (run,) = local_action_steps(job)
    assert run["with"]["model"] in ("qwen3:0.6b", "smollm2:135m", "gemma3:270m")


def test_ci_runs_the_tests_on_every_supported_python() -> None:
    job = workflow("ci.yml")["jobs"]["tests"]
    assert job["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    assert any(s.get("run") == ".ci/run" for s in job["steps"])


def test_release_publishes_a_multi_arch_image_and_moves_the_major_tag() -> None:
    document = workflow("release.yml")
    assert document["on"]["push"]["tags"]
    image = document["jobs"]["image"]
    (build,) = [s for s in image["steps"] if s.get("uses", "").startswith("docker/build-push")]
    assert build["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert build["with"]["push"] is True
    assert any(s.get("uses", "").startswith("docker/setup-qemu-action@") for s in image["steps"])
    major = document["jobs"]["major-tag"]
    assert major["needs"] == "image"
    assert "git/refs" in major["steps"][0]["run"]


def test_zizmor_finds_nothing() -> None:
    zizmor = tool("zizmor", "zizmor")
    done = subprocess.run(
        [zizmor, "--offline", "--no-progress", ".github/workflows", "action.yml"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# --- GitLab, examples and docs ------------------------------------------------------------------


def check_jsonschema(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("check-jsonschema", "check-jsonschema"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_gitlab_example_is_valid_gitlab_ci() -> None:
    done = check_jsonschema("--builtin-schema", "vendor.gitlab-ci", "examples/gitlab-ci.yml")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gitlab_check_is_not_vacuous(tmp_path: Path) -> None:
    broken = tmp_path / "gitlab-ci.yml"
    broken.write_text("job:\n  script: 42\n  artifacts: {when: sometimes}\n")
    assert check_jsonschema("--builtin-schema", "vendor.gitlab-ci", str(broken)).returncode == 1


def test_the_gitlab_example_clears_the_entrypoint_and_reports_junit() -> None:
    jobs = {
        k: v for k, v in load_yaml(ROOT / "examples" / "gitlab-ci.yml").items() if "script" in v
    }
    assert jobs
    for name, job in jobs.items():
        assert job["image"]["entrypoint"] == [""], name
        assert job["artifacts"]["when"] == "always", name
        assert job["artifacts"]["reports"]["junit"] == "ruledrift-junit.xml", name


@pytest.mark.parametrize(("config", "code"), [("passing", 0), ("demo", 1)])
def test_the_examples_ci_runs_end_as_expected(config: str, code: int, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ruledrift", "run", f"examples/{config}/suite.json", "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == code, done.stdout + done.stderr


def test_the_docs_describe_every_input_and_output() -> None:
    docs = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
    for name in [*action_inputs.INPUTS, *entrypoint.OUTPUTS]:
        assert f"| `{name}`" in docs, f"docs/github-action.md: no table row for `{name}`"
    for heading in ("## Inputs", "## Outputs", "## Annotations and job summary"):
        assert heading in docs
    gitlab = (ROOT / "docs" / "gitlab-ci.md").read_text(encoding="utf-8")
    assert 'entrypoint: [""]' in gitlab
    assert "examples/gitlab-ci.yml" in gitlab


@pytest.mark.parametrize("job_name", ["ollama-sidecar", "ollama-service"])
def test_the_model_jobs_expect_the_probes_their_scenario_has(job_name: str) -> None:
    job = workflow("ci.yml")["jobs"][job_name]
    (run,) = local_action_steps(job)
    suite = json.loads((ROOT / run["with"]["config"]).read_text(encoding="utf-8"))
    scenario_id = run["with"]["args"].split("--scenario", 1)[1].split()[0]
    (scenario,) = [s for s in suite["scenarios"] if s["id"] == scenario_id]
    assert suite["adapter"]["type"] == "ollama"
    checks = "\n".join(s.get("run", "") for s in job["steps"])
    assert f'test "$PROBES" = {len(scenario["probes"])}' in checks
