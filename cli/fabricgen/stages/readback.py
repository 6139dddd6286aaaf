"""The cross-layer check of the lossless RoCE class, over the artifacts as generated (not the model they came
from): what the hosts mark, what NCCL sends, and what every switch does with it must agree.

Chain checked per RoCE fabric with a QoS class (all values read back from the files):
- NCCL (nccl.env of the compute fabric's profiles, when that fabric is RoCE): NCCL_IB_TC >> 2 is the lossless
  DSCP and its ECN bits are ECT(0);
- hosts (roce-qos.sh): trust DSCP, the lossless DSCP mapped to the lossless priority, PFC on exactly that
  priority, ECN on it, the CNP DSCP, host MTU;
- switches, per port: DSCP -> TC, TC -> priority group = the PFC priority, pfc_enable holds it, the lossless
  queue has an ECN profile, the CNP DSCP lands in a strict-priority queue; on SONiC the lossless PG has headroom:
  a BUFFER_PROFILE with xoff whose size reserves it (size >= xon + xoff), or, with a shared headroom pool
  (BUFFER_POOL ingress_lossless_pool xoff > 0), reserves xon and leaves the xoff to the pool (traditional buffer
  model), or profile NULL with a CABLE_LENGTH for buffermgrd to compute it from, and the tables its headroom
  plugin reads (dynamic model);
- Lustre over such a fabric (lnet.conf): every local NI's o2iblnd ToS carries the lossless DSCP;
- on every Ethernet fabric (SONiC files), every cabled switch port's MTU is at least the host MTU.
Each mismatch names both sides and the value each holds. Runs after render on every plan and apply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding, Severity
from fabricgen.model.cluster import Fabric
from fabricgen.model.ethernet import RoceQos
from fabricgen.model.topology import Topology

Reader = Callable[[str, bytes, Fabric, RoceQos], Iterator[Finding]]


def _mismatch(subject: str, message: str, fabric: Fabric, hint: str = "") -> Finding:
    return Finding(Severity.ERROR, "lossless-chain", subject, message, hint, fabric.position)


def _nccl(path: str, content: bytes, fabric: Fabric, qos: RoceQos) -> Iterator[Finding]:
    env = dict(line.split("=", 1) for line in content.decode().splitlines() if line and not line.startswith("#"))
    if "NCCL_IB_TC" not in env:
        yield _mismatch(path, f"NCCL sets no NCCL_IB_TC, so its QPs send on TC 0 while the fabric's lossless class is "
                              f"DSCP {qos.lossless.dscp}", fabric)
        return
    tc = int(env["NCCL_IB_TC"])
    if tc >> 2 != qos.lossless.dscp:
        yield _mismatch(path, f"NCCL_IB_TC {tc} carries DSCP {tc >> 2}, but the switches treat DSCP "
                              f"{qos.lossless.dscp} as lossless", fabric)
    if tc & 0b11 != 0b10:
        yield _mismatch(path, f"NCCL_IB_TC {tc} has ECN bits {tc & 3:02b}, not ECT(0) 10: switches cannot mark it",
                        fabric)


def _buffer_model(host: str, db: dict[str, Any], fabric: Fabric) -> Iterator[Finding]:
    """The dynamic model's headroom plugin reads one LOSSLESS_TRAFFIC_PATTERN and buffermgrd the default threshold
    of its generated profiles: without either no lossless PG gets headroom."""
    if db.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model") != "dynamic":
        return
    for table, fields in (("LOSSLESS_TRAFFIC_PATTERN", "mtu and small_packet_percentage"),
                          ("DEFAULT_LOSSLESS_BUFFER_PARAMETER", "default_dynamic_th")):
        if not db.get(table):
            yield _mismatch(host, f"buffer_model is dynamic but {table} is empty: buffermgrd has no {fields} to "
                                  "compute lossless headroom with", fabric)


def _lossless_pg(where: str, db: dict[str, Any], port: str, pg: str, fabric: Fabric) -> Iterator[Finding]:
    """PFC on a PG without headroom pauses too late: what is in flight when XOFF leaves is dropped."""
    dynamic = db.get("DEVICE_METADATA", {}).get("localhost", {}).get("buffer_model") == "dynamic"
    profile = db.get("BUFFER_PG", {}).get(f"{port}|{pg}", {}).get("profile")
    if profile == "NULL":
        if not dynamic:
            yield _mismatch(where, f"priority group {pg} has profile NULL, which only the dynamic buffer model "
                                   "computes, but buffer_model is traditional: PFC has no headroom", fabric)
        elif port not in db.get("CABLE_LENGTH", {}).get("AZURE", {}):
            yield _mismatch(where, f"priority group {pg} leaves its headroom to buffermgrd, but CABLE_LENGTH has no "
                                   "length for the port to compute it from", fabric)
        return
    entry = db.get("BUFFER_PROFILE", {}).get(profile or "", {})
    xoff = int(entry.get("xoff", "0"))
    if not xoff:
        has = f"uses profile {profile}, which has no xoff headroom" if profile else "has no BUFFER_PG entry"
        yield _mismatch(where, f"lossless priority group {pg} {has}: PFC pauses too late and lossless traffic drops",
                        fabric,
                        "traditional model: a pg_lossless profile with xon/xoff/size; dynamic: profile NULL")
        return
    xon, size = int(entry.get("xon", "0")), int(entry.get("size", "0"))
    pool = db.get("BUFFER_POOL", {}).get(entry.get("pool", ""), {})
    if size < xon + xoff and not int(pool.get("xoff", "0")):
        # size = xon is right only with a shared headroom pool (buffer_headroom_mellanox.lua), which serves the xoff
        yield _mismatch(where, f"lossless priority group {pg} uses profile {profile}, whose size {size} reserves "
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
            yield _mismatch(where, f"DSCP {lossless.dscp} maps to TC {tc} on the switch, but hosts send it on "
                                   f"priority {lossless.priority}", fabric)
            continue
        pg = db.get("TC_TO_PRIORITY_GROUP_MAP", {}).get(entry.get("tc_to_pg_map", ""), {}).get(tc)
        if pg != str(lossless.priority):
            yield _mismatch(where, f"TC {tc} uses priority group {pg}, but PFC pauses priority {lossless.priority}",
                            fabric, "the traditional buffer model uses the pfc_enable priorities as PG numbers")
        else:
            yield from _lossless_pg(where, db, port, pg, fabric)
        enabled = entry.get("pfc_enable", "").split(",")
        if str(lossless.priority) not in enabled or len([p for p in enabled if p]) != 1:
            yield _mismatch(where, f"pfc_enable is {entry.get('pfc_enable')!r}, hosts enable PFC on priority "
                                   f"{lossless.priority} only", fabric)
        queue = db.get("QUEUE", {}).get(f"{port}|{lossless.priority}", {})
        wred = db.get("WRED_PROFILE", {}).get(queue.get("wred_profile", ""), {})
        if wred.get("ecn") not in ("ecn_all", "ecn_green", "ecn_green_yellow"):
            yield _mismatch(where, f"lossless queue {lossless.priority} has no ECN-marking WRED profile, so ECN never "
                                   "marks and congestion relies on PFC alone", fabric)
        cnp_tc = dscp_map.get(str(cnp.dscp))
        scheduler = db.get("SCHEDULER", {}).get(db.get("QUEUE", {}).get(f"{port}|{cnp_tc}", {}).get("scheduler", ""),
                                                {})
        if scheduler.get("type") != "STRICT":
            yield _mismatch(where, f"CNP DSCP {cnp.dscp} lands in queue {cnp_tc} scheduled "
                                   f"{scheduler.get('type', 'by default')}, not strict priority", fabric)


def _eos(path: str, content: bytes, fabric: Fabric, qos: RoceQos) -> Iterator[Finding]:
    """EOS CLI: the DSCP maps, a no-drop PFC priority on every PFC port, ECN and strict CNP in the qos profile."""
    text = content.decode()
    host = "switch " + path.split("/")[1]
    maps = {int(d): int(tc) for ds, tc in re.findall(r"^qos map dscp ([\d ]+) to traffic-class (\d+)$", text, re.M)
            for d in ds.split()}
    lossless, cnp = qos.lossless, qos.cnp
    if maps.get(lossless.dscp) != lossless.priority:
        yield _mismatch(host, f"DSCP {lossless.dscp} maps to traffic class {maps.get(lossless.dscp)} on the switch, "
                              f"but hosts send it on priority {lossless.priority}", fabric)
    no_drop = set(re.findall(r"^   priority-flow-control priority (\d) no-drop$", text, re.M))
    if no_drop != {str(lossless.priority)}:
        yield _mismatch(host, f"no-drop PFC priorities are {sorted(no_drop) or 'none'}, hosts pause priority "
                              f"{lossless.priority} only", fabric)
    queues = dict(re.findall(r"^   uc-tx-queue (\d)\n((?:      .*\n)*)", text, re.M))
    if "random-detect ecn" not in queues.get(str(lossless.priority), ""):
        yield _mismatch(host, f"uc-tx-queue {lossless.priority} has no ECN random-detect: ECN never marks", fabric)
    if "priority strict" not in queues.get(str(maps.get(cnp.dscp, -1)), ""):
        yield _mismatch(host, f"CNP DSCP {cnp.dscp} lands in queue {maps.get(cnp.dscp)}, which is not strict "
                              "priority", fabric)


def _nvue(path: str, content: bytes, fabric: Fabric, qos: RoceQos) -> Iterator[Finding]:
    """NVUE startup.yaml: NVIDIA's RoCE lossless defaults (Cumulus Linux 5.9 RoCE page: DSCP d -> switch priority
    d // 8, priority 3 -> TC 3 with PFC and ECN, 6 -> TC 6 strict) with the file's overrides applied."""
    tree = yaml.safe_load(content)[0]["set"]
    host = "switch " + path.split("/")[1]
    q = tree.get("qos", {})
    if q.get("roce", {}).get("mode") != "lossless":
        yield _mismatch(host, "qos roce is not in lossless mode", fabric)
        return
    dscp_to_sp = {d: d // 8 for d in range(64)}
    mapping = q.get("mapping", {}).get("default-global", {}).get("dscp", {})
    dscp_to_sp |= {int(d): int(v["switch-priority"]) for d, v in mapping.items()}
    sp_to_tc = {sp: sp if sp in (3, 6) else 0 for sp in range(8)}
    queues = q.get("egress-queue-mapping", {}).get("default-global", {}).get("switch-priority", {})
    sp_to_tc |= {int(sp): int(v["traffic-class"]) for sp, v in queues.items()}
    pfc = {int(sp) for sp in q.get("pfc", {}).get("default-global", {}).get("switch-priority", {})} or {3}
    strict = {6}
    for tc, v in q.get("egress-scheduler", {}).get("default-global", {}).get("traffic-class", {}).items():
        (strict.add if v.get("mode") == "strict" else strict.discard)(int(tc))
    congestion = q.get("congestion-control", {}).get("default-global", {}).get("traffic-class", {})
    ecn = ({3} | {int(tc) for tc, v in congestion.items() if v.get("ecn") == "enable"}) - {
        int(tc) for tc, v in congestion.items() if v.get("ecn") == "disable"}
    lossless, cnp = qos.lossless, qos.cnp
    priority = dscp_to_sp[lossless.dscp]
    if priority != lossless.priority:
        yield _mismatch(host, f"DSCP {lossless.dscp} maps to switch priority {priority}, but hosts send it on "
                              f"priority {lossless.priority}", fabric)
    if pfc != {lossless.priority}:
        yield _mismatch(host, f"PFC is on switch priorities {sorted(pfc)}, hosts pause priority {lossless.priority} "
                              "only", fabric)
    if sp_to_tc[priority] not in ecn:
        yield _mismatch(host, f"traffic class {sp_to_tc[priority]} of the lossless class does not mark ECN", fabric)
    if sp_to_tc[dscp_to_sp[cnp.dscp]] not in strict:
        yield _mismatch(host, f"CNP DSCP {cnp.dscp} lands in traffic class {sp_to_tc[dscp_to_sp[cnp.dscp]]}, which "
                              "is not strict priority", fabric)


_CONFIGURE = re.compile(r"^configure '([^']+)' '(\d+)' '(\d+)' '([01,]+)' '(\d+)' '(\d+)' '(\d+)'$")
_PORT_FABRIC = re.compile(r"^#   (\S+) .*, fabric (.+)$")


def host_port_settings(content: bytes) -> Iterator[tuple[str, str, dict[str, int | str]]]:
    """(netdev, fabric, settings) for every port roce-qos.sh configures, read from its configure lines."""
    text = content.decode()
    fabrics = {m.group(1): m.group(2) for m in map(_PORT_FABRIC.match, text.splitlines()) if m}
    for m in filter(None, map(_CONFIGURE.match, text.splitlines())):
        netdev, dscp, prio, pfc, cnp_dscp, cnp_prio, mtu = m.groups()
        yield netdev, fabrics.get(netdev, ""), {"dscp": int(dscp), "priority": int(prio), "pfc": pfc,
                                                 "cnp_dscp": int(cnp_dscp), "cnp_priority": int(cnp_prio),
                                                 "mtu": int(mtu)}


def _host(path: str, content: bytes, fabrics: Mapping[str, Fabric]) -> Iterator[Finding]:
    for netdev, name, got in host_port_settings(content):
        fabric = fabrics.get(name)
        if fabric is None or fabric.qos is None:
            continue
        q, where = fabric.qos, f"{path} {netdev}"
        expected_pfc = ",".join("1" if p == q.lossless.priority else "0" for p in range(8))
        pairs = (("DSCP", got["dscp"], q.lossless.dscp, "the switches' lossless DSCP"),
                 ("priority", got["priority"], q.lossless.priority, "the switches' PFC priority"),
                 ("PFC bitmap", got["pfc"], expected_pfc, "PFC on the lossless priority only"),
                 ("CNP DSCP", got["cnp_dscp"], q.cnp.dscp, "the switches' strict CNP class"),
                 ("CNP priority", got["cnp_priority"], q.cnp.priority, "the switches' CNP priority"),
                 ("MTU", got["mtu"], fabric.host_mtu, "the fabric's host MTU"))
        for what, host_value, fabric_value, side in pairs:
            if host_value != fabric_value:
                yield _mismatch(where, f"host {what} is {host_value}, {side} is {fabric_value}", fabric)
        if int(got["mtu"]) > fabric.mtu:
            yield _mismatch(where, f"host MTU {got['mtu']} exceeds the switch port MTU {fabric.mtu}", fabric)


READERS: Mapping[str, Reader] = {
    "nccl.env": _nccl,
    ".cfg": _eos,
    "startup.yaml": _nvue,
}


def _sonic_mtu(switch: str, db: dict[str, Any], fabric: Fabric) -> Iterator[Finding]:
    """Host MTU <= switch port MTU on every cabled port (a port with a description naming its peer)."""
    for _, port in sorted(db.get("PORT", {}).items()):
        if "description" in port and int(port["mtu"]) < fabric.host_mtu:
            yield Finding(Severity.ERROR, "mtu", f"switch {switch} port to {port['description']}",
                          f"switch MTU {port['mtu']} is below the host MTU {fabric.host_mtu}", "", fabric.position)


def _config_db(path: str, content: bytes, fabric: Fabric) -> Iterator[Finding]:
    """A SONiC config_db.json, parsed once: its MTUs on any Ethernet fabric, its lossless chain on RoCE ones."""
    db: dict[str, Any] = json.loads(content)
    switch = path.split("/")[1]
    yield from _sonic_mtu(switch, db, fabric)
    if fabric.qos is not None:
        yield from _sonic(f"switch {switch}", db, fabric, fabric.qos)


def _lnet(path: str, content: bytes, networks: Mapping[str, Fabric]) -> Iterator[Finding]:
    """Lustre over a lossless RoCE fabric: every local NI's o2iblnd ToS carries the fabric's lossless DSCP."""
    for net in yaml.safe_load(content).get("net") or []:
        fabric = networks.get(net.get("net type", ""))
        if fabric is None or fabric.qos is None:
            continue
        dscp = fabric.qos.lossless.dscp
        for ni in net.get("local NI(s)") or []:
            tos = (ni.get("lnd tunables") or {}).get("tos")
            if not isinstance(tos, int) or tos >> 2 != dscp:
                interface = (ni.get("interfaces") or {}).get(0, "?")
                yield _mismatch(f"{path} {net['net type']} {interface}",
                                f"LNet ToS {tos} (DSCP {tos >> 2 if isinstance(tos, int) else None}) but fabric "
                                f"{fabric.name}'s lossless DSCP is {dscp}", fabric,
                                "Lustre RDMA traffic would ride a lossy class")


def check_artifacts(topology: Topology, artifacts: tuple[Artifact, ...]) -> tuple[Finding, ...]:
    """Every lossless-chain and MTU mismatch in the rendered artifacts, in one pass over them."""
    roce = {ft.fabric.name: ft.fabric for ft in topology.fabrics if ft.fabric.qos is not None}
    ethernet = {sw.name: ft.fabric for ft in topology.fabrics if ft.fabric.type != "infiniband"
                for sw in ft.switches}
    compute = next((ft.fabric for ft in topology.fabrics if ft.fabric.role.value == "compute"), None)
    fabrics = {ft.fabric.name: ft.fabric for ft in topology.fabrics}
    lnet = {fs.lnet.network: fabrics[fs.fabric] for fs in topology.cluster.lustre}
    findings: list[Finding] = []
    for artifact in sorted(artifacts, key=lambda a: a.path):
        path, content = artifact.path, artifact.content
        name = path.rsplit("/", 1)[-1]
        switch = ethernet.get(path.split("/")[1]) if path.startswith("switches/") else None
        if name == "roce-qos.sh":
            findings.extend(_host(path, content, roce))
        elif name == "lnet.conf" and path.startswith("hosts/"):
            findings.extend(_lnet(path, content, lnet))
        elif name == "config_db.json" and switch is not None:
            findings.extend(_config_db(path, content, switch))
        elif (reader := READERS.get(".cfg" if name.endswith(".cfg") else name)) is not None:
            fabric = compute if name == "nccl.env" else switch
            if fabric is not None and fabric.qos is not None:
                findings.extend(reader(path, content, fabric, fabric.qos))
    return tuple(findings)
