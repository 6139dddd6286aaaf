"""Build the ``subnet_manager`` section of an InfiniBand fabric into the model, with the checks that need only
the spec: engines the flavour has, ftree and LMC, pkeys, partition members, which partitions carry compute and
IPoIB traffic, one service level per partition (and a VL that carries it), SM hosts, QoS rules, keys and M_Key
protection, GUIDs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.errors import SpecError
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.features.feature import BuildContext
from fabricgen.features.infiniband.guids import UnreadableInventoryError, load_inventory
from fabricgen.features.infiniband.view import FTREE_ENGINES
from fabricgen.model.cluster import Cluster, Fabric, FabricType
from fabricgen.model.infiniband import (
    DEFAULT_PKEY,
    AdaptiveRouting,
    GuidEntry,
    Ipoib,
    Members,
    Partition,
    Qos,
    QosLevel,
    Secret,
    Sharp,
    SubnetManager,
    nvidia_opensm,
)
from fabricgen.model.nodes import NicRole, Node, rail_count
from fabricgen.spec.load import STDIN
from fabricgen.spec.validate import with_defaults

# Upstream OpenSM 3.3.23 engines (man opensm); NVIDIA's OpenSM (UFM's, or DOCA-OFED's 5.x) adds the adaptive-routing
# ones.
UPSTREAM_ENGINES = ("minhop", "updn", "dnup", "file", "ftree", "lash", "dor", "torus-2QoS", "nue", "dfsssp", "sssp")
NVIDIA_ENGINES = (*UPSTREAM_ENGINES, "ar_updn", "ar_ftree", "ar_torus", "ar_dor", "pqft")
DROP_VL = 15  # an SL mapped to VL 15 in qos_sl2vl is dropped (man opensm, QoS)
M_KEY_PROTECTION = 2  # with an M_Key: neither queries nor changes without it (level 0 hands the key to any query)
M_KEY_LEASE_S = 60  # with an M_Key: a lost key is recoverable after a minute (UFM's default lease)
UFM_HA_HOSTS = 2  # UFM Enterprise HA is an active/standby pair
AR_ENGINES = ("ar_updn", "ar_ftree", "ar_torus", "ar_dor")  # NVIDIA's adaptive-routing engines
# The engines sharp_am builds trees on for tree topologies (NVIDIA SHARP deployment guide, "Setting up NVIDIA SHARP
# Environment": "Tree based topologies: updn, ar_updn, ftree, ar_ftree"; dfp and dor serve topologies fabricgen does
# not build).
SHARP_ENGINES = ("ftree", "updn", "ar_ftree", "ar_updn")
# NVIDIA SHARP deployment guide (2.6.1, "Reducing the Number of Operational VLs in the Subnet in OpenSM"): "When
# streaming aggregation is enabled, it is recommended to reduce the number of enabled VLs in the subnet to 2 VLs"
# (max_op_vls 2); a UFM recipe for a large rail-optimized SHARP fabric sets it too (kobibar/OpenAI.recipe.old, a
# personal repository).
SHARP_OPERATIONAL_VLS = 2


def parse_pkey(value: int | str) -> int:
    """The 15-bit partition key; the top bit (full membership in a port's table) is not part of the key."""
    return (int(value, 16) if isinstance(value, str) else value) & 0x7FFF


@dataclass(frozen=True)
class _Context:
    """What a subnet manager section is checked against: the fabric's nodes and rails; ``issues`` is at the
    section's path."""

    issues: Issues
    nodes: Sequence[Node]
    attached_groups: tuple[str, ...]
    rails: int
    nic_role: NicRole  # the node ports the fabric carries (compute NICs; storage NICs on a storage fabric)


def nvidia_sm(spec: Mapping[str, Any]) -> bool:
    return nvidia_opensm(spec["flavor"], spec.get("opensm_version", ""))


def _engines(ctx: _Context, spec: Mapping[str, Any], speed: str) -> tuple[str, ...]:
    if "routing_engine" not in spec:
        return ()  # chosen from the compiled tiers: see fabricgen.features.infiniband.view.routing_engines
    engines = spec["routing_engine"]
    engines = (engines,) if isinstance(engines, str) else tuple(engines)
    known = NVIDIA_ENGINES if nvidia_sm(spec) else UPSTREAM_ENGINES
    for i, engine in enumerate(engines):
        where = ("routing_engine",) if len(engines) == 1 and isinstance(spec["routing_engine"], str) else (
            "routing_engine", i)
        if engine not in known:
            extra = (" (it exists only in NVIDIA's OpenSM: use flavor: ufm, or state the NVIDIA OpenSM release, "
                     "opensm_version 5.x)") if engine in NVIDIA_ENGINES else ""
            ctx.issues.error(where, f"routing engine {engine!r} is not in {spec['flavor']}{extra}",
                             did_you_mean(engine, known) or f"engines: {', '.join(known)}")
        elif engine == "ar_ftree" and speed.startswith("XDR"):
            ctx.issues.error(where, "NVIDIA's SM routes an XDR fabric adaptively with ar_updn only (UFM user manual, "
                                    "Appendix - Adaptive Routing: \"For XDR topologies, only the ar_updn routing mode "
                                    "is supported\")", "route with ar_updn, or drop routing_engine for fabricgen's "
                                                       "XDR default (ar_updn)")
    if any(e in FTREE_ENGINES for e in engines) and spec["lmc"] > 0:
        ctx.issues.error(("lmc",), f"ftree does not support lmc > 0 (lmc is {spec['lmc']})", "use lmc: 0 with ftree")
    return engines


def _hosts(ctx: _Context, spec: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    attached = {n.name for n in ctx.nodes if n.group in ctx.attached_groups}
    priorities: dict[int, str] = {}
    hosts = []
    for i, host in enumerate(spec["hosts"]):
        name, priority = host["name"], host["priority"]
        if name not in attached:
            ctx.issues.error(("hosts", i, "name"), f"SM host {name!r} is not a node attached to this fabric",
                             did_you_mean(name, sorted(attached)) or "an SM host needs an HCA on the fabric")
        if priority in priorities:
            ctx.issues.error(("hosts", i, "priority"), f"priority {priority} is also used by {priorities[priority]}",
                             "SM HA needs distinct priorities (the highest wins)")
        priorities[priority] = name
        hosts.append((name, priority))
    return tuple(hosts)


def _partition(ctx: _Context, i: int, spec: Mapping[str, Any], seen: dict[int, str]) -> Partition | None:
    where: PathKey = ("partitions", i)
    pkey = parse_pkey(spec["pkey"])
    if pkey == 0:
        ctx.issues.error((*where, "pkey"), "pkey 0x0000 is invalid", "use 0x0001..0x7ffe (0x7fff is Default)")
        return None
    if pkey == DEFAULT_PKEY and spec["name"] != "Default":
        ctx.issues.error((*where, "pkey"), "pkey 0x7fff is the Default partition's", "name this partition Default")
    if pkey in seen:
        ctx.issues.error((*where, "pkey"), f"pkey 0x{pkey:04x} is also used by partition {seen[pkey]!r}",
                         "pkeys are unique; the top bit (0x8000) is membership, not part of the key")
    seen[pkey] = spec["name"]
    members_all = spec["members"] == "all"
    chosen = _members(ctx, (*where, "members"), {} if members_all else spec["members"])
    limited = _members(ctx, (*where, "limited_members"), spec["limited_members"]) if "limited_members" in spec \
        else None
    ipoib_spec = spec.get("ipoib")
    ipoib = Ipoib(ipoib_spec["mtu"], ipoib_spec.get("rate_gbps")) if ipoib_spec else None
    partition = Partition(spec["name"], pkey, members_all, chosen.groups, chosen.nodes, chosen.rails,
                          spec["membership"], ipoib, ctx.issues.position(where), limited=limited,
                          joins_tenants=spec["joins_tenants"])
    if ipoib and not members_all:
        full = sum(1 for n in ctx.nodes if n.group in ctx.attached_groups for nic in n.profile.nics(ctx.nic_role)
                   if partition.full_member(n, nic))
        if full < 2:
            ctx.issues.error((*where, "members"),
                             f"an IPoIB partition needs at least two full members; this has {full}",
                             "OpenSM refuses it (ERR AC05): add members or make them full")
    return partition


def _members(ctx: _Context, where: PathKey, spec: Mapping[str, Any]) -> Members:
    """Node groups, nodes and rails of a member list, each checked against the fabric."""
    groups = tuple(spec.get("groups", ()))
    nodes = tuple(spec.get("nodes", ()))
    rails = tuple(spec["rails"]) if "rails" in spec else None
    known_nodes = {n.name for n in ctx.nodes if n.group in ctx.attached_groups}
    for j, group in enumerate(groups):
        if group not in ctx.attached_groups:
            ctx.issues.error((*where, "groups", j), f"node group {group!r} is not attached to this fabric",
                             did_you_mean(group, ctx.attached_groups))
    for j, node in enumerate(nodes):
        if node not in known_nodes:
            ctx.issues.error((*where, "nodes", j), f"node {node!r} is not attached to this fabric",
                             did_you_mean(node, sorted(known_nodes)))
    for j, rail in enumerate(rails or ()):
        if rail >= ctx.rails:
            ctx.issues.error((*where, "rails", j), f"rail {rail} does not exist",
                             f"the fabric has rails 0..{ctx.rails - 1}")
    return Members(groups, nodes, rails)


def _partitions(ctx: _Context, spec: Mapping[str, Any]) -> tuple[Partition, ...]:
    """The spec's partitions, Default first: the spec's, or one fabricgen adds with every port a full member
    (what OpenSM does without a partition file; with a file but no Default rule it would make them limited)."""
    seen: dict[int, str] = {}
    names: dict[str, int] = {}
    out = []
    for i, entry in enumerate(spec["partitions"]):
        if entry["name"] in names:
            ctx.issues.error(("partitions", i, "name"), f"partition {entry['name']!r} is listed twice",
                             f"first as partitions[{names[entry['name']]}]")
            continue
        names[entry["name"]] = i
        partition = _partition(ctx, i, entry, seen)
        if partition is not None:
            out.append(partition)
    if DEFAULT_PKEY not in seen:
        out.insert(0, Partition("Default", DEFAULT_PKEY, True, (), (), None, "full", Ipoib(4096, None),
                                ctx.issues.position(()), implicit=True))
    return tuple(sorted(out, key=lambda p: not p.is_default))


def _qos(ctx: _Context, spec: Mapping[str, Any] | None, partitions: Sequence[Partition]) -> Qos | None:
    if spec is None:
        return None
    names = [p.name for p in partitions]
    levels = []
    for i, level in enumerate(spec.get("levels", [{"ulp": "default", "sl": 0}])):
        if "partition" in level and level["partition"] not in names:
            ctx.issues.error(("qos", "levels", i, "partition"), f"QoS rule names partition {level['partition']!r}, "
                                                                "which does not exist",
                             did_you_mean(level["partition"], names) or "OpenSM fails such a policy (ERR AC14)")
        levels.append(QosLevel(level["sl"], level.get("partition"), level.get("ulp")))
    stated = frozenset(k for k in spec if (*ctx.issues.prefix, "qos", k) in ctx.issues.doc.key_positions)
    return Qos(spec["max_vls"], spec["high_limit"], spec["vlarb_high"], spec["vlarb_low"], spec["sl2vl"],
               tuple(levels), stated)


def partition_sl(qos: Qos | None, partition: Partition) -> int:
    """The SL the SA gives the partition's paths: its first QoS rule (by partition; for Default also the ``ipoib``
    rule, which matches pkey 0x7fff), else the default rule. Without QoS OpenSM forces SL 0 everywhere."""
    if qos is None:
        return 0
    for level in qos.levels:
        if level.partition == partition.name or (
                partition.is_default and level.partition is None and level.ulp == "ipoib"):
            return level.sl
    return next((level.sl for level in qos.levels if level.partition is None and level.ulp in (None, "default")), 0)


def _names(ctx: _Context, where: PathKey, value: str | Sequence[str] | None, known: Sequence[str],
           fallback: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return fallback
    names = (value,) if isinstance(value, str) else tuple(value)
    for j, name in enumerate(names):
        if name not in known:
            at = where if isinstance(value, str) else (*where, j)
            ctx.issues.error(at, f"partition {name!r} does not exist",
                             did_you_mean(name, known) or f"partitions: {', '.join(known)}")
    return tuple(n for n in names if n in known)


def _traffic(ctx: _Context, spec: Mapping[str, Any], partitions: Sequence[Partition]
             ) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which partitions carry compute (NCCL, UCX) and IPoIB traffic: the spec's ``traffic``, by default Default
    for compute and the compute partitions for IPoIB. A partition named for IPoIB needs the ``ipoib`` flag (its
    broadcast group); when IPoIB follows compute by default, the check does that only where hosts run IPoIB."""
    traffic = spec.get("traffic", {})
    known = [p.name for p in partitions]
    compute = _names(ctx, ("traffic", "compute"), traffic.get("compute"), known, ("Default",))
    ipoib = _names(ctx, ("traffic", "ipoib"), traffic.get("ipoib"), known, compute)
    if "ipoib" not in traffic:
        return compute, ipoib
    by_name = {p.name: p for p in partitions}
    listed = isinstance(traffic["ipoib"], list)
    for j, name in enumerate(traffic["ipoib"] if listed else [traffic["ipoib"]]):
        if name in by_name and by_name[name].ipoib is None:
            ctx.issues.error(("traffic", "ipoib", j) if listed else ("traffic", "ipoib"),
                             f"IPoIB runs on partition {name!r}, which has no ipoib broadcast group",
                             f"give partition {name} an ipoib section (OpenSM then creates its broadcast group)")
    return compute, ipoib


def _resolved(ctx: _Context, spec: Mapping[str, Any], partitions: Sequence[Partition], qos: Qos | None,
              compute: Sequence[str]) -> tuple[Partition, ...]:
    """Each partition with its one SL and ``index0`` (a compute partition other than Default, which OpenSM keeps at
    index 0 anyway); an ``ipoib.sl`` in the spec may only repeat the partition's SL."""
    index = {entry["name"]: i for i, entry in enumerate(spec["partitions"])}
    out = []
    for p in partitions:
        sl = partition_sl(qos, p)
        stated = spec["partitions"][index[p.name]].get("ipoib", {}).get("sl") if p.name in index else None
        if stated is not None and stated != sl:
            source = "QoS is off (OpenSM forces SL 0)" if qos is None else f"its QoS level gives SL {sl}"
            ctx.issues.error(("partitions", index[p.name], "ipoib", "sl"),
                             f"the broadcast group's SL {stated} disagrees with partition {p.name}'s SL: {source}",
                             "IPoIB multicast and unicast (path records) would run on different SLs: drop ipoib.sl "
                             "or set the partition's QoS level")
        out.append(replace(p, sl=sl, index0=p.name in compute and not p.is_default))
    return tuple(out)


def _weights(table: str) -> dict[int, int]:
    out: dict[int, int] = {}
    for pair in table.split(","):
        vl, weight = pair.split(":")
        out[int(vl)] = out.get(int(vl), 0) + int(weight)
    return out


def _virtual_lanes(ctx: _Context, qos: Qos | None, partitions: Sequence[Partition], used: Sequence[str]) -> None:
    """Every SL that compute or IPoIB traffic uses reaches a VL that exists and gets a turn in VL arbitration."""
    if qos is None:
        return
    sl2vl = [int(v) for v in qos.sl2vl.split(",")]
    weights = _weights(qos.vlarb_high), _weights(qos.vlarb_low)
    for p in partitions:
        if p.name not in used:
            continue
        vl = sl2vl[p.sl]
        if vl == DROP_VL:
            ctx.issues.error(("qos", "sl2vl"), f"partition {p.name}'s SL {p.sl} maps to VL 15: its packets are dropped",
                             "OpenSM refuses such paths (ERR 1F24); map the SL to a data VL")
        elif vl >= qos.max_vls:
            ctx.issues.error(("qos", "sl2vl"), f"partition {p.name}'s SL {p.sl} maps to VL {vl}, but max_vls is "
                                               f"{qos.max_vls}", f"map it below VL {qos.max_vls} or raise max_vls")
        elif not any(table.get(vl, 0) for table in weights):
            ctx.issues.error(("qos", "vlarb_low"), f"partition {p.name}'s SL {p.sl} maps to VL {vl}, which has weight "
                                                   "0 in both VL arbitration tables: it never gets to send",
                             f"give VL {vl} a weight in vlarb_low (or vlarb_high)")


def _m_key(ctx: _Context, spec: Mapping[str, Any], compute: Sequence[str]) -> tuple[int, int]:
    """M_Key protection level and lease: protected by default once an M_Key is set, and only then. Two compute
    tenants need one: without it root on any host may SubnSet its own port's P_Key table (or a switch's) into the
    other tenant's partition (man opensm: an M_Key of 0 disables protection)."""
    has_key = "m_key" in spec.get("keys", {})
    if len(compute) > 1 and not has_key:
        ctx.issues.error(("traffic", "compute"), f"{len(compute)} compute tenants ({', '.join(compute)}) share the "
                                                 "fabric without an M_Key: root on any host can rewrite its port's "
                                                 "P_Key table and join the other tenant",
                         "set keys.m_key ({env: ...} or {file: ...}); fabricgen then protects it at level 2")
    level = spec.get("m_key_protection_level", M_KEY_PROTECTION if has_key else 0)
    lease = spec.get("m_key_lease_period", M_KEY_LEASE_S if has_key else 0)
    if not has_key:
        for key in ("m_key_protection_level", "m_key_lease_period"):
            if spec.get(key):
                ctx.issues.error((key,), f"{key} without keys.m_key protects nothing (M_Key 0 turns protection off)",
                                 "set keys.m_key, or drop it")
        return 0, 0
    if level and lease and lease <= spec["sweep_interval"]:
        ctx.issues.error(("m_key_lease_period",), f"an M_Key lease of {lease} s is not longer than sweep_interval "
                                                  f"{spec['sweep_interval']} s",
                         "OpenSM raises it to sweep_interval + 1 on its own; set it above sweep_interval")
    return level, lease


def _tenants_apart(ctx: _Context, spec: Mapping[str, Any], partitions: Sequence[Partition],
                   compute: Sequence[str]) -> None:
    """No partition besides their own makes ports of two compute tenants full members: two full members of one
    P_Key talk (the HCAs pass the packets, the SA gives paths). A shared partition names the tenants in
    limited_members (limited reach full, never each other) or says joins_tenants. UFM's Default is UFM's own."""
    tenants = [p for p in partitions if p.name in compute]
    index = {entry["name"]: i for i, entry in enumerate(spec["partitions"])}
    nodes = [n for n in ctx.nodes if n.group in ctx.attached_groups]
    for p in partitions:
        if p.name in compute or p.joins_tenants or (p.is_default and spec["flavor"] == "ufm"):
            continue
        met = sorted({t.name for n in nodes for nic in n.profile.nics(ctx.nic_role) if p.full_member(n, nic)
                      for t in tenants if t.full_member(n, nic)})
        if len(met) > 1:
            where: PathKey = ("partitions", index[p.name], "members") if p.name in index else ("partitions",)
            what = "fabricgen's Default (every port full, the spec names none)" if p.implicit else f"partition {p.name}"
            ctx.issues.error(where, f"{what} makes ports of tenants {', '.join(met)} full members of one P_Key "
                                    f"(0x{p.pkey:04x}): they can reach each other through it",
                             "list the tenants' nodes in limited_members and only the shared services' nodes in "
                             "members (limited members reach full members, never each other)" if not p.is_default
                             else "add Default with membership: limited")


def opensm_needed(speed: str) -> tuple[tuple[int, ...], str] | None:
    """The first OpenSM release that rates ports of this speed, and why, when 3.3.23 cannot: upstream computes an
    NDR port's rate only from 3.3.24 on (bf850acd "Support NDR devices"), so 3.3.23 rates it at most 40 Gb/s
    (LinkSpeedActive, 4x QDR), refuses every join to a faster IPoIB group and hands every rdma_cm user a 40 Gb/s
    static rate; upstream has no XDR rate at all (3.3.24 is its last release), so XDR needs NVIDIA's OpenSM (5.x)."""
    if speed.startswith("NDR"):
        return (3, 3, 24), ("before 3.3.24 OpenSM rates NDR ports at most 40 Gb/s: IPoIB joins to a faster broadcast "
                            "group fail and rdma_cm paths are throttled to 40 Gb/s")
    if speed.startswith("XDR"):
        return (5,), "upstream OpenSM (3.3.24, its last release) has no XDR rate: it takes NVIDIA's OpenSM (5.x)"
    return None


def _version(ctx: _Context, spec: Mapping[str, Any], speed: str) -> str:
    """The OpenSM release the spec states (flavor opensm only), refused when it cannot rate the fabric's links; an
    unstated one is a plan warning (the check)."""
    stated: str = spec.get("opensm_version", "")
    if not stated:
        return ""
    if spec["flavor"] != "opensm":
        ctx.issues.error(("opensm_version",), "opensm_version is for flavor: opensm",
                         "UFM runs NVIDIA's OpenSM of its own release: drop opensm_version")
        return ""
    needed = opensm_needed(speed)
    if needed is not None and tuple(int(x) for x in stated.split(".")) < needed[0]:
        ctx.issues.error(("opensm_version",), f"OpenSM {stated} cannot run this {speed} fabric: {needed[1]}",
                         "install OpenSM >= 3.3.24 (NDR) or NVIDIA's OpenSM from DOCA-OFED/MLNX_OFED (5.x; XDR) on "
                         "the SM hosts and state that release, or use flavor: ufm")
    return stated


def _flavor(ctx: _Context, spec: Mapping[str, Any], partitions: Sequence[Partition],
            hosts: Sequence[tuple[str, int]]) -> None:
    """What UFM decides itself: Default's membership (every HCA a full member) and an HA pair of two servers."""
    if spec["flavor"] != "ufm":
        return
    for i, entry in enumerate(spec["partitions"]):
        if entry["name"] == "Default" and entry["membership"] != "full":
            ctx.issues.error(("partitions", i, "membership"), "UFM makes every HCA port a full member of Default "
                                                              "itself; it cannot be limited here",
                             "drop the Default entry (UFM user manual, Appendix - Partitioning), or use flavor: opensm")
    if len(hosts) > UFM_HA_HOSTS:
        ctx.issues.error(("hosts",), f"UFM runs one SM, failing over within an HA pair; {len(hosts)} hosts are listed",
                         "list the two UFM servers of the HA pair")


def _adaptive_routing(ctx: _Context, spec: Mapping[str, Any], engines: Sequence[str],
                      partitions: Sequence[Partition], compute: Sequence[str]) -> AdaptiveRouting | None:
    """NVIDIA's SM has adaptive routing and SHIELD (on by default under UFM; NVIDIA's own OpenSM 5.x under flavor
    opensm where the spec asks for it); upstream OpenSM has neither: it has no ar_ engine and reads shield_mode and
    ar_sl_mask as unrecognized tokens it skips (shown on ibsim). The SLs adaptive routing applies to must hold every
    compute partition's, or NCCL's traffic stays static."""
    stated = spec.get("adaptive_routing")
    if not nvidia_sm(spec):
        if stated is not None:
            ctx.issues.error(("adaptive_routing",),
                             "upstream OpenSM has no adaptive routing or SHIELD: with an ar_ engine it routes nothing "
                             "(the subnet never comes up), and it skips shield_mode and ar_sl_mask as unrecognized "
                             "tokens", "drop adaptive_routing, or run NVIDIA's SM: flavor: ufm, or NVIDIA's OpenSM "
                                       "(DOCA-OFED) with opensm_version 5.x")
        return None
    if spec["flavor"] != "ufm" and stated is None:
        return None  # standalone NVIDIA OpenSM: routed as the spec's engines say
    given = stated or {}
    levels = given.get("service_levels")
    ar = AdaptiveRouting(given.get("enabled", True), given.get("shield", "on"), tuple(levels) if levels else None)
    adaptive = [e for e in engines if e in AR_ENGINES]
    if engines and ar.enabled and not adaptive and (
            *ctx.issues.prefix, "adaptive_routing", "enabled") in ctx.issues.doc.key_positions:
        ctx.issues.error(("adaptive_routing", "enabled"), f"adaptive routing is on, but routing_engine "
                                                          f"({', '.join(engines)}) has no adaptive engine",
                         "route with ar_ftree, ar_updn, or drop routing_engine for fabricgen's default")
    if engines and not ar.enabled and adaptive:
        ctx.issues.error(("adaptive_routing", "enabled"), f"adaptive routing is off, but routing_engine names "
                                                          f"{', '.join(adaptive)}",
                         "route with ftree, updn, or turn adaptive routing on")
    if ar.service_levels is not None:
        for p in partitions:
            if p.name in compute and p.sl not in ar.service_levels:
                ctx.issues.error(("adaptive_routing", "service_levels"),
                                 f"compute partition {p.name} runs on SL {p.sl}, which adaptive routing leaves out: "
                                 "NCCL's traffic there is routed statically",
                                 f"add {p.sl} to service_levels, or drop service_levels for NVIDIA's default (all SLs)")
    return ar


def operational_qos(qos: Qos, vls: int) -> Qos:
    """The QoS tables as ports running ``vls`` operational VLs (a power of two) carry them out. OpenSM masks every
    VL of the VL arbitration and SL2VL tables to ``vl & (vls - 1)`` (osm_qos.c, vlarb_update_table_block and
    sl2vl_update_table; VL 15 stays), which would fold the weights of VLs the ports lack onto VL0 and VL1; so the
    arbitration tables keep only the entries of the VLs that run, and SL2VL is written masked as OpenSM would."""
    def kept(table: str) -> str:
        return ",".join(e for e in table.split(",") if int(e.split(":")[0]) < vls) or "0:0"
    sl2vl = ",".join(v if int(v) == DROP_VL else str(int(v) & (vls - 1)) for v in qos.sl2vl.split(","))
    return replace(qos, max_vls=min(qos.max_vls, vls), vlarb_high=kept(qos.vlarb_high),
                   vlarb_low=kept(qos.vlarb_low), sl2vl=sl2vl)


def _sharp_lanes(ctx: _Context, qos: Qos, partitions: Sequence[Partition], used: Sequence[str]) -> None:
    """With SHARP the subnet runs on 2 operational VLs (max_op_vls 2, NVIDIA's advice for streaming aggregation):
    an SL of compute or IPoIB traffic mapped above VL 1 would share a VL it was not given (OpenSM masks each port's
    SL2VL to its operational VLs, osm_qos.c)."""
    sl2vl = [int(v) for v in qos.sl2vl.split(",")]
    for p in partitions:
        if p.name in used and SHARP_OPERATIONAL_VLS <= sl2vl[p.sl] < DROP_VL:
            ctx.issues.error(("qos", "sl2vl"), f"partition {p.name}'s SL {p.sl} maps to VL {sl2vl[p.sl]}, but with "
                                               f"SHARP the subnet runs on {SHARP_OPERATIONAL_VLS} operational VLs "
                                               f"(max_op_vls {SHARP_OPERATIONAL_VLS}, NVIDIA's advice for streaming "
                                               "aggregation): it would share a lower VL",
                             f"map the SLs your partitions use to VLs 0..{SHARP_OPERATIONAL_VLS - 1}")


def _sharp(ctx: _Context, spec: Mapping[str, Any], engines: Sequence[str], compute: Sequence[str]) -> Sharp | None:
    """SHARP's partition (a compute partition: the jobs' HCAs are its full members at P_Key index 0) and NVIDIA's SM,
    which sharp_am needs: it reads the fabric from NVIDIA OpenSM's subnet dump and runs beside its master, on a server
    that is no compute node; upstream OpenSM has no SHARP at all. The routing engines are those sharp_am builds trees
    on."""
    stated = spec.get("sharp")
    if stated is None:
        return None
    if "partition" in stated:
        partition = stated["partition"]
        if partition not in compute:
            ctx.issues.error(("sharp", "partition"), f"SHARP runs on partition {partition!r}, which carries no compute "
                                                     f"traffic (traffic.compute: {', '.join(compute)})",
                             "name a compute partition: NCCL's SHARP jobs run where its HCAs are full members")
    elif len(compute) == 1:
        partition = compute[0]
    else:
        ctx.issues.error(("sharp",), f"the fabric has {len(compute)} compute partitions ({', '.join(compute)}): "
                                     "sharp_am runs SHARP on one static P_Key", "name it in sharp.partition")
        partition = compute[0]
    if not nvidia_sm(spec):
        ctx.issues.error(("sharp",), "SHARP needs NVIDIA's subnet manager: sharp_am builds its trees from NVIDIA "
                                     "OpenSM's subnet dump and runs beside its master; upstream OpenSM has no SHARP",
                         "use flavor: ufm, or run NVIDIA's OpenSM (DOCA-OFED) and state opensm_version 5.x")
    roles = {n.name: n.profile.role for n in ctx.nodes}
    for i, host in enumerate(spec["hosts"]):
        if roles.get(host["name"]) == "compute":
            ctx.issues.error(("hosts", i, "name"),
                             f"SM host {host['name']} is a compute node, but sharp_am runs beside the master SM on a "
                             "dedicated server that cannot serve as a compute node (NVIDIA SHARP deployment guide, "
                             "Setting up NVIDIA SHARP Environment)", "run the SM (and sharp_am) on management nodes")
    for i, engine in enumerate(engines):
        if engine not in SHARP_ENGINES:
            ctx.issues.error(("routing_engine",) if isinstance(spec["routing_engine"], str) else ("routing_engine", i),
                             f"sharp_am builds trees only on fabrics routed by {', '.join(SHARP_ENGINES)}, not "
                             f"{engine}", "route the fat tree with ftree/updn (ar_ftree/ar_updn under UFM)")
    return Sharp(partition, stated["smx_protocol"], ctx.issues.position(("sharp",)))


def _guids(ctx: _Context, spec: Mapping[str, Any]) -> tuple[str, Mapping[str, GuidEntry]]:
    source = spec.get("guids")
    if source is None:
        return "unknown", {}
    if source == "simulated":
        return "simulated", {}
    written = source["file"]
    path = Path(ctx.issues.doc.source).parent / written
    try:
        return "inventory", load_inventory(path)
    except SpecError as exc:
        ctx.issues.extend(exc.issues)
    except UnreadableInventoryError as exc:  # no line of the file to point at: the field that names it
        base = "the working directory, as the spec came from stdin" if ctx.issues.doc.source == STDIN else \
            "the spec's directory"
        ctx.issues.error(("guids", "file"), f"cannot read the GUID inventory {written!r} ({path}): {exc.reason}",
                         "" if Path(written).is_absolute() else f"a relative path is read from {base}")
    return "unknown", {}


def build(context: BuildContext, cluster: Cluster, fabric: Fabric) -> Fabric:
    """The fabric with its subnet manager: an InfiniBand fabric always has one (the schema's defaults when the
    spec gives none); any other fabric may not."""
    path, spec = context.fabric_spec(fabric)
    if fabric.type is FabricType.INFINIBAND and "subnet_manager" not in spec:
        spec = {**spec, "subnet_manager": with_defaults({}, "sections/subnet_manager.schema.json")}
    if "subnet_manager" not in spec:
        return fabric
    if fabric.type is not FabricType.INFINIBAND:
        context.issues.error((*path, "subnet_manager"), "only InfiniBand fabrics have a subnet manager",
                             "remove subnet_manager or use type: infiniband")
        return fabric
    profiles = {g.pattern: cluster.profiles[g.profile] for g in cluster.groups if g.pattern in fabric.node_groups}
    ctx = _Context(context.issues.at(*path, "subnet_manager"), cluster.nodes, fabric.node_groups,
                   rail_count(profiles.values()), fabric.role.nic_role)
    return replace(fabric, subnet_manager=_subnet_manager(ctx, spec["subnet_manager"], fabric.speed.name))


def _subnet_manager(ctx: _Context, spec: Mapping[str, Any], speed: str) -> SubnetManager:
    engines = _engines(ctx, spec, speed)
    hosts = _hosts(ctx, spec)
    partitions = _partitions(ctx, spec)
    qos = _qos(ctx, spec.get("qos"), partitions)
    compute, ipoib = _traffic(ctx, spec, partitions)
    partitions = _resolved(ctx, spec, partitions, qos, compute)
    sharp = _sharp(ctx, spec, engines, compute)
    if sharp is not None and qos is not None:
        _sharp_lanes(ctx, qos, partitions, (*compute, *ipoib))
        qos = operational_qos(qos, SHARP_OPERATIONAL_VLS)
    _virtual_lanes(ctx, qos, partitions, (*compute, *ipoib))
    _tenants_apart(ctx, spec, partitions, compute)
    _flavor(ctx, spec, partitions, hosts)
    version = _version(ctx, spec, speed)
    adaptive = _adaptive_routing(ctx, spec, engines, partitions, compute)
    protection, lease = _m_key(ctx, spec, compute)
    keys = tuple((name, Secret(k.get("env", ""), k.get("file", "")))
                 for name, k in sorted(spec.get("keys", {}).items()))
    guids, inventory = _guids(ctx, spec)
    return SubnetManager(spec["flavor"], engines, spec["fallback_to_minhop"], hosts, spec["lmc"],
                         spec["sweep_interval"], spec["config_dir"], partitions, qos, keys, guids, inventory,
                         ctx.issues.position(()), compute, ipoib, protection, lease, version, adaptive, sharp)
