"""fabricgen verify: ibnetdiscover parsing (both forms, recorded from ibsim) and the plan-vs-found comparison.

The recordings in tests/data/ibnetdiscover come from ibsim 0.10 booted with net files written from the plan of
tests/data/ibnetdiscover/tiny.yaml (make_netfiles.py, record.sh): 8 HCAs, 2 leaves, 2 spines, 16 cables, links
at 4xHDR (ibsim 0.10 knows no NDR, hence ``speed_as="HDR"``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.infiniband.discovery import (
    HCA,
    PORTS_FORM,
    SWITCH,
    TOPOLOGY_FORM,
    Discovered,
    ParseError,
    parse_ibnetdiscover,
)
from fabricgen.features.infiniband.verify import (
    End,
    Mismatch,
    MismatchKind,
    Report,
    compare,
    link_rate,
    planned_rates,
    report_to_json,
)
from fabricgen.features.infiniband.view import IbFabric, ib_fabric
from fabricgen.model.hardware import Speed
from fabricgen.pipeline import compile_spec
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "ibnetdiscover"
SPEC = DATA / "tiny.yaml"
FORMS = ("topology", "ports")
_TOPOLOGY = compile_spec(SPEC).topology
FABRIC = _TOPOLOGY.fabric("compute")
PLAN = ib_fabric(_TOPOLOGY, FABRIC)
runner = CliRunner()
NO_IB_SPEC = """apiVersion: fabricgen/v1
kind: Cluster
metadata: {name: no-ib, site: lab}
facility:
  rows:
    - {name: L, racks: 2}
    - {name: M, racks: 1, kind: network}
nodes:
  - {name: "hgx{n:02d}", count: 2, profile: hgx-8gpu-generic, placement: {rows: [L], per_rack: 2, start_u: 2}}
fabrics:
  storage: {type: roce, speed: 200G, switch: SN4700, topology: {kind: leaf-spine}}
