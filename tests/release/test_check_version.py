"""scripts/release/check_version.py: a version is released only when it is the package version,
CHANGELOG.md has its notes and action.yml names an image of the repository's package by
digest (the line the release rewrites)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.release.check_version import main, package_version, problems

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "ghcr.io/ruledrift/action"
DIGEST = "sha256:" + "ab" * 32


def project(tmp_path: Path, version: str, image_line: str, changelog: str) -> Path:
    (tmp_path / "ruledrift").mkdir(parents=True)
    (tmp_path / "ruledrift" / "__init__.py").write_text(
        f'"""Doc."""\n\n__version__ = "{version}"\n'
    )
    action = (ROOT / "action.yml").read_text(encoding="utf-8")
    head, _, _ = action.partition("\nruns:\n")
    (tmp_path / "action.yml").write_text(f"{head}\nruns:\n  using: docker\n  {image_line}\n")
    (tmp_path / "CHANGELOG.md").write_text(changelog, encoding="utf-8")
    return tmp_path


def pinned(version: str, image: str = IMAGE) -> str:
    return f"image: docker://{image}@{DIGEST} # {version}"


def notes(version: str) -> str:
    return f"# Changelog\n\n## [{version}] - 2026-12-24\n\n- Notes.\n"


def test_the_repository_itself_can_release_its_version() -> None:
    version = package_version()
    assert problems(version, IMAGE) == []
    assert problems(f"v{version}", IMAGE) == []


def test_a_consistent_project_passes(tmp_path: Path) -> None:
    # action.yml still names the previous release: the release rewrites the line
    root = project(tmp_path, "2.1.0", pinned("2.0.0"), notes("2.1.0"))
    assert problems("2.1.0", IMAGE, root) == []
    assert problems("2.1.0", "ghcr.io/RuleDrift/Action", root) == []  # GHCR names: lower case


def test_every_disagreement_is_reported_at_once(tmp_path: Path) -> None:
    root = project(tmp_path, "2.1.0", "image: Dockerfile", notes("2.0.0"))
    found = problems("2.1.1", IMAGE, root)
    assert len(found) == 3
    assert found[0].startswith("version 2.1.1 is not the package version (2.1.0)")
    assert "'image: Dockerfile' is not `image: docker://IMAGE@sha256:" in found[1]
    assert found[2].startswith("CHANGELOG.md: no '## [2.1.0]")


@pytest.mark.parametrize(
    "line",
    [
        f"image: docker://{IMAGE}:2.0.0",  # a tag: it can be pushed again
        f"image: docker://{IMAGE}@{DIGEST}",  # no version comment
        f"image: docker://{IMAGE}@sha256:{'ab' * 31} # 2.0.0",  # a short digest
        f"image: docker://{IMAGE}:2.0.0@{DIGEST} # 2.0.0",  # a tag beside the digest
    ],
)
def test_action_yml_must_name_its_image_by_digest(tmp_path: Path, line: str) -> None:
    root = project(tmp_path, "2.1.0", line, notes("2.1.0"))
    (found,) = problems("2.1.0", IMAGE, root)
    assert "is not `image: docker://IMAGE@sha256:<64 hex digits> # X.Y.Z`" in found


def test_another_owners_image_is_refused(tmp_path: Path) -> None:
    root = project(tmp_path, "2.1.0", pinned("2.0.0"), notes("2.1.0"))
    (found,) = problems("2.1.0", "ghcr.io/someone/fork", root)
    assert found == f"action.yml names {IMAGE}, the release pushes ghcr.io/someone/fork"


def test_a_pre_release_needs_its_own_notes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path, "2.2.0-rc.1", pinned("2.1.0"), notes("2.2.0-rc.1"))
    assert main(["2.2.0-rc.1", "--image", IMAGE, "--root", str(root)]) == 0
    assert capsys.readouterr().out == "version=2.2.0-rc.1\ntag=v2.2.0-rc.1\nprerelease=true\n"


def test_a_pep440_spelling_is_not_a_release_version(tmp_path: Path) -> None:
    root = project(tmp_path, "2.2.0rc1", pinned("2.1.0"), notes("2.2.0rc1"))
    assert problems("2.2.0rc1", IMAGE, root) == [
        "the package version 2.2.0rc1 is not MAJOR.MINOR.PATCH[-PRERELEASE]"
    ]


@pytest.mark.process
def test_the_command_prints_outputs_for_the_workflow(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "scripts" / "release", tmp_path / "scripts" / "release")
    root = project(tmp_path / "p", "3.0.0", pinned("2.9.0"), notes("3.0.0"))
    command = [sys.executable, "-m", "scripts.release.check_version", "--image", IMAGE]
    ok = subprocess.run(
        [*command, "3.0.0", "--root", str(root)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (ok.returncode, ok.stdout) == (0, "version=3.0.0\ntag=v3.0.0\nprerelease=false\n")
    wrong = subprocess.run(
        [*command, "3.0.1", "--root", str(root)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (wrong.returncode, wrong.stdout) == (1, "")
    assert "check_version: version 3.0.1 is not the package version (3.0.0)" in wrong.stderr
