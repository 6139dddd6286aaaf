"""PFC headroom: fabricgen.features.ethernet.nos.sonic.headroom reproduces both versions of sonic-swss
buffer_headroom_mellanox.lua that SONiC's releases run, step by step, and the shared headroom pool of
buffer_pool_mellanox.lua.

Expected values were derived by hand from the luas (headroom: 4957df86d on 202311, 3943093d4 on 202405 and later;
pool: 1469e8d2) with the ASIC constants of sonic-buildimage platform/mellanox/asic_table.j2 (4a9bf641). The newer
lua is also held against NVIDIA's own numbers: the SN5600's pg_profile_lookup.ini.

Why REFERENCE.md's worked example (Spectrum-3, 400G 8-lane, 5 m -> xoff 90,112 / size 138,240; 100 m -> xoff
149,504 / size 197,632, "occupancy 1.235") is NOT reproduced here: it is a summary, not the lua.
- The cell occupancy is not a constant: it is (100 - spp + spp x worst_case_factor) / 100 with
  worst_case_factor = cell / 64 = 2.25 on Spectrum-2/3, i.e. 1.625 at SONiC's default spp 50 and 2.25 at the
  config-DB example's spp 100. 1.235 matches no upstream parameter set (back-solving both xoffs needs an
  occupancy in (1.2586, 1.2672]).
- The lua's cable term is 2 x L x speed_Mbps x 1e9 / 1.98e8 / (8 x 1024), 1000/1024 of REFERENCE's
  2 x L x bps / 1.98e8 / 8; mac/phy is 0.8 KiB = 819.2 bytes, not 819.
- The 8-lane xon is 2 x pipeline - 1 KiB = 37,888 (not 2 x 19 KiB = 38,912), and the port MTU is added to the
  size of 8-lane ports only, before rounding to 1 KiB.
Even REFERENCE's own formula taken literally gives 88,064 / 147,456 (2 KiB below its stated xoffs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import pytest

from fabricgen.features.ethernet.nos import nos_data
from fabricgen.features.ethernet.nos.sonic.headroom import (
    PRIVATE_HEADROOM,
    SHP_WHEN_ZERO,
    Headroom,
    asic_headroom,
    catalog,
    headroom,
    shared_headroom_pool,
)
from fabricgen.features.ethernet.nos.sonic.skus import skus

OLD, NEW = "4957df86", "3943093d"  # the lua on 202311, and on 202405 and later


def _spc3(*, speed_gbps: float, lanes: int, cable_m: float, port_mtu: int = 9100, small_packet_percentage: float = 50,
          pause_quanta: Mapping[int, int] | None = None, gearbox_delay: float = 0,
          shared_headroom_pool: bool = False, formula: str = OLD) -> Headroom:
    """headroom() with Spectrum-3's constants spelled out (asic_table.j2: cell 144, 19 / 0.8 / 3.8 KiB)."""
    return headroom(speed_gbps=speed_gbps, lanes=lanes, cable_m=cable_m, port_mtu=port_mtu, lossless_mtu=1024,
                    small_packet_percentage=small_packet_percentage, cell_size=144, pipeline_latency_kb=19,
                    mac_phy_delay_kb=0.8, peer_response_time_kb=3.8,
                    pause_quanta=catalog().pause_quanta if pause_quanta is None else pause_quanta,
                    gearbox_delay=gearbox_delay, shared_headroom_pool=shared_headroom_pool, formula=formula)


def _asic(asic: str, *, speed_gbps: float, lanes: int, cable_m: float, small_packet_percentage: float = 50,
          formula: str = OLD, port_mtu: int = 9100, shared_headroom_pool: bool = False) -> Headroom:
    return asic_headroom(asic, speed_gbps=speed_gbps, lanes=lanes, cable_m=cable_m, port_mtu=port_mtu,
                         formula=formula, small_packet_percentage=small_packet_percentage,
                         shared_headroom_pool=shared_headroom_pool)


def _spc3_400g(cable_m: float, spp: float) -> Headroom:
    return _spc3(speed_gbps=400, lanes=8, cable_m=cable_m, small_packet_percentage=spp)


