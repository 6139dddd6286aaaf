"""`fabricgen netbox sync` against a real NetBox 4.7.3 (tests/external/netbox/netbox-up): lab-1su, in a site of
its own beside whatever the import test left (other sites' objects, made by hand or by CSV, must stay as they
are; the import test's clusters are on the same address plan, each in its own VRF), lands with the plan's counts
and every cable's ends and length; a second sync writes nothing (no write request, no changelog entry); a changed
spec (one node fewer, rows further apart) is first only counted (--dry-run: no write), then synced: the lengths
that changed are updated, the removed node's device, cables and addresses deleted, and nothing else is touched; a
cable relabelled in NetBox (an earlier fabricgen's id) keeps its object, status and comments (review B1)."""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.cabling.handoff import plug_label, rack_plugs
from fabricgen.features.netbox.render import DEVICE_COLUMN, ImportSet, import_set, netbox_cables
from fabricgen.features.netbox.sync import Report, SyncError, port_speeds, sync, token_value
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.netbox import Ends, Session, held_cables, require_netbox, reset, traced_peers

SITE = "lab-sync"
REMOVED = "hgx08"


def _spec(tmp_path: Path, name: str, *, changed: bool) -> Path:
    """lab-1su in site lab-sync, on lab-1su's own address plan (in its own VRF beside the import test's sites);
    changed: one node fewer (hgx08, so the second SM host is hgx07) and the rows 3 m apart."""
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    if changed:
        text = text.replace("count: 8", "count: 7").replace("{name: hgx08, priority: 14}",
                                                           "{name: hgx07, priority: 14}")
        text = text.replace("facility:\n", "facility:\n  row_pitch_m: 3.0\n")
    spec = tmp_path / name
    spec.write_text(text)
    return spec


