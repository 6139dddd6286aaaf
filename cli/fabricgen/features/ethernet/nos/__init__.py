"""Network operating systems as data: each NOS is one module here (or a package, for SONiC) with its data file.

A NOS module ``<name>.py`` (or package ``<name>/``) reads its ``<name>.yaml`` here with ``nos_data("<name>")``
and exports ``NOS = Nos(data, render, readback)``. The data file says which switches the NOS runs on (vendors or
models), which software releases fabricgen writes for (each with the facts that differ between them), what the
NOS can do (PFC watchdog actions, buffer models, the shared headroom pool), how it names ports and its
management interface and VRF, and which artifact holds its configuration. Build, render and the cross-layer
read-back read these records, never a NOS's name: a new NOS is its module, its data file, its templates, its tests
and one value in the schema's ``nos`` enum (and its releases in the schema's ``software``, if it has any).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.naming import expand
from fabricgen.model.cluster import Fabric, Tier
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import Topology
from fabricgen.spec.load import load_file


@dataclass(frozen=True)
class NosData:
    """What one NOS can do and how it names things, from its ``<name>.yaml`` (sources in the file)."""

    name: str
    title: str
    pfc_watchdog_actions: Mapping[str, str]  # fabricgen's action -> the NOS's own keyword
    buffer_models: tuple[str, ...]
    shared_headroom_pool: tuple[str, ...]  # the buffer models in which it takes a shared headroom pool
    config: str  # the artifact under switches/<switch>/ that holds the configuration ("{switch}" filled in)
    interfaces: Mapping[str, str]  # port name patterns by form: whole cage, split cage, ...
    management_interface: str
    management_vrf: str
    vendors: tuple[str, ...] = ()  # it runs on every switch of these vendors ...
    models: tuple[str, ...] = ()   # ... and on these models
    default_release: str = ""
    releases: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # release -> the facts it decides
    routing: Mapping[str, Any] = field(default_factory=dict)  # its routing daemon's defaults, for Nos.routing
    # where it runs adaptive routing (Spectrum-X): switch ASICs and link speeds; empty: it has none
    adaptive_routing: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    mlag_requires: str = ""  # what the switch's image must have for it (a plan-time warning), if anything
    mlag_settings: Mapping[str, Any] = field(default_factory=dict)  # the NOS's own MLAG constants (`mlag_<name>`)
    # the admin state the NOS gives a front-panel port its configuration does not name ("" : its configuration
    # names every port, as SONiC's PORT table does)
    unconfigured_port: str = ""

    def runs_on(self, model: SwitchModel) -> bool:
        """Whether the NOS runs on this switch model (its vendor or the model itself is listed)."""
        return model.vendor in self.vendors or model.name in self.models

    def release(self, chosen: str | None) -> Mapping[str, Any]:
        """The facts of a release (the default one when none is chosen); empty for a NOS without releases."""
        return self.releases.get(chosen or self.default_release, MappingProxyType({}))

    def config_file(self, switch: str) -> str:
        """The artifact (under ``switches/<switch>/``) that holds the switch's configuration."""
        return expand(self.config, {"switch": switch})

    def interface(self, form: str, **values: int | str) -> str:
        """A port name in one of the NOS's forms (``whole`` cage, ``split`` cage ...)."""
        return expand(self.interfaces[form], values)


@cache
def nos_data(name: str) -> NosData:
    """The data file ``<name>.yaml`` of this package (read once)."""
    data = load_file(Path(__file__).with_name(f"{name}.yaml")).data
    management, switches, software = data["management"], data["switches"], data.get("software", {})
    releases = {str(r): MappingProxyType(dict(facts or {})) for r, facts in software.get("releases", {}).items()}
    return NosData(name, data["title"], MappingProxyType(dict(data["pfc_watchdog"]["actions"])),
                   tuple(data["buffer_models"]), tuple(data["shared_headroom_pool"]), data["config"],
                   MappingProxyType(dict(data["interfaces"])), management["interface"], management["vrf"],
                   tuple(switches.get("vendors", ())), tuple(switches.get("models", ())),
                   str(software.get("default", "")), MappingProxyType(releases),
                   MappingProxyType(dict(data.get("routing", {}))),
                   MappingProxyType({k: tuple(v) for k, v in (data.get("adaptive_routing") or {}).items()}),
                   str(data.get("mlag_requires", "")),
                   MappingProxyType(dict(data.get(f"mlag_{name}", {}))),
                   str(data.get("unconfigured_port", {}).get("admin", "")))


