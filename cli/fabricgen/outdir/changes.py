"""What a plan changes inside the files, in the cluster's terms: the cables, ports and addresses of a table
artifact (by the identity its feature declares, :class:`fabricgen.core.artifacts.Table`), the entries of a switch's
configuration with the fields or lines that change (SONiC config_db.json's ``TABLE|key``, NVUE startup.yaml's and
AVD's object paths, EOS running-config's sections: ``interface Ethernet1/1``, ``router bgp 65100 / neighbor
10.21.0.0``), the configuration lines of any other text file, and the unified diff behind them (``plan --diff``).

Only the files the plan creates, updates or deletes are read, each once, bounded and never through a symlink.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from fnmatch import fnmatchcase
from itertools import repeat
from typing import Any

import yaml

from fabricgen.core.artifacts import Places, Table
from fabricgen.core.renames import Place, renamed_devices
from fabricgen.outdir.fs import read_regular
from fabricgen.outdir.plan import Action, Change, Plan

MAX_COMPARED_BYTES = 256 * 1024 * 1024  # larger than any artifact; a bigger file on disk is not read
CONFIG_NOUN = "config entry"
ENTRY = "@entry"  # the column naming a config entry (no configuration field starts with @)
Entries = dict[tuple[str, ...], dict[str, str]]
Field = tuple[str, str | None, str | None]  # (column, old, new); None: the entry has no such field on that side


class RowKind(StrEnum):
    """A changed row that is more (or less) than a change: the same installed item with other labels or at other
    ends (:attr:`Table.labels`), or a row whose only changes are estimates (:attr:`Table.estimates`); the values
    are the words of the JSON output."""

    RELABEL = "relabel"  # the same two ends, other labels: reprint them
    REPATCH = "re-patch"  # the same id, other ends: move the cable
    ESTIMATE = "estimate"  # only a computed estimate moved (a cable's run): nothing to do at the racks


@dataclass(frozen=True)
class RowChange:
    """One row of a table artifact added, removed, changed, relabelled or re-patched; ``fields`` are (column, old,
    new) of a change; ``moved`` the row's subject before and after a re-patch (its ``subject`` is then its label)."""

    action: Action | RowKind
    subject: str
    fields: tuple[Field, ...] = ()
    derived: tuple[str, ...] = ()  # columns of ``fields`` that only restate others (the listing omits them)
    moved: tuple[str, str] = ("", "")
    # an added or removed row's name on the installed item (a cable's id: the physical cable's for one of
    # several links; a printed sheet's revision), which the plan prints beside its ends so a crew pulling it finds
    # the labelled cable, and a technician the printed sheet to discard
    label: str = ""
    # an installed item of several rows (a breakout's legs, a cage-pair cable's links): each of its rows' own
    # change, in natural order, so a field its legs change differently (each leg's a_rack) keeps each leg's value
    legs: tuple[RowChange, ...] = ()

    @property
    def shown_fields(self) -> tuple[Field, ...]:
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
    # a renamed device's file at its new name: the path its old name had, whose content ``old`` is
    # (``switches/oob-l04/config_db.json`` for ``switches/oob-k04/config_db.json``; in a shifted group's chain
    # ``hosts/gpu001/x`` for ``hosts/gpu002/x``, which gpu002's old box held before), listed as one file moved
    moved_from: str = ""

    def unified(self) -> list[str]:
        """The unified diff of the content (``plan --diff``); empty for a binary file."""
        if self.binary:
            return []
        old, new = _text(self.old) or "", _text(self.new) or ""
        return list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{self.moved_from or self.change.path}",
                                         f"b/{self.change.path}", lineterm=""))


def moved_devices(plan: Plan, places: Sequence[Places]) -> dict[str, str]:
    """The devices the plan renames (old name -> new name): where the artifacts of ``places`` said a device stood
    (rack, U, face, type), one the plan names otherwise stands, and only it, whatever either name is (a shifted
    group's ``gpu001 -> gpu002, gpu002 -> gpu003 ...``; the rule NetBox sync renames a record by:
    :func:`fabricgen.core.renames.renamed_devices`); {} when no such artifact changes."""
    rendered = {a.path: a.content for a in plan.artifacts}
    moved: dict[str, str] = {}
    for declared in places:
        changes = [c for c in plan.changes if fnmatchcase(c.path, declared.pattern)]
        if all(c.action is Action.UNCHANGED for c in changes):
            continue
        before: dict[str, Place] = {}
        after: dict[str, Place] = {}
        for change in changes:
            if change.action is not Action.CREATE and not change.unmanaged:
                _placed(read_regular(plan.out_dir / change.path, MAX_COMPARED_BYTES) or b"", declared, before)
            if change.action is not Action.DELETE:
                _placed(rendered[change.path], declared, after)
        found = renamed_devices(before, after)
        moved |= _cabled_alike(plan, declared, found, rendered) if declared.cabled and found else found
    return moved


