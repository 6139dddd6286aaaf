"""``fabricgen verify --lldp`` on h100-4su's storage fabric: LLDP tables made from the plan itself (lldpctl JSON
for a leaf, SONiC's `show lldp table` for a spine) match it; two swapped cables are named exactly, from both of
their ends; a dark port is missing; a file that is not LLDP output says so, and nothing crashes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from tests.conftest import INVENTORIES, REPO

GOLDEN = REPO / "tests/golden/h100-4su"
SPEC = INVENTORIES / "h100-4su.yaml"


def _ends() -> dict[tuple[str, str], tuple[str, str, str]]:
    return _plan()[0]


def _plan(spec: Path = SPEC, out: Path = GOLDEN
          ) -> tuple[dict[tuple[str, str], tuple[str, str, str]], dict[tuple[str, str], str], set[str]]:
    """The planned ends of h100-4su's storage fabric, the Port IDs its switch ports are known by, its switches."""
    from fabricgen.features.ethernet.lldp import planned_ends, port_ids
    from fabricgen.features.lab import run
    from fabricgen.pipeline import compile_spec
    compiled = compile_spec(spec)
    [fl] = run.labs(compiled.topology, out, "storage", 1)
    [ft] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    return planned_ends(ft, fl.switches, compiled.topology.cables), port_ids(fl.switches), set(fl.switches)


def _lldpctl(device: str, rows: list[tuple[str, str, str]]) -> str:
    return json.dumps({"lldp": {"interface": [{local: {"chassis": {system: {"id": {"type": "mac", "value": "x"}}},
                                                        "port": {"id": {"type": "ifname", "value": port}}}}
                                               for local, system, port in rows]}})


def _sonic(rows: list[tuple[str, str, str]]) -> str:
    """lldpshow's table as tabulate lays it out: each column as wide as its widest cell, two spaces between."""
    header = ("LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr")
    cells = [header, *((local, system, port, "R", port) for local, system, port in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()

    lines = ["Capability codes: (R) Router, (B) Bridge, (O) Other", line(header), line(tuple("-" * w for w in widths))]
    lines += [line(row) for row in cells[1:]]
    lines += ["-" * 50, f"Total entries displayed:  {len(rows)}"]
    return "\n".join(lines) + "\n"


def _verify(folder: Path, spec: Path = SPEC, out: Path = GOLDEN, *flags: str) -> tuple[int, dict]:
    result = CliRunner().invoke(app, ["verify", str(spec), "--lldp", str(folder), "-o", str(out),
                                      "--fabric", "storage", "--json", *flags])
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
    text = " ".join(result.output.split())
    assert "storage-leaf001.txt is not LLDP output (lldpctl -f json, SONiC's `show lldp table`, NVUE's `nv show " \
           "interface -o json`, EOS's `show lldp neighbors [detail] | json`)" in text
    # every file that is none of the forms is named in the one report: a JSON object of neither shape too
    (tmp_path / "storage-spine01.json").write_text('{"swp1": {"mtu": 9216}}')
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN)])
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and "storage-leaf001.txt is not LLDP output" in text
    assert "storage-spine01.json is not LLDP output" in text and "'swp1' is not an NVUE interface object" in text
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


UPSTREAM = REPO / "tests/data/lldp"  # other NOSes' own JSON, captured upstream (tests/data/lldp/README.md)