def _last_change(session: Session) -> int:
    """The id of NetBox's newest changelog entry (0 when none)."""
    request = urllib.request.Request(f"{session.url}/api/core/object-changes/?ordering=-id&limit=1&fields=id",
                                     headers={"Authorization": session.token, "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        results = json.load(response)["results"]
    return int(results[0]["id"]) if results else 0


def _planned_cables(topology: Topology) -> dict[str, tuple[Ends, Ends, float, str]]:
    """label -> the plan's ends, by NetBox's interface names (the NOS's, D1), length, profile: one NetBox cable per
    physical cable (issue 19: a cage pair's links, a splitter's legs on one cable, link k on connector k)."""
    names = import_set(topology).names
    return {cable.label: ([(c.a.device, names(c.a.device, c.a.port)) for c in cable.links],
                          [(c.z.device, names(c.z.device, c.z.port)) for c in cable.links], cable.length,
                          cable.profile)
            for cable in netbox_cables(topology.cables)}


def _each_link_traces_alone(session: Session, site: int, planned: dict[str, tuple[Ends, Ends, float, str]]) -> int:
    """NetBox's own path tracing over the profiles: every link of a cable reaches its far interface and no other
    (a trunk's connector k is link k; a multi-termination cable without a profile would reach every far end);
    the number of links on trunk cables checked."""
    peers = traced_peers(session, site)
    trunk_links = 0
    for a_ends, b_ends, _, profile in planned.values():
        for a, b in zip(a_ends, b_ends, strict=True):
            assert peers[a] == [b] and peers[b] == [a], (a, b, peers[a], peers[b])
            trunk_links += bool(profile)
    return trunk_links


def _set_changes(before: ImportSet, after: ImportSet) -> dict[str, Counter[str]]:
    """What the import sets' interface (08, on devices that stay), prefix and address rows say a sync changes."""
    def keyed(imports: ImportSet, name: str, key: Callable[[dict[str, object]], object]) -> dict[object, object]:
        return {key(r): r for r in imports.records(name)}

    gone = {str(r["cf_fabricgen_device"]) for r in before.records("07-devices") if r["name"] == REMOVED}
    changes: dict[str, Counter[str]] = {}
    for kind, name, key in (("interfaces", "08-interfaces", lambda r: (r[DEVICE_COLUMN], r["name"])),
                            ("prefixes", "15-prefixes", lambda r: r["prefix"]),
                            ("IP addresses", "16-ip-addresses", lambda r: str(r["address"]).split("/")[0])):
        old, new = keyed(before, name, key), keyed(after, name, key)
        if kind == "interfaces":
            old = {k: r for k, r in old.items() if str(k[0]) not in gone}
        counts = Counter({"create": len(set(new) - set(old)), "delete": len(set(old) - set(new)),
                          "update": sum(old[k] != new[k] for k in set(old) & set(new))})
        if +counts:
            changes[kind] = +counts
    return changes


def _counts(session: Session, site: int) -> Counter[str]:
    q = {"site_id": str(site)}
    return Counter({"devices": session.count("dcim/devices", **q), "racks": session.count("dcim/racks", **q),
                    "locations": session.count("dcim/locations", **q),
                    "interfaces": session.count("dcim/interfaces", **q), "cables": session.count("dcim/cables", **q),
                    "prefixes": session.count("ipam/prefixes", **q),
                    "primary": session.count("dcim/devices", has_primary_ip="true", **q),
                    "oob": session.count("dcim/devices", has_oob_ip="true", **q)})


def _everything(session: Session) -> Counter[str]:
    """Objects NetBox-wide, per type: what a sync must not touch elsewhere."""
    return Counter({e: session.count(e) for e in ("dcim/sites", "dcim/devices", "dcim/interfaces", "dcim/cables",
                                                  "dcim/racks", "ipam/prefixes", "ipam/ip-addresses", "ipam/vlans",
                                                  "dcim/device-types", "dcim/manufacturers", "ipam/asns",
                                                  "ipam/vrfs")})


def _summary(report: Report) -> str:
    return (f"{dict(report.requests)} requests in {report.seconds:.1f} s: "
            + ", ".join(f"{kind} {dict(c)}" for kind, c in report.counts.items()))


def _sync(topology: Topology, env: dict[str, str], dry_run: bool = False) -> Report:
    return sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), dry_run)


