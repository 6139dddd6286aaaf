"""The spec's schema as editors take it: one self-contained document with internal $refs and catalog enums.

yaml-language-server and VS Code resolve a ``$ref`` against the ``$id`` of the resource it sits in; the section
files' ``https://fabricgen.dev/...`` ids made them fetch from the internet (and fail offline). The bundle has no
``$id`` at all: every section becomes ``#/$defs/<section>``, every definition inside it ``#/$defs/<section>.<name>``,
and every ``$ref`` is rewritten to point there. A subschema marked ``"x-catalog": "<file>"`` is offered the names of
that shipped catalog file as an enum, next to its own pattern, so a spec's own models and profiles stay valid.
"""

from __future__ import annotations

import json
from typing import Any

from fabricgen.spec.catalog import shipped
from fabricgen.spec.validate import ROOT_SCHEMA, schema_files

EDITOR_SCHEMA = "fabricgen.editor.json"


def editor_schema() -> dict[str, Any]:
    """The bundled schema (what `fabricgen schema` prints and schemas/fabricgen.editor.json holds)."""
    sections: dict[str, dict[str, Any]] = {}
    root: dict[str, Any] = {}
    for path, contents in schema_files():
        if path.name == ROOT_SCHEMA:
            root = contents
        elif path.parent.name == "sections":
            sections[path.name] = contents
    defs: dict[str, Any] = {}
    for file_name, contents in sections.items():
        section = file_name.removesuffix(".schema.json")
        # a section's title would head the hover of every field inside it (yaml-language-server shows the closest
        # title up the schema path), so `count` hovered as "nodes": the bundle keeps none, the root's neither
        body = {k: v for k, v in contents.items() if k not in ("$schema", "$id", "$defs", "title")}
        if set(body) - {"description"}:
            defs[section] = _rewrite(body, file_name)
        for name, sub in contents.get("$defs", {}).items():
            defs[f"{section}.{name}"] = _rewrite(sub, file_name)
    bundle = {k: v for k, v in _rewrite(root, "../" + ROOT_SCHEMA).items() if k not in ("$id", "title")}
    bundle["$defs"] = {name: defs[name] for name in sorted(_reachable(bundle, defs))}
    return bundle


def _reachable(root: dict[str, Any], defs: dict[str, Any]) -> set[str]:
    """Definitions a spec can reach from the root; the shapes of fabricgen's own data files stay out."""
    found: set[str] = set()
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and (name := ref.removeprefix("#/$defs/").split("/")[0]) not in found:
                found.add(name)
                stack.append(defs[name])
            stack.extend(v for k, v in node.items() if k != "$defs")
    return found


def editor_schema_text() -> str:
    """The bundle as the checked-in file holds it (stable key order, a final newline)."""
    return json.dumps(editor_schema(), indent=2, ensure_ascii=False) + "\n"


def _target(ref: str, file_name: str) -> str:
    """``ref`` as written in ``file_name`` (a section file, or ``../fabricgen.schema.json``) -> internal pointer."""
    uri, _, pointer = ref.partition("#")
    section = (uri.removeprefix("sections/") or file_name).removesuffix(".schema.json")
    parts = pointer.split("/")
    if parts[:2] == ["", "$defs"] and len(parts) > 2:
        return "/".join(["#", "$defs", f"{section}.{parts[2]}", *parts[3:]])
    if pointer:
        raise ValueError(f"{file_name}: $ref {ref!r} does not point into $defs")
    return f"#/$defs/{section}"


def _rewrite(schema: Any, file_name: str) -> Any:
    if isinstance(schema, list):
        return [_rewrite(s, file_name) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _rewrite(v, file_name) for k, v in schema.items() if k != "x-catalog"}
    if isinstance(out.get("$ref"), str):
        out["$ref"] = _target(out["$ref"], file_name)
    catalog = schema.get("x-catalog")
    if isinstance(catalog, str):
        return _with_catalog_names(out, catalog)
    return out


def _with_catalog_names(schema: dict[str, Any], catalog: str) -> dict[str, Any]:
    """``schema`` or one of the shipped names of ``catalog``: the names complete, the pattern still admits a spec's
    own entries (catalog overrides, spec-defined node profiles)."""
    entries = shipped(catalog).document.data[catalog]
    names = sorted(e["name"] for e in entries) if isinstance(entries, list) else sorted(entries)
    annotations: dict[str, Any] = {k: schema.pop(k) for k in ("description", "default", "examples") if k in schema}
    described = {name: _entry_text(entries, name) for name in names}
    shipped_names = {
        "enum": names,
        "markdownEnumDescriptions": [described[n] for n in names],
        "description": f"A model of fabricgen's shipped catalog ({catalog}).",
    }
    return {**annotations, "anyOf": [shipped_names, schema]}


