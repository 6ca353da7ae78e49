"""The container's entrypoint: the RuleDrift GitHub Action when the runner passes `INPUT_*`
variables, otherwise the `ruledrift` CLI (`docker run IMAGE run suite.json`). The logic lives in
ruledrift/container.py; this file only hands over argv and the environment and exits."""

from __future__ import annotations

import os
import sys

from ruledrift.container import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], os.environ))
