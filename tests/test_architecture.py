"""The layer rules of docs/architecture.md, checked over the real import graph of ruledrift/.

Each module belongs to a layer; a module may import modules of its own layer or of layers below
it, never above. Network connections (socket, ssl, aiohttp; HTTP is adapters/http_client.py) and
child processes (subprocess, asyncio.subprocess) stay at the target layer (adapters/ and ollama/),
and the module graph has no cycles."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ruledrift"

# Lowest first. A module is placed by the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("errors", "model", "text", "jsonpos", "__init__")),
    ("statistics", ("stats",)),
    ("suite", ("schema_messages", "jsregex", "system_message")),
    ("checks", ("assertions", "regex_workers", "language")),
    ("targets", ("adapters", "ollama")),
    ("suite file", ("config",)),
    ("runner", ("runner", "verdicts")),
    ("findings", ("findings", "comparison")),
    ("reports", ("reports",)),
    ("application", ("app", "shards", "merge", "saved")),
    ("console", ("console", "output")),
    ("front-ends", ("cli", "__main__", "action")),
)
# Libraries only the target layer may use: the seam keeps them out of everything above it.
TARGET_ONLY = {
    "aiohttp": "HTTP",
    "socket": "network connections",
    "ssl": "TLS",
    "subprocess": "child processes",
    "asyncio.subprocess": "processes",
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    best, found = -1, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    if found < 0:
        raise AssertionError(f"ruledrift.{module} has no layer: add it to LAYERS and the docs")
    return found


def imports(module: str) -> set[str]:
    """Every module `module` imports, lazily or not, as dotted names (ruledrift's own without
    the package prefix)."""
    tree = ast.parse(modules()[module].read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    own = {name.removeprefix("ruledrift.") for name in found if name.startswith("ruledrift.")}
    return {name for name in own if name in modules()} | {
        name for name in found if not name.startswith("ruledrift")
    }


def upward(module: str, imported: set[str]) -> list[str]:
    """The imports of `module` that reach a higher layer."""
    mine = layer_of(module)
    return [
        f"ruledrift.{name} ({LAYERS[layer_of(name)][0]})"
        for name in sorted(imported)
        if name in modules() and layer_of(name) > mine
    ]


@pytest.mark.parametrize("module", sorted(modules()))
def test_a_module_imports_only_its_own_layer_and_below(module: str) -> None:
    wrong = upward(module, imports(module))
    assert not wrong, f"ruledrift.{module} ({LAYERS[layer_of(module)][0]}) imports upward: {wrong}"


@pytest.mark.parametrize("module", sorted(modules()))
def test_http_and_processes_stay_behind_the_adapter_seam(module: str) -> None:
    if LAYERS[layer_of(module)][0] == "targets":
        return
    used = sorted(lib for lib in TARGET_ONLY if lib in imports(module))
    assert not used, f"ruledrift.{module} uses {used}: only adapters/ and ollama/ may"


def test_the_import_graph_has_no_cycles() -> None:
    graph = {m: {n for n in imports(m) if n in modules() and n != m} for m in modules()}
    state: dict[str, str] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = "open"
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                cycle = [*trail[trail.index(target) :], target]
                raise AssertionError("import cycle: " + " → ".join(cycle))
            if target not in state:
                visit(target, [*trail, target])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_the_checker_catches_an_upward_import() -> None:
    assert upward("runner", {"app", "model"}) == ["ruledrift.app (application)"]
    assert upward("adapters.base", {"reports.terminal"}) == ["ruledrift.reports.terminal (reports)"]
    assert upward("cli", {"app", "console", "reports.terminal"}) == []
    assert "jsonschema" in imports("config")  # the parser sees third-party imports
    assert {"socket", "ssl", "aiohttp"} <= imports("adapters.http_client")
