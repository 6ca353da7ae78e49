"""Reporters: pure renderers of a finished `RunResult`, and the atomic file writer they share."""
