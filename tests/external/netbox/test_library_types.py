"""`fabricgen netbox sync` against a NetBox that already holds netbox-community/devicetype-library's QM9700
(manufacturer `Nvidia`, slug `nvidia`; ports `P0.0`..`P31.1`, device-types/Nvidia/QM9700.yaml): sync finds the
manufacturer by its slug and the type by its model, sees that the type's templates do not make fabricgen's ports
(`1/1`..`32/2`, `mgmt0`) and stops before writing any device, naming the type, rather than add fabricgen's ports
beside the library's. It starts from the migrated database and removes the library's type again afterwards, so the
other NetBox tests meet the NetBox they expect."""

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


def test_a_library_type_without_fabricgens_ports_stops_the_sync(tmp_path: Path) -> None:
    env = require_netbox()
    reset(env)  # the import test made fabricgen's QM9700: the library's takes its place in a fresh NetBox
    session = Session(env)
    maker = _rest(env, "POST", "dcim/manufacturers/", {"name": "Nvidia", "slug": "nvidia"})
    library = _rest(env, "POST", "dcim/device-types/", {"manufacturer": maker["id"], "model": "QM9700",
                                                         "slug": "nvidia-qm9700", "u_height": 1})
    try:
        _rest(env, "POST", "dcim/interface-templates/", [
            {"device_type": library["id"], "name": f"P{cage}.{lane}", "type": "400gbase-x-osfp"}
            for cage in range(32) for lane in range(2)])
        text = (INVENTORIES / "lab-1su.yaml").read_text().replace("\n  site: lab\n", f"\n  site: {SITE}\n")
        spec = tmp_path / "lab-library.yaml"
        spec.write_text(re.sub(r"\b10\.4([0-6])\.", r"10.5\1.", text))
        devices = session.count("dcim/devices")
        named = (r"nvidia QM9700 \(no template for mgmt0, 1/1, 1/2, 2/1 \.\.\.; templates fabricgen does not make: "
                 r"P0\.0, P0\.1, P1\.0, P1\.1 \.\.\.; it has 64\)")
        with pytest.raises(SyncError, match=named):
            sync(compile_spec(spec).topology, env["FABRICGEN_NETBOX_URL"], token_value(env["FABRICGEN_NETBOX_TOKEN"]),
                 dry_run=False)
        assert session.count("dcim/devices") == devices, "no device was written"
        assert session.count("dcim/interface-templates", device_type_id=str(library["id"])) == 64
    finally:
        _rest(env, "DELETE", f"dcim/device-types/{library['id']}/")


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
