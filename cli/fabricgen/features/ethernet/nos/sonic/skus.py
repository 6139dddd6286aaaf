"""NVIDIA's SONiC SKUs as data (``skus/<hwsku>.yaml``, read from sonic-buildimage with their sources): each SKU's
port layout, buffer pools and profiles per topology, and its traditional-model lossless table.

A switch runs the SKU whose port layout fits the ports the plan gives it: in every cage it uses, the SKU has as
many ports as the plan splits the cage into, each able to run the planned speed (port_config.ini's speed or one
of hwsku.json's breakout speeds). Its PORT rows (names, lanes, aliases) are then the SKU's own, and its buffers
the SKU's, as sonic-cfggen would write them for that hwsku.

Every SKU here sits on a platform with a platform.json, so SONiC builds its ports from platform.json and
hwsku.json, and each cage runs hwsku.json's default breakout mode, spelled as platform.json spells it (the SKU
file's ``ports`` column): the cage's BREAKOUT_CFG mode, the one dynamic port breakout starts from.

The traditional model's lossless profiles come from the SKU's pg_profile_lookup.ini: buffermgrd looks the profile
up by port speed and CABLE_LENGTH and finds nothing for a length the table lacks ("No PG profile configured for
speed ... and cable length ..."), so a port's CABLE_LENGTH is its cable's length rounded up to the next length
the table has for that speed (:meth:`Sku.lookup`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fabricgen.core.yamldata import safe_load as safe_yaml

SKU_DIR = Path(__file__).with_name("skus")
TOPOLOGIES = ("t0", "t1", "t2")  # DEVICE_METADATA type ToRRouter, LeafRouter, SpineRouter (buffers_config.j2)
_MODE = re.compile(r"^(\d+)x(\d+G?)(?:\(\d+\))?(?:\[([^\]]*)\])?$")

# NVIDIA's templates give every active port these, for SONiC's default lossless priorities 3 and 4
VENDOR_LOSSY_PG, VENDOR_LOSSLESS_QUEUES, VENDOR_LOSSY_QUEUES = "0", "3-4", "0-2"


def _mbps(text: str) -> int:
    """A breakout-mode speed: "400G" -> 400000, "1000" (no unit: Mb/s) -> 1000."""
    return int(text[:-1]) * 1000 if text.endswith("G") else int(text)


@dataclass(frozen=True)
class SkuPort:
    """One port_config.ini row, with the speeds hwsku.json lets it run."""

    name: str
    lanes: str        # "0,1,2,3", as port_config.ini writes them
    alias: str
    cage: int         # port_config.ini index: the front-panel cage
    position: int     # 1-based position in its cage
    cage_ports: int   # ports of its cage in this SKU
    speeds: frozenset[int]  # Mb/s
    mode: str         # its cage's breakout mode, "2x200G[100G,50G,40G,25G,10G,1G]"
    default_speed: int  # the mode's speed, Mb/s: what the port runs unless told otherwise

    @property
    def lane_count(self) -> int:
        return len(self.lanes.split(","))


@dataclass(frozen=True)
class PortBuffers:
    """What the SKU's templates give every active port: the profiles of its lossy PG, its lossless and lossy
    queues (BUFFER_QUEUE 3-4 and 0-2 upstream) and its ingress and egress profile lists."""

    lossy_pg: str
    lossless_queue: str
    lossy_queue: str
    ingress_profiles: str
    egress_profiles: str


@dataclass(frozen=True)
class InactiveBuffers:
    """What NVIDIA's traditional templates give a port without a neighbour: the zero pool and profiles, and per
    port its PG, queue and profile-list entries (table -> key suffix after ``<port>|`` -> fields; "" for the
    profile lists, keyed by the port alone)."""

    pools: Mapping[str, Mapping[str, str]]
    profiles: Mapping[str, Mapping[str, str]]
    port: Mapping[str, Mapping[str, Mapping[str, str]]]


@dataclass(frozen=True)
class LookupRow:
    """One pg_profile_lookup.ini row: the lossless profile buffermgrd builds for a speed and cable length."""

    speed: int
    cable: str        # "40m"
    size: int
    xon: int
    xoff: int
    threshold: str
    text: str         # the row as the file has it


@dataclass(frozen=True)
class Sku:
    hwsku: str
    model: str
    platform: str
    preference: int
    releases: tuple[str, ...]
    subport_releases: tuple[str, ...]
    ports: Mapping[int, tuple[SkuPort, ...]]            # cage -> its ports in order
    profiles: Mapping[str, Mapping[str, str]]           # BUFFER_PROFILE entries (lossy and port-level)
    pools: Mapping[str, Mapping[str, Mapping[str, str]]]  # traditional BUFFER_POOL per topology (t0, t1, t2)
    default_cable: Mapping[str, str]                    # per topology
    port_buffers: Mapping[str, PortBuffers]             # "traditional" / "dynamic" -> what every port gets
    dynamic_pools: Mapping[str, Mapping[str, str]]
    lookup_rows: tuple[LookupRow, ...]
    source: str                                         # the SKU directory upstream
    inactive: InactiveBuffers                           # traditional model, a port without a neighbour

    def fits(self, cage: int, cage_ports: int, speed_mbps: int) -> bool:
        """Whether this SKU splits ``cage`` into ``cage_ports`` ports that run ``speed_mbps``."""
        rows = self.ports.get(cage, ())
        return len(rows) == cage_ports and all(speed_mbps in p.speeds for p in rows)

    def layout(self) -> str:
        """The SKU's port layout in words, for messages: "2 x 400G a cage"."""
        counts = sorted({(len(rows), max(max(p.speeds) for p in rows)) for rows in self.ports.values()})
        return ", ".join(f"{n} x {s // 1000}G a cage" for n, s in counts)

    def topology(self, tier_type: str) -> str:
        """The buffers_defaults_<t>.j2 the switch's DEVICE_METADATA type selects; a SKU without a t2 file gives
        its cores (SpineRouter) the t1 pools, the closest NVIDIA ships (see README)."""
        wanted = {"ToRRouter": "t0", "LeafRouter": "t1", "SpineRouter": "t2"}[tier_type]
        return wanted if wanted in self.pools else "t1"

    def lookup(self, speed_mbps: int, cable_m: float) -> LookupRow | None:
        """The table row buffermgrd uses for a port: the speed's shortest listed cable length that is at least
        ``cable_m`` (None when the table has no such row)."""
        rows = sorted((r for r in self.lookup_rows if r.speed == speed_mbps), key=lambda r: int(r.cable[:-1]))
        return next((r for r in rows if int(r.cable[:-1]) >= cable_m), None)

    def longest_cable(self, speed_mbps: int) -> int:
        """The longest cable length the table lists for a speed (0 when it lists the speed not at all)."""
        return max((int(r.cable[:-1]) for r in self.lookup_rows if r.speed == speed_mbps), default=0)


