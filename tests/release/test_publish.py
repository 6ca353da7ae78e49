"""The release workflow's publish job, run here: its `run:` steps, taken from release.yml, in
order, by bash as the runner runs them (`bash -eo pipefail`), in a git checkout, with stand-ins
for GitHub's API (`gh`) and the registry (`docker buildx imagetools`) from
tests/support/fake_github.py. What the stand-ins cannot show (GitHub's and GHCR's own rules) is
read in tests/action/test_action.py."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from scripts.release import pin_image
from tests.support import fake_github

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "ghcr.io/ruledrift/action"
DIGEST = "sha256:" + "5e" * 32
OLD_DIGEST = "sha256:" + "0d" * 32
BASE_COMMIT = "c0ffee" + "0" * 34
VERSION = "1.1.0"


def publish_steps() -> list[dict[str, Any]]:
    document = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    return [s for s in document["jobs"]["publish"]["steps"] if "run" in s]


class Publish:
    """A checkout of this repository's release inputs, a fake GitHub and a fake registry."""

    def __init__(self, tmp_path: Path) -> None:
        self.repo = tmp_path / "repo"
        for name in ("action.yml", "CHANGELOG.md"):
            (self.repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, self.repo / name)
        shutil.copytree(ROOT / "scripts" / "release", self.repo / "scripts" / "release")
        changelog = self.repo / "CHANGELOG.md"
        changelog.write_text(
            changelog.read_text().replace("## [Unreleased]", f"## [{VERSION}] - 2026-12-24", 1)
        )
        git = ["git", "-C", str(self.repo), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], check=True, timeout=30)
        subprocess.run([*git, "add", "."], check=True, timeout=30)
        subprocess.run([*git, "commit", "-qm", "base"], check=True, timeout=30)
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for name in ("gh", "docker"):
            script = self.bin / name
            script.write_text(f"#!{sys.executable}\n{Path(fake_github.__file__).read_text()}")
            script.chmod(0o755)
        self.state_file = tmp_path / "github.json"
        action = base64.b64encode((self.repo / "action.yml").read_bytes()).decode()
        self.state: dict[str, Any] = {
            "objects": {
                "b0": {"kind": "blob", "content": action},
                "t0": {"kind": "tree", "files": {"action.yml": "b0"}},
                BASE_COMMIT: {"kind": "commit", "tree": "t0", "parents": [], "message": "main"},
            },
            "refs": {"refs/tags/v1.0.0": BASE_COMMIT, "refs/tags/v1": BASE_COMMIT},
            "images": {f"{IMAGE}:{tag}": OLD_DIGEST for tag in ("1.0.0", "1.0", "1", "latest")},
            "releases": {"v1.0.0": []},
            "calls": [],
        }
        self.save()
        self.summary = tmp_path / "summary.md"

    def save(self) -> None:
        self.state_file.write_text(json.dumps(self.state))

    def load(self) -> dict[str, Any]:
        self.state = json.loads(self.state_file.read_text())
        return self.state

    def run(self, digest: str = DIGEST) -> tuple[int, str]:
        """The publish job's run steps until one fails: (the failed step's index or -1, log)."""
        subprocess.run(["git", "-C", str(self.repo), "checkout", "-q", "."], check=True)
        outputs: dict[str, str] = {}
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))},
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "FAKE_GITHUB_STATE": str(self.state_file),
            "IMAGE": IMAGE,
            "VERSION": VERSION,
            "TAG": f"v{VERSION}",
            "DIGEST": digest,
            "GH_TOKEN": "token",
            "REPOSITORY": "ruledrift/action",
            "COMMIT": BASE_COMMIT,
            "GITHUB_STEP_SUMMARY": str(self.summary),
        }
        expressions: dict[str, Callable[[], str]] = {
            "${{ steps.commit.outputs.sha }}": lambda: outputs.get("sha", ""),
            "${{ needs.tests.outputs.prerelease }}": lambda: "false",
        }
        log = ""
        for index, step in enumerate(publish_steps()):
            output = self.repo.parent / "output"
            output.write_text("")
            step_env = {k: expressions[v]() for k, v in step.get("env", {}).items()}
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                cwd=self.repo,
                env={**env, **step_env, "GITHUB_OUTPUT": str(output)},
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            log += f"--- {step['name']}\n{done.stdout}{done.stderr}"
            if step.get("id") == "commit":
                outputs.update(re.findall(r"^(\w+)=(.*)$", output.read_text(), re.MULTILINE))
            if done.returncode != 0:
                self.load()
                return index, log
        self.load()
        return -1, log

    def tag(self, name: str) -> str:
        return str(self.state["refs"][f"refs/tags/{name}"])