def _cabled_alike(plan: Plan, declared: Places, pairs: dict[str, str], rendered: Mapping[str, bytes]
                  ) -> dict[str, str]:
    """The renames (old name -> new name) whose device keeps its cabling: every (own port, far device, far port) of
    the old name's cables, far devices renamed as ``pairs`` renames them, is the new name's, and no other. A box
    renamed in place (a shifted group, a rack renamed) keeps every port; a device that only comes to stand where
    another stood (a server another's order moved, a switch of another tier) does not, and is listed by name."""
    files = [c for c in plan.changes if fnmatchcase(c.path, declared.cabled)]
    old = _ports((rendered[c.path] if c.action is Action.UNCHANGED  # the bytes OUT holds: not read again
                  else read_regular(plan.out_dir / c.path, MAX_COMPARED_BYTES) or b"" for c in files
                  if c.action is not Action.CREATE and not c.unmanaged), declared.ends, pairs.keys())
    new = _ports((rendered[c.path] for c in files if c.action is not Action.DELETE), declared.ends,
                 set(pairs.values()))
    return {was: now for was, now in pairs.items()
            if {(own, pairs.get(far, far), port) for own, far, port in old.get(was, ())} == new.get(now, set())}


def _ports(files: Iterable[bytes], ends: Sequence[tuple[str, str]], devices: Iterable[str]
           ) -> dict[str, set[tuple[str, str, str]]]:
    """Each of ``devices``' cabled ports from the rows of ``files``: device -> {(own port, far device, far port)}."""
    wanted = set(devices)
    ports: dict[str, set[tuple[str, str, str]]] = {}
    for data in files:
        for row in csv.DictReader(io.StringIO(_text(data) or "")):
            sides = [(row.get(device) or "", row.get(port) or "") for device, port in ends]
            for (device, port), (far, far_port) in ((sides[0], sides[1]), (sides[1], sides[0])):
                if device in wanted:
                    ports.setdefault(device, set()).add((port, far, far_port))
    return ports


def _placed(data: bytes, declared: Places, places: dict[str, Place]) -> None:
    """The devices a CSV places (name -> rack, U, face, type), into ``places``; a row with no rack or no U is not
    racked (its rack ""), one missing a column ignored."""
    for row in csv.DictReader(io.StringIO(_text(data) or "")):
        name, values = row.get(declared.name), [row.get(column) for column in declared.place]
        if name and None not in values:
            place = tuple(value or "" for value in values)
            places[name] = place if all(place[:2]) else ("", *place[1:])


def describe(plan: Plan, tables: Sequence[Table], moved: Mapping[str, str] | None = None) -> tuple[FileDiff, ...]:
    """The content change of every path the plan creates, updates or deletes, in path order; with ``moved`` (old
    name -> new name, `moved_devices`), a renamed device's rows matched under its new name and each of its files
    compared with the one its old name had (listed once, at the new path), so a shifted group's ``hosts/gpu002/x``
    is compared with ``hosts/gpu001/x``, the file of the box now named gpu002, not with the other box's it replaces;
    such a file left unchanged by path is listed where it differs from its box's old one."""
    moved = moved or {}
    rendered = {a.path: a.content for a in plan.artifacts}
    files = _moved_files(plan, moved)
    deleted = {c.path for c in plan.changes if c.action is Action.DELETE}
    moved_away = set(files.values()) & deleted  # listed with the file they moved to
    diffs = []
    for change in plan.changes:
        if (change.action is Action.UNCHANGED and change.path not in files) or change.path in moved_away:
            continue
        # a table where a file fabricgen did not create stands: that file is no earlier version of it, so its rows
        # are all new (counted as for a table created whole), not a line diff against someone else's columns
        table = _table_for(change.path, tables)
        was = files.get(change.path, change.path)
        old = b"" if (change.action is Action.CREATE and was == change.path) or (
            change.unmanaged and table is not None) else (read_regular(plan.out_dir / was, MAX_COMPARED_BYTES) or b"")
        new = b"" if change.action is Action.DELETE else rendered[change.path]
        if change.action is Action.UNCHANGED and old == new:  # its box's file as it was: nothing to tell
            continue
        diff = _compare(change, old, new, table, moved)
        diffs.append(replace(diff, moved_from=was) if was != change.path else diff)
    return tuple(diffs)


