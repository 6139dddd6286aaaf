"""The unit every renderer produces and plan/apply consume."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property

# Relative POSIX paths made of safe segments only: no "..", no absolute paths, no shell or glob characters.
_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def is_safe_relative_path(path: str) -> bool:
    """True when ``path`` is a relative POSIX path whose every segment is a plain file name."""
    parts = path.split("/")
    return bool(path) and all(_SEGMENT.fullmatch(p) and p not in {".", ".."} for p in parts)


@dataclass(frozen=True)
class Artifact:
    """One output file: a path relative to the output directory, its bytes and its permission bits.

    ``render_key``: for bytes a serializer made from an input it keys (:mod:`fabricgen.core.reuse`), the digest of
    that input, which apply records so a later render may take these bytes again; not part of the artifact's
    identity (two artifacts of the same path, bytes and mode are equal whatever made them)."""

    path: str
    content: bytes = field(repr=False)
    mode: int = 0o644
    render_key: str = field(default="", repr=False, compare=False)

    def __post_init__(self) -> None:
        if not is_safe_relative_path(self.path):
            raise ValueError(f"unsafe artifact path {self.path!r}")
        if self.mode not in (0o644, 0o755):
            raise ValueError(f"artifact {self.path}: mode must be 0644 or 0755, not {self.mode:o}")

    @cached_property
    def sha256(self) -> str:
        """Hashed once: the lock, the plan and the saved plan's digest each ask (145 MB at 16k GPUs)."""
        return hashlib.sha256(self.content).hexdigest()


@dataclass(frozen=True)
class Table:
    """How plan names the rows of a CSV artifact in the cluster's terms: what one row is (``noun``), the columns
    that identify it across renders (``key``: a cable is its two ends, not its renumbered id), how a row reads
    (``subject``, a ``str.format`` template over the row's columns) and the parts a row holds (``parts``: noun,
    template and the template of the device holding it, e.g. the two ports of a cable; plan counts the parts newly
    used and freed on devices on both sides of the change, which a technician works on: a removed node's own NICs
    leave with it) and the columns that only restate others (``derived``: a cable's label
    spells its id and ends), which the listing leaves out. ``labels``: the columns printed on the installed
    item, the first its id (a cable's id, its label, the labels of its two ends): a row whose key stays but whose
    labels change is a relabel, a removed row whose id a new row takes a re-patch (the same item at other ends),
    each listed as such rather than as a change or a removal plus an addition. ``pattern`` is an ``fnmatch``
    pattern of artifact paths; a CSV whose header lacks a key column is compared by lines instead. ``rows``: for a
    JSON artifact, the key of its list of row objects (a fabric's ``switches``); its other lines are counted.
    ``estimates``: columns computed for information (a cable's estimated run): a row whose only changes are there
    changes nothing at the racks, and is counted and listed apart, after the rows that do. ``devices``: the key
    columns naming a device (a cable's two ends' devices): a device renamed (:class:`Places`) keeps its rows, each
    matched under its new name, so its cables are relabelled and its addresses changed, not removed and added.
    ``mark``: for a table without labels, how an added or removed row's item is told apart beside its subject (a
    template: a printed sheet's ``revision {revision}``, the revision printed on it, so the sheet to discard or
    print is known)."""

    pattern: str
    noun: str
    key: tuple[str, ...]
    subject: str
    parts: tuple[tuple[str, str, str], ...] = ()
    derived: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    rows: str = ""
    estimates: tuple[str, ...] = ()
    item: str = ""
    devices: tuple[str, ...] = ()
    mark: str = ""


@dataclass(frozen=True)
class Places:
    """Where a feature's CSV artifacts (``pattern``, an ``fnmatch`` pattern: all the files matching it together)
    say each device stands: its name (``name``) and its rack, U, face and type (``place``, the rack first), from
    which plan tells a renamed device (one name gone, one new, at the same place) by the rule NetBox sync
    renames one by (:func:`fabricgen.core.renames.renamed_devices`), and matches the rows of every table that
    name it (``Table.devices``) under its new name. ``cabled`` (a pattern, as ``pattern``) names the CSV artifacts
    whose rows each join two device ports (``ends``: each side's device and port columns): a device taken for
    renamed must keep every port its cables plug, each far end as renamed, so a box renamed in place is told from
    another device that comes to stand where it stood (field review, 2026-12-03: an OSS placed anew took the place
    of another, whose ports, addresses and Lustre targets it does not have)."""

    pattern: str
    name: str
    place: tuple[str, ...]
    cabled: str = ""
    ends: tuple[tuple[str, str], ...] = ()
