"""The CLI contract: exit codes, plan markers and summary, JSON output, apply idempotence, schema, init."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app, main
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
    assert settled.stdout.startswith(f"Plan for {out} "), "a plan of no changes starts with its summary (review C5)"


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
    # the spec's revision (review B4), in JSON and text; a printed sheet carries its own rows' (review D5)
    digest = json.loads((out / "fabricgen.lock.json").read_text())["spec_digest"]
    assert data["spec_digest"] == digest and data["revision"] == f"spec {digest.removeprefix('sha256:')[:12]}"
    text = runner.invoke(app, ["plan", LAB, "-o", str(out)]).stdout
    assert f"Plan for {out} ({data['revision']}): 0 to create, 1 to update" in text


def test_apply_without_yes_off_a_terminal_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["apply", LAB, "-o", str(out)])
    assert result.exit_code == 1
    assert "--yes" in result.output
    assert not (out / "fabricgen.lock.json").exists()


def _apply_on_a_terminal(out: Path, answer: str) -> tuple[int, str]:
    """`fabricgen apply` run on a real pseudo-terminal (stdin, stdout and stderr a tty, as a user's shell gives
    them), answering its question with ``answer`` once it is asked; its exit code and everything it printed."""
    import select
    import subprocess

    master, slave = os.openpty()
    process = subprocess.Popen([sys.executable, "-m", "fabricgen", "apply", LAB, "-o", str(out)],
                               stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    printed, answered = b"", False
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 120)
            assert ready, f"apply printed nothing for 120 s:\n{printed.decode(errors='replace')}"
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            printed += chunk
            if not answered and b"Enter a value:" in printed:
                os.write(master, answer.encode() + b"\n")
                answered = True
    finally:
        os.close(master)
    assert answered, printed.decode(errors="replace")
    return process.wait(timeout=120), printed.decode(errors="replace")


@pytest.mark.parametrize(("answer", "code"), [("yes", 0), ("y", 1), ("n", 1), ("", 1)])
def test_apply_on_a_terminal_needs_yes_spelled_out(tmp_path: Path, answer: str, code: int) -> None:
    """Review D7: as Terraform, only the literal 'yes' approves, and a declined apply exits 1, so that
    `fabricgen apply ... && push-configs` does not push after a "no" (or a habitual "y")."""
    out = tmp_path / "out"
    exit_code, printed = _apply_on_a_terminal(out, answer)
    assert "Only 'yes' will be accepted to approve." in printed
    assert exit_code == code, printed
    if code:
        assert "apply cancelled; nothing was written" in printed
        assert not out.exists() or not any(out.iterdir()), sorted(p.name for p in out.rglob("*"))
    else:
        assert "Applied:" in printed and (out / "fabricgen.lock.json").is_file()


def test_explain_json_counts() -> None:
    result = runner.invoke(app, ["explain", str(INVENTORIES / "h100-4su.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    compute = next(f for f in summary["fabrics"] if f["name"] == "compute")
    assert compute["switches"] == {"leaf": 32, "spine": 16}
    assert compute["links"] == {"node-leaf": 1020, "leaf-spine": 1024}
    assert compute["oversubscription"] == 1.0
    assert summary["gpus"] == 1016


def test_explain_shows_each_server_blocks_ports_used_and_free(tmp_path: Path) -> None:
    """With ``server_ports: 10`` on h100-4su's in-band fabric, explain prints the first leaf's block: 10 ports, the
    MDS and OSS on 6, the 4 free ones by name (where the next server goes), and --json gives the same lists; a spec
    without a block prints no such table."""
    old = "topology: {kind: leaf-spine, oversubscription: 2}"
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count(old) == 1
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text(text.replace(old, old.replace("}", ", server_ports: 10}")))
    printed = runner.invoke(app, ["explain", str(spec)])
    assert printed.exit_code == 0, printed.output
    assert re.search(r"\n inband +inband-leaf001 +15/1 16/1 17/1 18/1 +10 +6 +4\n", printed.stdout), printed.stdout
    summary = json.loads(runner.invoke(app, ["explain", str(spec), "--json"]).stdout)
    [inband] = [f for f in summary["fabrics"] if f["name"] == "inband"]
    [block] = inband["server_blocks"]
    assert (block["leaf"], block["ports"], len(block["used"]), block["free"]) == (
        "inband-leaf001", 10, 6, ["15/1", "16/1", "17/1", "18/1"])
    assert "Server blocks" not in runner.invoke(app, ["explain", LAB]).stdout


def test_explain_prints_warnings_after_the_summary() -> None:
    result = runner.invoke(app, ["explain", LAB])
    assert result.exit_code == 0, result.output
    digest = compile_spec(Path(LAB)).cluster.spec_digest.removeprefix("sha256:")
    assert f"spec {digest[:12]}; each printed cable sheet carries the revision of its own rows" in result.stdout
    sheets = result.stdout[result.stdout.index("Cable sheets"):]
    printed = next(a for a in render_spec(compile_spec(Path(LAB)), ("workbook",)) if a.path == "cabling/revisions.csv")
    for sheet, files, revision in list(csv.reader(io.StringIO(printed.content.decode())))[1:]:
        assert re.search(rf"\n {sheet} +revision {revision}  {files}\n", sheets), sheet  # every sheet, as printed
    assert result.output.index("Switches and links per tier") < result.output.index("warning: [dual-homing]")


def test_explain_lines_carry_no_trailing_padding_and_a_cloud_cluster_no_racks() -> None:
    """Review C5: rich pads every table line to the table's width; a report saved or diffed carries none of it.
    A cloud cluster's line does not say '0 racks; 0 switches, 0 links'."""
    lab = runner.invoke(app, ["explain", LAB]).stdout
    assert "Fabrics" in lab and "Switches and links per tier" in lab
    assert [line for line in lab.splitlines() if line != line.rstrip()] == []
    cloud = runner.invoke(app, ["explain", str(INVENTORIES / "aws-p5-efa.yaml")])
    assert cloud.exit_code == 0, cloud.output
    assert cloud.stdout.splitlines()[0] == "aws-p5-efa at us-east-1: 16 nodes, 128 GPUs"
    # a network of 1G BMC ports has no bisection or oversubscription worth a figure (review C5)
    oob = next(line.split() for line in lab.splitlines() if line.lstrip().startswith("oob "))
    assert oob[-2:] == ["-", "-"], oob
    assert "Tb/s" in next(line for line in lab.splitlines() if line.lstrip().startswith("compute "))


def test_schema_is_valid_json_schema() -> None:
    from jsonschema import Draft202012Validator

    result = runner.invoke(app, ["schema"])
    schema = json.loads(result.stdout)
    Draft202012Validator.check_schema(schema)
    assert set(schema["$defs"]) >= {"facility", "fabrics", "nodes", "node_profiles", "catalog.overrides", "metadata"}
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


def _shrunk(tmp_path: Path) -> Path:
    """The lab with 6 of its 8 nodes (the SM pair moved onto hgx06), as an operator would edit it."""
    spec = tmp_path / "lab.yaml"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert text.count("    count: 8\n") == 1 and text.count("{name: hgx08, priority: 14}") == 1
    spec.write_text(text.replace("    count: 8\n", "    count: 6\n")
                    .replace("{name: hgx08, priority: 14}", "{name: hgx06, priority: 14}"))
    return spec


