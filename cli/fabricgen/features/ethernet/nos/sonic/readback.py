"""SONiC's config_db.json read back as buffermgrd and orchagent read it: on every port of a RoCE fabric the
lossless DSCP reaches a PFC-enabled priority group that has headroom (traditional: a profile whose size reserves
xon + xoff, or only xon when the ingress pool has a shared headroom pool; dynamic: profile NULL with a cable
length and the tables the headroom plugin reads), its queue marks ECN, CNP is strict; on every Ethernet fabric
each cabled port's MTU is at least the host MTU. The PFC priority reaches the same PG through pfc_to_pg_map
(the Mellanox SAI's PFC-priority-to-PG map)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric
from fabricgen.model.ethernet import RoceQos


def _buffer_model(host: str, db: dict[str, Any], fabric: Fabric) -> Iterator[Finding]:
    """The dynamic model's headroom plugin reads one LOSSLESS_TRAFFIC_PATTERN and buffermgrd the default threshold
    of its generated profiles: without either no lossless PG gets headroom."""
    if db.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model") != "dynamic":
        return
    for table, fields in (("LOSSLESS_TRAFFIC_PATTERN", "mtu and small_packet_percentage"),
                          ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "default_dynamic_th")):
        if not db.get(table):
            yield mismatch(host, f"buffer_model is dynamic but {table} is empty: buffermgrd has no {fields} to "
                                 "compute lossless headroom with", fabric)


def _lossless_pg(where: str, db: dict[str, Any], port: str, pg: str, fabric: Fabric) -> Iterator[Finding]:
    """PFC on a PG without headroom pauses too late: what is in flight when XOFF leaves is dropped."""
    dynamic = db.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model") == "dynamic"
    profile = db.get("BUFFER_PG", {}).get(f"{port}|{pg}", {}).get("profile")
    if profile == "NULL":
        if not dynamic:
            yield mismatch(where, f"priority group {pg} has profile NULL, which only the dynamic buffer model "
                                  "computes, but buffer_model is traditional: PFC has no headroom", fabric)
        elif port not in db.get("CABLE_LENGTH", {}).get("AZURE", {}):
            yield mismatch(where, f"priority group {pg} leaves its headroom to buffermgrd, but CABLE_LENGTH has no "
                                  "length for the port to compute it from", fabric)
        return
    entry = db.get("BUFFER_PROFILE", {}).get(profile or "", {})
    xoff = int(entry.get("xoff", "0"))
    if not xoff:
        has = f"uses profile {profile}, which has no xoff headroom" if profile else "has no BUFFER_PG entry"
        yield mismatch(where, f"lossless priority group {pg} {has}: PFC pauses too late and lossless traffic drops",
                       fabric,
                       "traditional model: a pg_lossless profile with xon/xoff/size; dynamic: profile NULL")
        return
    xon, size = int(entry.get("xon", "0")), int(entry.get("size", "0"))
    pool = db.get("BUFFER_POOL", {}).get(entry.get("pool", ""), {})
    if size < xon + xoff and not int(pool.get("xoff", "0")):
        # size = xon is right only with a shared headroom pool (buffer_headroom_mellanox.lua), which serves the xoff
        yield mismatch(where, f"lossless priority group {pg} uses profile {profile}, whose size {size} reserves "
                              f"less than xon {xon} + xoff {xoff}, but {entry.get('pool')} has no shared headroom "
                              "pool (xoff 0): the bytes in flight after PFC pauses have no buffer and drop", fabric,
                       "without a shared headroom pool size = xon + xoff; with one, give the ingress pool its xoff")


def _sonic(host: str, db: dict[str, Any], fabric: Fabric, qos: RoceQos) -> Iterator[Finding]:
    lossless, cnp = qos.lossless, qos.cnp
    yield from _buffer_model(host, db, fabric)
    for port, entry in sorted(db.get("PORT_QOS_MAP", {}).items()):
        where = f"{host} {port}"
        dscp_map = db.get("DSCP_TO_TC_MAP", {}).get(entry.get("dscp_to_tc_map", ""), {})
        tc = dscp_map.get(str(lossless.dscp))
        if tc != str(lossless.priority):
            yield mismatch(where, f"DSCP {lossless.dscp} maps to TC {tc} on the switch, but hosts send it on "
                                  f"priority {lossless.priority}", fabric)
            continue
        pg = db.get("TC_TO_PRIORITY_GROUP_MAP", {}).get(entry.get("tc_to_pg_map", ""), {}).get(tc)
        if pg != str(lossless.priority):
            yield mismatch(where, f"TC {tc} uses priority group {pg}, but PFC pauses priority {lossless.priority}",
                           fabric, "the traditional buffer model uses the pfc_enable priorities as PG numbers")
        else:
            yield from _lossless_pg(where, db, port, pg, fabric)
        pfc_pg = db.get("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", {}).get(entry.get("pfc_to_pg_map", ""), {}).get(
            str(lossless.priority))
        if pfc_pg != pg:
            yield mismatch(where, f"PFC priority {lossless.priority} maps to priority group {pfc_pg} "
                                  f"(pfc_to_pg_map), but the lossless traffic fills PG {pg}: the Mellanox SAI sends "
                                  "PAUSE for a priority from its mapped PG's xoff only", fabric,
                           "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP with the lossless priority -> its PG, as "
                           "qos_config.j2 writes on Mellanox")
        enabled = entry.get("pfc_enable", "").split(",")
        if str(lossless.priority) not in enabled or len([p for p in enabled if p]) != 1:
            yield mismatch(where, f"pfc_enable is {entry.get('pfc_enable')!r}, hosts enable PFC on priority "
                                  f"{lossless.priority} only", fabric)
        queue = db.get("QUEUE", {}).get(f"{port}|{lossless.priority}", {})
        wred = db.get("WRED_PROFILE", {}).get(queue.get("wred_profile", ""), {})
        if wred.get("ecn") not in ("ecn_all", "ecn_green", "ecn_green_yellow"):
            yield mismatch(where, f"lossless queue {lossless.priority} has no ECN-marking WRED profile, so ECN never "
                                  "marks and congestion relies on PFC alone", fabric)
        cnp_tc = dscp_map.get(str(cnp.dscp))
        scheduler = db.get("SCHEDULER", {}).get(db.get("QUEUE", {}).get(f"{port}|{cnp_tc}", {}).get("scheduler", ""),
                                                {})
        if scheduler.get("type") != "STRICT":
            yield mismatch(where, f"CNP DSCP {cnp.dscp} lands in queue {cnp_tc} scheduled "
                                  f"{scheduler.get('type', 'by default')}, not strict priority", fabric)


def _sonic_mtu(switch: str, db: dict[str, Any], fabric: Fabric) -> Iterator[Finding]:
    """Host MTU <= switch port MTU on every cabled port (a port with a description naming its peer)."""
    for _, port in sorted(db.get("PORT", {}).items()):
        if "description" in port and int(port["mtu"]) < fabric.host_mtu:
            yield Finding(Severity.ERROR, "mtu", f"switch {switch} port to {port['description']}",
                          f"switch MTU {port['mtu']} is below the host MTU {fabric.host_mtu}", "", fabric.position)


def readback(switch: str, content: bytes, fabric: Fabric) -> Iterator[Finding]:
    """A SONiC config_db.json, parsed once: its MTUs on any Ethernet fabric, its lossless chain on RoCE ones."""
    db: dict[str, Any] = json.loads(content)
    yield from _sonic_mtu(switch, db, fabric)
    if fabric.qos is not None:
        yield from _sonic(f"switch {switch}", db, fabric, fabric.qos)
