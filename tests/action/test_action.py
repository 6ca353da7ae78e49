"""action.yml, the workflows in .github/workflows, .github/dependabot.yml and
examples/gitlab-ci.yml: valid against their schemas (vendored SchemaStore copies,
check-jsonschema's built-in ones), in step with the entrypoint, the package version and the
docs, least-privileged, pinned (the same pins in the docs), clean under zizmor's pedantic
persona; action.yml names its image by digest; and a release workflow in which nothing gets a
version or a tag before the candidate, pushed by digest, passed its scan and its smoke test on
amd64 and arm64 (tests → candidate → scan + smoke → publish), read here since it needs GitHub
and a registry to run."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft7Validator
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

import ruledrift
from ruledrift import action as entrypoint
from ruledrift.action import inputs as action_inputs
from ruledrift.adapters.ollama import OllamaAdapterConfig
from ruledrift.suite.load import load_suite
from scripts.release import changelog, check_version, pin_image
from tests.support.processes import tool

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "schemastore"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
SCHEMA_SHA256 = {
    "github-action.json": "83bd3bf0c4122ceb764927bc189d9e3794931306b53cdf89816f6f3472cadf88",
    "github-workflow.json": "7a952fdb7c1b130732e40ccea9db9bced906c1198e97834f8a49ae3b411f3161",
}
PINNED_USES = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*$")
# The one pin of every action the workflows and the docs use: the newest release whose commit
# and `runs.using: node24` (composite for attest-build-provenance, wrapping actions/attest v4.1.0
# on node24) were read from the action's own repository, each SHA also seen pinned the same way
# in public workflows. Dependabot proposes newer ones (.github/dependabot.yml).
PINS = {
    "actions/checkout": "3d3c42e5aac5ba805825da76410c181273ba90b1 # v7.0.1",
    "actions/setup-python": "5fda3b95a4ea91299a34e894583c3862153e4b97 # v7.0.0",
    "actions/cache": "27d5ce7f107fe9357f9df03efb73ab90386fccae # v5.0.5",
    "actions/upload-artifact": "bbbca2ddaa5d8feaa63e36b76fdaad77386f024f # v7.0.0",
    # used by the examples only (examples/github): the sharded merge and the PR comment
    "actions/download-artifact": "3e5f45b2cfb9172054b4087a40e8e0b5a5461e7c # v8.0.1",
    "marocchino/sticky-pull-request-comment": "5770ad5eb8f42dd2c4f34da00c94c5381e49af88 # v3.0.5",
    "actions/attest-build-provenance": "a2bbfa25375fe432b6a289bc6b6cd05ecd0c4c32 # v4.1.0",
    "docker/setup-qemu-action": "96fe6ef7f33517b61c61be40b68a1882f3264fb8 # v4.2.0",
    "docker/setup-buildx-action": "37fe631027851001ddb9b187196cc803df7f5f0e # v4.3.0",
    "docker/login-action": "4907a6ddec9925e35a0a9e82d7399ccc52663121 # v4.1.0",
    "docker/metadata-action": "dc802804100637a589fabce1cb79ff13a1411302 # v6.2.0",
    "docker/build-push-action": "53b7df96c91f9c12dcc8a07bcb9ccacbed38856a # v7.3.0",
    # the release's vulnerability scan (Grype; node24)
    "anchore/scan-action": "e1165082ffb1fe366ebaf02d8526e7c4989ea9d2 # v7.4.0",
}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "examples"]
USES = re.compile(r"uses:\s*([\w.-]+/[\w.-]+)@(\S+)(?:[ \t]+(#[^\n]*))?")
DOCKERFILE_SWITCH = "sed -i 's|^  image: docker://.*$|  image: Dockerfile|' action.yml"


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


def test_action_runs_a_released_image_named_by_digest() -> None:
    """`uses: ruledrift/action@<sha>` runs exactly the code it names: the image is a digest, never
    a tag (which can be pushed again), and the comment is the version that digest was released
    as: a release with notes, not newer than the package."""
    runs = action()["runs"]
    assert set(runs) == {"using", "image"}
    assert runs["using"] == "docker"
    assert re.fullmatch(r"docker://ghcr\.io/ruledrift/action@sha256:[0-9a-f]{64}", runs["image"])
    pin = pin_image.read_pin((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert runs["image"] == f"docker://{pin.reference}"
    changelog.section((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"), pin.version)
    assert Version(pin.version) <= Version(ruledrift.__version__)
    assert check_version.problems(ruledrift.__version__, "ghcr.io/ruledrift/action") == []
    branding = action()["branding"]
    assert branding["icon"]
    assert branding["color"]


def test_the_image_line_is_outside_the_images_build_context() -> None:
    """The release commits the digest into action.yml after the build: that must not change
    the image (.dockerignore is an allowlist without action.yml)."""
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    ignore = [line for line in lines if line.strip() and not line.startswith("#")]
    assert ignore[0] == "*", "everything is excluded first"
    allowed = [line[1:] for line in ignore if line.startswith("!")]
    assert allowed
    assert not [pattern for pattern in allowed if fnmatch.fnmatch("action.yml", pattern)]


def test_the_docs_promise_the_major_version_of_the_package() -> None:
    """`uses: ruledrift/action@v1` and `:1` exist only if the package's major version is 1."""
    major = ruledrift.__version__.split(".")[0]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"uses: ruledrift/action@v{major}\n" in readme
    assert f"ghcr.io/ruledrift/action:{major} " in readme


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
                    ("release.yml", "candidate", "packages"),
                    ("release.yml", "candidate", "id-token"),
                    ("release.yml", "candidate", "attestations"),
                    ("release.yml", "candidate", "artifact-metadata"),
                    ("release.yml", "publish", "contents"),
                    ("release.yml", "publish", "packages"),
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
        name, _, pin = reference.partition("@")
        assert name in PINS, f"{name}: add its verified pin to PINS"
        assert pin == PINS[name], f"{name}: pinned {pin!r}, the one pin is {PINS[name]!r}"
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


