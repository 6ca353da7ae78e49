"""`ruledrift.data` re-exports every public name its modules define, so an importer never needs
to know which module holds a type."""

from __future__ import annotations

import ast
import importlib
import inspect

import pytest

import ruledrift.data

MODULES = ("suite", "conversation", "policy", "results", "tools", "location")


def defined(module_name: str) -> set[str]:
    """The public names a module defines at its top level: classes, functions, type aliases."""
    tree = ast.parse(inspect.getsource(importlib.import_module(module_name)))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("name", MODULES)
def test_every_public_name_of_a_data_module_is_reexported(name: str) -> None:
    module = importlib.import_module(f"ruledrift.data.{name}")
    names = defined(module.__name__)
    assert names, module.__name__
    missing = sorted(names - set(ruledrift.data.__all__))
    assert not missing, f"ruledrift.data does not re-export {missing} of {module.__name__}"
    for attr in names:
        assert getattr(ruledrift.data, attr) is getattr(module, attr), attr


def test_the_package_defines_nothing_of_its_own() -> None:
    """Every name lives in one module; the package only re-exports."""
    assert defined("ruledrift.data") == set()
    homes = set().union(*(defined(f"ruledrift.data.{name}") for name in MODULES))
    assert set(ruledrift.data.__all__) == homes
