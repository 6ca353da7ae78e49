"""Ollama's HTTP API, one client for everything RuleDrift asks of an Ollama server: the version,
the models present (with their digests), a model's capabilities, chat, and pulls with progress.
The adapter (adapters/ollama.py), the managed server (server.py) and `ruledrift pull` all use it,
on the adapters' transport, so every failure is an AdapterError in the same words.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ruledrift.adapters.transport import (
    DEFAULT_RETRY,
    Explain,
    JsonClient,
    Retry,
    Server,
    no_explanation,
)
from ruledrift.errors import AdapterError
from ruledrift.ollama.names import full_model_name

MANAGEMENT_TIMEOUT_MS = 30_000  # listing, showing and starting a pull
PULL_IDLE_TIMEOUT_S = 300.0  # silence allowed between two progress lines (a big digest check)
WRONG_URL = (
    "is baseUrl an Ollama server? It is the server's root, e.g. http://127.0.0.1:11434, without "
    "/api or /v1"
)
NOT_RUNNING = "is `ollama serve` running? (or use `ruledrift run --start-ollama`)"


@dataclass(frozen=True)
class PullProgress:
    """One progress line of `POST /api/pull`."""

    status: str  # "pulling manifest", "pulling 6e4c38e1172f", "verifying sha256 digest", "success"
    digest: str | None = None  # the layer being downloaded ("sha256:…")
    total: int | None = None  # its size in bytes
    completed: int | None = None  # bytes downloaded so far


OnProgress = Callable[[PullProgress], None]


class OllamaAPI:
    """`async with OllamaAPI(base_url) as api:` — every method returns data or raises
    AdapterError naming the server, the operation and the fix."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_ms: int = MANAGEMENT_TIMEOUT_MS,
        retry: Retry = DEFAULT_RETRY,
        explain: Explain = no_explanation,
    ) -> None:
        self.base_url = base_url
        server = Server("Ollama", base_url, timeout_ms, NOT_RUNNING, WRONG_URL)
        self.http = JsonClient(server, retry=retry, explain=explain)

    async def __aenter__(self) -> OllamaAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    def error(self, message: str) -> AdapterError:
        return self.http.error(message)

    async def answers(self, timeout_s: float) -> int | str:
        """One `GET /api/version` within `timeout_s`: its HTTP status, or what went wrong."""
        return await self.http.status("/api/version", timeout_s)

    async def version(self) -> str:
        answer = await self.http.get("/api/version")
        if not isinstance(answer, dict) or not isinstance(answer.get("version"), str):
            raise self.error(f"GET /api/version gave no version: {WRONG_URL}")
        return str(answer["version"])

    async def models(self) -> list[Mapping[str, Any]]:
        """The models present (`GET /api/tags`)."""
        answer = await self.http.get("/api/tags", doing="list its models")
        models = answer.get("models") if isinstance(answer, dict) else None
        if not isinstance(models, list):
            raise self.error(f"GET /api/tags gave no model list: {WRONG_URL}")
        return [model for model in models if isinstance(model, dict)]

    async def find_model(self, model: str) -> Mapping[str, Any] | None:
        """The entry of `model` in the model list, names compared as Ollama compares them."""
        return find_model(await self.models(), model)

    async def has_model(self, model: str) -> bool:
        return await self.find_model(model) is not None

    async def show(self, model: str) -> Any:
        return await self.http.post("/api/show", {"model": model})

    async def chat(self, body: Mapping[str, object]) -> Any:
        return await self.http.post("/api/chat", body)

    async def pull(self, model: str, on_progress: OnProgress) -> None:
        """Pull `model`, passing each progress line to `on_progress`. Succeeds only on a
        `{"status": "success"}` line; an `{"error"}` line, a non-200 answer, a broken connection
        or an end without success raise AdapterError."""
        failed = f"pulling {model} from Ollama at {self.base_url} failed"
        lines = self.http.stream_lines(
            "/api/pull",
            {"model": model, "stream": True},
            doing=f"pull {model}",
            failed=failed,
            idle_timeout_s=PULL_IDLE_TIMEOUT_S,
        )
        async for line in lines:
            if _progress(line, failed, on_progress).status == "success":
                return
        raise self.error(f"{failed}: the progress stream ended without a success line")

    async def ensure_model(self, model: str, on_progress: OnProgress) -> bool:
        """Pull `model` unless the server has it. True if it pulled."""
        if await self.has_model(model):
            return False
        await self.pull(model, on_progress)
        return True


def find_model(models: list[Mapping[str, Any]], model: str) -> Mapping[str, Any] | None:
    """`qwen3` is `qwen3:latest`, `qwen3:1.7b` is `registry.ollama.ai/library/qwen3:1.7b`."""
    wanted = full_model_name(model)
    for entry in models:
        names = (entry.get("name"), entry.get("model"))
        if any(isinstance(name, str) and full_model_name(name) == wanted for name in names):
            return entry
    return None


# --- one-call helpers (each opens and closes its own client) ------------------------------------


async def server_answers(base_url: str, timeout_s: float = 2.0) -> bool:
    """Whether any HTTP server answers `GET {base_url}/api/version` within `timeout_s`."""
    async with OllamaAPI(base_url.rstrip("/")) as api:
        return isinstance(await api.answers(timeout_s), int)


async def has_model(base_url: str, model: str) -> bool:
    async with OllamaAPI(base_url) as api:
        return await api.has_model(model)


async def pull_model(base_url: str, model: str, on_progress: OnProgress) -> None:
    async with OllamaAPI(base_url) as api:
        await api.pull(model, on_progress)


async def ensure_model(base_url: str, model: str, on_progress: OnProgress) -> bool:
    """Pull `model` into the server at `base_url` unless it has it. True if it pulled."""
    async with OllamaAPI(base_url) as api:
        return await api.ensure_model(model, on_progress)


def _progress(line: str, failed: str, on_progress: OnProgress) -> PullProgress:
    try:
        data = json.loads(line)
    except ValueError:
        raise AdapterError(f"{failed}: a progress line is not JSON: {line[:80]!r}") from None
    if not isinstance(data, dict):
        raise AdapterError(f"{failed}: a progress line is not a JSON object: {line[:80]!r}")
    if "error" in data:
        raise AdapterError(f"{failed}: {data['error']}")
    event = PullProgress(
        status=str(data.get("status", "")),
        digest=data["digest"] if isinstance(data.get("digest"), str) else None,
        total=_count(data.get("total")),
        completed=_count(data.get("completed")),
    )
    on_progress(event)
    return event


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
