"""The printed cable sheets read back with pypdf: page count, header and footer fields on every page, every device
name whole, ports in physical order, byte-identical renders."""

from __future__ import annotations

import io
import itertools
import re
from functools import cache

import pypdf
import pytest

from fabricgen.features.cabling import printout
from fabricgen.features.cabling.handoff import port_order, rack_ends, row_sheets
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
    digest = topology.cluster.spec_digest.removeprefix("sha256:")[:12]
    for sheets in rows:
        pages = pypdf.PdfReader(io.BytesIO(files[f"cabling/rows/{sheets.row}.pdf"])).pages
        texts = [page.extract_text() for page in pages]
        size, _ = printout._layout(sheets)
        per_page = printout.rows_per_page(size)
        assert size >= 5.0, "the font stays readable"
        assert len(pages) == sum(-(-len(ends) // per_page) for ends in sheets.racks.values())
        page = 0
        for rack, ends in sheets.racks.items():
            rack_pages = -(-len(ends) // per_page)
            text = ""
            for i in range(1, rack_pages + 1):
                page_text = texts[page]
                page += 1
                assert f"Rack {rack}  (row {sheets.row})" in page_text
                assert f"site {topology.cluster.metadata.site}, cluster {topology.cluster.metadata.name}" in page_text
                assert f"spec {digest}" in page_text
                assert f"rack {rack}: page {i} of {rack_pages}" in page_text
                assert f"page {page} of {len(pages)}" in page_text
                assert "rail colours:" in page_text
                text += page_text + "\n"
            words = set(re.split(r"\s+", text))
            for end in ends:  # every name whole, both the near device and the far one, and the end's label
                assert end.here.device in words and end.far.device in words
                assert end.label in text
            assert "…" not in text


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
