"""The layer rules of docs/architecture.md, checked over the real import graph of ruledrift/.

The folders are the layers. Each module belongs to a layer by its folder; a module may import
modules of its own layer or of layers below it, never above, and no two packages import each
other. The front-ends (cli.py, action/) import only the application and console layers, the data
types, the errors and the text-safety module. Network connections, HTTP and child processes stay
in the layers that talk to the outside (boundary/, ollama/, adapters/), and the module graph has
no cycles."""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "ruledrift"

# Lowest first: each layer is a folder of ruledrift/ (or, for the foundation and the front-ends,
# a few loose modules). A module is placed by the longest prefix that names it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation", ("__init__", "errors", "text")),
    ("data", ("data",)),
    ("statistics", ("stats",)),
    ("boundary", ("boundary",)),
    ("json documents", ("jsondoc",)),
    ("checks", ("checks",)),
    ("ollama", ("ollama",)),
    ("adapters", ("adapters",)),
    ("suite", ("suite",)),
    ("run", ("run",)),
    ("results", ("results",)),
    ("reports", ("reports",)),
    ("application", ("app",)),
    ("console", ("console",)),
    ("front-ends", ("cli", "action")),
    ("entry points", ("__main__", "container")),
)
# What the front-ends may import of RuleDrift: the application and console layers, the data
# types, the errors and the text-safety module (and each other's own modules).
FRONT_ENDS = ("cli", "action")
FRONT_END_MAY_IMPORT = ("app", "console", "data", "errors", "text", "__init__")
# The layers that talk to the outside: only they may use these libraries.
OUTSIDE_LAYERS = {"boundary", "ollama", "adapters"}
TARGET_ONLY = {
    "aiohttp": "HTTP",
    "socket": "network connections",
    "ssl": "TLS",
    "subprocess": "child processes",
    "asyncio.subprocess": "processes",
    "mcp": "MCP connections",
    "mcp_types": "MCP messages",
    "uvicorn": "an HTTP server",
    "starlette": "an HTTP server",
}
LOOSE_MODULES_MAX = 8


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


@cache
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


def uses(imported: set[str], library: str) -> bool:
    """Whether `imported` holds `library` or one of its modules (`mcp.client.stdio`)."""
    return any(name == library or name.startswith(library + ".") for name in imported)


@pytest.mark.parametrize("module", sorted(modules()))
def test_http_and_processes_stay_behind_the_adapter_seam(module: str) -> None:
    if LAYERS[layer_of(module)][0] in OUTSIDE_LAYERS:
        return
    used = sorted(lib for lib in TARGET_ONLY if uses(imports(module), lib))
    assert not used, f"ruledrift.{module} uses {used}: only boundary/, ollama/, adapters/ may"


def front_end_reach(module: str, imported: set[str]) -> list[str]:
    """The imports of a front-end module that reach past the application layer (or into the
    other front-end: the CLI and the action share only what the layers below them offer)."""
    allowed = (*FRONT_END_MAY_IMPORT, module.split(".")[0])
    return [
        f"ruledrift.{name}"
        for name in sorted(imported)
        if name in modules()
        and not any(name == prefix or name.startswith(prefix + ".") for prefix in allowed)
    ]


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.split(".")[0] in FRONT_ENDS))
def test_the_front_ends_reach_only_the_application_and_console(module: str) -> None:
    wrong = front_end_reach(module, imports(module))
    assert not wrong, f"ruledrift.{module} reaches past the application layer: {wrong}"


def test_the_folders_are_the_layers() -> None:
    """Each package is one layer, no two packages import each other, and only a few modules
    stand loose at the top of ruledrift/."""
    loose = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(loose) <= LOOSE_MODULES_MAX, loose
    packages = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
    for package in packages:
        homes = [name for name, prefixes in LAYERS if package in prefixes]
        assert homes, f"{package}/ is in no layer"
        # a package is a layer of its own, or a front-end
        assert homes == ["front-ends"] or LAYERS[layer_of(package)][1] == (package,), package
    edges = {
        (m.split(".")[0], n.split(".")[0])
        for m in modules()
        for n in imports(m)
        if n in modules() and m.split(".")[0] != n.split(".")[0]
    }
    both = sorted((a, b) for a, b in edges if (b, a) in edges and a < b)
    assert not both, f"packages that import each other: {both}"


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
    assert upward("run.runner", {"app", "data"}) == ["ruledrift.app (application)"]
    assert upward("adapters.base", {"reports.terminal"}) == ["ruledrift.reports.terminal (reports)"]
    assert upward("cli", {"app", "console", "reports.terminal"}) == []
    assert "jsonschema" in imports("suite.load")  # the parser sees third-party imports


def test_the_checker_catches_a_front_end_reaching_past_the_application() -> None:
    assert front_end_reach("cli", {"app", "console", "reports.terminal"}) == [
        "ruledrift.reports.terminal"
    ]
    assert front_end_reach("action.run", {"app", "data", "errors", "action.inputs"}) == []
    assert {"socket", "ssl", "aiohttp"} <= imports("boundary.http_client")
    assert uses({"mcp.client.stdio"}, "mcp")
    assert not uses({"mcpx", "asyncio"}, "mcp")