def test_the_docs_show_the_workflows_pins() -> None:
    files = [f for path in DOCS for f in ([path] if path.is_file() else path.rglob("*.*"))]
    shown = 0
    for path in files:
        for name, ref, comment in USES.findall(path.read_text(encoding="utf-8")):
            if name == "ruledrift/action" or not re.fullmatch(r"[0-9a-f]{40}", ref):
                assert name == "ruledrift/action", (
                    f"{path}: {name}@{ref}: pin it as the workflows do"
                )
                continue
            shown += 1
            assert f"{ref} {comment}" == PINS.get(name), f"{path}: {name}@{ref} {comment}"
    assert shown >= 5


def test_the_workflows_install_the_versions_pyproject_pins() -> None:
    """Dependabot reads neither pyproject.toml's test extras nor ci.yml's `pip install` lines:
    a tool pinned in both must be pinned alike."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pinned = {
        canonicalize_name(r.name): str(r.specifier)
        for r in map(Requirement, pyproject["project"]["optional-dependencies"]["test"])
        if str(r.specifier).startswith("==")
    }
    shown = 0
    for path in [*WORKFLOWS, *sorted((ROOT / "examples" / "github").glob("*.yml"))]:
        text = path.read_text(encoding="utf-8")
        for name, version in re.findall(r"([A-Za-z0-9][\w.-]*)(==[0-9][^\s'\"]*)", text):
            if canonicalize_name(name) in pinned:
                shown += 1
                assert version == pinned[canonicalize_name(name)], f"{path.name}: {name}{version}"
    assert shown >= 3


def ci_jobs_with_the_action() -> dict[str, dict[str, Any]]:
    jobs = workflow("ci.yml")["jobs"]
    return {name: job for name, job in jobs.items() if local_action_steps(job)}


def test_ci_builds_the_action_from_the_branch_before_every_local_use() -> None:
    """action.yml runs the released image; CI must test the change, so each job switches
    action.yml to `image: Dockerfile` after its checkout and before its first `uses: ./`."""
    jobs = ci_jobs_with_the_action()
    assert {"action", "ollama-sidecar", "ollama-service"} <= set(jobs)
    for name, job in jobs.items():
        names = [s.get("uses", "").split("@")[0] or s.get("run", "") for s in job["steps"]]
        switches = [i for i, s in enumerate(job["steps"]) if DOCKERFILE_SWITCH in s.get("run", "")]
        checkout = names.index("actions/checkout")
        first_use = min(job["steps"].index(s) for s in local_action_steps(job))
        assert switches, f"{name}: no step switches action.yml to the Dockerfile"
        assert checkout < switches[0] < first_use, f"{name}: switch after checkout, before ./"


@pytest.mark.process
def test_the_switch_gives_a_valid_action_built_from_the_dockerfile(tmp_path: Path) -> None:
    """The switch step's own script, run by bash on a copy of action.yml."""
    (step,) = {
        s["run"]
        for job in ci_jobs_with_the_action().values()
        for s in job["steps"]
        if DOCKERFILE_SWITCH in s.get("run", "")
    }
    (tmp_path / "action.yml").write_bytes((ROOT / "action.yml").read_bytes())
    subprocess.run(["bash", "-euo", "pipefail", "-c", step], cwd=tmp_path, check=True, timeout=30)
    switched = load_yaml(tmp_path / "action.yml")
    assert switched["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert (ROOT / "Dockerfile").is_file()
    assert schema_errors("github-action.json", switched) == []
    assert {k: v for k, v in switched.items() if k != "runs"} == {
        k: v for k, v in action().items() if k != "runs"
    }


def release() -> dict[str, Any]:
    return workflow("release.yml")


def release_jobs() -> dict[str, dict[str, Any]]:
    return dict(release()["jobs"])


def needs(job: dict[str, Any]) -> set[str]:
    value = job.get("needs", [])
    return {value} if isinstance(value, str) else set(value)


def upstream(jobs: dict[str, dict[str, Any]], name: str) -> set[str]:
    """Every job `name` waits for, directly or through others."""
    found: set[str] = set()
    pending = list(needs(jobs[name]))
    while pending:
        job = pending.pop()
        if job not in found:
            found.add(job)
            pending.extend(needs(jobs[job]))
    return found


def step_index(steps: list[dict[str, Any]], text: str) -> int:
    """The index of the one step whose `uses`, `run` or `with` values (else `name`) hold `text`."""

    def body(step: dict[str, Any]) -> str:
        given = [str(value) for value in step.get("with", {}).values()]
        return "\n".join([step.get("uses", ""), step.get("run", ""), *given])

    (found,) = [i for i, s in enumerate(steps) if text in body(s)] or [
        i for i, s in enumerate(steps) if text in s.get("name", "")
    ]
    return found


def publication(step: dict[str, Any]) -> str | None:
    """What a step makes public under a name users can pull or pin (a version or a moving tag),
    or None. A push by digest without a tag is not one."""
    run, uses, given = step.get("run", ""), step.get("uses", ""), step.get("with", {})
    if uses.startswith("docker/build-push-action"):
        outputs = str(given.get("outputs", ""))
        pushes = given.get("push") is True or "push=true" in outputs
        if pushes and (given.get("tags") or "push-by-digest=true" not in outputs):
            return "pushes a tagged image"
    for command, what in (
        ("imagetools create", "tags an image"),
        ("git/refs", "creates or moves a git tag"),
        ("gh release create", "publishes a GitHub release"),
        ("git tag", "creates a git tag"),
        ("git push", "pushes to the repository"),
    ):
        if command in run:
            return what
    return None


def publications(jobs: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (name, what)
        for name, job in jobs.items()
        for step in job.get("steps", [])
        if (what := publication(step))
    ]


def nothing_public_before_a_passing_smoke(jobs: dict[str, dict[str, Any]]) -> list[str]:
    """Why a failed smoke test or scan could leave something users can pull by version."""
    problems = []
    for name, what in publications(jobs):
        missing = {"smoke", "scan"} - upstream(jobs, name)
        if missing:
            problems.append(f"job {name} {what} without waiting for {sorted(missing)}")
        if jobs[name].get("if") or jobs[name].get("continue-on-error"):
            problems.append(f"job {name} {what} and has a condition that can skip a failure")
    for name in ("smoke", "scan"):
        entries = jobs[name]["strategy"]["matrix"]["include"]
        runners = {entry["runner"]: entry["arch"] for entry in entries}
        if runners != {"ubuntu-24.04": "amd64", "ubuntu-24.04-arm": "arm64"}:
            problems.append(f"job {name} does not run on a native amd64 and arm64 runner")
        if jobs[name].get("continue-on-error"):
            problems.append(f"job {name} may fail without stopping the release")
    return problems


def test_release_is_started_on_main_by_a_maintainer_never_by_a_tag() -> None:
    """The version tag is made by the release, after the smoke test: it cannot start it."""
    on = release()["on"]
    assert list(on) == ["workflow_dispatch"]
    version = on["workflow_dispatch"]["inputs"]["version"]
    assert (version["required"], version["type"]) == (True, "string")
    assert release_jobs()["tests"]["if"] == "github.ref == 'refs/heads/main'"
    assert release()["defaults"] == {"run": {"shell": "bash"}}, "bash -eo pipefail"


def test_release_jobs_run_tests_candidate_scan_and_smoke_then_publish() -> None:
    jobs = release_jobs()
    assert list(jobs) == ["tests", "candidate", "scan", "smoke", "publish"]
    assert needs(jobs["candidate"]) == {"tests"}
    assert needs(jobs["scan"]) == needs(jobs["smoke"]) == {"tests", "candidate"}
    assert needs(jobs["publish"]) == {"tests", "candidate", "scan", "smoke"}


def test_nothing_gets_a_version_or_a_tag_before_a_passing_smoke_on_both_architectures() -> None:
    jobs = release_jobs()
    assert nothing_public_before_a_passing_smoke(jobs) == []
    assert {name for name, _ in publications(jobs)} == {"publish"}
    assert {what for _, what in publications(jobs)} == {
        "tags an image",
        "creates or moves a git tag",
        "publishes a GitHub release",
    }
    (push,) = [
        s
        for s in jobs["candidate"]["steps"]
        if s.get("uses", "").startswith("docker/build-push-action")
        and "push=true" in str(s["with"].get("outputs", ""))
    ]
    assert "push-by-digest=true" in push["with"]["outputs"]
    assert "tags" not in push["with"]


@pytest.mark.parametrize(
    "mistake",
    [
        "tag the candidate",
        "publish without the scan",
        "publish even if a job failed",
        "smoke on amd64 only",
        "a tag before the smoke",
    ],
)
def test_the_order_check_is_not_vacuous(mistake: str) -> None:
    jobs = json.loads(json.dumps(release_jobs()))
    candidate, publish = jobs["candidate"]["steps"], jobs["publish"]
    if mistake == "tag the candidate":
        push = candidate[step_index(candidate, "push-by-digest=true")]
        push["with"]["tags"] = "ghcr.io/ruledrift/action:1.2.3"
    elif mistake == "publish without the scan":
        publish["needs"] = ["tests", "candidate", "smoke"]
    elif mistake == "publish even if a job failed":
        publish["if"] = "always()"
    elif mistake == "smoke on amd64 only":
        jobs["smoke"]["strategy"]["matrix"]["include"].pop()
    else:
        candidate.append({"run": 'docker buildx imagetools create --tag "$IMAGE:$VERSION" x'})
    assert nothing_public_before_a_passing_smoke(jobs) != []


def test_release_checks_the_version_ci_and_pins_before_building() -> None:
    tests = release_jobs()["tests"]
    runs = "\n".join(s.get("run", "") for s in tests["steps"])
    for script in ("check_version", "ci_status", "base_pins --check"):
        assert f"python3 -m scripts.release.{script}" in runs
    assert 'check_version "$REQUESTED"' in runs
    assert tests["steps"][step_index(tests["steps"], "check_version")]["env"]["REQUESTED"] == (
        "${{ inputs.version }}"
    )
    assert 'gh api "repos/$REPOSITORY/git/ref/tags/$TAG"' in runs, "the tag must not exist"
    assert "actions/workflows/ci.yml/runs?head_sha=" in runs
    assert tests["permissions"]["actions"] == "read"


def test_the_candidate_is_tried_then_pushed_by_digest_annotated_and_attested() -> None:
    job = release_jobs()["candidate"]
    steps = job["steps"]
    build = step_index(steps, "Build for both platforms")
    tried = step_index(steps, "ruledrift:candidate --version")
    login = step_index(steps, "docker/login-action")
    never = step_index(steps, 'imagetools inspect "$IMAGE:$VERSION"')
    push = step_index(steps, "push-by-digest=true")
    attest = step_index(steps, "actions/attest-build-provenance")
    assert build < tried < login < never < push < attest
    assert "scripts/release/smoke/reaping.json" in steps[tried]["run"]
    assert steps[build]["with"]["push"] is False
    for key in ("platforms",):
        assert steps[build]["with"][key] == steps[push]["with"][key] == "linux/amd64,linux/arm64"
    assert steps[push]["with"]["sbom"] is True
    assert steps[push]["with"]["provenance"] == "mode=max"
    assert steps[attest]["with"]["push-to-registry"] is True
    assert "steps.push.outputs.digest" in steps[attest]["with"]["subject-digest"]
    assert job["outputs"]["digest"] == "${{ steps.push.outputs.digest }}"


def test_the_image_index_and_manifests_carry_oci_annotations() -> None:
    steps = release_jobs()["candidate"]["steps"]
    meta = steps[step_index(steps, "docker/metadata-action")]
    assert meta["id"] == "meta"
    assert meta["env"]["DOCKER_METADATA_ANNOTATIONS_LEVELS"] == "manifest,index"
    for given in ("annotations", "labels"):
        keys = [line.split("=", 1)[0] for line in meta["with"][given].splitlines()]
        assert keys == [
            f"org.opencontainers.image.{key}"
            for key in ("title", "description", "source", "version", "revision", "licenses")
        ]
        assert "org.opencontainers.image.licenses=MIT" in meta["with"][given]
        assert "org.opencontainers.image.revision=${{ github.sha }}" in meta["with"][given]
    push = steps[step_index(steps, "push-by-digest=true")]
    assert push["with"]["annotations"] == "${{ steps.meta.outputs.annotations }}"
    assert push["with"]["labels"] == "${{ steps.meta.outputs.labels }}"


def test_release_scans_the_candidate_and_fails_on_fixable_critical_findings() -> None:
    job = release_jobs()["scan"]
    steps = job["steps"]
    scan = steps[step_index(steps, "anchore/scan-action")]
    assert scan["with"]["image"] == (
        "${{ needs.tests.outputs.image }}@${{ needs.candidate.outputs.digest }}"
    )
    assert scan["with"]["fail-build"] is True
    assert scan["with"]["severity-cutoff"] == "critical"
    assert scan["with"]["only-fixed"] is True
    upload = steps[step_index(steps, "actions/upload-artifact")]
    assert upload["if"] == "always()", "the report is kept when the scan fails"
    assert upload["with"]["path"] == scan["with"]["output-file"]
    assert job["permissions"] == {"packages": "read"}


def test_release_smoke_pulls_the_candidate_anonymously_and_runs_it_as_users_do() -> None:
    smoke = release_jobs()["smoke"]
    steps = smoke["steps"]
    runs = "\n".join(s.get("run", "") for s in steps)
    assert 'DOCKER_CONFIG="$RUNNER_TEMP/anonymous-docker"' in runs  # no credentials at all
    assert not any(s.get("uses", "").startswith("docker/login") for s in steps)
    assert smoke["env"]["CANDIDATE"] == (
        "${{ needs.tests.outputs.image }}@${{ needs.candidate.outputs.digest }}"
    )
    assert "docs/releasing.md" in runs
    assert '--version)" = "ruledrift $VERSION"' in runs
    assert "--entrypoint ollama" in runs
    assert "sh -c 'cat /proc/1/comm')\" = tini" in runs
    assert "run scripts/release/smoke/reaping.json" in runs
    assert "examples/passing/suite.json" in runs
    assert "examples/demo/suite.json" in runs
    pin = step_index(steps, "scripts.release.pin_image")
    assert 'pin_image "$CANDIDATE" "$VERSION"' in steps[pin]["run"]
    assert not any(DOCKERFILE_SWITCH in s.get("run", "") for s in steps), (
        "the smoke test runs the candidate by digest, as users will get it"
    )
    action_steps = local_action_steps(smoke)
    assert all(steps.index(s) > pin for s in action_steps)
    assert {s["with"]["config"] for s in action_steps} == {
        "examples/passing/suite.json",
        "scripts/release/smoke/model.json",
    }


def test_release_smoke_runs_a_model_through_the_managed_server_with_a_cache() -> None:
    smoke = release_jobs()["smoke"]
    steps = smoke["steps"]
    suite = load_suite(ROOT / "scripts" / "release" / "smoke" / "model.json")
    assert isinstance(suite.adapter, OllamaAdapterConfig)
    model = suite.adapter.model
    assert suite.adapter.base_url.startswith("http://127.0.0.1:")
    probes = [p for s in suite.scenarios for p in s.probes]
    assert len(probes) == 2
    (run,) = [s for s in local_action_steps(smoke) if "model.json" in s["with"]["config"]]
    assert run["with"]["start-ollama"] == "true"
    assert run["continue-on-error"] is True, "a verdict of 1 is a verdict"
    assert 0 < run["timeout-minutes"] < smoke["timeout-minutes"]
    cache = steps[step_index(steps, "actions/cache")]
    assert steps.index(cache) < steps.index(run)
    assert cache["with"]["path"] == action_inputs.INPUTS["models-dir"]
    assert cache["with"]["key"] == f"ollama-models-{model.replace(':', '-')}"
    later = steps[steps.index(run) + 1 :]
    (check,) = [s for s in later if f"steps.{run['id']}.outputs.exit-code" in json.dumps(s)]
    assert 'case "$EXIT_CODE" in 0|1) ;; *) exit 1 ;; esac' in check["run"]
    assert f'test "$PROBES" = {len(probes)} && test "$ERRORS" = 0' in check["run"]
    assert "test -d .ruledrift/ollama-models/blobs" in check["run"]


def test_release_publishes_the_smoke_tested_digest_then_tags_then_the_release() -> None:
    publish = release_jobs()["publish"]
    steps = publish["steps"]
    assert publish["env"]["DIGEST"] == "${{ needs.candidate.outputs.digest }}"
    pin = step_index(steps, 'scripts.release.pin_image "$IMAGE@$DIGEST" "$VERSION"')
    assert 'test "$(git diff --name-only)" = action.yml' in steps[pin]["run"]
    commit = step_index(steps, '"repos/$REPOSITORY/git/commits"')
    assert "parents: [$parent]" in steps[commit]["run"]
    assert '--arg parent "$COMMIT"' in steps[commit]["run"]
    image_tag = step_index(steps, 'imagetools create --tag "$IMAGE:$VERSION"')
    git_tag = step_index(steps, 'ref="refs/tags/$TAG"')
    moving_images = step_index(steps, 'imagetools create --tag "$IMAGE:$tag" "$IMAGE@$DIGEST"')
    moving_git = step_index(steps, 'refs/tags/$major"')
    notes = step_index(steps, "gh release create")
    assert pin < commit < image_tag < git_tag < moving_images < moving_git < notes
    for index in (git_tag, moving_git):
        assert steps[index]["env"]["RELEASE_COMMIT"] == "${{ steps.commit.outputs.sha }}"
    runs = "\n".join(s.get("run", "") for s in steps)
    assert 'scripts.release.moving_tags "$VERSION" --kind git' in runs
    assert 'scripts.release.moving_tags "$VERSION" --kind image' in runs
    assert "scripts.release.changelog" in runs
    assert "$IMAGE:$VERSION names another digest" in runs, "a re-run never moves :X.Y.Z"


@pytest.mark.process
def test_zizmor_pedantic_finds_nothing() -> None:
    zizmor = tool("zizmor", "zizmor")
    done = subprocess.run(
        [
            zizmor,
            "--persona=pedantic",
            "--offline",
            "--no-progress",
            ".github/workflows",
            "action.yml",
        ],
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


@pytest.mark.process
def test_dependabot_config_is_valid_and_covers_every_pin() -> None:
    done = check_jsonschema("--builtin-schema", "vendor.dependabot", ".github/dependabot.yml")
    assert done.returncode == 0, done.stdout + done.stderr
    updates = load_yaml(ROOT / ".github" / "dependabot.yml")["updates"]
    ecosystems = {u["package-ecosystem"]: u for u in updates}
    assert set(ecosystems) == {"github-actions", "docker", "pip"}
    assert ecosystems["pip"]["directory"] == "/requirements"
    # every folder of workflows with pinned actions: "/" is .github/workflows (and action.yml),
    # any other folder is read for its own *.yml files
    pinned_folders = {
        "/" if path.parent.name == "workflows" else f"/{path.parent.relative_to(ROOT)}"
        for path in [*WORKFLOWS, *(ROOT / "examples").rglob("*.yml")]
        if re.search(r"uses: [\w.-]+/[\w./-]+@[0-9a-f]{40}", path.read_text(encoding="utf-8"))
    }
    assert pinned_folders == {"/", "/examples/github"}
    assert set(ecosystems["github-actions"]["directories"]) == pinned_folders
    assert all(u.get("groups") for u in updates), "one grouped pull request per ecosystem"


@pytest.mark.process
def test_the_dependabot_check_is_not_vacuous(tmp_path: Path) -> None:
    broken = tmp_path / "dependabot.yml"
    broken.write_text("version: 2\nupdates:\n  - package-ecosystem: npm\n    schedule: daily\n")
    assert check_jsonschema("--builtin-schema", "vendor.dependabot", str(broken)).returncode == 1


@pytest.mark.process
def test_the_gitlab_example_is_valid_gitlab_ci() -> None:
    done = check_jsonschema("--builtin-schema", "vendor.gitlab-ci", "examples/gitlab-ci.yml")
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.process
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
        reports = job["artifacts"]["reports"]
        if name == "ruledrift-sharded":
            assert reports["junit"] == "shard-*.xml"
        elif name == "ruledrift-merge":  # the shards' JUnit reports went up already
            assert reports["codequality"] == "gl-code-quality.json"
        else:
            assert reports["junit"] == "ruledrift-junit.xml", name


@pytest.mark.process
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
    for heading in (
        "## Inputs",
        "## Outputs",
        "## Annotations and job summary",
        "### Which ref to use",  # the unknown-input warning links to #which-ref-to-use
        "### PID 1",
    ):
        assert f"\n{heading}\n" in docs
    gitlab = (ROOT / "docs" / "gitlab-ci.md").read_text(encoding="utf-8")
    assert 'entrypoint: [""]' in gitlab
    assert "examples/gitlab-ci.yml" in gitlab


def test_the_release_guide_follows_the_release_workflow() -> None:
    guide = (ROOT / "docs" / "releasing.md").read_text(encoding="utf-8")
    for job in release_jobs():
        assert f"**{job}**" in guide, f"docs/releasing.md: describe the job {job}"
    assert "gh workflow run release.yml --ref main -f version=X.Y.Z" in guide
    assert "## When something fails" in guide
    model = load_suite(ROOT / "scripts" / "release" / "smoke" / "model.json").adapter
    assert isinstance(model, OllamaAdapterConfig)
    assert f"`{model.model}`" in guide
    assert f"`ollama-models-{model.model.replace(':', '-')}`" in guide
    assert "python3 -m scripts.release.pin_image" in guide


@pytest.mark.parametrize("job_name", ["ollama-sidecar", "ollama-service"])
def test_the_model_jobs_expect_the_probes_their_scenario_has(job_name: str) -> None:
    job = workflow("ci.yml")["jobs"][job_name]
    (run,) = local_action_steps(job)
    suite = load_suite(ROOT / run["with"]["config"])  # afterTurn lists expanded
    scenario_id = run["with"]["args"].split("--scenario", 1)[1].split()[0]
    (scenario,) = [s for s in suite.scenarios if s.id == scenario_id]
    assert suite.adapter.type == "ollama"
    checks = "\n".join(s.get("run", "") for s in job["steps"])
    assert f'test "$PROBES" = {len(scenario.probes)}' in checks


# --- sharding, merging and comparing in CI (examples/github, examples/gitlab-ci.yml) ------------


@pytest.mark.process
@pytest.mark.parametrize("name", ["sharded.yml", "compare.yml"])
def test_the_github_examples_are_valid_workflows(name: str) -> None:
    done = check_jsonschema(
        "--builtin-schema", "vendor.github-workflows", f"examples/github/{name}"
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.process
def test_the_github_examples_are_clean_under_zizmor_pedantic(tmp_path: Path) -> None:
    """zizmor audits workflows where GitHub keeps them: a copy under .github/workflows."""
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    for example in (ROOT / "examples" / "github").glob("*.yml"):
        (workflows / example.name).write_bytes(example.read_bytes())
    done = subprocess.run(
        [
            tool("zizmor", "zizmor"),
            "--persona=pedantic",
            "--offline",
            "--no-progress",
            str(workflows),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_sharded_examples_merge_every_shard() -> None:
    sharded = load_yaml(ROOT / "examples" / "github" / "sharded.yml")["jobs"]
    shards = sharded["shard"]["strategy"]["matrix"]["shard"]
    total = len(shards)
    assert shards == [f"{k}/{total}" for k in range(1, total + 1)]
    assert "ruledrift merge" in "\n".join(s.get("run", "") for s in sharded["merge"]["steps"])
    gitlab = load_yaml(ROOT / "examples" / "gitlab-ci.yml")
    assert "--shard auto" in " ".join(gitlab["ruledrift-sharded"]["script"])
    assert gitlab["ruledrift-merge"]["needs"] == ["ruledrift-sharded"]


def test_the_comparison_example_writes_only_where_it_must() -> None:
    jobs = load_yaml(ROOT / "examples" / "github" / "compare.yml")["jobs"]
    assert jobs["comment"]["permissions"] == {"pull-requests": "write"}
    assert all("checkout" not in s.get("uses", "") for s in jobs["comment"]["steps"])
    assert jobs["drift"]["permissions"]["contents"] == "read"