def test_nvue_and_eos_json_as_captured_upstream() -> None:
    """NVUE's interface objects (Cumulus Linux 5.6; an EOS neighbour sends its interface name, a dark port and the
    loopback have no ``lldp``), EOS 4.28's detail (quoted ``interfaceId`` beside ``interfaceId_v2``: an EOS and a
    Cumulus 5.2 neighbour, ``swp52``), an older EOS detail (a server by MAC address with its interface name as
    description, a Junos port by name, a port without neighbours) and EOS's plain table (MAC addresses only)."""
    from fabricgen.features.ethernet.lldp import Neighbor, parse

    def read(name: str) -> list[Neighbor]:
        return parse(name, (UPSTREAM / name).read_text())

    assert read("nvue-interface-cumulus56.json") == [
        Neighbor("eth0", "rno1-m04-C10-leaf1.smn.lab1", "Ethernet2", "", "ifname")]
    assert read("eos-detail-eos428.json") == [
        Neighbor("Ethernet1", "PDX01-M01-G29-IPMITOR-01", "Ethernet51", "Uplink to IPMISPINE-01:Eth1", "ifname"),
        Neighbor("Ethernet3", "PDX01-M01-D36-IPMIFAB-01", "swp52", "PDX01-M01-G29-IPMISPINE-01:Et3", "ifname")]
    assert read("eos-detail-napalm-issue1153.json") == [
        Neighbor("Ethernet1/1", "some-server", "1ce7.1003.5413", "eth0", "mac"),
        Neighbor("Ethernet27/1", "some-switch", "et-0/0/20", "et-0/0/20", "ifname")]
    # a locally assigned Port ID comes quoted too (SuzieQ's EOS capture, ``"interfaceId": "\\"517\\""``)
    local = {"lldpNeighbors": {"Ethernet2": {"lldpNeighborInfo": [{"systemName": "leaf0", "neighborInterfaceInfo": {
        "interfaceIdType": "local", "interfaceId": '"etp1a"', "interfaceDescription": "leaf0:1/1"}}]}}}
    assert parse("x", json.dumps(local)) == [Neighbor("Ethernet2", "leaf0", "etp1a", "leaf0:1/1", "local")]
    assert read("eos-plain-napalm.json") == [Neighbor("Ethernet1", "precise64", "0800.274f.332d", "", "mac"),
                                             Neighbor("Ethernet2", "precise64", "0800.27ca.c5be", "", "mac")]


# What a port's neighbour sends, as each NOS's table shows it: (local port, system, Port ID, subtype, description)
Row = tuple[str, str, str, str, str]


def _nvue(rows: list[Row]) -> str:
    interfaces: dict[str, dict] = {}
    for local, system, port_id, kind, descr in rows:
        body = interfaces.setdefault(local, {"type": "swp", "link": {"mtu": 9216, "state": {"up": {}}}})
        body.setdefault("lldp", {"dcbx-pfc-tlv": "off", "neighbor": {}})["neighbor"][system] = {
            "age": "120", "chassis": {"chassis-id": "b8:3f:d2:00:00:01", "system-name": system},
            "port": {"description": descr, "name": port_id, "ttl": 120, "type": kind}}
    interfaces["lo"] = {"type": "loopback", "link": {"mtu": 65536}}
    return json.dumps(interfaces)


_EOS_TYPES = {"mac": "macAddress", "ifname": "interfaceName", "local": "local"}


def _eos_detail(rows: list[Row]) -> str:
    ports: dict[str, dict] = {}
    for local, system, port_id, kind, descr in rows:
        ports.setdefault(local, {"lldpNeighborInfo": []})["lldpNeighborInfo"].append({
            "chassisIdType": "macAddress", "chassisId": "001c.7300.0001", "systemName": system, "ttl": 120,
            "neighborInterfaceInfo": {"interfaceIdType": _EOS_TYPES[kind],
                                      "interfaceId": f'"{port_id}"' if kind == "ifname" else port_id,
                                      "interfaceDescription": descr}})
    ports.setdefault("Management1", {"lldpNeighborInfo": []})  # a port without neighbours
    return json.dumps({"lldpNeighbors": ports})


def _eos_plain(rows: list[Row]) -> str:
    return json.dumps({"tablesLastChangeTime": 1448356585.4, "lldpNeighbors": [
        {"ttl": 120, "neighborDevice": system, "neighborPort": port_id, "port": local}
        for local, system, port_id, _, _ in rows]})


def _sent(plan: tuple[dict[tuple[str, str], tuple[str, str, str]], dict[tuple[str, str], str], set[str]],
          device: str, sonic: bool) -> list[Row]:
    """The neighbours ``device`` sees when the cabling is as planned: a switch peer by the Port ID its NOS sends
    (SONiC's alias as a local ID, else the interface name), a host by its MAC address with its interface name as
    description (lldpd's default); local ports as the device's NOS names them (EOS ``Ethernet1/1``)."""
    ends, ids, switches = plan
    rows = []
    for (dev, port), (peer, peer_port, _) in sorted(ends.items()):
        if dev != device:
            continue
        local = ids.get((dev, port), port) if not sonic else port
        if peer not in switches:
            rows.append((local, peer, "0a:2b:1e:79:d5:48", "mac", peer_port))
        else:
            rows.append((local, peer, ids.get((peer, peer_port), peer_port), "local" if sonic else "ifname", ""))
    return rows


