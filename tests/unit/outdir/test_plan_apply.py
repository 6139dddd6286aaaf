"""Plan and apply against real directories: diff rules, ownership, idempotence, locking and crash safety."""

from __future__ import annotations

import fcntl
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import OutputError, Severity
from fabricgen.outdir import apply as apply_module
from fabricgen.outdir import journal as journal_module
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.journal import FLOCK_FILE, JOURNAL_FILE, recover
from fabricgen.outdir.lastrun import LAST_RUN_FILE
from fabricgen.outdir.lock import LOCK_FILE, STATE_DIR, ClusterId, Lock
from fabricgen.outdir.plan import Action, Plan, compute_plan, plan_to_json, refuse_other_cluster, unused_renamed_from

DIGEST = "sha256:" + "ab" * 32
VERSION = "0.1.0"

# (files: path -> (bytes, mode), directories): the whole visible tree, OUT/.fabricgen excluded.
Tree = tuple[dict[str, tuple[bytes, int]], frozenset[str]]


def art(path: str, text: str, mode: int = 0o644) -> Artifact:
    return Artifact(path, text.encode(), mode)


def plan_for(artifacts: Sequence[Artifact], out: Path, version: str = VERSION) -> Plan:
    return compute_plan(artifacts, out, spec_digest=DIGEST, tool_version=version)


def apply_all(artifacts: Sequence[Artifact], out: Path, *, force: bool = False) -> None:
    apply_plan(plan_for(artifacts, out), force=force)


def snapshot(out: Path) -> Tree:
    files: dict[str, tuple[bytes, int]] = {}
    dirs: set[str] = set()
    for root, dirnames, filenames in os.walk(out):
        rel_root = Path(root).relative_to(out)
        if rel_root == Path():
            dirnames[:] = [d for d in dirnames if d != STATE_DIR]
        for d in dirnames:
            dirs.add((rel_root / d).as_posix())
        for f in filenames:
            path = Path(root) / f
            files[(rel_root / f).as_posix()] = (path.read_bytes(), path.stat().st_mode & 0o777)
    return files, frozenset(dirs)


def expected_tree(artifacts: Sequence[Artifact], user_files: dict[str, bytes]) -> Tree:
    """What OUT must hold after applying ``artifacts``: them, the lock, the user's files, no other dirs."""
    files = {a.path: (a.content, a.mode) for a in artifacts}
    files.update({p: (c, 0o644) for p, c in user_files.items()})
    files[LOCK_FILE] = (
        Lock.for_artifacts(artifacts, spec_digest=DIGEST, tool_version=VERSION).to_bytes(),
        0o644,
    )
    dirs = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    return files, frozenset(dirs)


def write_user_files(out: Path, user_files: dict[str, bytes]) -> None:
    for rel, content in user_files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(content)
        (out / rel).chmod(0o644)


def mtimes(out: Path) -> dict[str, int]:
    return {str(p.relative_to(out)): p.lstat().st_mtime_ns for p in [out, *out.rglob("*")]}


def state_residue(out: Path) -> set[str]:
    return {p.name for p in (out / STATE_DIR).iterdir()} - {FLOCK_FILE, LAST_RUN_FILE}


def by_path(plan: Plan) -> dict[str, Any]:
    return {c.path: c for c in plan.changes}


# --- create, idempotence, lock file ---------------------------------------------------------------------


def test_create_on_empty_dir(tmp_path: Path) -> None:
    out = tmp_path / "out"
    artifacts = [art("b/run.sh", "#!/bin/sh\n", 0o755), art("a.txt", "a")]
    plan = plan_for(artifacts, out)
    assert [(c.action, c.path, c.reason) for c in plan.changes] == [
        (Action.CREATE, "a.txt", "new artifact"),
        (Action.CREATE, "b/run.sh", "new artifact"),
    ]
    assert plan.counts == {"create": 2, "update": 0, "delete": 0, "unchanged": 0}
    assert plan.has_changes and plan.lock_changed
    assert not out.exists(), "planning must not write"

    result = apply_plan(plan)

    assert result.written == ("a.txt", "b/run.sh") and result.lock_written
    assert snapshot(out) == expected_tree(artifacts, {})
    assert state_residue(out) == set()