@pytest.mark.parametrize(("cable_m", "spp", "xoff", "size"), [
    (5, 50, 115_712, 162_816),     # SONiC's default LOSSLESS_TRAFFIC_PATTERN (buffers_config.j2): spp 50
    (100, 50, 191_488, 238_592),
    (5, 100, 159_744, 206_848),    # the configuration doc's example: spp 100
    (100, 100, 265_216, 312_320),
])
def test_spectrum3_400g_8lane_matches_the_lua(cable_m: float, spp: float, xoff: int, size: int) -> None:
    room = _spc3_400g(cable_m, spp)
    assert (room.xoff, room.xon, room.size) == (xoff, 37_888, size)
    assert room == _asic("spectrum-3", speed_gbps=400, lanes=8, cable_m=cable_m, small_packet_percentage=spp), \
        "catalog constants = asic_table.j2's"


def test_intermediate_values_of_the_lua() -> None:
    room = _spc3_400g(5, 50)
    assert room.speed_mbps == 400_000 and room.eight_lane
    assert room.pipeline_latency == 19 * 1024 * 2 - 1024 == 37_888
    assert room.speed_overhead == 9100, "8-lane ports add the port MTU to the size"
    assert room.worst_case_factor == 144 / 64 == 2.25
    assert room.cell_occupancy == 1.625
    assert room.pause_quanta == 905 and room.peer_response_time == 905 * 512 / 8 == 57_920
    assert room.mac_phy_delay == pytest.approx(819.2)
    assert room.bytes_on_cable == pytest.approx(2_466.0669, abs=1e-4)
    assert room.propagation_delay == pytest.approx(9100 + 2_466.0669 + 819.2 + 57_920, abs=1e-4)
    assert 1024 + room.propagation_delay * 1.625 == pytest.approx(115_270.06, abs=0.01)
    assert room.size == math.ceil((115_712 + 37_888 + 9100) / 1024) * 1024
    assert _spc3_400g(100, 50).bytes_on_cable == pytest.approx(49_321.3384, abs=1e-4)


def test_reference_example_is_not_the_lua() -> None:
    """REFERENCE.md's 90,112 / 149,504 (occupancy 1.235) come from neither upstream small-packet percentage."""
    for spp in (50, 100):
        assert _spc3_400g(5, spp).xoff != 90_112 and _spc3_400g(100, spp).xoff != 149_504
        assert _spc3_400g(5, spp).size != 138_240


def test_other_asics_and_speeds() -> None:
    spc4 = _asic("spectrum-4", speed_gbps=400, lanes=8, cable_m=5)
    assert spc4.cell_occupancy == 2.0 and (spc4.xoff, spc4.size) == (142_336, 189_440)
    spc3 = _asic("spectrum-3", speed_gbps=100, lanes=4, cable_m=5)
    assert spc3.peer_response_time == 394 * 64 == 25_216
    assert spc3.bytes_on_cable == pytest.approx(616.5167, abs=1e-4)
    assert (spc3.xoff, spc3.xon, spc3.size) == (59_392, 19_456, 78_848)
    assert not spc3.eight_lane and spc3.speed_overhead == 0, "4-lane ports: no 8-lane adjustment"
    spc1 = _asic("spectrum-1", speed_gbps=100, lanes=4, cable_m=5)
    assert spc1.worst_case_factor == pytest.approx(2 * 96 / 97), "cells <= 128 bytes: 2 x cell / (1 + cell)"


def test_sn5600_2x400g_is_not_an_8_lane_port() -> None:
    """2 x 400G per OSFP cage = 4 lanes per port: plain pipeline latency, no port MTU in the size."""
    room = _asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=15)
    assert not room.eight_lane and room.xon == 19_456
    assert room.size == room.xoff + room.xon


def test_speed_without_pause_quanta_falls_back_to_the_asic_peer_response_time() -> None:
    older_swss = {k: v for k, v in catalog().pause_quanta.items() if k != 800_000}  # swss ba1d1d30
    room = _spc3(speed_gbps=800, lanes=8, cable_m=5, pause_quanta=older_swss)
    assert room.pause_quanta is None and room.peer_response_time == pytest.approx(3.8 * 1024)
    assert _asic("spectrum-4", speed_gbps=800, lanes=8, cable_m=5).pause_quanta == 905


