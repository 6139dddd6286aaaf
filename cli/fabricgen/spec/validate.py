"""Stage 2, validate: the spec against its JSON Schema, every problem at once, with positions and hints.

The schema in schemas/ is the single source of truth for fields, defaults, docs and editor completion; this
module only turns jsonschema's errors into messages a network engineer can act on, and fills defaults.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator
from jsonschema.validators import extend
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from fabricgen.core.document import REDACTED, Document, PathKey, format_path
from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.core.hints import did_you_mean
from fabricgen.core.resources import shipped_dir

ROOT_SCHEMA = "fabricgen.schema.json"
_BASE_URI = "https://fabricgen.dev/schemas/"

# Bounds every value of a spec (and of the catalog files) gets where its schema sets none, so no field is
# unbounded, today's or one added later: the work a spec can ask for stays proportional to what it describes.
# Fields set tighter bounds of their own (a node group's count, a catalog vendor's 64 characters).
DEFAULT_LIMITS: dict[str, dict[str, Any]] = {
    "string": {"maxLength": 1024, "x-plain-text": True},
    "array": {"maxItems": 65_536},
    "object": {"maxProperties": 65_536},
    "integer": {"minimum": -(2**63), "maximum": 2**63 - 1},
    "number": {"minimum": -1e12, "maximum": 1e12},
}
# Keywords that already set a default's bound: every pattern of the schemas is a strict character class, stricter
# than plain text.
_SET_BY = {"minimum": ("minimum", "exclusiveMinimum"), "maximum": ("maximum", "exclusiveMaximum"),
           "x-plain-text": ("x-plain-text", "pattern")}
_SUBSCHEMA = ("items", "additionalProperties", "propertyNames", "not", "if", "then", "else", "contains")
_SUBSCHEMAS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "dependentSchemas")


def _with_limits(schema: Any) -> Any:
    """``schema`` with :data:`DEFAULT_LIMITS` filled into every typed subschema that lacks them."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    types = out.get("type", [])
    for kind in types if isinstance(types, list) else [types]:
        if "enum" in out or "const" in out:
            break
        for key, bound in DEFAULT_LIMITS.get(kind, {}).items():
            if not any(k in out for k in _SET_BY.get(key, (key,))):
                out[key] = bound
    for key in _SUBSCHEMA:
        if key in out:
            out[key] = _with_limits(out[key])
    for key in _SUBSCHEMAS:
        if isinstance(out.get(key), list):
            out[key] = [_with_limits(s) for s in out[key]]
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: _with_limits(s) for name, s in out[key].items()}
    return out


def schema_files() -> list[tuple[Path, dict[str, Any]]]:
    """The spec's schema files with :data:`DEFAULT_LIMITS` applied (the NVUE schema, for fabricgen's own output in
    tests, as it is)."""
    root = shipped_dir("schemas")
    files = []
    for path in sorted(root.rglob("*.schema.json")):
        contents = json.loads(path.read_text(encoding="utf-8"))
        files.append((path, contents if path.parent.name == "nvue" else _with_limits(contents)))
    return files


@cache
def _registry(for_extended: bool = False) -> Registry:
    """All schema files under schemas/, registered by their $id so relative $refs resolve offline.

    The registry of the extended validators drops ``$schema``: jsonschema picks the validator class of a
    referenced resource from its ``$schema``, which would silently swap an extended class for the stock one.
    """
    resources = []
    for _, contents in schema_files():
        if for_extended:
            contents.pop("$schema", None)
        resources.append((contents["$id"], DRAFT202012.create_resource(contents)))
    return Registry().with_resources(resources)


def _properties() -> Iterator[tuple[str, Any, str]]:
    """Every property any schema file declares: its name, its schema and the file's base URI."""
    for _, contents in schema_files():
        base = contents["$id"]
        stack = [contents]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                props = node.get("properties")
                if isinstance(props, dict):
                    yield from ((name, sub, base) for name, sub in props.items())
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)


