"""Ollama's HTTP API, one client for everything RuleDrift asks of an Ollama server: the version,
the models present (with their digests), a model's capabilities, chat, and pulls with progress.
The adapter (adapters/ollama.py), the managed server (server.py) and `ruledrift pull` all use it,
on the adapters' transport, so every failure is an AdapterError in the same words.

What a server sends is parsed defensively: a field of the wrong type is dropped (or the answer
is an AdapterError), never a crash, and every name, digest and version that can reach a report
is a short string with its lone surrogates repaired (`reported_text`). The version facts below
were read from Ollama's source (see tests/support/ollama_fake/CONTRACT.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ruledrift.boundary.http import (
    DEFAULT_RETRY,
    Explain,
    JsonClient,
    OnResend,
    Retry,
    Server,
    no_explanation,
    parse_json,
)
from ruledrift.errors import AdapterError
from ruledrift.ollama.names import full_model_name
from ruledrift.text import cut_text, json_kind, repair_surrogates, terminal_safe

MANAGEMENT_TIMEOUT_MS = 30_000  # listing, showing and starting a pull
PULL_IDLE_TIMEOUT_S = 300.0  # silence allowed between two progress lines (a big digest check)
WRONG_URL = (
    "is baseUrl an Ollama server? It is the server's root, e.g. http://127.0.0.1:11434, without "
    "/api or /v1"
)
NOT_RUNNING = "is `ollama serve` running? (or use `ruledrift run --start-ollama`)"
REPORTED_CHARS = 200  # a name, digest, version or status from the server, as reports show it
ERROR_CHARS = 500  # an error a server reported in a pull's progress stream

# What changed between Ollama releases, as read from its source.
TRUNCATE_SINCE = (0, 12, 6)  # `truncate`/`shift` honoured (6544e1473); older servers ignore them
THINK_MAX_SINCE = (0, 22, 0)  # `"think": "max"` accepted (c2ebb4d57); older: 400
NEW_TOKENS_ONLY = (0, 30, 0)  # prompt_eval_count = newly evaluated tokens; 0.30.1 counts them all
MLX_FORMATS = frozenset({"safetensors", "mlx"})  # details.format of a model run by MLX
_RELEASE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


@dataclass(frozen=True)
class PullProgress:
    """One progress line of `POST /api/pull`."""

    status: str  # "pulling manifest", "pulling 6e4c38e1172f", "verifying sha256 digest", "success"
    digest: str | None = None  # the layer being downloaded ("sha256:…")
    total: int | None = None  # its size in bytes
    completed: int | None = None  # bytes downloaded so far


OnProgress = Callable[[PullProgress], None]


@dataclass(frozen=True)
class ModelEntry:
    """One model of `GET /api/tags`, keeping only what has the right type."""

    names: tuple[str, ...]  # its `name` and `model`, as sent (matched as Ollama matches them)
    digest: str | None = None  # sha256 of the manifest: the model build's identity
    format: str | None = None  # details.format: "gguf", or "safetensors" for an MLX model

    @property
    def shown_name(self) -> str:
        return reported_text(self.names[0]) if self.names else "(a model without a name)"


@dataclass(frozen=True)
class ModelFacts:
    """What `POST /api/show` says about a model, keeping only what has the right type."""

    capabilities: frozenset[str] | None = None  # None: the server does not say (too old)
    format: str | None = None  # details.format, as in ModelEntry


def reported_text(value: str, limit: int = REPORTED_CHARS) -> str:
    """A string a server sent, fit for a report: lone surrogates repaired, at most `limit`
    characters."""
    return cut_text(repair_surrogates(value), limit)


def _text(value: object, limit: int = REPORTED_CHARS) -> str | None:
    return reported_text(value, limit) if isinstance(value, str) else None


def release(version: str | None) -> tuple[int, int, int] | None:
    """`0.12.6` → (0, 12, 6); a pre-release (`0.30.0-rc5`) is its release. None when unknown,
    as for a build from source, which says 0.0.0."""
    match = _RELEASE.match(version or "")
    found = (int(match[1]), int(match[2]), int(match[3])) if match else None
    return found if found != (0, 0, 0) else None


def honours_truncate(version: str | None) -> bool:
    """Whether `truncate: false` turns overflow into an error (False when unknown)."""
    found = release(version)
    return found is not None and found >= TRUNCATE_SINCE


def counts_whole_prompt(version: str | None) -> bool:
    """Whether `prompt_eval_count` counts the whole prompt, cached tokens included: on every
    release but 0.30.0 (and its release candidates), which counted only new tokens."""
    return release(version) != NEW_TOKENS_ONLY


def knows_think_max(version: str | None) -> bool:
    """Whether the server accepts `"think": "max"` (True when the version is unknown)."""
    found = release(version)
    return found is None or found >= THINK_MAX_SINCE


def is_mlx(model_format: str | None) -> bool:
    """Whether a model runs on MLX: a fixed context, never truncated, deaf to `num_ctx`."""
    return model_format in MLX_FORMATS


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
        """The server's version (`GET /api/version`), as a report may show it."""
        answer = await self.http.get("/api/version")
        version = _text(answer.get("version")) if isinstance(answer, dict) else None
        if version is None:
            raise self.error(f"GET /api/version gave no version: {WRONG_URL}")
        return version

    async def models(self) -> list[ModelEntry]:
        """The models present (`GET /api/tags`); entries that are not objects are dropped."""
        answer = await self.http.get("/api/tags", doing="list its models")
        models = answer.get("models") if isinstance(answer, dict) else None
        if not isinstance(models, list):
            raise self.error(f"GET /api/tags gave no model list: {WRONG_URL}")
        return [_model_entry(model) for model in models if isinstance(model, dict)]

    async def find_model(self, model: str) -> ModelEntry | None:
        """The entry of `model` in the model list, names compared as Ollama compares them."""
        return find_model(await self.models(), model)

    async def has_model(self, model: str) -> bool:
        return await self.find_model(model) is not None

    async def show(self, model: str) -> ModelFacts:
        """A model's capabilities and format (`POST /api/show`); fields of the wrong type are
        dropped."""
        answer = await self.http.post("/api/show", {"model": model})
        if not isinstance(answer, dict):
            return ModelFacts()
        capabilities = answer.get("capabilities")
        details = answer.get("details")
        return ModelFacts(
            capabilities=frozenset(c for c in capabilities if isinstance(c, str))
            if isinstance(capabilities, list)
            else None,
            format=_text(details.get("format")) if isinstance(details, dict) else None,
        )

    async def chat(self, body: Mapping[str, object], *, on_resend: OnResend | None = None) -> Any:
        """`POST /api/chat`; `on_resend` as for `JsonClient.post` (a model call counts sends)."""
        return await self.http.post("/api/chat", body, on_resend=on_resend)

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
        async with contextlib.aclosing(lines):  # closed also when the loop leaves early
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


