"""A switch in SONiC's terms: the SKU that runs its ports, its PORT rows from that SKU, the release's facts, and
per lossless port the headroom each buffer model gives it. The renderer and the SONiC check share it: whatever
keeps a switch from running as planned (no SKU fits its ports, a cable longer than the SKU's lossless table, a
speed the table lacks) is a check finding before anything is written.

Port names, lanes and aliases are the SKU's port_config.ini rows (NVIDIA's Spectrum convention: Ethernet<first
lane>, or on ACS-MSN4600 Ethernet<4 x (cage - 1)> over lanes from 8 x (cage - 1); alias etp<cage><a, b ...>, index =
cage), found by cage and position: fabricgen port ``<cage>/<n>`` is the n-th row of index ``<cage>``. The SKU's
other ports are the switch's dark ports: SONiC's dynamic port breakout re-splits a cage only when every port of its
current mode is in PORT (sonic-utilities config/main.py ``breakout``: each port to delete must be a valid
interface), so they stay there, shut. CABLE_LENGTH in the traditional model is the SKU table's row length at or
above the port's cable (buffermgrd finds no profile for another length); in the dynamic model the cable rounded up
to whole metres, which the release's lua turns into headroom itself.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from fabricgen.core.errors import Finding
from fabricgen.features.ethernet.nos import PortSetting, nos_data
from fabricgen.features.ethernet.nos.sonic.headroom import Headroom, SonicSwitch, asic_headroom, catalog
from fabricgen.features.ethernet.nos.sonic.skus import LookupRow, Sku, SkuPort, skus
from fabricgen.features.ethernet.switch_view import PortView, SwitchView, nos_switch_views
from fabricgen.features.feature import fabric_error
from fabricgen.model.cluster import Tier
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.topology import Topology

DATA = nos_data("sonic")
# SONiC's device roles (sonic-device_metadata.yang type; buffers_config.j2 picks the SKU's buffers_defaults_<t>.j2
# by them): a leaf is a T0 ToRRouter, a spine a T1 LeafRouter, a core a T2 SpineRouter
DEVICE_TYPE = {Tier.LEAF: "ToRRouter", Tier.SPINE: "LeafRouter", Tier.CORE: "SpineRouter"}


class SonicLayoutError(ValueError):
    """The switch cannot run SONiC as planned: why, and what would."""

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class SonicPort:
    """One used front-panel port in SONiC's terms."""

    view: PortView
    sku_port: SkuPort
    speed_mbps: int
    cable_length_m: int        # the plan's cable rounded up to whole metres: the dynamic model's CABLE_LENGTH
    row: LookupRow | None      # traditional model with a lossless class: the SKU table's row for the port

    @property
    def name(self) -> str:
        return self.sku_port.name

    @property
    def lanes(self) -> tuple[int, ...]:
        return tuple(int(lane) for lane in self.sku_port.lanes.split(","))

    @property
    def cable_length(self) -> str:
        """CABLE_LENGTH: the table row's length (traditional, lossless) or the whole metres (otherwise)."""
        return self.row.cable if self.row is not None else f"{self.cable_length_m}m"

    @property
    def profile(self) -> str:
        """The traditional model's lossless PG profile, named as buffermgrd names the one it builds (so it reuses
        this one): pg_lossless_<speed>_<cable>_profile."""
        return f"pg_lossless_{self.speed_mbps}_{self.cable_length}_profile"

    def dynamic_profile(self, port_mtu: int, platform: str) -> str:
        """The profile buffermgrdyn creates for this port (getDynamicProfileName, NVIDIA branch; the same on every
        release fabricgen writes for). Spectrum-3 (SN4xxx) ports on 8 lanes below 400G and Spectrum-4 (SN5xxx)
        ones below 800G get a doubled xon, hence their own ``_8lane`` profile; the model number is read from the
        platform as buffermgrdyn reads it, the four characters after the first "sn"."""
        name = f"pg_lossless_{self.speed_mbps}_{self.cable_length_m}m"
        if port_mtu != BUFFERMGRD_DEFAULT_MTU:
            name += f"_mtu{port_mtu}"
        at = platform.find("sn")
        digits = platform[at + 2:at + 6] if at >= 0 else ""
        family = int(digits) // 1000 if digits.isdigit() else 0
        full_speed = {4: 400_000, 5: 800_000}.get(family)
        if len(self.lanes) == 8 and full_speed is not None and self.speed_mbps != full_speed:
            name += "_8lane"
        return f"{name}_profile"


BUFFERMGRD_DEFAULT_MTU = 9100  # buffermgrdyn.h DEFAULT_MTU_STR: other port MTUs name the profile "_mtu<mtu>"