def _lookup(text: str) -> tuple[LookupRow, ...]:
    rows = []
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        speed, cable, size, xon, xoff, threshold = words[:6]
        rows.append(LookupRow(int(speed), cable, int(size), int(xon), int(xoff), threshold, " ".join(words)))
    return tuple(rows)


def _ports(raw: list[list[Any]]) -> Mapping[int, tuple[SkuPort, ...]]:
    by_cage: dict[int, list[list[Any]]] = {}
    for row in raw:
        by_cage.setdefault(int(row[3]), []).append(row)
    out = {}
    for cage, rows in sorted(by_cage.items()):
        ports = []
        for position, (name, lanes, alias, _, speed, mode) in enumerate(rows, start=1):
            m = _MODE.fullmatch(str(mode))
            if m is None:
                raise ValueError(f"breakout mode {mode!r} of {name}")
            default = _mbps(m.group(2))
            speeds = {default, *(_mbps(s) for s in filter(None, (m.group(3) or "").split(",")))}
            if speed:
                speeds.add(int(speed))
            ports.append(SkuPort(str(name), str(lanes), str(alias), cage, position, len(rows), frozenset(speeds),
                                 str(mode), default))
        out[cage] = tuple(ports)
    return MappingProxyType(out)


def _port_buffers(tables: Mapping[str, Any]) -> PortBuffers:
    return PortBuffers(str(tables["BUFFER_PG"][VENDOR_LOSSY_PG]["profile"]),
                       str(tables["BUFFER_QUEUE"][VENDOR_LOSSLESS_QUEUES]["profile"]),
                       str(tables["BUFFER_QUEUE"][VENDOR_LOSSY_QUEUES]["profile"]),
                       str(tables["BUFFER_PORT_INGRESS_PROFILE_LIST"]["profile_list"]),
                       str(tables["BUFFER_PORT_EGRESS_PROFILE_LIST"]["profile_list"]))


def _mappings(raw: Mapping[str, Any]) -> Mapping[str, Mapping[str, str]]:
    """A table of the SKU file (name -> fields) as read-only mappings."""
    return MappingProxyType({k: MappingProxyType({f: str(v) for f, v in fields.items()}) for k, fields in raw.items()})


def _inactive(raw: Mapping[str, Any]) -> InactiveBuffers:
    port: dict[str, Mapping[str, Mapping[str, str]]] = {}
    for table, entries in raw["port"].items():
        port[table] = (_mappings(entries) if table in ("BUFFER_PG", "BUFFER_QUEUE")
                       else MappingProxyType({"": MappingProxyType(dict(entries))}))
    return InactiveBuffers(_mappings(raw["BUFFER_POOL"]), _mappings(raw["BUFFER_PROFILE"]), MappingProxyType(port))


def _sku(path: Path) -> Sku:
    raw = safe_yaml(path.read_text(encoding="utf-8"))
    try:
        trad = raw["traditional"]
        pools = {t: _mappings(trad[t]["BUFFER_POOL"]) for t in TOPOLOGIES if t in trad}
        source = raw["files"]["port_config.ini"][-1]["path"].rsplit("/", 1)[0]
        return Sku(str(raw["hwsku"]), str(raw["model"]), str(raw["platform"]), int(raw["preference"]),
                   tuple(map(str, raw["releases"])), tuple(map(str, raw["subport_releases"])), _ports(raw["ports"]),
                   _mappings(raw["buffer_profiles"]),
                   MappingProxyType(pools), MappingProxyType({t: str(trad[t]["cable"]) for t in pools}),
                   MappingProxyType({"traditional": _port_buffers(trad["port"]),
                                     "dynamic": _port_buffers(raw["dynamic"]["port"])}),
                   _mappings(raw["dynamic"]["BUFFER_POOL"]),
                   _lookup(raw["pg_profile_lookup"]), source, _inactive(trad["inactive"]))
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ValueError(f"{path}: malformed SKU data ({exc!r})") from exc


@cache
def skus() -> Mapping[str, tuple[Sku, ...]]:
    """Every shipped SKU by switch model, in preference order."""
    by_model: dict[str, list[Sku]] = {}
    for path in sorted(SKU_DIR.glob("*.yaml")):
        sku = _sku(path)
        by_model.setdefault(sku.model, []).append(sku)
    return MappingProxyType({m: tuple(sorted(s, key=lambda k: (k.preference, k.hwsku))) for m, s in by_model.items()})
