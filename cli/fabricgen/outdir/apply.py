"""Stage apply: make OUT match a plan so that a run killed at any moment leaves the old tree or the new one.

The protocol has one commit point and rolls forward, in this order (each step depends on the one before):
  1. take OUT/.fabricgen/apply.lock (flock, non-blocking) so two applies cannot interleave, finish any
     interrupted apply, then re-plan: another process may have changed OUT since the caller planned;
  2. write every new or changed file into OUT/.fabricgen/staging-<random>/, flat (the journal's i-th write as
     file <i>), fsync each (from several threads: the disk commits concurrent fsyncs together), then the
     staging directory; OUT is untouched;
  3. write OUT/.fabricgen/journal.json atomically (temp file, fsync, os.replace, fsync dir): the commit point;
  4. roll forward: deletions (and the directories they empty), then one os.replace per staged file, then the
     lock file, last, so a lock on disk always describes a finished apply;
  5. remove the journal, then the staging directory;
  6. record what it knows of the tree in OUT/.fabricgen/last-run.json (:mod:`fabricgen.outdir.lastrun`), an aid
     to later plans that is never needed for the tree to be right.
Dying before 3 leaves the old tree plus staging residue; dying after it leaves a journal. `recover`, run first
by every plan and apply, removes the residue or finishes the journal; every roll-forward step is idempotent.
Every step works on descriptors of OUT and OUT/.fabricgen (:mod:`fabricgen.outdir.fs`), never through a symlink.
"""

from __future__ import annotations

import os
import time
from contextlib import suppress
from dataclasses import dataclass

from fabricgen.core.errors import Finding, OutputError
from fabricgen.core.gcpause import without_gc
from fabricgen.outdir.fs import in_parallel, new_name, tree, write_atomically, write_new
from fabricgen.outdir.journal import (
    JOURNAL_FILE,
    STAGING_PREFIX,
    TMP_PREFIX,
    Journal,
    State,
    discard_residue,
    exclusive_lock,
    finish,
    opened_state,
    recover,
    recover_locked,
)
from fabricgen.outdir.lastrun import Known, LastRun, write_last_run
from fabricgen.outdir.lock import LockEntry
from fabricgen.outdir.plan import Action, Plan, plan_without_recovery, refuse_other_cluster, settled_writes


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


@without_gc
def apply_plan(plan: Plan, *, force: bool = False, renamed_from: str = "", expected_state: str | None = None,
               spec: str = "", warnings: tuple[Finding, ...] = ()) -> ApplyResult:
    """Write ``plan`` to disk atomically; with nothing to do, touch no artifact and not the lock (last-run.json is
    brought up to date when it would change).

    ``renamed_from``: the cluster (``NAME@SITE``) OUT may hold, this plan's under its former name or site
    (:func:`~fabricgen.outdir.plan.refuse_other_cluster`). ``expected_state``: the :attr:`Plan.state_digest` of a
    saved plan; the re-plan under the lock must find OUT exactly so, or nothing is written. ``spec`` (as named)
    and ``warnings``: what the compile said, recorded for a later plan of the same inputs to say again without
    compiling.

    Raises:
        OutputError: another apply holds the lock, OUT holds another cluster or unmanaged files are in the way
            and ``force`` is false, the re-plan fails, OUT/.fabricgen is a symlink or a file, or an I/O error
            occurs (after the commit point the next run finishes the apply).
    """
    out_dir = plan.out_dir
    recover(out_dir)
    if not plan.needs_apply:
        _remember_unchanged(plan, spec, warnings)
        return ApplyResult(plan)
    refuse_other_cluster(plan, force, renamed_from)
    _refuse_unmanaged(plan, force)
    with opened_state(out_dir, create=True) as opened:
        state = _made(opened)
        with exclusive_lock(state):
            recover_locked(state)
            fresh = plan_without_recovery(
                plan.artifacts, out_dir, spec_digest=plan.lock.spec_digest, tool_version=plan.lock.tool_version,
                inputs=plan.lock.inputs, cluster=plan.lock.cluster, owners=plan.lock.owners,
            )
            if expected_state is not None and fresh.state_digest != expected_state:
                raise OutputError(f"{out_dir} changed since the plan was saved: run plan again")
            if not fresh.needs_apply:
                _remember(state, fresh, {}, spec, warnings)
                return ApplyResult(fresh)
            refuse_other_cluster(fresh, force, renamed_from)
            _refuse_unmanaged(fresh, force)
            journal = _stage_and_commit(fresh, state)
            renamed_since = time.time_ns()  # every staged file was written before this
            lock_written = finish(state, journal)
            _remember(state, fresh, settled_writes(fresh, renamed_since), spec, warnings)
    return ApplyResult(
        fresh, written=tuple(a.path for a in fresh.writes), deleted=fresh.deletions, lock_written=lock_written
    )


