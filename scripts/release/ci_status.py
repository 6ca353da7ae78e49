"""Whether CI passed on the commit being released (main's, where the release workflow was
started), from GitHub's list of that commit's CI runs:

    gh api "repos/OWNER/REPO/actions/workflows/ci.yml/runs?head_sha=SHA&per_page=100" \\
      | python3 -m scripts.release.ci_status SHA

Only runs of that very commit count that ran the commit itself: `push` (to main) and
`workflow_dispatch` (run on it by hand). A `pull_request` run tested a merge with its base,
not this commit. One successful run is enough (a failed attempt that was re-run and passed is a
pass); a run still queued or in progress means "wait".

Exit code 0: passed; 1: failed or no run at all (says how to get one); 75: not finished yet, ask
again later; 2: the input is not the API's answer. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

PASSED, FAILED, PENDING, BAD_INPUT = 0, 1, 75, 2
COUNTED_EVENTS = ("push", "workflow_dispatch")


def verdict(answer: Any, sha: str) -> tuple[int, str]:
    """(exit code, explanation) for the API's answer about `sha`'s CI runs."""
    if not isinstance(answer, dict) or not isinstance(answer.get("workflow_runs"), list):
        return BAD_INPUT, "expected the JSON of GET …/actions/workflows/ci.yml/runs"
    runs = [
        run
        for run in answer["workflow_runs"]
        if isinstance(run, dict)
        and run.get("head_sha") == sha
        and run.get("event") in COUNTED_EVENTS
    ]
    links = ", ".join(str(run.get("html_url", run.get("id"))) for run in runs)
    if any(run.get("status") == "completed" and run.get("conclusion") == "success" for run in runs):
        return PASSED, f"CI passed on {sha}: {links}"
    if any(run.get("status") != "completed" for run in runs):
        return PENDING, f"CI has not finished on {sha} yet: {links}"
    if runs:
        conclusions = ", ".join(sorted({str(run.get("conclusion")) for run in runs}))
        return FAILED, f"CI did not pass on {sha} ({conclusions}): {links}"
    return FAILED, (
        f"CI never ran on {sha} (only pushes to main and manual runs count): release a commit "
        "of main, or run CI on the tag (Actions → CI → Run workflow) and then re-run this release"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ci_status", description="Did CI pass on a commit?")
    parser.add_argument("sha", help="the full commit SHA the tag points at")
    args = parser.parse_args(argv)
    try:
        answer = json.load(sys.stdin)
    except json.JSONDecodeError as error:
        print(f"ci_status: not JSON: {error}", file=sys.stderr)
        return BAD_INPUT
    code, explanation = verdict(answer, args.sha)
    print(f"ci_status: {explanation}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