def _moved_files(plan: Plan, moved: Mapping[str, str]) -> dict[str, str]:
    """A renamed device's files (``<dir>/<name>/...``: a switch's configuration, a node's host files) under its new
    name, each with the one its old name had in OUT (fabricgen's: deleted, or in a chain rewritten for the device
    now bearing that name, or unchanged): new path -> old path. Only the paths, so apply, which writes and deletes
    by path, is the same with or without the moves."""
    if not moved:
        return {}
    new_name = {new: old for old, new in moved.items()}
    held = {c.path for c in plan.changes if c.action is not Action.CREATE and not c.unmanaged}
    files = {}
    for change in plan.changes:
        parts = change.path.split("/", 2)
        if change.action is not Action.DELETE and not change.drift and len(parts) == 3 and parts[1] in new_name:
            was = f"{parts[0]}/{new_name[parts[1]]}/{parts[2]}"
            if was in held:
                files[change.path] = was
    return files


def _table_for(path: str, tables: Sequence[Table]) -> Table | None:
    return next((t for t in tables if fnmatchcase(path, t.pattern)), None)


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _compare(change: Change, old: bytes, new: bytes, table: Table | None, moved: Mapping[str, str]) -> FileDiff:
    if not old or not new:  # created or deleted: every line and row of it is added or removed
        data = old or new
        if b"\0" in data:
            return FileDiff(change, binary=True, old=old, new=new)
        text = _text(data)
        whole = _row_count(text, table) if table is not None and text is not None else None
        if table is not None and whole is not None:
            return FileDiff(change, table.noun, whole=whole, old=old, new=new)
        count = data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)
        return FileDiff(change, lines=(0, count) if old else (count, 0), old=old, new=new)
    old_text, new_text = _text(old), _text(new)
    if old_text is None or new_text is None or "\0" in old_text or "\0" in new_text:
        return FileDiff(change, binary=True, old=old, new=new)
    if table is not None and (changed := _changed_lines(old_text, new_text, table, moved)) is not None:
        return FileDiff(change, table.noun, *changed, old=old, new=new)
    if table is not None:
        old_rows, new_rows = _rows(old_text, table), _rows(new_text, table)
        if old_rows is not None and new_rows is not None:
            old_rows = _renamed(old_rows, table, moved)
            rows = _row_changes(old_rows, new_rows, table)
            parts = _part_changes(table, old_rows.values(), new_rows.values())
            lines = _lines(old_text, new_text) if table.rows else (0, 0)  # a JSON document holds more than rows
            return FileDiff(change, table.noun, rows, parts, lines=lines, old=old, new=new)
    added, removed = _lines(old_text, new_text)
    old_entries, new_entries = _config_entries(change.path, old_text), _config_entries(change.path, new_text)
    if old_entries is not None and new_entries is not None:
        entries = Table(change.path, CONFIG_NOUN, (ENTRY,), f"{{{ENTRY}}}", derived=(ENTRY,))
        rows = _row_changes({k: {ENTRY: _entry_name(change.path, k), **v} for k, v in old_entries.items()},
                               {k: {ENTRY: _entry_name(change.path, k), **v} for k, v in new_entries.items()},
                               entries)
        return FileDiff(change, CONFIG_NOUN, rows, lines=(added, removed), old=old, new=new)
    return FileDiff(change, lines=(added, removed), old=old, new=new)


def _lines(old: str, new: str) -> tuple[int, int]:
    """Lines added and removed, wherever they are: counted in what lies between the whole lines the two texts
    begin and end with alike (a re-plan changes a few places of a 19 MB file)."""
    start = old.rfind("\n", 0, _alike(old, new)) + 1  # after the last line break the two share first
    old, new = old[start:], new[start:]
    same = len(old) - _alike(old, new, from_end=True)
    break_at = old.find("\n", same)  # the suffix's first line break: what follows starts a line in both
    end = 0 if break_at < 0 else len(old) - break_at - 1
    old_lines, new_lines = Counter(old[:len(old) - end].splitlines()), Counter(new[:len(new) - end].splitlines())
    return sum((new_lines - old_lines).values()), sum((old_lines - new_lines).values())