def _entry_text(entries: Any, name: str) -> str:
    entry = next(e for e in entries if e["name"] == name) if isinstance(entries, list) else entries[name]
    return str(entry.get("description") or entry.get("vendor") or name)


def undescribed_properties(bundle: dict[str, Any]) -> list[str]:
    """Pointers of the properties in ``bundle`` that an editor would hover without a description (neither the
    property nor the definition it refers to has one)."""
    missing: list[str] = []

    def described(schema: Any) -> bool:
        seen = 0
        while isinstance(schema, dict) and seen < 16:
            if "description" in schema:
                return True
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                return False
            schema = bundle["$defs"].get(ref.removeprefix("#/$defs/").split("/")[0])
            for part in ref.removeprefix("#/$defs/").split("/")[1:]:
                schema = schema.get(part) if isinstance(schema, dict) else None
            seen += 1
        return False

    def walk(schema: Any, pointer: str) -> None:
        if isinstance(schema, list):
            for i, sub in enumerate(schema):
                walk(sub, f"{pointer}/{i}")
            return
        if not isinstance(schema, dict):
            return
        for name, sub in (schema.get("properties") or {}).items():
            if not described(sub):
                missing.append(f"{pointer}/properties/{name}")
        for key, sub in schema.items():
            if key not in ("enum", "const", "default", "examples"):
                walk(sub, f"{pointer}/{key}")

    walk(bundle, "#")
    return missing


def reference_markdown(bundle: dict[str, Any]) -> str:
    """The spec reference (docs/reference.md): one table per top-level section, one row per field, from the
    bundle's descriptions, types, defaults, allowed values and examples."""

    def resolve(schema: Any) -> dict[str, Any]:
        while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
            target: Any = bundle
            for part in schema["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            schema = merged
        return schema if isinstance(schema, dict) else {}

    def alternatives(schema: dict[str, Any]) -> list[dict[str, Any]]:
        alts = [resolve(s) for key in ("oneOf", "anyOf") for s in schema.get(key, [])]
        return [schema, *(a for alt in alts for a in alternatives(alt))]

    def kind(schema: dict[str, Any]) -> str:
        kinds: list[str] = []
        for alt in alternatives(schema):
            if "enum" in alt:
                kinds.append("one of " + ", ".join(f"`{json.dumps(v)}`" for v in alt["enum"]))
            elif "const" in alt:
                kinds.append(f"`{json.dumps(alt['const'])}`")
            elif isinstance(alt.get("type"), str):
                kinds.append(alt["type"] + (f" `{alt['pattern']}`" if "pattern" in alt else ""))
        unique = list(dict.fromkeys(kinds))
        return " or ".join(unique).replace("|", "\\|")

    rows: list[tuple[str, str, str, str]] = []

    def walk(schema: Any, path: str, depth: int) -> None:
        schema = resolve(schema)
        if depth > 12:
            return
        for alt in alternatives(schema):
            required = set(alt.get("required", []))
            for name, sub in (alt.get("properties") or {}).items():
                field = resolve(sub)
                where = f"{path}.{name}" if path else name
                default = json.dumps(field["default"]) if "default" in field else ("required" if name in required
                                                                                     else "")
                text = str(field.get("description", ""))
                if "examples" in field:
                    text += " Example: " + ", ".join(f"`{json.dumps(e)}`" for e in field["examples"]) + "."
                rows.append((where, kind(field), default, text))
                walk(field, where, depth + 1)
            items = alt.get("items")
            if isinstance(items, dict):
                walk(items, f"{path}[]", depth + 1)
            extra = alt.get("additionalProperties")
            if isinstance(extra, dict):
                walk(extra, f"{path}.<name>", depth + 1)

    walk(bundle, "", 0)
    lines = [
        "# fabricgen spec reference",
        "",
        "Generated by `fabricgen docs` from the spec's JSON Schema (`fabricgen schema`); do not edit by hand.",
        "A test fails when this file and the schema disagree (`fabricgen docs > docs/reference.md` rewrites it).",
        "",
    ]
    seen: set[str] = set()
    for where, field_kind, default, text in rows:
        if where in seen:
            continue
        seen.add(where)
        top = where.split(".")[0].split("[")[0]
        if where == top:
            lines += ["", f"## `{top}`", "", text.replace("|", "\\|"), "",
                      "| field | type | default | description |", "|---|---|---|---|"]
        lines.append(f"| `{where}` | {field_kind} | {default.replace('|', chr(92) + '|')} | "
                     f"{text.replace('|', chr(92) + '|')} |")
    return "\n".join(lines) + "\n"
