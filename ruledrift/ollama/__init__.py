"""Ollama in one place: its HTTP API (api.py), the managed `ollama serve` (server.py), and model
names (names.py)."""
