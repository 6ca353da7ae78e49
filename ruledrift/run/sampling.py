"""What a suite's adapter settings send about sampling: its temperature and seed, for the
reports (the target's and each judge's)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["configured_sampling", "configured_seed", "configured_temperature"]


def configured_sampling(config: object) -> dict[str, object]:
    """What a suite's adapter sends about sampling: its `options`, with an OpenAI-compatible
    `extraBody` over them (that is how they reach the server)."""
    merged: dict[str, object] = {}
    for name in ("options", "extra_body"):
        settings = getattr(config, name, None)
        if isinstance(settings, Mapping):
            merged.update(settings)
    return merged


def configured_seed(config: object) -> int | None:
    """The integer `seed` a suite's adapter sends, if any."""
    seed = configured_sampling(config).get("seed")
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else None


def configured_temperature(config: object) -> float | None:
    """The `temperature` a suite's adapter sends, if any."""
    temperature = configured_sampling(config).get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        return float(temperature)
    return None
