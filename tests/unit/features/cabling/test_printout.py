"""The printed cable sheets read back with pypdf: page count, header and footer fields on every page, every device
name whole, ports in physical order, byte-identical renders."""

from __future__ import annotations

import io
import itertools
import re
from collections import Counter
from functools import cache

import pypdf
import pytest

from fabricgen.features.cabling import printout
from fabricgen.features.cabling.handoff import END_COLUMNS, NO_RAIL, RAIL_PALETTE, port_order, rack_ends, row_sheets
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES


@cache
def rendered(spec: str) -> tuple[Topology, dict[str, bytes]]:
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    return topology, {a.path: a.content for a in printout.render(topology)}


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_pages_headers_and_whole_device_names(spec: str) -> None:
    topology, files = rendered(spec)
    rows = row_sheets(topology)
    assert sorted(files) == sorted(f"cabling/rows/{r.row}.pdf" for r in rows)
    for sheets in rows:
        pages = pypdf.PdfReader(io.BytesIO(files[f"cabling/rows/{sheets.row}.pdf"])).pages
        texts = [page.extract_text() for page in pages]
        size, _ = printout._layout(sheets)
        per_page = printout.rows_per_page(size)
        assert size >= 5.0, "the font stays readable"
        assert len(pages) == sum(-(-len(sheet.rows) // per_page) for sheet in sheets.racks.values())
        page = 0
        for rack, sheet in sheets.racks.items():
            rack_pages = -(-len(sheet.rows) // per_page)
            text = ""
            for i in range(1, rack_pages + 1):
                page_text = texts[page]
                page += 1
                assert f"Rack {rack}  (row {sheets.row})" in page_text
                assert f"site {topology.cluster.metadata.site}, cluster {topology.cluster.metadata.name}" in page_text
                assert re.fullmatch(r"revision [0-9a-f]{12}", sheet.revision) and sheet.revision in page_text
                assert f"rack {rack}: page {i} of {rack_pages}" in page_text
                assert f"page {page} of {len(pages)}" in page_text
                assert "rail colours:" in page_text
                text += page_text + "\n"
            words = set(re.split(r"\s+", text))
            device, far = END_COLUMNS.index("device"), END_COLUMNS.index("to device")
            for row in sheet.rows:  # every name whole, both the near device and the far one, and the plug's label
                names = [str(row.cells[i]) for i in (device, far) if row.cells[i]]
                assert all(n in words for n in names if " " not in n)
                assert row.label in text
            assert "…" not in text


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_one_label_per_plug(spec: str) -> None:
    """Review D6, read back with pypdf: each physical plug's label printed once in its rack (a splitter's trunk
    once, not once per leg; a cage-pair cable once per end), every cable end under exactly one label, and a twin-port
    cage's optic printed once."""
    topology, files = rendered(spec)
    text = "\n".join(page.extract_text() for a in files.values() for page in pypdf.PdfReader(io.BytesIO(a)).pages)
    plugs = {}
    for c in topology.cables:
        for a_end in (True, False):
            plugs.setdefault(c.physical if c.leg and (c.medium.legs == 1 or not a_end) else c.id, set()).add(a_end)
    labels = re.findall(r"\S+/[AZ] to ", text)
    assert len(labels) == sum(map(len, plugs.values())), "one label per plug, no more"
    assert len(set(labels)) == len(labels), "no plug labelled twice"
    trunks = [c for c in topology.cables if c.leg and c.medium.legs > 1]
    if spec == "lab-1su":  # the OOB breakouts and the storage cage-pair DACs
        assert trunks and any(c.leg and c.medium.legs == 1 for c in topology.cables)
        assert "oob-agg02-001/Z to L01,L02,L03,L04 oob-l01,oob-l02,oob-l03,oob-l04" in text
        assert "storage-spine02-001/Z to M01 storage-leaf001 26/1+26/2" in text
    assert not any(f"{c.physical}/L{c.leg}/Z" in text for c in trunks), "a trunk has no per-leg label"
    optic = END_COLUMNS.index("optic here")  # an optic printed once per module: as often as the BOM orders it
    printed = Counter(str(r.cells[optic]) for sheets in row_sheets(topology) for sheet in sheets.racks.values()
                      for r in sheet.rows if r.cells[optic] and not str(r.cells[optic]).startswith("shared with "))
    switches = (s.model.name for f in topology.fabrics for s in f.switches)
    assert printed == {b.part: b.count for b in bill_of_materials(switches, topology.cables)
                       if b.category == "transceiver"}
    assert spec != "h100-4su" or "shared with OSFP1P1" in text, "a twin-port NIC cage: the second plug shares"


def test_ports_in_physical_order() -> None:
    topology, _ = rendered("h100-4su")
    for ends in rack_ends(topology.cables).values():
        for a, b in itertools.pairwise(ends):
            if (a.here.u, a.here.device) == (b.here.u, b.here.device):
                assert port_order(a.here.port) <= port_order(b.here.port)
    assert port_order("1/2") < port_order("1/10") < port_order("2/1")
    assert port_order("OSFP2P1") < port_order("OSFP10P1")


def test_render_is_byte_identical() -> None:
    topology, files = rendered("lab-1su")
    assert {a.path: a.content for a in printout.render(topology)} == files


_SWATCH = re.compile(r"([\d.]+) ([\d.]+) ([\d.]+) rg [\d.]+ ([\d.]+) ([\d.]+) ([\d.]+) re f(?: q ([^Q]*) Q)?")


def _luminance(colour: str) -> float:
    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(int(colour[i:i + 2], 16) / 255) for i in (0, 2, 4))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _pattern(hatch: str | None) -> frozenset[str]:
    """What a swatch's hatch draws: the directions of its lines (h, v, down, up) or dots; empty when plain."""
    if not hatch:
        return frozenset()
    if " f" in hatch.split(" re W n ", 1)[1]:
        return frozenset({"dots"})
    kinds = set()
    for x0, y0, x1, y1 in re.findall(r"(-?[\d.]+) (-?[\d.]+) m (-?[\d.]+) (-?[\d.]+) l", hatch):
        dx, dy = float(x1) - float(x0), float(y1) - float(y0)
        kinds.add("h" if dy == 0 else "v" if dx == 0 else "up" if dx * dy > 0 else "down")
    return frozenset(kinds)


def test_rails_stay_apart_in_a_mono_print() -> None:
    """Review C7: Tol's colours are a few greys in a monochrome print (rails 0/1/5/7 at luminance 0.37-0.39), so each
    rail's cell also carries a pattern of its own, the legend the same; the rail number is bold in that cell, and
    no other cell is filled."""
    _, files = rendered("h100-4su")
    page = pypdf.PdfReader(io.BytesIO(files["cabling/rows/A.pdf"])).pages[0]
    content = page.get_contents().get_data().decode("ascii")
    legend = [m for m in _SWATCH.finditer(content) if (m[5], m[6]) == ("22.00", "11.00")]
    colours = ["".join(f"{round(float(v) * 255):02X}" for v in m.groups()[:3]) for m in legend]
    assert colours == [*RAIL_PALETTE, NO_RAIL]
    patterns = {colour: _pattern(m[7]) for colour, m in zip(colours, legend, strict=True)}
    rails = [patterns[c] for c in RAIL_PALETTE]
    assert len(set(rails)) == len(rails), f"one pattern per rail: {patterns}"
    # the plain ones, rail 0 and "no rail", stay apart as greys (WCAG relative luminance: 0.38 and 0.72)
    assert [c for c, p in patterns.items() if not p] == [RAIL_PALETTE[0], NO_RAIL]
    assert _luminance(NO_RAIL) - _luminance(RAIL_PALETTE[0]) > 0.3
    rows = [m for m in _SWATCH.finditer(content) if m[4] == "0.00"]  # the rows' rail cells, drawn at y = 0
    assert len(rows) >= 20
    for m in rows:  # each row's rail cell as its legend swatch
        colour = "".join(f"{round(float(v) * 255):02X}" for v in m.groups()[:3])
        assert _pattern(m[7]) == patterns[colour]
    assert len({_pattern(m[7]) for m in rows}) == 8, "rack A01's rows cover the 8 rails"
    bold = re.findall(r"BT /F2 [\d.]+ Tf 1 0 0 1 [\d.]+ [\d.]+ Tm \((\d+)\) Tj /F1", content)
    assert len(bold) >= len(rows) - 8, "the rail numbers in bold"  # rows reuse one drawn cell per distinct number
