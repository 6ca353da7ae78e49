"""How a run turns repeated runs of a probe into its verdict: part of what a run is asked to do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class VerdictPolicy:
    """How repeated runs of a probe become its verdict (`--repeat`, `--min-pass-rate`, ...).

    - `repeat` N (default 1): N runs; a probe passes only if every run passed, or, with
      `min_pass_rate` R, if at least R of its runs passed. A run that could not be made makes
      the probe an error.
    - `repeat` "auto": runs until a sequential test decides between "holds" (pass rate at
      least `holds_at`) and "drifted" (at most `drifted_at`), with at most `alpha` chance of any
      false alarm in the suite and `beta` of missing a drifted probe. `max_repeat` None (the
      default) lets the test derive the cap that decides every probe from the number of probes;
      a given `max_repeat` is the most runs a probe takes, and a probe undecided at a cap below
      the derived one is `inconclusive`, which fails the run unless `inconclusive_passes`. A run
      that could not be made counts against the verdict it could change; the probe is an error
      only when such runs could change it.
    `holds_at` and `drifted_at` also state what fixed repeats promise. `probes` is the number of
    probes the suite-wide bounds are split over: the whole selection (also for one shard of
    it), set by the runner; None: the probes of the result.
    """

    repeat: int | Literal["auto"] = 1
    min_pass_rate: float | None = None
    holds_at: float = 0.95
    drifted_at: float = 0.80
    max_repeat: int | None = None
    alpha: float = 0.05
    beta: float = 0.20
    inconclusive_passes: bool = False
    probes: int | None = None

    @property
    def repeated(self) -> bool:
        return self.repeat != 1


def policy_argv(policy: VerdictPolicy) -> list[str]:
    """The policy as `ruledrift run` options (none for the default: one run): how a request says
    itself (`app.RunRequest.argv`) and how a job summary reproduces a run."""
    defaults = VerdictPolicy()
    argv = [] if policy.repeat == 1 else ["--repeat", str(policy.repeat)]
    if policy.min_pass_rate is not None:
        argv += ["--min-pass-rate", f"{policy.min_pass_rate:g}"]
    for option, value, default in (
        ("--holds-at", policy.holds_at, defaults.holds_at),
        ("--drifted-at", policy.drifted_at, defaults.drifted_at),
        ("--max-repeat", policy.max_repeat, defaults.max_repeat),
    ):
        if value != default:
            argv += [option, f"{value:g}"]
    if policy.inconclusive_passes:
        argv += ["--inconclusive", "pass"]
    return argv
