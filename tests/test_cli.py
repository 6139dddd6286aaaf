"""The CLI contract: exit codes, plan markers and summary, JSON output, apply idempotence, schema, init."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

LAB = str(INVENTORIES / "lab-1su.yaml")
ARTIFACTS = len(render_spec(compile_spec(Path(LAB))))
runner = CliRunner()


def test_plan_detailed_exitcode_and_idempotent_apply(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = runner.invoke(app, ["plan", LAB, "-o", str(out), "--detailed-exitcode"])
    assert first.exit_code == 2, first.output
    assert "+ topology/compute.json" in first.output
    assert f"{ARTIFACTS} to create, 0 to update, 0 to delete" in first.output
    assert not out.exists(), "plan must not write"
    applied = runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"])
    assert applied.exit_code == 0, applied.output
    lock = (out / "fabricgen.lock.json").read_bytes()
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*.json")}
    again = runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"])
    assert again.exit_code == 0 and "No changes" in again.output
    assert (out / "fabricgen.lock.json").read_bytes() == lock
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*.json")} == mtimes
    settled = runner.invoke(app, ["plan", LAB, "-o", str(out), "--detailed-exitcode"])
    assert settled.exit_code == 0, settled.output


def test_plan_json_and_drift(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    edited = out / "topology" / "summary.yaml"
    edited.write_text(edited.read_text() + "# hand edit\n")
    result = runner.invoke(app, ["plan", LAB, "-o", str(out), "--json"])
    data = json.loads(result.stdout)
    assert data["summary"] == {"create": 0, "update": 1, "delete": 0, "unchanged": ARTIFACTS - 1}
    change = next(c for c in data["changes"] if c["path"] == "topology/summary.yaml")
    assert change["action"] == "update" and change["drift"] is True


def test_apply_without_yes_off_a_terminal_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["apply", LAB, "-o", str(out)])
    assert result.exit_code == 1
    assert "--yes" in result.output
    assert not (out / "fabricgen.lock.json").exists()


def test_explain_json_counts() -> None:
    result = runner.invoke(app, ["explain", str(INVENTORIES / "h100-4su.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    compute = next(f for f in summary["fabrics"] if f["name"] == "compute")
    assert compute["switches"] == {"leaf": 32, "spine": 16}
    assert compute["links"] == {"node-leaf": 1020, "leaf-spine": 1024}
    assert compute["oversubscription"] == 1.0
    assert summary["gpus"] == 1016


def test_schema_is_valid_json_schema() -> None:
    from jsonschema import Draft202012Validator

    result = runner.invoke(app, ["schema"])
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert set(schema["$defs"]) >= {"facility", "fabrics", "nodes", "node_profiles", "catalog", "metadata"}
    # The bundle is self-contained: a stock validator with no registry resolves every $ref inside it.
    import yaml

    spec = yaml.safe_load((INVENTORIES / "h100-4su.yaml").read_text())
    assert list(Draft202012Validator(schema).iter_errors(spec)) == []
    spec["fabrics"]["compute"]["speed"] = "NDX"
    assert len(list(Draft202012Validator(schema).iter_errors(spec))) == 1


def test_init_presets_are_valid(tmp_path: Path) -> None:
    for preset in ("lab-1su", "h100-4su", "bench-16k"):
        target = tmp_path / f"{preset}.yaml"
        assert runner.invoke(app, ["init", "--preset", preset, "-o", str(target)]).exit_code == 0
        assert runner.invoke(app, ["validate", str(target)]).exit_code == 0
    assert runner.invoke(app, ["init", "--preset", "lab-1su", "-o", str(tmp_path / "lab-1su.yaml")]).exit_code == 1
    assert runner.invoke(app, ["init", "--preset", "nope"]).exit_code == 1


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.startswith("fabricgen ")
