"""The Dockerfile's base images, pinned as `NAME:TAG@sha256:DIGEST`, checked against the registry:
each tag must still resolve to the pinned digest (the digest of a multi-arch index, not of one
platform's manifest) and that index must hold linux/amd64 and linux/arm64.

    python3 -m scripts.release.base_pins            # list the pins
    python3 -m scripts.release.base_pins --check    # resolve them with docker buildx imagetools

A tag that moved (python:3.12.14-slim-trixie is rebuilt when Debian ships fixes) fails the
check: merge Dependabot's update of the pin, or update it by hand from
`docker buildx imagetools inspect NAME:TAG`, then tag the release again.
Exit code 0; 1 when a pin is missing, moved or lacks a platform. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLATFORMS = ("linux/amd64", "linux/arm64")
FROM = re.compile(
    r"^FROM\s+(?:--platform=\S+\s+)?(?P<ref>\S+)(?:\s+AS\s+(?P<stage>\S+))?\s*$", re.IGNORECASE
)
PINNED = re.compile(r"(?P<name>[^:@\s]+):(?P<tag>[^@\s]+)@(?P<digest>sha256:[0-9a-f]{64})")


@dataclass(frozen=True)
class Pin:
    name: str
    tag: str
    digest: str

    def __str__(self) -> str:
        return f"{self.name}:{self.tag}@{self.digest}"


def pins(dockerfile: Path = ROOT / "Dockerfile") -> tuple[list[Pin], list[str]]:
    """(the pinned base images, the FROM lines that name an image without a tag and digest).
    A FROM that names an earlier stage is neither."""
    found: list[Pin] = []
    unpinned: list[str] = []
    stages: set[str] = set()
    for line in dockerfile.read_text(encoding="utf-8").splitlines():
        match = FROM.match(line.strip())
        if not match:
            continue
        ref = match["ref"]
        if match["stage"]:
            stages.add(match["stage"].lower())
        if ref.lower() in stages - {(match["stage"] or "").lower()}:
            continue  # an earlier stage, not an image
        pinned = PINNED.fullmatch(ref)
        if pinned:
            found.append(Pin(pinned["name"], pinned["tag"], pinned["digest"]))
        else:
            unpinned.append(line.strip())
    return found, unpinned


def resolve(reference: str, docker: str) -> dict[str, object]:
    """`docker buildx imagetools inspect REFERENCE`'s manifest as JSON."""
    done = subprocess.run(
        [docker, "buildx", "imagetools", "inspect", reference, "--format", "{{json .Manifest}}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        raise LookupError(f"{reference}: {done.stderr.strip() or 'imagetools inspect failed'}")
    manifest = json.loads(done.stdout)
    return manifest if isinstance(manifest, dict) else {}


def check(pin: Pin, docker: str) -> list[str]:
    """What is wrong with one pin (empty: the tag still points at the pinned index)."""
    try:
        manifest = resolve(f"{pin.name}:{pin.tag}", docker)
    except (LookupError, json.JSONDecodeError, subprocess.TimeoutExpired) as error:
        return [str(error)]
    problems = []
    if manifest.get("digest") != pin.digest:
        problems.append(
            f"{pin.name}:{pin.tag} now resolves to {manifest.get('digest')}, the Dockerfile pins "
            f"{pin.digest}: update the pin (Dependabot's pull request does) and tag again"
        )
    entries = manifest.get("manifests")
    platforms = {
        f"{entry['platform'].get('os')}/{entry['platform'].get('architecture')}"
        for entry in (entries if isinstance(entries, list) else [])
        if isinstance(entry, dict) and isinstance(entry.get("platform"), dict)
    }
    missing = [platform for platform in PLATFORMS if platform not in platforms]
    if missing:
        problems.append(f"{pin}: not a multi-arch index with {', '.join(missing)}")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="base_pins", description="The Dockerfile's base pins.")
    parser.add_argument("--check", action="store_true", help="resolve every tag in the registry")
    parser.add_argument("--dockerfile", type=Path, default=ROOT / "Dockerfile")
    args = parser.parse_args(argv)
    found, unpinned = pins(args.dockerfile)
    problems = [f"not pinned by tag and digest: {line}" for line in unpinned]
    if not found:
        problems.append(f"{args.dockerfile}: no pinned FROM line")
    docker = shutil.which("docker") if args.check else None
    if args.check and docker is None:
        problems.append("--check needs docker with buildx on PATH")
    for pin in found:
        print(pin)
        if docker:
            problems.extend(check(pin, docker))
    for problem in problems:
        print(f"base_pins: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