"""

LEAF0, LEAF1, SPINE1, SPINE2 = "compute-su01-leaf0", "compute-su01-leaf1", "compute-spine001", "compute-spine002"


def recording(name: str, form: str) -> str:
    return (DATA / f"tiny-{name}.{form}.txt").read_text(encoding="utf-8")


def found(name: str, form: str) -> Discovered:
    return parse_ibnetdiscover(recording(name, form))


def check(discovered: Discovered, plan: IbFabric = PLAN, speed_as: str | None = "HDR") -> Report:
    rates = planned_rates(FABRIC.fabric, speed_as)
    return compare(plan, discovered, *rates[FABRIC.fabric.speed.name], rates=rates)


def without_guids(plan: IbFabric) -> IbFabric:
    return dataclasses.replace(plan, nodes=tuple(dataclasses.replace(n, node_guid=None, port_guid=None)
                                                 for n in plan.nodes))


def summary(report: Report) -> list[tuple[str, str, str, str, str]]:
    return [(f.kind.value, f.cable, f.device, f.expected, f.actual) for f in report.findings]


def ports_line(kind: str, lid: int, port: int, guid: int, rate: str, desc: str,
               remote: tuple[str, int, int, int, str] | None = None) -> str:
    """A line as ``ibnetdiscover -p`` prints it (dump_ports_report)."""
    width, speed = rate.split("x")
    text = f"{kind:>2} {lid:5d} {port:2d} 0x{guid:016x} {width}x {speed}"
    if remote is None:
        return f"{text}{'':36s}'{desc}'"
    rkind, rlid, rport, rguid, rdesc = remote
    return f"{text} - {rkind:>2} {rlid:5d} {rport:2d} 0x{rguid:016x} ( '{desc}' - '{rdesc}' )"


# -- parsing ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_parse_recorded_clean_fabric(form: str) -> None:
    discovered = found("ok", form)
    assert discovered.form == (TOPOLOGY_FORM if form == "topology" else PORTS_FORM)
    assert discovered.errors == ()
    assert sorted(d.description for d in discovered.devices) == sorted(n.description for n in PLAN.nodes)
    assert {d.description: d.kind for d in discovered.devices} == {
        n.description: (SWITCH if n.kind == "switch" else HCA) for n in PLAN.nodes}
    # every link is printed from both ends; the parser keeps each physical link once
    assert len(discovered.links) == len(PLAN.links) == 16
    pairs = {frozenset({(f.a.description, f.a.port), (f.z.description, f.z.port)}) for f in discovered.links}
    assert pairs == {frozenset({(p.a, p.a_port), (p.z, p.z_port)}) for p in PLAN.links}
    assert {(f.width, f.speed) for f in discovered.links} == {("4x", "HDR")}
    # GUIDs: node GUIDs from the topology form; the ports form prints port GUIDs only
    for node in PLAN.nodes:
        device = next(d for d in discovered.devices if d.description == node.description)
        if form == "topology":
            assert device.node_guid == node.node_guid
        else:
            assert device.node_guid is None
        assert device.guid == (node.node_guid if form == "topology" else node.port_guid)
        if node.kind == "hca":
            assert device.port_guid(1) == node.port_guid
    switch = next(d for d in discovered.devices if d.description == LEAF0)
    assert switch.ports == 64


def test_both_forms_agree() -> None:
    def links(d: Discovered) -> set[tuple[str, int, str, int, str]]:
        return {(f.a.description, f.a.port, f.z.description, f.z.port, f.rate) for f in d.links}

    for name in ("ok", "swapped", "faults"):
        assert links(found(name, "topology")) == links(found(name, "ports")), name


def test_topology_form_variants() -> None:
    """Shapes ibnetdiscover.c prints less often: enhanced switch port 0, --full tails, grouping (-g) lines and
    [ext N] ports, a CA cabled straight to another CA, a router."""
    text = "\n".join([
        "#", "# Topology file: generated on Mon Jan  1 00:00:00 2024", "#",
        "# Initiated from node 0002c90300000001 port 0002c90300000001",
        "", "Chassis 1 (guid 0x2c90300000100)", "", "# Spine Nodes",
        "vendid=0x2c9", "devid=0xd2f0", "sysimgguid=0x2c90300000001\t\t# Chassis 1",
        "switchguid=0x2c90300000001(2c90300000001)\t# MQM9700 leaf 1",
        'Switch\t64 "S-0002c90300000001"\t\t# "leaf-a" enhanced port 0 lid 1 lmc 0',
        '[1][ext 1]\t"H-0002c90300000010"[1](2c90300000011) \t\t# "h1 mlx5_0" lid 5 4xNDR s=4 w=2 v=4',
        '[2]\t"R-0002c90300000030"[1](2c90300000031) \t\t# "router" lid 7 2xNDR',
        "", "Non-Chassis Nodes", "",
        "caguid=0x2c90300000010",
        'Ca\t2 "H-0002c90300000010"\t\t# "h1 mlx5_0"',
        '[1](2c90300000011) \t"S-0002c90300000001"[1][ext 1]\t\t# lid 5 lmc 0 "leaf-a" lid 1 4xNDR',
        '[2](2c90300000012) \t"H-0002c90300000020"[1] (2c90300000021) \t\t# lid 6 lmc 0 "h2 mlx5_0" lid 8 4xFDR10',
        "", "rtguid=0x2c90300000030",
        'Rt\t1 "R-0002c90300000030"\t\t# "router"',
        '[1](2c90300000031) \t"S-0002c90300000001"[2]\t\t# lid 7 lmc 0 "leaf-a" lid 1 2xNDR',
    ])
    discovered = parse_ibnetdiscover(text)
    assert discovered.errors == ()
    assert [(d.description, d.kind, d.node_guid, d.port_guids) for d in discovered.devices] == [
        ("h1 mlx5_0", HCA, 0x2C90300000010, ((1, 0x2C90300000011), (2, 0x2C90300000012))),
        ("h2 mlx5_0", HCA, 0x2C90300000020, ((1, 0x2C90300000021),)),
        ("leaf-a", SWITCH, 0x2C90300000001, ((0, 0x2C90300000001),)),
        ("router", "router", 0x2C90300000030, ((1, 0x2C90300000031),)),
    ]
    assert [(str(f.a), str(f.z), f.rate) for f in discovered.links] == [
        ("h1 mlx5_0:1", "leaf-a:1", "4xNDR"), ("h1 mlx5_0:2", "h2 mlx5_0:1", "4xFDR10"),
        ("leaf-a:2", "router:1", "2xNDR")]


def test_unparseable_lines_are_reported_with_their_line_numbers() -> None:
    lines = recording("ok", "topology").splitlines()
    lines.insert(9, "ibwarn: [1234] mad_rpc: _do_madrpc failed; dport (DR path slid 0; dlid 0; 0,1,3)")
    lines[12] = lines[12].replace("4xHDR", "fast")  # a port line whose rate cannot be read
    discovered = parse_ibnetdiscover("\n".join(lines))
    assert [(e.line, e.message) for e in discovered.errors] == [
        (10, "not an ibnetdiscover topology line"),
        (13, "cannot read the remote NodeDescription, lid and width/speed"),
    ]
    assert discovered.errors[0].text.startswith("ibwarn:")
    assert str(discovered.errors[0]).startswith("line 10: not an ibnetdiscover topology line: 'ibwarn:")
    report = check(discovered)
    assert not report.clean
    unparsed = report.of_kind(MismatchKind.UNPARSED)
    assert [(f.line, f.found_text.split(":")[0]) for f in unparsed] == [(10, "line 10"), (13, "line 13")]


def test_unparseable_ports_line_and_port_line_outside_a_record() -> None:
    ports = recording("ok", "ports").splitlines()
    ports.insert(2, "SW  garbage")
    ports.insert(0, "ibwarn: [4242] _do_madrpc: recv failed: Connection timed out")  # stderr captured too
    discovered = parse_ibnetdiscover("\n".join(ports))
    assert discovered.form == PORTS_FORM
    assert [(e.line, e.message) for e in discovered.errors] == [
        (1, "not an ibnetdiscover -p line"), (4, "not an ibnetdiscover -p line")]
    assert len(discovered.links) == 16
    orphan = '[1]\t"S-0002c90301000001"[1]\t\t# "compute-su01-leaf0" lid 1 4xHDR'
    discovered = parse_ibnetdiscover(f"#\n# Topology file\n#\n\n{orphan}\n")
    assert discovered.errors == (ParseError(5, "port line outside a node record", orphan),)


def test_empty_output_is_an_error() -> None:
    discovered = parse_ibnetdiscover("")
    assert discovered.errors == (ParseError(1, "no ibnetdiscover records (empty output?)", ""),)
    report = check(discovered)
    assert not report.clean
    assert len(report.of_kind(MismatchKind.MISSING)) == 16


def test_ends_that_disagree_are_a_parse_error() -> None:
    text = recording("ok", "topology").replace(
        '[1](2c90302000011) \t"S-0002c90301000001"[1]', '[1](2c90302000011) \t"S-0002c90301000001"[9]')
    discovered = parse_ibnetdiscover(text)
    assert len(discovered.errors) == 1
    assert "is shown connected to" in discovered.errors[0].message


def test_ports_form_separates_cas_sharing_a_description() -> None:
    text = "\n".join([
        ports_line("SW", 1, 1, 0x10, "4xHDR", "sw", ("CA", 2, 1, 0x21, "host mlx5_0")),
        ports_line("SW", 1, 2, 0x10, "4xHDR", "sw", ("CA", 3, 1, 0x31, "host mlx5_0")),
        ports_line("SW", 1, 3, 0x10, "4xSDR", "sw"),
        ports_line("CA", 2, 1, 0x21, "4xHDR", "host mlx5_0", ("SW", 1, 1, 0x10, "sw")),
        ports_line("CA", 3, 1, 0x31, "4xHDR", "host mlx5_0", ("SW", 1, 2, 0x10, "sw")),
    ])
    discovered = parse_ibnetdiscover(text)
    assert discovered.errors == ()
    assert [(d.key, d.description, d.ports) for d in discovered.devices] == [
        ("H-0000000000000021", "host mlx5_0", 1), ("H-0000000000000031", "host mlx5_0", 1),
        ("S-0000000000000010", "sw", 3)]
    assert len(discovered.links) == 2


# -- comparison ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_recorded_fabric_matches_its_plan(form: str) -> None:
    report = check(found("ok", form))
    assert report.clean, summary(report)
    assert (report.planned_links, report.found_links, report.matched_links) == (16, 16, 16)
    assert (report.planned_devices, report.found_devices) == (12, 12)


def test_planned_speed_is_the_default() -> None:
    report = check(found("ok", "topology"), speed_as=None)
    assert {f.kind for f in report.findings} == {MismatchKind.WRONG_SPEED}
    assert len(report.findings) == 16
    assert {(f.expected, f.actual) for f in report.findings} == {("NDR", "HDR")}


@pytest.mark.parametrize("form", FORMS)
def test_swapped_cables_are_exactly_those_two_cables(form: str) -> None:
    report = check(found("swapped", form))
    assert report.findings == tuple(report.of_kind(MismatchKind.MISWIRED))
    node01_0, node01_1 = End("node01 mlx5_0", 1), End("node01 mlx5_1", 1)
    leaf0_1, leaf1_1 = End(LEAF0, 1), End(LEAF1, 1)
    assert [(f.cable, f.planned, f.found) for f in report.findings] == [
        ("compute-su01-leaf0-001", (node01_0, leaf0_1), (leaf1_1, node01_1)),
        ("compute-su01-leaf1-001", (node01_1, leaf1_1), (leaf0_1, node01_0)),
    ]
    first = report.findings[0]
    assert first.label == "compute-su01-leaf0-001 node01:NIC0 compute-su01-leaf0:1/1"
    assert "(planned for cable compute-su01-leaf1-001)" in first.message
    assert first.found_text == (
        "node01 mlx5_0:1 <-> compute-su01-leaf1:1; compute-su01-leaf0:1 <-> node01 mlx5_1:1")
    assert report.matched_links == 14


@pytest.mark.parametrize("form", FORMS)
def test_recorded_faults(form: str) -> None:
    """One recording with a cable left out, an extra cable, a NodeDescription not set, a duplicate
    NodeDescription, a link at 2x and one at EDR: the plan has GUIDs, so the devices are matched by GUID."""
    report = check(found("faults", form))
    dup = "0x0002c90302000070, 0x0002c90302000080" if form == "topology" else "0x0002c90302000071, 0x0002c90302000081"
    assert summary(report) == [
        ("duplicate", "", "node04 mlx5_1", "", dup),
        ("renamed", "", "node02 mlx5_0", "node02 mlx5_0", "MT4129 ConnectX7 Mellanox Technologies"),
        ("renamed", "", "node03 mlx5_1", "node03 mlx5_1", "node04 mlx5_1"),
        ("missing", "compute-spine002-004", "", "", ""),
        ("unexpected", "", "", "", "4xHDR"),
        ("wrong-width", "compute-spine001-002", "", "4x", "2x"),
        ("wrong-speed", "compute-spine002-002", "", "HDR", "EDR"),
    ]
    missing = report.of_kind(MismatchKind.MISSING)[0]
    assert missing.planned == (End(LEAF1, 8), End(SPINE2, 4))
    assert missing.label == "compute-spine002-004 compute-su01-leaf1:4/2 compute-spine002:2/2"
    unexpected = report.of_kind(MismatchKind.UNEXPECTED)[0]
    assert unexpected.found == (End(LEAF0, 9), End(LEAF1, 9))
    width = report.of_kind(MismatchKind.WRONG_WIDTH)[0]
    assert width.planned == (End(LEAF0, 6), End(SPINE1, 2))
    assert width.planned_text == "compute-su01-leaf0:6 <-> compute-spine001:2 at 4x"
    assert all(f.line is not None for f in report.findings if f.kind is not MismatchKind.MISSING)


def test_without_guids_devices_are_matched_by_node_description() -> None:
    report = check(found("faults", "ports"), plan=without_guids(PLAN))
    kinds = [(f.kind.value, f.cable or f.device) for f in report.findings]
    assert kinds == [
        ("duplicate", "node04 mlx5_1"),
        ("missing-device", "node02 mlx5_0"),
        ("missing-device", "node03 mlx5_1"),
        ("unexpected-device", "MT4129 ConnectX7 Mellanox Technologies"),
        ("miswired", "compute-su01-leaf0-002"),
        ("miswired", "compute-su01-leaf1-003"),
        ("missing", "compute-spine002-004"),
        ("unexpected", ""),
        ("wrong-width", "compute-spine001-002"),
        ("wrong-speed", "compute-spine002-002"),
    ]
    renamed_cable = report.of_kind(MismatchKind.MISWIRED)[0]
    assert renamed_cable.found == (None, End("MT4129 ConnectX7 Mellanox Technologies", 1))
    assert renamed_cable.found_text == (
        "node02 mlx5_0:1 <-> nothing; compute-su01-leaf0:2 <-> MT4129 ConnectX7 Mellanox Technologies:1")


def test_missing_link() -> None:
    # drop both ends' lines of cable compute-spine002-004 (leaf1 port 8 <-> spine002 port 4)
    lines = [line for line in recording("ok", "ports").splitlines()
             if not line.startswith(("SW     2  8 ", "SW     4  4 "))]
    assert len(lines) == len(recording("ok", "ports").splitlines()) - 2
    report = check(parse_ibnetdiscover("\n".join(lines)))
    assert [(f.kind, f.cable, f.planned, f.found) for f in report.findings] == [
        (MismatchKind.MISSING, "compute-spine002-004", (End(LEAF1, 8), End(SPINE2, 4)), (None, None))]


def test_unexpected_link() -> None:
    leaf0, leaf1 = 0x0002C90301000001, 0x0002C90301000002
    text = recording("ok", "ports").replace(
        ports_line("SW", 1, 20, leaf0, "4xSDR", LEAF0),
        ports_line("SW", 1, 20, leaf0, "4xHDR", LEAF0, ("SW", 2, 21, leaf1, LEAF1)),
    ).replace(
        ports_line("SW", 2, 21, leaf1, "4xSDR", LEAF1),
        ports_line("SW", 2, 21, leaf1, "4xHDR", LEAF1, ("SW", 1, 20, leaf0, LEAF0)),
    )
    report = check(parse_ibnetdiscover(text))
    assert [(f.kind, f.cable, f.planned, f.found, f.actual) for f in report.findings] == [
        (MismatchKind.UNEXPECTED, "", (), (End(LEAF0, 20), End(LEAF1, 21)), "4xHDR")]


def test_renamed_node_description_with_matching_guid() -> None:
    text = recording("ok", "topology").replace('"node02 mlx5_0"', '"localhost mlx5_0"')
    report = check(parse_ibnetdiscover(text))
    assert report.findings == (Mismatch(
        MismatchKind.RENAMED,
        "hca planned as 'node02 mlx5_0' (0x0002c90302000020) reports NodeDescription 'localhost mlx5_0': set it to "
        "'node02 mlx5_0'; its links are checked as the planned device's",
        device="node02 mlx5_0", expected="node02 mlx5_0", actual="localhost mlx5_0", line=100),)


def test_guid_mismatch_when_matched_by_description() -> None:
    nodes = tuple(dataclasses.replace(n, node_guid=0x0002C903FFFF0001, port_guid=0x0002C903FFFF0001)
                  if n.description == SPINE1 else n for n in PLAN.nodes)
    report = check(found("ok", "topology"), plan=dataclasses.replace(PLAN, nodes=nodes))
    assert summary(report) == [("guid-mismatch", "", SPINE1, "0x0002c903ffff0001", "0x0002c90301000003")]


def test_ordering_is_deterministic() -> None:
    one = check(found("faults", "topology"), plan=without_guids(PLAN))
    two = check(parse_ibnetdiscover("\n".join(reversed(recording("faults", "topology").split("\n\n")))),
                plan=without_guids(PLAN))
    assert [(f.kind, f.cable, f.device, f.planned, f.found) for f in one.findings] == [
        (f.kind, f.cable, f.device, f.planned, f.found) for f in two.findings]


def test_link_rates() -> None:
    ndr = Speed("NDR", 400, "infiniband", 4, "4xNDR")
    assert link_rate(ndr) == ("4x", "NDR")
    assert link_rate(ndr, "HDR") == ("4x", "HDR")
    assert link_rate(Speed("NDR200", 200, "infiniband", 2, "2xNDR")) == ("2x", "NDR")
    assert link_rate(Speed("HDR100", 100, "infiniband", 2, "2xHDR"), "EDR") == ("2x", "EDR")
    assert link_rate(Speed("XYZ", 1, "infiniband", 1)) == ("1x", "XYZ")
    assert planned_rates(FABRIC.fabric) == {"NDR": ("4x", "NDR")}


def test_report_json_shape() -> None:
    data = report_to_json(check(found("swapped", "ports")))
    assert data["clean"] is False
    assert data["summary"] == {"planned_links": 16, "found_links": 16, "matched_links": 14, "planned_devices": 12,
                               "found_devices": 12, "findings": {"miswired": 2}}
    first = data["findings"][0]
    assert set(first) == {"kind", "cable", "label", "planned", "found", "device", "expected", "actual", "line",
                          "message"}
    assert first["planned"] == [{"device": "node01 mlx5_0", "port": 1}, {"device": LEAF0, "port": 1}]
    assert first["found"] == [{"device": LEAF1, "port": 1}, {"device": "node01 mlx5_1", "port": 1}]
    json.dumps(data)


# -- CLI -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("form", FORMS)
def test_cli_clean_fabric_exits_0(form: str) -> None:
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(DATA / f"tiny-ok.{form}.txt"),
                                 "--speed-as", "HDR"])
    assert result.exit_code == 0, result.output
    assert "the fabric matches the plan" in result.output


def test_cli_mismatch_exits_1_with_a_table() -> None:
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(DATA / "tiny-swapped.topology.txt"),
                                 "--speed-as", "hdr"])
    assert result.exit_code == 1, result.output
    assert "miswired" in result.output
    assert "2 differences: 2 miswired" in result.output
    # each end where a technician finds it: rack, U, device and faceplate port, beside the port the fabric reports
    table = [line.strip()[1:-1].split("│") for line in result.output.splitlines() if line.startswith("│")]
    cells = [[cell.strip() for cell in row] for row in table]
    assert cells[0] == ["miswired", "compute-su01-leaf0-001", "L01 U2 node01 NIC0 (IB port 1)",
                        "M01 U2 compute-su01-leaf1 1/1 (IB port 1)"]
    assert cells[1] == ["", "", "M01 U1 compute-su01-leaf0 1/1 (IB port 1)", "L01 U2 node01 NIC1 (IB port 1)"]


def test_cli_json_carries_where_each_end_is() -> None:
    """verify --json gives each end the rack, U, device and faceplate port the table prints (a tool that opens
    work orders needs them as fields, not text)."""
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(DATA / "tiny-swapped.topology.txt"),
                                 "--speed-as", "hdr", "--json"])
    assert result.exit_code == 1, result.output
    first = json.loads(result.stdout)["findings"][0]
    assert first["planned"] == [
        {"device": "node01 mlx5_0", "port": 1, "location": {"rack": "L01", "u": 2, "device": "node01",
                                                            "port": "NIC0"}},
        {"device": LEAF0, "port": 1, "location": {"rack": "M01", "u": 1, "device": LEAF0, "port": "1/1"}}]
    assert first["found"][0]["location"] == {"rack": "M01", "u": 2, "device": LEAF1, "port": "1/1"}


def test_cli_garbage_is_not_ibnetdiscover_output(tmp_path: Path) -> None:
    garbage = tmp_path / "notes.txt"
    garbage.write_text("hello\nthis is not a fabric\n")
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(garbage)])
    assert result.exit_code == 1
    assert f"{garbage} is not ibnetdiscover output: no Switch or Ca record (line 1: 'hello')" in result.stderr
    assert "missing" not in result.output
    empty = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", "-", "--json"], input="")
    assert empty.exit_code == 1 and "stdin is not ibnetdiscover output" in empty.stderr
    failed = json.loads(empty.stdout)  # the spec is valid; verify stopped at the discovery (review D4)
    assert (failed["valid"], failed["error"], failed["stage"]) == (True, True, "verify")


def test_cli_planned_speed_by_default() -> None:
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(DATA / "tiny-ok.ports.txt")])
    assert result.exit_code == 1, result.output
    assert "16 wrong-speed" in result.output


def test_cli_json() -> None:
    result = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", "-", "--json", "--speed-as", "HDR",
                                 "--fabric", "compute"], input=recording("faults", "ports"))
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert {k: data[k] for k in ("fabric", "form", "expected_rate", "clean")} == {
        "fabric": "compute", "form": "ports", "expected_rate": "4xHDR", "clean": False}
    assert data["summary"]["findings"] == {"duplicate": 1, "renamed": 2, "missing": 1, "unexpected": 1,
                                           "wrong-width": 1, "wrong-speed": 1}
    assert [f["kind"] for f in data["findings"]] == ["duplicate", "renamed", "renamed", "missing", "unexpected",
                                                     "wrong-width", "wrong-speed"]

    clean = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(DATA / "tiny-ok.topology.txt"),
                                "--json", "--speed-as", "HDR"])
    assert clean.exit_code == 0, clean.output
    assert json.loads(clean.stdout)["clean"] is True
    assert json.loads(clean.stdout)["findings"] == []


def test_cli_errors_exit_1(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["verify", str(SPEC), "--ibnetdiscover", str(tmp_path / "nope.txt")])
    assert missing.exit_code == 1
    assert "cannot read the ibnetdiscover output" in missing.output
    assert "No such file or directory" in missing.output

    lab = str(REPO / "inventories" / "lab-1su.yaml")
    ok = str(DATA / "tiny-ok.ports.txt")
    not_ib = runner.invoke(app, ["verify", lab, "--ibnetdiscover", ok, "--fabric", "storage"])
    assert not_ib.exit_code == 1
    assert "fabric 'storage' is not InfiniBand; InfiniBand fabrics: compute" in not_ib.output

    two = tmp_path / "two.yaml"
    two.write_text(SPEC.read_text(encoding="utf-8").replace(
        "        - {gpu: 1, dev: mlx5_1, netdev: ib1, port: NIC1, model: ConnectX-7-OSFP}\n",
        "        - {gpu: 1, dev: mlx5_1, netdev: ib1, port: NIC1, model: ConnectX-7-OSFP}\n"
        "      storage:\n        - {dev: mlx5_2, netdev: ib2, port: NIC2, model: ConnectX-7-OSFP}\n",
    ) + "  storage:\n    type: infiniband\n    speed: NDR\n    switch: QM9700\n    topology: {kind: leaf-spine}\n",
        encoding="utf-8")
    several = runner.invoke(app, ["verify", str(two), "--ibnetdiscover", ok])
    assert several.exit_code == 1
    assert "several InfiniBand fabrics (compute, storage): choose one with --fabric" in several.output
    chosen = runner.invoke(app, ["verify", str(two), "--ibnetdiscover", ok, "--fabric", "compute", "--speed-as", "HDR"])
    assert chosen.exit_code == 0, chosen.output

    no_ib = tmp_path / "no-ib.yaml"
    no_ib.write_text(NO_IB_SPEC, encoding="utf-8")
    none = runner.invoke(app, ["verify", str(no_ib), "--ibnetdiscover", ok])
    assert none.exit_code == 1, none.output
    assert "the spec has no InfiniBand fabric to verify" in none.output

    bad_spec = runner.invoke(app, ["verify", str(tmp_path / "absent.yaml"), "--ibnetdiscover", ok])
    assert bad_spec.exit_code == 1
