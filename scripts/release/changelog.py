"""The release notes of one version: its section of CHANGELOG.md (Keep a Changelog 1.1.0), which
the release workflow hands to `gh release create --notes-file`.

    python3 -m scripts.release.changelog VERSION [--file CHANGELOG.md]

A section starts at its heading, `## [1.2.3] - 2026-12-01` (the version in brackets, a date in
ISO 8601), and ends at the next `## ` heading; the link definitions at the end of the file
(`[1.2.3]: https://…`) are not part of it. Prints the section's body without its heading.
Exit code 0; 1 when the version has no section, its heading has no date, or it is empty.
Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?P<rest>.*)$")
DATED = re.compile(r"^ - \d{4}-\d{2}-\d{2}( \[YANKED\])?$")
LINK_DEFINITION = re.compile(r"^\[[^\]]+\]:\s+\S+")


class ChangelogError(Exception):
    """The changelog has no usable section for the version."""


def section(text: str, version: str) -> str:
    """The body of `version`'s section, stripped of blank edges and trailing link definitions."""
    lines = text.splitlines()
    start = None
    for number, line in enumerate(lines):
        heading = HEADING.match(line)
        if heading and heading["version"] == version:
            if not DATED.match(heading["rest"]):
                raise ChangelogError(
                    f"line {number + 1}: {line.strip()!r} needs a date: "
                    f"'## [{version}] - YYYY-MM-DD'"
                )
            start = number + 1
            break
    if start is None:
        raise ChangelogError(f"no '## [{version}] - YYYY-MM-DD' section")
    end = next((n for n in range(start, len(lines)) if lines[n].startswith("## ")), len(lines))
    body = lines[start:end]
    while body and (not body[-1].strip() or LINK_DEFINITION.match(body[-1])):
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
    if not body:
        raise ChangelogError(f"the section of {version} is empty")
    return "\n".join(body) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="changelog", description="Print a version's notes.")
    parser.add_argument("version", help="e.g. 1.2.3 (no leading v)")
    parser.add_argument("--file", type=Path, default=Path("CHANGELOG.md"))
    args = parser.parse_args(argv)
    try:
        notes = section(args.file.read_text(encoding="utf-8"), args.version)
    except (OSError, ChangelogError) as error:
        print(f"changelog: {args.file}: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
