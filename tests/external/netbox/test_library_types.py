"""`fabricgen netbox sync` against a NetBox that already holds netbox-community/devicetype-library's QM9700
(manufacturer `Nvidia`, slug `nvidia`; ports `P0.0`..`P31.1`, device-types/Nvidia/QM9700.yaml): sync finds the
manufacturer by its slug and uses it as NetBox names it, and puts its QM9700s on its own `QM9700 faceplate` type
beside the library's, which it leaves alone (review D3); a node type another cluster made with other ports stops the
sync (review B7). Each starts from the migrated database where it needs a NetBox without fabricgen's types."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fabricgen.features.netbox.render import import_set
from fabricgen.features.netbox.sync import SyncError, sync, token_value
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.netbox import Session, require_netbox, reset

SITE = "lab-library"


def _rest(env: dict[str, str], method: str, endpoint: str, body: Any = None) -> Any:
    request = urllib.request.Request(f"{env['FABRICGEN_NETBOX_URL']}/api/{endpoint}", method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": env["FABRICGEN_NETBOX_TOKEN"],
                                              "Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        text = response.read()
    return json.loads(text) if text else None


def test_fabricgens_qm9700_stands_beside_the_librarys(tmp_path: Path) -> None:
    """Review D3: the library's ``Nvidia QM9700`` (slug ``nvidia-qm9700``, 64 ``P<cage>.<lane>`` templates) was
    fabricgen's key too, and sync stopped on it; fabricgen's type is ``QM9700 faceplate`` now, so lab-1su lands
    beside it, every QM9700 of the cluster on fabricgen's type, and the library's type is left as it was. Then an
    earlier fabricgen's type under the bare model (the library's type gone, fabricgen's renamed back to ``QM9700``,
    slug ``qm9700``) is renamed in place by the next sync: the same type, devices, ports and cables."""
    env = require_netbox()
    reset(env)  # the import test made fabricgen's types: the library's takes its place in a fresh NetBox
    session = Session(env)
    maker = _rest(env, "POST", "dcim/manufacturers/", {"name": "Nvidia", "slug": "nvidia"})
    library = _rest(env, "POST", "dcim/device-types/", {"manufacturer": maker["id"], "model": "QM9700",
                                                         "slug": "nvidia-qm9700", "u_height": 1})
    _rest(env, "POST", "dcim/interface-templates/", [
        {"device_type": library["id"], "name": f"P{cage}.{lane}", "type": "400gbase-x-osfp"}
        for cage in range(32) for lane in range(2)])
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    spec = tmp_path / "lab-library.yaml"
    spec.write_text(re.sub(r"\b10\.4([0-6])\.", r"10.5\1.", text))
    topology = compile_spec(spec).topology
    first = sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), dry_run=False)
    print(f"\nfirst sync beside the library's QM9700: {first.seconds:.1f} s")
    site = str(session.records("dcim/sites", slug=SITE)[0]["id"])
    ours = session.records("dcim/device-types", slug="qm9700-faceplate")[0]
    assert (ours["model"], ours["manufacturer"]["id"]) == ("QM9700 faceplate", maker["id"])
    qm = {d["name"]: d for d in session.records("dcim/devices", site_id=site, device_type_id=str(ours["id"]))}
    assert set(qm) == {s.name for ft in topology.fabrics for s in ft.switches if s.model.name == "QM9700"}
    assert session.count("dcim/devices", device_type_id=str(library["id"])) == 0
    assert session.count("dcim/interface-templates", device_type_id=str(library["id"])) == 64
    ports = session.count("dcim/interfaces", site_id=site)
    cables = {c["id"] for c in session.records("dcim/cables", site_id=site, fields="id")}

    _rest(env, "DELETE", f"dcim/device-types/{library['id']}/")
    _rest(env, "PATCH", f"dcim/device-types/{ours['id']}/", {"model": "QM9700", "slug": "qm9700"})
    again = sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), dry_run=False)
    assert again.renamed == ["device type nvidia QM9700 -> QM9700 faceplate"]
    assert dict(again.counts) == {"device types": {"update": 1}}, again.counts
    retitled = session.records("dcim/device-types", id=str(ours["id"]))[0]
    assert (retitled["model"], retitled["slug"]) == ("QM9700 faceplate", "qm9700-faceplate")
    assert {d["name"]: d["id"] for d in session.records("dcim/devices", site_id=site, device_type_id=str(
        ours["id"]))} == {n: d["id"] for n, d in qm.items()}
    assert session.count("dcim/interfaces", site_id=site) == ports
    assert {c["id"] for c in session.records("dcim/cables", site_id=site, fields="id")} == cables


def test_another_clusters_node_type_with_other_ports_stops_the_sync(tmp_path: Path) -> None:
    """B7 of the NetBox review: NetBox holds one device type per model, shared by every cluster; one made by another
    cluster whose node has the same model but one port typed otherwise (its NIC cabled at another speed) stops the
    sync before any device is written, naming the port and both values, instead of mixing the two clusters' ports.
    The templates are read back from NetBox's API (a type as value and label, a label field), so this needs it."""
    env = require_netbox()
    session = Session(env)
    text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
    spec = tmp_path / "lab-library.yaml"
    spec.write_text(re.sub(r"\b10\.4([0-6])\.", r"10.5\1.", text))
    topology = compile_spec(spec).topology
    node_type = next(d for d in import_set(topology).device_types if d["model"] == "hgx-8gpu-generic")
    makers = _rest(env, "GET", "dcim/manufacturers/?slug=generic")["results"]
    maker = makers[0] if makers else _rest(env, "POST", "dcim/manufacturers/", {"name": "Generic", "slug": "generic"})
    if _rest(env, "GET", "dcim/device-types/?model=hgx-8gpu-generic")["count"]:
        reset(env)  # an earlier test's sync made fabricgen's own type: start from the migrated database
        maker = _rest(env, "POST", "dcim/manufacturers/", {"name": "Generic", "slug": "generic"})
    other = _rest(env, "POST", "dcim/device-types/", {"manufacturer": maker["id"], "model": "hgx-8gpu-generic",
                                                       "slug": "hgx-8gpu-generic", "u_height": 8})
    try:
        _rest(env, "POST", "dcim/interface-templates/", [
            {"device_type": other["id"], "name": t["name"], "label": t.get("label", ""), "mgmt_only": t["mgmt_only"],
             "type": "400gbase-x-osfp" if t["name"] == "ib0" else t["type"]} for t in node_type["interfaces"]])
        devices = session.count("dcim/devices")
        named = (r"generic hgx-8gpu-generic \(label/type/mgmt_only: ib0 is NIC0/400gbase-x-osfp/False, not "
                 rf"NIC0/infiniband-ndr/False; it has {len(node_type['interfaces'])}\)")
        with pytest.raises(SyncError, match=named):
            sync(topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]), dry_run=False)
        assert session.count("dcim/devices") == devices, "no device was written"
    finally:
        _rest(env, "DELETE", f"dcim/device-types/{other['id']}/")