def test_shared_headroom_pool_and_gearbox() -> None:
    shared = _spc3(speed_gbps=400, lanes=8, cable_m=5, shared_headroom_pool=True)
    assert shared.size == shared.xon, "with a shared headroom pool the xoff lives in the pool"
    geared = _spc3(speed_gbps=100, lanes=4, cable_m=5, gearbox_delay=2.0)
    assert geared.bytes_on_gearbox == pytest.approx(100_000 * 2.0 / 8192)
    assert geared.xoff >= _asic("spectrum-3", speed_gbps=100, lanes=4, cable_m=5).xoff


# -- the shared headroom pool (buffer_pool_mellanox.lua) ---------------------------------------------------------
# Spectrum-4, 400G on 4 lanes, port MTU 9100, lossless MTU 1024, spp 50, the 202311 lua, by hand:
#   worst_case_factor = 192 / 64 = 3 (cell > 128), cell_occupancy = (100 - 50 + 50 x 3) / 100 = 2
#   peer_response_time = 905 x 512 / 8 = 57,920; mac_phy_delay = 0.8 x 1024 = 819.2
#   bytes_on_cable = 2 x L x 400,000 x 1e9 / 198,000,000 / 8192 = 493.2134 x L
#   xoff = ceil((1024 + 2 x (9100 + 493.2134 L + 819.2 + 57,920)) / 1024) x 1024 = ceil((136,702.4 + 986.4268 L) / 1024)
#   3 m: 139,661.68 -> 137 KiB = 140,288    7 m: 143,607.39 -> 141 KiB = 144,384
#  10 m: 146,566.67 -> 144 KiB = 147,456   15 m: 151,498.80 -> 148 KiB = 151,552
#   xon = 19 KiB = 19,456; with the pool size = xon, so each PG adds xon + xoff - size = its xoff to the pool.
SPC4_XOFF = {3: 140_288, 7: 144_384, 10: 147_456, 15: 151_552}


def _spc4_400g(cable_m: int, shared: bool = True) -> Headroom:
    return _asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=cable_m, shared_headroom_pool=shared)


def test_spectrum4_xoff_by_hand() -> None:
    for cable_m, xoff in SPC4_XOFF.items():
        room = _spc4_400g(cable_m)
        assert (room.xoff, room.xon, room.size) == (xoff, 19_456, 19_456), cable_m
        assert _spc4_400g(cable_m, shared=False).size == xoff + 19_456, "without the pool: xoff + xon"


def test_shared_headroom_pool_of_four_ports_by_hand() -> None:
    """One lossless PG on each of four ports (3, 7, 10, 15 m): sum of xoff 583,680, private headroom 4 x 10,240."""
    pgs = [_spc4_400g(m) for m in SPC4_XOFF]
    assert PRIVATE_HEADROOM == 10_240, "buffer_pool_mellanox.lua keeps 10 KiB per lossless port"
    two = shared_headroom_pool(pgs, 4, 2)
    assert (two.accumulative_xoff, two.private_headroom, two.lossless_pgs) == (583_680, 40_960, 4)
    assert two.size == (583_680 - 40_960) // 2 == 271_360
    assert shared_headroom_pool(pgs, 4, 3).size == 180_907, "542,720 / 3 = 180,906.67, rounded up (math.ceil)"
    assert shared_headroom_pool(pgs, 4, 1).size == 542_720


def test_shared_headroom_pool_as_the_swss_vs_test_checks_it() -> None:
    """sonic-swss tests/test_buffer_dynamic.py::test_sharedHeadroomPool: PGs 3-4 of one port, ratio 2 gives
    xoff - private_headroom / 2, ratio 4 gives (2 x xoff - private_headroom) / 4."""
    room = _spc4_400g(5)
    assert shared_headroom_pool([room, room], 1, 2).size == room.xoff - 10_240 // 2
    assert shared_headroom_pool([room, room], 1, 4).size == (2 * room.xoff - 10_240) // 4