_STRIDES = (1 << 16, 1 << 10, 1 << 4, 1)  # slices compared in C, then ever shorter ones at the first difference


def _alike(a: str, b: str, from_end: bool = False) -> int:
    """How many characters ``a`` and ``b`` begin (``from_end``: end) with alike."""

    def piece(text: str, at: int, stride: int) -> str:
        return text[len(text) - at - stride:len(text) - at] if from_end else text[at:at + stride]

    at, most = 0, min(len(a), len(b))
    for stride in _STRIDES:
        while at + stride <= most and piece(a, at, stride) == piece(b, at, stride):
            at += stride
    return at


def _config_entries(path: str, text: str) -> Entries | None:
    """A switch's configuration as entries (an entry's path -> its scalar fields, or for CLI text its settings);
    None for any other file or text that does not parse."""
    if not path.startswith("switches/"):
        return None
    if path.endswith(".cfg"):
        return _cli_entries(text)
    if not path.endswith((".json", ".yaml")):
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


# The keys AVD's structured config names its list items by (its lists' primary keys: ethernet_interfaces by name,
# vlans by id, BGP neighbors by ip_address, networks by prefix): an item is then named by its key, not by its
# position, which moves when an interface before it goes.
_ITEM_KEYS = ("name", "id", "ip_address", "prefix")


def _flatten(node: Any, path: tuple[str, ...], entries: Entries) -> None:
    """A mapping's scalar fields under its path (an empty mapping, as NVUE writes a set value, is an entry with
    none); a list of scalars is one field."""
    if isinstance(node, list):
        if all(not isinstance(v, dict | list) for v in node):
            entries.setdefault(path[:-1], {})[path[-1] if path else ""] = ", ".join(map(str, node))
            return
        for name, item in zip(_item_names(node), node, strict=True):
            _flatten(item, (*path, name), entries)
        return
    if not isinstance(node, dict):
        entries.setdefault(path[:-1], {})[path[-1] if path else ""] = "" if node is None else str(node)
        return
    if not node or any(not isinstance(v, dict | list) for v in node.values()):
        entries.setdefault(path, {})
    for key, value in node.items():
        _flatten(value, (*path, str(key)), entries)


def _item_names(items: list[Any]) -> list[str]:
    """The list items' names: the first of `_ITEM_KEYS` that every item holds as a distinct scalar, else their
    positions (``[0]``, ``[1]``...)."""
    for key in _ITEM_KEYS:
        names = [item.get(key) if isinstance(item, dict) else None for item in items]
        if all(isinstance(n, str | int) and not isinstance(n, bool) for n in names) and len(set(names)) == len(names):
            return [str(n) for n in names]
    return [f"[{i}]" for i in range(len(items))]


# Lines of a CLI section that are an entry of their own, keyed by their first two words: BGP writes each peer's
# settings as flat lines under `router bgp` keyed by its address or peer group (`neighbor 10.0.0.1 remote-as 65000`).
_KEYED_LINES = ("neighbor",)
# Commands whose whole rest is one free-text value, digits or not: an interface's `description unused` (fabricgen's
# shut, uncabled interfaces) that becomes `description gpu001:Slot1P1 ...` once a cable uses it is one change.
_TEXT_COMMANDS = ("description",)


def _cli_entries(text: str) -> Entries:
    """An indented CLI configuration (EOS's running-config form) as entries: each section (a line with indented
    lines below it: ``interface Ethernet1/1``, ``router bgp 65100``, its ``address-family ipv4``) by its chain of
    section lines, with its settings (`_settings`); a top-level line with none below it is an entry with no
    settings; ``!`` lines (comments, separators) are left out."""
    lines = [(len(line) - len(line.lstrip()), line.strip()) for line in text.splitlines()
             if line.strip() and not line.lstrip().startswith("!")]
    sections: dict[tuple[str, ...], list[list[str]]] = {}
    open_sections: list[tuple[int, str]] = []  # (indent, line) of the sections the next line may be in
    for i, (indent, line) in enumerate(lines):
        while open_sections and open_sections[-1][0] >= indent:
            open_sections.pop()
        parent = tuple(section for _, section in open_sections)
        words = line.split()
        if i + 1 < len(lines) and lines[i + 1][0] > indent:
            open_sections.append((indent, line))
            sections.setdefault((*parent, line), [])
        elif not parent:
            sections.setdefault((line,), [])
        elif words[0] in _KEYED_LINES and len(words) > 2:
            sections.setdefault((*parent, " ".join(words[:2])), []).append(words[2:])
        else:
            sections.setdefault(parent, []).append(words)
    return {path: _settings(settings) for path, settings in sections.items()}


