"""The run options, one table for every front-end: each option's Python name, its `ruledrift
run` flag, its GitHub Action input (if it has one of its own), its default and its range. The
CLI builds its flags and checks its values from it, the action its inputs, the application its
requests; an error names an option by its key and each front-end words it its own way
(`OptionError.worded`), so a limit or a name is stated once.

Report formats are rows too (`REPORT_FORMATS`): a new format is one renderer, one entry in
`app.REPORTERS`, one row here and its docs.

This module imports nothing heavy: the CLI reads it to build `--help`. (The checks of paths,
URLs and shards live where the thing checked lives, the layers below; the front-ends reach
them through `app.value_checks`.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ruledrift.errors import UsageError

__all__ = [
    "COMPARISON_FORMATS",
    "CONCURRENCY",
    "MAX_REPEAT",
    "OPTIONS",
    "REPORT_FORMATS",
    "Option",
    "OptionError",
    "action_inputs",
    "as_flags",
    "whole_range",
]


@dataclass(frozen=True)
class Option:
    """One run option. `name` is its key here and its Python name (a field of `RunRequest`,
    `VerdictPolicy` or `TargetOverrides`, or a key of `RunRequest.reports`); `low` and `high`
    bound a number (inclusive; a rate is above `low`)."""

    name: str
    flag: str
    action_input: str | None = None  # an input of its own (None: only through `args`)
    default: object = None
    low: int | float | None = None
    high: int | float | None = None
    what: str = ""  # a report format: what it writes ("the JSON report")
    python: str = ""  # how the Python API names it, when not `name`

    @property
    def python_name(self) -> str:
        return self.python or self.name


def _report(name: str, what: str, action_input: str | None) -> Option:
    return Option(name, f"--{name}", action_input, what=what, python=f'reports["{name}"]')


# The report formats a run, `report` and `merge` can write, in the order they are listed.
REPORT_FORMATS: tuple[Option, ...] = (
    _report("json", "the JSON report", "json"),
    _report("junit", "the JUnit XML report", "junit"),
    _report("html", "one self-contained HTML page (verdict, drift curve, failed probes)", "html"),
    # GitHub does not read it, and the annotations show the same: not an action input
    _report(
        "codequality", "a GitLab Code Quality report (failed probes on the suite's lines)", None
    ),
)

# What `compare` can write (its JSON is the comparison's, not a run's report).
COMPARISON_FORMATS: tuple[Option, ...] = (
    _report("markdown", "the comparison as Markdown", None),
    _report("json", "the comparison as JSON", None),
)

MAX_REPEAT = 1000  # runs of one scenario, fixed or under "auto"

OPTIONS: dict[str, Option] = {
    option.name: option
    for option in (
        *REPORT_FORMATS,
        Option("include_responses", "--include-responses", "include-responses", False),
        # scenarios at once: more only queues requests at any real server
        Option("concurrency", "--concurrency", "concurrency", 1, 1, 256),
        Option("scenarios", "--scenario"),
        Option("variants", "--variants"),
        Option("repeat", "--repeat", "repeat", 1, 1, MAX_REPEAT),
        Option("min_pass_rate", "--min-pass-rate", "min-pass-rate", None, 0.0, 1.0),
        Option("holds_at", "--holds-at", None, 0.95, 0.0, 1.0),
        Option("drifted_at", "--drifted-at", None, 0.80, 0.0, 1.0),
        Option("max_repeat", "--max-repeat", None, None, 2, MAX_REPEAT),
        Option("inconclusive_passes", "--inconclusive", None, False),
        Option("shard", "--shard", "shard"),
        Option("shard_balance", "--shard-balance", "shard-balance"),
        Option("max_calls", "--max-calls", None, None, 0, 9999),
        Option("seed", "--seed", None, None, 0, 10**15 - 1),
        Option("model", "--model", "model"),
        Option("base_url", "--base-url", "base-url"),
        Option("start_ollama", "--start-ollama", "start-ollama", False),
        Option("models_dir", "--models-dir", "models-dir"),
    )
}


def whole_range(key: str) -> tuple[int, int]:
    """The bounds of a whole-number option."""
    low, high = OPTIONS[key].low, OPTIONS[key].high
    if not (isinstance(low, int) and isinstance(high, int)):
        raise TypeError(f"{key} is not a whole-number option")
    return low, high


CONCURRENCY = whole_range("concurrency")


def action_inputs() -> dict[str, str]:
    """`ruledrift run` flags that have an action input of their own, and that input."""
    return {o.flag: o.action_input for o in OPTIONS.values() if o.action_input is not None}


class OptionError(UsageError):
    """A request that cannot be carried out because of its options (exit 2). Its `template`
    names options as `{key}` fields (keys of OPTIONS) and holds other values as `{field}`s of
    `values`; `str()` words it for Python (`min_pass_rate`), `worded(by)` for a front-end
    (`--min-pass-rate`). A value is never parsed as a template: braces in a path stay."""

    def __init__(self, template: str, **values: str) -> None:
        self.template = template
        self.values = values
        super().__init__(self.worded(lambda option: option.python_name))

    def worded(self, by: Callable[[Option], str]) -> str:
        names = {key: by(option) for key, option in OPTIONS.items()}
        return self.template.format_map({**names, **self.values})


def as_flags(error: OptionError) -> str:
    """An OptionError as the command line says it (`--min-pass-rate goes with --repeat N`)."""
    return error.worded(lambda option: option.flag)
