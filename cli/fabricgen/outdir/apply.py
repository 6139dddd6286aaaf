"""Stage apply: make OUT match a plan so that a run killed at any moment leaves the old tree or the new one.

The protocol has one commit point and rolls forward, in this order (each step depends on the one before):
  1. take OUT/.fabricgen/apply.lock (flock, non-blocking) so two applies cannot interleave, finish any
     interrupted apply, then re-plan: another process may have changed OUT since the caller planned;
  2. write every new or changed file into OUT/.fabricgen/staging-<random>/ and fsync it; OUT is untouched;
  3. write OUT/.fabricgen/journal.json atomically (temp file, fsync, os.replace, fsync dir): the commit point;
  4. roll forward: deletions (and the directories they empty), then one os.replace per staged file, then the
     lock file, last, so a lock on disk always describes a finished apply;
  5. remove the journal, then the staging directory.
Dying before 3 leaves the old tree plus staging residue; dying after it leaves a journal. `recover`, run first
by every plan and apply, removes the residue or finishes the journal; every roll-forward step is idempotent.
"""

from __future__ import annotations

import tempfile
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from fabricgen.core.errors import OutputError
from fabricgen.outdir.journal import (
    JOURNAL_FILE,
    STAGING_PREFIX,
    Journal,
    discard_residue,
    exclusive_lock,
    finish,
    fsync_dir,
    recover,
    recover_locked,
    write_atomically,
    write_file,
)
from fabricgen.outdir.lock import STATE_DIR, LockEntry
from fabricgen.outdir.plan import Plan, plan_without_recovery


@dataclass(frozen=True)
class ApplyResult:
    """What apply did. ``plan`` is the plan recomputed under the lock, which is the one actually applied."""

    plan: Plan
    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    lock_written: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.written or self.deleted or self.lock_written)


def apply_plan(plan: Plan, *, force: bool = False) -> ApplyResult:
    """Write ``plan`` to disk atomically; with nothing to do, touch nothing at all.

    Raises:
        OutputError: another apply holds the lock, unmanaged files are in the way and ``force`` is false, the
            re-plan fails, or an I/O error occurs (after the commit point the next run finishes the apply).
    """
    out_dir = plan.out_dir
    recover(out_dir)
    if not plan.needs_apply:
        return ApplyResult(plan)
    _refuse_unmanaged(plan, force)
    _make_state_dir(out_dir)
    with exclusive_lock(out_dir):
        recover_locked(out_dir)
        fresh = plan_without_recovery(
            plan.artifacts, out_dir, spec_digest=plan.lock.spec_digest, tool_version=plan.lock.tool_version
        )
        if not fresh.needs_apply:
            return ApplyResult(fresh)
        _refuse_unmanaged(fresh, force)
        journal = _stage_and_commit(fresh)
        lock_written = finish(out_dir, journal)
    return ApplyResult(
        fresh, written=tuple(a.path for a in fresh.writes), deleted=fresh.deletions, lock_written=lock_written
    )


def _refuse_unmanaged(plan: Plan, force: bool) -> None:
    if plan.unmanaged and not force:
        raise OutputError(
            f"refusing to overwrite files in {plan.out_dir} not created by fabricgen: "
            f"{', '.join(plan.unmanaged)}; move them away or apply with --force"
        )


def _make_state_dir(out_dir: Path) -> None:
    try:
        (out_dir / STATE_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {out_dir / STATE_DIR}: {exc}") from exc


def _stage_and_commit(plan: Plan) -> Journal:
    """Steps 2 and 3. On failure before the journal exists, remove the staging so no residue is left."""
    state_dir = plan.out_dir / STATE_DIR
    journal_path = state_dir / JOURNAL_FILE
    try:
        staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=state_dir))
        journal = Journal(
            staging=staging.name,
            writes=tuple(LockEntry(a.path, a.sha256, a.mode) for a in plan.writes),
            deletions=plan.deletions,
            lock_bytes=plan.lock.to_bytes(),
        )
        _stage(plan, staging)
        write_atomically(journal_path, journal.to_bytes(), state_dir)
    except BaseException as exc:
        if not journal_path.exists():
            with suppress(OSError):
                discard_residue(state_dir)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write to {plan.out_dir}: {exc}; nothing was changed") from exc
        raise
    return journal


def _stage(plan: Plan, staging: Path) -> None:
    directories = {staging}
    for artifact in plan.writes:
        target = staging / artifact.path
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file(target, artifact.content, artifact.mode)
        directories.update(p for p in target.parents if p.is_relative_to(staging))
    # New directory entries are durable only once their directory is synced; the journal must not outlive them
    for directory in sorted(directories, key=lambda p: len(p.parts), reverse=True):
        fsync_dir(directory)
    fsync_dir(staging.parent)