def _settings(lines: list[list[str]]) -> dict[str, str]:
    """A section's lines as settings: a command's keywords (the words before the first one holding a digit: ``mtu``,
    ``switchport access vlan``, ``description``) -> its values (``9100``, ``100``, ``gpu001:Slot1P1 ...``), so a
    value that changes reads as one change; a line without such a value, or whose keywords repeat in the section
    (``network`` prefixes), is a setting of its own with no value."""
    commands = []
    for words in lines:
        at = (1 if words[0] in _TEXT_COMMANDS and len(words) > 1 else
              next((i for i, word in enumerate(words) if any(c.isdigit() for c in word)), len(words)) or len(words))
        commands.append((" ".join(words[:at]), " ".join(words[at:])))
    repeated = {name for name, count in Counter(name for name, _ in commands).items() if count > 1}
    return dict((f"{name} {value}".rstrip(), "") if name in repeated else (name, value) for name, value in commands)


def _entry_name(path: str, entry: tuple[str, ...]) -> str:
    """SONiC's own key form for config_db.json (``BGP_NEIGHBOR|10.0.0.1``), a CLI section's lines for EOS's
    (``router bgp 65100 / neighbor 10.21.0.0``), the object path (``interface swp1 link``) for a YAML file."""
    if path.endswith(".json"):
        return "|".join(entry[:2]) + "".join(f" {part}" for part in entry[2:])
    return (" / " if path.endswith(".cfg") else " ").join(entry)


Rows = dict[tuple[str, ...], dict[str, str]]


def _rows(text: str, table: Table) -> Rows | None:
    """The table's rows by their key (a repeated key gets its ordinal): a CSV's, or the objects of a JSON document's
    list ``table.rows`` (their values as text); None when a key column is missing or the JSON does not parse."""
    if table.rows:
        return _json_rows(text, table)
    if not text:
        return {}
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    if not set(table.key) <= set(header):
        return None
    return _keyed(map(dict, map(zip, repeat(header), reader)), table.key)


def _row_count(text: str, table: Table) -> int | None:
    """How many rows a table created or deleted whole holds, None where `_rows` gives None; with ``table.item``,
    how many items (a physical cable's links are one, as in every other plan line and in the bill of materials).
    A CSV's rows are counted, not keyed: a fresh 16k apply creates a 25 MB cables.csv, which keying costs ~1.5 s of
    CPU, counting ~0.2 s; one without quotes or carriage returns (fabricgen's own: no cell holds a comma or a line
    break) and no item column is counted by its line feeds, in C."""
    if table.rows or not text:
        rows = _rows(text, table)
        if rows is None or not table.item:
            return None if rows is None else len(rows)
        return _items(row.get(table.item, "") for row in rows.values())
    if not table.item and '"' not in text and "\r" not in text:
        header = text.partition("\n")[0].split(",")
        return text.count("\n") - text.endswith("\n") if set(table.key) <= set(header) else None
    reader = csv.reader(io.StringIO(text))
    header = next(reader, [])
    if not set(table.key) <= set(header):
        return None
    if table.item in header:
        at = header.index(table.item)
        return _items(row[at] if len(row) > at else "" for row in reader)
    return sum(1 for _ in reader)


def _items(items: Iterable[str]) -> int:
    """Rows counted as installed items, by each row's item value: one per distinct value, a row without one on its
    own."""
    seen: set[str] = set()
    alone = 0
    for item in items:
        if item:
            seen.add(item)
        else:
            alone += 1
    return len(seen) + alone


def _json_rows(text: str, table: Table) -> Rows | None:
    try:
        data = json.loads(text)
    except ValueError:
        return None
    items = data.get(table.rows) if isinstance(data, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, dict) and set(table.key) <= set(item)
                                              for item in items):
        return None
    return _keyed(({k: v if isinstance(v, str) else json.dumps(v, sort_keys=True) for k, v in item.items()}
                   for item in items), table.key)


