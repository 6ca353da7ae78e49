"""Whether a tag may be released: the tag is `v` + the package's version (v1.2.3 for
`__version__ = "1.2.3"` in ruledrift/__init__.py), action.yml runs exactly that release's image
(`image: docker://ghcr.io/OWNER/REPO:1.2.3`, the repository's own package, lower case), and
CHANGELOG.md has the version's dated section (the release notes).

    python3 -m scripts.release.check_version TAG --image ghcr.io/OWNER/REPO

Prints `version=1.2.3` and `prerelease=true|false` (lines for $GITHUB_OUTPUT); every mismatch as
an error. Exit code 0, or 1 when anything disagrees. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from scripts.release import changelog, moving_tags

ROOT = Path(__file__).resolve().parents[2]
VERSION_LINE = re.compile(r'^__version__ = "(?P<version>[^"]+)"$', re.MULTILINE)
IMAGE_LINE = re.compile(
    r"""^  image:\s*(?P<quote>['"]?)(?P<value>[^'"\s]+)(?P=quote)\s*(?:#.*)?$""", re.MULTILINE
)


def package_version(root: Path = ROOT) -> str:
    """`__version__` as ruledrift/__init__.py spells it (read, not imported)."""
    text = (root / "ruledrift" / "__init__.py").read_text(encoding="utf-8")
    match = VERSION_LINE.search(text)
    if not match:
        raise ValueError('ruledrift/__init__.py: no line `__version__ = "…"`')
    return match["version"]


def action_image(root: Path = ROOT) -> str:
    """The value of `runs.image` in action.yml (`Dockerfile` or `docker://…`)."""
    text = (root / "action.yml").read_text(encoding="utf-8")
    runs = text.split("\nruns:\n", 1)
    images = IMAGE_LINE.findall(runs[1]) if len(runs) == 2 else []
    if len(images) != 1:
        raise ValueError("action.yml: expected one `  image:` line under `runs:`")
    return str(images[0][1])


def problems(tag: str, image: str, root: Path = ROOT) -> list[str]:
    """Everything that stops `tag` from being released, empty when nothing does."""
    found = []
    version = package_version(root)
    if tag != f"v{version}":
        found.append(f"tag {tag} is not v + the package version ({version}): tag v{version}")
    if moving_tags.parse(version) is None:
        found.append(f"the package version {version} is not MAJOR.MINOR.PATCH[-PRERELEASE]")
    expected = f"docker://{image.lower()}:{version}"
    actual = action_image(root)
    if actual != expected:
        found.append(f"action.yml runs {actual!r}, the release needs {expected!r}")
    try:
        changelog.section((root / "CHANGELOG.md").read_text(encoding="utf-8"), version)
    except (OSError, changelog.ChangelogError) as error:
        found.append(f"CHANGELOG.md: {error}")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="check_version", description="Check a release tag.")
    parser.add_argument("tag", help="the pushed tag, e.g. v1.2.3")
    parser.add_argument("--image", required=True, help="the image name, e.g. ghcr.io/o/r")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        found = problems(args.tag, args.image, args.root)
    except (OSError, ValueError) as error:
        found = [str(error)]
    for problem in found:
        print(f"check_version: {problem}", file=sys.stderr)
    if found:
        return 1
    version = package_version(args.root)
    parsed = moving_tags.parse(version)
    print(f"version={version}")
    print(f"prerelease={'true' if parsed and parsed[1] is not None else 'false'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
