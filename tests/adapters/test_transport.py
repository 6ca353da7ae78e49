"""Helpers shared by the HTTP adapters and the sidecar."""

from __future__ import annotations

import pytest

from ruledrift.adapters.transport import is_loopback


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:11434", True),
        ("http://127.8.9.10", True),
        ("http://localhost:11434", True),
        ("http://[::1]:11434", True),
        ("http://ollama:11434", False),
        ("http://10.0.0.5:11434", False),
        ("https://example.org", False),
        ("not a url", False),
    ],
)
def test_loopback_urls(url: str, loopback: bool) -> None:
    assert is_loopback(url) is loopback