def _remember_unchanged(plan: Plan, spec: str, warnings: tuple[Finding, ...]) -> None:
    """Bring last-run.json up to date after a run that changed nothing (files hashed because their stat moved, a
    spec named another way), under apply's lock; skipped while another apply holds it."""
    known = {c.path: plan.known[c.path] for c in plan.changes if c.path in plan.known}
    last = LastRun(plan.lock.inputs.digest, spec, warnings, known, _renders(plan))
    if last == plan.last_run:
        return
    with suppress(OutputError), opened_state(plan.out_dir, create=False) as state:
        if state is not None:
            with exclusive_lock(state):
                _remember(state, plan, {}, spec, warnings)


def _remember(state: State, plan: Plan, written: dict[str, Known], spec: str, warnings: tuple[Finding, ...]) -> None:
    """Step 6: the files this apply verified or wrote, and what the compile said. A failure here costs later plans
    time, never correctness, so it does not fail the apply."""
    known = {c.path: plan.known[c.path] for c in plan.changes if c.action is Action.UNCHANGED and c.path in plan.known}
    with suppress(OSError, OutputError):
        write_last_run(state.state_fd, LastRun(plan.lock.inputs.digest, spec, warnings, known | written,
                                               _renders(plan)), TMP_PREFIX)


def _renders(plan: Plan) -> dict[str, tuple[str, str]]:
    """The render key and sha256 of every keyed artifact OUT holds once ``plan`` is applied (or found applied):
    the plan's own artifacts; a plan found without rendering (its inputs the last apply's, OUT as it wrote it:
    ``unchanged_plan``) keeps what the last apply recorded, which describes the very same files."""
    if not plan.artifacts and plan.lock.entries:
        return dict(plan.last_run.renders)
    return {a.path: (a.render_key, a.sha256) for a in plan.artifacts if a.render_key}


def _made(state: State | None) -> State:
    if state is None:  # opened_state(create=True) makes both directories or raises
        raise OutputError("the output directory could not be created")
    return state


def _refuse_unmanaged(plan: Plan, force: bool) -> None:
    if plan.unmanaged and not force:
        raise OutputError(
            f"refusing to overwrite files in {plan.out_dir} not created by fabricgen: "
            f"{', '.join(plan.unmanaged)}; move them away or apply with --force"
        )


def _stage_and_commit(plan: Plan, state: State) -> Journal:
    """Steps 2 and 3. On failure before the journal exists, remove the staging so no residue is left."""
    try:
        staging = new_name(state.state_fd, STAGING_PREFIX, directory=True)
        journal = Journal(
            staging=staging,
            writes=tuple(LockEntry(a.path, a.sha256, a.mode) for a in plan.writes),
            deletions=plan.deletions,
            lock_bytes=plan.lock.to_bytes(),
        )
        _stage(plan, state, staging)
        write_atomically(state.state_fd, JOURNAL_FILE, journal.to_bytes(), state.state_fd, TMP_PREFIX)
    except BaseException as exc:
        if not _committed(state):
            with suppress(OSError):
                discard_residue(state)
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write to {plan.out_dir}: {exc}; nothing was changed") from exc
        raise
    return journal


def _committed(state: State) -> bool:
    try:
        os.stat(JOURNAL_FILE, dir_fd=state.state_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _stage(plan: Plan, state: State, staging: str) -> None:
    """Every new file into the private staging directory, made by this run (0700) and opened without following a
    symlink: flat, the i-th write as file ``<i>`` (the journal's order), so staging is one directory to make, sync
    and remove whatever the depth of the tree (a copy of the tree took ~2,200 of each at 16k GPUs)."""
    with tree(state.state_fd) as private:
        directory = private.get(staging)
        assert directory is not None
        in_parallel(lambda item: write_new(directory, str(item[0]), item[1].content, item[1].mode),
                    list(enumerate(plan.writes)))
        # New directory entries are durable only once their directory is synced; the journal must not outlive them
        os.fsync(directory)
        os.fsync(state.state_fd)
