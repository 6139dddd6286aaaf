"""``fabricgen verify --lldp`` on h100-4su's storage fabric: LLDP tables made from the plan itself (lldpctl JSON
for a leaf, SONiC's `show lldp table` for a spine) match it; two swapped cables are named exactly, from both of
their ends; a dark port is missing; a file that is not LLDP output says so, and nothing crashes."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from fabricgen.cli import app
from tests.conftest import INVENTORIES, REPO

GOLDEN = REPO / "tests/golden/h100-4su"
SPEC = INVENTORIES / "h100-4su.yaml"


def _ends() -> dict[tuple[str, str], tuple[str, str, str]]:
    from fabricgen.features.ethernet.lldp import planned_ends
    from fabricgen.features.lab import run
    from fabricgen.pipeline import compile_spec
    compiled = compile_spec(SPEC)
    [fl] = run.labs(compiled.topology, GOLDEN, "storage", 1)
    [ft] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    return planned_ends(ft, fl.switches, compiled.topology.cables)


def _lldpctl(device: str, rows: list[tuple[str, str, str]]) -> str:
    return json.dumps({"lldp": {"interface": [{local: {"chassis": {system: {"id": {"type": "mac", "value": "x"}}},
                                                        "port": {"id": {"type": "ifname", "value": port}}}}
                                               for local, system, port in rows]}})


def _sonic(rows: list[tuple[str, str, str]]) -> str:
    lines = ["Capability codes: (R) Router, (B) Bridge, (O) Other",
             "LocalPort    RemoteDevice     RemotePortID    Capability    RemotePortDescr",
             "-----------  ---------------  --------------  ------------  -----------------"]
    lines += [f"{local}  {system}  {port}  R  {port}" for local, system, port in rows]
    lines += ["--------------------------------------------------", f"Total entries displayed:  {len(rows)}"]
    return "\n".join(lines) + "\n"


def _verify(folder: Path) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(folder), "-o", str(GOLDEN),
                                      "--fabric", "storage", "--json"])
    assert "Traceback" not in result.output
    return result.exit_code, json.loads(result.output[result.output.index("{"):]) if "{" in result.output else {}


def test_lldp_matches_and_names_a_swap(tmp_path: Path) -> None:
    ends = _ends()
    leaf = sorted((port, peer, peer_port) for (dev, port), (peer, peer_port, _) in ends.items()
                  if dev == "storage-leaf001")
    spine = sorted((port, peer, peer_port) for (dev, port), (peer, peer_port, _) in ends.items()
                   if dev == "storage-spine01")
    (tmp_path / "storage-leaf001.json").write_text(_lldpctl("storage-leaf001", leaf))
    (tmp_path / "storage-spine01.txt").write_text(_sonic(spine))
    code, report = _verify(tmp_path)
    assert code == 0 and report["findings"] == [], report
    # swap two uplinks of leaf001 to spine01 (both ends see the swap), and unplug one host port
    uplinks = [i for i, r in enumerate(leaf) if r[1] == "storage-spine01"]
    a, b = uplinks[0], uplinks[1]
    swapped = list(leaf)
    swapped[a], swapped[b] = (leaf[a][0], *leaf[b][1:]), (leaf[b][0], *leaf[a][1:])
    host = next(i for i, r in enumerate(leaf) if r[1].startswith("gpu"))
    del swapped[host]
    (tmp_path / "storage-leaf001.json").write_text(_lldpctl("storage-leaf001", swapped))
    back = {(r[1], r[2]): r for r in spine}
    sp = list(spine)
    ia, ib = sp.index(back[("storage-leaf001", leaf[a][0])]), sp.index(back[("storage-leaf001", leaf[b][0])])
    sp[ia], sp[ib] = (sp[ia][0], sp[ib][1], sp[ib][2]), (sp[ib][0], sp[ia][1], sp[ia][2])
    (tmp_path / "storage-spine01.txt").write_text(_sonic(sp))
    code, report = _verify(tmp_path)
    assert code == 1
    kinds = sorted((f["kind"], f["cable"].split()[0]) for f in report["findings"])
    labels = {ends[("storage-leaf001", leaf[i][0])][2].split()[0] for i in (a, b)}
    assert [k for k in kinds if k[0] == "miswired"] == sorted(("miswired", c) for c in labels for _ in range(2))
    dark = ends[("storage-leaf001", leaf[host][0])][2].split()[0]
    assert [k for k in kinds if k[0] == "missing"] == [("missing", dark)]
    assert len(kinds) == 5


def test_garbage_is_not_lldp_output(tmp_path: Path) -> None:
    (tmp_path / "storage-leaf001.txt").write_text("Hello, world\n")
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "storage-leaf001.txt is not LLDP output (lldpctl -f json, or SONiC's `show lldp table`)" in \
        " ".join(result.output.split())
    (tmp_path / "storage-leaf001.txt").write_text('{"lldp": 3}')
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN)])
    assert result.exit_code == 1 and "is not LLDP output" in " ".join(result.output.split())


def test_verify_needs_one_source() -> None:
    result = CliRunner().invoke(app, ["verify", str(SPEC)])
    assert result.exit_code == 1
    text = " ".join(result.output.split())
    assert "give one of --ibnetdiscover FILE (InfiniBand) or --lldp FILE|DIR (Ethernet)" in text


LLDPD = REPO / "tests/data/lab/lldp"  # lldpd 1.0.16's own `lldpctl -f json`, captured in lab namespaces


def test_lldpctl_json_in_each_of_its_shapes() -> None:
    """One neighbour is an object keyed by the interface, several a list of one-key objects, none no key at all;
    a SONiC port goes out with its alias as Port ID (lldpmgrd's form), a host port with its MAC address as Port ID
    and its interface name as description (lldpd's default without an ifAlias)."""
    from fabricgen.features.ethernet.lldp import Neighbor, parse
    one = json.loads((LLDPD / "one-neighbour-dgx01.json").read_text())
    assert isinstance(one["lldp"]["interface"], dict)
    assert parse("dgx01", (LLDPD / "one-neighbour-dgx01.json").read_text()) == [
        Neighbor("enp24s0np0", "compute-su01-leaf0", "etp1a", "dgx01:OSFP4P2", "local")]
    [host] = parse("compute-su01-leaf0", (LLDPD / "one-neighbour-compute-su01-leaf0.json").read_text())
    assert (host.local_port, host.system, host.port_descr, host.port_id_type) == (
        "Ethernet0", "dgx01", "enp24s0np0", "mac")
    three = (LLDPD / "three-neighbours-compute-su01-leaf0.json").read_text()
    assert isinstance(json.loads(three)["lldp"]["interface"], list)
    assert [(n.local_port, n.system, n.port_id_type, n.port_descr if n.port_id_type == "mac" else n.port_id)
            for n in parse("compute-su01-leaf0", three)] == [
        ("Ethernet0", "dgx01", "mac", "enp24s0np0"), ("Ethernet8", "compute-spine001", "local", "etp1a"),
        ("Ethernet12", "compute-spine002", "local", "etp1a")]
    assert parse("idle", '{\n  "lldp": {\n    \n  }\n}\n') == []


def test_a_port_listing_an_old_and_a_new_neighbour_is_judged_by_both() -> None:
    """lldpd keeps a neighbour until its TTL runs out: a cable moved shows both, and the right one must not hide
    the wrong one; a SONiC peer is matched by its alias."""
    from fabricgen.features.ethernet.lldp import Neighbor, compare
    planned = {("leaf0", "Ethernet8"): ("spine1", "Ethernet0", "C1")}
    ids = {("spine1", "Ethernet0"): "etp1a", ("spine1", "Ethernet4"): "etp1b"}
    right = Neighbor("Ethernet8", "spine1", "etp1a", "leaf0:2/1", "local")
    wrong = Neighbor("Ethernet8", "spine1", "etp1b", "leaf1:2/1", "local")
    assert list(compare(planned, {"leaf0": [right]}, ids)) == []
    [finding] = compare(planned, {"leaf0": [right, wrong]}, ids)
    assert (finding.kind, finding.label, finding.found) == (
        "miswired", "C1", "leaf0:Ethernet8 sees spine1:Ethernet0 and spine1:Ethernet4")