@dataclass(frozen=True)
class SonicLayout:
    """The switch, its SKU, its release and its ports."""

    view: SwitchView
    switch: SonicSwitch
    sku: Sku
    release: str
    facts: Mapping[str, Any]   # the release's facts (nos/sonic.yaml software.releases)
    ports: tuple[SonicPort, ...]
    dark: tuple[SkuPort, ...]  # the SKU's ports the plan cables nothing to, in cage order

    @property
    def device_type(self) -> str:
        return DEVICE_TYPE[self.view.tier]

    @property
    def topology(self) -> str:
        """The SKU's buffers_defaults_<t>.j2 the device type selects."""
        return self.sku.topology(self.device_type)

    @property
    def dynamic(self) -> bool:
        return self.view.qos is not None and self.view.qos.buffer_model == "dynamic"

    @property
    def subports(self) -> bool:
        """Whether PORT carries each broken-out port's subport: this SKU on this release runs independent module
        mode (its hwsku.json gives them)."""
        return self.release in self.sku.subport_releases

    def headroom(self, port: SonicPort, cable_m: float | None = None) -> Headroom:
        """What the release's buffer_headroom_mellanox.lua computes for the port (at ``cable_m`` metres, default
        its CABLE_LENGTH in whole metres): the dynamic model's headroom, the traditional model's comparison."""
        qos = self.view.qos
        shared = qos is not None and qos.over_subscribe_ratio > 0 and self.dynamic
        return _headroom(self.switch.asic.name, port.view.gbps, len(port.lanes),
                         port.cable_length_m if cable_m is None else cable_m, self.view.mtu, shared,
                         str(self.facts["headroom"]), float(self.facts["small_packet_percentage"]))


@functools.cache
def _headroom(asic: str, gbps: float, lanes: int, cable_m: float, mtu: int, shared: bool, formula: str,
              spp: float) -> Headroom:
    """Ports differ in few (speed, cable length) pairs: a large fabric computes each pair once."""
    return asic_headroom(asic, speed_gbps=gbps, lanes=lanes, cable_m=cable_m, port_mtu=mtu, formula=formula,
                         small_packet_percentage=spp, shared_headroom_pool=shared)


def sonic_switch(view: SwitchView) -> SonicSwitch:
    switch = catalog().switches.get(view.model.name)
    if switch is None:  # the build refuses nos: sonic on another model (nos/sonic.yaml switches.models)
        raise SonicLayoutError(f"{view.name}: fabricgen has no SONiC data for {view.model.name}")
    return switch


def _used_cages(view: SwitchView) -> dict[int, tuple[int, int, list[tuple[int, PortView]]]]:
    """cage -> (ports the plan splits it into, speed in Mb/s, [(position, port)])."""
    groups = {g.name: g for g in view.model.port_groups}
    cages: dict[int, tuple[int, int, list[tuple[int, PortView]]]] = {}
    for port in view.ports:
        cage_text, _, position = port.name.partition("/")
        cage = int(cage_text)
        group = view.model.cage_group(cage)
        per_cage = groups[group.name].per_cage(port.speed)
        speed = round(port.gbps * 1000)
        entry = cages.setdefault(cage, (per_cage, speed, []))
        if entry[:2] != (per_cage, speed):
            raise SonicLayoutError(f"{view.name}: cage {cage} carries ports at two speeds")
        entry[2].append((int(position or 1), port))
    return cages


def choose_sku(view: SwitchView) -> Sku:
    """The first SKU (in preference order) that fits every cage the switch uses (module doc)."""
    cages = _used_cages(view)
    candidates = skus().get(view.model.name, ())
    for sku in candidates:
        if all(sku.fits(cage, n, speed) for cage, (n, speed, _) in cages.items()):
            return sku
    wanted = sorted({(n, speed) for n, speed, _ in cages.values()})
    plan = " and ".join(f"{n} x {speed // 1000 if speed >= 1000 else speed}{'G' if speed >= 1000 else 'M'} a cage"
                        for n, speed in wanted)
    known = "; ".join(f"{s.hwsku} ({s.layout()})" for s in candidates) or "none"
    raise SonicLayoutError(f"{view.name}: no SONiC SKU of the {view.model.name} runs its ports as planned ({plan}); "
                        f"fabricgen's SKUs: {known}",
                        "run every cage of the switch at one breakout a SKU has (dynamic port breakout to mixed "
                        "layouts is not written by fabricgen)")


def sonic_layout(view: SwitchView) -> SonicLayout:
    """The switch in SONiC's terms, or SonicLayoutError saying why it cannot run as planned."""
    switch = sonic_switch(view)
    sku = choose_sku(view)
    release = view.release or DATA.default_release
    if release not in sku.releases:
        raise SonicLayoutError(f"{view.name}: {sku.hwsku} is not in SONiC {release}",
                               f"it ships in {', '.join(sku.releases)}")
    lossless_rows = view.qos is not None and view.qos.buffer_model == "traditional"
    ports = []
    for cage, (_, speed, used) in sorted(_used_cages(view).items()):
        for position, pv in sorted(used, key=lambda u: u[0]):
            row = None
            if lossless_rows:
                row = sku.lookup(speed, pv.cable_m)
                if row is None:
                    longest = sku.longest_cable(speed)
                    raise SonicLayoutError(
                        f"{view.name} {pv.name} to {pv.peer}: a {pv.cable_m:g} m cable at {pv.speed} is "
                        + (f"longer than the {longest} m {sku.hwsku}'s pg_profile_lookup.ini covers" if longest
                           else f"a speed {sku.hwsku}'s pg_profile_lookup.ini has no lossless profile for")
                        + ": buffermgrd would give the port no lossless headroom",
                        "buffer_model: dynamic computes headroom for any cable length")
            ports.append(SonicPort(pv, sku.ports[cage][position - 1], speed, max(1, math.ceil(pv.cable_m)), row))
    cabled = {p.name for p in ports}
    dark = tuple(p for rows in sku.ports.values() for p in rows if p.name not in cabled)
    return SonicLayout(view, switch, sku, release, DATA.release(release),
                       tuple(sorted(ports, key=lambda p: p.view.number)), dark)