def test_shared_headroom_pool_on_8_lane_ports_pools_the_xoff_only() -> None:
    """Spectrum-3 400G on 8 lanes: with the pool the size is xon alone (no port MTU), and the pool gets the xoff."""
    room = _spc3(speed_gbps=400, lanes=8, cable_m=5, shared_headroom_pool=True)
    assert (room.xoff, room.xon, room.size) == (115_712, 37_888, 37_888)
    assert shared_headroom_pool([room] * 2, 2, 2).size == (2 * 115_712 - 2 * 10_240) // 2 == 105_472
    unshared = _spc3(speed_gbps=400, lanes=8, cable_m=5)
    assert shared_headroom_pool([unshared], 1, 1).size == SHP_WHEN_ZERO, "size >= xon + xoff pools nothing"


def test_shared_headroom_pool_falls_back_when_nothing_is_pooled() -> None:
    """The lua's floor: private headroom eats all the xoff (clamped at 0), so the pool is 655,360 bytes."""
    small = dataclasses.replace(_spc4_400g(3), xoff=8192)
    pool = shared_headroom_pool([small, small], 2, 2)
    assert (pool.accumulative_xoff, pool.size) == (16_384, 655_360)


@pytest.mark.parametrize(("ports", "ratio"), [(1, 0), (3, 2), (0, 2)])
def test_shared_headroom_pool_refuses_bad_inputs(ports: int, ratio: int) -> None:
    with pytest.raises(ValueError):
        shared_headroom_pool([_spc4_400g(3), _spc4_400g(7)], ports, ratio)


def test_headroom_grows_with_cable_length() -> None:
    for formula in (OLD, NEW):
        sizes = [_asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=m, formula=formula).xoff for m in range(0, 300)]
        assert sizes == sorted(sizes) and sizes[-1] > sizes[0]


@pytest.mark.parametrize("bad", [{"speed_gbps": 0}, {"lanes": 0}, {"cable_m": -1}, {"small_packet_percentage": 101}])
def test_bad_inputs_are_refused(bad: dict[str, float]) -> None:
    args: dict[str, float] = {"speed_gbps": 400, "lanes": 4, "cable_m": 5, "port_mtu": 9100,
                              "small_packet_percentage": 50} | bad
    with pytest.raises(ValueError):
        _spc3(speed_gbps=args["speed_gbps"], lanes=int(args["lanes"]), cable_m=args["cable_m"],
              port_mtu=int(args["port_mtu"]), small_packet_percentage=args["small_packet_percentage"])


# -- the lua of 202405 and later (3943093d) ---------------------------------------------------------------------------
# Spectrum-4, 400G on 4 lanes, port MTU 9100, lossless MTU 1024, by hand from the lua (module doc of headroom.py):
#   worst_case_factor = ceil(192 / 64) = 3
#   spp 50 by byte = 100 x 64 / ((50 x 64 + 50 x 1024) / 100) = 6400 / 544 = 11.7647; occupancy = 1.235294
#   spp 100 by byte = 100; occupancy = 3
#   kb_on_tile = 400 x 120 / 8 = 6,000 (Spectrum-4); bytes_on_cable = 2 x L x 400,000 x 1e9 / 1.98e8 / 8000
#   15 m: cable 7,575.7576; propagation = 9100 + 7,575.7576 + 819.2 + 57,920 + 6,000 = 81,414.9576
#     spp 50:  1024 + 81,414.9576 x 1.235294 = 101,594.94 -> 100 KiB = 102,400
#     spp 100: 1024 + 81,414.9576 x 3       = 245,268.87 -> 240 KiB = 245,760
def test_new_lua_by_hand() -> None:
    spp50 = _asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=15, formula=NEW, small_packet_percentage=50)
    assert spp50.worst_case_factor == 3 and spp50.kb_on_tile == 6000
    assert spp50.small_packet_percentage_by_byte == pytest.approx(6400 / 544)
    assert spp50.bytes_on_cable == pytest.approx(7_575.7576, abs=1e-4)
    assert spp50.propagation_delay == pytest.approx(81_414.9576, abs=1e-4)
    assert (spp50.xoff, spp50.xon, spp50.size) == (102_400, 19_456, 121_856)
    spp100 = _asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=15, formula=NEW, small_packet_percentage=100)
    assert spp100.cell_occupancy == 3 and spp100.xoff == 245_760
    old = _asic("spectrum-4", speed_gbps=400, lanes=4, cable_m=15)
    assert old.xoff == 151_552 and old.kb_on_tile == 0 and old.worst_case_factor == 3.0


