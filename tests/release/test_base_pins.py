"""scripts/release/base_pins.py: the release refuses base pins that are not what their tags
resolve to. The registry is a fake `docker` on PATH (a real process) answering
`docker buildx imagetools inspect NAME:TAG --format '{{json .Manifest}}'`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.release.base_pins import Pin, check, pins

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[2]
PYTHON = "sha256:" + "1" * 64
OLLAMA = "sha256:" + "2" * 64
DOCKERFILE = f"""FROM ollama/ollama:0.34.2@{OLLAMA} AS ollama
RUN true
FROM python:3.12.14-slim-trixie@{PYTHON} AS base
FROM base AS wheel
FROM base
"""
FAKE_DOCKER = """#!{python}
import json, os, sys
answers = json.loads(os.environ["FAKE_REGISTRY"])
args = sys.argv[1:]
assert args[:3] == ["buildx", "imagetools", "inspect"], args
assert args[4:] == ["--format", "{{{{json .Manifest}}}}"], args
if args[3] not in answers:
    sys.exit("ERROR: " + args[3] + ": not found")
print(json.dumps(answers[args[3]]))
"""


def index(digest: str, *platforms: str) -> dict[str, object]:
    """The manifest imagetools prints for a multi-arch index of `platforms` (os/arch[/variant])."""
    entries = []
    for platform in platforms:
        os_name, architecture = platform.split("/")[:2]
        entry = {"os": os_name, "architecture": architecture}
        entries.append({"digest": "sha256:" + "9" * 64, "platform": entry})
    return {
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "digest": digest,
        "manifests": entries,
    }


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(FAKE_DOCKER.format(python=sys.executable))
    docker.chmod(0o755)
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return tmp_path


def answers(monkeypatch: pytest.MonkeyPatch, **by_reference: dict[str, object]) -> None:
    monkeypatch.setenv("FAKE_REGISTRY", json.dumps(by_reference))


def check_all(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.release.base_pins",
            "--check",
            "--dockerfile",
            str(root / "Dockerfile"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


BOTH = ("linux/amd64", "linux/arm64")


def test_the_pins_are_read_from_the_from_lines(registry: Path) -> None:
    found, unpinned = pins(registry / "Dockerfile")
    assert found == [
        Pin("ollama/ollama", "0.34.2", OLLAMA),
        Pin("python", "3.12.14-slim-trixie", PYTHON),
    ]
    assert unpinned == []


def test_pins_that_match_their_tags_pass(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers(
        monkeypatch,
        **{
            "ollama/ollama:0.34.2": index(OLLAMA, *BOTH),
            "python:3.12.14-slim-trixie": index(PYTHON, *BOTH, "linux/arm/v7"),
        },
    )
    done = check_all(registry)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"ollama/ollama:0.34.2@{OLLAMA}",
        f"python:3.12.14-slim-trixie@{PYTHON}",
    ]


def test_a_moved_tag_fails_the_release(registry: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilt = "sha256:" + "3" * 64
    answers(
        monkeypatch,
        **{
            "ollama/ollama:0.34.2": index(OLLAMA, *BOTH),
            "python:3.12.14-slim-trixie": index(rebuilt, *BOTH),
        },
    )
    done = check_all(registry)
    assert done.returncode == 1
    assert (
        f"python:3.12.14-slim-trixie now resolves to {rebuilt}, the Dockerfile pins {PYTHON}"
        in done.stderr
    )


def test_a_missing_platform_or_tag_fails_the_release(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers(monkeypatch, **{"ollama/ollama:0.34.2": index(OLLAMA, "linux/amd64")})
    done = check_all(registry)
    assert done.returncode == 1
    assert "not a multi-arch index with linux/arm64" in done.stderr
    assert "python:3.12.14-slim-trixie: ERROR: python:3.12.14-slim-trixie: not found" in done.stderr


def test_check_reports_a_registry_failure_as_a_problem(
    registry: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers(monkeypatch)
    (problem,) = check(
        Pin("python", "3.12.14-slim-trixie", PYTHON), str(registry / "bin" / "docker")
    )
    assert "not found" in problem


def test_an_unpinned_base_fails_even_without_docker(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.12-slim\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.release.base_pins",
            "--dockerfile",
            str(tmp_path / "Dockerfile"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert "not pinned by tag and digest: FROM python:3.12-slim" in done.stderr
    assert "no pinned FROM line" in done.stderr
