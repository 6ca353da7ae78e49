"""Runs the real CLI (`python -m ruledrift`) in a subprocess with a clean CI environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# set by CI runners; a test that needs one sets it explicitly
CI_VARIABLES = (
    "CI",
    "GITHUB_ACTIONS",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "NO_COLOR",
    # the shard of `--shard auto` (docs/scaling.md): a test suite run in a sharded job
    "RULEDRIFT_SHARD_INDEX",
    "RULEDRIFT_SHARD_TOTAL",
    "JOB_COMPLETION_INDEX",
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_STEP",
    "BUILDKITE_PARALLEL_JOB",
    "BUILDKITE_PARALLEL_JOB_COUNT",
    "CI_NODE_INDEX",
    "CI_NODE_TOTAL",
)


def ruledrift(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k not in CI_VARIABLES}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "ruledrift", *map(str, args)],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
        check=False,
    )
