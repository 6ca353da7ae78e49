"""Readings of a finished result: findings, comparison, shards, merge, and the JSON report in
both directions."""