@pytest.fixture(scope="module", params=["nvue", "eos"])
def dialect(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, Path]:
    """h100-4su's storage fabric on NVUE or EOS (tests/test_golden.py's edit): (name, spec, OUT), OUT the
    example's golden with that dialect's switch configurations."""
    from tests.test_golden import DIALECTS
    old, new = DIALECTS[f"h100-4su-{request.param}"]
    folder = tmp_path_factory.mktemp(request.param)
    text = SPEC.read_text()
    assert text.count(old) == 1
    spec = folder / "h100-4su.yaml"
    spec.write_text(text.replace(old, new))
    out = folder / "out"
    out.mkdir()
    for part in GOLDEN.iterdir():
        (out / part.name).symlink_to(part if part.name != "switches"
                                     else REPO / f"tests/golden/h100-4su-{request.param}/switches")
    return request.param, spec, out


def _swap(rows: list[Row], a: int, b: int) -> list[Row]:
    """Two ports' cables exchanged at the far end: each local port now sees the other's neighbour."""
    out = list(rows)
    out[a], out[b] = (rows[a][0], *rows[b][1:]), (rows[b][0], *rows[a][1:])  # type: ignore[assignment]
    return out


def test_each_nos_json_matches_the_plan_and_names_a_swap(dialect: tuple[str, Path, Path], tmp_path: Path) -> None:
    """The plan's own neighbours in NVUE's or EOS's JSON (detail, and a spine in the plain form) verify clean;
    two uplinks swapped at a leaf and its spine are named, each from both ends, a dark host port as missing."""
    name, spec, out = dialect
    plan = _plan(spec, out)
    ends, ids, _ = plan
    if name == "eos":
        assert ids[("storage-leaf001", "et1_1")] == "Ethernet1/1"  # EOS's own name, the lab's kernel name beside
    form = _nvue if name == "nvue" else _eos_detail
    leaf = _sent(plan, "storage-leaf001", sonic=False)
    spine = _sent(plan, "storage-spine01", sonic=False)
    (tmp_path / "storage-leaf001.json").write_text(form(leaf))
    (tmp_path / "storage-spine01.json").write_text(_eos_plain(spine) if name == "eos" else form(spine))
    code, report = _verify(tmp_path, spec, out)
    assert code == 0 and report["findings"] == [], report
    assert "storage-leaf001" not in report["devices_without_table"] and "storage-spine02" in \
        report["devices_without_table"]
    uplinks = [i for i, r in enumerate(leaf) if r[1] == "storage-spine01"][:2]
    back = [next(i for i, r in enumerate(spine) if r[1] == "storage-leaf001" and r[2] == leaf[u][0]) for u in uplinks]
    host = next(i for i, r in enumerate(leaf) if r[3] == "mac")
    swapped = _swap(leaf, *uplinks)
    del swapped[host]
    (tmp_path / "storage-leaf001.json").write_text(form(swapped))
    spine_swapped = _swap(spine, *back)
    (tmp_path / "storage-spine01.json").write_text(_eos_plain(spine_swapped) if name == "eos"
                                                   else form(spine_swapped))
    code, report = _verify(tmp_path, spec, out)
    assert code == 1
    local = {port_id: port for (device, port), port_id in ids.items() if device == "storage-leaf001"}

    def label(row: Row) -> str:
        return ends[("storage-leaf001", local.get(row[0], row[0]))][2]

    labels = {label(leaf[u]) for u in uplinks}
    miswired = sorted(f["cable"] for f in report["findings"] if f["kind"] == "miswired")
    assert miswired == sorted(2 * list(labels)), report
    ends_named = {f["planned"].split(" <-> ")[0].split(":")[0] for f in report["findings"] if f["kind"] == "miswired"}
    assert ends_named == {"storage-leaf001", "storage-spine01"}
    assert [f["cable"] for f in report["findings"] if f["kind"] == "missing"] == [label(leaf[host])]
    assert len(report["findings"]) == 5


