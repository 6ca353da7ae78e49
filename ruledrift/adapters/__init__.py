"""Targets RuleDrift talks to. Nothing outside this package imports httpx or subprocess."""
