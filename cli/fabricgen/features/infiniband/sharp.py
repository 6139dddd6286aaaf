"""NVIDIA SHARP on an InfiniBand fabric: what the switches can do (sharp.yaml, per ASIC generation, with sources),
the checks that need the compiled fabric, and the aggregation manager's settings.

sharp_am builds one reduction tree per job and rail on the fabric's switches (dynamic trees, SHARP's default since
3.4); NCCL's SHARP plugin (nccl-rdma-sharp-plugins) opens one streaming-aggregation flow per HCA rail, and NVIDIA
asks for a fabric whose leaves each serve one rail of every server (HPC-X manual, NCCL-RDMA-SHARP Plugins: "leaf
level switches are connected to the same HCA rail from each server"), which a rail-optimized fabric is.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fabricgen.core.errors import Finding
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.feature import fabric_error, fabric_warning
from fabricgen.features.infiniband.build import SHARP_ENGINES
from fabricgen.features.infiniband.view import am_ucx_ports, ib_fabric, routing_engines
from fabricgen.model.infiniband import FULL_MEMBER, SubnetManager
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

SMX_PROTOCOLS = {"ucx": 1, "sockets": 2}  # sharp_am smx_protocol (SHARP manual, sharp_am Network Interfaces)
SMX_UNIX_SOCKETS = 4  # smx_enabled_protocols bit 3: the unix socket UFM talks to sharp_am on
SMX_DEFAULT_ENABLED = 6  # sharp_am's default smx_enabled_protocols: sockets and unix sockets


@dataclass(frozen=True)
class Generation:
    """SHARP of one switch ASIC generation (sharp.yaml); tree counts 0 where NVIDIA publishes none."""

    name: str
    version: int
    low_latency_trees: int
    streaming_trees: int
    streaming_limit: str  # "switch": one active streaming tree per switch; "port": per port; "" unknown
    source: str


@cache
def generations() -> Mapping[str, Generation]:
    data = safe_yaml(Path(__file__).with_name("sharp.yaml").read_text(encoding="utf-8"))
    return {name: Generation(name, int(g["version"]), int(g.get("low_latency_trees", 0)),
                             int(g.get("streaming_trees", 0)), g.get("streaming_limit", ""), g["source"])
            for name, g in data["generations"].items()}


def fabric_generation(ft: FabricTopology) -> Generation | None:
    """The SHARP every switch of the fabric has: the oldest generation among them (a mixed fabric does what its
    oldest switches do), None when any switch has none."""
    known = generations()
    names = {sw.model.asic for sw in ft.switches}
    if not names or not names <= known.keys():
        return None
    return min((known[n] for n in names), key=lambda g: g.version)


def _leaf_rails(topology: Topology, ft: FabricTopology) -> dict[str, set[int]]:
    """Leaf -> the rails of compute-node HCAs cabled to it."""
    compute = {n.name for n in topology.cluster.nodes if n.profile.role == "compute"}
    rails: dict[str, set[int]] = defaultdict(set)
    for link in ft.links:
        rail = link.rail if link.rail is not None else link.nic.rail if link.nic is not None else None
        if link.tier == NODE_LEAF and link.a.device in compute and rail is not None:
            rails[link.z.device].add(rail)
    return rails


def sharp_findings(topology: Topology, ft: FabricTopology, sm: SubnetManager) -> Iterator[Finding]:
    """Switches with SHARP, a tree sharp_am can build on (a fat tree routed by ftree/updn), one rail per leaf, and
    the streaming-aggregation limit of Quantum (one active tree per switch) where spines carry several rails."""
    if sm.sharp is None:
        return
    fabric = ft.fabric
    models = sorted({sw.model.name for sw in ft.switches if sw.model.asic not in generations()})
    if models:
        yield fabric_error(fabric, "sharp", fabric.name, f"has switches without SHARP ({', '.join(models)}): "
                                                         "sharp_am has no aggregation nodes there",
                           "use Quantum (QM87xx), Quantum-2 (QM97xx) or Quantum-X800 switches, or drop sharp "
                           "(catalog field sharp names a switch's SHARP)")
    engines = routing_engines(sm, ft.tiers, fabric.speed.name)
    odd = [e for e in engines if e not in SHARP_ENGINES]
    if odd:
        yield fabric_error(fabric, "sharp", fabric.name, f"routes with {', '.join(odd)}: sharp_am builds trees only "
                                                         f"on fabrics routed by {', '.join(SHARP_ENGINES)}",
                           "a single switch routes with minhop: SHARP needs a fat tree of two or more tiers"
                           if ft.tiers < 2 else "route with ftree/updn (ar_ftree/ar_updn under UFM)")
    mixed = sorted(f"{leaf} (rails {', '.join(map(str, sorted(r)))})"
                   for leaf, r in _leaf_rails(topology, ft).items() if len(r) > 1)
    if mixed:
        shown = ", ".join(mixed[:3]) + (f" and {len(mixed) - 3} more" if len(mixed) > 3 else "")
        yield fabric_error(fabric, "sharp", fabric.name,
                           f"has leaves serving several rails: {shown}. NCCL's SHARP plugin opens one streaming "
                           "aggregation flow per HCA rail and a switch allows at most two; NVIDIA requires each leaf "
                           "to serve one rail of every server",
                           "cable the compute fabric rail-optimized (topology.kind: rail-optimized)")
    if sm.sharp.smx_protocol == "ucx" and not am_ucx_ports(sm, ib_fabric(topology, ft)):
        yield fabric_warning(fabric, "sharp", fabric.name,
                             "runs sharp_am over UCX, but the SM hosts have no second HCA port of one device name on "
                             "the fabric for it (smx_ucx_interface): sharp_am talks UCX on the SM's port, whose P_Key "
                             "index 0 holds Default, and UCX reaches the jobs' HCAs only on their index-0 P_Key, "
                             f"partition {sm.sharp.partition}; SHARP jobs may fail to reach sharp_am",
                             "give each SM host a second port on the fabric (same RDMA device name), or "
                             "sharp.smx_protocol: sockets")
    generation = fabric_generation(ft)
    if generation is not None and generation.streaming_limit == "switch" and ft.tiers > 1 and ft.rails > 1:
        yield fabric_warning(fabric, "sharp", fabric.name,
                             f"runs SHARP on {generation.name} switches, which hold one active streaming-aggregation "
                             f"tree per switch: the {ft.rails} rails' trees of a job meet on every spine, so all but "
                             "one rail fall back to low-latency aggregation or none",
                             "expect SAT on one rail per job on Quantum (HDR); Quantum-2 holds one per port")


def sharp_am_settings(sm: SubnetManager, ft: FabricTopology, ufm: bool, ucx_device: str = ""
                      ) -> dict[str, tuple[str, str]]:
    """setting -> (value, why) for sharp_am.cfg: the P_Key its jobs run on, the protocol to the jobs and, for UCX,
    the port it talks UCX on (``ucx_device``: each SM host's port of that name, SHARP's partition at its index 0)."""
    assert sm.sharp is not None
    partition = sm.partition(sm.sharp.partition)
    out = {"ib_qpc_pkey": (f"0x{FULL_MEMBER | partition.pkey:04x}",
                           f"SHARP's QPs run on partition {partition.name} (0x{partition.pkey:04x}), where NCCL runs; "
                           "the full-membership bit 0x8000 set as NVIDIA asks (SHARP manual, Operating NVIDIA SHARP "
                           "with PKeys)")}
    for key, kind in (("ib_qpc_sl", "low-latency"), ("ib_sat_qpc_sl", "streaming-aggregation")):
        out[key] = (str(partition.sl), f"the SL of SHARP's {kind} QPs on the switches: partition {partition.name}'s "
                                       f"(SL {partition.sl}), where NCCL runs, so adaptive routing (ar_sl_mask) and VL "
                                       "arbitration treat it as NCCL's (a UFM recipe for a rail-optimized SHARP "
                                       "fabric, kobibar/OpenAI.recipe.old, a personal repository, sets ib_qpc_sl to "
                                       "the compute SL); SHARP known issue 3371820: congestion control cannot run on "
                                       "sharp_am's SLs")
    protocol = SMX_PROTOCOLS[sm.sharp.smx_protocol]
    out["smx_protocol"] = (str(protocol), {"sockets": "2 = sockets: libsharp reaches sharp_am over TCP port 6126 "
                                                      "(IPoIB or the in-band network)",
                                           "ucx": "1 = UCX: libsharp reaches sharp_am over InfiniBand"}[
        sm.sharp.smx_protocol])
    if sm.sharp.smx_protocol == "ucx":
        enabled = SMX_DEFAULT_ENABLED | SMX_PROTOCOLS["ucx"]
        out["smx_enabled_protocols"] = (str(enabled), "bitmask of the transports sharp_am listens on: UCX (1) with "
                                                      "sockets (2) and the unix socket (4) UFM uses, its default 6 "
                                                      "plus the protocol chosen" if ufm else
                                        "bitmask of the transports sharp_am listens on: UCX (1), sockets (2), unix "
                                        "socket (4): sharp_am's default 6 plus the protocol chosen")
        if ucx_device:
            out["smx_ucx_interface"] = (f"{ucx_device}:1", f"sharp_am talks UCX to the jobs on each SM host's "
                                        f"{ucx_device}, whose P_Key index 0 holds partition {partition.name} as the "
                                        "jobs' HCAs do (UCX connects two ports only on one P_Key); the SM's own port "
                                        "keeps Default at index 0 (SHARP manual, sharp_am Network Interfaces: "
                                        "smx_ucx_interface)")
    return out


def capacity(ft: FabricTopology) -> str:
    """What the switches' tree limit allows, for the reader of sharp_am.cfg: each job takes one streaming tree per
    rail, and the subnet holds as many as its oldest switch generation does."""
    generation = fabric_generation(ft)
    if generation is None or not generation.streaming_trees:
        return ""
    rails = max(ft.rails, 1)
    return (f"{generation.name} (SHARPv{generation.version}) holds {generation.streaming_trees} streaming-aggregation "
            f"and {generation.low_latency_trees} low-latency trees in the subnet; a job takes one per rail, so at most "
            f"{generation.streaming_trees // rails} jobs on all {rails} rails stream at once ({generation.source})")