def test_a_partial_capture_judges_only_what_was_captured(tmp_path: Path) -> None:
    """A leaf's table whose host ports are dark (the hosts left out of a lab): without --only-present each such
    cable is missing, with it none is, a host port that sees a wrong neighbour still is miswired, and the
    devices without a table are listed either way."""
    leaf = _sent(_plan(), "storage-leaf001", sonic=True)
    hosts = [r for r in leaf if r[3] == "mac"]
    kept = [r for r in leaf if r[3] != "mac"]
    rows = [(r[0], r[1], r[2]) for r in kept]
    (tmp_path / "storage-leaf001.json").write_text(_lldpctl("storage-leaf001", rows))
    code, report = _verify(tmp_path)
    assert code == 1 and len(report["findings"]) == len(hosts)
    assert {f["kind"] for f in report["findings"]} == {"missing"}
    code, report = _verify(tmp_path, SPEC, GOLDEN, "--only-present")
    assert code == 0 and report["findings"] == [] and report["only_present"] is True
    assert {r[1] for r in hosts} <= set(report["devices_without_table"])
    wrong = [*rows, (hosts[0][0], "storage-spine01", "etp9a")]
    (tmp_path / "storage-leaf001.json").write_text(_lldpctl("storage-leaf001", wrong))
    code, report = _verify(tmp_path, SPEC, GOLDEN, "--only-present")
    assert code == 1 and [f["kind"] for f in report["findings"]] == ["miswired"]
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN), "--fabric",
                                      "storage", "--only-present"])
    text = " ".join(result.output.split())
    assert "planned devices (their cables are judged from the other end, not judged where dark (--only-present)):" \
        in text and hosts[0][1] in text


def test_a_fully_qualified_system_name_is_the_device() -> None:
    """EOS (and any NOS with a domain set) sends its FQDN as system name; a name that only begins alike is not."""
    from fabricgen.features.ethernet.lldp import Neighbor, compare
    planned = {("leaf0", "Ethernet8"): ("spine1", "Ethernet1/1", "C1")}
    ids = {("spine1", "et1_1"): "Ethernet1/1"}
    ok = Neighbor("Ethernet8", "spine1.dc1.example.net", "Ethernet1/1", "", "ifname")
    assert list(compare(planned, {"leaf0": [ok]}, ids)) == []
    [finding] = compare(planned, {"leaf0": [Neighbor("Ethernet8", "spine10", "Ethernet1/1", "", "ifname")]}, ids)
    assert finding.kind == "miswired"
    # EOS's plain table of a host that sends its MAC address as Port ID: the host is judged, its port cannot be
    host = {("leaf0", "Ethernet1/1"): ("gpu001", "enp24s0np0", "C2")}
    assert list(compare(host, {"leaf0": [Neighbor("Ethernet1/1", "gpu001", "0a2b.1e79.d548", "", "mac")]})) == []
    [finding] = compare(host, {"leaf0": [Neighbor("Ethernet1/1", "gpu002", "0a2b.1e79.d548", "", "mac")]})
    assert (finding.kind, finding.found) == ("miswired", "leaf0:Ethernet1/1 sees gpu002:0a2b.1e79.d548")


def _site(out: Path = GOLDEN) -> tuple[dict[str, list[tuple[str, str, str, str, str]]], dict]:
    """Every device's lldpctl table of h100-4su exactly as planned, the way a real site reports it: a host's
    lldpd lists every Ethernet NIC (storage and in-band), each switch its management port too (facing the site's
    management switch), SONiC peers by alias, hosts by MAC with the netdev as description; a BMC port's switch
    end sees the BMC under its own name or nothing. -> device: rows, and the planned ends of every fabric."""
    from fabricgen.features.ethernet.lldp import planned_ends, port_ids
    from fabricgen.features.lab import run
    from fabricgen.pipeline import compile_spec
    compiled = compile_spec(SPEC)
    ends: dict = {}
    ids: dict = {}
    switches: set[str] = set()
    for fl in run.labs(compiled.topology, out, None, 1):
        [ft] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == fl.lab.fabric]
        ends.update(planned_ends(ft, fl.switches, compiled.topology.cables))
        ids.update(port_ids(fl.switches))
        switches |= set(fl.switches)
    rows: dict[str, list[tuple[str, str, str, str, str]]] = {}
    for (dev, port), (peer, peer_port, _) in sorted(ends.items()):
        if peer_port == "bmc":
            if len(rows.get(dev, [])) % 2:
                rows.setdefault(dev, []).append((port, f"idrac-{peer.upper()}", "00:00:5e:00:53:01", "mac", "NIC.1"))
            continue
        if peer in switches:
            rows.setdefault(dev, []).append((port, peer, ids.get((peer, peer_port), peer_port), "local",
                                             f"{peer}:{peer_port}"))
        else:
            rows.setdefault(dev, []).append((port, f"{peer}.cluster.example.net", "0a:2b:1e:79:d5:48", "mac",
                                             peer_port))
    for sw in switches:
        rows.setdefault(sw, []).append(("eth0", "site-mgmt-sw07", "Gi1/0/12", "ifname", ""))
    return rows, ends