def test_sync_lands_updates_and_deletes_only_its_own(tmp_path: Path) -> None:
    env = require_netbox()
    session = Session(env)
    if session.records("dcim/sites", slug=SITE):
        reset(env)  # a site left by an earlier run of this test: start from the migrated database
    before = _everything(session)
    spec = _spec(tmp_path, "lab-sync.yaml", changed=False)
    topology = compile_spec(spec).topology

    first = _sync(topology, env)
    print(f"\nfirst sync: {_summary(first)}")
    site = session.records("dcim/sites", slug=SITE)[0]["id"]
    devices = len(topology.cluster.nodes) + sum(len(ft.switches) for ft in topology.fabrics)
    planned = _planned_cables(topology)
    held = _counts(session, site)
    assert held["devices"] == devices == first.counts["devices"]["create"]
    assert held["cables"] == len(planned) == first.counts["cables"]["create"]
    assert held["racks"] == 5 and held["locations"] == 2
    imports = import_set(topology)
    templated = {str(d["model"]): len(d["interfaces"]) for d in imports.device_types}
    assert held["interfaces"] == sum(templated[str(r["device_type"])] for r in imports.records("07-devices")) + len(
        imports.records("08-interfaces"))
    # D5: each switch's console and power ports, from its type's templates (device_facts.yaml)
    docs = {str(d["model"]): d for d in imports.device_types}
    for kind in ("console-ports", "power-ports"):
        want = sum(len(docs[str(r["device_type"])].get(kind, ())) for r in imports.records("07-devices"))
        assert session.count(f"dcim/{kind}", site_id=str(site)) == want > 0, kind
    marked = [r for r in imports.records("16-ip-addresses") if "true" in (r["is_primary"], r["is_oob"])]
    assert held["primary"] == len({str(r[DEVICE_COLUMN]) for r in marked if r["is_primary"] == "true"})
    assert held["oob"] == len({str(r[DEVICE_COLUMN]) for r in marked if r["is_oob"] == "true"})
    assert first.counts["device addresses"]["update"] == len({str(r[DEVICE_COLUMN]) for r in marked})
    assert held_cables(session, site) == planned, "a cable's ends, connector order, length or profile"
    # a cage-pair DAC (2 links) and a breakout harness (4 legs) each one cable, 20 + 2 for lab-1su's 48 links
    trunks = Counter(p for *_, p in planned.values() if p)
    assert trunks == Counter({"trunk-2c1p": 20, "trunk-4c1p": 2})
    assert first.counts["cables"]["create"] == len(topology.cables) - 20 - 3 * 2
    assert _each_link_traces_alone(session, site, planned) == 48
    names = imports.names
    speeds = {(d, names(d, p)): v for (d, p), v in port_speeds(topology).items()}
    ports = {(i["device"]["name"], i["name"]): i for i in session.records(
        "dcim/interfaces", site_id=str(site), fields="device,name,label,speed,enabled")}
    assert {k: ports[k]["speed"] for k in speeds} == speeds
    assert all(ports[k]["speed"] is None for k in set(ports) - set(speeds))  # D8: an uncabled port has none
    _names_and_labels(topology, ports)
    # 40 storage plugs (20 DACs, each end's two sub-ports) and the 2 harnesses' trunk plugs
    assert _labels_as_the_sheets(topology, ports, planned) == 42
    # every node's primary IP (D10: the storage fabric's address where the cluster has no in-band fabric)
    nodes = {n.name for n in topology.cluster.nodes}
    primary = {d["name"] for d in session.records("dcim/devices", site_id=str(site), has_primary_ip="true",
                                                  fields="name")}
    assert nodes <= primary
    # D7: the site is linked to its fabrics' ASNs (NetBox's Site.asns), and the shared ASNs name no cluster
    site_asns = {a["asn"] for a in session.records("dcim/sites", slug=SITE, fields="asns")[0]["asns"]}
    assert site_asns == {int(str(r["asn"])) for r in imports.records("11-asns")} and len(site_asns) > 2
    vrf = session.records("ipam/vrfs", name=SITE)
    assert len(vrf) == 1 and first.counts["VRFs"]["create"] == 1
    ips = {a["address"] for a in session.records("ipam/ip-addresses", vrf_id=str(vrf[0]["id"]), fields="address")}
    assert len(ips) == first.counts["IP addresses"]["create"] > 100
    assert session.count("ipam/prefixes", vrf_id=str(vrf[0]["id"])) == held["prefixes"]

    _resync_and_change(session, env, tmp_path, spec, site, planned, held, devices, len(ips), before)


def _labels_as_the_sheets(topology: Topology, ports: dict[tuple[str, str], dict[str, Any]],
                          cables: dict[str, tuple[Ends, Ends, float, str]]) -> int:
    """Issue 19: what a technician reads at a plug (the rack sheet's port cell, ``21/1+21/2``, and the plug's label,
    ``storage-spine01-001/Z to ...``) is what NetBox says: the plug's interfaces' labels joined by ``+`` are the
    port cell, and they are the ends of one NetBox cable labelled with the physical cable's id the plug label
    begins with; the plugs of several links checked."""
    names = import_set(topology).names
    cable_of = {end: label for label, (a, b, *_) in cables.items() for end in (*a, *b)}
    shared = 0
    for plugs in rack_plugs(topology.cables).values():
        for ends in plugs:
            here = [(e.here.device, names(e.here.device, e.here.port)) for e in ends]
            label = plug_label([e.cable for e in ends], ends[0].is_a)
            assert "+".join(ports[k]["label"] or k[1] for k in here) == "+".join(e.here.port for e in ends), here
            assert {cable_of[k] for k in here} == {label.split("/", 1)[0]}, (label, here)
            shared += len(ends) > 1
    return shared


