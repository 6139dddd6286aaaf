"""Negative cases as data: each ``tests/negative/<case>.yaml`` must be refused with ``<case>.expected``.

Each case is a small spec derived from ``inventories/lab-1su.yaml`` whose first line says why it is wrong
(``# why: ...``); its ``.expected`` file holds ``str()`` of the raised error followed by one newline. Tests
run with the repository root as working directory and pass relative paths, so reports are stable.

Regenerate with ``pytest tests/test_negative.py --update-goldens`` and review the diff: a wrong message is a
bug to report, not a golden to accept. Cases in :data:`KNOWN_BUGS` hold the report they *should* give
(hand-written, never rewritten by ``--update-goldens``) and are expected to fail until the tool is fixed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.core.errors import FabricgenError, SpecError
from fabricgen.pipeline import compile_spec
from fabricgen.spec.load import MAX_SPEC_BYTES

REPO = Path(__file__).resolve().parent.parent
NEGATIVE = Path("tests/negative")  # relative to REPO, the working directory of every test here
CASES = sorted(p.stem for p in (REPO / NEGATIVE).glob("*.yaml"))

# Tool bugs shown by a case. Its .expected is the report the tool should give (a fix may word it differently:
# then regenerate that file and drop the entry). strict: a fixed bug fails the suite until it is removed here.
KNOWN_BUGS: dict[str, str] = {}

# A report line points into the spec or into an inventory file it names (tests/negative/data/).
POSITION = re.compile(r"^tests/negative/(data/)?[a-z0-9-]+\.(yaml|csv):[1-9][0-9]*:[1-9][0-9]*: \S")
# Signs that Python internals leaked into a report: tracebacks, exception names, reprs, PyYAML stream names.
INTERNALS = re.compile(
    r"Traceback|File \"|\b\w*(Error|Exception)\b|NoneType|object at 0x|<unicode string>|\{'|\['"
)

runner = CliRunner()


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def _case(name: str) -> Any:
    marks = [pytest.mark.xfail(reason=KNOWN_BUGS[name], strict=True)] if name in KNOWN_BUGS else []
    return pytest.param(name, marks=marks, id=name)


def _report(spec: Path) -> str:
    with pytest.raises(FabricgenError) as info:
        compile_spec(spec)
    return str(info.value)


def test_cases_are_documented() -> None:
    assert len(CASES) >= 34
    for case in CASES:
        spec = REPO / NEGATIVE / f"{case}.yaml"
        first = spec.read_bytes().split(b"\n", 1)[0].decode("ascii")
        assert re.fullmatch(r"# why: \S.*", first), f"{spec.name}: first line must be '# why: <reason>'"
        assert spec.with_suffix(".expected").is_file(), f"{case}.expected is missing (run --update-goldens)"
    orphans = {p.stem for p in (REPO / NEGATIVE).glob("*.expected")} - set(CASES)
    assert not orphans, f".expected files without a spec: {sorted(orphans)}"
    assert set(KNOWN_BUGS) <= set(CASES)


@pytest.mark.parametrize("case", [_case(c) for c in CASES])
def test_negative_case(case: str, update_goldens: bool) -> None:
    spec = NEGATIVE / f"{case}.yaml"
    report = _report(spec)
    lines = report.split("\n")
    assert report, "empty report"
    assert all(POSITION.match(line) for line in lines), f"a report line lacks file:line:col:\n{report}"
    assert not INTERNALS.search(report), f"Python internals leaked into the report:\n{report}"
    assert len(set(lines)) == len(lines), f"the report repeats a line:\n{report}"
    expected = spec.with_suffix(".expected")
    if update_goldens and case not in KNOWN_BUGS:
        expected.write_text(report + "\n", encoding="utf-8")
        return
    assert report + "\n" == expected.read_text(encoding="utf-8")


def test_spec_above_size_limit(tmp_path: Path) -> None:
    """A spec above the size limit is refused before parsing (generated here: 16 MiB is not committed)."""
    big = tmp_path / "big.yaml"
    head = (REPO / "inventories/lab-1su.yaml").read_bytes()
    pad = b"#" + b" padding" * 127 + b"\n"  # 1 KiB comment lines: still a valid spec, only too large
    with big.open("wb") as f:
        f.write(head)
        f.write(pad * ((MAX_SPEC_BYTES - len(head)) // len(pad) + 1))
    size = big.stat().st_size
    assert size > MAX_SPEC_BYTES
    with pytest.raises(SpecError) as info:
        compile_spec(big)
    assert str(info.value) == f"{big}: spec is {size} bytes, above the {MAX_SPEC_BYTES} byte limit"


def test_cli_validate_json_exit_codes() -> None:
    spec = "tests/negative/unknown-switch-model.yaml"
    bad = runner.invoke(app, ["validate", "--format", "json", spec])
    assert bad.exit_code == 1, bad.output
    problem = {"severity": "error", "file": spec, "line": 19, "column": 13, "path": "fabrics.compute.switch",
               "message": "unknown switch model 'QM9701'", "hint": "did you mean 'QM9700'?"}
    assert json.loads(bad.stdout) == [{"file": spec, "valid": False, "problems": [problem]}]
    good = runner.invoke(app, ["validate", "--format", "json", "inventories/lab-1su.yaml"])
    assert good.exit_code == 0, good.output
    (report,) = json.loads(good.stdout)
    # valid with warnings only: lab-1su's storage fabric is dual-homed, its lab nodes have one port on it
    assert (report["file"], report["valid"]) == ("inventories/lab-1su.yaml", True)
    assert {(p["severity"], p["check"]) for p in report["problems"]} == {("warning", "dual-homing")}
    # the bundled example a newcomer runs first (`make plan`) is clean
    clean = runner.invoke(app, ["validate", "--format", "json", "inventories/h100-4su.yaml"])
    assert json.loads(clean.stdout) == [{"file": "inventories/h100-4su.yaml", "valid": True, "problems": []}]
    both = runner.invoke(app, ["validate", "--format", "json", "inventories/lab-1su.yaml",
                               "tests/negative/rack-overflow.yaml"])
    assert both.exit_code == 1, both.output
    assert [r["valid"] for r in json.loads(both.stdout)] == [True, False]


@pytest.mark.parametrize("command", [["plan"], ["apply", "--yes"]])
def test_cli_bad_spec_writes_nothing(command: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, [*command, "tests/negative/rack-overflow.yaml", "-o", str(out)])
    assert result.exit_code == 1, result.output
    assert "do not fit in their racks" in result.stderr
    assert "nothing was written" in result.stderr
    assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.rglob("*"))
    assert [p.name for p in tmp_path.iterdir()] in ([], ["out"])


def test_cli_github_annotations() -> None:
    specs = ["tests/negative/several-errors-at-once.yaml", "tests/negative/unknown-switch-model.yaml"]
    result = runner.invoke(app, ["validate", "--format", "github", *specs])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    assert all(line.startswith("::error file=tests/negative/") for line in lines), lines
    assert lines[0] == (
        "::error file=tests/negative/several-errors-at-once.yaml,line=5,col=9,title=fabricgen::"
        "metadata.name: 'Lab_1su' is not a valid name here (hint: lower-case letters, digits and '-', "
        "1-63 characters, no leading or trailing '-')"
    )
    assert lines[3] == (
        "::error file=tests/negative/unknown-switch-model.yaml,line=19,col=13,title=fabricgen::"
        "fabrics.compute.switch: unknown switch model 'QM9701' (hint: did you mean 'QM9700'?)"
    )
    warned = runner.invoke(app, ["validate", "--format", "github", "inventories/lab-1su.yaml"])
    assert warned.exit_code == 0, warned.output
    assert warned.stdout and all(line.startswith("::warning file=inventories/lab-1su.yaml,")
                                 for line in warned.stdout.splitlines()), "warnings only: exit 0"
