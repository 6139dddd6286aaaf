"""cables.xlsx's fabric sheets, read back with openpyxl: a row per physical plug, as the racks' sheets print them
(re-review of D6: the fabric sheets were still a row per link), not a row per cables.csv row."""

from __future__ import annotations

import io
from collections import Counter
from functools import cache

import openpyxl  # type: ignore[import-untyped]
import pytest

from fabricgen.features.cabling import workbook
from fabricgen.features.cabling.handoff import END_COLUMNS, row_sheets
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.features.cabling.workbook import FABRIC_COLUMNS
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

LABEL, OPTIC, RACK = (FABRIC_COLUMNS.index(c) for c in ("end label", "optic here", "rack"))


@cache
def fabric_sheets(spec: str) -> tuple[Topology, dict[str, list[tuple[object, ...]]]]:
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    book = next(a for a in workbook.render(topology) if a.path == "cabling/cables.xlsx")
    sheets = openpyxl.load_workbook(io.BytesIO(book.content))
    return topology, {ft.fabric.name: [tuple("" if v is None else v for v in row)
                                       for row in sheets[ft.fabric.name].iter_rows(min_row=2, values_only=True)]
                      for ft in topology.fabrics}


def _plugs(topology: Topology, fabric: str) -> int:
    """The physical plugs of a fabric, counted from the cables alone: a leg's end is one plug with the other legs of
    its cable where they share a connector (both ends of a cage-pair cable, a splitter's trunk)."""
    plugs = {(c.physical if c.leg and (c.medium.legs == 1 or not a_end) else c.id, a_end)
             for c in topology.cables if c.fabric == fabric for a_end in (True, False)}
    return len(plugs)


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_a_row_per_plug_as_the_rack_sheets_print_it(spec: str) -> None:
    topology, sheets = fabric_sheets(spec)
    racks = [(rack, r) for rs in row_sheets(topology) for rack, sheet in rs.racks.items() for r in sheet.rows]
    for fabric, rows in sheets.items():
        labels = [row[LABEL] for row in rows if row[LABEL]]
        assert len(labels) == len(set(labels)) == _plugs(topology, fabric), f"{fabric}: one row and label per plug"
        printed = [(rack, r) for rack, r in racks if r.fabric == fabric]
        assert [row[RACK:] for row in rows] == [(rack, *r.cells) for rack, r in printed], \
            f"{fabric}: the racks' rows, in their order, each with its rack"
    optics = Counter(str(row[OPTIC]) for rows in sheets.values() for row in rows
                     if row[OPTIC] and not str(row[OPTIC]).startswith("shared with "))
    switches = (s.model.name for f in topology.fabrics for s in f.switches)
    assert optics == {b.part: b.count for b in bill_of_materials(switches, topology.cables)
                      if b.category == "transceiver"}, "each optic printed once per module, as the BOM orders it"


def test_a_trunk_once_with_its_legs_beneath_and_a_cage_pair_once_per_end() -> None:
    _, sheets = fabric_sheets("lab-1su")
    oob = sheets["oob"]
    at = next(i for i, row in enumerate(oob) if str(row[LABEL]).startswith("oob-agg02-001/Z to "))
    assert oob[at][RACK:RACK + 4] == ("M01", 16, "oob-agg02", "1/1+1/2+1/3+1/4")
    legs = oob[at + 1:at + 5]
    assert [row[FABRIC_COLUMNS.index("port")] for row in legs] == ["1/1", "1/2", "1/3", "1/4"]
    assert all(row[:RACK] == ("", "") and not row[LABEL] for row in legs), "legs: no box or label"
    assert all(row[RACK:RACK + 3] == ("M01", 16, "oob-agg02") for row in legs), "legs: the trunk's rack, U, device"
    assert not any("/L1/Z" in str(row[LABEL]) for row in oob), "a trunk has no label per leg"
    storage = [str(row[LABEL]) for row in sheets["storage"]]
    assert storage.count("storage-spine02-001/Z to M01 storage-leaf001 26/1+26/2") == 1
    assert storage.count("storage-spine02-001/A to M01 storage-spine02 1/1+1/2") == 1
    assert not any("storage-spine02-001/L" in label for label in storage), "a cage-pair cable's links: no row each"


def test_a_filter_by_device_or_rack_keeps_a_trunks_legs() -> None:
    """Issue 19: a leg's row repeats its trunk's rack, U and device, so filtering the fabric sheet by the switch or its
    rack (as a spreadsheet's autofilter does: rows whose cell equals the value) keeps the trunk and all its legs."""
    _, sheets = fabric_sheets("lab-1su")
    oob = sheets["oob"]
    device, rack = FABRIC_COLUMNS.index("device"), RACK
    for column, value in ((device, "oob-agg02"), (rack, "M01")):
        kept = [row for row in oob if row[column] == value]
        at = next(i for i, row in enumerate(kept) if str(row[LABEL]).startswith("oob-agg02-001/Z to "))
        assert [row[FABRIC_COLUMNS.index("port")] for row in kept[at + 1:at + 5]] == ["1/1", "1/2", "1/3", "1/4"]
        assert [row[FABRIC_COLUMNS.index("to device")] for row in kept[at + 1:at + 5]] == [
            "oob-l01", "oob-l02", "oob-l03", "oob-l04"]


def test_numbers_are_number_cells_and_faceplate_names_text() -> None:
    """Issue 19: rail, U and a port numbered by a plain number are numeric cells (openpyxl reads the cell type the
    writer wrote), so a sheet sorts and filters them as numbers; a faceplate name such as ``21/1`` stays text."""
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    book = next(a for a in workbook.render(topology) if a.path == "cabling/cables.xlsx")
    sheets = openpyxl.load_workbook(io.BytesIO(book.content))
    col = {name: i for i, name in enumerate(FABRIC_COLUMNS)}
    types: dict[str, set[str]] = {}
    for fabric in ("compute", "oob", "storage"):
        for row in sheets[fabric].iter_rows(min_row=2):
            for name in ("rail", "U", "to U", "port", "to port"):
                cell = row[col[name]]
                if cell.value not in (None, ""):
                    kind = "n" if cell.data_type == "n" else "s"
                    assert kind == ("n" if name in ("U", "to U") or str(cell.value).isdigit() else "s"), (
                        fabric, name, cell.value)
                    types.setdefault(name, set()).add(kind)
    assert types["rail"] == {"n"} and types["U"] == types["to U"] == {"n"}
    assert types["port"] == types["to port"] == {"n", "s"}, "BMC ports 1, 2 ... numbers; 21/1, OSFP1P1 text"
    oob = list(sheets["oob"].iter_rows(min_row=2, values_only=True))
    assert any(row[col["port"]] == 49 for row in oob) and any(row[col["port"]] == "1/1" for row in oob)


def test_a_splitters_leg_rows_carry_its_fabric() -> None:
    """Field review (UX, 2026-12-03): the legs listed beneath a splitter's trunk left the fabric blank, so a rack
    sheet filtered by fabric dropped them; they carry it now, and still no length or part (the trunk's row has the
    physical cable's, summed once)."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    legs = [row for sheets in row_sheets(topology) for rack in sheets.racks.values() for row in rack.rows
            if not row.plug]
    assert legs, "h100-4su's OOB aggregation breakouts list their legs"
    fabric, length, part = (END_COLUMNS.index(c) for c in ("fabric", "length m", "cable part"))
    assert {(row.cells[fabric], row.cells[length], row.cells[part]) for row in legs} == {("oob", "", "")}