def _keyed(rows: Iterable[dict[str, str]], key: Sequence[str]) -> Rows:
    keyed: Rows = {}
    for row in rows:
        at = tuple([row.get(column, "") for column in key])
        if at in keyed:  # rare: a repeated key takes the first free ordinal
            ordinal = 2
            while (*at, str(ordinal)) in keyed:
                ordinal += 1
            at = (*at, str(ordinal))
        keyed[at] = row
    return keyed


_GONE = "\0gone"  # appended to the name of a device gone whose name another device takes (no name holds a NUL)


def _renamed(rows: Rows, table: Table, moved: Mapping[str, str]) -> Rows:
    """The rows as keyed under the devices' new names (``table.devices``: the key columns naming a device), so a
    renamed device's row pairs with the one the plan renders for it; the rows themselves keep what they held. A
    device gone whose name a renamed one now bears (it moved away while another took its place) keeps rows of its
    own, keyed apart, so they are removed rather than taken for the other's."""
    at = {table.key.index(column) for column in table.devices if column in table.key}
    if not moved or not at:
        return rows
    taken = set(moved.values())

    def name(value: str) -> str:
        return moved[value] if value in moved else value + _GONE if value in taken else value

    return {tuple(name(value) if i in at else value for i, value in enumerate(key)): row
            for key, row in rows.items()}


def _format(template: str, row: dict[str, str]) -> str:
    """``template`` (fabricgen's own, never the spec's) filled with a row's values."""
    try:
        text = template.format_map(row)
    except (KeyError, IndexError, ValueError):
        text = " ".join(row.values())
    return " ".join(text.split())


def _row_changes(old: Rows, new: Rows, table: Table) -> tuple[RowChange, ...]:
    created, deleted = [k for k in new if k not in old], [k for k in old if k not in new]
    repatched = _repatched(old, new, deleted, created, table.labels[0] if table.labels else "")
    # each change with the row it names (the new one where there is one: it says what installed item it is of) and
    # the row before it
    changes: list[_Named] = [(RowChange(Action.CREATE, _format(table.subject, new[k]), label=_label(new[k], table)),
                              new[k], new[k]) for k in created if k not in repatched.values()]
    changes += [(RowChange(Action.DELETE, _format(table.subject, old[k]), label=_label(old[k], table)), old[k], old[k])
                for k in deleted if k not in repatched]
    changes += [(RowChange(RowKind.REPATCH, new[after][table.labels[0]], _fields(old[before], new[after]),
                           (*table.derived, *table.key), (_format(table.subject, old[before]),
                                                          _format(table.subject, new[after]))), new[after],
                 old[before]) for before, after in repatched.items()]
    for key in new.keys() & old.keys():
        if old[key] == new[key]:  # most rows of a re-plan: compared in C, not field by field
            continue
        fields = _fields(old[key], new[key])
        if any(column in table.labels for column, _, _ in fields):  # shown with its labels, derived or not
            changes.append((RowChange(RowKind.RELABEL, _format(table.subject, new[key]), fields,
                                      tuple(c for c in table.derived if c not in table.labels)), new[key], old[key]))
        elif fields:
            estimate = all(c in table.estimates or c in table.derived for c, _, _ in fields)
            changes.append((RowChange(RowKind.ESTIMATE if estimate else Action.UPDATE,
                                      _format(table.subject, new[key]), fields, table.derived), new[key], old[key]))
    order = {Action.CREATE: 0, Action.DELETE: 1, Action.UPDATE: 2, RowKind.ESTIMATE: 3, RowKind.RELABEL: 4,
             RowKind.REPATCH: 5}
    merged = _by_item(changes, table)
    return tuple(sorted(merged, key=lambda c: (order[c.action], _natural(c.subject))))


def _part_changes(table: Table, old: Iterable[dict[str, str]], new: Iterable[dict[str, str]]
                  ) -> dict[str, tuple[int, int]]:
    """Per part noun, the parts newly used and freed on devices on both sides of the change."""
    old, new = list(old), list(new)
    return {noun: _part_counts(_parts(old, templates), _parts(new, templates))
            for noun, templates in _part_templates(table).items()}


