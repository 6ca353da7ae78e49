"""Targets RuleDrift talks to. Nothing outside this package opens a socket or imports subprocess
(the regular-expression workers start their own processes through asyncio: regex_workers.py)."""