def test_plan_names_cables_ports_addresses_and_lines(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = _shrunk(tmp_path)
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    # a removed cable names the id on its label, so the crew pulls the right one (UX field review D2)
    assert "- cable hgx07:NIC0 <-> compute-su01-leaf0:4/1  [compute-su01-leaf0-007]" in text
    assert "- cable hgx08:BMC <-> oob-l04:2  [oob-l04-002]" in text
    # a cable whose ends stay keeps its id (its label on the installed cable: field review U1), and a switch that
    # stays keeps its loopback (router id); they were renumbered (155 cables, the aggregation loopbacks)
    assert "cable_id:" not in text and "~ address oob-agg01 Loopback0" not in text
    assert "- switches/oob-l04/config_db.json" in text and "# switch oob-l04" in text
    # a removed node's files are headed by their node, as the lock recorded it (its spec has it no more)
    assert "\n  # node hgx07\n  - hosts/hgx07/netplan-roce.yaml" in text and "# hosts/" not in text
    # the OOB breakout trunks lose their fourth leg: each is that one change, the leg gone and the trunk's one
    # label naming three legs now (review D6), not a relabel of each leg that stays (its re-review)
    assert "cables: 0 to add, 2 to change, 20 to remove; ports: 0 newly cabled, 20 freed" in text
    assert ("~ cable oob-l01+oob-l02+oob-l03:49 <-> oob-agg01:1/1+1/2+1/3  -oob-l04:49 <-> oob-agg01:1/4; "
            "z_label: oob-agg01-001/Z to L01,L02,L03,L04 oob-l01,oob-l02,oob-l03,oob-l04 -> "
            "oob-agg01-001/Z to L01,L02,L03 oob-l01,oob-l02,oob-l03\n") in text
    assert "oob-l04:49 <-> oob-agg01:1/4\n" not in text, "the lost leg is not a removal of its own"
    # the printed sheets that change, by their revision (re-review of B4): M01 holds the trunks, L04 is gone; the
    # revisions are the ones the sheets print (explain lists them, and so does cabling/revisions.csv)
    before = {s["sheet"]: s["revision"] for s in
              json.loads(runner.invoke(app, ["explain", LAB, "--json"]).stdout)["sheets"]}
    after = {s["sheet"]: s["revision"] for s in
             json.loads(runner.invoke(app, ["explain", str(spec), "--json"]).stdout)["sheets"]}
    assert f"~ sheet rack M01  revision: {before['rack M01']} -> {after['rack M01']}" in text
    assert f"- sheet rack L04  [revision {before['rack L04']}]\n" in text and "rack L04" not in after  # to discard
    assert "sheet rack L01" not in text and before["rack L01"] == after["rack L01"], "an unchanged sheet: no line"
    assert "sheets: 0 to add, 4 to change, 1 to remove" in text
    # a switch config by its entries, in SONiC's own TABLE|key terms (U9): the freed leaf port's buffers are zeroed
    assert "~ config entry BUFFER_PG|Ethernet24|0  profile: ingress_lossy_profile -> ingress_lossy_pg_zero_profile" \
        in text and "config entries: " in text
    # warnings come after the listing and its summary
    assert result.output.index("Plan for") < result.output.index("warning: [partial-su]")
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    cables = next(d for d in data["diffs"] if d["path"] == "cabling/cables.csv")
    assert cables["parts"] == {"port": {"added": 0, "removed": 20}}  # on the switches that stay (review C6)
    assert sum(r["action"] == "delete" for r in cables["rows"]) == 20
    assert {r["action"] for r in cables["rows"]} == {"delete", "update"}
    trunk = next(r for r in cables["rows"] if r["action"] == "update" and "oob-agg02" in r["subject"])
    # the leg it loses is a leg's removal in its legs (not a field named by its ends), beside the legs that stay
    assert "oob-l04:50 <-> oob-agg02:1/4" not in trunk["fields"] and trunk["fields"]["z_label"][1].endswith(
        "oob-l01,oob-l02,oob-l03")
    assert [(leg["action"], leg["subject"]) for leg in trunk["legs"]] == [
        ("relabel", f"oob-l0{n}:50 <-> oob-agg02:1/{n}") for n in (1, 2, 3)] + [
        ("delete", "oob-l04:50 <-> oob-agg02:1/4")]
    diffed = runner.invoke(app, ["plan", str(spec), "-o", str(out), "--diff"]).stdout
    assert "--- a/infiniband/compute/opensm.conf" in diffed and "+++ b/infiniband/compute/opensm.conf" in diffed


def test_a_rack_rename_relabels_and_moves_its_top_of_rack_switches(tmp_path: Path) -> None:
    """Racks renamed (``rack_name``): a cable between unrenamed switches keeps its two ends and its id but its end
    labels name the new racks (a relabel); a top-of-rack switch renamed with its rack (oob-l01 -> oob-l-01) keeps
    its rack (as renamed), U, face and type, so it has moved, as NetBox sync renames it: its cables are relabels
    too (the BMC cords' ids and the breakout trunk's legs), not removals plus additions or re-patches, and its
    configuration is compared with the one it had."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "racks.yaml"
    rows = "    - {name: M, racks: 1, kind: network}\n"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert text.count(rows) == 1
    spec.write_text(text.replace(rows, rows + '  rack_name: "{row}-{rack:02d}"\n'))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    listing, _, relabels = result.stdout.partition("\nRelabel: ")
    assert "\nRe-patch: " not in result.stdout
    # a cage-pair cable's two links are one relabel, a breakout's four legs too: the cable's
    assert "~ cabling/cables.csv  (166 cables to relabel)" in listing
    assert "cable compute-su01-leaf0:5/1" not in listing and "oob-agg01-001" not in listing
    assert ("  # switch oob-l04 has moved to oob-l-04  ~ rack: L04 -> L-04\n"
            "  ~ switches/oob-l-04/config_db.json  (moved from switches/oob-l04/config_db.json; 1 config entry to "
            "change; +1 -1 lines)\n"
            "      ~ config entry DEVICE_METADATA|localhost  hostname: oob-l04 -> oob-l-04\n") in listing
    assert "switches/oob-l04/" not in listing.replace("moved from switches/oob-l04/", "")
    # a sheet removed (rack L04's, now L-04's) names the revision printed on it: the sheet to discard
    printed = {r["sheet"]: r["revision"] for r in csv.DictReader(io.StringIO(
        (out / "cabling/revisions.csv").read_text()))}
    assert f"      - sheet rack L04  [revision {printed['rack L04']}]\n" in listing
    assert "~ switch oob-l-04  name: oob-l04 -> oob-l-04; rack: L04 -> L-04" in listing
    assert "~ address hgx07:BMC 10.44.0.194/26 (host)  peer: oob-l04 -> oob-l-04" in listing
    assert ("~ cable compute-su01-leaf0:5/1 <-> compute-spine001:1/1  a_rack: M01 -> M-01; z_rack: M01 -> M-01; "
            "a_label: compute-spine001-001/A to M01 compute-spine001 1/1 -> compute-spine001-001/A to M-01 "
            "compute-spine001 1/1") in relabels
    assert "... and 141 more cables to relabel (plan --json lists every one)" in relabels
    assert ("Plan for " in relabels and "4 to create, 24 to update, 4 to delete, 69 unchanged (of those, 4 created "
            "and 4 deleted are files moved with a renamed device)." in relabels)
    assert ("devices: 4 moved (renamed in place); addresses: 0 to add, 32 to change, 0 to remove; cables: 0 to add, "
            "0 to change, 0 to remove, 166 to relabel; ports: 0 newly cabled, 0 freed") in relabels
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    assert data["moved"] == [{"kind": "switch", "from": f"oob-l0{n}", "to": f"oob-l-0{n}"} for n in range(1, 5)]
    assert next(d for d in data["diffs"] if d.get("moved_from") == "switches/oob-l04/config_db.json")["path"] == \
        "switches/oob-l-04/config_db.json"
    sheets = next(d for d in data["diffs"] if d["path"] == "cabling/revisions.csv")["rows"]
    assert {"action": "delete", "subject": "rack L04", "label": f"revision {printed['rack L04']}", "fields": {}} in \
        sheets
    addresses = next(d for d in data["diffs"] if d["path"] == "addressing/oob.csv")["rows"]
    assert next(r for r in addresses if r["subject"] == "oob-l-04:49 10.45.0.13/31 (p2p)")["fields"] == {
        "device": ["oob-l04", "oob-l-04"]}
    cables = next(d for d in data["diffs"] if d["path"] == "cabling/cables.csv")["rows"]
    assert Counter(r["action"] for r in cables) == {"relabel": 166}
    pair = next(r for r in cables if r["subject"] == "storage-leaf001:21/1+21/2 <-> storage-spine01:1/1+1/2")
    assert pair["fields"]["a_label"] == ["storage-spine01-001/A to M01 storage-spine01 1/1+1/2",
                                         "storage-spine01-001/A to M-01 storage-spine01 1/1+1/2"]
    cord = next(r for r in cables if r["subject"] == "hgx07:BMC <-> oob-l-04:1")
    assert (cord["fields"]["cable_id"], cord["fields"]["z_device"]) == (["oob-l04-001", "oob-l-04-001"],
                                                                        ["oob-l04", "oob-l-04"])
    trunk = next(r for r in cables if r["subject"] == "oob-l-01+oob-l-02+oob-l-03+oob-l-04:49 <-> "
                 "oob-agg01:1/1+1/2+1/3+1/4")
    # each leg keeps its own value of a field the legs change differently (its rack, its switch); the trunk's
    # fields hold only what they change alike
    assert trunk["action"] == "relabel" and "a_rack" not in trunk["fields"] and "a_device" not in trunk["fields"]
    assert [(leg["subject"], leg["fields"]["a_rack"], leg["fields"]["a_device"]) for leg in trunk["legs"]] == [
        (f"oob-l-0{n}:49 <-> oob-agg01:1/{n}", [f"L0{n}", f"L-0{n}"], [f"oob-l0{n}", f"oob-l-0{n}"])
        for n in range(1, 5)]


def test_a_renamed_row_moves_its_top_of_rack_switches(tmp_path: Path) -> None:
    """Issue 19: row L renamed K renames racks L01.. K01.. (told by the nodes that keep their names in them) and
    their OOB switches oob-l01.. oob-k01.., which keep rack, U, face and type: each has moved, its BMC cords are
    relabels (were a removal and an addition each) and the MPO trunks to them relabels (were re-patches)."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "row-k.yaml"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    spec.write_text(text.replace("{name: L, racks: 4}", "{name: K, racks: 4}").replace("rows: [L]", "rows: [K]"))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "\nRe-patch: " not in result.stdout and "  - cable " not in result.stdout
    assert "  + cable " not in result.stdout
    for n in range(1, 5):
        assert f"  # switch oob-l0{n} has moved to oob-k0{n}  ~ rack: L0{n} -> K0{n}\n" in result.stdout
    assert ("~ cable hgx01:BMC <-> oob-k01:1  cable_id: oob-l01-001 -> oob-k01-001; label: oob-l01-001 hgx01:BMC "
            "oob-l01:1 -> oob-k01-001 hgx01:BMC oob-k01:1; ") in result.stdout
    assert "cables: 0 to add, 0 to change, 0 to remove, 82 to relabel" in result.stdout


def test_a_renamed_node_group_relabels_its_cables(tmp_path: Path) -> None:
    """A node group renamed (``nodes[].name``: hgx01 -> gpu01): each node keeps its rack, U, face and type, so it
    has moved; the cables whose id is its leaf's keep it and relabel their node end (were re-patches)."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "gpus.yaml"
    spec.write_text(re.sub(r"hgx(?=\{|0)", "gpu", (INVENTORIES / "lab-1su.yaml").read_text()))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "\nRe-patch: " not in result.stdout and "  - cable " not in result.stdout
    assert ("  # node hgx07 has moved to gpu07\n"
            "  ~ hosts/gpu07/netplan-roce.yaml  (moved from hosts/hgx07/netplan-roce.yaml; +1 -1 lines)") in \
        result.stdout
    assert "cables: 0 to add, 0 to change, 0 to remove, 80 to relabel" in result.stdout
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    assert {(m["kind"], m["from"], m["to"]) for m in data["moved"]} == {
        ("node", f"hgx0{n}", f"gpu0{n}") for n in range(1, 9)}
    cables = next(d for d in data["diffs"] if d["path"] == "cabling/cables.csv")["rows"]
    nic = next(r for r in cables if r["subject"] == "gpu07:NIC0 <-> compute-su01-leaf0:4/1")
    assert (nic["action"], nic["fields"]["a_device"]) == ("relabel", ["hgx07", "gpu07"])
    assert "cable_id" not in nic["fields"]


def test_a_group_whose_start_moved_is_renamed_in_place(tmp_path: Path) -> None:
    """lab-1su's node group with its ``start`` moved to 2 (hgx01..hgx08 are hgx02..hgx09 where they stand): plan
    pairs the boxes place first, as NetBox sync does, so it lists 8 nodes moved, each one's files compared with the
    ones its box had, its cables relabelled and its addresses kept (were 80 re-patches, hgx01 removed and hgx09
    added, and 14 addresses changed); apply then writes what a fresh apply of that spec writes."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "start.yaml"
    sm = "{name: hgx01, priority: 15}, {name: hgx08, priority: 14}"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert "    count: 8\n" in text and sm in text
    spec.write_text(text.replace("    count: 8\n", "    count: 8\n    start: 2\n").replace(
        sm, sm.replace("hgx08", "hgx09").replace("hgx01", "hgx02")))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    listing = result.stdout
    assert "\nRe-patch: " not in listing and "  - cable " not in listing and "  + cable " not in listing
    assert "# node hgx01\n" not in listing and "# node hgx09\n" not in listing
    assert ("  # node hgx01 has moved to hgx02\n"
            "  ~ hosts/hgx02/netplan-roce.yaml  (moved from hosts/hgx01/netplan-roce.yaml; +1 -1 lines)") in listing
    assert ("  # node hgx08 has moved to hgx09\n"
            "  ~ hosts/hgx09/netplan-roce.yaml  (moved from hosts/hgx08/netplan-roce.yaml; +1 -1 lines)") in listing
    assert "~ address hgx02:BMC 10.44.0.2/26 (host)  device: hgx01 -> hgx02" in listing
    assert "(of those, 1 created, 7 updated and 1 deleted are files moved with a renamed device)." in listing
    assert ("devices: 8 moved (renamed in place); addresses: 0 to add, 16 to change, 0 to remove; cables: 0 to add, "
            "0 to change, 0 to remove, 80 to relabel") in listing
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    assert data["moved"] == [{"kind": "node", "from": f"hgx0{n}", "to": f"hgx0{n + 1}"} for n in range(1, 9)]
    hosts = {d["path"]: d for d in data["diffs"] if d["path"].startswith("hosts/")}
    assert hosts == {f"hosts/hgx0{n + 1}/netplan-roce.yaml": {
        "path": f"hosts/hgx0{n + 1}/netplan-roce.yaml", "binary": False,
        "moved_from": f"hosts/hgx0{n}/netplan-roce.yaml", "lines": {"added": 1, "removed": 1}} for n in range(1, 9)}
    cables = next(d for d in data["diffs"] if d["path"] == "cabling/cables.csv")["rows"]
    assert {r["action"] for r in cables} == {"relabel"} and len(cables) == 80
    nic = next(r for r in cables if r["subject"] == "hgx02:NIC0 <-> compute-su01-leaf0:1/1")
    assert nic["fields"]["a_device"] == ["hgx01", "hgx02"]
    # the listing is all the moves change: apply writes by path, as a fresh apply of the spec does
    assert runner.invoke(app, ["apply", str(spec), "-o", str(out), "--yes"]).exit_code == 0
    assert runner.invoke(app, ["apply", str(spec), "-o", str(tmp_path / "fresh"), "--yes"]).exit_code == 0
    assert _artifacts(out) == _artifacts(tmp_path / "fresh")


def test_a_device_that_takes_anothers_place_with_other_ports_is_no_rename(tmp_path: Path) -> None:
    """Field review (2026-12-03, growth): h100-4su's OSS group 4 -> 8, four a rack, puts oss05 where oss03 stood
    (D10 U6) while oss03 moves to D09 with its own ports, address and Lustre targets. Place first alone took oss03
    for renamed oss05, and told the crew to re-patch and re-address the box; a rename must keep every port its
    cables plug, so plan lists no server as moved and names each by its own name (nor the in-band leaves, which
    the network rack stacks anew: inband-leaf003 where inband-leaf001 stood, with other cables)."""
    out = tmp_path / "out"
    h100 = INVENTORIES / "h100-4su.yaml"
    assert runner.invoke(app, ["apply", str(h100), "-o", str(out), "--yes"]).exit_code == 0
    old = "    count: 4\n    profile: lustre-server\n    placement: {racks: [D09, D10], per_rack: 2, start_u: 6}"
    text = h100.read_text()
    assert text.count(old) == 1
    spec = tmp_path / "oss8.yaml"
    spec.write_text(text.replace(old, old.replace("count: 4", "count: 8").replace("per_rack: 2", "per_rack: 4")))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"])
    assert result.exit_code == 0, result.output
    moved = json.loads(result.stdout)["moved"]
    assert moved == [], "no server, and no in-band leaf whose place another takes, is a rename"


def _artifacts(out: Path) -> dict[Path, bytes]:
    """OUT's artifacts by path, without fabricgen's own state (the lock, .fabricgen/)."""
    files = (p.relative_to(out) for p in out.rglob("*") if p.is_file())
    return {p: (out / p).read_bytes() for p in files if p.parts[0] not in (".fabricgen", "fabricgen.lock.json")}


def test_plan_lists_eos_configs_by_section(tmp_path: Path) -> None:
    """U9 on a real change: h100-4su's storage fabric on EOS after its last four DGX go and the leaves' ASNs move
    (leaf_base 65100 -> 65200), planned over OUT holding the storage switches' files and the cable table as before.
    EOS's running-config reads by section as SONiC's by TABLE|key: the leaf's `router bgp` replaced whole (EOS takes
    one BGP instance: a new AS is a new `router bgp`), the spine's peers by address. The UFM and the storage servers
    keep their ports (they count down from the top: field review 2026-12-03, where they used to move onto the gone
    DGX nodes' ports and cables): the only re-patches are rack D01's BMC cords, the UFM pair's placement filling
    row D's first free rack."""
    from fabricgen.outdir.apply import apply_plan
    from fabricgen.outdir.plan import compute_plan
    from tests.helpers.ethernet import eos_spec

    out = tmp_path / "out"
    (tmp_path / "before").mkdir()
    (tmp_path / "after").mkdir()
    before = [a for a in render_spec(compile_spec(eos_spec(tmp_path / "before")))
              if a.path.startswith(("switches/storage-", "cabling/cables.csv"))]
    apply_plan(compute_plan(before, out, spec_digest="before", tool_version="before"))
    after = eos_spec(tmp_path / "after", ("    count: 127\n", "    count: 123\n"),
                     ("leaf_base: 65100", "leaf_base: 65200"))
    result = runner.invoke(app, ["plan", str(after), "-o", str(out)])
    assert result.exit_code == 0, result.output
    leaf = result.stdout[result.stdout.index("~ switches/storage-leaf008/storage-leaf008.cfg"):]
    leaf = leaf[:leaf.index("\n  ~ switches/")]
    assert "(34 config entries to add, 34 config entries to remove; +1 -1 lines)" in leaf
    assert "interface Ethernet" not in leaf, "no port of the leaf changes"
    assert "- config entry router bgp 65107\n" in leaf
    assert "+ config entry router bgp 65207 / neighbor 10.21.1.192" in leaf
    assert "~ config entry router bgp 65000 / neighbor 10.21.0.1  remote-as: 65100 -> 65200" in result.stdout
    assert "~ config entry router_bgp neighbors 10.21.0.1  remote_as: 65100 -> 65200" in result.stdout  # AVD's
    repatches = result.stdout[result.stdout.index("\nRe-patch: "):]
    assert [line.split()[2] for line in repatches.splitlines() if line.startswith("    ~ cable ")] == [
        "oob-d01-004", "oob-d01-005"]
    assert "~ cable oob-d01-004  gpu124:BMC <-> oob-d01:4 -> ufm01:BMC <-> oob-d01:4" in repatches
    assert not re.search(r"(mds|oss)\d+:", repatches), "no storage server moves"
    # the last storage leaf, four of its DGX gone, keeps its rack and U: the storage leaves' slot range holds it
    # where its nodes' racks put it (it moved from N02 to N01 when the network racks stacked switches in placement
    # order: 66 uplinks relabelled, 74 cables changed); breakout trunks that lost a leg are each one change (the leg
    # gone, their one label naming the legs that stay: review D6)
    assert "cables: 0 to add, 6 to change, 52 to remove, 2 to re-patch" in repatches


def test_a_switch_model_change_heads_its_switch(tmp_path: Path) -> None:
    """Review B2: the oob aggregation switches SN4700 -> SN4600: each switch's group starts with its own change (a
    switch is its row in topology/<fabric>.json, by name), the summary counts switches, --json has the rows."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "model.yaml"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    old = "switch: {leaf: SN2201, spine: SN4700}"
    assert text.count(old) == 1
    spec.write_text(text.replace(old, "switch: {leaf: SN2201, spine: SN4600}"))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "\n  # switch oob-agg01  ~ model: SN4700 -> SN4600\n  ~ switches/oob-agg01/config_db.json" in result.stdout
    assert "~ topology/oob.json  (2 switches to change; +11 -11 lines)" in result.stdout
    assert "switches: 0 to add, 2 to change, 0 to remove" in result.stdout
    # an address reads with its value (review D2), ports in their natural order
    assert "+ address oob-agg01:1 10.45.0.0/31 (p2p)\n      + address oob-agg01:2 10.45.0.4/31 (p2p)" in result.stdout
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    (oob,) = [d for d in data["diffs"] if d["path"] == "topology/oob.json"]
    assert oob["noun"] == "switch" and {r["subject"]: r["fields"]["model"] for r in oob["rows"]} == {
        "oob-agg01": ["SN4700", "SN4600"], "oob-agg02": ["SN4700", "SN4600"]}


def test_cables_whose_only_change_is_their_estimated_run(tmp_path: Path) -> None:
    """Review D1: more slack lengthens every run; the cables whose orderable length and part change (re-pull) are
    counted and listed first, those whose estimated run alone moved apart and after them."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = tmp_path / "slack.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text().replace("facility:\n", "facility:\n  slack_m: 2.0\n", 1))
    text = runner.invoke(app, ["plan", str(spec), "-o", str(out)]).stdout
    # a cage-pair cable's two links are one cable (20 of them: 40 rows), a breakout's four legs one (2: 8 rows)
    assert "~ cabling/cables.csv  (57 cables to change, 109 cables with only a new estimate)" in text
    listing = text[text.index("~ cabling/cables.csv"):]
    assert listing.index("length_m: 3.0 -> 5.0; run_m: 2.89 -> 3.89; cable_part: CAT6-PATCH-3M -> CAT6-PATCH-5M") \
        < listing.index("... and 32 more cables to change") \
        < listing.index("~ cable compute-su01-leaf0:5/1 <-> compute-spine001:1/1  run_m: 1.44 -> 2.44")
    assert "cables: 0 to add, 57 to change, 0 to remove, 109 with only a new estimate" in text
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    cables = next(d for d in data["diffs"] if d["path"] == "cabling/cables.csv")["rows"]
    assert Counter(r["action"] for r in cables) == {"update": 57, "estimate": 109}
    # a trunk's legs' runs change each by its own length: each leg's in its legs
    assert all(set(r["fields"]) | {c for leg in r.get("legs", ()) for c in leg["fields"]} == {"run_m"}
               for r in cables if r["action"] == "estimate")
    assert any("legs" in r and "run_m" not in r["fields"] for r in cables if r["action"] == "estimate")


