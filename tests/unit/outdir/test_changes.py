"""What plan says changes inside files: table rows by their declared identity, lines elsewhere, saved plans."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.core.artifacts import Artifact, Places, Table
from fabricgen.core.errors import OutputError
from fabricgen.outdir import changes
from fabricgen.outdir.apply import apply_plan
from fabricgen.outdir.changes import RowKind, describe
from fabricgen.outdir.plan import Action, Plan, compute_plan

# a port "n1:1" is held by device "n1" (its first two characters: format's precision)
CABLES = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}",
               parts=(("port", "{a}", "{a:.2}"), ("port", "{z}", "{z:.2}")), derived=("label",))
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
    # counted on the devices that stay (l1): n2 leaves with its port, n4 comes with its own
    assert diff.parts == {"port": (1, 1)}


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


def test_state_digest_is_out_alone_not_what_was_rendered(tmp_path: Path) -> None:
    """Review C6: outputs that differ (a template edited after `plan -out`) flip the plan's actions (unchanged ->
    update, a new path to create) but not what OUT holds: the saved plan is stale for its outputs only."""
    _applied(tmp_path, {"a.conf": "1\n", "b.conf": "1\n"})
    saved = _plan(tmp_path, {"a.conf": "1\n", "b.conf": "1\n"})
    rendered_otherwise = _plan(tmp_path, {"a.conf": "2\n", "b.conf": "1\n", "c.conf": "new\n"})
    assert [c.action for c in rendered_otherwise.changes] == [Action.UPDATE, Action.UNCHANGED, Action.CREATE]
    assert rendered_otherwise.state_digest == saved.state_digest
    assert rendered_otherwise.outputs_digest != saved.outputs_digest
    (tmp_path / "c.conf").write_text("someone else's\n")  # a file appears where an artifact goes: OUT changed
    assert _plan(tmp_path, {"a.conf": "2\n", "b.conf": "1\n", "c.conf": "new\n"}).state_digest != saved.state_digest


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


EOS_CFG = """! leaf1: Arista EOS configuration
!
hostname leaf1
!
interface Ethernet1/1
   description gpu001:Slot1P1 (port 1, cable %s m)
   mtu %s
%s!
router bgp 65100
   router-id 10.22.0.5
   neighbor 10.21.0.0 remote-as %s
   neighbor 10.21.0.0 description spine01:1/1
%s   !
   address-family ipv4
      network 10.20.0.0/26
      network %s
