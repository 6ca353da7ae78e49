"""Checking 10 MB answers of hostile shapes (run by hand; figures go in benchmarks/README.md).

For each shape, an answer of at least 10,000,000 characters:

- `check_language`: the pure check in this process (it reads the first IDENTIFIED_CHARS);
- `check_answer`: what a probe costs in a run, `language` + `notMatches` + `notContains`
  through warm check workers (the answer crosses a pipe to them), median of three;
- the CPU time of this process (the event loop's work) per `check_answer`, median of three,
  for the checks in workers (`language`, `notMatches`: encoding the answer and sending it) and
  for the text check (`notContains`, which case-folds the answer where it is): how long another
  call or an interruption could be held up, whatever else runs on the machine;
- the event loop's longest stall (of three runs) for the checks in workers, from a task that
  ticks every millisecond (wall time: on a busy machine it includes time the process waited
  for a core);
- `preview`: the terminal's preview of the answer (on the event loop, with
  --include-responses).

    python benchmarks/language_benchmark.py [--chars N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from ruledrift.checks.assertions import check_answer
from ruledrift.checks.language import check_language
from ruledrift.checks.regex_workers import RegexEvaluator
from ruledrift.data import Assertion, LanguageAssertion, MatchesAssertion, TextAssertion
from ruledrift.text import preview

# (before, repeated, after): the repeated part fills the answer.
SHAPES = {
    "full stops": ("", ". ", ""),
    "a word, full stops": ("Hello ", ". ", ""),
    "numbered": ("", "1. ", ""),
    "dotted letters": ("", "a.", ""),
    "one long word": ("", "a", ""),
    "spaces, a word": ("", " ", "a"),
    "backticks, a word": ("", "`", "a"),
    "fence lines": ("", "```\n", ""),
    "tilde fences": ("", "~~~ x\n", ""),
    "at signs": ("", "x@", ""),
    "an address's name": ("", "a", "@"),
    "dotted domain": ("a@", "b.", ""),
    "URLs": ("", "www.a ", ""),
    "blank lines": ("a", "\n \n", ""),
    "CJK sentences": ("", "中。", ""),
    "control characters": ("", "\x85", ""),
    "English prose": ("", "The quick brown fox jumps over the lazy dog. ", ""),
    "German prose": ("", "Die Erstattung dauert etwa fünf Werktage. ", ""),
}
IN_WORKERS: list[Assertion] = [
    LanguageAssertion("en"),
    MatchesAssertion("hunter2", "i", "notMatches"),
]
TEXT: list[Assertion] = [TextAssertion("notContains", "hunter2")]


def answer(shape: str, chars: int) -> str:
    before, repeated, after = SHAPES[shape]
    return before + repeated * (chars // len(repeated) + 1) + after


async def probe_cost(
    regex: RegexEvaluator, text: str, assertions: list[Assertion]
) -> tuple[float, float, float]:
    """Seconds for check_answer: wall, this process's CPU, the event loop's longest stall."""
    stall = 0.0
    running = True

    async def tick() -> None:
        nonlocal stall
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stall = max(stall, now - last - 0.001)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    start, cpu = time.perf_counter(), time.process_time()
    await check_answer(assertions, text, regex)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    running = False
    await ticker
    return took, cpu, stall


async def main(chars: int) -> None:
    regex = RegexEvaluator(timeout_s=60)  # measured, not limited
    regex.start_workers(1, languages=True)
    await check_answer(IN_WORKERS, "Warm-up: hello there, how are you today?", regex)
    print(f"{'shape':24} {'chars':>10} {'check_language':>14} {'check_answer':>12}", end="")
    print(f" {'CPU: workers':>12} {'CPU: text':>9} {'stall':>7} {'preview':>8}  verdict")
    try:
        for shape in SHAPES:
            text = answer(shape, chars)
            start = time.perf_counter()
            passed, message = check_language(text, "en", 0.5)
            pure = time.perf_counter() - start
            workers = [await probe_cost(regex, text, IN_WORKERS) for _ in range(3)]
            texts = [await probe_cost(regex, text, TEXT) for _ in range(3)]
            start = time.perf_counter()
            preview(text)
            shown = time.perf_counter() - start
            took = statistics.median(w[0] + t[0] for w, t in zip(workers, texts, strict=True))
            cpu = [statistics.median(c[1] for c in costs) * 1000 for costs in (workers, texts)]
            stall = max(c[2] for c in workers) * 1000
            verdict = ("pass: " if passed else "fail: ") + message.split(", ", 1)[-1][:40]
            print(
                f"{shape:24} {len(text):>10,} {pure:>12.3f} s {took:>10.3f} s"
                f" {cpu[0]:>9.0f} ms {cpu[1]:>6.0f} ms {stall:>4.0f} ms {shown * 1000:>5.2f} ms"
                f"  {verdict}",
                flush=True,
            )
    finally:
        await regex.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--chars", type=int, default=10_000_000)
    asyncio.run(main(parser.parse_args().chars))
