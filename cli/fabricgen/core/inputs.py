"""What a render depends on, as one digest: the spec's bytes and name, every file the spec names (GUID
inventories), and fabricgen itself (its code, catalog, NOS data, schemas, templates, stacks, version, Python and
library versions).

The lock records this digest after a successful apply. When a later plan finds the same digest and every managed
file unchanged on disk, nothing it could render differs from what is there, so it can say "no changes" without
compiling. That only holds if every input is in the digest: the spec's files are recorded where they are read
(:func:`record`), and fabricgen's own files are hashed as a whole instead of listing the ones a spec uses.
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import metadata
from pathlib import Path, PurePosixPath

from fabricgen.core.resources import package_dir, shipped_dir

INPUTS_FORMAT = "fabricgen-inputs/2"  # 2: the spec's name left out (it reaches no artifact)
MAX_NAMED_FILE_BYTES = 64 * 1024 * 1024  # the largest file a spec may name: ~600,000 GUID inventory rows
# Libraries whose behaviour reaches the bytes of an artifact (templating, YAML, addresses, PDF, schema defaults).
_LIBRARIES = ("jinja2", "jsonschema", "netaddr", "pyyaml", "referencing", "reportlab", "rl-accel")
_SHIPPED = ("schemas", "templates", "stacks")

_recording: ContextVar[dict[str, str] | None] = ContextVar("fabricgen_inputs", default=None)
_spec_dir: ContextVar[Path | None] = ContextVar("fabricgen_spec_dir", default=None)


@contextmanager
def recording(spec: Path) -> Iterator[dict[str, str]]:
    """Collect, while compiling ``spec``, every file it names: {path relative to the spec's directory: sha256}."""
    files: dict[str, str] = {}
    token, dir_token = _recording.set(files), _spec_dir.set(spec.parent)
    try:
        yield files
    finally:
        _recording.reset(token)
        _spec_dir.reset(dir_token)


def record(path: Path, sha256: str) -> None:
    """Note a file read on the spec's behalf with the sha256 of the bytes read (outside a recording, e.g. in a
    unit test, this does nothing)."""
    files, spec_dir = _recording.get(), _spec_dir.get()
    if files is None or spec_dir is None:
        return
    files[PurePosixPath(os.path.relpath(path, spec_dir)).as_posix()] = sha256


def read_named_file(spec: Path, rel: str, limit: int) -> str | None:
    """sha256 of a file the spec named, read again relative to the spec as compile read it; None if unreadable."""
    try:
        fd = os.open(spec.parent / rel, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a lock naming a pipe or a device must not hang or flood a plan
            return None
        data = handle.read(limit + 1)
    return hashlib.sha256(data).hexdigest() if len(data) <= limit else None


def input_digest(spec_sha256: str, files: Mapping[str, str | None], tool_version: str) -> str:
    """One sha256 over everything a render reads: the spec's bytes (not its name, which reaches no artifact), the
    files it names (one that cannot be read is in the digest as unreadable), the code and the tool version."""
    lines = [INPUTS_FORMAT, f"tool {tool_version}", f"code {code_fingerprint()}", f"spec {spec_sha256}",
             *(f"file {rel} {sha or '-'}" for rel, sha in sorted(files.items()))]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@cache
def code_fingerprint() -> str:
    """sha256 over fabricgen's installed files (code, data, schemas, templates, stacks), Python's version and the
    versions of the libraries that shape the output: an edited template or catalog, or an upgrade, changes it."""
    roots = [package_dir()] + [d for name in _SHIPPED if not (d := shipped_dir(name)).is_relative_to(package_dir())]
    versions = [sys.version]
    for library in _LIBRARIES:
        try:
            versions.append(f"{library} {metadata.version(library)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{library} -")
    return tree_fingerprint(roots, versions)


def tree_fingerprint(roots: Sequence[Path], versions: Sequence[str]) -> str:
    """sha256 over every file's path (under its root's name) and bytes, then ``versions``; bytecode is left out."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
                digest.update(hashlib.sha256(path.read_bytes()).digest())
    for version in versions:
        digest.update(f"{version}\0".encode())
    return digest.hexdigest()
