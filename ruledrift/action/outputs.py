"""What the action tells the workflow: step outputs (`$GITHUB_OUTPUT`, heredoc blocks with a
random delimiter, as actions/toolkit writes them), and wrong inputs as `::error::` annotations
and a job-summary note."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from ruledrift import __version__
from ruledrift.action.inputs import DOCS, Problem
from ruledrift.app import RunOutcome
from ruledrift.console import github
from ruledrift.data import Status
from ruledrift.text import markdown_inline, preview

# The outputs of action.yml, in its order (tests/action/test_action.py checks they agree).
OUTPUTS = (
    "exit-code",
    "status",
    "probes",
    "passed",
    "failed",
    "errors",
    "inconclusive",
    "vacuous",
    "json",
    "junit",
    "html",
    "regressions",
)
_COUNTS: dict[str, Status | None] = {
    "probes": None,
    "passed": "passed",
    "failed": "failed",
    "errors": "error",
    "inconclusive": "inconclusive",
    "vacuous": "vacuous",
}


def error_command(message: str, title: str) -> str:
    return github.error_annotation(message, title)


def report_problems(problems: Sequence[Problem], summary_file: str) -> None:
    """Each wrong input as an `::error::` annotation, and a short note in the job summary."""
    for problem in problems:
        title = f"RuleDrift: input {problem.input}"
        github.annotate("error", f"{problem.message} (see {DOCS}#inputs)", title)
    if summary_file:
        lines = ["### RuleDrift did not run: wrong action inputs", ""]
        lines += [f"- `{p.input}`: {markdown_inline(p.message, 2000)}" for p in problems]
        lines += [
            "",
            f"The inputs are described in [the action's documentation]({DOCS}#inputs).",
            "",
        ]
        github.add_to_summary(Path(summary_file), "\n".join(lines) + "\n")


def warn_unknown_inputs(variables: Sequence[str]) -> None:
    """One `::warning::` naming every `INPUT_*` variable this image does not know (one, not one
    each: GitHub shows 10 warnings a step, and the run's own warnings come later)."""
    names = ", ".join(
        f'"{preview(v.removeprefix("INPUT_").lower(), 80)}" ({preview(v, 80)})' for v in variables
    )
    message = (
        f"RuleDrift {__version__}, the image this step runs, does not know the input(s) {names} "
        "and ignores them. The action.yml that declares them is newer than the image it names, as "
        "on @main or a commit of main between releases: use a release (ruledrift/action@v1, or a "
        f"release's tag or commit), whose action.yml names its own image (see {DOCS}"
        "#which-ref-to-use). With uses: docker://…, check the spelling of the with: keys."
    )
    title = f"RuleDrift {__version__}: unknown input(s)"
    github.annotate("warning", message, title)


def outputs_for(
    code: int, outcome: RunOutcome | None, regressions: int | None = None
) -> dict[str, str]:
    """The step outputs, from the run's outcome (None: nothing ran); `regressions`: probes
    significantly worse than the `baseline` input's (None: no comparison)."""
    result = outcome.result if outcome else None
    written = outcome.reports_written if outcome else {}
    values = {"exit-code": str(code), "status": result.status if result else "error"}
    for name, status in _COUNTS.items():
        if result is None:
            values[name] = "0"
        else:
            values[name] = str(len(result.probes) if status is None else result.count(status))
    for name in ("json", "junit", "html"):
        values[name] = str(written[name]) if name in written else ""
    values["regressions"] = "" if regressions is None else str(regressions)
    return {name: values[name] for name in OUTPUTS}


def write_outputs(path: str, values: Mapping[str, str]) -> None:
    """Append `name<<DELIM` / value / `DELIM` blocks with a random delimiter, as actions/toolkit."""
    if not path:
        print(
            "ruledrift action: GITHUB_OUTPUT is not set: no step outputs written", file=sys.stderr
        )
        return
    with open(path, "a", encoding="utf-8") as outputs:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
            if delimiter in value:  # cannot happen with a random delimiter; never write it broken
                raise ValueError(f"output {name} contains its delimiter")
            outputs.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
