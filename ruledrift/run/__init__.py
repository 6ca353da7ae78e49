"""Playing a suite: conversations, boundaries, isolated probes, repeats, verdicts."""
