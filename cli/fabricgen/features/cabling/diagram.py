"""Target ``diagram``: the cluster's fabrics as a layered diagram, ``cabling/topology.dot`` (Graphviz source) and
``cabling/topology.svg`` (laid out here, in pure Python, so rendering never needs a system binary).

Both files draw the same graph, built once by :func:`build_diagram` in one pass over the links:
- a fabric of at most :data:`SUMMARY_SWITCHES` switches draws every switch; its nodes are drawn one by one up to
  :data:`NODE_BOXES` nodes, else grouped per scalable unit (rail-optimized) or per leaf (other kinds);
- a larger fabric is summarised: nodes and leaves per scalable unit (rail-optimized) or nodes per leaf block and
  leaves per block of consecutive leaves (other kinds), spines per pod (or all together), cores per plane;
- every level holds at most :data:`MAX_GROUPS` boxes: consecutive groups merge ("SU 1-4") beyond that, so the
  output stays a few hundred elements whatever the cluster size;
- one edge per (lower box, upper box) pair, labelled with its link count and speed ("256 x NDR").
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.model.cluster import Cluster, Tier, TopologyKind
from fabricgen.model.topology import LEAF_LEAF, LINK_TIERS, NODE_LEAF, FabricTopology, Link, Switch, Topology

SUMMARY_SWITCHES = 48  # above this many switches a fabric is drawn summarised
NODE_BOXES = 64  # above this many nodes a fabric's nodes are grouped
LEVELS = ("node", "leaf", "spine", "core")  # bottom to top; index = level
NODE, LEAF, SPINE, CORE = range(4)
MAX_GROUPS = (16, 16, 16, 8)  # boxes per level when grouping (nodes, leaves, spines, cores)
_TIER_LEVEL = {Tier.LEAF: LEAF, Tier.SPINE: SPINE, Tier.CORE: CORE}


# -- the graph, shared by both outputs ----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Box:
    """One drawn vertex: a device or a group of devices of one level."""

    id: str
    level: int
    title: str
    detail: str
    members: int


@dataclass(frozen=True, slots=True)
class Edge:
    """All links of one link tier between two boxes, at one speed."""

    tier: str
    lower: str
    upper: str
    links: int
    speed: str

    @property
    def label(self) -> str:
        return f"{self.links} x {self.speed}"


@dataclass(frozen=True)
class FabricDiagram:
    name: str
    caption: str
    summarised: bool
    levels: tuple[tuple[Box, ...], ...]  # indexed by level, bottom (nodes) to top (core); a level may be empty
    edges: tuple[Edge, ...]
    switches: tuple[int, ...]  # switch count per level (0 for nodes)
    nodes: int

    def links_per_tier(self) -> dict[str, int]:
        """Links drawn per link tier: the edge counts added up."""
        totals: Counter[str] = Counter()
        for edge in self.edges:
            totals[edge.tier] += edge.links
        return dict(totals)


@dataclass(frozen=True)
class Diagram:
    cluster: str
    title: str
    subtitle: str
    source: str
    fabrics: tuple[FabricDiagram, ...]


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _chunks(keys: Sequence[int], cap: int) -> list[Sequence[int]]:
    """Consecutive runs of ``keys``, as few as needed to have at most ``cap`` runs, all but the last equal."""
    size = max(1, math.ceil(len(keys) / cap))
    return [keys[i : i + size] for i in range(0, len(keys), size)]


def _short(fabric: str, name: str) -> str:
    """A switch name without its fabric prefix, which the panel already shows."""
    prefix = f"{fabric}-"
    return name[len(prefix) :] if name.startswith(prefix) and len(name) > len(prefix) else name


def _models(switches: Iterable[Switch]) -> str:
    return "/".join(sorted({sw.model.name for sw in switches}))


class _Builder:
    """Boxes of one fabric, then its edges from one pass over the links."""

    def __init__(self, cluster: Cluster, ft: FabricTopology) -> None:
        self.ft = ft
        self.fabric = ft.fabric.name
        self.rail = ft.fabric.topology.kind is TopologyKind.RAIL_OPTIMIZED
        self.summarised = len(ft.switches) > SUMMARY_SWITCHES
        self.box_of: dict[str, str] = {}  # device name -> box id
        self.levels: list[list[Box]] = [[], [], [], []]
        role, groups = ft.fabric.role.nic_role, set(ft.fabric.node_groups)
        self.nodes = [n for n in cluster.nodes if n.group in groups and n.profile.nics(role)]
        self.su_chunks: list[Sequence[int]] = []

    def box_id(self, level: int, key: str) -> str:
        return f"{self.fabric}/{LEVELS[level]}/{key}"

    def add_groups(
        self, level: int, keyed: Sequence[tuple[int, Switch]], title: Callable[[int, int], str]
    ) -> list[Sequence[int]]:
        """Boxes for switches grouped by an integer key, consecutive keys merged down to the level's cap."""
        keys = sorted({key for key, _ in keyed})
        chunks = _chunks(keys, MAX_GROUPS[level])
        where = {key: i for i, chunk in enumerate(chunks) for key in chunk}
        members: list[list[Switch]] = [[] for _ in chunks]
        for key, sw in keyed:
            members[where[key]].append(sw)
        for i, (chunk, group) in enumerate(zip(chunks, members, strict=True)):
            box = Box(self.box_id(level, str(i + 1)), level, title(chunk[0], chunk[-1]),
                      f"x{len(group)} {_models(group)}", len(group))
            self.levels[level].append(box)
            self.box_of.update((sw.name, box.id) for sw in group)
        return chunks

    def switch_boxes(self) -> None:
        for tier, level in _TIER_LEVEL.items():
            switches = self.ft.switches_in(tier)
            if not self.summarised:
                for sw in switches:
                    box = Box(self.box_id(level, sw.name), level, _short(self.fabric, sw.name), sw.model.name, 1)
                    self.levels[level].append(box)
                    self.box_of[sw.name] = box.id
            elif tier is Tier.LEAF and self.rail:
                self.su_chunks = self.add_groups(level, [(sw.su or 1, sw) for sw in switches],
                                                 lambda a, b: f"SU {_span(a, b)} leaves")
            elif tier is Tier.LEAF:
                self.add_groups(level, list(enumerate(switches, start=1)),
                                lambda a, b: f"leaf {a}" if a == b else f"leaves {a}-{b}")
            elif tier is Tier.SPINE and any(sw.pod is not None for sw in switches):
                self.add_groups(level, [(sw.pod or 1, sw) for sw in switches],
                                lambda a, b: f"pod {a} spines" if a == b else f"pods {a}-{b} spines")
            elif tier is Tier.CORE and switches:
                self.add_groups(level, [(plane, sw) for plane, sw in self.core_planes(switches)],
                                lambda a, b: (f"plane {a} cores" if a == b else f"planes {a}-{b} cores")
                                if a else "cores")
            elif switches:  # two-tier spines: one box
                self.add_groups(level, [(0, sw) for sw in switches], lambda a, b: "spines")

    def core_planes(self, cores: Sequence[Switch]) -> list[tuple[int, Switch]]:
        """Core plane j (1-based) joins spine j of every pod; cores are numbered plane by plane (topology rules).
        Key 0 (one box of all cores) when the counts do not split into planes."""
        spines = len(self.ft.switches_in(Tier.SPINE))
        planes = spines // self.ft.pods if self.ft.pods and spines % self.ft.pods == 0 else 0
        if not planes or len(cores) % planes:
            return [(0, sw) for sw in cores]
        per_plane = len(cores) // planes
        return [((sw.index - 1) // per_plane + 1, sw) for sw in cores]

    def node_group(self) -> Callable[[Link, str], str]:
        """How a node not drawn on its own finds its box, from its first link and that link's leaf box:
        rail-optimized by scalable unit (merged like the leaves), other kinds under the leaf box."""
        if self.rail:
            if not self.su_chunks:  # switches drawn one by one: the nodes are still grouped by SU
                self.su_chunks = _chunks(range(1, self.ft.scalable_units + 1), MAX_GROUPS[NODE])
            su_box = {su: self.box_id(NODE, f"su{i + 1}") for i, chunk in enumerate(self.su_chunks) for su in chunk}
            return lambda link, leaf_box: su_box[link.su or 1]
        under = {leaf.id: self.box_id(NODE, f"on-{leaf.id.rsplit('/', 1)[1]}") for leaf in self.levels[LEAF]}
        return lambda link, leaf_box: under[leaf_box]

    def build(self) -> FabricDiagram:
        self.switch_boxes()
        placed: dict[str, str] = {}  # node name -> box id
        if not self.summarised and len(self.nodes) <= NODE_BOXES:
            for node in self.nodes:
                box = Box(self.box_id(NODE, node.name), NODE, node.name, node.profile.name, 1)
                self.levels[NODE].append(box)
                placed[node.name] = box.id
        group_of = self.node_group()
        members: Counter[str] = Counter()
        counts: Counter[tuple[str, str, str, str]] = Counter()
        box_of = self.box_of
        for link in self.ft.links:  # the one pass
            if link.tier == LEAF_LEAF:
                continue  # an MLAG peer link joins two boxes of one level: the tiers are what is drawn
            upper = box_of[link.z.device]
            if link.tier == NODE_LEAF:
                lower = placed.get(link.a.device)
                if lower is None:
                    lower = placed[link.a.device] = group_of(link, upper)
                    members[lower] += 1
            else:
                lower = box_of[link.a.device]
            counts[(link.tier, lower, upper, link.speed)] += 1
        if members and self.rail:
            for i, chunk in enumerate(self.su_chunks):
                box_id = self.box_id(NODE, f"su{i + 1}")
                if members[box_id]:
                    self.levels[NODE].append(Box(box_id, NODE, f"SU {_span(chunk[0], chunk[-1])}",
                                                 f"{members[box_id]} nodes", members[box_id]))
        elif members:
            for leaf in self.levels[LEAF]:
                box_id = self.box_id(NODE, f"on-{leaf.id.rsplit('/', 1)[1]}")
                if members[box_id]:
                    self.levels[NODE].append(Box(box_id, NODE, f"on {leaf.title}", f"{members[box_id]} nodes",
                                                 members[box_id]))
        order = {box.id: i for level in self.levels for i, box in enumerate(level)}
        edges = sorted(
            (Edge(tier, lower, upper, n, speed) for (tier, lower, upper, speed), n in counts.items()),
            key=lambda e: (LINK_TIERS.index(e.tier), order[e.lower], order[e.upper], e.speed),
        )
        return FabricDiagram(self.fabric, self.caption(), self.summarised, tuple(tuple(lv) for lv in self.levels),
                             tuple(edges), tuple([0] + [len(self.ft.switches_in(t)) for t in _TIER_LEVEL]),
                             len(self.nodes))

    def caption(self) -> str:
        f, ft = self.ft.fabric, self.ft
        speed = f.speed.name if f.speed.name == f.uplink_speed.name else f"{f.speed.name}/{f.uplink_speed.name}"
        parts = [f.name, f"{f.type} {f.topology.kind.value}", speed, _count(ft.tiers, "tier"),
                 _count(len(self.nodes), "node"), _count(len(ft.switches), "switch"), _count(len(ft.links), "link")]
        return " · ".join(parts) + (" · summarised" if self.summarised else "")


def _count(n: int, noun: str) -> str:
    if n == 1:
        return f"1 {noun}"
    plural = {"switch": "switches", "leaf": "leaves"}.get(noun, f"{noun}s")
    return f"{n} {plural}"


def build_diagram(topology: Topology) -> Diagram:
    """The graph both outputs draw; O(links) and bounded in size whatever the cluster size."""
    cluster = topology.cluster
    fabrics = tuple(_Builder(cluster, ft).build() for ft in topology.fabrics)
    switches = sum(len(ft.switches) for ft in topology.fabrics)
    links = sum(len(ft.links) for ft in topology.fabrics)
    subtitle = " · ".join([f"site {cluster.metadata.site}", _count(len(cluster.nodes), "node"),
                           _count(len(fabrics), "fabric"), _count(switches, "switch"), _count(links, "link")])
    name = cluster.metadata.name
    return Diagram(name, f"{name}: network topology", subtitle, cluster.source, fabrics)


# -- Graphviz ---------------------------------------------------------------------------------------------------
FILL = ("#dbeafe", "#dcfce7", "#fef3c7", "#fee2e2")  # per level
STROKE = ("#2563eb", "#16a34a", "#d97706", "#dc2626")


def _quote(text: str) -> str:
    """A DOT double-quoted string; newlines become centred line breaks."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(**values: str) -> str:
    return ", ".join(f"{key}={_quote(value)}" for key, value in values.items())


def _dot_box(box: Box) -> str:
    label = f"{box.title}\n{box.detail}"
    return f"{_quote(box.id)} [{_attrs(label=label, fillcolor=FILL[box.level], color=STROKE[box.level])}]"


def _dot_edge(edge: Edge) -> str:
    color = STROKE[LINK_TIERS.index(edge.tier) + 1]
    return f"{_quote(edge.lower)} -> {_quote(edge.upper)} [{_attrs(label=edge.label, color=color)}]"


def to_dot(diagram: Diagram) -> bytes:
    """Graphviz source: one cluster subgraph per fabric, one rank per level, nodes at the bottom (rankdir=BT)."""
    # invisible edges from each fabric's top row to the bottom row of the one before: fabrics stack vertically
    drawn = [f for f in diagram.fabrics if any(f.levels)]
    stack = [
        f"{_quote(next(b for b in reversed(f.levels) if b)[0].id)} -> {_quote(next(b for b in g.levels if b)[0].id)} "
        '[style="invis"]'
        for g, f in itertools.pairwise(drawn)
    ]
    fabrics = [
        {
            "id": _quote(f"cluster_{f.name}"),
            "label": _quote(f.caption),
            "ranks": [
                {"id": _quote(f"rank_{f.name}_{LEVELS[level]}"), "nodes": [_dot_box(b) for b in boxes]}
                for level, boxes in enumerate(f.levels)
                if boxes
            ],
            "edges": [_dot_edge(e) for e in f.edges],
        }
        for f in diagram.fabrics
    ]
    return render_template(
        "diagram/topology.dot.j2",
        source=diagram.source,
        graph_id=_quote(diagram.cluster),
        label=_quote(f"{diagram.title}\n{diagram.subtitle}"),
        fabrics=fabrics,
        stack=stack,
    )


# -- SVG: a layered layout of the same graph ---------------------------------------------------------------------
MARGIN = 24.0
HEADER = 96.0  # title, subtitle and legend
GUTTER = 150.0  # left column of each panel: level names and per-tier link totals
PANEL_HEAD = 44.0
PANEL_GAP = 20.0
BOX_H = 34.0
ROW_GAP = 120.0  # vertical room for the edges between two rows of boxes
BOX_GAP = 12.0
MIN_INNER = 760.0
TITLE_CHAR, DETAIL_CHAR, LABEL_CHAR = 6.6, 6.0, 6.0  # monospace advance at 11px and 10px

_STYLE = (
    "text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:10px;fill:#1e293b}"
    ".h{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:20px;font-weight:bold}"
    ".s{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:12px;fill:#475569}"
    ".p{font-family:'DejaVu Sans',Helvetica,Arial,sans-serif;font-size:13px;font-weight:bold}"
    ".bt{font-size:11px;font-weight:bold}.bd{fill:#475569}.g{font-weight:bold}.n{fill:#475569}"
    ".panel{fill:#ffffff;stroke:#cbd5e1}.row{fill:#f1f5f9}.lb{fill:#ffffff;fill-opacity:0.9}"
    + "".join(f".b{i}{{fill:{FILL[i]};stroke:{STROKE[i]}}}" for i in range(4))
    + "".join(f".e{i}{{stroke:{STROKE[i]};stroke-width:1;fill:none}}" for i in range(1, 4))
)


def _num(value: float) -> str:
    """Fixed formatting: one decimal, no trailing '.0', never '-0'."""
    text = f"{round(value, 1):.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _text(x: float, y: float, text: str, cls: str = "", anchor: str = "start") -> str:
    attrs = f' class="{cls}"' if cls else ""
    if anchor != "start":
        attrs += f' text-anchor="{anchor}"'
    return f'<text x="{_num(x)}" y="{_num(y)}"{attrs}>{_esc(text)}</text>'


def _rect(x: float, y: float, w: float, h: float, cls: str, rx: float = 0) -> str:
    corner = f' rx="{_num(rx)}"' if rx else ""
    return f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}"{corner} class="{cls}"/>'


def _box_width(boxes: Sequence[Box]) -> float:
    return max([56.0] + [max(len(b.title) * TITLE_CHAR, len(b.detail) * DETAIL_CHAR) + 14 for b in boxes])


@dataclass(frozen=True, slots=True)
class _Placed:
    x: float
    y: float
    w: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


def _panel_height(f: FabricDiagram) -> float:
    rows = sum(1 for boxes in f.levels if boxes)
    return PANEL_HEAD + rows * BOX_H + max(0, rows - 1) * ROW_GAP + 20


def _attachments(edges: Sequence[Edge], at: dict[str, _Placed]) -> dict[tuple[int, bool], float]:
    """x of each edge's end on its box (key: edge index, upper end?), ends spread along the box side in the order
    of the other ends, so a box's edges fan out without crossing at the box."""
    sides: dict[tuple[str, bool], list[tuple[float, int]]] = {}
    for i, e in enumerate(edges):
        sides.setdefault((e.lower, False), []).append((at[e.upper].cx, i))
        sides.setdefault((e.upper, True), []).append((at[e.lower].cx, i))
    ends: dict[tuple[int, bool], float] = {}
    for (box, upper), others in sides.items():
        others.sort()
        place = at[box]
        inset = min(8.0, place.w / 4)
        for k, (_, i) in enumerate(others):
            ends[(i, upper)] = place.x + inset + (place.w - 2 * inset) * (k + 1) / (len(others) + 1)
    return ends


def _svg_panel(f: FabricDiagram, x0: float, y0: float, inner: float) -> list[str]:
    out = [_rect(x0, y0, GUTTER + inner + 16, _panel_height(f), "panel", 6), _text(x0 + 12, y0 + 24, f.caption, "p")]
    rows = [level for level in reversed(range(4)) if f.levels[level]]  # top (core) to bottom (nodes)
    at: dict[str, _Placed] = {}
    row_y: dict[int, float] = {}
    for r, level in enumerate(rows):
        y = y0 + PANEL_HEAD + r * (BOX_H + ROW_GAP)
        row_y[level] = y
        boxes = f.levels[level]
        width = _box_width(boxes)
        slot = inner / len(boxes)
        out.append(_rect(x0 + 8, y - 6, GUTTER + inner, BOX_H + 12, "row"))
        count = f.nodes if level == NODE else f.switches[level]
        out.append(_text(x0 + 14, y + 15, _count(count, LEVELS[level]), "g"))
        if 1 < len(boxes) < count:
            out.append(_text(x0 + 14, y + 28, f"in {len(boxes)} groups", "n"))
        for i, box in enumerate(boxes):
            cx = x0 + GUTTER + slot * (i + 0.5)
            at[box.id] = _Placed(cx - width / 2, y, width)
    lines: list[str] = []
    labels: list[str] = []
    for level in rows:
        if level == NODE or level - 1 not in row_y:
            continue
        tier = LINK_TIERS[level - 1]
        bundle = [e for e in f.edges if e.tier == tier]
        if not bundle:
            continue
        uniform = len({(e.links, e.speed) for e in bundle}) == 1 and len(bundle) > 1
        gap_mid = row_y[level] + BOX_H + ROW_GAP / 2
        note = [tier, f"{sum(e.links for e in bundle)} links"]
        note.append(f"{bundle[0].label} per line" if uniform else f"{len(bundle)} lines")
        labels.extend(_text(x0 + 14, gap_mid - 12 + 12 * k, line, "n" if k else "g") for k, line in enumerate(note))
        ends = _attachments(bundle, at)
        degree_up = Counter(e.upper for e in bundle)
        degree_low = Counter(e.lower for e in bundle)
        rank_low: Counter[str] = Counter()
        cls = f"e{level}"
        opacity = "0.35" if len(bundle) > 100 else "0.6"
        for i, e in enumerate(bundle):
            xa, ya = ends[(i, False)], at[e.lower].y
            xz, yz = ends[(i, True)], at[e.upper].y + BOX_H
            lines.append(f'<line x1="{_num(xa)}" y1="{_num(ya)}" x2="{_num(xz)}" y2="{_num(yz)}" class="{cls}" '
                         f'stroke-opacity="{opacity}"/>')
            if uniform:
                continue
            if degree_up[e.upper] == 1:
                t = 0.86
            elif degree_low[e.lower] == 1:
                t = 0.14
            else:
                t = 0.2 + 0.6 * (rank_low[e.lower] + 0.5) / degree_low[e.lower]
                rank_low[e.lower] += 1
            lx, ly = xa + (xz - xa) * t, ya + (yz - ya) * t
            w = len(e.label) * LABEL_CHAR + 6
            labels.append(_rect(lx - w / 2, ly - 7, w, 13, "lb", 2))
            labels.append(_text(lx, ly + 3.5, e.label, anchor="middle"))
    out.extend(lines)
    out.extend(labels)
    for boxes in f.levels:
        for box in boxes:
            p = at[box.id]
            out.append(_rect(p.x, p.y, p.w, BOX_H, f"b{box.level}", 4))
            out.append(_text(p.cx, p.y + 15, box.title, "bt", "middle"))
            out.append(_text(p.cx, p.y + 28, box.detail, "bd", "middle"))
    return out


def _legend(x: float, y: float) -> list[str]:
    out = []
    for level, name in enumerate(("node", "leaf", "spine", "core")):
        out.append(_rect(x, y - 9, 16, 11, f"b{level}", 2))
        out.append(_text(x + 21, y, name))
        x += 21 + len(name) * LABEL_CHAR + 16
    out.append(f'<line x1="{_num(x)}" y1="{_num(y - 4)}" x2="{_num(x + 24)}" y2="{_num(y - 4)}" class="e1"/>')
    out.append(_text(x + 30, y, "N x SPEED: N links at SPEED between the two boxes; groups merge consecutive devices"))
    return out


def to_svg(diagram: Diagram) -> bytes:
    """Fabrics stacked vertically, each a panel of rows (core at the top, nodes at the bottom), boxes evenly spaced
    in their row, straight edges; every coordinate rounded to 0.1 so the bytes are deterministic."""
    need = [len(boxes) * (_box_width(boxes) + BOX_GAP) for f in diagram.fabrics for boxes in f.levels if boxes]
    inner = max([MIN_INNER, *need])
    width = 2 * MARGIN + GUTTER + inner + 16
    body = [_text(MARGIN, MARGIN + 20, diagram.title, "h"), _text(MARGIN, MARGIN + 42, diagram.subtitle, "s")]
    body.extend(_legend(MARGIN, MARGIN + 66))
    y = MARGIN + HEADER
    for f in diagram.fabrics:
        body.extend(_svg_panel(f, MARGIN, y, inner))
        y += _panel_height(f) + PANEL_GAP
    height = y - PANEL_GAP + MARGIN
    w, h = _num(width), _num(height)
    head = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f"<!-- Generated by fabricgen from {_esc(diagram.source).replace('--', '- -')}; do not edit. -->",
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}">',
        f"<title>{_esc(diagram.title)}</title>",
        f'<style type="text/css">{_STYLE}</style>',
        f'<rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>',
    ]
    return ("\n".join([*head, *body, "</svg>"]) + "\n").encode("utf-8")


def render(topology: Topology) -> list[Artifact]:
    diagram = build_diagram(topology)
    return [Artifact("cabling/topology.dot", to_dot(diagram)), Artifact("cabling/topology.svg", to_svg(diagram))]
