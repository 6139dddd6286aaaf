"""The one Jinja2 environment (strict undefined, trailing newlines kept, templates compiled once), and the one
CSV layout every CSV artifact shares."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

import jinja2

from fabricgen.core.resources import shipped_dir


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(shipped_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
        trim_blocks=False,
    )


def render_template(name: str, **context: Any) -> bytes:
    """Render ``templates/<name>`` with plain data; templates lay out text and hold no logic."""
    return environment().get_template(name).render(**context).encode("utf-8")


# A spreadsheet reads a CSV cell starting with one of these as a formula (=HYPERLINK(...), =cmd|' /C calc'!A0).
FORMULA_START = frozenset("=+-@\t\r\n")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
# A cell that could start with one: after a separator or a line feed (or at the text's start: _FORMULA_FIRST), quoted
# or not (may over-match). A character class first, not (?:^|,), so the engine scans without backtracking: half the
# time on the 26 MB cables.csv of a 16,384-GPU cluster.
_MAYBE_FORMULA = re.compile(r'[,\n]"?[=+\-@\t\r\n]')
_FORMULA_FIRST = re.compile(r'"?[=+\-@\t\r\n]')


def env_line(name: str, value: str) -> str:
    """NAME=VALUE as an environment file (sourced by sh, or systemd's EnvironmentFile=) holds it: single-quoted
    when the value has a ';' (GPUDirect-TCPX's CPU bindings); the callers allow no other special character."""
    return f"{name}='{value}'" if ";" in value else f"{name}={value}"


def formula_like(text: str) -> bool:
    """Whether a spreadsheet would take this text cell for a formula: it starts with ``= + - @``, a tab or a line
    break (OWASP, "CSV Injection") and is not a plain number (``-1`` stays a number)."""
    return text[:1] in FORMULA_START and not _PLAIN_NUMBER.fullmatch(text)


def spreadsheet_text(text: str) -> str:
    """OWASP's neutralisation of a formula-like text cell: a leading ``'``, which spreadsheets show as text."""
    return "'" + text if formula_like(text) else text


def csv_bytes(header: Iterable[object], rows: Iterable[Iterable[object]]) -> bytes:
    """A CSV artifact: a header row, then the rows, Unix line ends, UTF-8; formula-like text cells neutralised.

    Names and parts reach CSVs only after strict patterns that cannot start a formula, so the neutralisation is a
    safety net that never changes a NetBox import (NetBox stores a leading ``'`` as part of the value). It costs one
    regex scan of the written text; cells are rewritten one by one only when the scan finds a candidate.
    """
    table = [list(header), *(list(row) for row in rows)]
    text = _csv_text(table)
    if _FORMULA_FIRST.match(text) or _MAYBE_FORMULA.search(text):
        text = _csv_text([[spreadsheet_text(c) if isinstance(c, str) else c for c in row] for row in table])
    return text.encode("utf-8")


def _csv_text(table: Iterable[Iterable[object]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    return buffer.getvalue()
