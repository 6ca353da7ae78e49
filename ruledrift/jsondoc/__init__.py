"""JSON documents read with their positions, and schema errors in plain words."""
