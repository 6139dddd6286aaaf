"""What a compiled cluster amounts to: counts per tier, bandwidth, oversubscription, a switch bill of materials.

Pure data (plain dicts of str/int/float) so the CLI can print it as a table or JSON and renderers can embed it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fabricgen.model.cluster import Tier
from fabricgen.model.topology import LINK_TIERS, NODE_LEAF, FabricTopology, Topology


def _bisection_gbps(ft: FabricTopology) -> float:
    """Half the narrowest tier's capacity: hosts, leaf uplinks, and (3 tiers) spine uplinks."""
    per_tier = Counter(link.tier for link in ft.links)
    host = per_tier[NODE_LEAF] * ft.fabric.speed.gbps
    capacities = [host] + [per_tier[t] * ft.fabric.uplink_speed.gbps for t in LINK_TIERS[1 : ft.tiers]]
    return min(capacities) / 2


def _leaf_ratio(ft: FabricTopology) -> float:
    leaves = [s for s in ft.switches_in(Tier.LEAF) if s.up_ports]
    if not leaves:
        return 0.0
    return max(
        (s.down_ports * ft.fabric.speed.gbps) / (s.up_ports * ft.fabric.uplink_speed.gbps) for s in leaves
    )


def server_blocks(ft: FabricTopology) -> list[dict[str, Any]]:
    """Per leaf with a declared server block (``topology.server_ports``): the block's ports (faceplate names, in
    port order) the servers use and those still free, which no compute node takes: where a server added goes."""
    cabled = {(link.z.device, link.z.number) for link in ft.links_in(NODE_LEAF)}
    return [{"leaf": sw.name, "ports": len(sw.server_block),
             "used": [p.name for p in sw.server_block if (sw.name, p.number) in cabled],
             "free": [p.name for p in sw.server_block if (sw.name, p.number) not in cabled]}
            for sw in ft.switches if sw.server_block]


def fabric_summary(ft: FabricTopology) -> dict[str, Any]:
    switches = Counter(s.tier.value for s in ft.switches)
    links = Counter(link.tier for link in ft.links)
    blocks = server_blocks(ft)
    return {
        "name": ft.fabric.name,
        "role": ft.fabric.role.value,
        "type": ft.fabric.type,
        "kind": ft.fabric.topology.kind.value,
        "speed": ft.fabric.speed.name,
        "uplink_speed": ft.fabric.uplink_speed.name,
        "tiers": ft.tiers,
        "scalable_units": ft.scalable_units,
        "rails": ft.rails,
        "pods": ft.pods,
        "host_ports": ft.host_ports,
        "switches": {t.value: switches.get(t.value, 0) for t in Tier if switches.get(t.value)},
        "switch_models": {t.value: ft.fabric.switches[t].name for t in Tier if switches.get(t.value)},
        "links": {t: links[t] for t in LINK_TIERS if links.get(t)},
        "switch_total": len(ft.switches),
        "link_total": len(ft.links),
        "bisection_gbps": _bisection_gbps(ft),
        "oversubscription": round(_leaf_ratio(ft), 3),
        **({"server_blocks": blocks} if blocks else {}),
    }


def cluster_summary(topology: Topology) -> dict[str, Any]:
    cluster = topology.cluster
    models = Counter(s.model.name for ft in topology.fabrics for s in ft.switches)
    cloud = cluster.cloud
    return {
        "cluster": cluster.metadata.name,
        "site": cluster.metadata.site,
        "nodes": len(cloud.names) if cloud else len(cluster.nodes),
        "gpus": len(cloud.names) * cloud.instance_type.gpus if cloud else sum(n.profile.gpus for n in cluster.nodes),
        "racks_used": len({n.rack.name for n in cluster.nodes}),
        "fabrics": [fabric_summary(ft) for ft in topology.fabrics],
        "switch_bom": dict(sorted(models.items())),
        "switch_total": sum(models.values()),
        "link_total": sum(len(ft.links) for ft in topology.fabrics),
        **({"cloud": {"provider": cloud.provider, "zone": cloud.zone, "instance_type": cloud.instance_type.name,
                      "interfaces": cloud.interfaces, "interface_kind": cloud.interface_kind}} if cloud else {}),
    }