@pytest.fixture
def publish(tmp_path: Path) -> Publish:
    if not shutil.which("jq"):
        pytest.fail("jq is not installed (GitHub's runners have it): apt-get install jq")
    return Publish(tmp_path)


def step_named(text: str) -> int:
    (index,) = [i for i, s in enumerate(publish_steps()) if text in s["name"]]
    return index


def test_a_release_commit_is_made_tagged_and_published(publish: Publish) -> None:
    failed, log = publish.run()
    assert failed == -1, log
    release = publish.tag(f"v{VERSION}")
    commit = publish.state["objects"][release]
    assert commit["parents"] == [BASE_COMMIT]
    assert commit["message"].startswith(f"Release {VERSION}: action.yml runs {IMAGE}@{DIGEST}")
    pinned = fake_github.content_of(publish.state, release, "action.yml")
    assert pin_image.read_pin(pinned) == pin_image.Pin(IMAGE, DIGEST, VERSION)
    base = fake_github.content_of(publish.state, BASE_COMMIT, "action.yml")
    assert pinned == pin_image.pinned(base, pin_image.Pin(IMAGE, DIGEST, VERSION))
    tree = publish.state["objects"][commit["tree"]]["files"]
    assert set(tree) == {"action.yml"}, "the release commit changes action.yml only"
    assert publish.tag("v1") == release, "the moving git tag follows, to the release commit"
    for tag in (VERSION, "1.1", "1", "latest"):
        assert publish.state["images"][f"{IMAGE}:{tag}"] == DIGEST
    assert publish.state["images"][f"{IMAGE}:1.0"] == OLD_DIGEST
    assert "--latest" in publish.state["releases"][f"v{VERSION}"]
    assert f"pin_image {IMAGE}@{DIGEST} {VERSION}" in publish.summary.read_text()


def test_re_running_a_finished_publish_changes_nothing(publish: Publish) -> None:
    assert publish.run()[0] == -1
    before = json.loads(json.dumps(publish.state))
    failed, log = publish.run()
    assert failed == -1, log
    assert publish.state["refs"] == before["refs"]
    assert publish.state["images"] == before["images"]
    assert publish.state["releases"] == before["releases"]
    made = [c for c in publish.state["calls"][len(before["calls"]) :] if "git/commits" in c]
    assert made == [], "no second release commit"


def test_a_version_tag_that_names_another_digest_stops_publish(publish: Publish) -> None:
    assert publish.run(OLD_DIGEST)[0] == -1
    images = dict(publish.state["images"])
    failed, log = publish.run(DIGEST)
    assert failed == step_named("The release commit"), log
    assert f"v{VERSION} exists and names another image" in log
    assert publish.state["images"] == images


def test_an_image_tag_that_names_another_digest_stops_publish(publish: Publish) -> None:
    publish.state["images"][f"{IMAGE}:{VERSION}"] = OLD_DIGEST
    publish.save()
    failed, log = publish.run()
    assert failed == step_named("The image tag :X.Y.Z"), log
    assert f"{IMAGE}:{VERSION} names another digest" in log
    assert f"refs/tags/v{VERSION}" not in publish.state["refs"], "no version tag made"
    assert publish.state["images"][f"{IMAGE}:latest"] == OLD_DIGEST
