"""Stage 2, validate: the spec against its JSON Schema, every problem at once, with positions and hints.

The schema in schemas/ is the single source of truth for fields, defaults, docs and editor completion; this
module only turns jsonschema's errors into messages a network engineer can act on, and fills defaults.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from fabricgen.core.document import Document, PathKey, format_path
from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.core.hints import did_you_mean
from fabricgen.core.resources import shipped_dir

ROOT_SCHEMA = "fabricgen.schema.json"
_BASE_URI = "https://fabricgen.dev/schemas/"


@cache
def _registry(for_extended: bool = False) -> Registry:
    """All schema files under schemas/, registered by their $id so relative $refs resolve offline.

    The registry of the extended validators drops ``$schema``: jsonschema picks the validator class of a
    referenced resource from its ``$schema``, which would silently swap an extended class for the stock one.
    """
    root = shipped_dir("schemas")
    resources = []
    for path in sorted(root.rglob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        if for_extended:
            contents.pop("$schema", None)
        resources.append((contents["$id"], DRAFT202012.create_resource(contents)))
    return Registry().with_resources(resources)


def schema_document(name: str = ROOT_SCHEMA) -> dict[str, Any]:
    """A schema file's JSON (the root spec schema by default)."""
    contents = _registry().contents(_BASE_URI + name)
    return dict(contents)


def bundled_schema() -> dict[str, Any]:
    """The root schema with every section inlined under $defs, for `fabricgen schema` and editors."""
    root = shipped_dir("schemas")
    bundle = schema_document()
    bundle["$defs"] = {
        path.stem.removesuffix(".schema"): json.loads(path.read_text(encoding="utf-8"))
        for path in sorted((root / "sections").glob("*.schema.json"))
    }
    return bundle


