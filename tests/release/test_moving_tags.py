"""scripts/release/moving_tags.py: which moving tags a release (re)points, with fake tag lists."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scripts.release.moving_tags import main, moving_tags, parse, releases

ROOT = Path(__file__).resolve().parents[2]
HISTORY = ["refs/tags/v1", "refs/tags/v1.0.0", "refs/tags/v1.2.3", "refs/tags/v1.3.0"]


def image(version: str, existing: list[str]) -> list[str]:
    return moving_tags(version, existing, "image")[0]


def git(version: str, existing: list[str]) -> list[str]:
    return moving_tags(version, existing, "git")[0]


def test_the_first_release_creates_every_moving_tag() -> None:
    assert git("1.0.0", ["v1.0.0"]) == ["v1"]
    assert image("1.0.0", []) == ["1.0", "1", "latest"]


def test_a_newer_release_moves_everything_of_its_line() -> None:
    assert git("1.3.1", HISTORY) == ["v1"]
    assert image("1.3.1", HISTORY) == ["1.3", "1", "latest"]
    assert image("1.4.0", HISTORY) == ["1.4", "1", "latest"]


def test_a_patch_to_an_older_line_moves_only_its_minor_tag() -> None:
    assert git("1.2.4", HISTORY) == []
    assert image("1.2.4", HISTORY) == ["1.2"]
    _, reasons = moving_tags("1.2.4", HISTORY, "git")
    assert reasons == ["v1 stays: 1.3.0 is newer than 1.2.4"]


def test_a_fix_to_an_older_major_keeps_latest_on_the_newer_one() -> None:
    existing = [*HISTORY, "v2.0.0", "v2"]
    assert git("1.3.1", existing) == ["v1"]
    assert image("1.3.1", existing) == ["1.3", "1"]
    assert image("2.1.0", existing) == ["2.1", "2", "latest"]


@pytest.mark.parametrize("version", ["1.4.0-rc.1", "2.0.0-beta", "1.3.1-0"])
def test_pre_releases_never_move_anything(version: str) -> None:
    assert git(version, HISTORY) == []
    assert image(version, HISTORY) == []


def test_pre_releases_and_moving_tags_among_existing_ones_are_ignored() -> None:
    existing = ["v1", "v1.2.3", "v1.5.0-rc.1", "latest", "1", "v2.0.0-rc.2", "nightly", "v1.2"]
    assert releases(existing) == [(1, 2, 3)]
    assert image("1.3.0", existing) == ["1.3", "1", "latest"]


def test_registry_spellings_count_too() -> None:
    assert image("1.2.4", ["1.2.3", "1.3.0", "latest"]) == ["1.2"]


def test_re_running_the_release_of_the_newest_version_keeps_it_there() -> None:
    assert image("1.3.0", HISTORY) == ["1.3", "1", "latest"]


def test_versions_are_compared_as_numbers() -> None:
    assert image("1.10.0", ["v1.9.0"]) == ["1.10", "1", "latest"]
    assert git("1.9.1", ["v1.10.0"]) == []


@pytest.mark.parametrize("version", ["v1.2.3", "1.2", "01.2.3", "1.2.3+build", "latest", ""])
def test_a_version_that_is_not_semver_is_refused(version: str) -> None:
    assert parse(version) is None
    with pytest.raises(ValueError, match=r"is not MAJOR\.MINOR\.PATCH"):
        moving_tags(version, [], "git")


@pytest.mark.process
def test_the_command_reads_stdin_and_prints_one_tag_a_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "scripts.release.moving_tags", "1.2.4", "--kind", "image"],
        input="\n".join(HISTORY) + "\n",
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "1.2\n")
    assert "1 stays: 1.3.0 is newer than 1.2.4" in done.stderr


def test_main_refuses_a_bad_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["v1.2.3", "--kind", "git"]) == 2
    assert "is not MAJOR.MINOR.PATCH" in capsys.readouterr().err