def _part_templates(table: Table) -> dict[str, list[tuple[str, str]]]:
    templates: dict[str, list[tuple[str, str]]] = {}
    for noun, template, owner in table.parts:
        templates.setdefault(noun, []).append((template, owner))
    return templates


def _part_counts(before: Mapping[str, str], after: Mapping[str, str]) -> tuple[int, int]:
    """Parts (part -> its device) gained and lost, counted on the devices that stay: a removed node's own NICs
    leave with it."""
    staying = set(before.values()) & set(after.values())
    return (sum(after[p] in staying for p in after.keys() - before.keys()),
            sum(before[p] in staying for p in before.keys() - after.keys()))


def _changed_lines(old: str, new: str, table: Table, moved: Mapping[str, str]
                   ) -> tuple[tuple[RowChange, ...], dict[str, tuple[int, int]]] | None:
    """A re-planned CSV table's row and part changes from the lines that differ: a line in both texts is a row
    that stays as it was, so only the other lines are keyed and compared, and the rows that stay are read once
    for their keys and parts (a 16k cables.csv: 67,595 rows, a few hundred changed by one node; keying every row
    of both texts cost ~2 s). None wherever that could tell another story than keying every row (`_rows`): a JSON
    table, a record across lines or a carriage return, another header, a row of another width, a repeated key, a
    renamed device, or a part given two devices."""
    if table.rows or (moved and table.devices) or "\r" in old or "\r" in new:
        return None
    old_lines, new_lines = _records(old), _records(new)
    if not old_lines or not new_lines or old_lines[0] != new_lines[0]:
        return None
    header = next(csv.reader(old_lines[:1]))
    old_rest, new_rest = old_lines[1:], new_lines[1:]
    old_set, new_set = set(old_rest), set(new_rest)
    if not set(table.key) <= set(header) or len(old_set) < len(old_rest) or len(new_set) < len(new_rest):
        return None  # a line twice is a key twice
    staying = _fixed_width(header, [line for line in old_rest if line in new_set])
    gone = _fixed_width(header, [line for line in old_rest if line not in new_set])
    came = _fixed_width(header, [line for line in new_rest if line not in old_set])
    if staying is None or gone is None or came is None:
        return None
    kept, old_keys, new_keys = ([tuple([row[column] for column in table.key]) for row in rows]
                                for rows in (staying, gone, came))
    if len({*kept, *old_keys}) < len(kept) + len(old_keys) or len({*kept, *new_keys}) < len(kept) + len(new_keys):
        return None
    parts = {}
    for noun, templates in _part_templates(table).items():
        held, before, after = (_own_parts(rows, templates) for rows in (staying, gone, came))
        if held is None or before is None or after is None or any(
                held.get(p, owner) != owner for p, owner in (*before.items(), *after.items())):
            return None
        parts[noun] = _part_counts({**held, **before}, {**held, **after})
    return _row_changes(dict(zip(old_keys, gone, strict=True)), dict(zip(new_keys, came, strict=True)), table), parts


def _label(row: dict[str, str], table: Table) -> str:
    """What a row's installed item is called: its first label column's value (a cable's id), else its mark (a
    printed sheet's revision)."""
    return row.get(table.labels[0], "") if table.labels else _format(table.mark, row) if table.mark else ""


_Named = tuple[RowChange, dict[str, str], dict[str, str]]  # a row's change, the row it names, the row before


def _by_item(changes: Sequence[_Named], table: Table) -> list[RowChange]:
    """One change per installed item (``table.item``: the rows of one physical cable, a splitter's legs and a
    cage-pair cable's links, read as the one cable the crew handles), each row's change kept as it is where its
    item has no other row that changes."""
    if not table.item:
        return [change for change, _, _ in changes]
    items: dict[str, list[_Named]] = {}
    for named in changes:
        items.setdefault(named[1].get(table.item, "") or named[0].subject, []).append(named)
    return [members[0][0] if len(members) == 1 else
            _item_change(item, sorted(members, key=lambda m: _natural(_format(table.subject, m[1]))), table)
            for item, members in items.items()]


