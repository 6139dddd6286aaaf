"""PFC headroom of a lossless priority group, computed exactly as SONiC computes it on NVIDIA Spectrum switches.

Port of sonic-swss ``cfgmgr/buffer_headroom_mellanox.lua`` in the two versions SONiC's releases run (which one a
release runs is ../../sonic.yaml ``software.releases.<release>.headroom``), same inputs, same order of
floating-point operations, same rounding:

``4957df86`` (the lua as of sonic-swss 4957df86d, 2023-08-15; 202311):

1. An 8-lane port (exactly 8 SerDes lanes, e.g. 400G on 8 x 50G or 800G on 8 x 100G): pipeline latency =
   2 x pipeline - 1 KiB, and the port MTU is added to the size (``speed_overhead``).
2. worst_case_factor = cell / 64 when cell > 128 bytes, else 2 x cell / (1 + cell).
3. cell_occupancy = (100 - spp + spp x worst_case_factor) / 100, spp = small-packet percentage.
4. bytes_on_gearbox = speed_Mbps x gearbox_delay / 8192 (0 without a gearbox).
5. peer_response_time = pause_quanta(speed) x 512 / 8 bytes; the ASIC's peer_response_time when the speed has
   no pause-quanta entry.
6. bytes_on_cable = 2 x L x speed_Mbps x 1e9 / 198,000,000 / 8192 (the lua's units: this is 1000/1024 of the
   bytes really in flight, reproduced as is).
7. propagation_delay = port_mtu + bytes_on_cable + 2 x bytes_on_gearbox + mac_phy_delay + peer_response_time.
8. xoff = ceil((lossless_mtu + propagation_delay x cell_occupancy) / 1024) x 1024.
9. xon = ceil(pipeline_latency / 1024) x 1024.
10. size = xon with a shared headroom pool, else xoff + xon + speed_overhead; rounded up to 1 KiB.

``3943093d`` ("[Mellanox] Update headroom calculation algorithm", sonic-swss #3235, 3943093d4, 2024-09-11; on
202405 as the cherry-pick e99f5a914, and 202411 onwards) changes, for every Spectrum:

- step 1: the 8-lane pipeline latency is 2 x pipeline (no 1 KiB rebate);
- step 2: worst_case_factor is rounded up to an integer (3 on Spectrum-2..5, 2 on Spectrum-1);
- step 3: the small-packet share is counted in bytes, not packets: spp_by_byte = 100 x 64 / ((spp x 64 +
  (100 - spp) x lossless_mtu) / 100), and cell_occupancy = (100 - spp_by_byte + spp_by_byte x wcf) / 100;
- step 6: bytes_on_cable divides by 8 x 1000 (real bytes);
- step 7: Spectrum-4 and -5 (the ASIC_TABLE key ends in 4 or 5) add kb_on_tile = speed_Mbps / 1000 x 120 / 8.

Checked against NVIDIA's own numbers: the SN5600's pg_profile_lookup.ini (traditional model) rows are this lua's
``3943093d`` result at small-packet percentage 100 and port MTU 9216 (tests/unit/features/ethernet/test_headroom).

Shared headroom pool (:func:`shared_headroom_pool`), ported from sonic-swss ``cfgmgr/buffer_pool_mellanox.lua``
(read at commit 1469e8d2; same steps in the swss VS test ``tests/test_buffer_dynamic.py::test_sharedHeadroomPool``):

1. accumulative_xoff = sum over the lossless PGs of (xon + xoff - size) where that is positive: with the pool
   on, size = xon (step 10), so each PG adds its xoff.
2. private headroom: 10 KiB per port that has a lossless PG (``private_headroom = 10 * 1024``), kept per port
   and subtracted from the pooled xoff (not below 0).
3. shared headroom pool = ceil(accumulative_xoff / over_subscribe_ratio); 655,360 bytes when that comes out 0.

The lua then adds the pool and the private headroom to the occupied buffer, so the shared pools shrink by them:
buffermgrd does that in the dynamic model.

The ASIC constants (cell size, pipeline latency, mac/phy delay, peer response time) and the pause quanta per
speed are data: ``asics.yaml``, with sources. SONiC runs the lua only in the dynamic buffer model, where these
numbers predict what buffermgrd computes from the same inputs (pfc-headroom.csv); the traditional model takes
each SKU's pg_profile_lookup.ini instead (``skus/``), and the lua only shows what the plan's real cable length
would need.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from fabricgen.core.yamldata import safe_load as safe_yaml

SPEED_OF_LIGHT = 198_000_000  # m/s in the cable, the lua's constant
MINIMAL_PACKET_SIZE = 64      # bytes
PRIVATE_HEADROOM = 10 * 1024  # buffer_pool_mellanox.lua private_headroom: per port with a lossless PG
SHP_WHEN_ZERO = 655_360       # buffer_pool_mellanox.lua: the pool size it uses when the ratio gives 0
FORMULAS = ("4957df86", "3943093d")  # the lua versions (module doc)


@dataclass(frozen=True)
class Asic:
    """The per-ASIC constants SONiC keeps in STATE_DB ASIC_TABLE (delays in KiB, as there)."""

    name: str
    cell_size: int
    pipeline_latency_kb: float
    mac_phy_delay_kb: float
    peer_response_time_kb: float
    asic_table: str

    @property
    def spectrum_4_or_5(self) -> bool:
        """The 3943093d lua's kb_on_tile test: the ASIC_TABLE key's last character is 4 or 5."""
        return self.asic_table[-1:] in ("4", "5")


@dataclass(frozen=True)
class SonicSwitch:
    """A switch model SONiC runs on: its ASIC and platform (its port layouts and buffers are its SKUs')."""

    model: str
    asic: Asic
    platform: str


@dataclass(frozen=True)
class Catalog:
    asics: Mapping[str, Asic]
    pause_quanta: Mapping[int, int]   # port speed in Mb/s -> IEEE 802.3 pause quanta
    lossless_mtu: int
    switches: Mapping[str, SonicSwitch]


def _asic(name: str, raw: Mapping[str, Any]) -> Asic:
    return Asic(name, int(raw["cell_size"]), float(raw["pipeline_latency_kb"]), float(raw["mac_phy_delay_kb"]),
                float(raw["peer_response_time_kb"]), str(raw["asic_table"]))


@cache
def catalog() -> Catalog:
    """The shipped ASIC catalog (asics.yaml)."""
    path = Path(__file__).with_name("asics.yaml")
    raw = safe_yaml(path.read_text(encoding="utf-8"))
    try:
        asics = {name: _asic(name, entry) for name, entry in raw["asics"].items()}
        switches = {model: SonicSwitch(model, asics[entry["asic"]], str(entry["platform"]))
                    for model, entry in raw["sonic_switches"].items()}
        return Catalog(asics, {int(k): int(v) for k, v in raw["pause_quanta"].items()},
                       int(raw["lossless_traffic_pattern"]["mtu"]), switches)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed ASIC catalog ({exc!r})") from exc


@dataclass(frozen=True)
class Headroom:
    """Every input, intermediate value and result of one headroom computation (bytes unless named otherwise)."""

    # inputs
    speed_mbps: int
    lanes: int
    cable_m: float
    port_mtu: int
    lossless_mtu: int
    small_packet_percentage: float
    cell_size: int
    pipeline_latency_kb: float
    mac_phy_delay_kb: float
    peer_response_time_kb: float
    gearbox_delay: float
    shared_headroom_pool: bool
    formula: str
    # intermediates
    eight_lane: bool
    pipeline_latency: float
    speed_overhead: int
    worst_case_factor: float
    small_packet_percentage_by_byte: float
    cell_occupancy: float
    pause_quanta: int | None
    peer_response_time: float
    mac_phy_delay: float
    bytes_on_cable: float
    bytes_on_gearbox: float
    kb_on_tile: float
    propagation_delay: float
    # results
    xoff: int
    xon: int
    size: int


def _round_up_kib(value: float) -> int:
    return math.ceil(value / 1024) * 1024


def headroom(
    *,
    speed_gbps: float,
    lanes: int,
    cable_m: float,
    port_mtu: int,
    cell_size: int,
    pipeline_latency_kb: float,
    mac_phy_delay_kb: float,
    peer_response_time_kb: float,
    pause_quanta: Mapping[int, int],
    formula: str,
    lossless_mtu: int = 1024,
    small_packet_percentage: float = 50,
    gearbox_delay: float = 0,
    shared_headroom_pool: bool = False,
    spectrum_4_or_5: bool = False,
) -> Headroom:
    """xoff, xon and size of a lossless PG as the ``formula`` version of buffer_headroom_mellanox.lua computes them
    (see the module doc). ``cable_m`` is what the lua reads from CABLE_LENGTH ("5m" -> 5): pass the number written
    there; ``spectrum_4_or_5``: the ASIC_TABLE key ends in 4 or 5 (kb_on_tile, 3943093d only)."""
    if formula not in FORMULAS:
        raise ValueError(f"no buffer_headroom_mellanox.lua version {formula!r}: {', '.join(FORMULAS)}")
    if speed_gbps <= 0 or lanes < 1 or cable_m < 0 or port_mtu <= 0 or lossless_mtu <= 0:
        raise ValueError(f"headroom inputs out of range: speed {speed_gbps} Gb/s, {lanes} lanes, cable {cable_m} m, "
                         f"port MTU {port_mtu}, lossless MTU {lossless_mtu}")
    if not 0 <= small_packet_percentage <= 100:
        raise ValueError(f"small-packet percentage {small_packet_percentage} is not within 0..100")
    v2024 = formula == "3943093d"
    speed = round(speed_gbps * 1000)  # the lua's port_speed: PORT.speed in Mb/s
    pipeline_latency = pipeline_latency_kb * 1024
    mac_phy_delay = mac_phy_delay_kb * 1024
    eight_lane = lanes == 8
    if eight_lane:
        pipeline_latency = pipeline_latency * 2 if v2024 else pipeline_latency * 2 - 1024
        speed_overhead = port_mtu
    else:
        speed_overhead = 0
    if cell_size > 2 * MINIMAL_PACKET_SIZE:
        worst_case_factor = cell_size / MINIMAL_PACKET_SIZE
    else:
        worst_case_factor = (2 * cell_size) / (1 + cell_size)
    if v2024:
        worst_case_factor = math.ceil(worst_case_factor)
        by_byte = 100 * MINIMAL_PACKET_SIZE / ((small_packet_percentage * MINIMAL_PACKET_SIZE
                                                + (100 - small_packet_percentage) * lossless_mtu) / 100)
    else:
        by_byte = small_packet_percentage
    cell_occupancy = (100 - by_byte + by_byte * worst_case_factor) / 100
    bytes_on_gearbox = 0.0 if gearbox_delay == 0 else speed * gearbox_delay / (8 * 1024)
    quanta = pause_quanta.get(speed)
    peer_response_time = quanta * 512 / 8 if quanta is not None else peer_response_time_kb * 1024
    bytes_on_cable = 2.0 * cable_m * speed * 1_000_000_000.0 / SPEED_OF_LIGHT / (8 * (1000 if v2024 else 1024))
    kb_on_tile = speed / 1000 * 120 / 8 if v2024 and spectrum_4_or_5 else 0
    propagation_delay = (port_mtu + bytes_on_cable + 2 * bytes_on_gearbox + mac_phy_delay + peer_response_time
                         + kb_on_tile)
    xoff = _round_up_kib(lossless_mtu + propagation_delay * cell_occupancy)
    xon = _round_up_kib(pipeline_latency)
    size = _round_up_kib(xon if shared_headroom_pool else xoff + xon + speed_overhead)
    return Headroom(speed, lanes, cable_m, port_mtu, lossless_mtu, small_packet_percentage, cell_size,
                    pipeline_latency_kb, mac_phy_delay_kb, peer_response_time_kb, gearbox_delay,
                    shared_headroom_pool, formula, eight_lane, pipeline_latency, speed_overhead, worst_case_factor,
                    by_byte, cell_occupancy, quanta, peer_response_time, mac_phy_delay, bytes_on_cable,
                    bytes_on_gearbox, kb_on_tile, propagation_delay, xoff, xon, size)


def asic_headroom(
    asic: Asic | str,
    *,
    speed_gbps: float,
    lanes: int,
    cable_m: float,
    port_mtu: int,
    formula: str,
    small_packet_percentage: float,
    lossless_mtu: int | None = None,
    shared_headroom_pool: bool = False,
) -> Headroom:
    """:func:`headroom` with the ASIC constants, pause quanta and lossless MTU from the catalog; the release decides
    ``formula`` and the small-packet percentage (LOSSLESS_TRAFFIC_PATTERN)."""
    cat = catalog()
    a = cat.asics[asic] if isinstance(asic, str) else asic
    return headroom(speed_gbps=speed_gbps, lanes=lanes, cable_m=cable_m, port_mtu=port_mtu, cell_size=a.cell_size,
                    pipeline_latency_kb=a.pipeline_latency_kb, mac_phy_delay_kb=a.mac_phy_delay_kb,
                    peer_response_time_kb=a.peer_response_time_kb, pause_quanta=cat.pause_quanta, formula=formula,
                    lossless_mtu=cat.lossless_mtu if lossless_mtu is None else lossless_mtu,
                    small_packet_percentage=small_packet_percentage, shared_headroom_pool=shared_headroom_pool,
                    spectrum_4_or_5=a.spectrum_4_or_5)


@dataclass(frozen=True)
class SharedHeadroomPool:
    """The shared headroom pool of one switch (BUFFER_POOL ingress_lossless_pool xoff), with its inputs (bytes)."""

    over_subscribe_ratio: int
    lossless_pgs: int
    lossless_ports: int
    accumulative_xoff: int   # sum of (xon + xoff - size) over the lossless PGs, private headroom not yet taken
    private_headroom: int    # lossless_ports x PRIVATE_HEADROOM
    size: int


def shared_headroom_pool(pgs: Sequence[Headroom], lossless_ports: int, over_subscribe_ratio: int
                         ) -> SharedHeadroomPool:
    """The shared headroom pool as buffer_pool_mellanox.lua sizes it (see the module doc).

    ``pgs`` holds one headroom per lossless PG (a port with PGs 3-4 counts twice), computed with the pool on
    (size = xon); ``lossless_ports`` counts the ports carrying them, each keeping its private headroom.
    """
    if over_subscribe_ratio < 1:
        raise ValueError(f"over_subscribe_ratio {over_subscribe_ratio} must be at least 1 (0 means no pool)")
    if lossless_ports < (1 if pgs else 0) or lossless_ports > len(pgs):
        raise ValueError(f"{lossless_ports} lossless ports cannot carry {len(pgs)} lossless PGs")
    accumulative = sum(max(0, pg.xon + pg.xoff - pg.size) for pg in pgs)
    private = lossless_ports * PRIVATE_HEADROOM
    pooled = max(0, accumulative - private)
    size = -(-pooled // over_subscribe_ratio) or SHP_WHEN_ZERO  # integer ceil: the lua's math.ceil(a / b)
    return SharedHeadroomPool(over_subscribe_ratio, len(pgs), lossless_ports, accumulative, private, size)