def test_new_lua_8_lane_xon_has_no_rebate_and_tile_only_on_spectrum_4_and_5() -> None:
    eight = _asic("spectrum-3", speed_gbps=400, lanes=8, cable_m=5, formula=NEW)
    assert eight.xon == 2 * 19 * 1024 == 38_912 and eight.kb_on_tile == 0, "Spectrum-3: no kb_on_tile"
    assert _asic("spectrum-3", speed_gbps=400, lanes=8, cable_m=5).xon == 37_888
    assert _asic("spectrum-1", speed_gbps=100, lanes=4, cable_m=5, formula=NEW).worst_case_factor == 2, \
        "ceil(2 x 96 / 97)"
    assert catalog().asics["spectrum-5"].spectrum_4_or_5 and not catalog().asics["spectrum-6"].spectrum_4_or_5


# The SN5600's pg_profile_lookup.ini (sonic-buildimage device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/,
# the table Mellanox-SN5600-O128 links to; skus/Mellanox-SN5600-O128.yaml) is the new lua's result at
# small-packet percentage 100 and port MTU 9216, 4 lanes below 800G, except three rows NVIDIA wrote otherwise:
# 40G 5m has size 75,776 < xon + xoff 76,800, and the 800G (8-lane) rows add 8 KiB, not the port MTU, to the size.
NVIDIA_OTHERWISE = {"40000 5m 75776 19456 57344 0": (19_456, 57_344, 76_800),
                    "800000 5m 304128 38912 257024 0": (38_912, 257_024, 305_152),
                    "800000 300m 1198080 38912 1150976 0": (38_912, 1_150_976, 1_199_104)}


def test_new_lua_reproduces_nvidias_sn5600_table() -> None:
    sku = next(s for s in skus()["SN5600"] if s.hwsku == "Mellanox-SN5600-O128")
    assert len(sku.lookup_rows) == 24
    for row in sku.lookup_rows:
        room = _asic("spectrum-4", speed_gbps=row.speed / 1000, lanes=8 if row.speed == 800_000 else 4,
                     cable_m=int(row.cable[:-1]), port_mtu=9216, formula=NEW, small_packet_percentage=100)
        assert (room.xon, room.xoff, room.size) == NVIDIA_OTHERWISE.get(row.text, (row.xon, row.xoff, row.size)), \
            row.text
    # the example: the table's 40m row NVIDIA ships for a 15 m cable holds more than the lua needs at 15 m
    assert sku.lookup(400_000, 15) is not None and sku.lookup(400_000, 15).xoff == 283_648 > 245_760  # type: ignore[union-attr]


# -- the catalog ------------------------------------------------------------------------------------------------
def test_switch_models_map_to_their_asics() -> None:
    cat = catalog()
    assert {m: s.asic.name for m, s in cat.switches.items()} == {
        "SN5600": "spectrum-4", "SN4700": "spectrum-3", "SN4600": "spectrum-3", "SN2201": "spectrum-1"}
    assert cat.switches["SN5600"].platform == "x86_64-nvidia_sn5600-r0"
    # platform/mellanox/asic_table.j2: 'x86_64-mlnx_msn4600-r0':'MELLANOX-SPECTRUM-3'
    assert (cat.switches["SN4600"].platform, cat.switches["SN4600"].asic.asic_table) == (
        "x86_64-mlnx_msn4600-r0", "MELLANOX-SPECTRUM-3")
    assert cat.lossless_mtu == 1024


def test_sonic_models_are_the_models_with_skus() -> None:
    """nos/sonic.yaml's switches.models (the build's vendor check), asics.yaml's models and the SKU files agree."""
    assert set(nos_data("sonic").models) == set(catalog().switches) == set(skus())
    for model, found in skus().items():
        assert {s.platform for s in found} == {catalog().switches[model].platform}, model
