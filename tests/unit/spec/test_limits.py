"""Every value a spec can hold is bounded and typed strictly: the schema layer's defaults leave no string, list,
map or number unbounded, patterns are strict character classes (no control character passes one), integers are
ints and numbers finite, and the secret keys are known."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from fabricgen.core.document import Document
from fabricgen.spec.editor_schema import editor_schema
from fabricgen.spec.validate import DEFAULT_LIMITS, schema_issues, secret_keys

# A pattern may only use character classes of plain characters: ".", "[^...]" and "\s"-like classes admit newlines.
_LOOSE = re.compile(r"(?<!\\)\.(?![^\[]*\])|\[\^|\\[sSwWdD]")


def _typed(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        if isinstance(node.get("type"), str | list):  # a schema, not a properties map with a "type" property
            yield node
        for key, value in node.items():
            if key not in ("enum", "const", "default", "examples"):
                yield from _typed(value)
    elif isinstance(node, list):
        for value in node:
            yield from _typed(value)


SCHEMAS = list(_typed(editor_schema()))


def test_every_typed_value_is_bounded() -> None:
    assert len(SCHEMAS) > 300
    for schema in SCHEMAS:
        if "enum" in schema or "const" in schema:
            continue
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        for kind in types:
            for key in DEFAULT_LIMITS.get(kind, {}):
                if key == "x-plain-text":
                    assert "pattern" in schema or schema.get(key) is True, schema
                elif key in ("minimum", "maximum"):
                    assert key in schema or f"exclusive{key.title()}" in schema, schema
                else:
                    assert key in schema, (key, schema)


def test_patterns_are_strict_character_classes() -> None:
    patterns = {s["pattern"] for s in SCHEMAS if "pattern" in s}
    assert len(patterns) > 30
    loose = [p for p in patterns if _LOOSE.search(p.replace("\\.", ""))]
    assert not loose, loose
    for pattern in patterns:  # as the validator applies them: a final $ is the end of the text (ECMA-262)
        strict = pattern[:-1] + r"\Z" if pattern.endswith("$") else pattern
        assert not re.search(strict, "\n") and not re.search(strict, "a\nb"), pattern


def test_secret_keys_are_the_key_material() -> None:
    assert secret_keys() == {"keys", "sm_key", "sa_key", "m_key", "key", "community"}  # SM keys, TACACS+, SNMP


@pytest.mark.parametrize(("value", "message"), [
    (8.0, "expected an integer, got number 8.0"),
    (True, "expected an integer, got boolean true"),
    (float("nan"), "expected an integer, got .nan"),
    (2**63, "is greater than the maximum"),
])
def test_integers_are_ints(value: object, message: str) -> None:
    doc = Document({"x": value}, "s.yaml", "", {}, {})
    issues = schema_issues(doc, {"metadata": {"name": "a"}, "apiVersion": "fabricgen/v1", "kind": "Cluster",
                                 "cloud": {}, "nodes": [{"name": "a", "count": value}]})
    assert any(message in i.message for i in issues if i.path == "nodes[0].count"), [str(i) for i in issues]
