"""A renamed row against a real NetBox 4.7.3 (tests/external/netbox/netbox-up): lab-1su synced into a site of its
own, a crew's data put on a top-of-rack OOB switch (serial, asset tag, comments) and on one of its cables (status
connected, a comment), row L renamed K in the spec (its location, racks L01-L04 and switches oob-l01..oob-l04 are
renamed with it), synced again: the same NetBox objects, renamed in place (ids, crew data, cable ids and status
kept), NetBox's changelog holds updates of them and no deletion or creation, nothing is left twice, and a third
sync writes nothing."""

from __future__ import annotations

import json
import urllib.request
from collections import Counter
from pathlib import Path

from fabricgen.features.netbox.render import import_set, netbox_cables
from fabricgen.features.netbox.sync import Report, sync, token_value
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.netbox import Session, held_cables, require_netbox, reset

SITE = "lab-rename"


def _spec(tmp_path: Path, row: str) -> Path:
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    text = text.replace("{name: L, racks: 4}", f"{{name: {row}, racks: 4}}").replace("rows: [L]", f"rows: [{row}]")
    spec = tmp_path / f"lab-{row}.yaml"
    spec.write_text(text)
    return spec


def _sync(topology: Topology, env: dict[str, str]) -> Report:
    return sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), False)


def _last_change(session: Session) -> int:
    request = urllib.request.Request(f"{session.url}/api/core/object-changes/?ordering=-id&limit=1&fields=id",
                                     headers={"Authorization": session.token, "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        results = json.load(response)["results"]
    return int(results[0]["id"]) if results else 0


def test_a_renamed_row_renames_its_netbox_objects_in_place(tmp_path: Path) -> None:
    env = require_netbox()
    session = Session(env)
    if session.records("dcim/sites", slug=SITE):
        reset(env)  # left by an earlier run of this test
    before = compile_spec(_spec(tmp_path, "L")).topology
    first = _sync(before, env)
    print(f"\nfirst sync: {first.seconds:.1f} s, {dict(first.requests)}")
    site = session.records("dcim/sites", slug=SITE)[0]["id"]
    q = {"site_id": str(site)}

    def counts() -> Counter[str]:
        return Counter({e: session.count(e, **q) for e in ("dcim/devices", "dcim/racks", "dcim/locations",
                                                            "dcim/interfaces", "dcim/cables", "ipam/prefixes")})

    landed = counts()
    # every lane of a split cage typed as the cage, its own templated first lane and the imported ones alike
    lanes: dict[tuple[str, str], set[str]] = {}
    for i in session.records("dcim/interfaces", cabled="true", fields="device,label,type", **q):
        if "/" in (i["label"] or "") and not i["device"]["name"].startswith(("compute-", "hgx")):
            lanes.setdefault((i["device"]["name"], i["label"].split("/")[0]), set()).add(i["type"]["value"])
    assert len(lanes) >= 20 and all(len(kinds) == 1 for kinds in lanes.values()), lanes
    switch = session.records("dcim/devices", name="oob-l01", **q)[0]
    session.patch("dcim/devices", switch["id"], {"serial": "MT2301X09876", "asset_tag": "lab-rename-0001",
                                                 "comments": "replaced PSU1 2026-11-30"})
    racks = {r["name"]: r["id"] for r in session.records("dcim/racks", **q)}
    location = session.records("dcim/locations", slug=f"{SITE}-row-l")[0]["id"]
    cables = session.records("dcim/cables", device_id=str(switch["id"]), fields="id,label")
    assert len(cables) >= 3  # its BMC links and its uplinks
    crewed = cables[0]
    session.patch("dcim/cables", crewed["id"], {"status": "connected", "comments": "tested 2026-12-01"})
    ids = {c["id"] for c in cables}

    mark = _last_change(session)
    after = compile_spec(_spec(tmp_path, "K")).topology
    second = _sync(after, env)
    print(f"rename sync: {second.seconds:.1f} s, {dict(second.requests)}, {dict(second.counts)}, {second.renamed}")
    assert second.renamed == ["location lab-rename-row-l -> lab-rename-row-k",
                              *(f"rack L0{n} -> K0{n}" for n in range(1, 5)),
                              *(f"device oob-l0{n} -> oob-k0{n}" for n in range(1, 5))]
    assert all(c["create"] == 0 and c["delete"] == 0 for c in second.counts.values()), second.counts

    renamed = session.records("dcim/devices", name="oob-k01", **q)[0]
    assert renamed["id"] == switch["id"]
    assert (renamed["serial"], renamed["asset_tag"], renamed["comments"]) == (
        "MT2301X09876", "lab-rename-0001", "replaced PSU1 2026-11-30")
    assert renamed["custom_fields"]["fabricgen_device"] == f"{SITE}/oob-k01"
    assert renamed["rack"]["id"] == racks["L01"] and renamed["rack"]["name"] == "K01"
    assert session.records("dcim/locations", slug=f"{SITE}-row-k")[0]["id"] == location
    assert not session.records("dcim/devices", name="oob-l01", **q)
    assert {r["name"]: r["id"] for r in session.records("dcim/racks", **q)} == {
        ("K" + n[1:] if n.startswith("L") else n): i for n, i in racks.items()}
    assert {c["id"] for c in session.records("dcim/cables", device_id=str(switch["id"]), fields="id")} == ids
    cable = session.records("dcim/cables", id=str(crewed["id"]))[0]
    assert cable["status"]["value"] == "connected" and cable["comments"] == "tested 2026-12-01"
    planned = {c.label for c in netbox_cables(after.cables)}
    assert cable["label"] in planned
    assert counts() == landed  # nothing made twice, nothing lost
    # NetBox's changelog: the renamed objects updated; no device, rack, location or cable deleted or made
    log = session.records("core/object-changes", fields="action,changed_object_type,changed_object_id",
                          id__gt=str(mark))
    kinds = Counter((e["changed_object_type"], e["action"]["value"]) for e in log)
    print(f"changelog: {dict(kinds)}")
    assert not [k for k in kinds if k[0] in {"dcim.device", "dcim.rack", "dcim.location", "dcim.cable"}
                and k[1] != "update"], kinds
    updated = {e["changed_object_id"] for e in log if e["changed_object_type"] == "dcim.device"}
    assert switch["id"] in updated
    assert held_cables(session, site).keys() == planned
    names = {str(r["name"]) for r in import_set(after).records("07-devices")}
    assert {d["name"] for d in session.records("dcim/devices", fields="name", **q)} == names

    third = _sync(after, env)
    assert third.writes == 0 and not third.renamed, third.counts