def _names_and_labels(topology: Topology, ports: dict[tuple[str, str], dict[str, Any]]) -> None:
    """D1: every cabled port is named in NetBox as its device names it, the faceplate name its label: a SONiC
    switch's ports as its config_db.json (``Ethernet0`` labelled ``1/1``, the cage's first sub-port), a node's by
    netdev (``ib0`` labelled ``NIC0``); an InfiniBand switch's (no NOS) by the faceplate, with no label."""
    names = import_set(topology).names
    sonic = {n.name for ft in topology.fabrics if ft.fabric.nos for n in ft.switches}
    seen = Counter[str]()
    for c in topology.cables:
        for end in (c.a, c.z):
            port = ports[(end.device, names(end.device, end.port))]
            if end.device in sonic:
                assert port["name"].startswith("Ethernet") and port["label"] == end.port, port
                seen["sonic"] += 1
            elif names(end.device, end.port) != end.port:
                assert port["label"] == end.port, port
                seen["renamed"] += 1
            else:
                assert port["name"] == end.port and port["label"] == "", port
                seen["faceplate"] += 1
            assert port["enabled"], port
    assert ports[("storage-leaf001", "Ethernet0")]["label"] in ("1", "1/1")
    assert ports[("hgx01", "ib0")]["label"] == "NIC0"
    assert min(seen.values()) > 10 and len(seen) == 3, seen