@cache
def secret_keys() -> frozenset[str]:
    """Property names whose schema (or the definition it refers to) says ``"x-secret": true``: their values are
    key material and never appear in a report."""
    registry = _registry()

    def secret(schema: Any, base: str) -> bool:
        if not isinstance(schema, dict):
            return False
        if schema.get("x-secret") is True:
            return True
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return False
        uri, _, pointer = (ref if "#" in ref else ref + "#").partition("#")
        target: Any = registry.contents(urljoin(base, uri))
        for part in filter(None, pointer.split("/")):
            target = target[part]
        return isinstance(target, dict) and target.get("x-secret") is True

    return frozenset(name for name, sub, base in _properties() if secret(sub, base))


@cache
def property_names() -> frozenset[str]:
    """Every property name a schema declares: a key outside them is a typo, or a name of the spec's own (a node
    profile's, a fabric's)."""
    return frozenset(name for name, _, _ in _properties())


def schema_document(name: str = ROOT_SCHEMA) -> dict[str, Any]:
    """A schema file's JSON (the root spec schema by default)."""
    contents = _registry().contents(_BASE_URI + name)
    return dict(contents)


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


def _is_integer(checker: object, instance: Any) -> bool:
    """``integer`` is an int, never a float: JSON Schema counts 8.0 as an integer, and a float that passes goes on to
    crash ``range()`` or to print as ``mtu: 9000.0`` in an artifact."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def _is_number(checker: object, instance: Any) -> bool:
    """``number`` is an int or a finite float: ``.nan`` passes every bound (all comparisons are false) and ``.inf``
    reaches ``int()``."""
    return _is_integer(checker, instance) or (isinstance(instance, float) and math.isfinite(instance))


_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _plain_text(validator: Validator, plain: bool, instance: Any, schema: Any) -> Iterator[ValidationError]:
    """``x-plain-text``: one line, no control characters. Text reaches comments, CSV cells and configs; a newline
    in it would start a line of its own there (a shell command in a script's header)."""
    if plain and isinstance(instance, str) and (found := _CONTROL.search(instance)):
        yield ValidationError(f"holds the control character U+{ord(found.group()):04X}")


def _same(instance: Any, expected: Any) -> bool:
    """JSON equality with the integer rule above: -1.0 is not the const -1 (jsonschema compares 1.0 == 1)."""
    if isinstance(instance, dict) and isinstance(expected, dict):
        return instance.keys() == expected.keys() and all(_same(instance[k], expected[k]) for k in instance)
    if isinstance(instance, list) and isinstance(expected, list):
        return len(instance) == len(expected) and all(_same(a, b) for a, b in zip(instance, expected, strict=True))
    if isinstance(instance, bool | float) or isinstance(expected, bool | float):
        return type(instance) is type(expected) and instance == expected
    return bool(instance == expected)


def _const(validator: Validator, const: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not _same(instance, const):
        yield ValidationError(f"{const!r} was expected")


def _enum(validator: Validator, enums: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not any(_same(instance, choice) for choice in enums):
        yield ValidationError(f"{instance!r} is not one of {enums!r}")


_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many({"integer": _is_integer, "number": _is_number})
_StrictValidator = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator,
    {"pattern": _pattern, "x-plain-text": _plain_text, "const": _const, "enum": _enum},
    type_checker=_TYPES,
)


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


_DefaultFiller = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"properties": _set_defaults}, type_checker=_TYPES
)


_NON_FINITE = {"nan": ".nan", "inf": ".inf", "-inf": "-.inf"}  # YAML's spellings


