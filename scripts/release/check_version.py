"""Whether a version may be released from this commit: it is the package's version (1.2.3 for
`__version__ = "1.2.3"` in ruledrift/__init__.py; the maintainer types it when starting the
release, as a confirmation, with or without a leading `v`), CHANGELOG.md has its dated section
(the release notes), and action.yml names an image of the repository's own package by digest
(`image: docker://ghcr.io/OWNER/REPO@sha256:… # X.Y.Z`, lower case; scripts/release/pin_image.py),
the line the release rewrites for the new version.

    python3 -m scripts.release.check_version VERSION --image ghcr.io/OWNER/REPO

Prints `version=1.2.3`, `tag=v1.2.3` and `prerelease=true|false` (lines for $GITHUB_OUTPUT);
every mismatch as an error. Exit code 0, or 1 when anything disagrees. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from scripts.release import changelog, moving_tags, pin_image

ROOT = Path(__file__).resolve().parents[2]
VERSION_LINE = re.compile(r'^__version__ = "(?P<version>[^"]+)"$', re.MULTILINE)


def package_version(root: Path = ROOT) -> str:
    """`__version__` as ruledrift/__init__.py spells it (read, not imported)."""
    text = (root / "ruledrift" / "__init__.py").read_text(encoding="utf-8")
    match = VERSION_LINE.search(text)
    if not match:
        raise ValueError('ruledrift/__init__.py: no line `__version__ = "…"`')
    return match["version"]


def problems(requested: str, image: str, root: Path = ROOT) -> list[str]:
    """Everything that stops version `requested` from being released, empty when nothing does."""
    found = []
    version = package_version(root)
    if requested.removeprefix("v") != version:
        found.append(
            f"version {requested} is not the package version ({version}): set __version__ in "
            "ruledrift/__init__.py on main first, or release " + version
        )
    if moving_tags.parse(version) is None:
        found.append(f"the package version {version} is not MAJOR.MINOR.PATCH[-PRERELEASE]")
    try:
        pin = pin_image.read_pin((root / "action.yml").read_text(encoding="utf-8"))
    except pin_image.PinError as error:
        found.append(str(error))
    else:
        if pin.image != image.lower():
            found.append(f"action.yml names {pin.image}, the release pushes {image.lower()}")
    try:
        changelog.section((root / "CHANGELOG.md").read_text(encoding="utf-8"), version)
    except (OSError, changelog.ChangelogError) as error:
        found.append(f"CHANGELOG.md: {error}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_version", description="Check a release.")
    parser.add_argument("version", help="the version to release, e.g. 1.2.3")
    parser.add_argument("--image", required=True, help="the image name, e.g. ghcr.io/o/r")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        found = problems(args.version, args.image, args.root)
    except (OSError, ValueError) as error:
        found = [str(error)]
    for problem in found:
        print(f"check_version: {problem}", file=sys.stderr)
    if found:
        return 1
    version = package_version(args.root)
    parsed = moving_tags.parse(version)
    print(f"version={version}")
    print(f"tag=v{version}")
    print(f"prerelease={'true' if parsed and parsed[1] is not None else 'false'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
