"""The checks of the values the front-ends take before a request is made (a report path, a
URL, a shard), offered to them here: each lives where the thing checked lives, in the layers
below (a path's in boundary/files, a URL's in boundary/http, a shard's in results/shards), and
the front-ends reach past the application layer for none of them."""

from __future__ import annotations

from ruledrift.boundary.files import path_length_problem, report_path_problem
from ruledrift.boundary.http import url_problem
from ruledrift.results.shards import Shard, parse_shard

__all__ = ["Shard", "parse_shard", "path_length_problem", "report_path_problem", "url_problem"]
