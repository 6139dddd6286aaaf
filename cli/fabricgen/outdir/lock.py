"""The lock file, OUT/fabricgen.lock.json: every artifact fabricgen wrote with its sha256 and mode, the cluster it
was written for (metadata name and site), what each directory of per-device files belongs to, the spec digest, the
tool version and the input digest (everything the render read: :mod:`fabricgen.core.inputs`, with the files the
spec names). Only what it lists is fabricgen's to update or delete; it is parsed strictly, since its paths are
deleted and replaced. It is written only at the end of a successful apply, so an input digest found in it is one
whose spec passed validation and checks."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from fabricgen.core.artifacts import Artifact, is_safe_relative_path
from fabricgen.core.errors import OutputError
from fabricgen.outdir.fs import open_out, read_own_file

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAMED_FILE = re.compile(r"^[A-Za-z0-9_./-]{1,4096}\.(csv|ya?ml)$")  # what the spec may name (a GUID inventory)
TOOL_NAME = "fabricgen"
LOCK_FILE = "fabricgen.lock.json"
# Private state of apply (flock, staging, journal). Artifact paths cannot start with a dot, so never collide.
STATE_DIR = ".fabricgen"
# 2 added "inputs", 3 "cluster", 4 "owners"; older locks are read: a version 1 lock has no input digest (so every
# plan renders), neither 1 nor 2 names its cluster (so no plan is refused as another cluster's), none before 4 says
# what a directory belonged to (a node removed since is headed by its path)
LOCK_FORMAT = 4
_KEYS = {1: {"files", "lock_version", "spec_digest", "tool"}}
_KEYS[2] = _KEYS[1] | {"inputs"}
_KEYS[3] = _KEYS[2] | {"cluster"}
_KEYS[4] = _KEYS[3] | {"owners"}
_OWNER = re.compile(r"^[a-z][a-z ]{0,39}$")  # what a directory belongs to, in the caller's words ("node profile")
Owners = tuple[tuple[str, str], ...]  # (directory, what it belongs to), sorted: ("hosts/gpu001", "node")
_MODE_TEXT = {0o644: "0644", 0o755: "0755"}
_MODE_VALUE = {text: mode for mode, text in _MODE_TEXT.items()}


@dataclass(frozen=True, order=True)
class LockEntry:
    """What fabricgen wrote at one path: the bytes' sha256 and the permission bits."""

    path: str
    sha256: str
    mode: int


@dataclass(frozen=True)
class Inputs:
    """What the render read: the input digest and the files the spec names (relative to the spec), whose bytes a
    later plan reads again to recompute the digest without compiling."""

    digest: str = ""
    named_files: tuple[str, ...] = ()


NO_INPUTS = Inputs()  # a lock of format 1, or a plan made without a spec (the outdir tests)


@dataclass(frozen=True)
class ClusterId:
    """Which cluster an OUT holds: its metadata name and site. Another cluster's spec planned into it would
    replace one cluster's switch configs and cabling sheets with another's, so plan and apply refuse it."""

    name: str = ""
    site: str = ""

    @property
    def known(self) -> bool:
        return bool(self.name)

    def __str__(self) -> str:
        return f"{self.name} at {self.site}" if self.site else self.name

    @property
    def handle(self) -> str:
        """The cluster as one word, ``NAME@SITE`` (``NAME`` without a site): how ``--renamed-from`` names it."""
        return f"{self.name}@{self.site}" if self.site else self.name


NO_CLUSTER = ClusterId()  # a lock of format 1 or 2, or a plan made without a spec (the outdir tests)

