"""The application layer: typed requests in, typed outcomes out. The CLI (cli.py) and the GitHub
Action (action/) are two front-ends of these functions; so is any Python program (see
docs/python-api.md).

    outcome = run(RunRequest(config=Path("suite.json"), reports={"json": Path("report.json")}))
    outcome.result.status, outcome.exit_code, outcome.reports_written

Nothing here prints: what a front-end shows while a run goes on reaches it through a
`RunObserver` (progress, pull progress, warnings). Errors rise as RuleDriftError subclasses, each
carrying its exit code; `exit_code` maps a finished run to one. An error about an option names
it as Python does (`min_pass_rate`); the front-ends word it as their flags and inputs.

The modules: `options` (the table of run options and report formats), `requests` (requests,
outcomes, the observer), `policy` (the verdict policy and exit codes), `reports` (the report
registry, checked and written), `running` (run, run_against, pull), `targets` (where a target
lives), `saved` (report, merge and compare of saved reports).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruledrift.app.options import OptionError
    from ruledrift.app.policy import (
        check_design,
        check_policy,
        exit_code,
        most_runs,
    )
    from ruledrift.app.reports import REPORTERS, check_reports, write_reports
    from ruledrift.app.requests import (
        PullOutcome,
        PullRequest,
        RunObserver,
        RunOutcome,
        RunPlan,
        RunRequest,
        SilentObserver,
        TargetOverrides,
        path_argument,
    )
    from ruledrift.app.running import (
        pull,
        run,
        run_against,
        select_scenarios,
        target_config,
        validate,
        with_drawn_seed,
    )
    from ruledrift.data import policy_argv
    from ruledrift.suite.load import schema_text

_HOMES = {
    "OptionError": "ruledrift.app.options",
    "check_design": "ruledrift.app.policy",
    "check_policy": "ruledrift.app.policy",
    "exit_code": "ruledrift.app.policy",
    "most_runs": "ruledrift.app.policy",
    "policy_argv": "ruledrift.data",
    "REPORTERS": "ruledrift.app.reports",
    "check_reports": "ruledrift.app.reports",
    "write_reports": "ruledrift.app.reports",
    "PullOutcome": "ruledrift.app.requests",
    "PullRequest": "ruledrift.app.requests",
    "RunObserver": "ruledrift.app.requests",
    "RunOutcome": "ruledrift.app.requests",
    "RunPlan": "ruledrift.app.requests",
    "RunRequest": "ruledrift.app.requests",
    "SilentObserver": "ruledrift.app.requests",
    "TargetOverrides": "ruledrift.app.requests",
    "path_argument": "ruledrift.app.requests",
    "pull": "ruledrift.app.running",
    "run": "ruledrift.app.running",
    "run_against": "ruledrift.app.running",
    "select_scenarios": "ruledrift.app.running",
    "target_config": "ruledrift.app.running",
    "validate": "ruledrift.app.running",
    "with_drawn_seed": "ruledrift.app.running",
    "schema_text": "ruledrift.suite.load",
}

__all__ = [
    "REPORTERS",
    "OptionError",
    "PullOutcome",
    "PullRequest",
    "RunObserver",
    "RunOutcome",
    "RunPlan",
    "RunRequest",
    "SilentObserver",
    "TargetOverrides",
    "check_design",
    "check_policy",
    "check_reports",
    "exit_code",
    "most_runs",
    "path_argument",
    "policy_argv",
    "pull",
    "run",
    "run_against",
    "schema_text",
    "select_scenarios",
    "target_config",
    "validate",
    "with_drawn_seed",
    "write_reports",
]


def __getattr__(name: str) -> Any:
    """The names above, imported on first use: `ruledrift.app.options` (the CLI's grammar needs
    it for `--help`) loads without the whole application."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
