"""The target of a run: the suite's adapter settings with command-line overrides applied, and
the managed Ollama server (`--start-ollama`) when asked for."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from collections.abc import AsyncIterator
from pathlib import Path

from ruledrift.adapters.sidecar import (
    OllamaSidecar,
    SidecarSettings,
    default_models_dir,
    ensure_model,
)
from ruledrift.config import url_problem
from ruledrift.errors import UsageError
from ruledrift.model import AdapterConfig, OllamaAdapterConfig
from ruledrift.reports.pull_progress import PullProgressPrinter


def target_config(config: AdapterConfig, args: argparse.Namespace) -> AdapterConfig:
    """`--model` and `--base-url` applied to the suite's adapter (for CI matrices and services)."""
    if config.type == "command":
        for option in ("model", "base_url"):
            if getattr(args, option):
                flag = "--" + option.replace("_", "-")
                raise UsageError(f"{flag} does not apply to the command adapter")
    if args.start_ollama and config.type != "ollama":
        raise UsageError(f"--start-ollama needs the ollama adapter (this suite uses {config.type})")
    if args.models_dir and not args.start_ollama:
        raise UsageError("--models-dir goes with --start-ollama")
    if args.base_url and args.start_ollama:
        raise UsageError("--base-url and --start-ollama exclude each other")
    if args.base_url:
        problem = url_problem(args.base_url)
        if problem:
            raise UsageError(f"--base-url: {problem}")
        config = dataclasses.replace(config, base_url=args.base_url.rstrip("/"))
    if args.model:
        config = dataclasses.replace(config, model=args.model)
    return config


def sidecar_settings(args: argparse.Namespace, concurrency: int) -> SidecarSettings:
    models_dir = Path(args.models_dir) if args.models_dir else default_models_dir()
    return SidecarSettings(models_dir=models_dir, num_parallel=concurrency)


@contextlib.asynccontextmanager
async def managed_target(
    config: AdapterConfig, args: argparse.Namespace, concurrency: int
) -> AsyncIterator[AdapterConfig]:
    """Yields the config to run against: as it is, or pointed at a sidecar whose model is
    present (pulled if missing, with progress on stderr). The sidecar stops on exit."""
    if not args.start_ollama or not isinstance(config, OllamaAdapterConfig):
        yield config
        return
    async with OllamaSidecar(sidecar_settings(args, concurrency)) as server:
        printer = PullProgressPrinter(sys.stderr, sys.stderr.isatty())
        try:
            await server.ensure_model(config.model, printer)
        finally:
            printer.close()
        yield dataclasses.replace(config, base_url=server.base_url)
        if server.returncode is not None:
            sys.stderr.write(f"ruledrift: {server.error_with_log('ollama serve stopped')}\n")


async def pull(config: AdapterConfig, args: argparse.Namespace) -> bool:
    """Pull the model into the server at the config's URL or a sidecar; True if it pulled."""
    if not isinstance(config, OllamaAdapterConfig):
        raise UsageError(f"ruledrift pull needs the ollama adapter (this suite uses {config.type})")
    printer = PullProgressPrinter(sys.stderr, sys.stderr.isatty())
    try:
        if args.start_ollama:
            async with OllamaSidecar(sidecar_settings(args, 1)) as server:
                return await server.ensure_model(config.model, printer)
        return await ensure_model(config.base_url, config.model, printer)
    finally:
        printer.close()