def find_model(models: Sequence[ModelEntry], model: str) -> ModelEntry | None:
    """`qwen3` is `qwen3:latest`, `qwen3:1.7b` is `registry.ollama.ai/library/qwen3:1.7b`."""
    wanted = full_model_name(model)
    for entry in models:
        if any(full_model_name(name) == wanted for name in entry.names):
            return entry
    return None


def _model_entry(model: Mapping[str, Any]) -> ModelEntry:
    details = model.get("details")
    return ModelEntry(
        names=tuple(n for n in (model.get("name"), model.get("model")) if isinstance(n, str)),
        digest=_text(model.get("digest")),
        format=_text(details.get("format")) if isinstance(details, dict) else None,
    )


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
        data = parse_json(line)  # never RecursionError: a `[[[…` line is not JSON here
    except ValueError:
        shown = terminal_safe(cut_text(line, 80))
        raise AdapterError(f"{failed}: a progress line is not JSON: {shown}") from None
    if not isinstance(data, dict):
        shown = terminal_safe(cut_text(line, 80))
        raise AdapterError(f"{failed}: a progress line is not a JSON object: {shown}")
    if "error" in data:
        error = data["error"]
        said = _text(error, ERROR_CHARS) or f"an error that is not text ({json_kind(error)})"
        raise AdapterError(f"{failed}: {terminal_safe(said)}")
    event = PullProgress(
        status=_text(data.get("status")) or "",
        digest=_text(data.get("digest")),
        total=_count(data.get("total")),
        completed=_count(data.get("completed")),
    )
    on_progress(event)
    return event


def _count(value: object) -> int | None:
    """A byte count: an integer from 0 to Go's largest (an int64), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        return None
    return value
