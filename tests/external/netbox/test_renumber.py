"""Renumbered and swapped nodes against a real NetBox 4.7.3 (tests/external/netbox/netbox-up; field review break 1):
lab-1su synced into a site of its own and a serial put on each node's record, then specs that give the boxes other
names where they stand: the node group's ``start`` moved to 2 (hgx01..hgx08 are hgx02..hgx09 at the same places), back
(hgx09..hgx02 are hgx08..hgx01), and the names of the two nodes of rack L01 swapped. Each is first a dry run (only
reads, the renames listed), then a sync NetBox takes: every record keeps its place, id and serial under its new name,
nothing is made or deleted, the cables keep their ids, NetBox's changelog holds device updates only, and a sync after
writes nothing. Before, sync matched by name and PATCHed hgx02's record onto hgx01's U, which NetBox refused.
Then the nodes raised a U (moves by name into units others leave: cleared first, then set; the addresses that change
devices released first as primaries) and a unit held by a device fabricgen did not make (one error, nothing
written)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pynetbox
import pytest

from fabricgen.features.netbox.render import import_set
from fabricgen.features.netbox.sync import Report, SyncError, sync, token_value
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.external.netbox.test_rename import _last_change
from tests.helpers.netbox import Session, require_netbox, reset

SITE = "lab-renumber"
GROUP = """  - name: hgx{n:02d}
    count: 8
    profile: hgx-8gpu-generic
    placement: {rows: [L], per_rack: 2, start_u: 2}
"""
SM_HOSTS = "{name: hgx01, priority: 15}, {name: hgx08, priority: 14}"
# the two nodes of rack L01 swapped: a group of one for each (patterns must differ), the other six as before
SWAPPED = """  - name: hgx0{n:1d}
    count: 1
    start: 2
    profile: hgx-8gpu-generic
    placement: {racks: [L01], per_rack: 2, start_u: 2}
  - name: hgx0{n}
    count: 1
    profile: hgx-8gpu-generic
    placement: {racks: [L01], per_rack: 2, start_u: 2}
  - name: hgx{n:02d}
    count: 6
    start: 3
    profile: hgx-8gpu-generic
    placement: {racks: [L02, L03, L04], per_rack: 2, start_u: 2}
"""


def _spec(tmp_path: Path, variant: str, start_u: int = 2) -> Path:
    """lab-1su in its own site: as it is, with the group's start moved to 2, or with L01's two names swapped; its
    nodes from ``start_u`` up in their racks."""
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    assert GROUP in text and SM_HOSTS in text
    group = GROUP.replace("start_u: 2", f"start_u: {start_u}")
    if variant == "start":
        text = text.replace(GROUP, group.replace("count: 8\n", "count: 8\n    start: 2\n")).replace(
            SM_HOSTS, SM_HOSTS.replace("hgx08", "hgx09").replace("hgx01", "hgx02"))
    elif variant == "swapped":
        text = text.replace(GROUP, SWAPPED).replace('groups: ["hgx{n:02d}"]',
                                                    'groups: ["hgx{n:02d}", "hgx0{n:1d}", "hgx0{n}"]')
    else:
        text = text.replace(GROUP, group)
    spec = tmp_path / f"lab-{variant}-{start_u}.yaml"
    spec.write_text(text)
    return spec


def _sync(topology: Topology, env: dict[str, str], dry_run: bool = False) -> Report:
    return sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), dry_run)


def _nodes_by_place(session: Session, site: int) -> dict[tuple[str, float], tuple[int, str, str]]:
    """(rack, U) -> (id, name, serial) of every node's record."""
    return {(d["rack"]["name"], float(d["position"])): (d["id"], d["name"], d["serial"]) for d in session.records(
        "dcim/devices", site_id=str(site), fields="id,name,rack,position,serial") if d["name"].startswith("hgx")}


