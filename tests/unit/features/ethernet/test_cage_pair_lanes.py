"""The cabling and the SONiC port tables agree on lanes (field review F1), against the vendor's port tables: a
cage-pair cable (one QSFP-DD 400G cable between two SN4700 cages at 2 x 200G) joins each port to the port on the
same lanes of the other cage, and a DR4 breakout gives each 2-lane (2 x 50G-PAM4) C128 port one SN2201 uplink of 4
lanes (4 x 25G-NRZ, gearboxed by its QSFP28 DR1). The lanes are the rendered config_db.json PORT rows, held
against port_config.ini of the SKU in DEVICE_METADATA: read from sonic-buildimage itself (the release named by the
switch) when FABRICGEN_SONIC_BUILDIMAGE is a checkout or mirror of it, else from the SKU data files, which
tests/external/ethernet/test_sonic_skus_upstream.py holds against the same files."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from functools import cache

import pytest

from fabricgen.features.ethernet.nos.sonic.skus import skus
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

CHECKOUT = os.environ.get("FABRICGEN_SONIC_BUILDIMAGE", "")
PORT_CONFIG = "device/mellanox/{platform}/{hwsku}/port_config.ini"
RELEASE = "202505"  # the examples name no software.sonic: the default release (nos/sonic.yaml)


@cache
def _vendor_lanes(hwsku: str, release: str) -> dict[str, tuple[int, tuple[int, ...]]]:
    """port_config.ini of ``hwsku``: port name -> (front-panel index, lanes)."""
    sku = next(s for group in skus().values() for s in group if s.hwsku == hwsku)
    if not CHECKOUT:
        return {p.name: (p.cage, tuple(int(x) for x in p.lanes.split(","))) for ports in sku.ports.values()
                for p in ports}
    text = subprocess.run(["git", "-C", CHECKOUT, "show", f"{release}:" + PORT_CONFIG.format(
        platform=sku.platform, hwsku=hwsku)], capture_output=True, text=True, check=True).stdout
    rows = [line.split() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return {r[0]: (int(r[3]), tuple(int(x) for x in r[1].split(","))) for r in rows}


@pytest.fixture(scope="module", params=["lab-1su", "h100-4su"])
def plan(request: pytest.FixtureRequest) -> tuple[list[dict[str, str]], dict[str, dict[str, object]]]:
    artifacts = {a.path: a.content.decode() if isinstance(a.content, bytes) else a.content
                 for a in render_spec(compile_spec(INVENTORIES / f"{request.param}.yaml"))
                 if a.path == "cabling/cables.csv" or a.path.endswith("/config_db.json")}
    cables = list(csv.DictReader(io.StringIO(artifacts["cabling/cables.csv"])))
    configs = {path.split("/")[1]: json.loads(text) for path, text in artifacts.items()
               if path.startswith("switches/") and path.endswith("/config_db.json")}
    return cables, configs


def _port(configs: dict[str, dict[str, object]], device: str, peer: str) -> tuple[int, tuple[int, ...]]:
    """The (index, lanes) of the PORT of ``device`` cabled to ``peer`` (its description), checked against the
    vendor's row of that port."""
    db = configs[device]
    meta = db["DEVICE_METADATA"]["localhost"]  # type: ignore[index]
    name, row = next((n, r) for n, r in db["PORT"].items() if r.get("description") == peer)  # type: ignore[attr-defined]
    lanes = tuple(int(x) for x in row["lanes"].split(","))
    vendor = _vendor_lanes(meta["hwsku"], RELEASE)
    assert vendor[name] == (int(row["index"]), lanes), (device, name)
    return int(row["index"]), lanes


def _cage_offsets(configs: dict[str, dict[str, object]], device: str, index: int, lanes: tuple[int, ...]
                  ) -> tuple[int, ...]:
    """Lanes relative to the cage's first lane in the vendor table."""
    hwsku = configs[device]["DEVICE_METADATA"]["localhost"]["hwsku"]  # type: ignore[index]
    first = min(lane for i, ls in _vendor_lanes(hwsku, RELEASE).values() if i == index for lane in ls)
    return tuple(lane - first for lane in lanes)


def test_cage_pair_cables_join_the_same_lanes(plan: tuple[list[dict[str, str]], dict[str, dict[str, object]]]
                                              ) -> None:
    cables, configs = plan
    pairs = [c for c in cables if c["tier"] == "leaf-spine" and c["leg"] and c["medium"].startswith("qsfpdd-400g")]
    assert pairs
    by_physical: dict[str, set[tuple[str, int, str, int]]] = {}
    for c in pairs:
        a_index, a_lanes = _port(configs, c["a_device"], f"{c['z_device']}:{c['z_port']}")
        z_index, z_lanes = _port(configs, c["z_device"], f"{c['a_device']}:{c['a_port']}")
        assert len(a_lanes) == len(z_lanes) == 4, "200G on 4 x 50G-PAM4 lanes"
        assert (_cage_offsets(configs, c["a_device"], a_index, a_lanes)
                == _cage_offsets(configs, c["z_device"], z_index, z_lanes)
                == tuple(range(4 * (int(c["leg"]) - 1), 4 * int(c["leg"])))), c["cable_id"]
        by_physical.setdefault(c["physical_cable"], set()).add((c["a_device"], a_index, c["z_device"], z_index))
    assert all(len(cages) == 1 for cages in by_physical.values()), "one cable, one cage at each end"
    assert {len([c for c in pairs if c["physical_cable"] == p]) for p in by_physical} == {2}, "both ports carried"


def test_breakout_legs_are_the_agg_cage_ports(plan: tuple[list[dict[str, str]], dict[str, dict[str, object]]]
                                              ) -> None:
    cables, configs = plan
    legs = [c for c in cables if c["medium"] == "qsfpdd-dr4-breakout-4x100g"]
    assert legs
    for c in legs:
        z_index, z_lanes = _port(configs, c["z_device"], f"{c['a_device']}:{c['a_port']}")
        _, a_lanes = _port(configs, c["a_device"], f"{c['z_device']}:{c['z_port']}")
        assert len(z_lanes) == 2 and len(a_lanes) == 4, "C128: 2 x 50G-PAM4; SN2201 QSFP28: 4 x 25G-NRZ"
        assert _cage_offsets(configs, c["z_device"], z_index, z_lanes) == (2 * (int(c["leg"]) - 1),
                                                                           2 * int(c["leg"]) - 1)


def test_breakout_fec_per_end(plan: tuple[list[dict[str, str]], dict[str, dict[str, object]]]) -> None:
    """A 400G-DR4 broken out to 100G-DR QSFP28s carries RS-544 from the C128 port through the fiber, and the DR1
    module ends it: its SN2201 port runs no FEC (Cumulus Linux: FEC off or unset on the DR1 end; field review G1:
    `rs` there keeps the uplink down), the C128 port RS."""
    cables, configs = plan
    legs = [c for c in cables if c["medium"] == "qsfpdd-dr4-breakout-4x100g"]
    assert legs
    for c in legs:
        for device, peer, fec in ((c["a_device"], f"{c['z_device']}:{c['z_port']}", "none"),
                                  (c["z_device"], f"{c['a_device']}:{c['a_port']}", "rs")):
            db = configs[device]
            row = next(r for r in db["PORT"].values() if r.get("description") == peer)  # type: ignore[attr-defined]
            assert row["fec"] == fec, (c["cable_id"], device)
