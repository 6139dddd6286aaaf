"""Stage plan: what apply would do to the output directory, computed from the disk and the lock file.

Only files the lock lists are fabricgen's: they may be updated or deleted. Any other file is the user's and
is never deleted; one sitting where an artifact must go is reported as unmanaged, and apply refuses to
overwrite it unless forced. A lock-listed file whose bytes or mode no longer match the lock was edited by
hand (drift).

Planning only reads, except that it first lets :func:`fabricgen.outdir.journal.recover` finish an apply that was
killed after its commit point, so that a plan never diffs against a half-written tree.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding, OutputError, Severity
from fabricgen.core.gcpause import without_gc
from fabricgen.outdir.fs import file_digest
from fabricgen.outdir.journal import needs_recovery, recover
from fabricgen.outdir.lastrun import Known, LastRun, read_last_run, settled
from fabricgen.outdir.lock import (
    LOCK_FILE,
    NO_CLUSTER,
    NO_INPUTS,
    ClusterId,
    Inputs,
    Lock,
    LockEntry,
    Owners,
    parse_lock,
    read_lock_bytes,
)


class Action(StrEnum):
    """What apply does to one path; the values are the words of the JSON output."""

    CREATE = "create"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Change:
    """One path of the plan and why it is (or is not) touched."""

    action: Action
    path: str
    reason: str
    drift: bool = False
    unmanaged: bool = False
    seen: str = ""  # sha256 of the file on disk ("" when there is none): a saved plan's view of OUT


@dataclass(frozen=True)
class Plan:
    """The diff between rendered artifacts and OUT; apply recomputes it under its lock before writing.

    ``artifacts`` holds every rendered artifact (not only the changed ones) so apply can re-plan; ``writes``
    and ``deletions`` are what apply would do now. ``known``: the files whose bytes this plan verified, for apply
    to record (:mod:`fabricgen.outdir.lastrun`). A plan found without rendering (:func:`unchanged_plan`) has no
    artifacts and no changes.
    """

    out_dir: Path
    changes: tuple[Change, ...]
    lock: Lock
    artifacts: tuple[Artifact, ...]
    previous_lock_bytes: bytes | None = field(default=None, repr=False)
    previous_lock: Lock | None = field(default=None, repr=False, compare=False)  # those bytes parsed, once
    known: Mapping[str, Known] = field(default_factory=dict, repr=False, compare=False)
    last_run: LastRun = field(default=LastRun(), repr=False, compare=False)

    @property
    def counts(self) -> dict[str, int]:
        """Changes per action, every action present (zero too), in create/update/delete/unchanged order."""
        counts = {action.value: 0 for action in Action}
        for change in self.changes:
            counts[change.action.value] += 1
        return counts

    @property
    def has_changes(self) -> bool:
        """True when an artifact would be created, updated or deleted (a lock-only change does not count)."""
        return any(c.action is not Action.UNCHANGED for c in self.changes)

    @property
    def lock_changed(self) -> bool:
        """True when the lock file would be written (new spec digest or tool version, adopted files...)."""
        return self.lock.to_bytes() != self.previous_lock_bytes

    @property
    def previous_spec_digest(self) -> str:
        """The spec digest of the last apply ("" without a lock): a new one re-issues every printed sheet."""
        return "" if self.previous_lock is None else self.previous_lock.spec_digest

    @property
    def other_cluster(self) -> ClusterId | None:
        """The cluster OUT's lock says it holds when that is another than this plan's (None when it is the same,
        or either is not known: no lock, a lock older than format 3, a plan made without a spec)."""
        if self.previous_lock is None or not self.lock.cluster.known:
            return None
        held = self.previous_lock.cluster
        return held if held.known and held != self.lock.cluster else None

    @property
    def owners(self) -> dict[str, str]:
        """What each directory of per-device files belongs to: as this plan's lock records it, and for one it no
        longer renders as the last apply's did (a removed node's deleted files are still that node's)."""
        previous = dict(self.previous_lock.owners) if self.previous_lock is not None else {}
        return previous | dict(self.lock.owners)

    @property
    def needs_apply(self) -> bool:
        return self.has_changes or self.lock_changed

    @property
    def writes(self) -> tuple[Artifact, ...]:
        """The artifacts apply writes: those created or updated, sorted by path."""
        paths = {c.path for c in self.changes if c.action in (Action.CREATE, Action.UPDATE)}
        return tuple(a for a in self.artifacts if a.path in paths)

    @property
    def deletions(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.changes if c.action is Action.DELETE)

    @property
    def unmanaged(self) -> tuple[str, ...]:
        """Paths holding a file fabricgen did not create; apply refuses to overwrite them unless forced."""
        return tuple(c.path for c in self.changes if c.unmanaged)

    @property
    def drifted(self) -> tuple[str, ...]:
        """Lock-listed paths edited by hand since the last apply."""
        return tuple(c.path for c in self.changes if c.drift)

    @property
    def outputs_digest(self) -> str:
        """sha256 over every rendered artifact's path, mode and content digest: what apply would write."""
        return _digest(f"{a.path}\0{a.mode:o}\0{a.sha256}" for a in self.artifacts)

    @property
    def state_digest(self) -> str:
        """sha256 over what the plan found in OUT and nothing it rendered: the lock file and the bytes at every
        planned path where something stands ("" for a symlink or other non-file). A plan's actions are left out:
        they flip with the rendered outputs (another template: unchanged -> update), which the outputs digest
        covers, and a saved plan would then say OUT changed when it did not."""
        lock = hashlib.sha256(self.previous_lock_bytes or b"").hexdigest()
        return _digest([lock, *(f"{c.path}\0{c.seen}" for c in self.changes if c.action is not Action.CREATE)])