def test_a_comment_edit_reissues_no_sheet(tmp_path: Path) -> None:
    """Review D3/D5: a comment in the spec changes its revision (the plan says so, before and after) but no printed
    sheet, whose revision is the digest of its own rows: nothing to update, only the lock refreshed."""
    out, spec = tmp_path / "out", tmp_path / "lab.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text())
    assert runner.invoke(app, ["apply", str(spec), "-o", str(out), "--yes"]).exit_code == 0
    before = compile_spec(spec).cluster.spec_digest.removeprefix("sha256:")[:12]
    spec.write_text(spec.read_text() + "# just a comment\n")
    after = compile_spec(spec).cluster.spec_digest.removeprefix("sha256:")[:12]
    text = runner.invoke(app, ["plan", str(spec), "-o", str(out)]).stdout
    assert f"(spec {after}, was spec {before}): 0 to create, 0 to update, 0 to delete" in text
    assert "No changes. The lock file will be refreshed." in text and "binary" not in text
    data = json.loads(runner.invoke(app, ["plan", str(spec), "-o", str(out), "--json"]).stdout)
    assert data["previous_spec_digest"].removeprefix("sha256:")[:12] == before


def test_drift_has_its_own_section(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    (out / "topology" / "summary.yaml").write_text("edited\n")
    text = runner.invoke(app, ["plan", LAB, "-o", str(out)]).stdout
    drift = text.index("Drift")
    assert "~ topology/summary.yaml  (drift; edited by hand since the last apply; content changed" in text[:drift]
    assert "topology/summary.yaml  (edited by hand since the last apply; content changed)" in text[drift:]


def test_plan_refuses_what_apply_refuses(tmp_path: Path) -> None:
    """An unmanaged file where an artifact goes: apply would refuse it, so plan fails too (exit 1, also JSON)."""
    out = tmp_path / "out"
    (out / "topology").mkdir(parents=True)
    (out / "topology" / "summary.yaml").write_text("mine\n")
    for extra in ([], ["--detailed-exitcode"]):
        result = runner.invoke(app, ["plan", LAB, "-o", str(out), *extra])
        assert result.exit_code == 1, result.output
        assert "Unmanaged" in result.stdout and "apply would refuse 1 file(s)" in result.stderr
    data = json.loads(runner.invoke(app, ["plan", LAB, "-o", str(out), "--json"]).stdout)
    assert data["valid"] is True and data["apply_refuses"] == ["topology/summary.yaml"]
    forced = runner.invoke(app, ["plan", LAB, "-o", str(out), "--force", "--detailed-exitcode"])
    assert forced.exit_code == 2, forced.output


def test_plan_json_on_an_invalid_spec(tmp_path: Path) -> None:
    result = runner.invoke(app, ["plan", "tests/negative/rack-overflow.yaml", "-o", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["valid"] is False and "do not fit in their racks" in data["problems"][0]["message"]
    missing = runner.invoke(app, ["plan", str(tmp_path / "nope.yaml"), "--json"])
    assert missing.exit_code == 1 and json.loads(missing.stdout)["valid"] is False


def _main(monkeypatch: pytest.MonkeyPatch, *argv: str) -> int:
    """The installed `fabricgen` command (``cli.main``, which CliRunner bypasses): its exit code."""
    monkeypatch.setattr(sys, "argv", ["fabricgen", *argv])
    with pytest.raises(SystemExit) as exited:
        main()
    return int(exited.value.code or 0)


def test_usage_errors_exit_1_not_plans_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    """Review B1: click's usage errors exit 2, which `plan --detailed-exitcode` means "changes pending"; they exit
    1 as every error does, with JSON under --json."""
    assert _main(monkeypatch, "plan", LAB, "--detailed-exitcode", "--bogus") == 1
    assert "No such option: --bogus" in capsys.readouterr().err
    assert _main(monkeypatch, "plan", "--detailed-exitcode", "--json") == 1
    data = json.loads(capsys.readouterr().out)
    assert (data["valid"], data["error"], data["stage"]) == (None, True, "usage")
    assert data["problems"][0]["message"] == "Missing argument 'SPEC'."
    assert _main(monkeypatch, "validate", "--format", "yaml", LAB) == 1
    assert _main(monkeypatch, "plan", "--help") == 0 and "--detailed-exitcode" in capsys.readouterr().out
    assert _main(monkeypatch, "plan", LAB, "-o", str(tmp_path / "out"), "--detailed-exitcode") == 2


def test_plan_json_tells_an_output_problem_from_an_invalid_spec(tmp_path: Path) -> None:
    """Review D4: a valid spec whose OUT is a file is not `"valid": false`; the stage says where it stopped."""
    (tmp_path / "file").write_text("")
    result = runner.invoke(app, ["plan", LAB, "-o", str(tmp_path / "file"), "--json"])
    data = json.loads(result.stdout)
    assert result.exit_code == 1
    assert (data["valid"], data["error"], data["stage"]) == (True, True, "output")
    assert "exists and is not a directory" in data["problems"][0]["message"]
    invalid = json.loads(runner.invoke(app, ["plan", "tests/negative/rack-overflow.yaml", "--json"]).stdout)
    assert (invalid["valid"], invalid["stage"]) == (False, "spec")


def test_saved_plan_applies_only_while_nothing_changed(tmp_path: Path) -> None:
    out, saved = tmp_path / "out", tmp_path / "lab.plan"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    spec = _shrunk(tmp_path)
    assert runner.invoke(app, ["plan", str(spec), "-o", str(out), "-out", str(saved)]).exit_code == 0
    lock = (out / "fabricgen.lock.json").read_bytes()
    # OUT edited after the plan: refused, nothing written
    (out / "topology" / "summary.yaml").write_text("edited\n")
    stale = runner.invoke(app, ["apply", str(saved)])
    assert stale.exit_code == 1 and f"the files in {out} changed" in stale.stderr
    assert (out / "fabricgen.lock.json").read_bytes() == lock
    # the spec edited after the plan: refused
    assert runner.invoke(app, ["plan", str(spec), "-o", str(out), "-out", str(saved)]).exit_code == 0
    spec.write_text(spec.read_text() + "\n# edited\n")
    stale = runner.invoke(app, ["apply", str(saved)])
    assert stale.exit_code == 1 and f"the spec {spec} changed" in stale.stderr
    # unchanged since: applied without a question (off a terminal), then nothing left to do
    assert runner.invoke(app, ["plan", str(spec), "-o", str(out), "-out", str(saved)]).exit_code == 0
    applied = runner.invoke(app, ["apply", str(saved)])
    assert applied.exit_code == 0, applied.output
    assert not (out / "switches" / "oob-l04").exists()
    settled = runner.invoke(app, ["plan", str(spec), "-o", str(out), "--detailed-exitcode"])
    assert settled.exit_code == 0, settled.output
    assert runner.invoke(app, ["apply", str(saved), "-o", str(out)]).exit_code == 1


def test_help_shows_defaults_and_no_type_noise() -> None:
    plan_help = runner.invoke(app, ["plan", "--help"]).output
    assert "-o, --out OUT" in plan_help and "[default: out/<cluster name>]" in plan_help
    assert "-out, --save PLANFILE" in plan_help
    assert "<bool>" not in plan_help and "--diff " in plan_help
    init_help = " ".join(runner.invoke(app, ["init", "--help"]).output.split())  # as read, whatever the wrapping
    assert "lab-1su" in init_help and "h100-4su" in init_help and "[default: lab-1su]" in init_help
    top = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in top and "--show-completion" in top
    assert all(len(line) <= 80 for line in top.splitlines()), top


def test_cosmetic_review_items(tmp_path: Path) -> None:
    """Review C1-C3: verify's summary names LLDP and its metavars say what they take; validate prints a warning's
    check as plan does; an incomplete plan file says what it lacks; verify says it verified nothing, not that it
    wrote nothing."""
    top = runner.invoke(app, ["--help"]).output
    assert "Compare a discovered fabric (ibnetdiscover, LLDP)" in top
    verify_help = " ".join(runner.invoke(app, ["verify", "--help"]).output.split())
    assert "--lldp FILE|DIR" in verify_help and "--speed-as SPEED" in verify_help and "One of SDR, DDR" in verify_help
    assert "warning: [dual-homing] storage:" in runner.invoke(app, ["validate", LAB]).stdout
    partial = tmp_path / "partial.plan"
    partial.write_text('{"format": "fabricgen-plan/1"}')
    result = runner.invoke(app, ["apply", str(partial)])
    assert result.exit_code == 1 and "is incomplete: it lacks spec, out_dir" in result.stderr
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello\n")
    result = runner.invoke(app, ["verify", LAB, "--ibnetdiscover", str(garbage)])
    assert result.stderr.splitlines()[-1] == "nothing was verified"


def test_shell_completion_of_presets() -> None:
    from fabricgen.cli import _preset_names

    assert _preset_names("h1") == ["h100-4su"]
    # as bash asks it (the script `--show-completion` prints sets these; that flag detects the shell from the
    # process tree, which under a background job is no shell at all: "Shell  not supported")
    script = runner.invoke(app, [], prog_name="fabricgen", env={"_FABRICGEN_COMPLETE": "source_bash"})
    assert script.exit_code == 0 and "_FABRICGEN_COMPLETE=complete_bash" in script.output
    asked = runner.invoke(app, [], prog_name="fabricgen", env={
        "_FABRICGEN_COMPLETE": "complete_bash", "COMP_WORDS": "fabricgen init --preset h1", "COMP_CWORD": "3"})
    assert (asked.exit_code, asked.output) == (0, "h100-4su\n")


def test_init_writes_the_spec_and_its_editor_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["init", "--preset", "h100-4su"])
    assert result.exit_code == 0, result.output
    spec = tmp_path / "h100-4su.yaml"
    assert spec.read_text().startswith("# yaml-language-server: $schema=fabricgen.schema.json\n")
    assert json.loads((tmp_path / "fabricgen.schema.json").read_text()) == json.loads(
        runner.invoke(app, ["schema"]).stdout)
    assert runner.invoke(app, ["validate", str(spec)]).exit_code == 0
    again = runner.invoke(app, ["init", "--preset", "h100-4su"])
    assert again.exit_code == 1 and "exists; not overwriting it" in again.stderr
    printed = runner.invoke(app, ["init", "--preset", "lab-1su", "-o", "-"])
    assert printed.exit_code == 0 and printed.stdout.startswith("# yaml-language-server:")
    assert not (tmp_path / "lab-1su.yaml").exists()
    wrong = runner.invoke(app, ["init", "--preset", "h100"])
    assert wrong.exit_code == 1 and "did you mean 'h100-4su'?" in wrong.stderr


def test_validate_reads_stdin() -> None:
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    ok = runner.invoke(app, ["validate", "-"], input=text)
    assert ok.exit_code == 0 and ok.stdout.startswith("<stdin>: valid"), ok.output
    bad = runner.invoke(app, ["validate", "-", "--format", "json"], input=text.replace("speed: NDR", "speed: ndr", 1))
    assert bad.exit_code == 1
    problem = json.loads(bad.stdout)[0]["problems"][0]
    assert problem["file"] == "<stdin>" and "did you mean 'NDR'?" in problem["hint"]
    # on a terminal the source line and its caret are printed from the bytes read, as for a file
    shown = runner.invoke(app, ["validate", "-"], input=text.replace("speed: NDR", "speed: ndr", 1))
    lines = shown.output.splitlines()
    at = next(i for i, line in enumerate(lines) if "fabrics.compute.speed" in line)
    line_no = problem["line"]
    assert lines[at + 1].strip() == f"{line_no} | {text.splitlines()[line_no - 1]}".strip()
    assert lines[at + 2].strip().endswith("^")


def test_errors_show_the_source_line_and_a_caret(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text().replace("    speed: NDR", "    speed: NDRR", 1))
    result = runner.invoke(app, ["plan", str(spec), "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    at = next(i for i, line in enumerate(lines) if "fabrics.compute.speed" in line)
    # the caret under the value at fault, not its key
    assert lines[at].startswith(f"  {spec}:22:12: fabrics.compute.speed: 'NDRR' is not an allowed value")
    assert lines[at + 1] == "    22 |     speed: NDRR"
    assert lines[at + 2] == "       |            ^"
    # an unknown key: the caret under the key
    typo = tmp_path / "typo.yaml"
    typo.write_text((INVENTORIES / "lab-1su.yaml").read_text().replace("    speed: NDR", "    sped: NDR", 1))
    lines = runner.invoke(app, ["validate", str(typo)]).output.splitlines()
    at = next(i for i, line in enumerate(lines) if "unknown key 'sped'" in line)
    assert f"{typo}:22:5:" in lines[at] and lines[at + 2] == "       |     ^"
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: fabricgen/v1\nkind: [Cluster\nmetadata: {}\n")
    yaml_error = runner.invoke(app, ["validate", str(broken)]).stdout
    assert f"{broken}:3:9: error: YAML syntax error" in yaml_error and "    3 | metadata: {}" in yaml_error
    missing = runner.invoke(app, ["validate", str(tmp_path / "nope.yaml")]).stdout
    assert f"{tmp_path / 'nope.yaml'}: error: cannot read spec: No such file or directory" in missing
    assert ":0:0" not in missing and ":1:1" not in missing


def test_a_long_source_line_is_cut_only_where_text_is(tmp_path: Path) -> None:
    """Review C2: a line longer than the excerpt keeps its start (YAML's indentation says where a key belongs) and
    is cut on the right, marked "...", where its text goes on."""
    spec = tmp_path / "spec.yaml"
    old = "{name: hgx08, priority: 14}]   # an SM pair"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    assert text.count(old) == 1
    spec.write_text(text.replace(old, "{name: hgx08, priority: high}]   # an SM pair"))
    lines = runner.invoke(app, ["validate", str(spec)]).output.splitlines()
    at = next(i for i, line in enumerate(lines) if "priority: 'high'" in line or "'high'" in line)
    shown = lines[at + 1].split(" | ", 1)[1]
    written = spec.read_text().splitlines()[27]
    assert shown.endswith("...") and written.startswith(shown.removesuffix("...")) and len(shown) < len(written)
    caret = lines[at + 2].index("^") - lines[at + 1].index("hosts")
    assert lines[at + 1][lines[at + 1].index("hosts") + caret:].startswith("high")


def test_explain_fits_80_columns_without_cutting_a_cell() -> None:
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80"}
    result = subprocess.run([sys.executable, "-m", "fabricgen", "explain", str(INVENTORIES / "bench-16k.yaml")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    assert "rail-optimized" in result.stdout and "3276.8 Tb/s" in result.stdout


def test_a_source_line_never_shows_a_secret(tmp_path: Path) -> None:
    """A key written in clear is refused at its line; neither the report nor the line under it prints it."""
    spec = tmp_path / "spec.yaml"
    text = (INVENTORIES / "lab-1su.yaml").read_text()
    anchor = "        sm_key: {env: OPENSM_SM_KEY}"
    assert text.count(anchor) == 1
    spec.write_text(text.replace(anchor, '        sm_key: "0xfeedface1234"'))
    for command in (["validate", str(spec)], ["plan", str(spec), "-o", str(tmp_path / "out")]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1
        assert "keys.sm_key" in result.output and "0xfeedface1234" not in result.output, result.output


def _excerpt_of(spec: str) -> tuple[str, str]:
    """The source line `validate` shows under the spec's one problem, and the text from its caret on."""
    lines = runner.invoke(app, ["validate", spec]).output.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("  ") and " | " in line)
    shown, caret = lines[at].split(" | ", 1)[1], lines[at + 1].split(" | ", 1)[1]
    return shown, shown[caret.index("^"):]


@pytest.mark.parametrize(("spec", "shown", "at"), [
    # review B6: a P_Key is no secret (partitions.conf prints it), and its line stays as written
    ("tests/negative/sm-ipoib-mtu-beside-pkey.yaml",
     '        - {name: training, pkey: "0x8001", members: {groups: ["hgx{n:02d}"]}, ipoib: {mtu: 4000}}', "4000}}"),
    # the TACACS+ key's reference is replaced whole (braces balanced), and the caret moves with the text after it
    ("tests/negative/tacacs-server-beside-secret.yaml",
     "  tacacs: {key: <redacted>, servers: [10.99.0.49, 10.99.0.500]}   # the key is read on the switch",
     "10.99.0.500]}"),
])
def test_the_caret_stays_under_the_value_beside_a_redacted_secret(spec: str, shown: str, at: str) -> None:
    assert _excerpt_of(str(INVENTORIES.parent / spec)) == (shown, shown[shown.index(at):])


def test_a_problem_at_a_secret_field_shows_its_line_redacted() -> None:
    """Issue 19: a problem at a secret field (a value in clear, a bad variable name, two sources) prints its source
    line with the values the loader found there replaced, the caret under the field's text: a redacted value's
    start, a key written beside it where the problem is the key. The secrets themselves print nowhere."""
    case = "tests/negative/secret-problems-show-their-line.yaml"
    output = runner.invoke(app, ["validate", str(INVENTORIES.parent / case)]).output
    assert not {"pub1ic", "tacacs-k3y", "opensm-sm-k3y", "5ec1e7", "OPENSM_M_KEY"} & set(re.findall(r"[\w-]+", output))
    lines = output.splitlines()
    shown = {(line.split(": ")[2], lines[i + 1].split(" | ", 1)[1],
              lines[i + 1].split(" | ", 1)[1][lines[i + 2].split(" | ", 1)[1].index("^"):])
             for i, line in enumerate(lines) if ": error: " in line}
    tacacs = "  tacacs: {servers: [10.99.0.49], key: <redacted>, ntp_source: mgmt}   # a name no variable can have"
    assert shown == {
        ("management.snmp.community",
         "  snmp: {location: lab, community: <redacted>, contact: noc@example.net}   # the community in clear",
         "<redacted>, contact: noc@example.net}   # the community in clear"),
        ("management.tacacs.key.env", tacacs, tacacs[tacacs.index("<redacted>"):]),
        ("management.tacacs.ntp_source", tacacs, tacacs[tacacs.index("ntp_source"):]),
        ("fabrics.compute.subnet_manager.keys.sm_key.env", "          env: <redacted>", "<redacted>"),
        ("fabrics.compute.subnet_manager.keys.m_key", "        m_key: <redacted>", "m_key: <redacted>"),
        ("fabrics.compute.subnet_manager.keys.sa_key", "        sa_key: <redacted>", "<redacted>"),
    }


@pytest.mark.parametrize("typo", ["kye", "Key", "keys"])
def test_a_misspelt_secret_key_hides_the_value_typed_there(typo: str, tmp_path: Path) -> None:
    """A secret written under a misspelt secret key (one no schema declares that reads as one) is refused at the key,
    and the line shown under that problem hides the value as under the key itself; the caret stays on the key."""
    spec = tmp_path / "spec.yaml"
    text = (INVENTORIES.parent / "tests/negative/tacacs-server-beside-secret.yaml").read_text()
    spec.write_text(text.replace("key: {env: TACACS_KEY}", f'{typo}: "s3cr3t-value"'))
    output = runner.invoke(app, ["validate", str(spec)]).output
    assert f"unknown key '{typo}'" in output and "s3cr3t" not in output, output
    shown, at = _excerpt_of(str(spec))
    assert shown == (f"  tacacs: {{{typo}: <redacted>, servers: [10.99.0.49, 10.99.0.500]}}   # the key is read on "
                     "the switch") and at.startswith(f"{typo}: <redacted>")


def test_a_line_the_loader_could_not_compose_hides_secrets_by_their_key(tmp_path: Path) -> None:
    """A YAML syntax error leaves no loaded spans: the key is recognised as a whole word, its {env: ...} value
    replaced whole, the caret moved with it, and ``pkey`` left alone."""
    spec = tmp_path / "spec.yaml"
    text = (INVENTORIES.parent / "tests/negative/tacacs-server-beside-secret.yaml").read_text()
    spec.write_text(text.replace("10.99.0.500]}   # the key is read on the switch",
                                 '10.99.0.50]], pkey: "0x8001", sm_key: 0xfeedface}'))
    shown, at = _excerpt_of(str(spec))
    assert shown == ('  tacacs: {key: <redacted>, servers: [10.99.0.49, 10.99.0.50]], pkey: "0x8001", '
                     'sm_key: <redacted>}')
    assert at.startswith("], pkey"), at


def test_plan_and_apply_refuse_another_clusters_out(tmp_path: Path) -> None:
    """Review D11: a mistyped -o must not replace one cluster's whole handoff with another's as an ordinary plan;
    `plan -out` saves no plan apply would refuse; --force replaces it."""
    out, saved = tmp_path / "out", tmp_path / "other.plan"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    other = tmp_path / "other.yaml"
    text = Path(LAB).read_text()
    assert text.count("  name: lab-1su\n  site: lab\n") == 1
    other.write_text(text.replace("  name: lab-1su\n  site: lab\n", "  name: lab-b\n  site: lab2\n"))
    message = (f"{out} holds cluster lab-1su at lab (its lock file says so); this spec is cluster lab-b at lab2: "
               "planning it there would replace every file of lab-1su. Give another output directory (-o OUT); "
               "if this spec is lab-1su renamed (its name or site changed), plan and apply with --renamed-from "
               "lab-1su@lab; --force replaces any cluster's files, and files fabricgen did not create")
    lock = (out / "fabricgen.lock.json").read_bytes()
    for command in (["plan", "--detailed-exitcode"], ["plan", "-out", str(saved)], ["apply", "--yes"]):
        result = runner.invoke(app, [command[0], str(other), "-o", str(out), *command[1:]])
        assert result.exit_code == 1, result.output
        assert message in " ".join(result.stderr.split()) and "to delete" not in result.stdout, result.output
    assert not saved.exists() and (out / "fabricgen.lock.json").read_bytes() == lock
    as_json = json.loads(runner.invoke(app, ["plan", str(other), "-o", str(out), "--json"]).stdout)
    assert (as_json["valid"], as_json["stage"]) == (True, "output")
    assert runner.invoke(app, ["plan", str(other), "-o", str(out), "--force", "-out", str(saved)]).exit_code == 0
    assert runner.invoke(app, ["apply", str(saved)]).exit_code == 0
    assert json.loads((out / "fabricgen.lock.json").read_text())["cluster"] == {"name": "lab-b", "site": "lab2"}


def _renamed(tmp_path: Path, name: str, site: str) -> Path:
    """lab-1su's spec with another metadata name and site."""
    spec = tmp_path / f"{name}.yaml"
    spec.write_text(Path(LAB).read_text().replace("  name: lab-1su\n  site: lab\n",
                                                  f"  name: {name}\n  site: {site}\n"))
    return spec


def test_renamed_from_adopts_out_for_the_renamed_cluster_only(tmp_path: Path) -> None:
    """Review D11: a cluster or site renamed on purpose takes its OUT over with --renamed-from NAME@SITE, naming the
    cluster OUT holds (as Terraform's `moved` block names the old address). It is no --force: it refuses a third
    cluster's OUT and still refuses a file fabricgen did not create; plan, apply and a saved plan all take it."""
    out, saved = tmp_path / "out", tmp_path / "rename.plan"
    assert runner.invoke(app, ["apply", LAB, "-o", str(out), "--yes"]).exit_code == 0
    renamed, third = _renamed(tmp_path, "lab-b", "lab2"), _renamed(tmp_path, "lab-c", "lab3")
    lock = (out / "fabricgen.lock.json").read_bytes()
    # the old name is not enough, nor another cluster's: --renamed-from names exactly what the lock records
    for wrong in ("lab-1su", "lab-1su@lab2", "lab-b@lab2"):
        result = runner.invoke(app, ["plan", str(renamed), "-o", str(out), "--renamed-from", wrong])
        assert result.exit_code == 1 and f"holds cluster lab-1su at lab (its lock file says so), not {wrong}: " \
            "--renamed-from names the cluster OUT holds, here --renamed-from lab-1su@lab" in \
            " ".join(result.stderr.split()), result.output
    adopt = ["-o", str(out), "--renamed-from", "lab-1su@lab"]
    plan = runner.invoke(app, ["plan", str(renamed), *adopt, "--detailed-exitcode"])
    assert plan.exit_code == 2, plan.output
    assert " ".join(plan.stdout.split()).startswith(
        f"{out} holds cluster lab-1su at lab; this plan adopts it for cluster lab-b at lab2"), plan.stdout
    as_json = json.loads(runner.invoke(app, ["plan", str(renamed), *adopt, "--json"]).stdout)
    assert as_json["adopts_cluster"] == "lab-1su@lab" and as_json["summary"]["delete"] == 0
    # a file fabricgen did not create is still refused (--force's other half is not lifted)
    (out / "hosts/hgx01/netplan-roce.yaml").unlink()
    (out / "hosts/hgx01/netplan-roce.yaml").write_text("a hand-made file\n")
    (out / "fabricgen.lock.json").write_text(json.dumps({**json.loads(lock), "files": {
        k: v for k, v in json.loads(lock)["files"].items() if k != "hosts/hgx01/netplan-roce.yaml"}}))
    for command in (["plan", "-out", str(saved)], ["apply", "--yes"]):
        result = runner.invoke(app, [command[0], str(renamed), *adopt, *command[1:]])
        assert result.exit_code == 1 and "hosts/hgx01/netplan-roce.yaml" in result.stderr, result.output
    assert not saved.exists()
    (out / "hosts/hgx01/netplan-roce.yaml").unlink()
    (out / "fabricgen.lock.json").write_bytes(lock)
    # the saved plan keeps the option; apply PLANFILE takes no other
    assert runner.invoke(app, ["plan", str(renamed), *adopt, "-out", str(saved)]).exit_code == 0
    beside = runner.invoke(app, ["apply", str(saved), "--renamed-from", "lab-1su@lab"])
    assert beside.exit_code == 1 and "give none" in beside.stderr
    assert (out / "fabricgen.lock.json").read_bytes() == lock
    applied = runner.invoke(app, ["apply", str(saved)])
    assert applied.exit_code == 0 and "this plan adopts it for cluster lab-b at lab2" in applied.stdout, applied.output
    assert json.loads((out / "fabricgen.lock.json").read_text())["cluster"] == {"name": "lab-b", "site": "lab2"}
    # from then on OUT is lab-b's: the option adopts nothing, and says so after the listing (the other warnings
    # too), and the cluster it held is now the one refused
    again = runner.invoke(app, ["plan", str(renamed), *adopt, "--detailed-exitcode"])
    assert again.exit_code == 0 and "this plan adopts" not in again.stdout, again.output
    unused = (f"warning: [renamed-from] --renamed-from: {out} holds cluster lab-b at lab2 already (its lock file says "
              "so): --renamed-from lab-1su@lab has nothing to adopt (hint: drop --renamed-from: it is needed once, by "
              "the plan and apply that take OUT over from the name the cluster had)")
    assert " ".join(again.stderr.split()).endswith(unused), again.stderr
    assert "[dual-homing]" in again.stderr.split("[renamed-from]")[0]
    warned = json.loads(runner.invoke(app, ["plan", str(renamed), *adopt, "--json"]).stdout)["warnings"]
    assert (warned[-1]["check"], warned[-1]["path"], warned[-1]["severity"]) == (
        "renamed-from", "--renamed-from", "warning")
    assert "[renamed-from]" not in runner.invoke(app, ["plan", str(renamed), "-o", str(out)]).stderr
    refused = runner.invoke(app, ["apply", str(third), *adopt, "--yes"])
    assert refused.exit_code == 1 and "holds cluster lab-b at lab2" in refused.stderr, refused.output
    # apply (no saved plan) adopts too
    back = runner.invoke(app, ["apply", LAB, "-o", str(out), "--renamed-from", "lab-b@lab2", "--yes"])
    assert back.exit_code == 0, back.output
    assert json.loads((out / "fabricgen.lock.json").read_text())["cluster"] == {"name": "lab-1su", "site": "lab"}


def _tree(root: Path) -> dict[str, bytes]:
    """Every file fabricgen wrote under OUT (its lock too), by relative path; OUT/.fabricgen is its private state."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".fabricgen" not in p.relative_to(root).parts}


def test_the_same_spec_under_another_name_or_path_writes_the_same_bytes(tmp_path: Path) -> None:
    """Review D10: headers name the cluster, not the spec's file, so renaming or moving a spec (a GitOps repository,
    CI checking it out elsewhere) is no fleet-wide change: two applies compared byte for byte, and a plan of the
    moved spec into the first OUT changes nothing."""
    moved = tmp_path / "elsewhere" / "renamed-cluster-spec.yaml"
    moved.parent.mkdir()
    moved.write_bytes(Path(LAB).read_bytes())
    first, second = tmp_path / "first", tmp_path / "second"
    assert runner.invoke(app, ["apply", LAB, "-o", str(first), "--yes"]).exit_code == 0
    assert runner.invoke(app, ["apply", str(moved), "-o", str(second), "--yes"]).exit_code == 0
    one, two = _tree(first), _tree(second)
    assert len(one) == ARTIFACTS + 1 and one == two
    assert not any(b"lab-1su.yaml" in content or b"renamed-cluster-spec" in content for content in one.values())
    headers = re.compile(rb"fabricgen from\s*(?:[#!/;-]+\s*)?cluster lab-1su")  # a header wrapped in a comment too
    assert sum(bool(headers.search(content)) for content in one.values()) > 25
    again = runner.invoke(app, ["plan", str(moved), "-o", str(first), "--detailed-exitcode"])
    assert again.exit_code == 0 and "No changes." in again.output, again.output


def test_a_saved_plan_names_the_spec_and_out_as_plan_did(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review C6: the plan file holds absolute paths (it applies from anywhere), but applied from where it was made
    its warnings and OUT print relative, as the plan printed them."""
    monkeypatch.chdir(tmp_path)
    Path("lab.yaml").write_bytes(Path(LAB).read_bytes())
    planned = runner.invoke(app, ["plan", "lab.yaml", "-o", "out", "-out", "lab.plan"])
    assert planned.exit_code == 0 and "lab.yaml:47:5: warning:" in planned.stderr, planned.output
    applied = runner.invoke(app, ["apply", "lab.plan"])
    assert applied.exit_code == 0, applied.output
    assert "\nlab.yaml:47:5: warning:" in "\n" + applied.stderr and str(tmp_path) not in applied.output
    assert "fabricgen will make these changes in out:" in applied.stdout


def test_plan_groups_a_node_profiles_files_apart_from_a_nodes(tmp_path: Path) -> None:
    """Review C6: hosts/<profile>/ and hosts/<node>/ read alike as '# hosts/...'; they are headed as the switches
    are, '# node profile hgx-8gpu-generic' and '# node hgx01'."""
    result = runner.invoke(app, ["plan", LAB, "-o", str(tmp_path / "out")])
    headings = [line.strip() for line in result.stdout.splitlines() if line.startswith("  # ")]
    assert "# node profile hgx-8gpu-generic" in headings and "# node hgx01" in headings, headings
    assert not [h for h in headings if h.startswith("# hosts/")], headings
    cloud = runner.invoke(app, ["plan", str(INVENTORIES / "aws-p5-efa.yaml"), "-o", str(tmp_path / "aws")])
    assert "\n  # instance type p5.48xlarge\n  + hosts/p5.48xlarge/" in cloud.stdout, cloud.stdout


def test_an_unmanaged_table_counts_its_rows_as_added(tmp_path: Path) -> None:
    """Review C6: a cables.csv fabricgen did not create is no earlier version of the cable table: the plan counts
    the rendered cables as added (listing and summary) instead of a line diff against someone else's columns."""
    out = tmp_path / "out"
    (out / "cabling").mkdir(parents=True)
    (out / "cabling" / "cables.csv").write_text("my,own\n1,2\n")
    text = runner.invoke(app, ["plan", LAB, "-o", str(out), "--force"]).stdout
    rows = list(csv.DictReader(io.StringIO((INVENTORIES.parent / "tests/golden/lab-1su/cabling/cables.csv")
                                           .read_text())))
    cables = len({row["physical_cable"] for row in rows})  # physical cables, as the bill of materials counts them
    assert cables < len(rows)
    assert f"~ cabling/cables.csv  (unmanaged; not created by fabricgen; {cables} cables to add)" in text, text
    assert f"cables: {cables} to add, 0 to change, 0 to remove" in text
