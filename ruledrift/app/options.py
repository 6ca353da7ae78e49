"""The run options' limits and checks, one home for every front-end: the CLI's flags, the
action's inputs and the Python API all check a value here, so a limit is stated once.

(The checks themselves live where the thing checked lives, the layers below: a report path's in
boundary/files, a URL's in boundary/http, a shard's in results/shards. The front-ends reach
them only through this module.)"""

from __future__ import annotations

from ruledrift.boundary.files import path_length_problem, report_path_problem
from ruledrift.boundary.http import url_problem
from ruledrift.results.shards import Shard, parse_shard

__all__ = [
    "CONCURRENCY",
    "Shard",
    "parse_shard",
    "path_length_problem",
    "report_path_problem",
    "url_problem",
]

CONCURRENCY = (1, 256)  # scenarios at once: more only queues requests at any real server
