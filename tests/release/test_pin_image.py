"""scripts/release/pin_image.py: action.yml names its image by digest with the version in a
comment; the release rewrites that one line, and nothing else, into the release commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scripts.release.pin_image import PinError, main, make_pin, pinned, read_pin

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "ghcr.io/ruledrift/action"
DIGEST = "sha256:" + "0123456789abcdef" * 4


def action_text() -> str:
    return (ROOT / "action.yml").read_text(encoding="utf-8")


def test_the_committed_action_yml_is_a_digest_pin() -> None:
    pin = read_pin(action_text())
    assert pin.image == IMAGE
    assert pin.digest.startswith("sha256:")
    assert len(pin.digest) == len("sha256:") + 64


def test_pinning_changes_only_the_image_line() -> None:
    before = action_text()
    after = pinned(before, make_pin(f"{IMAGE}@{DIGEST}", "1.2.3"))
    changed = [
        (old, new)
        for old, new in zip(before.splitlines(), after.splitlines(), strict=True)
        if old != new
    ]
    assert changed == [(changed[0][0], f"  image: docker://{IMAGE}@{DIGEST} # 1.2.3")]
    assert read_pin(after).version == "1.2.3"
    parsed = yaml.safe_load(after)
    assert parsed["runs"] == {"using": "docker", "image": f"docker://{IMAGE}@{DIGEST}"}


@pytest.mark.parametrize(
    "line",
    ["image: Dockerfile", f"image: docker://{IMAGE}:1.0.0", f"image: 'docker://{IMAGE}:1.0.0'"],
)
def test_any_former_image_line_can_be_pinned(line: str) -> None:
    text = f"name: x\nruns:\n  using: docker\n  {line}\n"
    with pytest.raises(PinError, match="is not `image: docker://IMAGE@sha256"):
        read_pin(text)
    assert pinned(text, make_pin(f"{IMAGE}@{DIGEST}", "2.0.0-rc.1")).endswith(
        f"  image: docker://{IMAGE}@{DIGEST} # 2.0.0-rc.1\n"
    )


def test_an_image_line_outside_runs_is_not_touched() -> None:
    text = "inputs:\n  x:\n  image: not this one\nruns:\n  using: docker\n  image: Dockerfile\n"
    result = pinned(text, make_pin(f"{IMAGE}@{DIGEST}", "1.0.0"))
    assert "  image: not this one\n" in result
    with pytest.raises(PinError, match="expected one"):
        pinned("runs:\n  using: docker\n", make_pin(f"{IMAGE}@{DIGEST}", "1.0.0"))


@pytest.mark.parametrize(
    "image", [IMAGE, "ghcr.io/my-org/my--repo", "ghcr.io/o/a__b", "registry.example/a/b/c"]
)
def test_every_lower_case_registry_path_can_be_pinned(image: str) -> None:
    assert make_pin(f"{image}@{DIGEST}", "1.0.0").reference == f"{image}@{DIGEST}"


@pytest.mark.parametrize(
    ("reference", "version"),
    [
        (f"{IMAGE}:1.2.3", "1.2.3"),  # a tag
        (f"{IMAGE}:1.2.3@{DIGEST}", "1.2.3"),  # a tag and a digest
        (f"{IMAGE}@sha256:{'A' * 64}", "1.2.3"),  # upper case hex
        (f"{IMAGE}@sha256:{'a' * 63}", "1.2.3"),  # too short
        (f"GHCR.io/RuleDrift/action@{DIGEST}", "1.2.3"),  # upper case name
        (f"action@{DIGEST}", "1.2.3"),  # no registry path
        (f"ghcr.io/o/a___b@{DIGEST}", "1.2.3"),  # three underscores
        (f"ghcr.io/o/-a@{DIGEST}", "1.2.3"),  # a leading separator
        (f"{IMAGE}@{DIGEST}", "v1.2.3"),  # the tag, not the version
        (f"{IMAGE}@{DIGEST}", "1.2"),
        (f"{IMAGE}@{DIGEST} # 1.2.3\n  x: y", "1.2.3"),  # an injected line
    ],
)
def test_malformed_references_and_versions_are_refused(reference: str, version: str) -> None:
    with pytest.raises(PinError):
        make_pin(reference, version)


@pytest.mark.process
def test_the_command_rewrites_a_file_and_shows_the_pin(tmp_path: Path) -> None:
    target = tmp_path / "action.yml"
    target.write_text(action_text(), encoding="utf-8")
    command = [sys.executable, "-m", "scripts.release.pin_image"]
    done = subprocess.run(
        [*command, f"{IMAGE}@{DIGEST}", "1.4.0", "--file", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, f"image: docker://{IMAGE}@{DIGEST} # 1.4.0\n")
    shown = subprocess.run(
        [*command, "--show", "--file", str(target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert shown.stdout == f"image={IMAGE}\ndigest={DIGEST}\nversion=1.4.0\n"


def test_the_command_refuses_a_tag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "action.yml"
    target.write_text(action_text(), encoding="utf-8")
    assert main([f"{IMAGE}:1.4.0", "1.4.0", "--file", str(target)]) == 2
    assert "is not IMAGE@sha256:<64 hex digits>" in capsys.readouterr().err
    assert target.read_text(encoding="utf-8") == action_text()
    (tmp_path / "broken.yml").write_text("runs:\n  using: docker\n")
    assert main(["--show", "--file", str(tmp_path / "broken.yml")]) == 1
