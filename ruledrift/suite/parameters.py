"""A tool's `parameters`: a JSON Schema of its calls' arguments, checked against its metaschema
(draft 2020-12 unless its `$schema` names another draft), and the arguments of a scripted call
checked against it. Problems are (pointer relative to the schema or the arguments, message)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast
from urllib.parse import unquote

from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

from ruledrift.jsondoc.positions import pointer_of
from ruledrift.jsondoc.schema_messages import findings, show

Problem = tuple[str, str]

# The drafts a tool's parameters may be written in, by the name a message gives them
DRAFTS: dict[type[Validator], str] = {
    validators.Draft202012Validator: "draft 2020-12",
    validators.Draft201909Validator: "draft 2019-09",
    validators.Draft7Validator: "draft 7",
    validators.Draft6Validator: "draft 6",
    validators.Draft4Validator: "draft 4",
}
DEFAULT_DRAFT = validators.Draft202012Validator


def draft_of(schema: Mapping[str, Any]) -> type[Validator] | None:
    """The validator of the draft a schema is written in (None: a `$schema` of no draft
    RuleDrift checks)."""
    if "$schema" not in schema:
        return DEFAULT_DRAFT
    found = schema["$schema"]
    if not isinstance(found, str):
        return None
    draft = validators.validator_for({"$schema": found}, default=cast(Any, None))
    return draft if draft in DRAFTS else None


def parameters_problems(schema: object) -> Iterator[Problem]:
    """Why `schema` cannot describe a call's arguments: a `$schema` of an unknown draft, an
    invalid schema, a `$ref` RuleDrift would have to fetch, or a type other than "object"."""
    if not isinstance(schema, dict):
        return  # the suite's schema reports it
    draft = draft_of(schema)
    if draft is None:
        yield "/$schema", _unknown_draft(schema["$schema"])
        return
    invalid = list(_metaschema_problems(schema, draft))
    yield from invalid
    if invalid:
        return
    yield from _reference_problems(schema, "", schema)
    if schema.get("type") != "object":
        where = "/type" if "type" in schema else ""
        yield (
            where,
            (
                f'a call\'s arguments are a JSON object: write "type": "object" (got '
                f"{show(schema['type']) if 'type' in schema else 'no type'})"
            ),
        )


def _unknown_draft(found: object) -> str:
    drafts = ", ".join(DRAFTS.values())
    return (
        f"{show(found)} names no JSON Schema draft RuleDrift checks ({drafts}); leave "
        '"$schema" out for draft 2020-12'
    )


def _metaschema_problems(schema: dict[str, Any], draft: type[Validator]) -> Iterator[Problem]:
    checker = draft(draft.META_SCHEMA, format_checker=draft.FORMAT_CHECKER)
    name = DRAFTS[draft]
    for error in _in_order(checker.iter_errors(schema)):
        for finding in findings(_deepest(error)):
            yield finding.pointer, f"not a valid JSON Schema ({name}): {finding.message}"


def _in_order(errors: Iterable[ValidationError]) -> list[ValidationError]:
    return sorted(errors, key=lambda error: [str(part) for part in error.path])


def _deepest(error: ValidationError) -> ValidationError:
    """For an `anyOf`/`oneOf` error, the alternative that went furthest (jsonschema's
    `best_match`), so that `"type": "nmber"` reads as a misspelt type, not "not any of"."""
    if error.validator in ("anyOf", "oneOf") and error.context:
        found = best_match(error.context)
        return found if found is not None else error
    return error


def _reference_problems(node: object, at: str, root: dict[str, Any]) -> Iterator[Problem]:
    """`$ref`s that point outside the schema (RuleDrift never fetches a schema) or at nothing
    in it."""
    if isinstance(node, list):
        for index, item in enumerate(node):
            yield from _reference_problems(item, f"{at}/{index}", root)
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        pointer = at + pointer_of(key)
        if key not in ("$ref", "$dynamicRef") or not isinstance(value, str):
            yield from _reference_problems(value, pointer, root)
        elif not value.startswith("#"):
            yield (
                pointer,
                (
                    f"{show(value)} points outside the schema; RuleDrift fetches no schema: "
                    'refer to a definition inside it ("#/$defs/…")'
                ),
            )
        elif not _resolves(root, value[1:]):
            yield pointer, f"{show(value)} points at nothing in the schema"


def _resolves(root: object, fragment: str) -> bool:
    """Whether a `$ref`'s fragment names a part of the schema: "" (the whole), a JSON pointer
    that leads somewhere, or an anchor (`#name`, not followed here)."""
    if not fragment.startswith("/"):
        return True
    node = root
    for token in fragment[1:].split("/"):
        part = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return False
    return True


def arguments_problems(schema: Mapping[str, Any], arguments: object) -> Iterator[Problem]:
    """Where `arguments` break a valid parameters schema (pointers relative to the arguments)."""
    draft = draft_of(schema)
    if draft is None:
        return
    checker = draft(cast(Any, schema))
    for error in _in_order(checker.iter_errors(cast(Any, arguments))):
        for finding in findings(_deepest(error)):
            yield finding.pointer, finding.message