def port_name(model: SwitchModel, name: str, per_cage: int) -> str:
    """SONiC's name of fabricgen port ``name`` (``<cage>/<n>``: the n-th port_config.ini row of index ``<cage>``)
    on a cage split into ``per_cage`` ports: the row of the first SKU (in preference order) that splits that cage
    so; a port name is the cage's first lane of the port, the same in every SKU of the model."""
    cage_text, _, position = name.partition("/")
    cage = int(cage_text)
    for sku in skus().get(model.name, ()):
        rows = sku.ports.get(cage, ())
        if len(rows) == per_cage:
            return rows[int(position or 1) - 1].name
    raise SonicLayoutError(f"no SONiC SKU of the {model.name} splits cage {cage} into {per_cage} ports")


def sonic_layouts(topology: Topology) -> list[tuple[SwitchView, SonicLayout | SonicLayoutError]]:
    """Every SONiC switch (``nos_switch_views`` order) with its layout or why it has none, computed once per
    topology: the SONiC check computes them before the render forks its workers, and config_db.json is written from
    them (0.22 s at 16k GPUs, computed again in a render worker before)."""
    return topology.shared(_sonic_layouts)


def _sonic_layouts(topology: Topology) -> list[tuple[SwitchView, SonicLayout | SonicLayoutError]]:
    found: list[tuple[SwitchView, SonicLayout | SonicLayoutError]] = []
    for view in nos_switch_views(topology, DATA.name):
        try:
            found.append((view, sonic_layout(view)))
        except SonicLayoutError as exc:
            found.append((view, exc.with_traceback(None)))  # the error kept, not its frames
    return found


def check(topology: Topology) -> Iterator[Finding]:
    """Every SONiC switch can run as planned (module doc): one finding per switch that cannot, at its fabric."""
    for view, layout in sonic_layouts(topology):
        if isinstance(layout, SonicLayoutError):
            yield fabric_error(view.fabric, "sonic-sku", view.name, str(layout).removeprefix(f"{view.name}: "),
                               layout.hint)


def port_setting(topology: Topology, switch: str, cage: int, name: str) -> PortSetting | None:
    """How config_db.json leaves port ``name`` of ``cage``: a cabled port up at its planned speed, a dark port
    down at its mode's speed (the module doc), each in its cage's BREAKOUT_CFG mode; a name the SKU does not run
    in that cage (the cage is in a coarser mode) has no PORT row, so it is down until the cage is broken out.
    None for a switch with no layout (no config_db.json is written for it)."""
    return topology.shared(_port_settings).get(switch, {}).get(name) or _absent(topology, switch, cage)


def _absent(topology: Topology, switch: str, cage: int) -> PortSetting | None:
    layout = topology.shared(_layouts_by_switch).get(switch)
    if layout is None:
        return None
    rows = layout.sku.ports.get(cage, ())
    return PortSetting("", rows[0].mode if rows else "", "down", unprovisioned=True)


def _layouts_by_switch(topology: Topology) -> dict[str, SonicLayout]:
    return {view.name: layout for view, layout in sonic_layouts(topology) if isinstance(layout, SonicLayout)}


def _port_settings(topology: Topology) -> dict[str, dict[str, PortSetting]]:
    """Every PORT row of every SONiC switch's config_db.json as a PortSetting, by switch and port name: the
    admin_status and speed config_db.py writes for a cabled and a dark port."""
    settings: dict[str, dict[str, PortSetting]] = {}
    for name, layout in topology.shared(_layouts_by_switch).items():
        ports = settings[name] = {}
        for port in layout.ports:
            ports[port.name] = PortSetting(speed_name(port.speed_mbps), port.sku_port.mode, "up",
                                           alias=port.sku_port.alias)
        for dark in layout.dark:
            ports[dark.name] = PortSetting(speed_name(dark.default_speed), dark.mode, "down", unprovisioned=True,
                                           alias=dark.alias)
    return settings


def speed_name(mbps: int) -> str:
    """A PORT speed (Mb/s) as the catalog names speeds: 400000 -> ``400G``, 1000 -> ``1G``, 100 -> ``100M``."""
    return f"{mbps // 1000}G" if mbps >= 1000 and mbps % 1000 == 0 else f"{mbps}M"
