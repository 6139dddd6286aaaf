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
from fabricgen.features.cabling.handoff import END_COLUMNS, port_order, rack_ends, row_sheets
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
