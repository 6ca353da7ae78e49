"""A tool's `parameters`: a JSON Schema of its calls' arguments, checked against its metaschema
(draft 2020-12 unless its `$schema` names another draft), and the arguments of a scripted call
checked against it. Problems are (pointer relative to the schema or the arguments, message)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

from jsonschema import validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from ruledrift.jsondoc.schema_messages import findings, show
from ruledrift.suite.references import reference_problems

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
    yield from reference_problems(schema)
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


def arguments_problems(schema: Mapping[str, Any], arguments: object) -> Iterator[Problem]:
    """Where `arguments` break a valid parameters schema (pointers relative to the arguments)."""
    draft = draft_of(schema)
    if draft is None:
        return
    checker = draft(cast(Any, schema))
    try:
        errors = _in_order(checker.iter_errors(cast(Any, arguments)))
    except (Unresolvable, RecursionError):  # reference_problems should have said why
        yield "", "they could not be checked against the tool's parameters"
        return
    for error in errors:
        for finding in findings(_deepest(error)):
            yield finding.pointer, finding.message
