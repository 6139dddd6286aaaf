"""The layout's rules that import-linter cannot express: no TYPE_CHECKING imports between fabricgen modules, every
feature package registered once with one record, and the NOSes the schema names are exactly the NOS modules."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import fabricgen
from fabricgen.features import registry
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.feature import Feature
from tests.conftest import REPO

PACKAGE = Path(fabricgen.__file__).parent


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_shipped" not in p.parts)


def test_no_type_checking_imports_of_fabricgen_modules() -> None:
    """A TYPE_CHECKING import hides a cycle from the import rules; the layers make every type importable."""
    found = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                found += [f"{path.relative_to(PACKAGE)}:{n.lineno}" for n in ast.walk(node)
                          if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("fabricgen")]
    assert found == []


def test_every_feature_package_is_registered_once() -> None:
    """A feature package exports one FEATURE, and the registry lists each package's record exactly once."""
    features = importlib.import_module("fabricgen.features")
    packages = sorted(m.name for m in pkgutil.iter_modules(features.__path__) if m.ispkg)
    records = {name: importlib.import_module(f"fabricgen.features.{name}").FEATURE for name in packages}
    assert all(isinstance(r, Feature) for r in records.values())
    assert sorted(f.name for f in registry.FEATURES) == packages
    assert [records[f.name] for f in registry.FEATURES] == list(registry.FEATURES)


def test_target_names_are_unique() -> None:
    names = [t.name for f in registry.FEATURES for t in f.targets]
    assert len(names) == len(set(names)), names


def test_schema_nos_enum_is_the_nos_modules() -> None:
    """A new NOS is its module and data file plus this one schema enum value: the two must agree."""
    schema = json.loads((REPO / "schemas" / "sections" / "ethernet.schema.json").read_text(encoding="utf-8"))
    assert sorted(schema["$defs"]["nos_name"]["enum"]) == sorted(systems())
    targets = {t.name for f in registry.FEATURES for t in f.targets}
    assert set(systems()) <= targets


def test_schema_software_releases_are_the_nos_data_releases() -> None:
    """The releases the schema offers per NOS are exactly those its data file has facts for, default included."""
    schema = json.loads((REPO / "schemas" / "sections" / "ethernet.schema.json").read_text(encoding="utf-8"))
    offered = {name: entry["enum"] for name, entry in schema["$defs"]["software"]["properties"].items()}
    known = {name: list(nos.data.releases) for name, nos in systems().items() if nos.data.releases}
    assert offered == known
    for nos in systems().values():
        assert not nos.data.releases or nos.data.default_release in nos.data.releases, nos.data.name
