"""RuleDrift as a GitHub Docker action (ruledrift/container.py chooses it when the runner sets
`INPUT_*` variables): inputs.py checks the inputs, run.py runs the suite through the application
layer, outputs.py writes the step outputs, files.py gives written files back to the owner of the
workspace. See docs/github-action.md."""

from __future__ import annotations

from ruledrift.action.outputs import OUTPUTS

__all__ = ["OUTPUTS"]
