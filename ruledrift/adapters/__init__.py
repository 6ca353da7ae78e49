"""Targets RuleDrift talks to. Nothing outside this package imports httpx or subprocess (the
regular-expression workers start their own processes through asyncio: regex_workers.py)."""
