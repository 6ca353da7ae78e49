"""Write ruledrift/checks/homoglyphs.txt, the look-alike table of the `notLeaks` assertion.

The source is `confusables.json` from the PyPI package confusable-homoglyphs 3.3.1 (MIT; built
from Unicode's confusables.txt, UTS #39), which is not a dependency: download its wheel and unpack
it, then run

    pip download --no-deps confusable-homoglyphs==3.3.1 -d /tmp/cg && cd /tmp/cg && unzip *.whl
    python scripts/make_homoglyphs.py /tmp/cg/confusable_homoglyphs/confusables.json

Kept: every non-ASCII character that the table says looks like one ASCII letter or digit, mapped
to that character in lower case; where the table's class of look-alikes has several ASCII
members (I, l and 1; O and 0), to the one of the character's own kind (a capital letter, a small
letter, a digit). ASCII characters themselves are never mapped, so that ASCII text, and an encoded
secret (hex, base64), reads the same after the mapping. Each line is
`SOURCE TARGET`, both as hexadecimal code points.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "ruledrift" / "checks" / "homoglyphs.txt"
HEADER = (
    "# Look-alike characters for the notLeaks assertion: SOURCE TARGET (hex code points).\n"
    "# Made by scripts/make_homoglyphs.py from confusable-homoglyphs 3.3.1 (MIT),\n"
    "# itself from Unicode's confusables.txt; see homoglyphs.NOTICE.md.\n"
)


def table(confusables: dict[str, list[dict[str, str]]]) -> dict[str, str]:
    mapped: dict[str, str] = {}
    for target, sources in confusables.items():
        if len(target) != 1 or not (target.isascii() and target.isalnum()):
            continue
        chars = [source["c"] for source in sources if len(source["c"]) == 1]
        ascii_members = [target, *(c for c in chars if c.isascii() and c.isalnum())]
        for char in chars:
            if not char.isascii():
                mapped.setdefault(char, _imitated(char, ascii_members))
    return mapped


def _imitated(char: str, members: list[str]) -> str:
    """The ASCII member of a class of look-alikes that `char` imitates, in lower case: one of
    its own kind where there is one (capital iota is I, not l; a Bengali zero is 0, not O), so
    that case folding after the mapping treats the answer as it treats ASCII."""
    kinds = (str.isupper, str.islower, str.isdigit)
    for kind in kinds:
        if kind(char):
            alike = [member for member in members if kind(member)]
            if alike:
                return alike[0].lower()
    return members[0].lower()


def main(argv: list[str]) -> int:
    confusables = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    lines = [f"{ord(s):04X} {ord(t):04X}\n" for s, t in sorted(table(confusables).items())]
    OUT.write_text(HEADER + "".join(lines), encoding="utf-8")
    print(f"{len(lines)} characters written to {OUT.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
