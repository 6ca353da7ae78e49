"""The image action.yml runs, named by digest: the one line under `runs:`

    image: docker://ghcr.io/OWNER/REPO@sha256:<64 hex digits> # 1.2.3

with the version in the comment. A digest names exactly one build, so `uses: OWNER/REPO@<sha>`
runs exactly the code it names; a tag could be pushed again. The release workflow pushes the
candidate by digest, smoke-tests it, then writes this line (with this script) into the release
commit, which the version tag points at. action.yml is not in the image's build context
(.dockerignore), so the line changes nothing in the image it names.

    python3 -m scripts.release.pin_image ghcr.io/OWNER/REPO@sha256:… 1.2.3 [--file action.yml]
    python3 -m scripts.release.pin_image --show [--file action.yml]

The first form rewrites the `image:` line under `runs:` (whatever it named: a tag, a digest,
`Dockerfile`) and nothing else, and prints the new line. `--show` prints `image=`, `digest=` and
`version=` lines of the pin that is there (for $GITHUB_OUTPUT). Exit code 0; 1 when action.yml has
no single `image:` line under `runs:` (or, with --show, one that is not a digest pin); 2 when the
reference or the version is malformed. Standard library only.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from scripts.release import moving_tags

ROOT = Path(__file__).resolve().parents[2]
DIGEST = r"sha256:[0-9a-f]{64}"
# A registry path in lower case (GHCR and Docker refuse upper case; the separators of the OCI
# distribution spec), then the digest.
NAME_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(rf"(?P<image>{NAME_PART}(?:/{NAME_PART})+)@(?P<digest>{DIGEST})")
PIN_LINE = re.compile(rf"  image: docker://{REFERENCE.pattern} # (?P<version>\S+)")
IMAGE_LINE = re.compile(r"^  image:.*$", re.MULTILINE)


class PinError(Exception):
    """action.yml has no usable `image:` line, or a reference or version is malformed."""


@dataclass(frozen=True)
class Pin:
    """An image named by digest, and the version it was released as."""

    image: str  # ghcr.io/owner/repo, no tag
    digest: str  # sha256:…
    version: str  # 1.2.3 or 1.2.3-rc.1

    @property
    def reference(self) -> str:
        return f"{self.image}@{self.digest}"

    def line(self) -> str:
        return f"  image: docker://{self.reference} # {self.version}"


def make_pin(reference: str, version: str) -> Pin:
    """The pin of `reference` (IMAGE@sha256:…) released as `version`; raises PinError."""
    match = REFERENCE.fullmatch(reference)
    if not match:
        raise PinError(
            f"{reference!r} is not IMAGE@sha256:<64 hex digits> (lower case, no tag), "
            "e.g. ghcr.io/ruledrift/action@sha256:…"
        )
    if moving_tags.parse(version) is None:
        raise PinError(f"version {version!r} is not {moving_tags.FORM}")
    return Pin(match["image"], match["digest"], version)


def _image_line(text: str) -> re.Match[str]:
    """The one `  image:` line of the `runs:` block (action.yml's last top-level key)."""
    runs = text.find("\nruns:\n")
    found = [m for m in IMAGE_LINE.finditer(text) if 0 <= runs < m.start()]
    if len(found) != 1:
        raise PinError("action.yml: expected one `  image:` line under `runs:`")
    return found[0]


def read_pin(text: str) -> Pin:
    """The digest pin of action.yml's text; raises PinError when the line is not one."""
    line = _image_line(text)[0]
    match = PIN_LINE.fullmatch(line)
    if not match or moving_tags.parse(match["version"]) is None:
        raise PinError(
            f"action.yml: {line.strip()!r} is not "
            "`image: docker://IMAGE@sha256:<64 hex digits> # X.Y.Z`"
        )
    return Pin(match["image"], match["digest"], match["version"])


def pinned(text: str, pin: Pin) -> str:
    """action.yml's text with its `image:` line naming `pin`, and nothing else changed."""
    line = _image_line(text)
    return text[: line.start()] + pin.line() + text[line.end() :]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pin_image", description="Pin action.yml's image.")
    parser.add_argument("reference", nargs="?", help="IMAGE@sha256:… (the pushed index)")
    parser.add_argument("version", nargs="?", help="the version it is released as, e.g. 1.2.3")
    parser.add_argument("--show", action="store_true", help="print the pin that is there")
    parser.add_argument("--file", type=Path, default=ROOT / "action.yml")
    args = parser.parse_args(argv)
    try:
        text = args.file.read_text(encoding="utf-8")
        if args.show:
            pin = read_pin(text)
            print(f"image={pin.image}\ndigest={pin.digest}\nversion={pin.version}")
            return 0
        if args.reference is None or args.version is None:
            parser.error("give REFERENCE and VERSION, or --show")
        try:
            pin = make_pin(args.reference, args.version)
        except PinError as error:
            print(f"pin_image: {error}", file=sys.stderr)
            return 2
        args.file.write_text(pinned(text, pin), encoding="utf-8")
    except (OSError, PinError) as error:
        print(f"pin_image: {error}", file=sys.stderr)
        return 1
    print(pin.line().strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