def test_lock_file_is_deterministic_and_relative(tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply_all([art("x/y.sh", "y", 0o755), art("a.txt", "a")], out)
    text = (out / LOCK_FILE).read_text()
    assert text.endswith("}\n") and str(tmp_path) not in text
    doc = json.loads(text)
    assert text == json.dumps(doc, indent=2, sort_keys=True) + "\n"
    assert doc == {
        "cluster": {"name": "", "site": ""},
        "files": {
            "a.txt": {"mode": "0644", "sha256": art("a.txt", "a").sha256},
            "x/y.sh": {"mode": "0755", "sha256": art("x/y.sh", "y").sha256},
        },
        "inputs": {"digest": "", "named_files": []},
        "lock_version": 4,
        "owners": {},
        "spec_digest": DIGEST,
        "tool": {"name": "fabricgen", "version": VERSION},
    }


def test_second_apply_changes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    artifacts = [art("a.txt", "a"), art("d/e/f.sh", "f", 0o755)]
    apply_all(artifacts, out)
    before, lock_before = mtimes(out), (out / LOCK_FILE).read_bytes()

    plan = plan_for(artifacts, out)
    result = apply_plan(plan)

    assert plan.counts == {"create": 0, "update": 0, "delete": 0, "unchanged": 2}
    assert {c.reason for c in plan.changes} == {"up to date"}
    assert not plan.has_changes and not plan.lock_changed and not result.changed
    assert mtimes(out) == before
    assert (out / LOCK_FILE).read_bytes() == lock_before


def test_stale_plan_is_rechecked_under_the_lock(tmp_path: Path) -> None:
    """A plan made before another apply finished must not redo (or undo) that apply's work."""
    out = tmp_path / "out"
    artifacts = [art("a.txt", "a")]
    stale = plan_for(artifacts, out)
    apply_plan(plan_for(artifacts, out))
    before = mtimes(out)

    result = apply_plan(stale)

    assert not result.changed and not result.plan.has_changes
    assert mtimes(out) == before


def test_lock_only_change_is_not_an_artifact_change(tmp_path: Path) -> None:
    out = tmp_path / "out"
    artifacts = [art("a.txt", "a")]
    apply_all(artifacts, out)
    artifact_mtime = (out / "a.txt").stat().st_mtime_ns

    plan = plan_for(artifacts, out, version="0.2.0")
    result = apply_plan(plan)

    assert not plan.has_changes and plan.lock_changed
    assert result.lock_written and result.written == ()
    assert json.loads((out / LOCK_FILE).read_text())["tool"]["version"] == "0.2.0"
    assert (out / "a.txt").stat().st_mtime_ns == artifact_mtime


def test_modes_do_not_depend_on_umask(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old_umask = os.umask(0o077)
    try:
        apply_all([art("run.sh", "x", 0o755), art("conf", "y")], out)
    finally:
        os.umask(old_umask)
    assert (out / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (out / "conf").stat().st_mode & 0o777 == 0o644
    assert (out / LOCK_FILE).stat().st_mode & 0o777 == 0o644


def test_plan_to_json_has_the_schema_and_no_contents(tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply_all([art("old.txt", "o"), art("keep.txt", "k")], out)
    plan = plan_for([art("keep.txt", "k"), art("new.txt", "SECRET-CONTENT")], out)

    doc = plan_to_json(plan)

    assert doc == {
        "out_dir": str(out),
        "spec_digest": DIGEST,
        "previous_spec_digest": DIGEST,
        "summary": {"create": 1, "update": 0, "delete": 1, "unchanged": 1},
        "changes": [
            {"action": "unchanged", "path": "keep.txt", "reason": "up to date", "drift": False},
            {"action": "create", "path": "new.txt", "reason": "new artifact", "drift": False},
            {"action": "delete", "path": "old.txt", "reason": "no longer rendered", "drift": False},
        ],
        "lock_changed": True,
    }
    assert "SECRET-CONTENT" not in json.dumps(doc)


# --- update, delete, ownership, drift ---------------------------------------------------------------------


def test_update_and_delete(tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply_all([art("a.txt", "a"), art("m.sh", "m"), art("gone/deep/x", "x"), art("same", "s")], out)
    new = [art("a.txt", "A"), art("m.sh", "m", 0o755), art("same", "s")]

    plan = plan_for(new, out)
    changes = by_path(plan)
    assert (changes["a.txt"].action, changes["a.txt"].reason) == (Action.UPDATE, "content changed")
    assert (changes["m.sh"].action, changes["m.sh"].reason) == (Action.UPDATE, "mode changed 0644 -> 0755")
    assert changes["gone/deep/x"].action is Action.DELETE
    assert changes["same"].action is Action.UNCHANGED
    result = apply_plan(plan)

    assert result.written == ("a.txt", "m.sh") and result.deleted == ("gone/deep/x",)
    assert snapshot(out) == expected_tree(new, {}), "emptied directories are removed too"


def test_only_lock_listed_files_are_deleted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    user = {"notes.md": b"mine", "hosts/extra.conf": b"mine too"}
    write_user_files(out, user)
    apply_all([art("hosts/h1/nccl.env", "1"), art("top.txt", "t")], out)

    plan = plan_for([], out)
    assert set(plan.deletions) == {"hosts/h1/nccl.env", "top.txt"}
    apply_plan(plan)

    assert snapshot(out) == expected_tree([], user)


def test_drift_detected_after_hand_edit(tmp_path: Path) -> None:
    out = tmp_path / "out"
    artifacts = [art("a.conf", "a"), art("b.conf", "b"), art("c.conf", "c")]
    apply_all([*artifacts, art("old.conf", "o")], out)
    (out / "a.conf").write_text("edited")
    (out / "b.conf").chmod(0o600)
    (out / "old.conf").write_text("edited too")

    plan = plan_for(artifacts, out)
    changes = by_path(plan)

    assert plan.drifted == ("a.conf", "b.conf", "old.conf")
    assert changes["a.conf"].action is Action.UPDATE and "edited by hand" in changes["a.conf"].reason
    assert changes["b.conf"].reason == "edited by hand since the last apply; mode changed 0600 -> 0644"
    assert changes["old.conf"].action is Action.DELETE and changes["old.conf"].drift
    assert not changes["c.conf"].drift
    json_changes = plan_to_json(plan)["changes"]
    assert isinstance(json_changes, list)
    assert json_changes[0] == {
        "action": "update",
        "path": "a.conf",
        "reason": "edited by hand since the last apply; content changed",
        "drift": True,
    }
    apply_plan(plan)
    assert snapshot(out) == expected_tree(artifacts, {})


def test_drift_that_matches_the_new_render_is_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply_all([art("a.conf", "old")], out)
    (out / "a.conf").write_text("new")

    change = by_path(plan_for([art("a.conf", "new")], out))["a.conf"]

    assert (change.action, change.drift) == (Action.UNCHANGED, True)


def test_file_deleted_by_hand_is_recreated_as_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    apply_all([art("a.conf", "a")], out)
    (out / "a.conf").unlink()

    change = by_path(plan_for([art("a.conf", "a")], out))["a.conf"]

    assert (change.action, change.drift) == (Action.CREATE, True)


def test_unmanaged_file_refused_without_force_replaced_with_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_user_files(out, {"cabling/cables.csv": b"hand made"})
    artifacts = [art("cabling/cables.csv", "generated"), art("other.txt", "o")]

    plan = plan_for(artifacts, out)
    change = by_path(plan)["cabling/cables.csv"]
    assert (change.action, change.reason, change.unmanaged) == (
        Action.UPDATE,
        "not created by fabricgen",
        True,
    )
    with pytest.raises(OutputError, match=r"not created by fabricgen: cabling/cables\.csv"):
        apply_plan(plan)
    assert (out / "cabling/cables.csv").read_bytes() == b"hand made"
    assert not (out / "other.txt").exists() and not (out / LOCK_FILE).exists()

    apply_plan(plan, force=True)
    assert snapshot(out) == expected_tree(artifacts, {})


def test_identical_unmanaged_file_is_adopted(tmp_path: Path) -> None:
    """After the lock is lost, files identical to the render are taken over rather than refused."""
    out = tmp_path / "out"
    artifacts = [art("a.txt", "a")]
    apply_all(artifacts, out)
    (out / LOCK_FILE).unlink()

    plan = plan_for(artifacts, out)

    assert by_path(plan)["a.txt"].action is Action.UNCHANGED and not plan.unmanaged
    assert plan.lock_changed
    apply_plan(plan)
    assert snapshot(out) == expected_tree(artifacts, {})


def test_directory_or_symlink_in_the_way_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_user_files(out, {"a/user.txt": b"u"})
    with pytest.raises(OutputError, match="is a directory"):
        plan_for([art("a", "file where a directory is")], out)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (out / "link").symlink_to(elsewhere)
    with pytest.raises(OutputError, match="symlink"):
        plan_for([art("link/x.txt", "x")], out)
    assert list(elsewhere.iterdir()) == []


def test_file_and_directory_swap_places(tmp_path: Path) -> None:
    """A deleted file may become a directory of new artifacts, and a deleted directory a new file."""
    out = tmp_path / "out"
    apply_all([art("conf", "c"), art("sw/s1/cfg", "s")], out)
    new = [art("conf/main.yaml", "m"), art("sw", "now a file")]

    apply_all(new, out)

    assert snapshot(out) == expected_tree(new, {})


@pytest.mark.parametrize(
    ("artifacts", "message"),
    [
        ([art("a", "1"), art("a", "2")], "same path"),
        ([art(LOCK_FILE, "x")], "reserved"),
        ([art("a", "1"), art("a/b", "2")], "needs a directory"),
    ],
)
def test_impossible_artifact_sets_are_rejected(
    tmp_path: Path, artifacts: list[Artifact], message: str
) -> None:
    with pytest.raises(OutputError, match=message):
        plan_for(artifacts, tmp_path / "out")


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"files": {}, "lock_version": 1, "spec_digest": "x"}',
        b'{"files": {"../etc/passwd": {"mode": "0644", "sha256": "' + b"0" * 64 + b'"}}, '
        b'"lock_version": 1, "spec_digest": "x", "tool": {"name": "fabricgen", "version": "1"}}',
        b'{"files": {"a": {"mode": "0777", "sha256": "' + b"0" * 64 + b'"}}, '
        b'"lock_version": 1, "spec_digest": "x", "tool": {"name": "fabricgen", "version": "1"}}',
        b'{"files": {"a": {"mode": "0644", "sha256": "short"}}, '
        b'"lock_version": 1, "spec_digest": "x", "tool": {"name": "fabricgen", "version": "1"}}',
        b'{"files": {}, "lock_version": 99, "spec_digest": "x", '
        b'"tool": {"name": "fabricgen", "version": "1"}}',
        b'{"cluster": {"name": 1, "site": ""}, "files": {}, "inputs": {"digest": "", "named_files": []}, '
        b'"lock_version": 3, "spec_digest": "x", "tool": {"name": "fabricgen", "version": "1"}}',
        b'{"files": {}, "inputs": {"digest": "", "named_files": []}, '
        b'"lock_version": 3, "spec_digest": "x", "tool": {"name": "fabricgen", "version": "1"}}',
        b'{"cluster": {"name": "", "site": ""}, "files": {}, "inputs": {"digest": "", "named_files": []}, '
        b'"lock_version": 4, "owners": {"../hosts": "node"}, "spec_digest": "x", '
        b'"tool": {"name": "fabricgen", "version": "1"}}',
        b'{"cluster": {"name": "", "site": ""}, "files": {}, "inputs": {"digest": "", "named_files": []}, '
        b'"lock_version": 4, "owners": {"hosts/a": "[bold]x"}, "spec_digest": "x", '
        b'"tool": {"name": "fabricgen", "version": "1"}}',
    ],
)
def test_corrupt_lock_is_an_output_error(tmp_path: Path, content: bytes) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK_FILE).write_bytes(content)
    with pytest.raises(OutputError, match="corrupt lock file"):
        plan_for([art("a", "a")], out)


# --- locking --------------------------------------------------------------------------------------------


@contextmanager
def held_flock(out: Path) -> Iterator[None]:
    (out / STATE_DIR).mkdir(parents=True, exist_ok=True)
    with (out / STATE_DIR / FLOCK_FILE).open("a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield


def test_concurrent_apply_is_blocked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    plan = plan_for([art("a.txt", "a")], out)
    with held_flock(out), pytest.raises(OutputError, match="another fabricgen apply is running on"):
        apply_plan(plan)
    assert not (out / "a.txt").exists() and state_residue(out) == set()
    apply_plan(plan)
    assert (out / "a.txt").read_text() == "a"


def test_plan_does_not_recover_under_a_running_apply(tmp_path: Path) -> None:
    """Staging of a live apply must not be mistaken for residue (nor its journal finished twice)."""
    out = tmp_path / "out"
    with held_flock(out):
        (out / STATE_DIR / "staging-live").mkdir()
        with pytest.raises(OutputError, match="another fabricgen apply is running"):
            plan_for([art("a.txt", "a")], out)
        assert (out / STATE_DIR / "staging-live").is_dir()


def test_corrupt_journal_is_an_output_error(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / STATE_DIR).mkdir(parents=True)
    (out / STATE_DIR / JOURNAL_FILE).write_text('{"journal_version": 1, "staging": "../../x"}')
    with pytest.raises(OutputError, match="corrupt apply journal"):
        recover(out)


# --- crash safety ----------------------------------------------------------------------------------------

OLD = [
    art("conf", "old conf"),
    art("hosts/a/setup.sh", "#!/bin/sh\n", 0o755),
    art("hosts/b/nccl.env", "X=1\n"),
    art("switches/s1/config_db.json", "{}"),
    art("keep.txt", "same"),
    art("gone/deep/x.txt", "x"),
]
NEW = [
    art("conf/main.yaml", "new conf"),
    art("hosts/a/setup.sh", "#!/bin/sh\necho hi\n", 0o755),
    art("hosts/b/nccl.env", "X=1\n", 0o755),
    art("switches", "a file now"),
    art("keep.txt", "same"),
    art("new/dir/file.txt", "new"),
]
USER = {"README.user": b"mine", "hosts/b/user.conf": b"also mine"}
CRASH_OPS = ("replace", "fsync", "unlink", "rmdir", "mkdir")


class InjectedIOError(OSError):
    """Raised by a patched os function: an I/O error in the middle of apply."""


def failing_after(real: Callable[..., Any], k: int, on_fail: Callable[[], Any]) -> Callable[..., Any]:
    calls = itertools.count()

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if next(calls) >= k:
            on_fail()
        return real(*args, **kwargs)

    return wrapper


def prepare(out: Path) -> tuple[Tree, Plan]:
    write_user_files(out, USER)
    apply_all(OLD, out)
    return snapshot(out), plan_for(NEW, out)


def check_after_crash(out: Path, old: Tree) -> None:
    """Before the commit point OUT is exactly old; after it, the next run makes it exactly new."""
    new = expected_tree(NEW, USER)
    committed = (out / STATE_DIR / JOURNAL_FILE).exists()
    if not committed:
        assert snapshot(out) in (old, new)
    replan = plan_for(NEW, out)  # runs recover()
    after = snapshot(out)
    if committed:
        assert after == new
    if after == old:
        assert replan.has_changes
        apply_plan(replan)
    assert snapshot(out) == new
    assert state_residue(out) == set()
    assert not plan_for(NEW, out).needs_apply


@pytest.mark.parametrize("op", CRASH_OPS)
def test_io_error_at_every_step_leaves_old_or_new_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, op: str
) -> None:
    def crash() -> None:
        raise InjectedIOError(f"injected failure of os.{op}")

    for k in itertools.count():
        assert k < 500, "apply never completed"
        out = tmp_path / f"run{k}"
        old, plan = prepare(out)
        with monkeypatch.context() as patch:
            patch.setattr(os, op, failing_after(getattr(os, op), k, crash))
            try:
                apply_plan(plan)
                failed = False
            except OutputError:
                failed = True
        check_after_crash(out, old)
        if not failed:
            break


@pytest.mark.parametrize("op", CRASH_OPS)
def test_kill_at_every_step_leaves_old_or_new_tree(tmp_path: Path, op: str) -> None:
    """A real crash: the child process dies (os._exit) inside the k-th call, no handler or finally runs."""
    for k in itertools.count():
        assert k < 500, "apply never completed"
        out = tmp_path / f"run{k}"
        old, plan = prepare(out)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                setattr(os, op, failing_after(getattr(os, op), k, lambda: os._exit(17)))
                apply_plan(plan)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) in (0, 17)
        check_after_crash(out, old)
        if os.WEXITSTATUS(status) == 0:
            break


