"""Review D3/D5: a printed sheet's revision is the digest of what it prints, so a spec edit that changes no row
(a comment) re-issues no sheet, and a change of one cable re-issues only the sheets that print it."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import replace
from pathlib import Path

import openpyxl  # type: ignore[import-untyped]
import pypdf

from fabricgen.features.cabling import printout, workbook
from fabricgen.features.cabling.handoff import row_sheets
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

SHEETS = ("cabling", "workbook", "print")


def _cabling(spec: Path) -> dict[str, bytes]:
    return {a.path: a.content for a in render_spec(compile_spec(spec), SHEETS)}


def test_a_comment_edit_leaves_every_sheet_byte_identical(tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text())
    before = _cabling(spec)
    spec.write_text("# a comment on top\n" + spec.read_text() + "# and one below\n")
    assert compile_spec(spec).cluster.spec_digest != compile_spec(INVENTORIES / "lab-1su.yaml").cluster.spec_digest
    assert _cabling(spec) == before
    assert any(p.endswith(".pdf") for p in before) and any(p.endswith(".xlsx") for p in before)


def _printed_revisions(topology: Topology) -> dict[str, str]:
    """Each printed sheet's revision as read back: the PDF pages (pypdf) and the workbook headers (openpyxl)."""
    found: dict[str, str] = {}
    for artifact in printout.render(topology):
        for page in pypdf.PdfReader(io.BytesIO(artifact.content)).pages:
            text = page.extract_text()
            rack = re.search(r"Rack (\S+) ", text)
            revision = re.search(r"revision [0-9a-f]{12}", text)
            assert rack and revision, text[:200]
            assert found.setdefault(f"pdf {rack[1]}", revision[0]) == revision[0], "one revision per rack"
    for artifact in (a for a in workbook.render(topology) if a.path.endswith(".xlsx")):
        book = openpyxl.load_workbook(io.BytesIO(artifact.content))
        for sheet in book.worksheets:
            if sheet.oddHeader.right.text:
                found[f"{artifact.path} {sheet.title}"] = sheet.oddHeader.right.text
    return found


def test_one_cable_length_changes_only_its_sheets() -> None:
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    cables = list(topology.cables)
    i, cable = next((i, c) for i, c in enumerate(cables) if c.a.rack != c.z.rack and not c.leg)
    cables[i] = replace(cable, length_m=cable.length_m + 5)
    changed = replace(topology, cables=tuple(cables))
    before, after = _printed_revisions(topology), _printed_revisions(changed)
    assert before.keys() == after.keys()
    differ = {key for key in before if before[key] != after[key]}
    rows = {r.name: r.row for r in topology.cluster.facility.racks}
    assert differ == {f"pdf {cable.a.rack}", f"pdf {cable.z.rack}",
                      f"cabling/rows/{rows[cable.a.rack]}.xlsx rack {cable.a.rack}",
                      f"cabling/rows/{rows[cable.z.rack]}.xlsx rack {cable.z.rack}",
                      f"cabling/cables.xlsx {cable.fabric}"}
    # the PDF page and the workbook sheet of one rack carry one revision: the rack's
    view = {rack: s.revision for rs in row_sheets(changed) for rack, s in rs.racks.items()}
    assert all(after[f"pdf {rack}"] == revision for rack, revision in view.items())
    assert all(after[f"cabling/rows/{rows[rack]}.xlsx rack {rack}"] == view[rack] for rack in view)


def test_revisions_csv_lists_every_printed_sheet_as_printed() -> None:
    """cabling/revisions.csv (the table plan lists sheets by) holds each sheet's revision as the PDF pages and the
    workbook headers print it: a rack's once for its two files, a fabric's for cables.xlsx."""
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    table = next(a for a in workbook.render(topology) if a.path == "cabling/revisions.csv")
    rows = list(csv.DictReader(io.StringIO(table.content.decode())))
    printed = _printed_revisions(topology)
    expected = {}
    for key, revision in printed.items():
        if key.startswith("pdf "):
            expected[f"rack {key.removeprefix('pdf ')}"] = revision
        elif key.startswith("cabling/cables.xlsx "):
            expected[f"fabric {key.removeprefix('cabling/cables.xlsx ')}"] = revision
        else:
            assert printed[f"pdf {key.rsplit(' ', 1)[1]}"] == revision, "a rack's PDF and workbook sheet agree"
    assert {r["sheet"]: f"revision {r['revision']}" for r in rows} == expected
    assert len(rows) == len(expected), "each sheet once"
    rack = next(r for r in rows if r["sheet"] == "rack M01")
    assert rack["files"] == "cabling/rows/M.pdf cabling/rows/M.xlsx"
