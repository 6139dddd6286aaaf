"""A row's cable workbook and PDF take the last apply's bytes only while every input their serializer reads is the
one those bytes were made from (core/reuse.py): each input the key covers, changed alone, makes a re-render."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.core.reuse import Offer, offered, render_key
from fabricgen.features.cabling import printout, workbook
from fabricgen.features.cabling.handoff import (
    RackSheet,
    RowSheets,
    SheetRow,
    cell_texts,
    page_header,
    row_input,
    row_sheets,
)
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

Render = Callable[[Topology], list[Artifact]]
TOPOLOGY = compile_spec(INVENTORIES / "lab-1su.yaml").topology
LAST = b"the bytes the last apply wrote"
# target, the file of row L, its serializer's name in the key
FILES: list[tuple[Render, str, str]] = [(workbook.render, "cabling/rows/L.xlsx", workbook.ROW_WORKBOOK),
         (printout.render, "cabling/rows/L.pdf", printout.ROW_PDF)]


def _with_rows(topology: Topology, rows: list[RowSheets]) -> Topology:
    """A copy of ``topology`` whose cable sheets' rows are ``rows`` (its shared view, as the renderers read it)."""
    copy = replace(topology)
    copy._derived[(row_sheets, None)] = rows
    return copy


def _rack(sheets: RowSheets, change: Callable[[list[SheetRow]], list[SheetRow]]) -> RowSheets:
    """Row ``sheets`` with its first rack's rows changed (its cell texts made from them, as row_sheets does)."""
    rack, sheet = next(iter(sheets.racks.items()))
    rows = change(list(sheet.rows))
    return replace(sheets, racks={**sheets.racks, rack: RackSheet(rows, sheet.revision, cell_texts(rows))})


def _cell(rows: list[SheetRow], column: int, value: object) -> list[SheetRow]:
    first = rows[0]
    cells = (*first.cells[:column], value, *first.cells[column + 1:])
    return [replace(first, cells=cells), *rows[1:]]  # type: ignore[arg-type]


def _renamed_rack(sheets: RowSheets) -> RowSheets:
    (rack, sheet), *rest = sheets.racks.items()
    return replace(sheets, racks={rack + "X": sheet, **dict(rest)})


U = 0  # the U column: an int
CHANGES: dict[str, Callable[[RowSheets], RowSheets]] = {
    "row name": lambda s: replace(s, row=s.row + "X"),
    "rack name": _renamed_rack,
    "rack revision": lambda s: replace(s, racks={r: replace(k, revision="revision 000000000000")
                                                for r, k in s.racks.items()}),
    "a cell's text": lambda s: _rack(s, lambda rows: _cell(rows, 1, str(rows[0].cells[1]) + "x")),
    "a cell's type (int to float)": lambda s: _rack(s, lambda rows: _cell(rows, U, float(rows[0].cells[U]))),
    "a cell's type (int to text)": lambda s: _rack(s, lambda rows: _cell(rows, U, str(rows[0].cells[U]))),
    "a rail": lambda s: _rack(s, lambda rows: [replace(rows[0], rail=(rows[0].rail or 0) + 1), *rows[1:]]),
    "a plug's check-off boxes": lambda s: _rack(s, lambda rows: [replace(rows[0], plug=not rows[0].plug), *rows[1:]]),
    "a row fewer": lambda s: _rack(s, lambda rows: rows[:-1]),
    "a rack fewer": lambda s: replace(s, racks=dict(list(s.racks.items())[1:])),
}


def _offer(topology: Topology, serializer: str, code: str = "code") -> Offer:
    """The offer a run finds after an apply of ``topology``: LAST under the key of row L's file."""
    with offered(Offer(code)):
        head = page_header(topology)
        sheets = next(s for s in topology.shared(row_sheets) if s.row == "L")
        return Offer(code, {render_key(serializer, row_input(head, sheets)): LAST})


def _rendered(render: Render, topology: Topology, offer: Offer, path: str) -> bytes:
    with offered(offer):
        return next(a.content for a in render(topology) if a.path == path)


@pytest.mark.parametrize(("render", "path", "serializer"), FILES)
def test_an_unchanged_row_takes_the_last_applys_bytes(render: Render, path: str,
                                                       serializer: str) -> None:
    assert _rendered(render, TOPOLOGY, _offer(TOPOLOGY, serializer), path) == LAST


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize(("render", "path", "serializer"), FILES)
def test_each_input_the_key_covers_changed_alone_renders_again(
        render: Render, path: str, serializer: str, change: str) -> None:
    offer = _offer(TOPOLOGY, serializer)
    rows = [CHANGES[change](s) if s.row == "L" else s for s in TOPOLOGY.shared(row_sheets)]
    changed = _with_rows(TOPOLOGY, rows)
    path = path.replace("/L.", f"/{next(s.row for s in rows if s.row.startswith('L'))}.")
    fresh = _rendered(render, changed, Offer("code"), path)
    assert _rendered(render, changed, offer, path) == fresh != LAST


@pytest.mark.parametrize(("render", "path", "serializer"), FILES)
def test_the_page_header_the_code_and_the_serializer_are_in_the_key(
        render: Render, path: str, serializer: str) -> None:
    metadata = replace(TOPOLOGY.cluster.metadata, site=TOPOLOGY.cluster.metadata.site + "x")
    other_site = _with_rows(replace(TOPOLOGY, cluster=replace(TOPOLOGY.cluster, metadata=metadata)),
                            TOPOLOGY.shared(row_sheets))  # the same rows under another page header
    assert _rendered(render, other_site, _offer(TOPOLOGY, serializer), path) != LAST
    made_by_other_code = _offer(TOPOLOGY, serializer, code="other code").by_key
    assert _rendered(render, TOPOLOGY, Offer("code", made_by_other_code), path) != LAST
    other = next(s for _, _, s in FILES if s != serializer)
    assert _rendered(render, TOPOLOGY, _offer(TOPOLOGY, other), path) != LAST


def test_the_pipeline_offer_is_keyed_with_fabricgens_code(tmp_path: Path) -> None:
    """render_spec makes its keys with the code fingerprint (core/inputs.py): no key of another code matches."""
    from fabricgen.core import inputs
    from fabricgen.pipeline import render_spec

    compiled = compile_spec(INVENTORIES / "lab-1su.yaml")
    keyed = {a.path: a.render_key for a in render_spec(compiled, ("workbook", "print")) if a.render_key}
    assert sorted(keyed) == ["cabling/rows/L.pdf", "cabling/rows/L.xlsx", "cabling/rows/M.pdf", "cabling/rows/M.xlsx"]
    with offered(Offer(inputs.code_fingerprint())):
        head = page_header(compiled.topology)
        sheets = next(s for s in compiled.topology.shared(row_sheets) if s.row == "L")
        assert keyed["cabling/rows/L.pdf"] == render_key(printout.ROW_PDF, row_input(head, sheets))
