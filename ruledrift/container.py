"""The container's entry point (entrypoint.py calls `main`): RuleDrift as a GitHub Docker action,
or the `ruledrift` CLI. It stands above both front-ends and only chooses between them.

Action mode (the runner sets one `INPUT_<NAME>` variable per input of action.yml, hyphens kept:
`INPUT_BASE-URL`): the action/ package checks the inputs, runs the suite through the application
layer and writes the step outputs.

Anything else is the CLI: `docker run IMAGE run suite.json` passes its arguments to
`ruledrift.cli.main`, and a shell command (`sh -c …`, as GitLab's runner sends one) runs in
that shell. See docs/github-action.md and docs/gitlab-ci.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NoReturn

from ruledrift import cli
from ruledrift.action.inputs import is_action
from ruledrift.console import output
from ruledrift.console.exits import interruptible

__all__ = ["main"]

SHELLS = frozenset({"sh", "bash", "dash", "ash", "busybox"})


def run_shell(argv: Sequence[str]) -> NoReturn:
    """Hand a shell command through (GitLab's runner starts the job's shell this way)."""
    os.execvp(argv[0], list(argv))  # noqa: S606 - the shell the caller asked for, with its argv


def run_cli(argv: Sequence[str]) -> int:
    if argv and os.path.basename(argv[0]) in SHELLS:
        run_shell(argv)
    return cli.main(list(argv))


def main(argv: Sequence[str], environ: Mapping[str, str]) -> int:
    if is_action(argv, environ):
        from ruledrift.action.run import run_action

        with output.protected_streams(environ), interruptible():
            return run_action(environ, Path.cwd())
    return run_cli(argv)