def _digest(lines: Iterable[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@without_gc  # a Change, a stat and a Known per file; collections would rescan the compiled topology
def compute_plan(
    artifacts: Sequence[Artifact], out_dir: Path, *, spec_digest: str, tool_version: str, inputs: Inputs = NO_INPUTS,
    cluster: ClusterId = NO_CLUSTER, owners: Owners = (),
) -> Plan:
    """Diff ``artifacts`` against ``out_dir`` and its lock file, after finishing any interrupted apply.

    Raises:
        OutputError: the lock file is corrupt, an artifact cannot be placed (a directory, symlink or foreign
            file where a directory is needed), two artifacts clash, or another apply is mid-way.
    """
    recover(out_dir)
    return plan_without_recovery(artifacts, out_dir, spec_digest=spec_digest, tool_version=tool_version,
                                 inputs=inputs, cluster=cluster, owners=owners)


@without_gc
def plan_without_recovery(
    artifacts: Sequence[Artifact], out_dir: Path, *, spec_digest: str, tool_version: str, inputs: Inputs = NO_INPUTS,
    cluster: ClusterId = NO_CLUSTER, owners: Owners = (),
) -> Plan:
    """`compute_plan` minus recovery: for apply, which has already recovered while holding its lock."""
    rendered = _checked_artifacts(artifacts)
    try:
        return _diff(
            rendered,
            out_dir,
            Lock.for_artifacts(rendered, spec_digest=spec_digest, tool_version=tool_version, inputs=inputs,
                               cluster=cluster, owners=owners),
        )
    except OSError as exc:
        raise OutputError(f"cannot read output directory {out_dir}: {exc}") from exc


def refuse_other_cluster(plan: Plan, force: bool, renamed_from: str = "") -> None:
    """Raise unless OUT holds this plan's cluster (or no known one), ``renamed_from`` names the cluster it holds
    (``NAME@SITE``: this spec is that cluster renamed, and OUT is adopted for it), or ``force`` replaces it. A
    mistyped -o would otherwise replace a whole cluster's handoff with another's as an ordinary plan; a rename
    names the cluster it was, so it cannot adopt a third cluster's OUT, and leaves the refusal of files
    fabricgen did not create in place (``force`` lifts both)."""
    held = plan.other_cluster
    if held is None or force or renamed_from == held.handle:
        return
    if renamed_from:
        raise OutputError(
            f"{plan.out_dir} holds cluster {held} (its lock file says so), not {renamed_from}: --renamed-from names "
            f"the cluster OUT holds, here --renamed-from {held.handle} if this spec ({plan.lock.cluster}) is that "
            "cluster renamed; otherwise give another output directory (-o OUT)"
        )
    raise OutputError(
        f"{plan.out_dir} holds cluster {held} (its lock file says so); this spec is cluster {plan.lock.cluster}: "
        f"planning it there would replace every file of {held.name}. Give another output directory (-o OUT); "
        f"if this spec is {held.name} renamed (its name or site changed), plan and apply with --renamed-from "
        f"{held.handle}; --force replaces any cluster's files, and files fabricgen did not create"
    )


def unused_renamed_from(plan: Plan, renamed_from: str) -> Finding | None:
    """A warning when ``--renamed-from`` adopts nothing (None otherwise): OUT's lock names this plan's cluster
    already (the apply that adopted it is done), or names none (no lock yet, or one of format 1 or 2, which any
    spec may plan into), so the option can be dropped; kept in a script, it would only hide that it no longer
    does anything."""
    if not renamed_from or plan.other_cluster is not None or not plan.lock.cluster.known:
        return None
    held = plan.previous_lock.cluster if plan.previous_lock is not None else None
    state = (f"holds cluster {held} already (its lock file says so)" if held is not None and held.known
             else "holds no cluster's lock file yet" if held is None
             else "has a lock file of an older format, which names no cluster")
    return Finding(Severity.WARNING, "renamed-from", "--renamed-from",
                   f"{plan.out_dir} {state}: --renamed-from {renamed_from} has nothing to adopt",
                   "drop --renamed-from: it is needed once, by the plan and apply that take OUT over from the name "
                   "the cluster had")


@without_gc
def unchanged_plan(out_dir: Path, digest_now: Callable[[Inputs], str | None]) -> Plan | None:
    """The plan of a run whose inputs are those of the last apply, when OUT still holds exactly what it wrote:
    found from the lock and a stat per file (hashing only files whose stat changed), without rendering.

    ``digest_now`` computes the input digest from the spec and the files the lock says it names. None when
    anything differs or cannot be read: another digest, a lock in another format or corrupt, an interrupted apply
    to finish, no record of the last run's warnings for this spec, or any managed file missing, edited, of another
    mode or behind a symlink. The caller then compiles and renders, and the full plan reports exactly what
    differs, in its usual order. Only reads. Every artifact path is in the lock on a match, so there is nothing to
    create, delete or find unmanaged.
    """
    try:
        if needs_recovery(out_dir) or (previous_bytes := read_lock_bytes(out_dir)) is None:
            return None  # the full path recovers (after validating the spec) or plans from nothing
        lock = parse_lock(previous_bytes, str(out_dir / LOCK_FILE))
        if (not lock.inputs.digest or lock.to_bytes() != previous_bytes
                or digest_now(lock.inputs) != lock.inputs.digest):
            return None
        last = read_last_run(out_dir)
        if last.inputs != lock.inputs.digest:
            return None
        disk = _Disk(out_dir, last.files)
        changes = []
        for entry in lock.entries:
            seen = disk.inspect(entry.path) if disk.blocker(entry.path) is None else _OnDisk("other")
            if not seen.matches(entry.sha256, entry.mode):
                return None
            changes.append(Change(Action.UNCHANGED, entry.path, "up to date", seen=seen.sha256))
    except (OSError, OutputError):  # reported by the full path, in its order (the spec's problems first)
        return None
    return Plan(out_dir, tuple(changes), lock, (), previous_bytes, lock, disk.known, last)


def settled_writes(plan: Plan, renamed_since_ns: int) -> dict[str, Known]:
    """What apply records of the files it just moved into place (written before ``renamed_since_ns``): their lstat
    now, with the sha256 of the bytes it wrote; a file that is not (or no longer) those bytes' size is left out."""
    disk = _Disk(plan.out_dir, {})
    known = {}
    for artifact in plan.writes:
        st = disk.lstat(artifact.path) if disk.blocker(artifact.path) is None else None
        entry = None
        if st is not None and stat.S_ISREG(st.st_mode) and st.st_size == len(artifact.content):
            entry = settled(st, artifact.sha256, renamed_since_ns)
        if entry is not None:
            known[artifact.path] = entry
    return known


def plan_to_json(plan: Plan) -> dict[str, object]:
    """Machine-readable plan: actions, paths, reasons and flags, never file contents."""
    return {
        "out_dir": str(plan.out_dir),
        "spec_digest": plan.lock.spec_digest,
        "previous_spec_digest": plan.previous_spec_digest,
        "summary": plan.counts,
        "changes": [
            {"action": c.action.value, "path": c.path, "reason": c.reason, "drift": c.drift}
            for c in plan.changes
        ],
        "lock_changed": plan.lock_changed,
    }


def _checked_artifacts(artifacts: Sequence[Artifact]) -> tuple[Artifact, ...]:
    """Reject artifact sets no tree can hold: duplicates, the lock's path, a file that is also a directory."""
    by_path: dict[str, Artifact] = {}
    for artifact in artifacts:
        if artifact.path in by_path:
            raise OutputError(f"two artifacts have the same path {artifact.path}")
        by_path[artifact.path] = artifact
    if LOCK_FILE in by_path:
        raise OutputError(f"artifact path {LOCK_FILE} is reserved for the lock file")
    for path in by_path:
        for ancestor in _ancestors(path):
            if ancestor in by_path:
                raise OutputError(f"artifact {ancestor} is a file, but artifact {path} needs a directory")
    return tuple(by_path[p] for p in sorted(by_path))


def _ancestors(path: str) -> list[str]:
    """Proper ancestors of a relative path, shallowest first: "a/b/c" -> ["a", "a/b"]."""
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@dataclass(frozen=True)
class _OnDisk:
    """What lstat found at one path; ``other`` is anything apply must not read through (symlink, fifo...)."""

    kind: Literal["missing", "file", "dir", "other"]
    sha256: str = ""
    mode: int = 0

    def matches(self, sha256: str, mode: int) -> bool:
        return self.kind == "file" and self.sha256 == sha256 and self.mode == mode


class _Disk:
    """OUT as plan sees it, with one lstat per path: directories on the way are shared by many artifacts. A file
    whose lstat matches what the last apply recorded is not read again; ``known`` collects what this plan verified.
    """

    def __init__(self, out_dir: Path, last_known: Mapping[str, Known]) -> None:
        self.out_dir = out_dir
        self._root = os.fspath(out_dir) + os.sep
        self._stats: dict[str, os.stat_result | None] = {}
        self._last_known = last_known
        self._since_ns = time.time_ns()  # before any lstat: bytes read later were there at least since then
        self.known: dict[str, Known] = {}

    def lstat(self, rel: str) -> os.stat_result | None:
        if rel not in self._stats:
            try:
                self._stats[rel] = os.lstat(self._root + rel)  # a Path per lstat cost as much as the lstat
            except (FileNotFoundError, NotADirectoryError):
                self._stats[rel] = None
        return self._stats[rel]

    def blocker(self, rel: str) -> tuple[str, int] | None:
        """The first ancestor of ``rel`` that exists but is not a real directory, with its st_mode."""
        for ancestor in _ancestors(rel):
            st = self.lstat(ancestor)
            if st is None:
                return None
            if not stat.S_ISDIR(st.st_mode):
                return ancestor, st.st_mode
        return None

    def inspect(self, rel: str) -> _OnDisk:
        st = self.lstat(rel)
        if st is None:
            return _OnDisk("missing")
        if stat.S_ISDIR(st.st_mode):
            return _OnDisk("dir")
        if not stat.S_ISREG(st.st_mode):
            return _OnDisk("other")
        known = self._last_known.get(rel)
        if known is not None and known.matches(st):
            self.known[rel] = known
            return _OnDisk("file", known.sha256, stat.S_IMODE(st.st_mode) & 0o777)
        try:
            digest = file_digest(self.out_dir / rel)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
            digest = None  # replaced by a symlink since the lstat above
        if digest is None:
            return _OnDisk("other")
        if (now_known := settled(st, digest, self._since_ns)) is not None:
            self.known[rel] = now_known
        return _OnDisk("file", digest, stat.S_IMODE(st.st_mode) & 0o777)


def _diff(rendered: tuple[Artifact, ...], out_dir: Path, new_lock: Lock) -> Plan:
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"output directory {out_dir} exists and is not a directory")
    previous_bytes = read_lock_bytes(out_dir)
    previous_lock = None if previous_bytes is None else parse_lock(previous_bytes, str(out_dir / LOCK_FILE))
    previous = {} if previous_lock is None else previous_lock.by_path()
    last = read_last_run(out_dir)
    disk = _Disk(out_dir, last.files)
    rendered_paths = {a.path for a in rendered}
    deletions = [
        change
        for path, entry in previous.items()
        if path not in rendered_paths and (change := _plan_deletion(disk, path, entry)) is not None
    ]
    deleted = frozenset(c.path for c in deletions)
    changes = [_plan_artifact(disk, a, previous.get(a.path), deleted) for a in rendered] + deletions
    return Plan(
        out_dir=out_dir,
        changes=tuple(sorted(changes, key=lambda c: c.path)),
        lock=new_lock,
        artifacts=rendered,
        previous_lock_bytes=previous_bytes,
        previous_lock=previous_lock,
        known=disk.known,
        last_run=last,
    )


def _plan_deletion(disk: _Disk, path: str, entry: LockEntry) -> Change | None:
    """Delete a no-longer-rendered file fabricgen wrote, unless it is gone, became a directory or sits behind
    a symlink (deleting through a symlink could remove a file outside OUT)."""
    if disk.blocker(path) is not None:
        return None
    seen = disk.inspect(path)
    if seen.kind in ("missing", "dir"):
        return None
    drift = not seen.matches(entry.sha256, entry.mode)
    reason = "no longer rendered; edited by hand since the last apply" if drift else "no longer rendered"
    return Change(Action.DELETE, path, reason, drift=drift, seen=seen.sha256)


def _plan_artifact(
    disk: _Disk, artifact: Artifact, entry: LockEntry | None, deleted: frozenset[str]
) -> Change:
    seen = _seen_for_artifact(disk, artifact.path, deleted)
    if seen.kind == "missing":
        if entry is None:
            return Change(Action.CREATE, artifact.path, "new artifact")
        return Change(Action.CREATE, artifact.path, "deleted by hand since the last apply", drift=True)
    if entry is None:
        return _plan_unmanaged(artifact, seen)
    drift = not seen.matches(entry.sha256, entry.mode)
    if seen.matches(artifact.sha256, artifact.mode):
        reason = "up to date"
        if drift:
            reason = "edited by hand since the last apply, but matches the rendered file"
        return Change(Action.UNCHANGED, artifact.path, reason, drift=drift, seen=seen.sha256)
    reason = _difference(seen, artifact)
    if drift:
        reason = f"edited by hand since the last apply; {reason}"
    return Change(Action.UPDATE, artifact.path, reason, drift=drift, seen=seen.sha256)


def _plan_unmanaged(artifact: Artifact, seen: _OnDisk) -> Change:
    """A file fabricgen did not write is in the way. One identical to the rendered artifact loses nothing when
    adopted (e.g. after the lock file was deleted), so only a differing one is refused without force."""
    if seen.matches(artifact.sha256, artifact.mode):
        return Change(Action.UNCHANGED, artifact.path, "identical file not created by fabricgen; adopted",
                      seen=seen.sha256)
    return Change(Action.UPDATE, artifact.path, "not created by fabricgen", unmanaged=True, seen=seen.sha256)


def _difference(seen: _OnDisk, artifact: Artifact) -> str:
    if seen.kind != "file":
        return "not a regular file"
    if seen.sha256 != artifact.sha256:
        return "content changed" if seen.mode == artifact.mode else "content and mode changed"
    return f"mode changed {seen.mode:04o} -> {artifact.mode:04o}"


def _seen_for_artifact(disk: _Disk, path: str, deleted: frozenset[str]) -> _OnDisk:
    """What apply finds at ``path`` once the planned deletions are done; raise when nothing can go there."""
    blocker = disk.blocker(path)
    if blocker is not None:
        ancestor, st_mode = blocker
        if stat.S_ISREG(st_mode) and ancestor in deleted:
            return _OnDisk("missing")
        what = "a symlink (fabricgen does not write through symlinks)"
        if not stat.S_ISLNK(st_mode):
            what = "not a directory"
        raise OutputError(
            f"{disk.out_dir / ancestor} is {what}, but artifact {path} must go beneath it; move it away"
        )
    seen = disk.inspect(path)
    if seen.kind == "dir":
        if _only_deleted_files(disk.out_dir / path, path, deleted):
            return _OnDisk("missing")
        raise OutputError(f"{disk.out_dir / path} is a directory, but artifact {path} is a file; move it")
    return seen


def _only_deleted_files(directory: Path, rel: str, deleted: frozenset[str]) -> bool:
    """True when deleting the planned files (and the emptied directories) makes ``directory`` disappear."""
    children = list(directory.iterdir())
    if not children:
        return False
    for child in children:
        child_rel = f"{rel}/{child.name}"
        if child.is_dir() and not child.is_symlink():
            if not _only_deleted_files(child, child_rel, deleted):
                return False
        elif child_rel not in deleted:
            return False
    return True
