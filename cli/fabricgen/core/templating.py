"""The one Jinja2 environment (strict undefined, trailing newlines kept, templates compiled once), and the one
CSV layout every CSV artifact shares."""

from __future__ import annotations

import csv
import io
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


def csv_bytes(header: Iterable[object], rows: Iterable[Iterable[object]]) -> bytes:
    """A CSV artifact: a header row, then the rows, Unix line ends, UTF-8."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")