@dataclass(frozen=True)
class Lock:
    """The manifest in OUT/fabricgen.lock.json; deterministic bytes, so an unchanged lock is not rewritten."""

    spec_digest: str
    tool_version: str
    entries: tuple[LockEntry, ...]
    tool_name: str = TOOL_NAME
    inputs: Inputs = NO_INPUTS
    cluster: ClusterId = NO_CLUSTER
    # What each directory of per-device files belongs to (hosts/gpu001 a node, hosts/dgx-h100 a node profile), as
    # the caller names it: once the spec no longer has that node, its deleted files are still headed by it.
    owners: Owners = ()

    @classmethod
    def for_artifacts(
        cls, artifacts: Sequence[Artifact], *, spec_digest: str, tool_version: str, inputs: Inputs = NO_INPUTS,
        cluster: ClusterId = NO_CLUSTER, owners: Owners = (),
    ) -> Lock:
        entries = tuple(sorted(LockEntry(a.path, a.sha256, a.mode) for a in artifacts))
        return cls(spec_digest=spec_digest, tool_version=tool_version, entries=entries, inputs=inputs,
                   cluster=cluster, owners=tuple(sorted(owners)))

    def by_path(self) -> dict[str, LockEntry]:
        return {e.path: e for e in self.entries}

    def to_bytes(self) -> bytes:
        """Sorted keys, indent 2, trailing newline, no timestamps: equal locks are equal bytes."""
        return self._bytes

    @cached_property
    def _bytes(self) -> bytes:
        # once per lock: json's indented form is its pure-Python encoder (~0.05 s for 6,000 files), and a plan asks
        # for the bytes to compare and again to say whether the lock changes
        doc = {
            "cluster": {"name": self.cluster.name, "site": self.cluster.site},
            "files": {e.path: {"mode": _MODE_TEXT[e.mode], "sha256": e.sha256} for e in self.entries},
            "inputs": {"digest": self.inputs.digest, "named_files": list(self.inputs.named_files)},
            "lock_version": LOCK_FORMAT,
            "owners": dict(self.owners),
            "spec_digest": self.spec_digest,
            "tool": {"name": self.tool_name, "version": self.tool_version},
        }
        return (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode("ascii")


def read_lock(out_dir: Path) -> Lock | None:
    """The lock of ``out_dir``, or None when there is none yet."""
    data = read_lock_bytes(out_dir)
    return None if data is None else parse_lock(data, str(out_dir / LOCK_FILE))


def parse_lock(data: bytes, source: str) -> Lock:
    """Parse lock bytes strictly: a bad lock could otherwise make apply delete paths outside OUT."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _corrupt(source, f"not valid JSON ({exc})") from exc
    _require(isinstance(doc, dict) and type(doc.get("lock_version")) is int, source,
             "expected an object with an integer lock_version")
    version = doc["lock_version"]
    if version > LOCK_FORMAT:
        raise _corrupt(source, f"lock_version {version} was written by a newer fabricgen")
    _require(version in _KEYS, source, f"unknown lock_version {version}")
    keys = _KEYS[version]
    _require(set(doc) == keys, source, f"expected an object with exactly the keys {', '.join(sorted(keys))}")
    tool = doc["tool"]
    _require(
        isinstance(tool, dict)
        and set(tool) == {"name", "version"}
        and all(isinstance(v, str) for v in tool.values()),
        source,
        "tool must be an object with string name and version",
    )
    _require(isinstance(doc["spec_digest"], str), source, "spec_digest is not a string")
    return Lock(
        spec_digest=doc["spec_digest"],
        tool_version=tool["version"],
        tool_name=tool["name"],
        entries=_parse_lock_files(doc["files"], source),
        inputs=_parse_inputs(doc.get("inputs", {"digest": "", "named_files": []}), source),
        cluster=_parse_cluster(doc.get("cluster", {"name": "", "site": ""}), source),
        owners=_parse_owners(doc.get("owners", {}), source),
    )


def _parse_owners(owners: object, source: str) -> Owners:
    _require(isinstance(owners, dict)
             and all(isinstance(d, str) and is_safe_relative_path(d) and isinstance(kind, str)
                     and bool(_OWNER.fullmatch(kind)) for d, kind in owners.items()),
             source, "owners must map relative directories to what they belong to (lower-case words)")
    assert isinstance(owners, dict)
    return tuple(sorted(owners.items()))


def _parse_cluster(cluster: object, source: str) -> ClusterId:
    _require(isinstance(cluster, dict) and set(cluster) == {"name", "site"}
             and all(isinstance(v, str) and len(v) <= 253 for v in cluster.values()),
             source, "cluster must be an object with string name and site")
    assert isinstance(cluster, dict)
    return ClusterId(cluster["name"], cluster["site"])


def _parse_inputs(inputs: object, source: str) -> Inputs:
    _require(
        isinstance(inputs, dict) and set(inputs) == {"digest", "named_files"}
        and isinstance(inputs["digest"], str) and (inputs["digest"] == "" or bool(_SHA256.fullmatch(inputs["digest"])))
        and isinstance(inputs["named_files"], list)
        and all(isinstance(f, str) and bool(_NAMED_FILE.fullmatch(f)) for f in inputs["named_files"]),
        source,
        "inputs must be an object with a sha256 digest and a list of named_files",
    )
    assert isinstance(inputs, dict)
    return Inputs(inputs["digest"], tuple(inputs["named_files"]))


def _parse_lock_files(files: object, source: str) -> tuple[LockEntry, ...]:
    if not isinstance(files, dict):
        raise _corrupt(source, "files is not an object")
    entries = []
    for path, info in files.items():
        _require(
            isinstance(path, str) and is_safe_relative_path(path) and path != LOCK_FILE,
            source,
            f"unsafe or reserved path {path!r}",
        )
        _require(
            isinstance(info, dict) and set(info) == {"mode", "sha256"},
            source,
            f"{path}: expected an object with exactly the keys mode, sha256",
        )
        _require(info["mode"] in _MODE_VALUE, source, f'{path}: mode must be "0644" or "0755"')
        _require(
            isinstance(info["sha256"], str) and bool(_SHA256.fullmatch(info["sha256"])),
            source,
            f"{path}: sha256 must be 64 lowercase hex digits",
        )
        entries.append(LockEntry(path, info["sha256"], _MODE_VALUE[info["mode"]]))
    return tuple(sorted(entries))


def _require(condition: bool, source: str, detail: str) -> None:
    if not condition:
        raise _corrupt(source, detail)


def _corrupt(source: str, detail: str) -> OutputError:
    return OutputError(
        f"{source}: corrupt lock file: {detail}. Restore it (e.g. from version control) or delete it; "
        "without a lock, files already in the output directory count as not created by fabricgen"
    )


def read_lock_bytes(out_dir: Path) -> bytes | None:
    """The lock file's bytes (None without OUT or lock); bounded, and refused when it is a symlink."""
    out_fd = open_out(out_dir)
    if out_fd is None:
        return None
    try:
        return read_own_file(out_fd, LOCK_FILE, out_dir / LOCK_FILE)
    finally:
        os.close(out_fd)
