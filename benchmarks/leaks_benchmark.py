"""How long `notLeaks` takes on 10 MB answers built to be slow, one shape at a time.

    python benchmarks/leaks_benchmark.py [MEGABYTES]

Each shape is checked against a 12-character secret and against a 256-character one (the
longest accepted); the time is the best of three. The bar (docs/configuration.md): a few seconds
for 10 MB, whatever its shape.
"""

from __future__ import annotations

import random
import string
import sys
import time

from ruledrift.checks.leaks import MAX_SECRET_CHARS, find_leak

SHORT = "tangerine-42"
LONG = "".join(random.Random(1).choices(string.ascii_letters + string.digits, k=MAX_SECRET_CHARS))


def shapes(size: int, secret: str) -> dict[str, str]:
    rng = random.Random(2)
    near = secret[: len(secret) // 2 - 1]  # just under the fragment length: every search runs on
    return {
        "random letters": "".join(rng.choices(string.ascii_lowercase + " ", k=size)),
        "one letter": secret[0] * size,
        "near misses": (near + " ") * (size // (len(near) + 1)),
        "look-alikes": "а" * size,  # Cyrillic: folded to "a"
        "invisible": "\u200b" * size,
        "percent signs": "%4" * (size // 2),
        "prose": ("The quick brown fox jumps over the lazy dog. " * (size // 45)),
    }


def main(argv: list[str]) -> int:
    size = int(float(argv[0]) * 1_000_000) if argv else 10_000_000
    find_leak("warm up", SHORT)  # the tables are loaded once per process
    for secret in (SHORT, LONG):
        print(f"secret of {len(secret)} characters, answers of {size:,} characters")
        for name, answer in shapes(size, secret).items():
            best = min(_timed(answer, secret) for _ in range(3))
            print(f"  {name:16} {best:6.2f} s")
    return 0


def _timed(answer: str, secret: str) -> float:
    start = time.perf_counter()
    find_leak(answer, secret)
    return time.perf_counter() - start


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
