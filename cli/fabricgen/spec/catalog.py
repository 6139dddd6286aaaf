"""The hardware catalog: shipped YAML data files, replaced entry by entry by the spec's ``catalog:`` section."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any

from fabricgen.core.document import Document
from fabricgen.core.errors import SpecError
from fabricgen.core.resources import data_dir
from fabricgen.model.hardware import Medium, NicModel, Optic, PortGroup, Speed, SwitchModel
from fabricgen.spec.load import load_file
from fabricgen.spec.validate import schema_issues

_FILES = {
    "speeds": "sections/catalog.schema.json#/$defs/speeds_file",
    "switches": "sections/catalog.schema.json#/$defs/switches_file",
    "nics": "sections/catalog.schema.json#/$defs/nics_file",
    "node_profiles": "sections/catalog.schema.json#/$defs/node_profiles_file",
    "media": "sections/catalog.schema.json#/$defs/media_file",
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
            name: Speed(name, float(e["gbps"]), e["type"], int(e["lanes"]), e.get("ibsim", ""),
              e.get("netbox_interface_type", "other"))
            for name, e in shipped("speeds").entries.items()
        }
    )


@cache
def fastest_at(group: PortGroup, split: int) -> Speed | None:
    """The fastest speed a cage of ``group`` runs as ``split`` ports (its whole speed at 1, or at its native
    split: what the hardware is, whatever a cluster cables); None where no speed splits it so. Cached: asked per
    free port, and `speeds` builds its table per call."""
    return max((speeds()[s] for s, n in group.ports_per_cage if n == split), key=lambda s: s.gbps, default=None)


def switch_model(name: str, entry: Mapping[str, Any]) -> SwitchModel:
    groups = tuple(
        PortGroup(g["name"], int(g["cages"]), g["form_factor"], tuple(sorted(g["ports_per_cage"].items())),
                  int(g.get("lanes", 0)), tuple(int(r) for r in g.get("lane_gbps", ())))
        for g in entry["port_groups"]
    )
    return SwitchModel(name, entry["vendor"], entry["fabric_type"], int(entry["height_u"]), groups,
                       entry.get("asic", ""))


def nic_model(name: str, entry: Mapping[str, Any]) -> NicModel:
    return NicModel(
        name,
        entry["vendor"],
        int(entry["ports"]),
        tuple(entry["speeds"]),
        tuple(entry["link_types"]),
        entry.get("max_vfs"),
        entry.get("form_factor", ""),
        int(entry.get("lanes", 0)),
        tuple(int(r) for r in entry.get("lane_gbps", ())),
        bool(entry.get("gpudirect", False)),
        bool(entry.get("supernic", False)),
        entry.get("pci_device_id", ""),
    )


def merged(name: str, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Shipped entries of one catalog file with the spec's entries of the same kind replacing them by name."""
    out = dict(shipped(name).entries)
    out.update(overrides or {})
    return out


def _optic(entry: Mapping[str, Any] | None) -> Optic | None:
    return Optic(entry["part"], int(entry["connections"]), entry.get("port_fec", "")) if entry else None


def medium(entry: Mapping[str, Any]) -> Medium:
    cables = tuple(sorted((float(c["length_m"]), c["part"]) for c in entry["cables"]))
    return Medium(entry["name"], tuple(entry["speeds"]), tuple(entry["ends"]), entry["kind"], entry.get("fiber", ""),
                  float(entry["reach_m"]), cables, _optic(entry.get("host_optic")), _optic(entry.get("switch_optic")),
                  entry["netbox_type"], entry.get("color", ""), tuple(entry.get("switch_form_factors", ())),
                  tuple(entry.get("host_form_factors", ())), int(entry.get("legs", 1)),
                  tuple((ff, optic) for ff, raw in sorted(entry.get("switch_optics", {}).items())
                        if (optic := _optic(raw)) is not None), tuple(entry.get("cage_pair", ())),
                  tuple((vendor, ff, optic) for vendor, by_ff in sorted(entry.get("vendor_optics", {}).items())
                        for ff, raw in sorted(by_ff.items()) if (optic := _optic(raw)) is not None),
                  float(entry.get("fanout_m", 0)), tuple(entry.get("leg_fibers", ())), entry.get("polarity", ""),
                  tuple((ff, optic) for ff, raw in sorted(entry.get("host_optics", {}).items())
                        if (optic := _optic(raw)) is not None))


def media(overrides: Sequence[Mapping[str, Any]] | None) -> tuple[Medium, ...]:
    """The spec's media first (they win the first-fit choice), then the shipped ones, in preference order."""
    shipped_media = shipped("media").document.data["media"]
    return tuple(medium(e) for e in [*(overrides or []), *shipped_media])
