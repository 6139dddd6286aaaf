"""The editor schema: self-contained, described, catalog names offered, checked in up to date with its reference."""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator

from fabricgen.spec.catalog import shipped
from fabricgen.spec.editor_schema import editor_schema, editor_schema_text, reference_markdown, undescribed_properties
from fabricgen.spec.load import load_file
from tests.conftest import INVENTORIES, REPO


def _refs(node: Any) -> list[str]:
    if isinstance(node, list):
        return [r for sub in node for r in _refs(sub)]
    if not isinstance(node, dict):
        return []
    own = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
    return own + [r for sub in node.values() for r in _refs(sub)]


def _subschemas(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, list):
        return [s for sub in node for s in _subschemas(sub)]
    if not isinstance(node, dict):
        return []
    return [node] + [s for key, sub in node.items() if key not in ("enum", "const", "default", "examples")
                     for s in _subschemas(sub)]


def test_checked_in_schema_and_reference_are_up_to_date() -> None:
    """`fabricgen schema > schemas/fabricgen.editor.json` and `fabricgen docs > docs/reference.md` rewrite them."""
    assert (REPO / "schemas" / "fabricgen.editor.json").read_text(encoding="utf-8") == editor_schema_text()
    assert (REPO / "docs" / "reference.md").read_text(encoding="utf-8") == reference_markdown(editor_schema())


def test_one_document_with_internal_refs_only() -> None:
    bundle = editor_schema()
    assert all("$id" not in s for s in _subschemas(bundle))
    Draft202012Validator.check_schema(bundle)
    for ref in _refs(bundle):
        assert ref.startswith("#/$defs/"), ref
        target: Any = bundle
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]


def test_every_property_has_a_description() -> None:
    assert undescribed_properties(editor_schema()) == []


def test_catalog_names_are_offered_and_own_names_still_valid() -> None:
    bundle = editor_schema()
    enums = {tuple(s["enum"]) for s in _subschemas(bundle) if "enum" in s}
    for catalog in ("switches", "nics", "node_profiles"):
        assert tuple(sorted(shipped(catalog).entries)) in enums, catalog
    media = shipped("media").document.data["media"]
    assert tuple(sorted(m["name"] for m in media)) in enums
    validator = Draft202012Validator(bundle)
    for spec in sorted(INVENTORIES.glob("*.yaml")):
        assert not list(validator.iter_errors(load_file(spec).data)), spec.name
    own = load_file(INVENTORIES / "lab-1su.yaml").data
    own["fabrics"]["compute"]["switch"] = "MY-SWITCH-9"
    own["nodes"][0]["profile"] = "my-own-profile"
    assert not list(validator.iter_errors(own))
    own["fabrics"]["compute"]["switch"] = "bad name!"
    assert list(validator.iter_errors(own))


def test_examples_are_valid() -> None:
    checked = 0
    for schema in _subschemas(editor_schema()):
        if "examples" in schema:
            probe = {**schema, "$defs": editor_schema()["$defs"]}
            probe.pop("examples")
            for example in schema["examples"]:
                assert not list(Draft202012Validator(probe).iter_errors(example)), json.dumps(example)
                checked += 1
    assert checked >= 10
