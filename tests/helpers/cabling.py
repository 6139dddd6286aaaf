"""What the cabling tests share: views of a compiled cable plan (splitters, breakouts), the geometry spec (cabling,
placement), the XLSX writer's sample workbook and the diagram of the example specs (unit and external)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from functools import cache

from fabricgen.features.cabling import diagram
from fabricgen.features.cabling.diagram import LEAF, NODE, Box, Diagram, Edge, FabricDiagram
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.features.cabling.xlsx import Sheet, Value, write_workbook
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.spec.load import load_text
from fabricgen.stages.build import build_cluster
from fabricgen.stages.compile import compile_topology
from tests.conftest import INVENTORIES, REPO


def host_cables(topology: Topology) -> list[Cable]:
    """The node-to-leaf cables: where host splitters and breakouts are."""
    return [c for c in topology.cables if c.tier == "node-leaf"]


def by_physical(cables: list[Cable]) -> dict[str, list[Cable]]:
    """Cables (one per logical link) grouped by the physical cable they are legs of."""
    groups: dict[str, list[Cable]] = defaultdict(list)
    for cable in cables:
        groups[cable.physical].append(cable)
    return groups


def bom_counts(topology: Topology) -> dict[str, int]:
    """The bill of materials as part -> count."""
    lines = bill_of_materials((s.model.name for f in topology.fabrics for s in f.switches), topology.cables)
    return {line.part: line.count for line in lines}


# -- the geometry spec ------------------------------------------------------------------------------------------
# A small site with explicit facility geometry (rack width, row pitch, tray height, slack): 8 HGX nodes in row A,
# an InfiniBand compute fabric and a top-of-rack out-of-band fabric.
GEOMETRY_SPEC = """
apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: geo, site: s1}
facility:
  rack_units: 48
  rack_width_m: 0.6
  row_pitch_m: 2.4
  tray_height_m: 0.5
  slack_m: 1.0
  rows:
    - {name: A, racks: 4}
    - {name: N, racks: 1, kind: network}
nodes:
  - {name: "hgx{n:02d}", count: 8, profile: hgx-8gpu-generic, placement: {rows: [A], per_rack: 2, start_u: 2}}
fabrics:
  compute:
    type: infiniband
    speed: NDR
    switch: QM9700
    topology: {kind: rail-optimized, scalable_unit: 8}
  oob:
    type: ethernet
    speed: 1G
    uplink_speed: 100G
    switch: {leaf: SN2201, spine: SN4700}
    topology: {kind: top-of-rack, uplinks: 2}
"""


# -- the XLSX writer's sample workbook --------------------------------------------------------------------------
# A small two-sheet workbook of the XLSX writer (fabricgen.features.cabling.xlsx), row fills from a palette.
XLSX_PALETTE = ("1F77B4", "ff7f0e", "2CA02C")
XLSX_HEADER = ("Cable", "From", "Port", "Length m", "Rail", "Note")
XLSX_ROWS: list[tuple[Value, ...]] = [
    ("C0001", "node-001", "p1", 3.5, 0, None),
    ("C0002", "node-001", "p2", 12, 1, "spare"),
    ("C0003", "node-002", "p1", 0.25, 2, ""),
    ("C0004", "node-002", "p2", -7, 0, None),
    ("C0005", "node-003", "p1", 1e20, None, "last"),
]
XLSX_FILLS = [0, 1, 2, 0, None]


def xlsx_rows() -> Iterator[tuple[Value, ...]]:
    """A generator, so the tests prove the writer consumes rows once."""
    yield from XLSX_ROWS


def xlsx_book() -> bytes:
    """Built fresh each call (generators are single-use), so two calls can be compared byte for byte."""
    cabling = Sheet(name="Compute cabling", header=XLSX_HEADER, rows=xlsx_rows(), fills=iter(XLSX_FILLS),
                    widths=(10, 12, 6, 9.5, 5, 20), page_breaks_before=iter([0, 2, 4, 99]), landscape=True)
    second = Sheet(name="Storage", header=("A", "B"), rows=[("x", 1)], landscape=False)
    return write_workbook([cabling, second], palette=XLSX_PALETTE)


# -- the diagram of the example specs ---------------------------------------------------------------------------
DIAGRAM_SPECS = ("lab-1su", "h100-4su", "bench-16k")
SVG_NS = "{http://www.w3.org/2000/svg}"
DOT_ARTIFACT, SVG_ARTIFACT = "cabling/topology.dot", "cabling/topology.svg"
EDGE_LINE = re.compile(r'^\s*".*" -> ".*" \[label=')  # drawn edges, not the invisible stacking ones


@cache
def diagram_topology(spec: str) -> Topology:
    """An example spec compiled once per session."""
    return compile_spec(REPO / "inventories" / f"{spec}.yaml").topology


@cache
def diagram_artifacts(spec: str) -> dict[str, bytes]:
    """The diagram target's files of an example spec, rendered once per session."""
    return {a.path: a.content for a in diagram.render(diagram_topology(spec))}


def dot_edges(dot: bytes) -> list[str]:
    """The drawn edges of a DOT file."""
    return [line for line in dot.decode().splitlines() if EDGE_LINE.match(line)]


TRICKY = 'a"b\\c <&> -- d'


def tricky_diagram() -> Diagram:
    """A one-fabric diagram whose names and labels need escaping in SVG and DOT alike."""
    boxes = (Box(f'f/node/{TRICKY}', NODE, TRICKY, "x&y", 1), Box("f/leaf/1", LEAF, "leaf <1>", 'q"', 1))
    fabric = FabricDiagram(TRICKY, TRICKY, False, ((boxes[0],), (boxes[1],), (), ()),
                           (Edge("node-leaf", boxes[0].id, boxes[1].id, 3, "N<D>R"),), (0, 1, 0, 0), 1)
    return Diagram(TRICKY, TRICKY, TRICKY, "spec--x.yaml", (fabric,))


def lab_with(nodes: int) -> Topology:
    """lab-1su with ``nodes`` of its 8 nodes (2 a rack: 6 drops rack L04), the SM pair on nodes that remain."""
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert text.count("    count: 8\n") == 1 and text.count("{name: hgx08, priority: 14}") == 1
    text = text.replace("    count: 8\n", f"    count: {nodes}\n").replace(
        "{name: hgx08, priority: 14}", f"{{name: hgx{nodes:02d}, priority: 14}}")
    return compile_topology(build_cluster(load_text(text, "lab.yaml")))
