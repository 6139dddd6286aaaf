"""The hardware catalog: shipped YAML data files, replaced entry by entry by the spec's ``catalog:`` section."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from fabricgen.errors import SpecError
from fabricgen.load import Document, load_file
from fabricgen.model import NicModel, PortGroup, Speed, SwitchModel
from fabricgen.resources import data_dir
from fabricgen.validate import schema_issues

_FILES = {
    "speeds": "sections/catalog.schema.json#/$defs/speeds_file",
    "switches": "sections/catalog.schema.json#/$defs/switches_file",
    "nics": "sections/catalog.schema.json#/$defs/nics_file",
    "node_profiles": "sections/catalog.schema.json#/$defs/node_profiles_file",
}


@dataclass(frozen=True)
class CatalogFile:
    """One shipped catalog file, loaded with positions so a bad entry is reported by file:line."""

    document: Document

    @property
    def entries(self) -> Mapping[str, Any]:
        data = self.document.data
        return next(iter(data.values())) if isinstance(data, dict) and data else {}


@cache
def shipped(name: str) -> CatalogFile:
    """Load and validate one shipped catalog file (speeds, switches, nics, node_profiles)."""
    document = load_file(data_dir() / "catalog" / f"{name}.yaml")
    issues = schema_issues(document, document.data, _FILES[name])
    if issues:
        raise SpecError(issues)
    return CatalogFile(document)


def speeds() -> Mapping[str, Speed]:
    return MappingProxyType(
        {
            name: Speed(name, float(e["gbps"]), e["type"], int(e["lanes"]), e.get("ibsim", ""))
            for name, e in shipped("speeds").entries.items()
        }
    )


def switch_model(name: str, entry: Mapping[str, Any]) -> SwitchModel:
    groups = tuple(
        PortGroup(g["name"], int(g["cages"]), g["form_factor"], tuple(sorted(g["ports_per_cage"].items())))
        for g in entry["port_groups"]
    )
    return SwitchModel(name, entry["vendor"], entry["fabric_type"], int(entry["height_u"]), groups)


def nic_model(name: str, entry: Mapping[str, Any]) -> NicModel:
    return NicModel(
        name,
        entry["vendor"],
        int(entry["ports"]),
        tuple(entry["speeds"]),
        tuple(entry["link_types"]),
        entry.get("max_vfs"),
    )


def merged(name: str, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Shipped entries of one catalog file with the spec's entries of the same kind replacing them by name."""
    out = dict(shipped(name).entries)
    out.update(overrides or {})
    return out
