"""GUID inventory: a site's vendor manifest (or `ibstat` output turned into a table) as CSV or YAML.

Rows: ``device`` (switch name or node name), ``rdma_dev`` (the HCA's RDMA device, empty for switches),
``node_guid`` and ``port_guid`` (the HCA's port 1; a switch's port GUID is its node GUID). A row's key is the
NodeDescription fabricgen plans for the device (``<switch>`` or ``<node> <rdma_dev>``). Read at load time like
the spec itself; every problem is reported with file:line.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from pathlib import Path
from typing import Any

from fabricgen.core import inputs
from fabricgen.core.errors import SourcePosition, SpecError, SpecIssue
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.model.infiniband import GuidEntry
from fabricgen.spec.load import MAX_SPEC_BYTES, load_text

GUID = re.compile(r"^0x[0-9a-fA-F]{16}$")
COLUMNS = ("device", "rdma_dev", "node_guid", "port_guid")
MAX_INVENTORY_BYTES = inputs.MAX_NAMED_FILE_BYTES  # ~600,000 rows: every HCA of a 256k-GPU site


class UnreadableInventoryError(Exception):
    """The inventory file cannot be read at all (missing, a directory, too large): there is no line of it to point
    at, so the caller reports ``reason`` at the spec field that names the file."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _read(path: Path) -> bytes:
    """The file's bytes, read to its form's limit (a YAML inventory is parsed as a spec is) and recorded as an
    input of the compile."""
    try:
        raw = read_bounded(path, MAX_INVENTORY_BYTES if path.suffix == ".csv" else MAX_SPEC_BYTES)
    except TooLargeError as exc:
        raise UnreadableInventoryError(exc.describe("it")) from exc
    except OSError as exc:
        raise UnreadableInventoryError(str(exc.strerror or exc)) from exc
    inputs.record(path, hashlib.sha256(raw).hexdigest())
    return raw


def _rows(path: Path) -> list[tuple[SourcePosition, dict[str, Any]]]:
    raw = _read(path)
    if path.suffix == ".csv":
        where = SourcePosition(str(path), 1, 1)
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SpecError([SpecIssue(where, "", f"GUID inventory is not UTF-8: {exc.reason}")]) from exc
        reader = csv.DictReader(io.StringIO(text))
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise SpecError([SpecIssue(SourcePosition(str(path), 1, 1), "", f"GUID inventory lacks columns "
                                       f"{', '.join(missing)}", f"header: {','.join(COLUMNS)}")])
        return [(SourcePosition(str(path), reader.line_num, 1), row) for row in reader]
    doc = load_text(raw, str(path))
    if not isinstance(doc.data, list):
        raise SpecError([SpecIssue(doc.position(()), "", "GUID inventory must be a list of rows",
                                   f"each row with {', '.join(COLUMNS)}")])
    return [(doc.position((i,)), row if isinstance(row, dict) else {}) for i, row in enumerate(doc.data)]


def load_inventory(path: Path) -> dict[str, GuidEntry]:
    """Entries by planned NodeDescription; malformed or duplicate GUIDs and names raise SpecError, a file that
    cannot be read :class:`UnreadableInventoryError`."""
    issues: list[SpecIssue] = []
    entries: dict[str, GuidEntry] = {}
    seen_guids: dict[int, str] = {}
    for where, row in _rows(path):
        device, dev = str(row.get("device") or ""), str(row.get("rdma_dev") or "")
        key = f"{device} {dev}" if dev else device
        if not device:
            issues.append(SpecIssue(where, "device", "row has no device name"))
            continue
        guids = []
        for column in ("node_guid", "port_guid"):
            value = str(row.get(column) or (row.get("node_guid") if column == "port_guid" and not dev else "") or "")
            if not GUID.fullmatch(value):
                issues.append(SpecIssue(where, column, f"{value!r} is not a GUID", "0x followed by 16 hex digits"))
                break
            guids.append(int(value, 16))
        if len(guids) != 2:
            continue
        if key in entries:
            issues.append(SpecIssue(where, "device", f"{key!r} is listed twice (first at line "
                                                     f"{entries[key].position.line})"))
            continue
        for guid in {guids[0], guids[1]}:
            if guid in seen_guids:
                issues.append(SpecIssue(where, "node_guid", f"GUID 0x{guid:016x} is already used by "
                                                            f"{seen_guids[guid]!r}", "GUIDs are unique"))
            seen_guids[guid] = key
        entries[key] = GuidEntry(guids[0], guids[1], where)
    if issues:
        raise SpecError(issues)
    return entries
