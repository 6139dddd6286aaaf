"""Write the ibsim net files behind the recordings here, from the plan of ``tiny.yaml``.

``python tests/data/ibnetdiscover/make_netfiles.py`` (from the repository root) writes ``tiny-ok.net`` (the plan),
``tiny-swapped.net`` (the host ends of cables compute-su01-leaf0-001 and compute-su01-leaf1-001 swapped: node01's two
rails crossed) and ``tiny-faults.net`` (one cable missing, one unplanned cable, a NodeDescription not set, a duplicate
NodeDescription, one link at 2x width, one at EDR). ``record.sh`` then boots each in ibsim and records
ibnetdiscover. Links run at 4xHDR: Debian's ibsim 0.10 knows no NDR (it turns ``4xNDR`` into ``4xSDR``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from fabricgen.features.infiniband.view import IbFabric, IbLink, IbNode, ib_fabric
from fabricgen.pipeline import compile_spec

HERE = Path(__file__).resolve().parent
RATE = "4xHDR"


def plan() -> IbFabric:
    topology = compile_spec(HERE / "tiny.yaml").topology
    return ib_fabric(topology, topology.fabric("compute"))


def _net_id(node: IbNode) -> str:
    return ("S-" if node.kind == "switch" else "H-") + node.description.replace(" ", "-")


def net_file(ib: IbFabric, links: Iterable[IbLink], rates: dict[str, str], descriptions: dict[str, str]) -> str:
    """ibsim net syntax: GUID counters before each record, both ends of every link, a rate per port line."""
    ids = {n.description: _net_id(n) for n in ib.nodes}
    ports: dict[str, dict[int, tuple[str, int, str]]] = {n.description: {} for n in ib.nodes}
    for link in links:
        rate = rates.get(link.cable, RATE)
        ports[link.a][link.a_port] = (link.z, link.z_port, rate)
        ports[link.z][link.z_port] = (link.a, link.a_port, rate)
    lines = [f"# {ib.name} fabric of tiny.yaml for ibsim 0.10; written by make_netfiles.py"]
    for node in ib.nodes:
        assert node.node_guid is not None
        kind, counter = ("Switch", "switchguid") if node.kind == "switch" else ("Hca", "caguid")
        reported = descriptions.get(node.description, node.description)
        lines += ["", f"{counter}={node.node_guid:#018x}",
                  f'{kind} {node.ports} "{ids[node.description]}" # "{reported}"']
        for port, (remote, remote_port, rate) in sorted(ports[node.description].items()):
            lines.append(f'[{port}] "{ids[remote]}"[{remote_port}] # lid 0 {rate}')
    return "\n".join(lines) + "\n"


def swapped(links: tuple[IbLink, ...], first: str, second: str) -> list[IbLink]:
    """Swap the z ends (switch side) of two cables."""
    by_cable = {link.cable: link for link in links}
    one, two = by_cable[first], by_cable[second]
    out = []
    for link in links:
        if link.cable == first:
            link = dataclasses.replace(link, z=two.z, z_port=two.z_port)
        elif link.cable == second:
            link = dataclasses.replace(link, z=one.z, z_port=one.z_port)
        out.append(link)
    return out


def main() -> None:
    ib = plan()
    (HERE / "tiny-ok.net").write_text(net_file(ib, ib.links, {}, {}), encoding="utf-8")
    (HERE / "tiny-swapped.net").write_text(
        net_file(ib, swapped(ib.links, "compute-su01-leaf0-001", "compute-su01-leaf1-001"), {}, {}), encoding="utf-8")
    faults = [link for link in ib.links if link.cable != "compute-spine002-004"]
    faults.append(IbLink("compute-su01-leaf0", 9, "compute-su01-leaf1", 9, "NDR", "extra", "extra"))
    (HERE / "tiny-faults.net").write_text(net_file(
        ib, faults, {"compute-spine001-002": "2xHDR", "compute-spine002-002": "4xEDR"},
        {"node02 mlx5_0": "MT4129 ConnectX7 Mellanox Technologies", "node03 mlx5_1": "node04 mlx5_1"},
    ), encoding="utf-8")


if __name__ == "__main__":
    main()