def _lldpctl_rows(rows: list[tuple[str, str, str, str, str]]) -> str:
    return json.dumps({"lldp": {"interface": [
        {local: {"chassis": {system: {"id": {"type": "mac", "value": "b8:3f:d2:00:00:01"}}},
                 "port": {"id": {"type": kind, "value": port_id}, "descr": descr}}}
        for local, system, port_id, kind, descr in rows]}})


def test_a_whole_site_cabled_as_planned_verifies_clean(tmp_path: Path) -> None:
    """h100-4su with every device's table as a real site gives it (every host NIC, the switches' management
    ports, BMC ports seen from the switch only) matches the plan with and without --fabric; a swap of two
    storage hosts' cables at their leaf is still named, and a host NIC that receives nothing is one-way."""
    rows, ends = _site()
    for device, table in rows.items():
        (tmp_path / f"{device}.json").write_text(_lldpctl_rows(table))
    every = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN), "--json"])
    assert every.exit_code == 0, every.output[-3000:]
    report = json.loads(every.output)
    assert report["findings"] == [] and report["devices_without_table"] == []
    code, report = _verify(tmp_path)
    assert code == 0 and report["findings"] == [], report["findings"][:5]
    leaf = rows["storage-leaf001"]
    a, b = (next(i for i, r in enumerate(leaf) if r[1].startswith(f"{h}.")) for h in ("gpu001", "gpu002"))
    (tmp_path / "storage-leaf001.json").write_text(_lldpctl_rows(_swap(leaf, a, b)))
    host = leaf[a][1].split(".")[0]
    one, two = (rows[h] for h in ("gpu001", "gpu002"))
    i, j = (next(k for k, r in enumerate(t) if r[1] == "storage-leaf001") for t in (one, two))
    (tmp_path / "gpu001.json").write_text(_lldpctl_rows([*one[:i], (one[i][0], *two[j][1:]), *one[i + 1:]]))
    (tmp_path / "gpu002.json").write_text(_lldpctl_rows([*two[:j], (two[j][0], *one[i][1:]), *two[j + 1:]]))
    dark = [r for r in rows["gpu003"] if r[1] != "storage-leaf001"]
    (tmp_path / "gpu003.json").write_text(_lldpctl_rows(dark))
    for flags in ((), ("--fabric", "storage")):
        result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN),
                                          "--json", *flags])
        assert result.exit_code == 1
        findings = json.loads(result.output)["findings"]
        labels = {ends[("storage-leaf001", leaf[i][0])][2] for i in (a, b)}
        assert sorted(f["cable"] for f in findings if f["kind"] == "miswired") == sorted(2 * list(labels))
        [one_way] = [f for f in findings if f["kind"] == "one-way"]
        assert one_way["planned"].startswith("gpu003:") and "gpu003 sees nothing" in one_way["found"]
        assert len(findings) == 5 and host in str(findings)
        # each miswired end says which planned cable belongs in the port it found, and where that port is
        leaf_end = next(f for f in findings if f["kind"] == "miswired" and f["planned"].startswith("storage-leaf001:"))
        [partner] = leaf_end["belongs"]
        assert partner["cable"] in labels - {leaf_end["cable"]} and partner["device"] in ("gpu001", "gpu002")
        assert partner["location"]["rack"] and partner["location"]["port"] == "Slot1P1"
        assert leaf_end["ends"][0]["location"]["device"] == "storage-leaf001"
    text = " ".join(CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN),
                                             "--fabric", "storage"]).output.split())
    assert "planned for" in text and "(N06 U9" in text and "A01 U2 gpu001 Slot1P1" in text
    # a host NIC no plan cables: facing a storage leaf it is storage's business, facing in-band's switch not
    for peer, count in (("storage-spine01", 1), ("inband-leaf001", 0)):
        extra = [*rows["gpu004"], ("eno1", peer, "etp64a", "local", "")]
        (tmp_path / "gpu004.json").write_text(_lldpctl_rows(extra))
        code, report = _verify(tmp_path)
        assert [f["found"].split(":")[:2] for f in report["findings"] if f["kind"] == "unexpected"] == \
            count * [["gpu004", f"eno1 sees {peer}"]], report["findings"]


