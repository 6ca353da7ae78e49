"""A loopback server that speaks Ollama's native API, backed by a REAL model (llama.cpp through
llama-cpp-python). No registry ships the Ollama server, so the e2e tests run RuleDrift's Ollama
adapter against this instead: the HTTP contract is Ollama's (tests/support/ollama_fake/CONTRACT.md,
read from its source), the answers come from a real model.

Implements what RuleDrift's Ollama adapter uses:
  GET  /api/version  -> {"version": ...}
  GET  /api/tags     -> the one model, with a digest (sha256 of the .gguf file)
  POST /api/show     -> parameters, template, capabilities (no digest, like Ollama)
  POST /api/chat     -> non-streaming only (`"stream": false` must be sent: an adapter that forgot
                        it would get NDJSON from a real Ollama); honours options temperature, seed,
                        num_predict, num_ctx (and top_k, top_p, min_p, repeat_penalty, stop),
                        refusing a wrongly typed one with 500 as Ollama does; `think` as Ollama
                        checks it; `truncate: false` turns an over-long prompt into 400, as Ollama
                        v0.12.6+ does; without it the oldest messages are dropped silently.
  GET|HEAD /         -> "Ollama is running"
With --ignore-truncate it behaves like an Ollama older than v0.12.6, which ignores `truncate` and
always drops the oldest messages silently: the trap RuleDrift's Ollama adapter must detect. It
reports that older version (--ignore-truncate reports 0.12.5), so the adapter knows it too.

Usage: python llama_ollama_server.py --model FILE.gguf [--name smollm2:135m] [--port 0]
It prints one line, `listening on http://127.0.0.1:PORT`, once it accepts connections.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

from llama_cpp import Llama
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

# The Ollama release this server speaks: the image's (see tests/support/ollama_fake/CONTRACT.md).
VERSION = "0.34.2"
IGNORING_TRUNCATE_VERSION = "0.12.5"  # the last release that ignored `truncate`
# Ollama's defaults for the options we honour (api.DefaultOptions); a request overrides them.
DEFAULT_OPTIONS: dict[str, Any] = {
    "temperature": 0.8,
    "seed": -1,
    "num_predict": -1,
    "top_k": 40,
    "top_p": 0.9,
    "min_p": 0.0,
    "repeat_penalty": 1.1,
    "stop": [],
    "num_ctx": 0,  # 0: the server's default (DEFAULT_NUM_CTX)
}
# Ollama's default context on a CPU-only machine.
DEFAULT_NUM_CTX = 4096
OVERFLOW = "the input length exceeds the context length"
CTX_PADDING = 256
ROLES = ("system", "user", "assistant")


class HttpError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Model:
    """One llama.cpp context behind a lock: a context is not thread-safe, and Ollama runs one
    request at a time per model by default (OLLAMA_NUM_PARALLEL=1), queueing the rest."""

    def __init__(
        self, path: Path, name: str, threads: int, *, ignore_truncate: bool = False
    ) -> None:
        self.path = path
        self.name = name
        self.threads = threads
        self.ignore_truncate = ignore_truncate
        self.lock = threading.Lock()
        self._llama: Llama | None = None
        self._num_ctx = 0
        self._digest: str | None = None
        self._formatter: Jinja2ChatFormatter | None = None

    @property
    def digest(self) -> str:
        if self._digest is None:
            sha = hashlib.sha256()
            with self.path.open("rb") as file:
                for block in iter(lambda: file.read(1 << 20), b""):
                    sha.update(block)
            self._digest = sha.hexdigest()
        return self._digest

    def matches(self, requested: object) -> bool:
        if not isinstance(requested, str):
            return False
        # Ollama reads a bare name as name:latest.
        full = requested if ":" in requested else f"{requested}:latest"
        return full == (self.name if ":" in self.name else f"{self.name}:latest")

    def tag(self) -> dict[str, Any]:
        stat = self.path.stat()
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": datetime.fromtimestamp(stat.st_mtime, UTC).isoformat(),
            "size": stat.st_size,
            "digest": self.digest,
            "details": {"format": "gguf", "family": "llama", "quantization_level": "Q4_1"},
        }

    def load(self, num_ctx: int = DEFAULT_NUM_CTX) -> None:
        with self.lock:
            self._context(num_ctx)

    def _context(self, num_ctx: int) -> tuple[Llama, float]:
        """The loaded model for `num_ctx`; like Ollama, a different num_ctx reloads it."""
        if self._llama is not None and num_ctx == self._num_ctx:
            return self._llama, 0.0
        started = time.perf_counter()
        if self._llama is not None:
            self._llama.close()
            self._llama = None
        # llama.cpp pads a context to a multiple of 256 while llama-cpp-python sizes its token
        # buffer from the requested value, so a smaller value breaks on long prompts. Load a
        # padded context; `chat` enforces `num_ctx` itself.
        padded = -(-num_ctx // CTX_PADDING) * CTX_PADDING
        llama = Llama(
            model_path=str(self.path),
            n_ctx=padded,
            n_threads=self.threads,
            n_threads_batch=self.threads,  # prompts too: every core otherwise, on a busy machine
            verbose=False,
        )
        eos, bos = llama.token_eos(), llama.token_bos()
        self._formatter = Jinja2ChatFormatter(
            template=str(llama.metadata["tokenizer.chat_template"]),
            eos_token=llama.detokenize([eos], special=True).decode() if eos != -1 else "",
            bos_token=llama.detokenize([bos], special=True).decode() if bos != -1 else "",
        )
        self._llama, self._num_ctx = llama, num_ctx
        return llama, time.perf_counter() - started

    def _prompt(self, llama: Llama, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
        """The prompt's tokens as the model's own chat template renders them, and its stop texts."""
        assert self._formatter is not None
        rendered = self._formatter(messages=cast(Any, messages))
        tokens = llama.tokenize(
            rendered.prompt.encode(), add_bos=not rendered.added_special, special=True
        )
        stop = rendered.stop or []
        return tokens, [stop] if isinstance(stop, str) else list(stop)

    def chat(self, request: dict[str, Any]) -> dict[str, Any]:
        messages = _messages(request.get("messages"))
        options = {**DEFAULT_OPTIONS, **_options(request.get("options"))}
        num_ctx = int(options["num_ctx"]) or DEFAULT_NUM_CTX
        if num_ctx < 1:
            raise HttpError(HTTPStatus.BAD_REQUEST, "num_ctx must be positive")
        truncate = self.ignore_truncate or request.get("truncate", True) is not False
        num_predict = int(options["num_predict"])
        seed = int(options["seed"])
        stop = options["stop"]
        started = time.perf_counter()
        with self.lock:
            llama, load_seconds = self._context(num_ctx)
            tokens, template_stop = self._prompt(llama, messages)
            while len(tokens) >= num_ctx:  # no room left for a single answer token
                # Ollama's silent truncation drops the oldest non-system messages; with
                # `truncate: false` (v0.12.6+) an over-long prompt is a 400 instead.
                oldest = next(
                    (i for i, m in enumerate(messages[:-1]) if m["role"] != "system"), None
                )
                if not truncate or oldest is None:
                    raise HttpError(HTTPStatus.BAD_REQUEST, OVERFLOW)
                del messages[oldest]
                tokens, template_stop = self._prompt(llama, messages)
            room = num_ctx - len(tokens)
            result = llama.create_completion(
                prompt=tokens,
                temperature=float(options["temperature"]),
                top_k=int(options["top_k"]),
                top_p=float(options["top_p"]),
                min_p=float(options["min_p"]),
                repeat_penalty=float(options["repeat_penalty"]),
                seed=None if seed < 0 else seed,
                max_tokens=room if num_predict < 0 else min(num_predict, room),
                stop=[*([stop] if isinstance(stop, str) else stop), *template_stop],
                stream=False,
            )
        total = time.perf_counter() - started
        response = cast(dict[str, Any], result)
        choice = response["choices"][0]
        usage = response["usage"]
        return {
            "model": request["model"],
            "created_at": datetime.now(UTC).isoformat(),
            "message": {"role": "assistant", "content": choice["text"]},
            "done": True,
            "done_reason": "length" if choice["finish_reason"] == "length" else "stop",
            "total_duration": int(total * 1e9),
            "load_duration": int(load_seconds * 1e9),
            "prompt_eval_count": usage["prompt_tokens"],
            "prompt_eval_duration": 0,
            "eval_count": usage["completion_tokens"],
            "eval_duration": int((total - load_seconds) * 1e9),
        }


def _messages(value: object) -> list[dict[str, str]]:
    if not isinstance(value, list) or not value:
        raise HttpError(HTTPStatus.BAD_REQUEST, "messages must be a non-empty list")
    messages = []
    for item in value:
        if not isinstance(item, dict):
            raise HttpError(HTTPStatus.BAD_REQUEST, "each message must be an object")
        role, content = item.get("role"), item.get("content", "")
        if role not in ROLES or not isinstance(content, str):
            raise HttpError(HTTPStatus.BAD_REQUEST, f"unsupported message role {role!r}")
        messages.append({"role": str(role), "content": content})
    return messages


def _options(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise HttpError(HTTPStatus.BAD_REQUEST, "options must be an object")
    for key, item in value.items():
        wrong = _option_type_error(key, item)
        if wrong is not None:
            raise HttpError(HTTPStatus.INTERNAL_SERVER_ERROR, wrong)
    # Unknown option keys are ignored, and null leaves an option unset, as Ollama does.
    return {k: v for k, v in value.items() if k in DEFAULT_OPTIONS and v is not None}


def _option_type_error(key: str, value: object) -> str | None:
    """Ollama's HTTP 500 for an option of the wrong type (api/types.go, Options.FromMap)."""
    if key not in DEFAULT_OPTIONS or value is None:
        return None
    if key == "stop":
        if not isinstance(value, list):
            return f'option "{key}" must be of type array'
        if not all(isinstance(item, str) for item in value):
            return f'option "{key}" must be of an array of strings'
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = "float32" if isinstance(DEFAULT_OPTIONS[key], float) else "integer"
        return f'option "{key}" must be of type {kind}'
    return None


