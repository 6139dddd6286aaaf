"""Target ``print``: cabling/rows/<row>.pdf, the cable sheets a technician prints, one file per row, each rack on
pages of its own.

Why reportlab: it is the long-maintained PDF library of the Python world (BSD, releases since 2000), writes PDF
with the standard fonts and no system dependency, and its ``invariant`` mode fixes the dates and document id, so
the same spec gives byte-identical PDFs. The pages are drawn on its canvas directly rather than through its
platypus tables: the layout is a fixed grid, and the canvas is several times faster for the thousands of pages
of a 16,384-GPU cluster.

Every page: A4 landscape; a header with the rack and row, the site and cluster, and the spec digest (the
revision); the column titles; the cable ends of the rack in the handoff order (top U first, ports in physical
order), a row filled with its rail's colour; the rail legend; a footer with the rack's page i of k and the file's
page n of m. Columns are as wide as their longest text in the file and the font shrinks until they fit the page:
nothing is ever cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from io import BytesIO

from reportlab.lib.pagesizes import A4, landscape
from reportlab.pdfbase.pdfmetrics import stringWidth
from reportlab.pdfgen.canvas import Canvas

from fabricgen.core.artifacts import Artifact
from fabricgen.features.cabling.handoff import (
    CHECK_COLUMNS,
    END_COLUMNS,
    NO_RAIL,
    RAIL_PALETTE,
    RackEnd,
    RowSheets,
    page_header,
    rail_colour,
    row_sheets,
)
from fabricgen.model.topology import Topology

PAGE_W, PAGE_H = landscape(A4)
MARGIN = 28.0
FONT, BOLD = "Helvetica", "Helvetica-Bold"
MAX_SIZE, PAD = 8.0, 3.0
HEADER_H, FOOTER_H, LEGEND_H = 40.0, 16.0, 16.0
COLUMNS = (*CHECK_COLUMNS, *END_COLUMNS)
NUMERIC = frozenset({"U", "to U", "length m", "rail"})


def _hex(colour: str) -> tuple[float, float, float]:
    return int(colour[:2], 16) / 255, int(colour[2:4], 16) / 255, int(colour[4:], 16) / 255


def _texts(end: RackEnd) -> tuple[str, ...]:
    return ("", "", *(str(v) for v in end.cells()))


def _layout(sheets: RowSheets) -> tuple[float, list[float]]:
    """The font size and column widths (points) at which the longest text of every column fits the page width."""
    longest = [stringWidth(c, BOLD, MAX_SIZE) for c in COLUMNS]
    for ends in sheets.racks.values():
        for end in ends:
            for i, text in enumerate(_texts(end)):
                longest[i] = max(longest[i], stringWidth(text, FONT, MAX_SIZE))
    usable = PAGE_W - 2 * MARGIN - 2 * PAD * len(COLUMNS)
    size = min(MAX_SIZE, MAX_SIZE * usable / sum(longest))
    return size, [w * size / MAX_SIZE + 2 * PAD for w in longest]


def _legend(canvas: Canvas, y: float, size: float) -> None:
    x = MARGIN
    canvas.setFont(FONT, size)
    canvas.setFillColorRGB(0, 0, 0)
    canvas.drawString(x, y + 3, "rail colours:")
    x += stringWidth("rail colours:", FONT, size) + 6
    for label, colour in [*((str(i), c) for i, c in enumerate(RAIL_PALETTE)), ("none", NO_RAIL)]:
        canvas.setFillColorRGB(*_hex(colour))
        canvas.rect(x, y, 22, size + 4, stroke=1, fill=1)
        canvas.setFillColorRGB(0, 0, 0)
        canvas.drawCentredString(x + 11, y + 3, label)
        x += 28
    canvas.drawString(x + 4, y + 3, f"(rail n takes colour n mod {len(RAIL_PALETTE)})")


def _page(canvas: Canvas, rack: str, row: str, head: tuple[str, str], ends: Sequence[RackEnd], layout: tuple[
          float, list[float]], pages: tuple[int, int, int, int]) -> None:
    """One page: header, column titles, the ends, legend, footer. ``pages``: rack page, rack pages, file page,
    file pages."""
    size, widths = layout
    rack_page, rack_pages, page, total = pages
    top = PAGE_H - MARGIN
    canvas.setFont(BOLD, 14)
    canvas.drawString(MARGIN, top - 14, f"Rack {rack}  (row {row})")
    canvas.setFont(FONT, 9)
    canvas.drawCentredString(PAGE_W / 2, top - 12, head[0])
    canvas.drawRightString(PAGE_W - MARGIN, top - 12, head[1])
    line = size * 1.9
    y = top - HEADER_H
    xs = [MARGIN]
    for w in widths:
        xs.append(xs[-1] + w)
    canvas.setFont(BOLD, size)
    for x, w, title in zip(xs, widths, COLUMNS, strict=False):
        if title in NUMERIC:
            canvas.drawRightString(x + w - PAD, y - line + size * 0.55, title)
        else:
            canvas.drawString(x + PAD, y - line + size * 0.55, title)
    canvas.line(MARGIN, y - line, xs[-1], y - line)
    y -= line
    for end in ends:
        canvas.setFillColorRGB(*_hex(rail_colour(end.cable.rail)))
        canvas.rect(MARGIN, y - line, xs[-1] - MARGIN, line, stroke=0, fill=1)
        canvas.setFillColorRGB(0, 0, 0)
        for box in range(len(CHECK_COLUMNS)):  # an empty box to tick
            canvas.setFillColorRGB(1, 1, 1)
            canvas.rect(xs[box] + PAD, y - line + size * 0.3, size * 1.2, size * 1.2, stroke=1, fill=1)
        canvas.setFillColorRGB(0, 0, 0)
        canvas.setFont(FONT, size)
        for x, w, title, text in zip(xs, widths, COLUMNS, _texts(end), strict=False):
            if not text:
                continue
            if title in NUMERIC:
                canvas.drawRightString(x + w - PAD, y - line + size * 0.55, text)
            else:
                canvas.drawString(x + PAD, y - line + size * 0.55, text)
        y -= line
    _legend(canvas, MARGIN + FOOTER_H, 7)
    canvas.setFont(FONT, 8)
    canvas.drawString(MARGIN, MARGIN, f"rack {rack}: page {rack_page} of {rack_pages}")
    canvas.drawRightString(PAGE_W - MARGIN, MARGIN, f"page {page} of {total}")
    canvas.showPage()


def rows_per_page(size: float) -> int:
    line = size * 1.9
    return max(1, int((PAGE_H - 2 * MARGIN - HEADER_H - FOOTER_H - LEGEND_H - 8 - line) // line))


def row_pdf(sheets: RowSheets, head: tuple[str, str]) -> bytes:
    """One row's file: each rack starts a new page."""
    layout = _layout(sheets)
    per_page = rows_per_page(layout[0])
    chunks = [(rack, [ends[i:i + per_page] for i in range(0, len(ends), per_page)])
              for rack, ends in sheets.racks.items()]
    total = sum(len(pages) for _, pages in chunks)
    buffer = BytesIO()
    canvas = Canvas(buffer, pagesize=(PAGE_W, PAGE_H), invariant=1, pageCompression=1)
    canvas.setTitle(f"Cable sheets, row {sheets.row}")
    canvas.setAuthor("fabricgen")
    canvas.setSubject(f"{head[0]}, {head[1]}")
    page = 0
    for rack, pages in chunks:
        for i, ends in enumerate(pages, 1):
            page += 1
            _page(canvas, rack, sheets.row, head, ends, layout, (i, len(pages), page, total))
    canvas.save()
    return buffer.getvalue()


def render(topology: Topology) -> list[Artifact]:
    head = page_header(topology)
    return [Artifact(f"cabling/rows/{sheets.row}.pdf", row_pdf(sheets, head)) for sheets in row_sheets(topology)]