def test_a_bmc_cable_is_judged_from_the_switch() -> None:
    """A BMC port has no agent the host's table shows: dark or seeing the BMC's own name is right, another
    planned device or the host's own NIC there is a miswire."""
    from fabricgen.features.ethernet.lldp import Neighbor, Scope, compare
    planned = {("oob-a01", "Ethernet0"): ("gpu001", "bmc", "C1"), ("oob-a01", "Ethernet1"): ("gpu002", "bmc", "C2"),
               ("gpu002", "enp1"): ("leaf1", "Ethernet0", "C3")}
    scope = Scope(agentless=frozenset({("gpu001", "bmc"), ("gpu002", "bmc")}))
    bmc = Neighbor("Ethernet0", "idrac-7XK2", "00:00:5e:00:53:01", "NIC.1", "mac")
    assert list(compare(planned, {"oob-a01": [bmc], "gpu001": []}, scope=scope)) == []
    wrong = Neighbor("Ethernet1", "gpu002.example.net", "0a:2b:1e:79:d5:48", "enp1", "mac")
    [finding] = compare(planned, {"oob-a01": [bmc, wrong]}, scope=scope)
    assert (finding.kind, finding.label) == ("miswired", "C2")
    other = Neighbor("Ethernet0", "gpu002", "0a:2b:1e:79:d5:48", "eno1", "mac")
    [finding] = compare(planned, {"oob-a01": [other]}, scope=scope)
    assert (finding.kind, finding.label) == ("miswired", "C1")


def test_table_files_are_named_by_device(tmp_path: Path) -> None:
    """A file named by the device's FQDN is that device's; a second file for one device, and a name that is no
    planned device, are refused in one report, with a hint."""
    spine = _sent(_plan(), "storage-spine01", sonic=True)
    (tmp_path / "storage-spine01.example.net.json").write_text(_lldpctl("x", [r[:3] for r in spine]))
    code, report = _verify(tmp_path)
    assert code == 0 and "storage-spine01" in report["devices"]
    (tmp_path / "storage-spine01.txt").write_text(_sonic([r[:3] for r in spine]))
    (tmp_path / "storage-leaf01.json").write_text(_lldpctl("x", []))
    result = CliRunner().invoke(app, ["verify", str(SPEC), "--lldp", str(tmp_path), "-o", str(GOLDEN)])
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "a second table for storage-spine01" in text
    assert "'storage-leaf01' is no planned device" in text and "did you mean 'storage-leaf001'?" in text


def test_sonic_table_is_cut_by_its_columns() -> None:
    """SONiC's `show lldp table` as sonic-utilities' own test expects it (descriptions with spaces, two
    neighbours on one port), and lldpshow's blank columns: a neighbour without a system name, a host without an
    enabled capability; each row cut at the dashes line's columns, a MAC address Port ID known as such."""
    from fabricgen.features.ethernet.lldp import Neighbor, parse
    assert parse("x", (UPSTREAM / "sonic-lldp-table-utilities.txt").read_text()) == [
        Neighbor("Ethernet0", "dummy", "00:00:00:00:00:01", "First MAC", "mac"),
        Neighbor("Ethernet0", "dummy", "00:00:00:00:00:02", "Second MAC", "mac")]
    blank = "\n".join([
        "Capability codes: (R) Router, (B) Bridge, (O) Other",
        "LocalPort    RemoteDevice    RemotePortID       Capability    RemotePortDescr",
        "-----------  --------------  -----------------  ------------  -----------------",
        "Ethernet0    gpu001          b8:3f:d2:00:00:01                enp170s0f0np0",
        "Ethernet4                    etp1a              BR            storage-leaf002:1/1",
        "Ethernet8    spine01         etp2a              BR",
        "--------------------------------------------------",
        "Total entries displayed:  3"])
    assert parse("x", blank) == [Neighbor("Ethernet0", "gpu001", "b8:3f:d2:00:00:01", "enp170s0f0np0", "mac"),
                                 Neighbor("Ethernet4", "", "etp1a", "storage-leaf002:1/1", ""),
                                 Neighbor("Ethernet8", "spine01", "etp2a", "", "")]