def _check_think(model: Model, think: object) -> None:
    if think is None or think is False:
        return  # think:false is always safe
    if think is True or think in ("low", "medium", "high", "max"):  # "max": v0.22.0+
        raise HttpError(HTTPStatus.BAD_REQUEST, f'"{model.name}" does not support thinking')
    if isinstance(think, str):
        raise HttpError(
            HTTPStatus.BAD_REQUEST,
            f'invalid think value: "{think}" (must be "high", "medium", "low", "max", true, or '
            "false)",
        )
    raise HttpError(
        HTTPStatus.BAD_REQUEST,
        'think must be a boolean or string ("high", "medium", "low", "max", true, or false)',
    )


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: HTTPStatus, data: object) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=utf-8")

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            raise HttpError(HTTPStatus.BAD_REQUEST, "invalid JSON body") from None
        if not isinstance(data, dict):
            raise HttpError(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        return data

    def _model(self, body: dict[str, Any]) -> Model:
        requested = body.get("model")
        if not requested:
            raise HttpError(HTTPStatus.BAD_REQUEST, "model is required")
        if not self.server.model.matches(requested):
            raise HttpError(HTTPStatus.NOT_FOUND, f"model '{requested}' not found")
        return self.server.model

    def _dispatch(self) -> None:
        model = self.server.model
        route = (self.command, self.path.split("?", 1)[0])
        try:
            if route in (("GET", "/"), ("HEAD", "/")):
                self._send(HTTPStatus.OK, b"Ollama is running", "text/plain; charset=utf-8")
            elif route == ("GET", "/api/version"):
                old = model.ignore_truncate
                self._json(
                    HTTPStatus.OK, {"version": IGNORING_TRUNCATE_VERSION if old else VERSION}
                )
            elif route == ("GET", "/api/tags"):
                self._json(HTTPStatus.OK, {"models": [model.tag()]})
            elif route == ("POST", "/api/show"):
                self._model(self._body())
                self._json(
                    HTTPStatus.OK,
                    {
                        "parameters": "",
                        "template": "{{ .Messages }}",
                        "capabilities": ["completion"],
                        "details": model.tag()["details"],
                        "model_info": {"general.architecture": "llama"},
                    },
                )
            elif route == ("POST", "/api/chat"):
                body = self._body()
                self._model(body)
                _check_think(model, body.get("think"))
                if body.get("stream", True) is not False:
                    raise HttpError(
                        HTTPStatus.BAD_REQUEST,
                        'this test server answers only "stream": false (a real Ollama would '
                        "stream NDJSON)",
                    )
                self._json(HTTPStatus.OK, model.chat(body))
            else:
                raise HttpError(HTTPStatus.NOT_FOUND, "404 page not found")
        except HttpError as error:
            self._json(error.status, {"error": error.message})
        except Exception as error:
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"llama.cpp: {error}"})

    do_GET = do_HEAD = do_POST = _dispatch


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: Model, *, verbose: bool) -> None:
        super().__init__(address, Handler)
        self.model = model
        self.verbose = verbose


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", required=True, type=Path, help="the .gguf file")
    parser.add_argument("--name", default="smollm2:135m", help="the tag clients ask for")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--threads", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 2)))
    parser.add_argument(
        "--ignore-truncate",
        action="store_true",
        help='behave like Ollama before v0.12.6 (and say 0.12.5): ignore "truncate" and always '
        "drop the oldest messages of an over-long prompt silently",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request to stderr")
    args = parser.parse_args(argv)
    model = Model(args.model, args.name, args.threads, ignore_truncate=args.ignore_truncate)
    _ = model.digest  # hash before accepting connections: /api/tags must not stall a client
    model.load()  # fail fast on a bad file, and keep the first chat's timing honest
    with Server((args.host, args.port), model, verbose=args.verbose) as server:
        host, port = server.server_address[:2]
        print(f"listening on http://{host!s}:{port}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
