"""The XLSX handoff printed by LibreOffice Calc, as a technician without Excel prints it (headless, to PDF): every
workbook opens, every page is landscape with the page header and the column titles, the text is readable, and
every device name is printed whole. The fonts are Carlito, metric-compatible with Calibri (the workbooks' font),
so the page scaling is the one Excel computes."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from pathlib import Path
from xml.etree import ElementTree

import pytest
from pypdf import PdfReader

from fabricgen.features.cabling.handoff import page_header, rack_ends, row_sheets
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, require_tool

MIN_TEXT_PT = 6.5  # the smallest text a printed sheet may have (the PDF sheets print at 7-8 pt; it was 4-5.5 pt)
Page = tuple[str, float, bool]  # its text, the smallest text size in pt, landscape
WORKBOOKS = ("cabling/cables.xlsx", "cabling/rows/A.xlsx", "cabling/rows/N.xlsx")  # fabrics, compute racks, network


def _carlito() -> None:
    """Without Calibri or a metric twin, LibreOffice substitutes a wider font and the fitted scale means nothing."""
    found = subprocess.run([require_tool("fc-match"), "-f", "%{family}", "Calibri"], capture_output=True, text=True,
                           check=True).stdout
    if "Carlito" not in found and "Calibri" not in found:
        require_tool("carlito-font")  # fails in CI, skips locally: .ci/run installs fonts-crosextra-carlito


@pytest.fixture(scope="module")
def printed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Topology, dict[str, list[Page]]]:
    """(topology, {workbook: [(page text, smallest text size in pt, landscape)]}) from LibreOffice's print of each
    workbook."""
    soffice = require_tool("soffice")
    _carlito()
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    files = {a.path: a.content for a in render_spec(compiled, ("workbook",))}
    work = tmp_path_factory.mktemp("libreoffice")
    books = []
    for path in WORKBOOKS:
        book = work / path.replace("/", "_")
        book.write_bytes(files[path])
        books.append(book)
    subprocess.run([soffice, f"-env:UserInstallation={(work / 'profile').as_uri()}", "--headless", "--convert-to",
                    "pdf", "--outdir", str(work / "pdf"), *map(str, books)], check=True, capture_output=True,
                   timeout=600)
    pages: dict[str, list[Page]] = {}
    for path, book in zip(WORKBOOKS, books, strict=True):
        reader = PdfReader(work / "pdf" / book.with_suffix(".pdf").name)
        pages[path] = []
        for page in reader.pages:
            sizes: list[float] = []

            def size(text: str, cm: list[float], tm: list[float], _font: object, font_size: float,
                     sizes: list[float] = sizes) -> None:
                if text.strip():
                    sizes.append(font_size * tm[3] * cm[3])

            pages[path].append((page.extract_text(visitor_text=size), min(sizes),
                                page.mediabox.width > page.mediabox.height))
    return compiled.topology, pages


def _by_sheet(pages: list[Page], titles: list[str]) -> dict[str, list[str]]:
    """Page texts by the sheet title (the page header's centre) each page carries; every data sheet prints
    landscape."""
    sheets: dict[str, list[str]] = defaultdict(list)
    for text, _, landscape in pages:
        title = next(t for t in titles if t in text)
        assert landscape, f"{title} prints landscape"
        sheets[title].append(text)
    return sheets


def test_every_page_is_readable(printed: tuple[Topology, dict[str, list[Page]]]) -> None:
    _, pages = printed
    for path, book in pages.items():
        smallest = min(size for _, size, _ in book)
        assert smallest >= MIN_TEXT_PT, f"{path} prints {smallest:.1f} pt text at its fitted scale"


def test_rack_sheets_print_headers_titles_and_whole_names(
        printed: tuple[Topology, dict[str, list[Page]]]) -> None:
    topology, pages = printed
    site = page_header(topology)
    ends = rack_ends(topology.cables)
    revisions = {rack: sheet.revision for rs in row_sheets(topology) for rack, sheet in rs.racks.items()}
    for row in ("A", "N"):
        racks = sorted(r for r in ends if r.startswith(row))
        book = [page for page in pages[f"cabling/rows/{row}.xlsx"] if "rail meaning" not in page[0]]
        sheets = _by_sheet(book, [f"rack {r} (row {row})" for r in racks])
        assert sorted(sheets) == [f"rack {r} (row {row})" for r in racks], "a printed sheet for every rack"
        total = len(pages[f"cabling/rows/{row}.xlsx"])
        for (text, _, _), number in zip(book, range(1, total + 1), strict=False):
            rack = next(r for r in racks if f"rack {r} (row {row})" in text)
            assert site in text and revisions[rack] in text and f"Page {number} of {total}" in text
            assert "plugged tested U device port end label" in text, "the column titles on every page"
        for rack in racks:
            text = "\n".join(sheets[f"rack {rack} (row {row})"])
            for end in ends[rack]:
                assert end.here.device in text and end.far.device in text, f"{end.cable.id}: a device name is cut"


def test_fabric_sheets_print_whole_names(printed: tuple[Topology, dict[str, list[Page]]]) -> None:
    topology, pages = printed
    fabrics = [ft.fabric.name for ft in topology.fabrics]
    sheets = _by_sheet([p for p in pages["cabling/cables.xlsx"] if "plugged tested rack U device" in p[0]],
                       [f"fabric {f} revision " for f in fabrics])
    assert sorted(sheets) == sorted(f"fabric {f} revision " for f in fabrics), "a printed sheet for every fabric"
    for fabric in fabrics:
        text = "\n".join(sheets[f"fabric {fabric} revision "])
        for cable in (c for c in topology.cables if c.fabric == fabric):
            assert cable.a.device in text and cable.z.device in text, f"{cable.id}: a device name is cut"


def test_libreoffice_reads_numbers_as_numbers(tmp_path: Path) -> None:
    """Issue 19: LibreOffice Calc loads the rail, U and plain port number cells as numbers and faceplate names as
    text: lab-1su's cables.xlsx converted by Calc to its flat ODF spreadsheet, whose cells state their value type."""
    soffice = require_tool("soffice")
    compiled = compile_spec(INVENTORIES / "lab-1su.yaml")
    book = tmp_path / "cables.xlsx"
    book.write_bytes(next(a.content for a in render_spec(compiled, ("workbook",)) if a.path == "cabling/cables.xlsx"))
    subprocess.run([soffice, f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}", "--headless", "--convert-to",
                    "fods", "--outdir", str(tmp_path / "out"), str(book)], check=True, capture_output=True, timeout=300)
    ns = {"table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
          "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
          "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0"}
    root = ElementTree.parse(tmp_path / "out" / "cables.fods").getroot()
    oob = next(t for t in root.iter(f"{{{ns['table']}}}table") if t.get(f"{{{ns['table']}}}name") == "oob")
    rows = []
    for row in oob.iter(f"{{{ns['table']}}}table-row"):
        cells: list[tuple[str, str]] = []
        for cell in row.findall("table:table-cell", ns):
            repeat = int(cell.get(f"{{{ns['table']}}}number-columns-repeated", "1"))
            text = "".join(cell.itertext()).strip()
            cells += [(cell.get(f"{{{ns['office']}}}value-type", ""), text)] * min(repeat, 64)
        rows.append(cells)
    header = [text for _, text in rows[0]]
    rail, u, port = header.index("rail"), header.index("U"), header.index("port")
    data = [r for r in rows[1:] if len(r) > port and r[port][1]]
    assert data and all(r[u][0] == "float" for r in data)
    assert all(r[rail][0] == "float" for r in data if r[rail][1])
    assert {r[port][0] for r in data if r[port][1] == "49"} == {"float"}
    assert {r[port][0] for r in data if "/" in r[port][1]} == {"string"}
