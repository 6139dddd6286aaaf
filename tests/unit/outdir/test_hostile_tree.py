"""Plan and apply against a hostile OUT: symlinks planted before a run or between the commit point of an apply and
its roll-forward, a state directory that is a symlink or a file, pipes where files belong. Nothing outside OUT is
ever written or deleted, and the tree still ends old or new."""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from fabricgen.core.errors import OutputError
from fabricgen.outdir import apply as apply_module
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.journal import FLOCK_FILE, JOURNAL_FILE, STAGING_PREFIX, recover
from fabricgen.outdir.lock import LOCK_FILE, STATE_DIR
from tests.unit.outdir.test_plan_apply import (
    NEW,
    OLD,
    USER,
    apply_all,
    expected_tree,
    plan_for,
    snapshot,
    write_user_files,
)


class Interrupted(BaseException):
    """Stands in for a kill right after the commit point (the journal is written, nothing rolled forward)."""


def decoy(tmp_path: Path, files: dict[str, str]) -> Path:
    """A directory outside OUT whose every file must survive untouched."""
    root = tmp_path / "decoy"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    root.mkdir(exist_ok=True)
    return root


def listing(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() if p.is_file() else "<dir>" for p in sorted(root.rglob("*"))}


@pytest.fixture
def committed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OUT with OLD applied and NEW committed but not rolled forward."""
    out = tmp_path / "out"
    write_user_files(out, USER)
    apply_all(OLD, out)

    def killed(*_: object) -> bool:
        raise Interrupted

    with monkeypatch.context() as patch:
        patch.setattr(apply_module, "finish", killed)
        with pytest.raises(Interrupted):
            apply_plan(plan_for(NEW, out))
    assert (out / STATE_DIR / JOURNAL_FILE).is_file()
    return out


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A FIFO or device read without a bound would block forever: fail instead."""

    def timeout(_signum: int, _frame: FrameType | None) -> None:
        raise TimeoutError("blocked on a file in OUT")

    previous = signal.signal(signal.SIGALRM, timeout)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("action", ["plan", "apply"])
def test_symlinked_state_dir_is_refused_before_anything_is_touched(tmp_path: Path, action: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    outside = decoy(tmp_path, {"staging-abc/x": "someone else's", "tmp-1": "theirs", JOURNAL_FILE: "{}"})
    before = listing(outside)
    (out / STATE_DIR).symlink_to(outside)
    planned_elsewhere = dataclasses.replace(plan_for(NEW, tmp_path / "elsewhere"), out_dir=out)
    with pytest.raises(OutputError, match=r"\.fabricgen is a symlink"):
        if action == "plan":
            plan_for(NEW, out)
        else:
            apply_plan(planned_elsewhere)
    assert listing(outside) == before  # no apply.lock made, no staging removed, no journal finished
    assert sorted(p.name for p in out.iterdir()) == [STATE_DIR]


def test_state_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / STATE_DIR).write_text("not a directory")
    with pytest.raises(OutputError, match=r"\.fabricgen is not a directory"):
        apply_all(NEW, out)
    assert (out / STATE_DIR).read_text() == "not a directory"


def test_symlinked_apply_lock_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / STATE_DIR).mkdir(parents=True)
    outside = decoy(tmp_path, {})
    (out / STATE_DIR / FLOCK_FILE).symlink_to(outside / "created-through-the-link")
    with pytest.raises(OutputError, match=r"apply\.lock"):
        apply_all(NEW, out)
    assert listing(outside) == {}


def test_roll_forward_refuses_to_write_through_a_planted_directory_symlink(committed: Path, tmp_path: Path) -> None:
    out = committed
    outside = decoy(tmp_path, {"a/setup.sh": "theirs", "b/nccl.env": "theirs too"})
    before = listing(outside)
    (out / "hosts").rename(tmp_path / "hosts.moved")
    (out / "hosts").symlink_to(outside)

    with pytest.raises(OutputError, match="never writes through one"):
        recover(out)

    assert listing(outside) == before
    assert (out / STATE_DIR / JOURNAL_FILE).is_file(), "the journal stays until the way is clear"
    (out / "hosts").unlink()
    (tmp_path / "hosts.moved").rename(out / "hosts")
    assert recover(out)
    assert snapshot(out) == expected_tree(NEW, USER)


def test_roll_forward_leaves_a_deletion_behind_a_planted_symlink(committed: Path, tmp_path: Path) -> None:
    out = committed
    outside = decoy(tmp_path, {"deep/x.txt": "not fabricgen's"})
    (out / "gone").rename(tmp_path / "gone.moved")
    (out / "gone").symlink_to(outside)

    assert recover(out)

    assert listing(outside) == {"deep": "<dir>", "deep/x.txt": "not fabricgen's"}
    assert (out / "gone").is_symlink()
    (out / "gone").unlink()
    assert snapshot(out) == expected_tree(NEW, USER)


def test_roll_forward_replaces_a_planted_file_symlink_without_following_it(committed: Path, tmp_path: Path) -> None:
    out = committed
    outside = decoy(tmp_path, {"target": "theirs", "lock": "their lock"})
    (out / "hosts/a/setup.sh").unlink()
    (out / "hosts/a/setup.sh").symlink_to(outside / "target")
    (out / LOCK_FILE).unlink()
    (out / LOCK_FILE).symlink_to(outside / "lock")

    assert recover(out)

    assert listing(outside) == {"lock": "their lock", "target": "theirs"}
    assert not (out / "hosts/a/setup.sh").is_symlink() and not (out / LOCK_FILE).is_symlink()
    assert snapshot(out) == expected_tree(NEW, USER)


def test_a_staging_dir_swapped_for_a_symlink_is_never_moved_from(committed: Path, tmp_path: Path) -> None:
    out = committed
    staging = next(p for p in (out / STATE_DIR).iterdir() if p.name.startswith(STAGING_PREFIX))
    outside = decoy(tmp_path, {"conf/main.yaml": "planted", "hosts/a/setup.sh": "planted", "new/dir/file.txt": "x"})
    before = listing(outside)
    staging.rename(tmp_path / "staging.moved")
    staging.symlink_to(outside)

    with pytest.raises(OutputError, match=r"staged copy of .* is gone"):
        recover(out)

    assert listing(outside) == before
    assert not (out / "conf").is_dir() or not (out / "conf/main.yaml").exists()


def test_pipes_in_out_do_not_block_plan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "conf")
    plan = plan_for([*OLD[1:], OLD[0]], out)
    change = next(c for c in plan.changes if c.path == "conf")
    assert change.unmanaged and change.reason == "not created by fabricgen"
    os.mkfifo(out / LOCK_FILE)
    with pytest.raises(OutputError, match="corrupt lock file"):
        plan_for(OLD, out)
