"""The core's rules for untrusted text: the bounded reader, printable positions and paths, secret redaction in the
document, and spreadsheet cells neutralised the way OWASP describes (without breaking numbers or NetBox imports)."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.core import templating
from fabricgen.core.document import REDACTED, Document, format_path
from fabricgen.core.errors import SourcePosition, printable
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.core.templating import csv_bytes, formula_like, spreadsheet_text


def test_read_bounded_stops_at_the_limit_for_any_file(tmp_path: Path) -> None:
    regular = tmp_path / "spec.yaml"
    regular.write_bytes(b"x" * 11)
    assert read_bounded(regular, 11) == b"x" * 11
    with pytest.raises(TooLargeError) as big:
        read_bounded(regular, 10)
    assert big.value.describe("spec") == "spec is 11 bytes, above the 10 byte limit"
    with pytest.raises(TooLargeError) as device:
        read_bounded(Path("/dev/zero"), 1 << 20)
    assert device.value.describe("spec") == "spec holds more than the 1048576 byte limit"


def test_read_bounded_neither_hangs_on_a_pipe_nor_follows_a_symlink_when_told(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert read_bounded(fifo, 100) == b""  # no writer: empty, at once
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").write_bytes(b"data")
    assert read_bounded(link, 100) == b"data"
    with pytest.raises(OSError, match="Too many levels of symbolic links"):
        read_bounded(link, 100, follow_symlinks=False)


@pytest.mark.parametrize(("text", "shown"), [
    ("spec.yaml", "spec.yaml"), ("a\nb.yaml", "a\\nb.yaml"), ("\x1b[2J", "\\x1b[2J"), ("a\u2028b", "a\\u2028b"),
    ("é ü", "é ü"),
])
def test_printable_escapes_only_what_moves_lines_or_the_cursor(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert str(SourcePosition(text, 3, 4)) == f"{shown}:3:4"
    assert format_path(("fabrics", text, 0)) == f"fabrics.{shown}[0]"


def _doc(data: object) -> Document:
    return Document(data, "spec.yaml", "", {}, {}, frozenset({"keys", "sm_key"}))


def test_issues_under_a_secret_key_never_hold_its_value() -> None:
    doc = _doc({"fabrics": {"c": {"keys": {"sm_key": 0x5EC1E7000000BEEF, "other": "abcdefgh"}}}})
    issue = doc.issue(("fabrics", "c", "keys", "sm_key"),
                      f"got {0x5EC1E7000000BEEF} (0x5ec1e7000000beef, '0x5ec1e7000000beef')", "not 5ec1e7000000beef")
    assert issue.message == f"got {REDACTED} ({REDACTED}, '{REDACTED}')" and issue.hint == f"not {REDACTED}"
    whole = doc.issue(("fabrics", "c", "keys"), "{'sm_key': 6827992497256447727, 'other': 'abcdefgh'}")
    assert "6827992497256447727" not in whole.message and "abcdefgh" not in whole.message
    public = doc.issue(("fabrics", "c", "name"), "name 'abcdefgh'")
    assert public.message == "name 'abcdefgh'"


@pytest.mark.parametrize(("cell", "formula"), [
    ("=HYPERLINK(\"http://x\")", True), ("+1+cmd|' /C calc'!A0", True), ("-2+3", True), ("@SUM(A1)", True),
    ("\tx", True), ("\r=1", True), ("-1", False), ("-0.5", False), ("+3e2", False), ("a=b", False), ("", False),
    ("MCP4Y10-N001", False),
])
def test_formula_like_text_is_what_a_spreadsheet_would_evaluate(cell: str, formula: bool) -> None:
    assert formula_like(cell) is formula
    assert spreadsheet_text(cell) == ("'" + cell if formula else cell)


def test_csv_cells_are_neutralised_and_numbers_kept() -> None:
    data = csv_bytes(("part", "count", "note"), [("=cmd|' /C calc'!A0", -1, "-5"), ("MMA4Z00-NS", 2, "a,=b")])
    rows = list(csv.reader(io.StringIO(data.decode())))
    assert rows == [["part", "count", "note"], ["'=cmd|' /C calc'!A0", "-1", "-5"], ["MMA4Z00-NS", "2", "a,=b"]]


def test_csv_of_safe_cells_is_unchanged_by_the_scan() -> None:
    rows = [("gpu001", "OSFP4P2", 3.5, None), ("storage-leaf001", "Ethernet4", -2, "")]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([("a", "b", "c", "d"), *rows])
    assert csv_bytes(("a", "b", "c", "d"), rows) == buffer.getvalue().encode()


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from(',"\n\r\t=+-@ab1'), max_size=10))
def test_csv_scan_finds_every_cell_a_line_start_scan_finds(text: str) -> None:
    """The scan for a cell that may start a formula (the text's start, then a class first: no backtracking) finds
    exactly what a scan at each line start and separator finds."""
    line_start = re.compile(r'(?:^|,)"?[=+\-@\t\r\n]', re.MULTILINE)
    found = templating._FORMULA_FIRST.match(text) or templating._MAYBE_FORMULA.search(text)
    assert bool(found) == bool(line_start.search(text))
