"""What plan says changes inside files: table rows by their declared identity, lines elsewhere, saved plans."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact, Table
from fabricgen.core.errors import OutputError
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.changes import describe
from fabricgen.outdir.plan import Action, Plan, compute_plan

CABLES = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", parts=(("port", "{a}"), ("port", "{z}")),
               derived=("label",))
HEADER = "id,a,z,length,label\n"


def _plan(out: Path, files: dict[str, str]) -> Plan:
    artifacts = [Artifact(path, text.encode()) for path, text in files.items()]
    return compute_plan(artifacts, out, spec_digest="s", tool_version="t")


def _applied(out: Path, files: dict[str, str]) -> None:
    apply_plan(_plan(out, files))


def test_rows_by_identity_not_by_position(tmp_path: Path) -> None:
    _applied(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,3,c1 n1:1\nc2,n2:1,l1:2,3,c2 n2:1\nc3,n3:1,l1:3,5,x\n"})
    plan = _plan(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,3,c1 n1:1\nc2,n3:1,l1:3,7,c2 n3:1\n"
                                            "c3,n4:1,l1:4,3,c3\n"})
    (diff,) = describe(plan, [CABLES])
    rows = {(r.action, r.subject): r for r in diff.rows}
    assert set(rows) == {(Action.CREATE, "n4:1 <-> l1:4"), (Action.DELETE, "n2:1 <-> l1:2"),
                         (Action.UPDATE, "n3:1 <-> l1:3")}
    changed = rows[(Action.UPDATE, "n3:1 <-> l1:3")]
    assert changed.fields == (("id", "c3", "c2"), ("length", "5", "7"), ("label", "x", "c2 n3:1"))
    assert changed.shown_fields == (("id", "c3", "c2"), ("length", "5", "7"))
    assert diff.parts == {"port": (2, 2)}


def test_other_files_by_lines_binary_and_created_tables(tmp_path: Path) -> None:
    _applied(tmp_path, {"a.conf": "x\ny\nz\n", "b.bin": "\0\1", "t/cables.csv": "other,columns\n1,2\n"})
    plan = _plan(tmp_path, {"a.conf": "x\nz\nw\nv\n", "b.bin": "\0\2", "t/cables.csv": "other,columns\n1,3\n",
                            "new.conf": "1\n2\n", "t/x/cables.csv": "a,z\n"})
    diffs = {d.change.path: d for d in describe(plan, [CABLES, Table("t/x/*", "cable", ("a", "z"), "{a}")])}
    assert diffs["a.conf"].lines == (2, 1)
    assert "-y" in diffs["a.conf"].unified() and "+w" in diffs["a.conf"].unified()
    assert diffs["b.bin"].binary and diffs["b.bin"].unified() == []
    assert diffs["t/cables.csv"].noun == "" and diffs["t/cables.csv"].lines == (1, 1)  # no key columns: lines
    assert diffs["new.conf"].lines == (2, 0)
    assert (diffs["t/x/cables.csv"].noun, diffs["t/x/cables.csv"].whole) == ("cable", 0)


def test_state_digest_changes_with_out(tmp_path: Path) -> None:
    _applied(tmp_path, {"a.conf": "1\n"})
    first = _plan(tmp_path, {"a.conf": "2\n"})
    assert _plan(tmp_path, {"a.conf": "2\n"}).state_digest == first.state_digest
    (tmp_path / "a.conf").write_text("hand edit\n")
    later = _plan(tmp_path, {"a.conf": "2\n"})
    assert later.state_digest != first.state_digest and later.outputs_digest == first.outputs_digest
    with pytest.raises(OutputError, match="changed since the plan was saved"):
        apply_plan(later, expected_state=first.state_digest)
    assert (tmp_path / "a.conf").read_text() == "hand edit\n"
    apply_plan(later, expected_state=later.state_digest)
    assert (tmp_path / "a.conf").read_text() == "2\n"


def test_switch_configs_by_entry(tmp_path: Path) -> None:
    """U9: a switch's config_db.json by SONiC's TABLE|key and NVUE's startup.yaml by object path, with the fields
    that change; the line counts stay beside them."""
    db = '{"BGP_NEIGHBOR": {"10.0.0.1": {"asn": "%s", "name": "spine1"}%s}, "DEVICE_METADATA": {"localhost": {}}}'
    nvue = "- set:\n    interface:\n      swp1:\n        link: {mtu: %d}\n%s"
    swp2 = "      swp2:\n        link:\n          state: {up: {}}\n"
    _applied(tmp_path, {"switches/l1/config_db.json": db % ("65001", ', "10.0.0.3": {"asn": "65003"}'),
                        "switches/l1/startup.yaml": nvue % (9216, swp2)})
    plan = _plan(tmp_path, {"switches/l1/config_db.json": db % ("65002", ""),
                            "switches/l1/startup.yaml": nvue % (9100, "")})
    sonic, nv = describe(plan, [])
    assert sonic.noun == nv.noun == "config entry" and sonic.lines != (0, 0)
    assert {(r.action, r.subject, r.shown_fields) for r in sonic.rows} == {
        (Action.UPDATE, "BGP_NEIGHBOR|10.0.0.1", (("asn", "65001", "65002"),)),
        (Action.DELETE, "BGP_NEIGHBOR|10.0.0.3", ())}
    assert {(r.action, r.subject, r.shown_fields) for r in nv.rows} == {
        (Action.UPDATE, "interface swp1 link", (("mtu", "9216", "9100"),)),
        (Action.DELETE, "interface swp2 link state up", ())}