def test_renumbered_and_swapped_nodes_keep_their_records_where_they_stand(tmp_path: Path) -> None:
    env = require_netbox()
    session = Session(env)
    if session.records("dcim/sites", slug=SITE):
        reset(env)  # left by an earlier run of this test
    first = _sync(compile_spec(_spec(tmp_path, "base")).topology, env)
    print(f"\nfirst sync: {first.seconds:.1f} s, {dict(first.requests)}")
    site = session.records("dcim/sites", slug=SITE)[0]["id"]
    boxes = _nodes_by_place(session, site)
    assert len(boxes) == 8
    for (rack, u), (pk, _, _) in boxes.items():  # the crew's record of each physical box
        session.patch("dcim/devices", pk, {"serial": f"SN-{rack}-U{u:g}"})
    cables = {c["id"] for c in session.records("dcim/cables", site_id=str(site), fields="id")}
    counts = Counter({e: session.count(e, site_id=str(site)) for e in ("dcim/devices", "dcim/interfaces",
                                                                     "dcim/cables", "ipam/prefixes")})
    seconds = []
    for variant, renamed in (
            ("start", [f"device hgx0{n} -> hgx{n + 1:02d}" for n in range(1, 9)]),
            ("base", [f"device hgx{n + 1:02d} -> hgx0{n}" for n in range(1, 9)]),
            ("swapped", ["device hgx01 -> hgx02", "device hgx02 -> hgx01"])):
        topology = compile_spec(_spec(tmp_path, variant)).topology
        mark = _last_change(session)
        dry = _sync(topology, env, dry_run=True)
        assert dry.writes == 0 and dry.renamed == renamed and not dry.moved, (variant, dry.renamed, dry.moved)
        assert _last_change(session) == mark
        done = _sync(topology, env)
        seconds.append(done.seconds)
        print(f"{variant}: {done.seconds:.1f} s, {dict(done.requests)}, {dict(done.counts)}")
        assert done.renamed == renamed and not done.moved
        assert all(c["create"] == 0 and c["delete"] == 0 for c in done.counts.values()), done.counts
        # one PATCH frees the names others take (temporary names), then the renames
        assert done.counts["devices, freed first"]["update"] == {"start": 7, "base": 7, "swapped": 2}[variant]
        planned = {(str(r["rack"]), float(str(r["position"]))): str(r["name"])
                   for r in import_set(topology).records("07-devices") if str(r["name"]).startswith("hgx")}
        held = _nodes_by_place(session, site)
        # every box keeps its NetBox record (id, serial) where it stands, under the plan's name for that place
        assert {place: (pk, serial) for place, (pk, _, serial) in held.items()} == {
            place: (pk, f"SN-{place[0]}-U{place[1]:g}") for place, (pk, _, _) in boxes.items()}
        assert {place: name for place, (_, name, _) in held.items()} == planned
        assert not [d for d in session.records("dcim/devices", site_id=str(site), fields="name")
                    if d["name"].startswith("fabricgen~")]
        assert {c["id"] for c in session.records("dcim/cables", site_id=str(site), fields="id")} == cables
        assert Counter({e: session.count(e, site_id=str(site)) for e in counts}) == counts
        log = session.records("core/object-changes", fields="action,changed_object_type", id__gt=str(mark))
        kinds = Counter((e["changed_object_type"], e["action"]["value"]) for e in log)
        print(f"changelog: {dict(kinds)}")
        assert kinds[("dcim.device", "update")] >= 2 * len(renamed) - 1
        assert not [k for k in kinds if k[0] in {"dcim.device", "dcim.cable"} and k[1] != "update"], kinds
        again = _sync(topology, env)
        assert again.writes == 0 and not again.renamed, again.counts

    # the nodes raised a U (start_u 3): no record stands at any new place, so each moves by name, into units another
    # node holds (each rack's lower node into its upper one's, and in L01, swapped, both ways): those are cleared
    # first, then every node set; the records keep their ids under their names
    by_name = {name: pk for pk, name, _ in _nodes_by_place(session, site).values()}
    raised = compile_spec(_spec(tmp_path, "base", start_u=3)).topology
    moved = _sync(raised, env)
    print(f"raised: {moved.seconds:.1f} s, {dict(moved.requests)}, {dict(moved.counts)}, {moved.moved}")
    assert len(moved.moved) == 8 and not moved.renamed
    assert moved.counts["devices, freed first"]["update"] == 5  # L01's two, the upper node of L02..L04
    assert {name: pk for pk, name, _ in _nodes_by_place(session, site).values()} == by_name
    assert {(rack, u) for rack, u in _nodes_by_place(session, site)} == {
        (f"L0{r}", float(u)) for r in range(1, 5) for u in (3, 11)}
    assert _sync(raised, env).writes == 0
    # a unit held by a device fabricgen did not make: one error before any device is written
    api = pynetbox.api(env["FABRICGEN_NETBOX_URL"], token=token_value(env["FABRICGEN_NETBOX_TOKEN"]))
    switch = session.records("dcim/devices", site_id=str(site), name="oob-l01")[0]
    pdu = api.dcim.devices.create(name="pdu-l01", site=site, rack=switch["rack"]["id"], position=20, face="front",
                                  device_type=switch["device_type"]["id"], role=switch["role"]["id"])
    mark = _last_change(session)
    lowered = compile_spec(_spec(tmp_path, "base", start_u=12)).topology
    with pytest.raises(SyncError, match=r"1 devices cannot be moved or made .*hgx02 to L01 U20 front: pdu-l01 stands"):
        _sync(lowered, env)
    assert _last_change(session) == mark
    api.dcim.devices.delete([pdu.id])
    assert _sync(raised, env).writes == 0