def _pattern(validator: Validator, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``pattern`` as JSON Schema means it (ECMA-262): a final ``$`` matches only at the end of the string.

    Python's ``$`` also matches before a final newline, so the stock keyword lets ``"eth0\n"`` through a name
    pattern, on into file names and shell lines.
    """
    if not isinstance(instance, str):
        return
    strict = pattern[:-1] + r"\Z" if pattern.endswith("$") and not pattern.endswith(r"\$") else pattern
    if not re.search(strict, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


_StrictValidator = extend(Draft202012Validator, {"pattern": _pattern})  # type: ignore[no-untyped-call]


@cache
def _validator(ref: str) -> Validator:
    return _StrictValidator({"$ref": _BASE_URI + ref}, registry=_registry(for_extended=True))  # type: ignore[no-any-return]


def _set_defaults(
    validator: Validator, properties: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    """jsonschema's recipe: fill `default` of absent properties while validating (only on valid data)."""
    if isinstance(instance, dict):
        for prop, sub in properties.items():
            if isinstance(sub, dict) and "default" in sub:
                instance.setdefault(prop, copy.deepcopy(sub["default"]))
    yield from Draft202012Validator.VALIDATORS["properties"](validator, properties, instance, schema)


_DefaultFiller = extend(Draft202012Validator, {"properties": _set_defaults})  # type: ignore[no-untyped-call]


def _describe(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _shown(value: Any) -> str:
    """The value after its type name, except for null and whole sections whose dump would not help."""
    return "" if value is None or isinstance(value, dict | list) else f" {_describe(value)}"


_JSON_TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    if value is None:
        return "null"
    return {int: "integer", float: "number", str: "string"}.get(type(value), type(value).__name__)


def _issues_for(error: ValidationError, doc: Document, prefix: PathKey) -> list[SpecIssue]:
    """One jsonschema error -> one or more issues (an unknown-keys error names each key)."""
    path: PathKey = (*prefix, *error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("x-hint", "")
    kind = str(error.validator)
    value: Any = error.validator_value
    if kind in {"oneOf", "anyOf"}:
        return _alternatives_issues(error, doc, prefix, path, hint or str(schema.get("description", "")))
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in schema.get("properties", {}))
        return [
            doc.issue(
                (*path, key),
                f"unknown key {key!r}",
                did_you_mean(key, allowed) or f"allowed keys: {', '.join(allowed)}",
            )
            for key in extra
        ]
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else str(error.validator_value)
        return [doc.issue(path, f"missing required key {missing!r}", hint)]
    if kind == "enum":
        choices = [str(c) for c in value]
        guess = did_you_mean(str(error.instance), choices)
        if str(error.instance) in choices:
            guess = f"write {error.instance} without quotes;"
        allowed_values = f"allowed: {', '.join(choices)}"
        return [
            doc.issue(
                path,
                f"{_describe(error.instance)} is not an allowed value",
                f"{guess} {allowed_values}" if guess else allowed_values,
            )
        ]
    if kind == "const":
        return [doc.issue(path, f"{_describe(error.instance)} must be {error.validator_value!r}", hint)]
    if kind == "type":
        expected = [str(t) for t in value] if isinstance(value, list) else [str(value)]
        want = " or ".join(_JSON_TYPES.get(t, t) for t in expected)
        shown = "" if schema.get("x-secret") else _shown(error.instance)
        return [doc.issue(path, f"expected {want}, got {_type_name(error.instance)}{shown}", hint)]
    if kind == "pattern":
        return [
            doc.issue(
                path,
                f"{_describe(error.instance)} is not a valid name here",
                hint or f"must match {error.validator_value}",
            )
        ]
    if kind == "propertyNames":
        return [
            doc.issue(
                (*path, str(error.instance)),
                f"{_describe(error.instance)} is not a valid name here",
                hint or _context_hint(error),
            )
        ]
    return [doc.issue(path, str(error.message), hint)]


def _alternatives_issues(error: ValidationError, doc: Document, prefix: PathKey, path: PathKey,
                         hint: str) -> list[SpecIssue]:
    """oneOf/anyOf: report the branch that fits the value's type (a mapping vs a model name...)."""
    if not error.context:  # valid under several branches of a oneOf
        return [doc.issue(path, "matches more than one allowed form", hint)]
    relevant = [e for e in error.context if e.validator != "type"] or list(error.context)
    deepest = best_match(relevant)
    if deepest is not None and deepest.validator not in {"oneOf", "anyOf"}:
        return _issues_for(deepest, doc, prefix)
    return [doc.issue(path, "does not match any allowed form", hint)]


def _context_hint(error: ValidationError) -> str:
    """The x-hint of the sub-schema that rejected a property name, if it has one."""
    sub = error.context[0].schema if error.context else None
    return str(sub.get("x-hint", "")) if isinstance(sub, dict) else ""


def schema_issues(doc: Document, data: Any, ref: str = ROOT_SCHEMA, prefix: PathKey = ()) -> list[SpecIssue]:
    """Every schema violation of ``data`` (found at ``prefix`` inside ``doc``) against schema file ``ref``."""
    issues: list[SpecIssue] = []
    for error in _validator(ref).iter_errors(data):
        issues.extend(_issues_for(error, doc, prefix))
    return sorted(set(issues), key=SpecIssue.sort_key)


def with_defaults(data: Any, ref: str = ROOT_SCHEMA) -> Any:
    """A copy of schema-valid ``data`` with every schema default filled in."""
    filled = copy.deepcopy(data)
    _DefaultFiller({"$ref": _BASE_URI + ref}, registry=_registry(for_extended=True)).validate(filled)
    return filled


def validate_document(doc: Document) -> Any:
    """Validate a loaded spec; return its data with defaults, or raise :class:`SpecError` with all issues."""
    issues = schema_issues(doc, doc.data)
    if issues:
        raise SpecError(issues)
    return with_defaults(doc.data)


def describe_path(path: PathKey) -> str:
    """Public alias so later stages print paths the same way."""
    return format_path(path)


def schema_path() -> Path:
    return shipped_dir("schemas") / ROOT_SCHEMA
