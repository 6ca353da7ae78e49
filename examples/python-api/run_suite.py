"""RuleDrift from Python: load a suite, run it, read the result (docs/python-api.md).

    python examples/python-api/run_suite.py

Part 1 runs the demo suite against its own target (the simulated agent the suite names) and
writes a JSON report. Part 2 runs the same suite against an agent of your own, called in-process
through the Adapter protocol. Both print one line per probe and exit with RuleDrift's code.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from ruledrift.adapters.base import CallContext, Completion
from ruledrift.app import RunRequest, exit_code, run, run_against, validate
from ruledrift.data import Message, RunResult, TargetInfo
from ruledrift.errors import RuleDriftError

SUITE = Path(__file__).resolve().parent.parent / "demo" / "suite.json"


class PoliteAgent:
    """An agent of your own: four async methods. This one keeps every rule of the demo."""

    async def open(self, *, tools: bool = False) -> None:
        pass  # connect, warm up, check credentials: raise AdapterError when it cannot

    async def complete(self, messages: Sequence[Message], context: CallContext) -> Completion:
        if context.kind == "probe":
            return Completion("Sorry, I can't share that. I answer in English only.")
        return Completion(f"Happy to help ({len(messages)} messages so far).")

    def target_info(self) -> TargetInfo:
        return TargetInfo(adapter="python", model="polite-agent")

    async def aclose(self) -> None:
        pass


def show(title: str, result: RunResult) -> None:
    print(f"{title}: {result.status} ({result.count('passed')}/{len(result.probes)} passed)")
    for scenario in result.scenarios:
        for probe in scenario.probes:
            print(f"  {probe.status:<6} {scenario.scenario.id}/{probe.probe.id}")


def main() -> int:
    try:
        outcome = run(RunRequest(config=SUITE, reports={"json": Path("python-api-report.json")}))
        show("the suite's own target", outcome.result)
        print(f"  reports: {', '.join(map(str, outcome.reports_written.values()))}")

        mine = run_against(validate(SUITE), PoliteAgent())
        show("an agent of your own", mine)
    except RuleDriftError as error:  # a config error, an unusable path, a target that won't start
        print(f"ruledrift: {error}", file=sys.stderr)
        return int(error.exit_code)
    return int(max(outcome.exit_code, exit_code(mine)))


if __name__ == "__main__":
    sys.exit(main())
