"""What a plan changes inside the files, in the cluster's terms: the cables, ports and addresses of a table
artifact (by the identity its feature declares, :class:`fabricgen.core.artifacts.Table`), the entries of a switch's
structured configuration (SONiC config_db.json's ``TABLE|key``, NVUE startup.yaml's object paths) with the fields
that change, the configuration lines of any other text file, and the unified diff behind them (``plan --diff``).

Only the files the plan creates, updates or deletes are read, each once, bounded and never through a symlink.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import yaml

from fabricgen.core.artifacts import Table
from fabricgen.outdir.fs import read_regular
from fabricgen.outdir.plan import Action, Change, Plan

MAX_COMPARED_BYTES = 256 * 1024 * 1024  # larger than any artifact; a bigger file on disk is not read
CONFIG_NOUN = "config entry"
ENTRY = "@entry"  # the column naming a config entry (no configuration field starts with @)
Entries = dict[tuple[str, ...], dict[str, str]]


@dataclass(frozen=True)
class RowChange:
    """One row of a table artifact added, removed or changed; ``fields`` are (column, old, new) of a change."""

    action: Action
    subject: str
    fields: tuple[tuple[str, str, str], ...] = ()
    derived: tuple[str, ...] = ()  # columns of ``fields`` that only restate others (the listing omits them)

    @property
    def shown_fields(self) -> tuple[tuple[str, str, str], ...]:
        return tuple(f for f in self.fields if f[0] not in self.derived)


@dataclass(frozen=True)
class FileDiff:
    """The content change of one planned path."""

    change: Change
    noun: str = ""  # what a row is, for a table artifact ("cable", "address"); "" for a file compared by lines
    rows: tuple[RowChange, ...] = ()
    parts: dict[str, tuple[int, int]] = field(default_factory=dict)  # noun -> (added, removed), e.g. ports
    lines: tuple[int, int] = (0, 0)  # lines added, removed (text files that are no table)
    whole: int = 0  # rows of a table created or deleted as a whole (not listed one by one: every row is)
    binary: bool = False
    old: bytes = field(default=b"", repr=False)
    new: bytes = field(default=b"", repr=False)

    def unified(self) -> list[str]:
        """The unified diff of the content (``plan --diff``); empty for a binary file."""
        if self.binary:
            return []
        old, new = _text(self.old) or "", _text(self.new) or ""
        where = self.change.path
        return list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{where}", f"b/{where}",
                                         lineterm=""))


def describe(plan: Plan, tables: Sequence[Table]) -> tuple[FileDiff, ...]:
    """The content change of every path the plan creates, updates or deletes, in path order."""
    rendered = {a.path: a.content for a in plan.artifacts}
    diffs = []
    for change in plan.changes:
        if change.action is Action.UNCHANGED:
            continue
        old = b"" if change.action is Action.CREATE else (read_regular(plan.out_dir / change.path,
                                                                          MAX_COMPARED_BYTES) or b"")
        new = b"" if change.action is Action.DELETE else rendered[change.path]
        diffs.append(_compare(change, old, new, _table_for(change.path, tables)))
    return tuple(diffs)


def _table_for(path: str, tables: Sequence[Table]) -> Table | None:
    return next((t for t in tables if fnmatchcase(path, t.pattern)), None)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _compare(change: Change, old: bytes, new: bytes, table: Table | None) -> FileDiff:
    if not old or not new:  # created or deleted: every line and row of it is added or removed
        data = old or new
        if b"\0" in data:
            return FileDiff(change, binary=True, old=old, new=new)
        text = _text(data)
        header = next(csv.reader(io.StringIO(text)), None) if table is not None and text is not None else None
        if table is not None and text is not None and header is not None and set(table.key) <= set(header):
            return FileDiff(change, table.noun, whole=sum(1 for _ in csv.reader(io.StringIO(text))) - 1,
                            old=old, new=new)
        count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        return FileDiff(change, lines=(0, count) if old else (count, 0), old=old, new=new)
    old_text, new_text = _text(old), _text(new)
    if old_text is None or new_text is None or "\0" in old_text or "\0" in new_text:
        return FileDiff(change, binary=True, old=old, new=new)
    if table is not None:
        old_rows, new_rows = _rows(old_text, table), _rows(new_text, table)
        if old_rows is not None and new_rows is not None:
            rows, parts = _row_changes(old_rows, new_rows, table)
            return FileDiff(change, table.noun, rows, parts, old=old, new=new)
    old_lines, new_lines = Counter(old_text.splitlines()), Counter(new_text.splitlines())
    added, removed = sum((new_lines - old_lines).values()), sum((old_lines - new_lines).values())
    old_entries, new_entries = _config_entries(change.path, old_text), _config_entries(change.path, new_text)
    if old_entries is not None and new_entries is not None:
        entries = Table(change.path, CONFIG_NOUN, (ENTRY,), f"{{{ENTRY}}}", derived=(ENTRY,))
        rows, _ = _row_changes({k: {ENTRY: _entry_name(change.path, k), **v} for k, v in old_entries.items()},
                               {k: {ENTRY: _entry_name(change.path, k), **v} for k, v in new_entries.items()},
                               entries)
        return FileDiff(change, CONFIG_NOUN, rows, lines=(added, removed), old=old, new=new)
    return FileDiff(change, lines=(added, removed), old=old, new=new)


def _config_entries(path: str, text: str) -> Entries | None:
    """A switch's structured configuration as entries (a mapping's path -> its scalar fields; an empty mapping, as
    NVUE writes a set value, is an entry with none); None for any other file or text that does not parse."""
    if not path.startswith("switches/") or not path.endswith((".json", ".yaml")):
        return None
    try:
        data = json.loads(text) if path.endswith(".json") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError):
        return None
    if isinstance(data, list) and all(isinstance(item, dict) and set(item) == {"set"} for item in data):
        data = {k: v for item in data for k, v in (item["set"] or {}).items()}  # NVUE: [{set: {...}}]
    entries: Entries = {}
    _flatten(data, (), entries)
    return entries


def _flatten(node: Any, path: tuple[str, ...], entries: Entries) -> None:
    if isinstance(node, list):
        if all(not isinstance(v, dict | list) for v in node):
            entries.setdefault(path[:-1], {})[path[-1] if path else ""] = ", ".join(map(str, node))
            return
        for i, item in enumerate(node):
            _flatten(item, (*path, f"[{i}]"), entries)
        return
    if not isinstance(node, dict):
        entries.setdefault(path[:-1], {})[path[-1] if path else ""] = "" if node is None else str(node)
        return
    if not node or any(not isinstance(v, dict | list) for v in node.values()):
        entries.setdefault(path, {})
    for key, value in node.items():
        _flatten(value, (*path, str(key)), entries)


def _entry_name(path: str, entry: tuple[str, ...]) -> str:
    """SONiC's own key form for config_db.json (``BGP_NEIGHBOR|10.0.0.1``), NVUE's object path (``interface swp1
    link``) for a YAML file."""
    if path.endswith(".json"):
        return "|".join(entry[:2]) + "".join(f" {part}" for part in entry[2:])
    return " ".join(entry)


def _rows(text: str, table: Table) -> dict[tuple[str, ...], dict[str, str]] | None:
    """The CSV's rows by their key (a repeated key gets its ordinal), or None when the header lacks a key column."""
    if not text:
        return {}
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    if not set(table.key) <= set(header):
        return None
    where = [header.index(column) for column in table.key]
    rows: dict[tuple[str, ...], dict[str, str]] = {}
    for values in reader:
        row = dict(zip(header, values, strict=False))
        key = tuple(values[i] if i < len(values) else "" for i in where)
        ordinal = 1
        while (key + ((str(ordinal),) if ordinal > 1 else ())) in rows:
            ordinal += 1
        rows[key + ((str(ordinal),) if ordinal > 1 else ())] = row
    return rows