def _describe(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[str(value)]
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _hidden(value: Any) -> str:
    """How a value under a secret key is described: not at all."""
    return REDACTED


def _shown(value: Any, describe: Callable[[Any], str] = _describe) -> str:
    """The value after its type name, except for null and whole sections whose dump would not help."""
    return "" if value is None or isinstance(value, dict | list) else f" {describe(value)}"


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


_SIZES = {
    "maxItems": ("entries", "at most"), "minItems": ("entries", "at least"),
    "maxProperties": ("keys", "at most"), "minProperties": ("keys", "at least"),
    "maxLength": ("characters", "at most"), "minLength": ("characters", "at least"),
}


def _type_message(instance: Any, expected: Any, hint: str, describe: Callable[[Any], str]) -> tuple[str, str]:
    """``expected an integer, got number 8.0`` and a hint for the two mistakes YAML makes easy."""
    types = [str(t) for t in expected] if isinstance(expected, list) else [str(expected)]
    want = " or ".join(_JSON_TYPES.get(t, t) for t in types)
    if isinstance(instance, float) and not math.isfinite(instance):
        return f"expected {want}, got {describe(instance)}", hint or "write a finite number"
    if isinstance(instance, float) and instance.is_integer() and "integer" in types and describe is _describe:
        return f"expected {want}, got number {describe(instance)}", f"write {int(instance)} without a decimal point"
    return f"expected {want}, got {_type_name(instance)}{_shown(instance, describe)}", hint


def _missing(schema: dict[str, Any], instance: dict[str, Any]) -> list[str]:
    """The object's required keys it does not hold."""
    return [k for k in schema.get("required", []) if isinstance(k, str) and k not in instance]


def _unknown_key_hint(key: str, allowed: list[str], missing: list[str]) -> str:
    """``did you mean 'per_rack'? it is required`` when the unknown key is a typo of a missing required one."""
    required = did_you_mean(key, missing)
    if required:
        return f"{required} it is required"
    return did_you_mean(key, allowed) or f"allowed keys: {', '.join(allowed)}"


def _misspelt(missing: str, instance: dict[str, Any], schema: dict[str, Any]) -> bool:
    """True when an unknown key of the object is a typo of the missing required key: one mistake, one problem."""
    known = schema.get("properties", {})
    return schema.get("additionalProperties") is False and any(
        did_you_mean(key, [missing]) for key in instance if key not in known)


def _required_hint(schema: dict[str, Any], missing: str, hint: str) -> str:
    """The object's hint for a missing key, unless it is about alternatives (oneOf/anyOf: "give either rows or
    racks") that do not name that key."""
    alternatives = [*schema.get("oneOf", []), *schema.get("anyOf", [])]
    named = {k for alternative in alternatives if isinstance(alternative, dict)
             for k in alternative.get("required", [])}
    return hint if not alternatives or missing in named else ""


def _issues_for(error: ValidationError, doc: Document, prefix: PathKey) -> list[SpecIssue]:
    """One jsonschema error -> one or more issues (an unknown-keys error names each key)."""
    path: PathKey = (*prefix, *error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("x-hint", "")
    kind = str(error.validator)
    value: Any = error.validator_value
    describe = _hidden if doc.is_secret(path) else _describe
    if kind in {"oneOf", "anyOf"}:
        return _alternatives_issues(error, doc, prefix, path, hint or str(schema.get("description", "")))
    if kind == "additionalProperties" and isinstance(error.instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in schema.get("properties", {}))
        missing_keys = _missing(schema, error.instance)
        return [
            doc.issue(
                (*path, key),
                f"unknown key {key!r}",
                _unknown_key_hint(key, allowed, missing_keys),
                at_key=True,
            )
            for key in extra
        ]
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else str(error.validator_value)
        if isinstance(error.instance, dict) and _misspelt(missing, error.instance, schema):
            return []  # reported once, at the misspelt key (its hint says the key is required)
        return [doc.issue(path, f"missing required key {missing!r}", _required_hint(schema, missing, hint))]
    if kind == "enum":
        choices = [str(c) for c in value]
        guess = did_you_mean(str(error.instance), choices)
        if str(error.instance) in choices:
            guess = f"write {error.instance} without quotes;"
        allowed_values = f"allowed: {', '.join(choices)}"
        return [
            doc.issue(
                path,
                f"{describe(error.instance)} is not an allowed value",
                f"{guess} {allowed_values}" if guess else allowed_values,
            )
        ]
    if kind in _SIZES:
        what, bound = _SIZES[kind]
        size = len(error.instance) if isinstance(error.instance, str | list | dict) else 0
        subject = f"{describe(error.instance)} is {size} characters long" if what == "characters" else \
            f"holds {size} {what}"
        return [doc.issue(path, f"{subject}; {bound} {value} allowed", hint)]
    if kind == "uniqueItems":
        return [doc.issue(path, "lists the same entry twice", hint or "list each entry once")]
    if kind == "not":
        return [doc.issue(path, f"{describe(error.instance)} is not allowed here", hint)]
    if kind == "x-plain-text":
        return [doc.issue(path, f"{describe(error.instance)} {error.message}",
                          "one line of text: no newlines, tabs or other control characters")]
    if kind == "const":
        if isinstance(error.instance, float) and isinstance(value, int) and error.instance == value:
            hint = f"write {value} without a decimal point"
        return [doc.issue(path, f"{describe(error.instance)} must be {value!r}", hint)]
    if kind == "type":
        return [doc.issue(path, *_type_message(error.instance, value, hint, describe))]
    if kind == "pattern":
        hint = hint or f"must match {error.validator_value}"
        lower = error.instance.lower() if isinstance(error.instance, str) else ""
        if lower != error.instance and re.fullmatch(str(error.validator_value), lower) and describe is _describe:
            hint = f"did you mean {lower!r}? {hint}"  # names are lower case: the one fix that makes it valid
        return [doc.issue(path, f"{describe(error.instance)} is not a valid name here", hint)]
    if kind == "propertyNames":
        return [
            doc.issue(
                (*path, str(error.instance)),
                f"{_describe(error.instance)} is not a valid name here",
                hint or _context_hint(error),
                at_key=True,
            )
        ]
    return [doc.issue(path, str(error.message), hint)]


def _alternatives_issues(error: ValidationError, doc: Document, prefix: PathKey, path: PathKey,
                         hint: str) -> list[SpecIssue]:
    """oneOf/anyOf: report the branch that fits the value's type (a mapping vs a model name...)."""
    if not error.context:  # valid under several branches of a oneOf
        return [doc.issue(path, "matches more than one allowed form", hint)]
    relevant = [e for e in error.context if e.validator != "type" and not _literal_of_other_type(e)] \
        or list(error.context)
    deepest = best_match(relevant)
    if deepest is not None and deepest.validator not in {"oneOf", "anyOf"}:
        return _issues_for(deepest, doc, prefix)
    return [doc.issue(path, "does not match any allowed form", hint)]


def _literal_of_other_type(error: ValidationError) -> bool:
    """A const or enum branch that names values of another type than the instance's: a mapping given where the
    alternatives are ``simulated`` or ``{file: ...}`` failed the mapping branch, not the word."""
    if error.validator not in ("const", "enum"):
        return False
    literal: Any = error.validator_value
    values: list[Any] = [literal] if error.validator == "const" else list(literal)
    return all(_json_type(v) != _json_type(error.instance) for v in values)


def _json_type(value: Any) -> str:
    """JSON's type of a value: an int and a float are both numbers (-1.0 where -1 is the one allowed value is a
    near miss of that branch, reported as such), a bool is none."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    return "number" if isinstance(value, int | float) else type(value).__name__


def _context_hint(error: ValidationError) -> str:
    """The x-hint of the sub-schema that rejected a property name, if it has one."""
    sub = error.context[0].schema if error.context else None
    return str(sub.get("x-hint", "")) if isinstance(sub, dict) else ""


def schema_issues(doc: Document, data: Any, ref: str = ROOT_SCHEMA, prefix: PathKey = ()) -> list[SpecIssue]:
    """Every schema violation of ``data`` (found at ``prefix`` inside ``doc``) against schema file ``ref``."""
    errors = list(_validator(ref).iter_errors(data))
    # A value of the wrong type also fails the bounds meant for the right one (.inf: "above the maximum"): say only
    # that its type is wrong.
    mistyped = {tuple(e.absolute_path) for e in errors if e.validator == "type"}
    issues: list[SpecIssue] = []
    for error in errors:
        if error.validator != "type" and tuple(error.absolute_path) in mistyped:
            continue
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