!
end
"""


def test_eos_running_config_by_section(tmp_path: Path) -> None:
    """U9: EOS's running-config by section, a BGP peer's lines as an entry of their own, each command's value a
    field (a line added or removed within a section one without a counterpart); repeated commands by their line."""
    portfast = "   spanning-tree portfast\n"
    peer = "   neighbor 10.21.0.2 remote-as 65000\n"
    _applied(tmp_path, {"switches/l1/l1.cfg": EOS_CFG % (15, 9100, portfast, 65000, peer, "10.22.0.5/32")})
    plan = _plan(tmp_path, {"switches/l1/l1.cfg": EOS_CFG % (20, 9216, "", 65001, "", "10.22.0.6/32")})
    (cfg,) = describe(plan, [])
    assert cfg.noun == "config entry" and cfg.lines == (4, 6)
    assert [(r.action, r.subject, r.shown_fields) for r in cfg.rows] == [
        (Action.DELETE, "router bgp 65100 / neighbor 10.21.0.2", ()),
        (Action.UPDATE, "interface Ethernet1/1", (
            ("description", "gpu001:Slot1P1 (port 1, cable 15 m)", "gpu001:Slot1P1 (port 1, cable 20 m)"),
            ("mtu", "9100", "9216"), ("spanning-tree portfast", "", None))),
        (Action.UPDATE, "router bgp 65100 / address-family ipv4", (
            ("network 10.22.0.6/32", None, ""), ("network 10.22.0.5/32", "", None))),
        (Action.UPDATE, "router bgp 65100 / neighbor 10.21.0.0", (("remote-as", "65000", "65001"),))]


def test_an_unused_eos_interface_cabled_later_is_one_entry_changed(tmp_path: Path) -> None:
    """A free interface is written shut (`description unused`, `shutdown`); once a cable uses it the same section
    changes: its description as one field (free text, digits or not), `shutdown` gone, the cabled settings added."""
    unused = "interface Ethernet41/1\n   description unused\n   shutdown\n!\n"
    cabled = ("interface Ethernet41/1\n   description storage-leaf011:33 (port 41/1, cable 3 m)\n   no shutdown\n"
              "   mtu 9100\n!\n")
    _applied(tmp_path, {"switches/s1/s1.cfg": "hostname s1\n!\n" + unused})
    plan = _plan(tmp_path, {"switches/s1/s1.cfg": "hostname s1\n!\n" + cabled})
    (cfg,) = describe(plan, [])
    assert [(r.action, r.subject, r.shown_fields) for r in cfg.rows] == [
        (Action.UPDATE, "interface Ethernet41/1", (
            ("description", "unused", "storage-leaf011:33 (port 41/1, cable 3 m)"), ("no shutdown", None, ""),
            ("mtu", None, "9100"), ("shutdown", "", None)))]


def test_structured_config_lists_by_their_items_keys(tmp_path: Path) -> None:
    """AVD's structured config names list items by their primary key (an interface by name), not by position: an
    interface removed before others changes nothing of theirs."""
    avd = "ethernet_interfaces:\n%s- {name: Ethernet2/1, mtu: %d}\nrouter_bgp: {neighbors: [{ip_address: 10.0.0.1}]}\n"
    _applied(tmp_path, {"switches/l1/avd-structured-config.yaml": avd % ("- {name: Ethernet1/1, mtu: 9100}\n", 9100)})
    plan = _plan(tmp_path, {"switches/l1/avd-structured-config.yaml": avd % ("", 9216)})
    (diff,) = describe(plan, [])
    assert [(r.action, r.subject, r.shown_fields) for r in diff.rows] == [
        (Action.DELETE, "ethernet_interfaces Ethernet1/1", ()),
        (Action.UPDATE, "ethernet_interfaces Ethernet2/1", (("mtu", "9100", "9216"),))]


LABELLED = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", derived=("label",), labels=("id", "label"))


def test_relabels_and_repatches(tmp_path: Path) -> None:
    """A row whose ends stay but whose labels change is a relabel; a removed row whose id a new row takes is a
    re-patch (the same cable at other ends); an id two new rows take pairs nothing."""
    _applied(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,3,c1 n1\nc2,n2:1,l1:2,3,c2 n2\nc3,n3:1,l1:3,3,c3\n"
                                                 "c4,n4:1,l1:4,3,c4\n"})
    plan = _plan(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,3,c1 N1\nc9,n2:1,l1:2,3,c9 n2\n"
                                                     "c3,n5:1,l1:3,4,c3\nc4,n6:1,l1:6,3,c4\nc4,n7:1,l1:7,3,c4\n"})
    (diff,) = describe(plan, [LABELLED])
    assert [(r.action, r.subject, r.shown_fields, r.moved) for r in diff.rows] == [
        (Action.CREATE, "n6:1 <-> l1:6", (), ("", "")),
        (Action.CREATE, "n7:1 <-> l1:7", (), ("", "")),
        (Action.DELETE, "n4:1 <-> l1:4", (), ("", "")),
        (RowKind.RELABEL, "n1:1 <-> l1:1", (("label", "c1 n1", "c1 N1"),), ("", "")),
        (RowKind.RELABEL, "n2:1 <-> l1:2", (("id", "c2", "c9"), ("label", "c2 n2", "c9 n2")), ("", "")),
        (RowKind.REPATCH, "c3", (("length", "3", "4"),), ("n3:1 <-> l1:3", "n5:1 <-> l1:3"))]


def test_rows_of_a_json_document(tmp_path: Path) -> None:
    """A JSON artifact's list of objects as rows (a fabric's switches by name), its other lines counted."""
    switches = Table("t/*.json", "switch", ("name",), "{name}", rows="switches")
    doc = '{"fabric": {"switches": %d}, "switches": [%s]}\n'
    _applied(tmp_path, {"t/f.json": doc % (2, '{"name": "s1", "model": "A"}, {"name": "s2", "model": "A"}')})
    plan = _plan(tmp_path, {"t/f.json": doc % (2, '{"name": "s1", "model": "B"}, {"name": "s3", "model": "A"}'),
                            "t/g.json": doc % (1, '{"name": "s9"}'), "t/h.json": '{"other": []}\n'})
    diffs = {d.change.path: d for d in describe(plan, [switches])}
    assert [(r.action, r.subject, r.shown_fields) for r in diffs["t/f.json"].rows] == [
        (Action.CREATE, "s3", ()), (Action.DELETE, "s2", ()), (Action.UPDATE, "s1", (("model", "A", "B"),))]
    assert diffs["t/f.json"].lines == (1, 1)
    assert (diffs["t/g.json"].noun, diffs["t/g.json"].whole) == ("switch", 1)
    assert (diffs["t/h.json"].noun, diffs["t/h.json"].lines) == ("", (1, 0))  # no such list: by lines


def test_rows_in_natural_port_order_and_estimates_apart(tmp_path: Path) -> None:
    """Ports as a switch numbers them (l1:2 before l1:10); a row whose only change is an estimate is its own kind."""
    table = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", estimates=("length",))
    _applied(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,3,x\n"})
    plan = _plan(tmp_path, {"t/cables.csv": HEADER + "c1,n1:1,l1:1,4,x\nc10,n1:1,l1:10,3,x\nc2,n1:1,l1:2,3,x\n"})
    (diff,) = describe(plan, [table])
    assert [(r.action, r.subject) for r in diff.rows] == [
        (Action.CREATE, "n1:1 <-> l1:2"), (Action.CREATE, "n1:1 <-> l1:10"), (RowKind.ESTIMATE, "n1:1 <-> l1:1")]


@pytest.mark.parametrize("text", ["a_device,a_port\nx,1\ny,2\n", "a_device,a_port\nx,1\ny,2", "a_device,a_port\n",
                                  "a_device,a_port", "a_device,a_port\nx,1\n\ny,2\n", 'a_device,a_port\n"x\ny",1\n',
                                  "a_device,a_port\r\nx,1\r\n", "b,c\nx,1\n", '"a_device",a_port\nx,1\n'])
def test_a_whole_table_is_counted_as_the_csv_reader_counts_it(text: str) -> None:
    """The line-feed count of a quote-free CSV gives the csv module's row count (None without the key columns)."""
    table = Table("t.csv", "row", ("a_device", "a_port"), "{a_device}")
    reader = list(csv.reader(io.StringIO(text)))
    expected = len(reader) - 1 if reader and {"a_device", "a_port"} <= set(reader[0]) else None
    assert changes._row_count(text, table) == expected


