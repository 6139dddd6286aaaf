"""The adversarial pass: every node of every example spec mutated with type confusion, extremes and hostile strings,
plus file-system tricks on OUT, each applied through the CLI into a fresh OUT; prints the counts, every broken
invariant and the run time per case (measured, not asserted: tests/test_fuzz.py asserts the invariants on a sample).

    .venv/bin/python bench/adversarial.py [--examples lab-1su,h100-4su] [--workers 2]
                                          [--json bench/results/adversarial.json]

The invariants (tests/helpers/hostile.py): exit 0 or 1, never a traceback; a refused spec gets a report whose every
problem has file:line:col and no control character, no secret, and OUT untouched; an accepted one has no hostile
string in an artifact's path or in a script, unit, config or env file. The file-system cases check that nothing
outside OUT changes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.helpers.hostile import (  # noqa: E402
    HOSTILE_STRINGS,
    Outcome,
    dump,
    leaves,
    mutations,
    renamed_key,
    replaced,
    run_case,
)

from fabricgen.cli import app  # noqa: E402
from fabricgen.spec.validate import secret_keys  # noqa: E402

EXAMPLES = ("lab-1su", "h100-4su", "aws-p5-efa", "alicloud-erdma")  # bench-16k is the same shapes at 16k GPUs
KEY_NAMES = ("x\n$(touch PWNED)", "../PWNED", "UPPER", "a" * 200, "[bold]k", "")


def cases(example: str) -> Iterator[tuple[str, str, str]]:
    """(name, spec text, secret) for every node x mutation, and hostile names for every mapping key."""
    data = yaml.safe_load((REPO / "inventories" / f"{example}.yaml").read_text(encoding="utf-8"))
    secrets = secret_keys()
    for path, value in leaves(data):
        secret = any(isinstance(p, str) and p in secrets for p in path)
        for index, mutation in enumerate(mutations(value)):
            text = dump(replaced(data, path, mutation))
            shown = mutation if secret and isinstance(mutation, str) else ""
            yield f"{example}:{'.'.join(map(str, path))}#{index}", text, shown
        if path and isinstance(path[-1], str):
            for index, name in enumerate(KEY_NAMES):
                yield f"{example}:{'.'.join(map(str, path))}@key{index}", dump(renamed_key(data, path, name)), ""


def _run(batch: list[tuple[str, str, str]]) -> list[Outcome]:
    runner = CliRunner()
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, text, secret) in enumerate(batch):
            work = Path(tmp) / str(i)
            work.mkdir()
            out.append(run_case(name, text, work, runner, secret))
    return out


# -- file-system tricks on OUT ----------------------------------------------------------------------------------
def _decoy(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else b"<dir>" for p in root.rglob("*")}


def _apply(spec: Path, out: Path) -> Any:
    return CliRunner().invoke(app, ["apply", str(spec), "-o", str(out), "--yes"])


def fs_cases() -> Iterator[tuple[str, Callable[[Path, Path, Path], None]]]:
    """(name, setup(out, decoy, spec)); the case then runs plan and apply and checks the decoy is untouched."""

    def state_symlink(out: Path, decoy: Path, spec: Path) -> None:
        out.mkdir()
        (decoy / "staging-x").mkdir()
        (decoy / "staging-x" / "f").write_text("theirs")
        (decoy / "journal.json").write_text('{"journal_version": 1}')
        (out / ".fabricgen").symlink_to(decoy)

    def state_file(out: Path, decoy: Path, spec: Path) -> None:
        out.mkdir()
        (out / ".fabricgen").write_text("x")

    def flock_symlink(out: Path, decoy: Path, spec: Path) -> None:
        (out / ".fabricgen").mkdir(parents=True)
        (out / ".fabricgen" / "apply.lock").symlink_to(decoy / "made-through-link")

    def applied_then(plant: Callable[[Path, Path], None]) -> Callable[[Path, Path, Path], None]:
        def setup(out: Path, decoy: Path, spec: Path) -> None:
            assert _apply(spec, out).exit_code == 0
            plant(out, decoy)
        return setup

    def dir_symlink(out: Path, decoy: Path) -> None:
        victim = next(p for p in sorted(out.iterdir()) if p.is_dir() and p.name != ".fabricgen")
        for f in victim.rglob("*"):
            target = decoy / f.relative_to(victim)
            target.parent.mkdir(parents=True, exist_ok=True)
            if f.is_file():
                target.write_text("theirs")
        victim.rename(out.parent / "moved")
        victim.symlink_to(decoy)

    def file_symlink(out: Path, decoy: Path) -> None:
        victim = next(p for p in sorted(out.rglob("*.csv")))
        (decoy / "target").write_text("theirs")
        victim.unlink()
        victim.symlink_to(decoy / "target")

    def lock_symlink(out: Path, decoy: Path) -> None:
        (decoy / "lock").write_text("theirs")
        (out / "fabricgen.lock.json").unlink()
        (out / "fabricgen.lock.json").symlink_to(decoy / "lock")

    def fifo_artifact(out: Path, decoy: Path) -> None:
        victim = next(p for p in sorted(out.rglob("*.csv")))
        victim.unlink()
        os.mkfifo(victim)

    def fifo_lock(out: Path, decoy: Path) -> None:
        (out / "fabricgen.lock.json").unlink()
        os.mkfifo(out / "fabricgen.lock.json")

    def residue_symlink(out: Path, decoy: Path) -> None:
        (decoy / "keep").write_text("theirs")
        (out / ".fabricgen" / "staging-evil").symlink_to(decoy)
        (out / ".fabricgen" / "tmp-evil").symlink_to(decoy / "keep")

    yield "state dir is a symlink", state_symlink
    yield "state dir is a file", state_file
    yield "apply.lock is a symlink", flock_symlink
    yield "a directory swapped for a symlink", applied_then(dir_symlink)
    yield "an artifact swapped for a symlink", applied_then(file_symlink)
    yield "the lock swapped for a symlink", applied_then(lock_symlink)
    yield "a FIFO where an artifact is", applied_then(fifo_artifact)
    yield "a FIFO as the lock", applied_then(fifo_lock)
    yield "residue names that are symlinks", applied_then(residue_symlink)


def run_fs_case(name: str, setup: Callable[[Path, Path, Path], None]) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        spec, out, decoy = root / "spec.yaml", root / "out", root / "decoy"
        spec.write_bytes((REPO / "inventories/lab-1su.yaml").read_bytes())
        decoy.mkdir()
        setup(out, decoy, spec)
        before = _decoy(decoy)
        started = time.perf_counter()
        results = [CliRunner().invoke(app, ["plan", str(spec), "-o", str(out)]), _apply(spec, out)]
        seconds = time.perf_counter() - started
        problem = ""
        for result in results:
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                problem = f"traceback: {type(result.exception).__name__}: {result.exception}"
            elif result.exit_code not in (0, 1):
                problem = f"exit {result.exit_code}"
        if _decoy(decoy) != before:
            problem = "a file outside OUT changed"
        return Outcome(f"fs: {name}", results[-1].exit_code, seconds, problem)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", default=",".join(EXAMPLES))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results" / "adversarial.json")
    args = parser.parse_args()
    every = [case for example in args.examples.split(",") for case in cases(example)]
    batches = [every[i::args.workers * 8] for i in range(args.workers * 8)]
    outcomes: list[Outcome] = []
    with ProcessPoolExecutor(args.workers) as pool:
        for done in pool.map(_run, batches):
            outcomes.extend(done)
    outcomes += [run_fs_case(name, setup) for name, setup in fs_cases()]
    report(outcomes)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1) + "\n", encoding="utf-8")
    return 1 if any(o.problem for o in outcomes) else 0


def report(outcomes: list[Outcome]) -> None:
    by_example: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_example.setdefault(o.name.split(":")[0], []).append(o)
    print("| cases of | cases | exit 0 | exit 1 | broken invariants | median s | p99 s | max s |")
    print("|---|---|---|---|---|---|---|---|")
    for example, group in by_example.items():
        times = sorted(o.seconds for o in group)
        codes = Counter(o.exit_code for o in group)
        print(f"| {example} | {len(group)} | {codes[0]} | {codes[1]} | {sum(bool(o.problem) for o in group)} | "
              f"{statistics.median(times):.3f} | {times[int(len(times) * 0.99) - 1 if len(times) > 1 else 0]:.3f} | "
              f"{times[-1]:.3f} |")
    slowest = max(outcomes, key=lambda o: o.seconds)
    print(f"slowest case: {slowest.name} ({slowest.seconds:.2f} s); hostile strings tried: {len(HOSTILE_STRINGS)}")
    for o in outcomes:
        if o.problem:
            print(f"BROKEN {o.name}: {o.problem}")


if __name__ == "__main__":
    sys.exit(main())