def _format(template: str, row: dict[str, str]) -> str:
    """``template`` (fabricgen's own, never the spec's) filled with a row's values."""
    try:
        text = template.format_map(row)
    except (KeyError, IndexError, ValueError):
        text = " ".join(row.values())
    return " ".join(text.split())


def _row_changes(
    old: dict[tuple[str, ...], dict[str, str]], new: dict[tuple[str, ...], dict[str, str]], table: Table
) -> tuple[tuple[RowChange, ...], dict[str, tuple[int, int]]]:
    changes = [RowChange(Action.CREATE, _format(table.subject, new[k])) for k in new if k not in old]
    changes += [RowChange(Action.DELETE, _format(table.subject, old[k])) for k in old if k not in new]
    for key in new.keys() & old.keys():
        fields = tuple((column, old[key].get(column, ""), value) for column, value in new[key].items()
                       if old[key].get(column, "") != value)
        if fields:
            changes.append(RowChange(Action.UPDATE, _format(table.subject, new[key]), fields, table.derived))
    parts: dict[str, tuple[int, int]] = {}
    for noun in dict.fromkeys(noun for noun, _ in table.parts):
        templates = [t for n, t in table.parts if n == noun]
        before, after = _parts(old.values(), templates), _parts(new.values(), templates)
        parts[noun] = (len(after - before), len(before - after))
    order = {Action.CREATE: 0, Action.DELETE: 1, Action.UPDATE: 2}
    return tuple(sorted(changes, key=lambda c: (order[c.action], c.subject))), parts


def _parts(rows: Iterable[dict[str, str]], templates: Sequence[str]) -> set[str]:
    return {_format(template, row) for row in rows for template in templates}