def test_crash_during_staging_leaves_old_tree_and_no_residue(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old, plan = prepare(out)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child: dies after staging the first file
        try:
            os.fsync = failing_after(os.fsync, 1, lambda: os._exit(17))
            apply_plan(plan)
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 17
    assert snapshot(out) == old
    assert any(n.startswith("staging-") for n in state_residue(out))

    replan = plan_for(NEW, out)

    assert state_residue(out) == set() and snapshot(out) == old
    assert replan.has_changes
    apply_plan(replan)
    assert snapshot(out) == expected_tree(NEW, USER)


# --- properties -------------------------------------------------------------------------------------------

# File names never equal directory names, so any subset is a valid artifact set; user files are named u.txt.
_UNIVERSE = [
    "/".join((*dirs, name))
    for depth in range(3)
    for dirs in itertools.product(["d1", "d2"], repeat=depth)
    for name in ("f1.txt", "f2.sh")
]
_USER = {"u.txt": b"user", "d1/u.txt": b"user in a fabricgen dir"}
artifact_sets = st.dictionaries(
    st.sampled_from(_UNIVERSE), st.tuples(st.binary(max_size=6), st.sampled_from([0o644, 0o755])), max_size=8
).map(lambda d: [Artifact(p, c, m) for p, (c, m) in sorted(d.items())])


@settings(max_examples=40, deadline=None)
@given(artifact_sets)
def test_property_second_apply_is_a_no_op(artifacts: list[Artifact]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        write_user_files(out, _USER)
        apply_all(artifacts, out)
        before = mtimes(out)

        plan = plan_for(artifacts, out)

        assert all(c.action is Action.UNCHANGED for c in plan.changes) and not plan.needs_apply
        assert not apply_plan(plan).changed and mtimes(out) == before


@settings(max_examples=60, deadline=None)
@given(artifact_sets, artifact_sets)
def test_property_apply_a_then_b_equals_b(first: list[Artifact], second: list[Artifact]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        write_user_files(out, _USER)
        apply_all(first, out)
        apply_all(second, out)

        assert snapshot(out) == expected_tree(second, _USER)
        assert not plan_for(second, out).needs_apply


@pytest.mark.parametrize(("version", "dropped"), [(1, ("inputs", "cluster", "owners")), (2, ("cluster", "owners")),
                                                  (3, ("owners",))])
def test_an_older_lock_is_read_and_rewritten(tmp_path: Path, version: int, dropped: tuple[str, ...]) -> None:
    """Before the input digest (lock_version 1), the cluster's identity (2) or the directories' owners (3): still
    fabricgen's files, never refused as another cluster's; the next apply writes version 4 with the cluster."""
    out = tmp_path / "out"
    artifacts = [art("a.txt", "a")]
    apply_all(artifacts, out)
    doc = json.loads((out / LOCK_FILE).read_text())
    for key in dropped:
        del doc[key]
    (out / LOCK_FILE).write_text(json.dumps({**doc, "lock_version": version}))

    plan = compute_plan(artifacts, out, spec_digest=DIGEST, tool_version=VERSION, cluster=LAB)
    assert plan.other_cluster is None
    apply_plan(plan)

    assert not plan.has_changes and plan.lock_changed
    doc = json.loads((out / LOCK_FILE).read_text())
    assert (doc["lock_version"], doc["cluster"]) == (4, {"name": "lab-1su", "site": "lab"})


LAB, H100 = ClusterId("lab-1su", "lab"), ClusterId("sp-h100-a", "dc1")


def test_another_clusters_out_is_refused_unless_forced(tmp_path: Path) -> None:
    """Review D11: OUT's lock names the cluster it holds; a plan of another one is refused (by plan and by apply,
    under its lock too), naming both and --force, and replaces it only when forced."""
    out = tmp_path / "out"
    apply_plan(compute_plan([art("a.txt", "h100")], out, spec_digest=DIGEST, tool_version=VERSION, cluster=H100))
    before = snapshot(out)
    other = compute_plan([art("b.txt", "lab")], out, spec_digest=DIGEST, tool_version=VERSION, cluster=LAB)
    assert other.other_cluster == H100
    with pytest.raises(OutputError) as refused:
        refuse_other_cluster(other, force=False)
    assert str(refused.value) == (
        f"{out} holds cluster sp-h100-a at dc1 (its lock file says so); this spec is cluster lab-1su at lab: planning "
        "it there would replace every file of sp-h100-a. Give another output directory (-o OUT); if this spec is "
        "sp-h100-a renamed (its name or site changed), plan and apply with --renamed-from sp-h100-a@dc1; --force "
        "replaces any cluster's files, and files fabricgen did not create")
    with pytest.raises(OutputError, match="holds cluster sp-h100-a at dc1"):
        apply_plan(other)
    assert snapshot(out) == before
    # the same name at another site is another cluster; the same name and site is this one
    assert compute_plan([], out, spec_digest=DIGEST, tool_version=VERSION,
                        cluster=ClusterId("sp-h100-a", "dc2")).other_cluster == H100
    assert compute_plan([], out, spec_digest=DIGEST, tool_version=VERSION, cluster=H100).other_cluster is None
    refuse_other_cluster(other, force=True)
    apply_plan(other, force=True)
    assert sorted(snapshot(out)[0]) == ["b.txt", LOCK_FILE]  # a.txt, the other cluster's, deleted
    assert json.loads((out / LOCK_FILE).read_text())["cluster"] == {"name": "lab-1su", "site": "lab"}


def test_staging_is_flat_one_file_per_write_in_journal_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Staging makes no directory but its own: the journal's i-th write waits as file <i> (a copy of OUT's tree made,
    synced and removed ~2,200 directories at 16k GPUs)."""
    out = tmp_path / "out"
    _, plan = prepare(out)
    seen: dict[str, list[str]] = {}
    real_finish = journal_module.finish

    def look_first(state: Any, journal: Any) -> bool:  # just after the commit point, before the roll-forward
        staging = out / STATE_DIR / journal.staging
        seen["staged"] = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*"))
        seen["writes"] = [e.path for e in journal.writes]
        committed = json.loads((out / STATE_DIR / JOURNAL_FILE).read_text())
        seen["format"] = [committed["journal_version"]]
        for i, entry in enumerate(journal.writes):
            assert (staging / str(i)).read_bytes() == next(a.content for a in NEW if a.path == entry.path)
        return real_finish(state, journal)

    monkeypatch.setattr(apply_module, "finish", look_first)
    apply_plan(plan)
    assert seen["format"] == [2]
    assert seen["staged"] == sorted(str(i) for i in range(len(seen["writes"])))
    assert snapshot(out) == expected_tree(NEW, USER)


def test_a_format_1_journal_left_by_an_earlier_fabricgen_is_finished(tmp_path: Path) -> None:
    """An apply killed after its commit point by a fabricgen that staged files under their own paths (journal
    format 1) is rolled forward by this one."""
    out = tmp_path / "out"
    old, plan = prepare(out)
    staging = out / STATE_DIR / "staging-0123456789abcdef"
    for artifact in plan.writes:
        (staging / artifact.path).parent.mkdir(parents=True, exist_ok=True)
        (staging / artifact.path).write_bytes(artifact.content)
        (staging / artifact.path).chmod(artifact.mode)
    journal = {"deletions": list(plan.deletions), "journal_version": 1, "lock": plan.lock.to_bytes().decode(),
               "staging": staging.name,
               "writes": [{"mode": f"{a.mode:04o}", "path": a.path, "sha256": a.sha256} for a in plan.writes]}
    (out / STATE_DIR / JOURNAL_FILE).write_text(json.dumps(journal))
    assert snapshot(out) == old
    assert recover(out)
    assert snapshot(out) == expected_tree(NEW, USER)
    assert state_residue(out) == set()
    assert not plan_for(NEW, out).needs_apply


def test_a_renamed_cluster_adopts_out_by_the_name_it_held(tmp_path: Path) -> None:
    """Review D11: ``renamed_from`` lets exactly the cluster OUT's lock names be taken over (under apply's lock too);
    it keeps the refusal of files fabricgen did not create, which only ``force`` lifts."""
    out = tmp_path / "out"
    apply_plan(compute_plan([art("a.txt", "h100")], out, spec_digest=DIGEST, tool_version=VERSION, cluster=H100))
    (out / "user.txt").write_text("mine")
    before = snapshot(out)
    renamed = compute_plan([art("a.txt", "renamed"), art("user.txt", "ours")], out, spec_digest=DIGEST,
                           tool_version=VERSION, cluster=LAB)
    for wrong in ("sp-h100-a", "sp-h100-a@dc2", "lab-1su@lab"):
        with pytest.raises(OutputError, match=f"not {wrong}: --renamed-from names the cluster OUT holds, here "
                                              "--renamed-from sp-h100-a@dc1"):
            apply_plan(renamed, renamed_from=wrong)
    refuse_other_cluster(renamed, force=False, renamed_from="sp-h100-a@dc1")
    with pytest.raises(OutputError, match=r"not created by fabricgen: user\.txt"):
        apply_plan(renamed, renamed_from="sp-h100-a@dc1")
    assert snapshot(out) == before
    (out / "user.txt").unlink()
    apply_plan(compute_plan([art("a.txt", "renamed")], out, spec_digest=DIGEST, tool_version=VERSION, cluster=LAB),
               renamed_from="sp-h100-a@dc1")
    assert (out / "a.txt").read_text() == "renamed"
    assert json.loads((out / LOCK_FILE).read_text())["cluster"] == {"name": "lab-1su", "site": "lab"}


def test_a_directory_keeps_its_owner_after_it_is_rendered_no_more(tmp_path: Path) -> None:
    """The lock records what each directory of per-device files belongs to; a plan that no longer renders one (its
    node removed) still knows it from the last apply's lock, and its own lock records only what it renders."""
    out = tmp_path / "out"
    owners = (("hosts/n1", "node"), ("hosts/n2", "node"), ("hosts/p", "node profile"))
    apply_plan(compute_plan([art("hosts/n1/a", "1"), art("hosts/n2/a", "2"), art("hosts/p/b", "p")], out,
                            spec_digest=DIGEST, tool_version=VERSION, owners=owners))
    assert json.loads((out / LOCK_FILE).read_text())["owners"] == dict(owners)
    shrunk = compute_plan([art("hosts/n1/a", "1"), art("hosts/p/b", "p")], out, spec_digest=DIGEST,
                          tool_version=VERSION, owners=(owners[0], owners[2]))
    assert shrunk.deletions == ("hosts/n2/a",) and shrunk.owners == dict(owners)
    apply_plan(shrunk)
    assert json.loads((out / LOCK_FILE).read_text())["owners"] == {"hosts/n1": "node", "hosts/p": "node profile"}


def test_renamed_from_with_nothing_to_adopt_is_a_warning(tmp_path: Path) -> None:
    """``--renamed-from`` adopts nothing where OUT's lock names this cluster already, or no lock names any (none
    yet): a warning says it can be dropped; where it adopts, or is not given, none."""
    out = tmp_path / "out"

    def plan(cluster: ClusterId = LAB) -> Plan:
        return compute_plan([art("a.txt", "x")], out, spec_digest=DIGEST, tool_version=VERSION, cluster=cluster)

    fresh = unused_renamed_from(plan(), "sp-h100-a@dc1")
    assert fresh is not None and fresh.message == f"{out} holds no cluster's lock file yet: --renamed-from " \
        "sp-h100-a@dc1 has nothing to adopt"
    apply_plan(plan(H100))
    assert unused_renamed_from(plan(), "sp-h100-a@dc1") is None  # it adopts sp-h100-a's OUT
    apply_plan(plan(), renamed_from="sp-h100-a@dc1")
    done = unused_renamed_from(plan(), "sp-h100-a@dc1")
    assert done is not None and (done.severity, done.check, done.subject) == (
        Severity.WARNING, "renamed-from", "--renamed-from")
    assert f"{out} holds cluster {LAB} already (its lock file says so)" in done.message and done.hint
    assert unused_renamed_from(plan(), "") is None