def test_the_rows_of_one_installed_item_are_one_change(tmp_path: Path) -> None:
    """``Table.item``: the rows of one physical cable (a trunk's legs, a cage-pair cable's links) are one change
    of the cable: a trunk that loses a leg is that one change (the leg gone, the trunk's label once), not a relabel
    of each leg that stays; a cage-pair cable relabelled, added or removed whole is one row; an item of one row
    reads as before."""
    table = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", derived=("phys",),
                  labels=("id", "zl"), item="phys")
    header = "id,phys,a,z,zl\n"
    trunk = ("t1,t1,n1:1,s1:1/1,t1/Z to n1+n2+n3\nt2,t1,n2:1,s1:1/2,t1/Z to n1+n2+n3\n"
             "t3,t1,n3:1,s1:1/3,t1/Z to n1+n2+n3\n")
    pair = "p1,p1,l1:1/1,s1:2/1,p1/Z r1\np2,p1,l1:1/2,s1:2/2,p1/Z r1\n"
    gone = "q1,q1,l1:3/1,s1:3/1,q1/Z\nq2,q1,l1:3/2,s1:3/2,q1/Z\n"
    _applied(tmp_path, {"t/cables.csv": header + trunk + pair + gone + "c1,c1,n9:1,s1:9,c1/Z\n"})
    plan = _plan(tmp_path, {"t/cables.csv": header + trunk.replace("n1+n2+n3", "n1+n2").rsplit("t3,", 1)[0]
                            + pair.replace(" r1", " R1") + "c1,c1,n9:1,s1:9,c1/Z new\n"
                            + "r1,r1,l1:4/1,s1:4/1,r1/Z\nr2,r1,l1:4/2,s1:4/2,r1/Z\n"})
    (diff,) = describe(plan, [table])
    assert [(r.action, r.subject, r.shown_fields) for r in diff.rows] == [
        (Action.CREATE, "l1:4/1+l1:4/2 <-> s1:4/1+s1:4/2", ()),
        (Action.DELETE, "l1:3/1+l1:3/2 <-> s1:3/1+s1:3/2", ()),
        (Action.UPDATE, "n1:1+n2:1 <-> s1:1/1+s1:1/2",
         (("n3:1 <-> s1:1/3", "", None), ("zl", "t1/Z to n1+n2+n3", "t1/Z to n1+n2"))),
        (RowKind.RELABEL, "l1:1/1+l1:1/2 <-> s1:2/1+s1:2/2", (("zl", "p1/Z r1", "p1/Z R1"),)),
        (RowKind.RELABEL, "n9:1 <-> s1:9", (("zl", "c1/Z", "c1/Z new"),))]
    # the item keeps each row's own change (its legs), the leg it lost among them; a row alone has none
    assert [(leg.action, leg.subject) for leg in diff.rows[2].legs] == [
        (RowKind.RELABEL, "n1:1 <-> s1:1/1"), (RowKind.RELABEL, "n2:1 <-> s1:1/2"), (Action.DELETE, "n3:1 <-> s1:1/3")]
    assert diff.rows[4].legs == ()
    # without ``item`` each row is a change of its own: the trunk's two staying legs are two relabels
    (rows,) = describe(plan, [Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", labels=("id", "zl"))])
    assert sum(r.action is RowKind.RELABEL for r in rows.rows) == 5 and len(rows.rows) == 10


def test_a_whole_table_with_items_counts_its_items() -> None:
    """A cable table created whole counts its physical cables (the bill of materials' count), not its links: a
    splitter's legs are one cable, a row without a physical cable one of its own."""
    table = Table("t.csv", "cable", ("a", "z"), "{a} <-> {z}", item="phys")
    text = "a,z,phys\nn1,s1,t1\nn2,s1,t1\nn3,s2,c3\nn4,s3,\n"
    assert changes._row_count(text, table) == 3
    assert changes._row_count(text.replace("phys", "other"), table) == 4  # no item column: rows
    assert changes._row_count('a,z,phys\n"n,1",s1,t1\nn2,s1,t1\n', table) == 1


def test_an_added_or_removed_row_carries_the_label_of_its_item(tmp_path: Path) -> None:
    """An added or removed cable is named by its id beside its ends (a physical cable of several links by its
    physical id); a changed one carries none (its fields say what changes)."""
    table = Table("t/cables.csv", "cable", ("a", "z"), "{a} <-> {z}", derived=("phys",), labels=("id",), item="phys")
    header = "id,phys,a,z\n"
    _applied(tmp_path, {"t/cables.csv": header + "c1,c1,n1:1,s1:1\np1/L1,p1,l1:1/1,s1:2/1\np1/L2,p1,l1:1/2,s1:2/2\n"
                        "k1,k1,n2:1,s1:3\n"})
    plan = _plan(tmp_path, {"t/cables.csv": header + "c2,c2,n3:1,s1:4\nk1,k1,n2:1,s1:3\n"})
    (diff,) = describe(plan, [table])
    assert sorted((r.action, r.label) for r in diff.rows) == [
        (Action.CREATE, "c2"), (Action.DELETE, "c1"), (Action.DELETE, "p1")]


DEVICES = "name,rack,u,face,type\n"
PLACED = Places("t/devices.csv", "name", ("rack", "u", "face", "type"))
ENDS = Table("t/cables.csv", "cable", ("a", "b", "z"), "{a}:{b} <-> {z}", labels=("id",), devices=("a", "z"))


def test_a_device_renamed_in_place_is_moved_its_rows_and_files_follow(tmp_path: Path) -> None:
    """A device whose name goes while a new one stands at its rack (renamed with its row: its occupants that keep
    their names tell it), U, face and type has moved: its cable rows match under its new name (the same ends:
    relabelled, not removed and added) and its own file is compared with the one its old name had."""
    old = {"t/devices.csv": DEVICES + "n1,L01,2,front,hgx\nsw-l01,L01,48,front,SN2201\nsw-x,M01,1,front,SN2201\n",
           "t/cables.csv": "id,a,b,z\nsw-l01-1,n1,BMC,sw-l01\nsw-x-1,n1,NIC,sw-x\n",
           "switches/sw-l01/config": "hostname sw-l01\nmtu 9100\n"}
    _applied(tmp_path, old)
    new = {"t/devices.csv": DEVICES + "n1,K01,2,front,hgx\nsw-k01,K01,48,front,SN2201\nsw-x,M01,1,front,SN2201\n",
           "t/cables.csv": "id,a,b,z\nsw-k01-1,n1,BMC,sw-k01\nsw-x-1,n1,NIC,sw-x\n",
           "switches/sw-k01/config": "hostname sw-k01\nmtu 9100\n"}
    plan = _plan(tmp_path, new)
    moved = changes.moved_devices(plan, [PLACED])
    assert moved == {"sw-l01": "sw-k01"}
    diffs = {d.change.path: d for d in describe(plan, [ENDS], moved)}
    assert "switches/sw-l01/config" not in diffs  # listed once, at its new path
    config = diffs["switches/sw-k01/config"]
    assert (config.change.action, config.moved_from, config.lines) == (Action.CREATE, "switches/sw-l01/config",
                                                                       (1, 1))
    assert config.unified()[:2] == ["--- a/switches/sw-l01/config", "+++ b/switches/sw-k01/config"]
    (cord,) = diffs["t/cables.csv"].rows
    assert (cord.action, cord.subject, cord.fields) == (RowKind.RELABEL, "n1:BMC <-> sw-k01", (
        ("id", "sw-l01-1", "sw-k01-1"), ("z", "sw-l01", "sw-k01")))
    # without the moves, the same plan removes and adds the cord and its switch's file
    plain = {d.change.path: d for d in describe(plan, [ENDS])}
    assert {r.action for r in plain["t/cables.csv"].rows} == {Action.CREATE, Action.DELETE}
    assert plain["switches/sw-l01/config"].change.action is Action.DELETE
    # a plan that changes no file of the places moves nothing
    assert changes.moved_devices(_plan(tmp_path, {**old, "t/cables.csv": "id,a,b,z\n"}), [PLACED]) == {}


def _shifted(names: list[str], racks: list[str]) -> dict[str, str]:
    """A small cluster's OUT: nodes ``names`` at U 2 of ``racks`` (one each), each cabled to leaf ``sw`` (its port
    and cable id by place), with a host file naming the node and its rack, one naming only the node and one every
    node has alike."""
    devices = DEVICES + "".join(f"{n},{r},2,front,hgx\n" for n, r in zip(names, racks, strict=True))
    devices += "sw,M01,1,front,SN2201\n"
    cables = "id,a,b,z\n" + "".join(f"sw-{i},{n},NIC,sw\n" for i, n in enumerate(names, 1))
    files = {"t/devices.csv": devices, "t/cables.csv": cables}
    for n, r in zip(names, racks, strict=True):
        files[f"hosts/{n}/netplan.yaml"] = f"hostname: {n}\nrack: {r}\n"
        files[f"hosts/{n}/hostname"] = f"{n}\n"
        files[f"hosts/{n}/nccl.env"] = "NCCL_IB_HCA=mlx5\n"
    return files


def test_a_group_whose_start_moved_is_renamed_in_place(tmp_path: Path) -> None:
    """A node group's ``start`` moved by one (n1..n3 -> n2..n4 at the same places): place first, as NetBox sync
    pairs records, each box is renamed where it stands (3 moves, a chain), not two nodes kept, one removed and one
    added; each new file is compared with its box's old one (hosts/n2's with hosts/n1's, not with the other box's it
    replaces at that path), each row matched under the box's new name (relabels, no cable removed or added)."""
    racks = ["L01", "L02", "L03"]
    _applied(tmp_path, _shifted(["n1", "n2", "n3"], racks))
    plan = _plan(tmp_path, _shifted(["n2", "n3", "n4"], racks))
    moved = changes.moved_devices(plan, [PLACED])
    assert moved == {"n1": "n2", "n2": "n3", "n3": "n4"}
    diffs = {d.change.path: d for d in describe(plan, [ENDS], moved)}
    assert not any(p.startswith("hosts/n1/") for p in diffs)  # moved with its box: listed at hosts/n2
    # alike for every box: told only where apply writes it, at the chain's new end, as the same content moved
    (env,) = (d for p, d in diffs.items() if p.endswith("nccl.env"))
    assert (env.change.path, env.moved_from, env.lines) == ("hosts/n4/nccl.env", "hosts/n3/nccl.env", (0, 0))
    listed = {p: (d.change.action, d.moved_from, d.unified()[2:]) for p, d in diffs.items()
              if p.endswith("netplan.yaml")}
    assert listed == {f"hosts/n{n + 1}/netplan.yaml": (
        Action.CREATE if n == 3 else Action.UPDATE, f"hosts/n{n}/netplan.yaml",
        ["@@ -1,2 +1,2 @@", f"-hostname: n{n}", f"+hostname: n{n + 1}", f" rack: {racks[n - 1]}"]) for n in (1, 2, 3)}
    rows = diffs["t/cables.csv"].rows
    assert [(r.action, r.subject, r.fields) for r in rows] == [
        (Action.UPDATE, f"n{n + 1}:NIC <-> sw", (("a", f"n{n}", f"n{n + 1}"),)) for n in (1, 2, 3)]
    # by path alone, the same plan removes n1 and adds n4, and compares hosts/n2's file with the other box's
    plain = {d.change.path: d for d in describe(plan, [ENDS])}
    assert plain["hosts/n1/netplan.yaml"].change.action is Action.DELETE
    assert plain["hosts/n2/netplan.yaml"].unified()[4:6] == ["-rack: L02", "+rack: L01"]


def test_two_names_swapped_are_two_moves_each_compared_with_its_own_box(tmp_path: Path) -> None:
    """Two nodes' names swapped where they stand: each box moved to the other's name; a file unchanged by path (it
    names only the node) is the other box's and is listed, moved from its box's old path."""
    _applied(tmp_path, _shifted(["a1", "b1"], ["L01", "L02"]))
    plan = _plan(tmp_path, _shifted(["b1", "a1"], ["L01", "L02"]))
    moved = changes.moved_devices(plan, [PLACED])
    assert moved == {"a1": "b1", "b1": "a1"}
    diffs = {d.change.path: d for d in describe(plan, [ENDS], moved)}
    assert {p: (d.change.action, d.moved_from) for p, d in diffs.items() if p.startswith("hosts/")} == {
        "hosts/a1/netplan.yaml": (Action.UPDATE, "hosts/b1/netplan.yaml"),
        "hosts/b1/netplan.yaml": (Action.UPDATE, "hosts/a1/netplan.yaml"),
        "hosts/a1/hostname": (Action.UNCHANGED, "hosts/b1/hostname"),
        "hosts/b1/hostname": (Action.UNCHANGED, "hosts/a1/hostname")}
    assert diffs["hosts/a1/netplan.yaml"].unified()[3:5] == ["-hostname: b1", "+hostname: a1"]
    assert diffs["hosts/a1/hostname"].unified()[3:] == ["-b1", "+a1"]
    assert {(r.action, r.subject) for r in diffs["t/cables.csv"].rows} == {
        (Action.UPDATE, "b1:NIC <-> sw"), (Action.UPDATE, "a1:NIC <-> sw")}


def test_a_device_gone_whose_name_a_renamed_one_takes_keeps_its_own_rows(tmp_path: Path) -> None:
    """n1 leaves its place while n2's box is named n1 where it stands: that box is n1 now (place first), and the old
    n1's cable is removed, not taken for the renamed box's."""
    _applied(tmp_path, _shifted(["n1", "n2"], ["L01", "L02"]))
    new = _shifted(["n1"], ["L02"])
    new["t/cables.csv"] = "id,a,b,z\nsw-2,n1,NIC,sw\n"
    plan = _plan(tmp_path, new)
    moved = changes.moved_devices(plan, [PLACED])
    assert moved == {"n2": "n1"}
    (rows,) = (d.rows for d in describe(plan, [ENDS], moved) if d.change.path == "t/cables.csv")
    assert [(r.action, r.subject, r.fields) for r in rows] == [
        (Action.DELETE, "n1:NIC <-> sw", ()), (Action.UPDATE, "n1:NIC <-> sw", (("a", "n2", "n1"),))]


def test_a_sheet_added_or_removed_is_named_by_its_mark(tmp_path: Path) -> None:
    """A table without labels names an added or removed row by its mark (a printed sheet by its revision, so the
    sheet to discard is known); a changed one by its fields."""
    sheets = Table("t/revisions.csv", "sheet", ("sheet",), "{sheet}", mark="revision {revision}")
    _applied(tmp_path, {"t/revisions.csv": "sheet,revision\nrack L01,aaa\nrack M01,bbb\n"})
    (diff,) = describe(_plan(tmp_path, {"t/revisions.csv": "sheet,revision\nrack K01,ccc\nrack M01,ddd\n"}), [sheets])
    assert [(r.action, r.subject, r.label, r.fields) for r in diff.rows] == [
        (Action.CREATE, "rack K01", "revision ccc", ()), (Action.DELETE, "rack L01", "revision aaa", ()),
        (Action.UPDATE, "rack M01", "", (("revision", "bbb", "ddd"),))]


_CELLS = st.sampled_from(["n1:1", "n1:2", "n2:1", "l1:1", "l1:2", "l2:1", "3", "5", 'x "q"', "a,b", ""])
_ROWS = st.lists(st.lists(_CELLS, min_size=5, max_size=5), max_size=8)


def _csv(rows: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([HEADER.strip().split(","), *rows])
    return buffer.getvalue()


def _every_row(old: str, new: str) -> tuple[object, object]:
    """What keying every row of both texts tells."""
    old_rows, new_rows = changes._rows(old, CABLES), changes._rows(new, CABLES)
    assert old_rows is not None and new_rows is not None
    return changes._row_changes(old_rows, new_rows, CABLES), changes._part_changes(CABLES, old_rows.values(),
                                                                                 new_rows.values())


@settings(max_examples=400, deadline=None)
@given(_ROWS, _ROWS, st.lists(st.integers(0, 7), max_size=3), st.booleans())
def test_lines_that_differ_tell_what_every_row_tells(stay: list[list[str]], other: list[list[str]],
                                                     dropped: list[int], reorder: bool) -> None:
    """The re-plan's shortcut (`_changed_lines`: only the lines that differ keyed) gives the changes and part
    counts that keying every row gives, or declines: repeated keys, parts given two devices, ragged rows."""
    old_rows = stay + other[: len(other) // 2]
    new_rows = [row for i, row in enumerate(stay) if i not in dropped] + other[len(other) // 2:]
    if reorder:
        new_rows.reverse()
    old, new = _csv(old_rows), _csv(new_rows)
    fast = changes._changed_lines(old, new, CABLES, {})
    if fast is not None:
        assert fast == _every_row(old, new)


def test_a_replanned_table_takes_the_shortcut_and_declines_where_it_could_differ() -> None:
    """The shortcut is taken on fabricgen's own tables (a quoted cell with a comma included) and declined on a
    repeated key, a cell holding a line break and a renamed device, whose rows the full keying matches."""
    rows = [["c1", "n1:1", "l1:1", "3", "x, y"], ["c2", "n2:1", "l1:2", "3", "c2"]]
    old, new = _csv(rows), _csv([rows[0], ["c2", "n2:1", "l1:2", "5", "c2"], ["c3", "n3:1", "l1:3", "3", "c3"]])
    fast = changes._changed_lines(old, new, CABLES, {})
    assert fast is not None and fast == _every_row(old, new)
    assert {(r.action, r.subject) for r in fast[0]} == {(Action.UPDATE, "n2:1 <-> l1:2"),
                                                        (Action.CREATE, "n3:1 <-> l1:3")}
    assert changes._changed_lines(old + "c9,n1:1,l1:1,3,dup\n", new, CABLES, {}) is None
    assert changes._changed_lines(_csv([["c1", "n1:1", "l1:1", "3", "two\nlines"]]), new, CABLES, {}) is None
    assert changes._changed_lines(old, new, replace(CABLES, devices=("a",)), {"n1:1": "n9:1"}) is None


_LINES = st.lists(st.sampled_from(["a", "b", "}", "", "a\r", "x\ry", "\x85"]), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_LINES, _LINES, _LINES, _LINES, st.booleans())
def test_lines_counted_between_the_ends_alike_as_in_the_whole(head: list[str], old_middle: list[str],
                                                              new_middle: list[str], tail: list[str],
                                                              final: bool) -> None:
    """Counting only what lies between the lines both texts begin and end with gives the counts of the whole."""
    old, new = ("\n".join([*head, *middle, *tail]) + ("\n" if final else "") for middle in (old_middle, new_middle))
    whole_old, whole_new = Counter(old.splitlines()), Counter(new.splitlines())
    assert changes._lines(old, new) == (sum((whole_new - whole_old).values()), sum((whole_old - whole_new).values()))


def test_lines_of_large_texts_changed_in_places() -> None:
    """Past the longest slice compared at once (64 Ki characters): a line changed, one removed, one repeated."""
    lines = [f"line {i} {'x' * (i % 50)}" for i in range(20000)]
    old = "\n".join(lines) + "\n"
    new = "\n".join([*lines[:7000], "changed", *lines[7001:15000], *lines[15001:], lines[3]]) + "\n"
    assert changes._lines(old, new) == (2, 2) and changes._lines(new, old) == (2, 2)
    assert changes._lines(old, old) == (0, 0) and changes._lines(old, old + "a") == (1, 0)
