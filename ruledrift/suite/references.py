"""The references inside a tool's `parameters` (`$ref`, `$dynamicRef`, `$recursiveRef`): each
must point inside the schema at something that is there (RuleDrift never fetches a schema), and
no chain of them may come back to where it started without reading deeper into the arguments
(`{"$ref": "#"}` at the top): validating against such a schema never ends.

Problems are (pointer relative to the schema, message)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

from ruledrift.jsondoc.positions import pointer_of
from ruledrift.jsondoc.schema_messages import show

Problem = tuple[str, str]

_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose subschemas apply to the same value as their schema (no step into it)
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_SCHEMAS = ("not", "if", "then", "else")
_ANCHORS = ("$anchor", "$dynamicAnchor")


def reference_problems(schema: dict[str, Any]) -> Iterator[Problem]:
    """Every reference that cannot be followed, then (when all can) the first circular one."""
    nodes = dict(_nodes(schema, ""))
    anchors = _anchors(nodes)
    broken = False
    for at, node in nodes.items():
        for key, target in _references(node):
            problem = _unfollowable(target, schema, anchors)
            if problem:
                broken = True
                yield f"{at}{pointer_of(key)}", f"{show(target)} {problem}"
    if not broken:
        yield from _circular(nodes, schema, anchors)


def _nodes(node: object, at: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(pointer, object) of every object in the schema, itself first."""
    if isinstance(node, dict):
        yield at, node
        for key, value in node.items():
            yield from _nodes(value, at + pointer_of(key))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _nodes(item, f"{at}/{index}")


def _anchors(nodes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Anchor name -> pointer of the object it names (`$anchor`, `$dynamicAnchor`, and a
    `$id` or `id` of the form "#name", as older drafts write anchors)."""
    found: dict[str, str] = {}
    for at, node in nodes.items():
        for key in _ANCHORS:
            if isinstance(node.get(key), str):
                found.setdefault(node[key], at)
        for key in ("$id", "id"):
            value = node.get(key)
            if isinstance(value, str) and value.startswith("#") and len(value) > 1:
                found.setdefault(value[1:], at)
    return found


def _references(node: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for key in _REFERENCES:
        if isinstance(node.get(key), str):
            yield key, node[key]


def _unfollowable(target: str, schema: dict[str, Any], anchors: dict[str, str]) -> str | None:
    if not target.startswith("#"):
        return (
            "points outside the schema; RuleDrift fetches no schema: refer to a definition "
            'inside it ("#/$defs/…")'
        )
    if _resolve(target, schema, anchors) is None:
        return "points at nothing in the schema"
    return None


def _resolve(target: str, schema: dict[str, Any], anchors: dict[str, str]) -> str | None:
    """The pointer of the object `target` ("#", "#/a/b" or "#name") names (None: nothing)."""
    fragment = unquote(target[1:])
    if not fragment.startswith("/"):
        return anchors.get(fragment) if fragment else ""
    node: object = schema
    parts = []
    for token in fragment[1:].split("/"):
        part = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
        parts.append(part)
    return pointer_of(*parts) if isinstance(node, dict | bool) else None


def _in_place(
    at: str, node: dict[str, Any], schema: dict[str, Any], anchors: dict[str, str]
) -> Iterator[tuple[str, str]]:
    """(pointer of the reference, or "" for a subschema, pointer of the object) of each
    subschema that applies to the same value as `node`."""
    for key, target in _references(node):
        resolved = _resolve(target, schema, anchors)
        if resolved is not None:
            yield f"{at}{pointer_of(key)}", resolved
    for key in _IN_PLACE_LISTS:
        items = node.get(key)
        for index in range(len(items) if isinstance(items, list) else 0):
            yield "", f"{at}{pointer_of(key)}/{index}"
    for key in _IN_PLACE_SCHEMAS:
        if isinstance(node.get(key), dict):
            yield "", f"{at}{pointer_of(key)}"
    dependent = node.get("dependentSchemas")
    for name in dependent if isinstance(dependent, dict) else ():
        yield "", f"{at}{pointer_of('dependentSchemas', name)}"


def _circular(
    nodes: dict[str, dict[str, Any]], schema: dict[str, Any], anchors: dict[str, str]
) -> Iterator[Problem]:
    """The first reference found that closes a loop of subschemas applied to one value (depth
    first, without recursion: a schema may chain thousands of references)."""
    edges = {at: list(_in_place(at, node, schema, anchors)) for at, node in nodes.items()}
    state: dict[str, bool] = {}  # True: on the current path; False: explored
    for start in nodes:
        if start in state:
            continue
        state[start] = True
        stack = [(start, iter(edges[start]))]
        while stack:
            at, successors = stack[-1]
            step = next(successors, None)
            if step is None:
                state[at] = False
                stack.pop()
                continue
            reference, target = step
            if state.get(target) is True:
                yield (
                    reference or at,
                    (
                        "this reference leads back to where it started without reading "
                        "deeper into the arguments: validating against it would never end (a "
                        "schema may refer to itself only through properties or items)"
                    ),
                )
                return
            if target in edges and target not in state:
                state[target] = True
                stack.append((target, iter(edges[target])))