def _resync_and_change(session: Session, env: dict[str, str], tmp_path: Path, spec: Path, site: int,
                       planned: dict[str, Any], held: Counter[str], devices: int, ips: int,
                       before: Counter[str]) -> None:
    # nothing changed: no write request, no changelog entry (through the CLI: the token from a file)
    changes = _last_change(session)
    token = tmp_path / "token"
    token.write_text(env["FABRICGEN_NETBOX_TOKEN"] + "\n")
    result = CliRunner().invoke(app, ["netbox", "sync", str(spec), "--url", env["FABRICGEN_NETBOX_URL"],
                                      "--token-file", str(token), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["objects"] == {} and set(report["requests"]) == {"GET"}, report
    print(f"second sync: {report['requests']['GET']} GET in {report['seconds']} s")
    assert token_value(env["FABRICGEN_NETBOX_TOKEN"]) not in result.output
    assert _last_change(session) == changes

    # a changed spec: the dry run only reads, and counts what the sync then does
    changed = compile_spec(_spec(tmp_path, "lab-sync-changed.yaml", changed=True)).topology
    plan = _sync(changed, env, dry_run=True)
    assert plan.writes == 0 and _last_change(session) == changes
    done = _sync(changed, env)
    print(f"changed spec's sync: {_summary(done)}; its dry run: {_summary(plan)}")
    assert done.counts == plan.counts
    now = _planned_cables(changed)
    lengths = {label for label, cable in now.items() if planned[label][2] != cable[2]}
    removed = set(planned) - set(now)
    assert not set(now) - set(planned) and lengths and removed
    assert all(REMOVED in {d for d, _ in planned[label][0] + planned[label][1]} for label in removed)
    assert done.counts["cables"] == Counter({"update": len(lengths), "delete": len(removed)})
    assert done.counts["devices"] == Counter({"delete": 1})
    # the rest as the import sets differ: hgx08's addresses (its rack's OOB subnet is sized for the rack's leaf,
    # not its hosts, so it stays, and no other address changes its mask); and the switch ports its cables leave:
    # their speed cleared (D8) and their label back to the faceplate's unsplit name where it was a sub-port's
    expected = _set_changes(import_set(compile_spec(spec).topology), import_set(changed))
    freed = {end for label in removed for end in planned[label][0] + planned[label][1] if end[0] != REMOVED}
    # hgx08's far ends are all templated ports here (its storage leaf port is the cage's own, Ethernet<n>)
    assert freed and "interfaces" not in expected
    expected["interfaces"] = Counter({"update": len(freed)})
    assert {k: v for k, v in done.counts.items() if k not in ("cables", "devices")} == expected
    freed_now = {(i["device"]["name"], i["name"]): i for i in session.records(
        "dcim/interfaces", site_id=str(site), fields="device,name,speed,cable")}
    assert all(freed_now[k]["speed"] is None and freed_now[k]["cable"] is None for k in freed)
    assert held_cables(session, site) == now
    assert not session.records("dcim/devices", site_id=str(site), name=REMOVED)
    assert _counts(session, site)["devices"] == devices - 1
    # the changelog: only the changed cables and addresses updated, nothing created (no subnet resized), and
    # NetBox's own bookkeeping of the far ends of the cables removed (their interfaces' cable field)
    log = session.records("core/object-changes", fields="action,changed_object_type,object_repr", id__gt=str(changes))
    updates = Counter(e["changed_object_type"] for e in log if e["action"]["value"] == "update")
    creates = Counter(e["changed_object_type"] for e in log if e["action"]["value"] == "create")
    assert creates == Counter() and "prefixes" not in done.counts
    assert updates["dcim.cable"] == len(lengths)
    assert updates["ipam.ipaddress"] == done.counts["IP addresses"]["update"]
    assert set(updates) <= {"dcim.cable", "dcim.interface", "ipam.ipaddress", "dcim.device"}
    # NetBox clears the removed node's OOB address on the device as it deletes the address, just before the device
    assert {e["object_repr"] for e in log if e["changed_object_type"] == "dcim.device"} == {REMOVED}

    # the other sites' objects (the import test's, made without fabricgen's tag) are all still there
    after = _everything(session)
    mine = Counter({"dcim/sites": 1, "dcim/devices": devices - 1, "dcim/cables": len(now), "dcim/racks": 5,
                    "ipam/prefixes": held["prefixes"], "ipam/ip-addresses": ips - done.counts["IP addresses"]["delete"],
                    "ipam/vlans": 2, "ipam/vrfs": 1})
    for endpoint in ("dcim/sites", "dcim/devices", "dcim/cables", "dcim/racks", "ipam/prefixes", "ipam/ip-addresses",
                     "ipam/vlans", "ipam/vrfs"):
        assert after[endpoint] == before[endpoint] + mine[endpoint], endpoint

    _a_nos_change_renames_the_ports(session, env, tmp_path, site)


def _a_nos_change_renames_the_ports(session: Session, env: dict[str, str], tmp_path: Path, site: int) -> None:
    """D1 and D8: the OOB fabric moved from SONiC to NVUE (the changed spec otherwise): its switches' types become
    ``SN2201 NVUE``/``SN4700 NVUE``, and as NetBox makes no ports on a type change, sync makes the new type's
    (``swp1`` ...), moves the cables and addresses onto them and deletes the old type's (``Ethernet0`` ...); each
    OOB switch then has exactly its new type's ports and its imported ones, and a second sync writes nothing."""
    spec = _spec(tmp_path, "lab-sync-nvue.yaml", changed=True)
    old = "    switch: {leaf: SN2201, spine: SN4700}\n    nos: sonic\n"
    assert spec.read_text().count(old) == 1
    spec.write_text(spec.read_text().replace(old, old.replace("sonic", "nvue")))
    topology = compile_spec(spec).topology
    report = _sync(topology, env)
    print(f"the OOB fabric on NVUE: {_summary(report)}")
    imports = import_set(topology)
    oob = {s.name for ft in topology.fabrics if ft.fabric.name == "oob" for s in ft.switches}
    types = {str(r["name"]): str(r["device_type"]) for r in imports.records("07-devices")}
    templated = {str(d["model"]): {t["name"] for t in d["interfaces"]} for d in imports.device_types}
    imported = {(str(r[DEVICE_COLUMN]).split("/", 1)[1], str(r["name"])) for r in imports.records("08-interfaces")}
    held = {(i["device"]["name"], i["name"]) for i in session.records("dcim/interfaces", site_id=str(site),
                                                                       fields="device,name")}
    for switch in sorted(oob):
        assert types[switch].endswith(" NVUE"), types[switch]
        assert {k for k in held if k[0] == switch} == {(switch, n) for n in templated[types[switch]]} | {
            k for k in imported if k[0] == switch}, switch
    assert report.counts["devices"] == Counter({"update": len(oob)})
    # D5: the two new types' console and power-port templates made with them (SN2201: con0; SN4700: con0, psu0/1)
    docs = {str(d["model"]): d for d in imports.device_types}
    for kind in ("console-port-templates", "power-port-templates"):
        made = {model: session.count(f"dcim/{kind}", device_type_id=str(t["id"])) for model in ("SN2201 NVUE",
                "SN4700 NVUE") for t in session.records("dcim/device-types", model=model, fields="id")}
        assert made == {m: len(docs[m].get(kind.removesuffix("-templates") + "s", ())) for m in made}, made
    assert report.counts["console port templates"] == Counter({"create": 2})
    assert report.counts["power port templates"] == Counter({"create": 2})
    now = _planned_cables(topology)
    assert held_cables(session, site) == now
    # the cables on the renamed ports are made again, the two 4-leg breakout harnesses among them, each still one
    # cable of 4 terminations a side whose links trace alone
    before = _planned_cables(compile_spec(_spec(tmp_path, "lab-sync-changed.yaml", changed=True)).topology)
    remade = {label for label, cable in now.items() if cable[:2] != before[label][:2]}
    assert report.counts["cables"] == Counter({"create": len(remade), "delete": len(remade)})
    assert Counter(now[label][3] for label in remade)["trunk-4c1p"] == 2
    assert all(len(now[label][0]) == len(now[label][1]) == 4 for label in remade if now[label][3])
    _each_link_traces_alone(session, site, now)
    vrf = session.records("ipam/vrfs", name=SITE)[0]["id"]
    addresses = {a["address"]: (a["assigned_object"] or {}).get("name") for a in session.records(
        "ipam/ip-addresses", vrf_id=str(vrf), fields="address,assigned_object")}
    moved = {str(r["address"]): str(r["interface"]) for r in imports.records("16-ip-addresses")
             if str(r[DEVICE_COLUMN]).split("/", 1)[1] in oob}
    assert moved and {a: addresses[a] for a in moved} == moved  # on NVUE's lo, eth0, swp<n>
    again = _sync(topology, env)
    assert again.writes == 0 and again.changes == 0, again.counts
    _a_relabelled_cable_keeps_its_object(session, env, site, topology, now)


def _a_relabelled_cable_keeps_its_object(session: Session, env: dict[str, str], site: int, topology: Topology,
                                         planned: dict[str, tuple[Ends, Ends, float, str]]) -> None:
    """Review B1: a cable whose ends did not change keeps its NetBox object when only its label changed (a
    renumbered cage-pair id): a crew marks a cage-pair DAC and a harness connected and comments them, NetBox holds
    them under other labels and descriptions (an earlier fabricgen's ids), and sync patches label and description
    back, in place: the same ids, still connected, the comments kept, nothing created or deleted; a profile that is
    not the part's is put back in place too, every link still tracing alone."""
    held = {c["label"]: c for c in session.records("dcim/cables", site_id=str(site), fields="id,label,status")}
    picked = [next(label for label, cable in planned.items() if cable[3] == profile)
              for profile in ("trunk-2c1p", "trunk-4c1p")]
    for label in picked:
        session.patch("dcim/cables", held[label]["id"], {"status": "connected", "label": f"{label}-old",
                                                         "description": "an earlier id", "comments": "crew: tested"})
    # review D1: a harness an earlier fabricgen profiled by the links used (2 of 4: trunk-2c1p) gets the part's
    # profile in place; here the DAC's 2 links held on a 4-connector profile go back to its 2 lanes' trunk-2c1p
    session.patch("dcim/cables", held[picked[0]]["id"], {"profile": "trunk-4c1p"})
    report = _sync(topology, env)
    assert report.counts["cables"] == Counter({"update": 2}), report.counts
    assert held_cables(session, site) == planned
    _each_link_traces_alone(session, site, planned)
    now = {c["label"]: c for c in session.records("dcim/cables", site_id=str(site),
                                                 fields="id,label,status,description,comments")}
    wanted = {cable.label: cable.description for cable in netbox_cables(topology.cables)}
    for label in picked:
        assert now[label]["id"] == held[label]["id"], label
        assert (now[label]["status"]["value"], now[label]["comments"]) == ("connected", "crew: tested"), label
        assert now[label]["description"] == wanted[label]
    _a_type_without_templates_gets_them(session, env, topology)


def _a_type_without_templates_gets_them(session: Session, env: dict[str, str], topology: Topology) -> None:
    """Review D2: a first sync that stopped after making a device type (fabricgen's: tagged) but before its
    templates left a type every later sync stopped on ("no template for ...; it has 0"): with all of SN2201 NVUE's
    interface templates and its console template gone, sync makes exactly those, nothing else."""
    kind = session.records("dcim/device-types", model="SN2201 NVUE", fields="id")[0]["id"]
    docs = {str(d["model"]): d for d in import_set(topology).device_types}["SN2201 NVUE"]
    for endpoint in ("dcim/interface-templates", "dcim/console-port-templates"):
        session.delete(endpoint, [t["id"] for t in session.records(endpoint, device_type_id=str(kind), fields="id")])
        assert not session.count(endpoint, device_type_id=str(kind))
    report = _sync(topology, env)
    assert {k: dict(v) for k, v in report.counts.items() if +v} == {
        "interface templates": {"create": len(docs["interfaces"])},
        "console port templates": {"create": len(docs["console-ports"])}}, report.counts
    assert {t["name"] for t in session.records("dcim/interface-templates", device_type_id=str(kind),
                                                fields="name")} == {p["name"] for p in docs["interfaces"]}
    assert session.count("dcim/console-port-templates", device_type_id=str(kind)) == len(docs["console-ports"]) > 0
    _a_cable_of_someone_else_stops_the_sync(session, env, topology)


def _a_cable_of_someone_else_stops_the_sync(session: Session, env: dict[str, str], topology: Topology) -> None:
    """Review D5: a cable fabricgen did not make (here one of its own with the tag taken off) on a port fabricgen
    cables is a named conflict, found before NetBox is asked to write a cable: the sync stops naming the port and
    the cable, NetBox's changelog gains nothing; tagged again, the next sync writes nothing."""
    site = session.records("dcim/sites", slug=SITE)[0]["id"]
    cable = next(c for c in session.records("dcim/cables", site_id=str(site), fields="id,label,tags,profile")
                 if not c["profile"])
    tags = [t["id"] for t in cable["tags"]]
    session.patch("dcim/cables", cable["id"], {"tags": []})
    changes = _last_change(session)
    label = re.escape(cable["label"])
    with pytest.raises(SyncError, match=rf"NetBox holds cables fabricgen did not make .* on 2 ports .* stops before "
                                        rf"writing cables: \S+:\S+ \(cable {label}\), \S+:\S+ \(cable {label}\) "
                                        r"\(hint: remove them"):
        _sync(topology, env)
    assert _last_change(session) == changes
    session.patch("dcim/cables", cable["id"], {"tags": tags})
    again = _sync(topology, env)
    assert again.writes == 0 and again.changes == 0, again.counts