@dataclass(frozen=True)
class PortSetting:
    """How a switch's rendered configuration leaves one front-panel port: what an engineer about to cable a free
    port must know (does it come up, at what speed, in which breakout of its cage)."""

    speed: str     # the speed the configuration sets ("400G"); "" where it sets none (the NOS's default)
    # the cage's breakout as the configuration spells it (SONiC ``2x400G[200G,...]``, NVUE ``2x``, EOS the port's
    # ``speed 400g-4``); "" where it sets none (the NOS's default: NVUE runs the cage as one port)
    breakout: str
    admin: str     # "up" or "down": as configured, or the NOS's default for a port it does not configure
    # the configuration gives the port no buffers, QoS map or address (SONiC's dark ports): enabled by hand it
    # links without PFC, so it is provisioned by adding it to the spec and applying, never by a startup alone
    unprovisioned: bool = False
    # the NOS's alias of the port, what its LLDP advertises as the port id (SONiC ``etp5a``); "" where it has none
    alias: str = ""


@dataclass(frozen=True)
class Nos:
    """One NOS: its data and its module's renderer, read-back and checks.

    ``readback(switch, content, fabric)`` reads the switch's configuration artifact back as the switch would and
    yields every break in the fabric's lossless chain (and, where the NOS checks it, port MTUs); ``checks`` find,
    over the compiled topology, what would keep one of its switches from running as planned (before render);
    ``port_name(model, port, per_cage)`` names a port as the NOS does (NetBox's interface names); ``routing(switch,
    content)``, where the NOS has it, reads the configuration artifact back into the routing the switch would run
    (what ``fabricgen lab`` configures FRR from), raising ConfigReadError on what it lacks.
    """

    data: NosData
    render: Callable[[Topology], list[Artifact]]
    readback: Callable[[str, bytes, Fabric], Iterable[Finding]]
    checks: tuple[Callable[[Topology], Iterable[Finding]], ...] = ()
    routing: Callable[[str, bytes], SwitchRouting] | None = None
    # the NOS's name of fabricgen's port ``<cage>`` or ``<cage>/<n>`` on a cage split into ``per_cage`` ports
    # (``17/2`` of an SN4700 at 2 x 200G: SONiC ``Ethernet140``), as its configuration names it: what LLDP and
    # discovery tools (NetBox's interface names) see
    port_name: Callable[[SwitchModel, str, int], str] | None = None
    # ``port_setting(topology, switch, cage, name)``: how the switch's configuration leaves its port ``name`` (the
    # NOS's name) in ``cage``; None for a switch fabricgen writes no configuration for
    port_setting: Callable[[Topology, str, int, str], PortSetting | None] | None = None
    # ``cage_split(topology, switch, cage)``: the ports the switch's configuration splits ``cage`` into, for a NOS
    # that splits only the cages it configures (NVUE: a cage without ``link breakout`` runs whole, one port
    # ``swp<cage>``); None (the hook, or its answer): the cage shows the ports its tier's speed splits it into
    cage_split: Callable[[Topology, str, int], int | None] | None = None


def fabric_nos(fabric: Fabric, tier: Tier) -> Nos | None:
    """The NOS the fabric's switches of ``tier`` run, None where the spec names none (an InfiniBand fabric)."""
    nos = fabric.nos.get(tier) if fabric.nos else None
    return systems()[nos] if nos else None


@cache
def systems() -> Mapping[str, Nos]:
    """Every NOS module of this package by name, in name order (imported once, on first use)."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        record = getattr(module, "NOS", None)
        if isinstance(record, Nos):
            found[record.data.name] = record
    return MappingProxyType(found)
