"""pfc-headroom.csv: the lossless headroom of every port of a SONiC switch, with what it comes from, so an engineer
can audit it and check the switch against it (``show buffer information``, ``show pg ...``).

Traditional model: the SKU's pg_profile_lookup.ini row buffermgrd uses (the port's cable rounded up to the table's
next length: ``plan_cable_m`` is the real one, ``cable_length`` what CABLE_LENGTH says) and its values exactly as
written to BUFFER_PROFILE, the SKU's shared headroom pool where it has one, and for comparison what the release's
dynamic-model lua would reserve for the real cable. Dynamic model: every input, intermediate and result of the
release's lua (``predicted_*``: buffermgrd computes them, this predicts them) and, with a shared headroom pool,
the switch's pool and its inputs.
"""

from __future__ import annotations

import functools

from fabricgen.core.templating import csv_bytes
from fabricgen.features.ethernet.nos.sonic.headroom import Headroom, shared_headroom_pool
from fabricgen.features.ethernet.nos.sonic.layout import SonicLayout, SonicPort

TRADITIONAL_FIELDS = (
    "port", "alias", "peer", "speed_mbps", "lanes", "plan_cable_m", "cable_length", "hwsku", "lookup_row",
    "profile", "xon", "xoff", "size", "dynamic_th", "shared_headroom_pool_xoff", "lua", "lua_xoff_at_plan_cable",
    "lua_size_at_plan_cable",
)
LUA_FIELDS = (
    "port", "alias", "peer", "speed_mbps", "lanes", "plan_cable_m", "cable_length", "port_mtu", "lossless_mtu",
    "small_packet_percentage", "asic", "formula", "cell_size", "pipeline_latency_kb", "mac_phy_delay_kb",
    "peer_response_time_kb", "gearbox_delay", "shared_headroom_pool", "eight_lane", "pipeline_latency",
    "speed_overhead", "worst_case_factor", "small_packet_percentage_by_byte", "cell_occupancy", "pause_quanta",
    "peer_response_time", "mac_phy_delay", "bytes_on_cable", "bytes_on_gearbox", "kb_on_tile", "propagation_delay",
    "xoff", "xon", "size", "profile",
)
PREDICTED = ("xoff", "xon", "size", "profile")  # what buffermgrd computes itself in the dynamic model
# with the pool only: the switch's pool and its inputs, size = ceil((accumulative_xoff - private_headroom) / ratio)
SHP_FIELDS = ("over_subscribe_ratio", "accumulative_xoff", "private_headroom", "shared_headroom_pool_size")


def _number(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        text = f"{value:.4f}".rstrip("0").rstrip(".")
        return text or "0"
    return "" if value is None else str(value)


@functools.cache
def _lua_cells(room: Headroom) -> dict[str, str]:
    """The CSV cells of one headroom result, formatted once per distinct result."""
    return {name: _number(getattr(room, name)) for name in LUA_FIELDS if hasattr(room, name)}


def _common(port: SonicPort) -> dict[str, str]:
    return {"port": port.name, "alias": port.sku_port.alias, "peer": f"{port.view.peer}:{port.view.peer_port}",
            "speed_mbps": str(port.speed_mbps), "lanes": str(len(port.lanes)),
            "plan_cable_m": _number(port.view.cable_m), "cable_length": port.cable_length}


def _traditional(layout: SonicLayout) -> bytes:
    pool_xoff = layout.sku.pools[layout.topology].get("ingress_lossless_pool", {}).get("xoff", "")

    def row(port: SonicPort) -> list[str]:
        r = port.row
        assert r is not None
        lua = layout.headroom(port, port.view.cable_m)
        values = _common(port) | {
            "hwsku": layout.sku.hwsku, "lookup_row": r.text, "profile": port.profile, "xon": str(r.xon),
            "xoff": str(r.xoff), "size": str(r.size), "dynamic_th": r.threshold, "shared_headroom_pool_xoff": pool_xoff,
            "lua": lua.formula, "lua_xoff_at_plan_cable": str(lua.xoff), "lua_size_at_plan_cable": str(lua.size)}
        return [values[name] for name in TRADITIONAL_FIELDS]

    return csv_bytes(TRADITIONAL_FIELDS, (row(port) for port in layout.ports))


def _dynamic(layout: SonicLayout) -> bytes:
    view = layout.view
    assert view.qos is not None
    rooms = [layout.headroom(port) for port in layout.ports]
    pool: dict[str, str] = {}
    fields: tuple[str, ...] = LUA_FIELDS
    if view.qos.over_subscribe_ratio:
        shp = shared_headroom_pool(rooms, len(rooms), view.qos.over_subscribe_ratio)
        fields += SHP_FIELDS
        pool = {"over_subscribe_ratio": str(shp.over_subscribe_ratio), "accumulative_xoff": str(shp.accumulative_xoff),
                "private_headroom": str(shp.private_headroom), "shared_headroom_pool_size": str(shp.size)}
    predicted = {*PREDICTED, "shared_headroom_pool_size"}
    header = [f"predicted_{name}" if name in predicted else name for name in fields]

    def row(port: SonicPort, room: Headroom) -> list[str]:
        values = _lua_cells(room) | pool | _common(port) | {
            "asic": layout.switch.asic.name, "profile": port.dynamic_profile(view.mtu, layout.sku.platform)}
        return [values[name] for name in fields]

    return csv_bytes(header, (row(port, room) for port, room in zip(layout.ports, rooms, strict=True)))


def headroom_csv(layout: SonicLayout) -> bytes:
    """pfc-headroom.csv of one switch (module doc)."""
    return _dynamic(layout) if layout.dynamic else _traditional(layout)
