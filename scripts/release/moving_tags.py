"""Which moving tags a release moves: the git tag `vMAJOR` (what `uses: OWNER/REPO@v1` resolves)
and the image tags `MAJOR.MINOR`, `MAJOR` and `latest`. A moving tag only ever moves forward: it
points at the newest release of its line, so a patch to an older line (1.2.4 after 1.3.0) moves
`1.2` but neither `v1`, `1` nor `latest`, and a pre-release (1.3.0-rc.1) moves nothing.

    python3 -m scripts.release.moving_tags VERSION --kind git|image < existing-tags

The existing tags come on standard input, one a line, as git or the registry lists them (`v1.2.3`,
`refs/tags/v1.2.3` or `1.2.3`); moving tags, pre-releases and other names among them are ignored.
The tags to (re)point go to standard output, one a line; the reasons to standard error.
Exit code 0, or 2 when VERSION is not MAJOR.MINOR.PATCH[-PRERELEASE]. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Sequence

SEMVER = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)

FORM = "MAJOR.MINOR.PATCH[-PRERELEASE]"
Release = tuple[int, int, int]


def parse(text: str) -> tuple[Release, str | None] | None:
    """(major, minor, patch) and the pre-release part of `1.2.3[-rc.1]`, or None."""
    match = SEMVER.fullmatch(text)
    if not match:
        return None
    major, minor, patch, prerelease = match.groups()
    return (int(major), int(minor), int(patch)), prerelease


def releases(tags: Iterable[str]) -> list[Release]:
    """The final releases among existing tags, whatever their spelling; the rest is ignored."""
    found = []
    for tag in tags:
        name = tag.strip().removeprefix("refs/tags/").removeprefix("v")
        parsed = parse(name)
        if parsed and parsed[1] is None:
            found.append(parsed[0])
    return found


def moving_tags(version: str, existing: Iterable[str], kind: str) -> tuple[list[str], list[str]]:
    """(tags to point at `version`, the reasons) for `kind` "git" or "image"."""
    parsed = parse(version)
    if parsed is None:
        raise ValueError(f"{version!r} is not {FORM}")
    new, prerelease = parsed
    if prerelease is not None:
        return [], [f"{version} is a pre-release: no moving tag moves"]
    known = releases(existing)
    lines = {
        f"{new[0]}.{new[1]}": [r for r in known if r[:2] == new[:2]],
        f"{new[0]}": [r for r in known if r[0] == new[0]],
        "latest": known,
    }
    wanted = {"git": [f"{new[0]}"], "image": list(lines)}[kind]
    moves, reasons = [], []
    for line in wanted:
        name = f"v{line}" if kind == "git" else line
        newest = max(lines[line], default=new)
        if new >= newest:
            moves.append(name)
            reasons.append(f"{name} -> {version}")
        else:
            reasons.append(f"{name} stays: {'.'.join(map(str, newest))} is newer than {version}")
    return moves, reasons


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="moving_tags", description=__doc__.split("\n\n", 1)[0] if __doc__ else None
    )
    parser.add_argument("version", help="the version being released, e.g. 1.2.3 (no leading v)")
    parser.add_argument("--kind", choices=("git", "image"), required=True)
    args = parser.parse_args(argv)
    if parse(args.version) is None:
        print(f"moving_tags: {args.version!r} is not {FORM}", file=sys.stderr)
        return 2
    moves, reasons = moving_tags(args.version, sys.stdin.read().splitlines(), args.kind)
    for reason in reasons:
        print(f"moving_tags: {reason}", file=sys.stderr)
    for tag in moves:
        print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