def _item_change(item: str, members: Sequence[_Named], table: Table) -> RowChange:
    """The change of an installed item from its rows' changes: all added or all removed, the item added or removed;
    all relabelled, re-patched or re-estimated alike, the item so, its fields once each; otherwise a change of the
    item whose rows gone or come are fields it loses or gains (``-oob-l04:49 <-> oob-agg01:1/4``) beside its rows'
    changed fields. Its subject joins the rows it keeps (``storage-leaf001:21/1+21/2 <-> storage-spine01:1/1+1/2``;
    a removed item's: the rows it had); a re-patched one is named by ``item``, as a re-patched row is by its id."""
    actions = {change.action for change, _, _ in members}
    staying = [row for change, row, _ in members if change.action is not Action.DELETE]
    subject = _joined(table.subject, staying or [row for _, row, _ in members])
    fields: dict[Field, None] = {}  # the rows gone or come first, then each changed field once
    if len(actions) > 1:
        fields.update({(c.subject, "", None) if c.action is Action.DELETE else (c.subject, None, ""): None
                       for c, _, _ in members if c.action in (Action.CREATE, Action.DELETE)})
    for change, _, _ in members:
        fields.update(dict.fromkeys(change.fields))
    shown = {c for change, _, _ in members for c, _, _ in change.shown_fields}
    derived = tuple(dict.fromkeys(c for change, _, _ in members for c in change.derived if c not in shown))
    legs = tuple(change for change, _, _ in members)
    if actions == {RowKind.REPATCH}:
        moved = (_joined(table.subject, [before for _, _, before in members]), subject)
        return RowChange(RowKind.REPATCH, item, tuple(fields), derived, moved, legs=legs)
    action = actions.pop() if len(actions) == 1 else RowKind.RELABEL if actions <= {
        RowKind.RELABEL, RowKind.ESTIMATE} else Action.UPDATE
    return RowChange(action, subject, tuple(fields), derived, label=item if action in (Action.CREATE, Action.DELETE)
                     else "", legs=legs)


def _joined(template: str, rows: Sequence[dict[str, str]]) -> str:
    """``template`` over several rows: each column's distinct values joined by ``+`` (``21/1+21/2``)."""
    columns = dict.fromkeys(c for row in rows for c in row)
    return _format(template, {c: "+".join(dict.fromkeys(row.get(c, "") for row in rows)) for c in columns})


def _fields(old: dict[str, str], new: dict[str, str]) -> tuple[Field, ...]:
    """The fields that differ, in the new row's order then the old one's (None: not in that row)."""
    return tuple((column, old.get(column), new.get(column)) for column in dict.fromkeys([*new, *old])
                 if old.get(column) != new.get(column))


def _repatched(old: Rows, new: Rows, deleted: Sequence[tuple[str, ...]], created: Sequence[tuple[str, ...]],
               label: str) -> dict[tuple[str, ...], tuple[str, ...]]:
    """The removed rows whose label a new row takes (old key -> new key): the same installed item at other ends.
    Only a label held by one removed and one new row pairs them."""
    if not label:
        return {}
    gone = Counter(old[k].get(label, "") for k in deleted)
    came = Counter(new[k].get(label, "") for k in created)
    after = {new[k].get(label, ""): k for k in created}
    return {k: after[name] for k in deleted
            if (name := old[k].get(label, "")) and gone[name] == 1 and came[name] == 1}


_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[str | int, ...]:
    """Sort key reading digit runs as numbers: Ethernet2/1 before Ethernet10/1, as a switch numbers its ports."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(text)))


def _records(text: str) -> list[str] | None:
    """A CSV text's lines, each one record: None where a quoted cell holds a line break (a line with an odd
    count of quotes opens a cell it does not close)."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return None if any(line.count('"') % 2 for line in lines if '"' in line) else lines


def _fixed_width(header: list[str], lines: list[str]) -> list[dict[str, str]] | None:
    """The rows of ``lines`` under ``header``; None where one has another width than the header (`_rows` would
    read its missing columns as empty)."""
    records = list(csv.reader(lines))
    if any(len(record) != len(header) for record in records):
        return None
    return list(map(dict, map(zip, repeat(header), records)))


def _own_parts(rows: Iterable[dict[str, str]], templates: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    """`_parts`, or None where one part is given two devices (which of them a table says depends on its row
    order there)."""
    parts: dict[str, str] = {}
    for row in rows:
        for template, owner in templates:
            device = _format(owner, row)
            if parts.setdefault(_format(template, row), device) != device:
                return None
    return parts


def _parts(rows: Iterable[dict[str, str]], templates: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Each part the rows hold -> the device holding it."""
    return {_format(template, row): _format(owner, row) for row in rows for template, owner in templates}
