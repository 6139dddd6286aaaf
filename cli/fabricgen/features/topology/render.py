"""Target ``topology``: the compiled fabric as readable, diffable JSON (one switch or link per line)
plus the cluster summary. Until more targets exist this is what makes the pipeline real end to end, and it
stays useful afterwards as the reviewable record of every decision the compiler made."""

from __future__ import annotations

import json
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.features.topology.explain import cluster_summary, fabric_summary
from fabricgen.model.topology import FabricTopology, Link, Switch, Topology


def _row(data: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in data.items() if v is not None}, separators=(", ", ": "))


def _switch_row(sw: Switch) -> str:
    return _row(
        {
            "name": sw.name,
            "tier": sw.tier.value,
            "model": sw.model.name,
            "su": sw.su,
            "rail": sw.rail,
            "pod": sw.pod,
            "rack": sw.rack,
            "u": sw.u,
            "down_ports": sw.down_ports,
            "up_ports": sw.up_ports,
        }
    )


def _link_row(link: Link) -> str:
    nic = link.nic
    return _row(
        {
            "tier": link.tier,
            "a": link.a.device,
            "a_port": link.a.name,
            "a_num": link.a.number,
            "z": link.z.device,
            "z_port": link.z.name,
            "z_num": link.z.number,
            "speed": link.speed,
            "rail": link.rail,
            "su": link.su,
            "dev": nic.dev if nic and nic.dev else None,
            "netdev": nic.netdev if nic and nic.netdev else None,
            "gpu": nic.gpu if nic else None,
        }
    )


def _fabric_artifact(ft: FabricTopology) -> Artifact:
    content = render_template(
        "topology/fabric.json.j2",
        summary=json.dumps(fabric_summary(ft), sort_keys=True),
        switches=[_switch_row(s) for s in ft.switches],
        links=[_link_row(link) for link in ft.links],
    )
    return Artifact(f"topology/{ft.fabric.name}.json", content)


def render(topology: Topology) -> list[Artifact]:
    source = PurePosixPath(topology.cluster.source).name
    summary = render_template("topology/summary.yaml.j2", s=cluster_summary(topology), source=source)
    return [Artifact("topology/summary.yaml", summary), *(_fabric_artifact(ft) for ft in topology.fabrics)]
