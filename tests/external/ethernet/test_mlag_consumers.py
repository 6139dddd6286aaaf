"""MLAG leaf pairs through their real consumers: every MLAG leaf's config_db.json of h100-4su's in-band fabric (as
DGX BasePOD pairs it) against SONiC's own YANG models (sonic-mclag, sonic-portchannel, sonic-vlan: field names,
leafrefs from MCLAG_INTERFACE to PORTCHANNEL and MCLAG_DOMAIN, the peer link a PORT or PORTCHANNEL), and the host's
LACP bond through `netplan generate`. Required in CI (FABRICGEN_REQUIRE_EXTERNAL=1), skipped locally without them.
The shared validator runs through sonic_yang_leafref.py (leafref keys typed as their target, as SONiC's own
translation does)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.ethernet import host_roce
from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.pipeline import compile_spec
from tests.external.ethernet.test_sonic_yang import require_sonic_yang
from tests.helpers.ethernet import mlag_spec
from tests.helpers.netplan import netplan_generate

WRAPPER = Path(__file__).with_name("sonic_yang_leafref.py")


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Artifact]:
    topology = compile_spec(mlag_spec(tmp_path_factory.mktemp("mlag"))).topology
    return {a.path: a for a in (*sonic.render(topology), *host_roce.render(topology))}


def _yang(validator: Path, path: Path) -> str:
    done = subprocess.run([sys.executable, str(WRAPPER), str(validator), str(path)], capture_output=True, text=True,
                          timeout=120, check=False)
    return done.stdout + done.stderr + f"\nrc={done.returncode}"


@pytest.mark.external
def test_every_mlag_leaf_validates_against_sonic_yang(artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    validator = require_sonic_yang()
    leaves = sorted(p for p in artifacts if p.startswith("switches/inband-leaf") and p.endswith("config_db.json"))
    assert len(leaves) == 12
    for name in leaves:
        db = json.loads(artifacts[name].content)
        assert {"MCLAG_DOMAIN", "MCLAG_INTERFACE", "PORTCHANNEL", "PORTCHANNEL_MEMBER"} <= set(db), name
        path = tmp_path / "config_db.json"
        path.write_bytes(artifacts[name].content)
        output = _yang(validator, path)
        assert "rc=0" in output and "INVALID" not in output and "not validated" not in output, f"{name}: {output}"


@pytest.mark.external
def test_yang_refuses_a_broken_mclag(artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    """The models do check these tables: an MCLAG interface of no PortChannel, a misspelt field, a second
    domain (one per switch) are each refused."""
    validator = require_sonic_yang()
    good = json.loads(artifacts["switches/inband-leaf001/config_db.json"].content)
    breaks = {
        "no such PortChannel": lambda db: db["MCLAG_INTERFACE"].update({"1|PortChannel77": {"if_type": "PortChannel"}}),
        "misspelt field": lambda db: db["MCLAG_DOMAIN"]["1"].update({"peerlink": "PortChannel999"}),
        "two domains": lambda db: db["MCLAG_DOMAIN"].update({"2": dict(db["MCLAG_DOMAIN"]["1"])}),
    }
    for why, spoil in breaks.items():
        db = json.loads(json.dumps(good))
        spoil(db)
        path = tmp_path / "broken.json"
        path.write_text(json.dumps(db))
        assert "rc=1" in _yang(validator, path), why


@pytest.mark.external
def test_lacp_bond_is_accepted_by_netplan(artifacts: dict[str, Artifact], tmp_path: Path) -> None:
    networkd = netplan_generate(artifacts["hosts/gpu001/netplan-inband.yaml"].content, "60-fabricgen-inband.yaml",
                                tmp_path)
    netdev = (networkd / "10-netplan-bond0.netdev").read_text()
    for line in ("Kind=bond", "Mode=802.3ad", "LACPTransmitRate=fast", "TransmitHashPolicy=layer3+4",
                 "MIIMonitorSec=100ms"):
        assert line in netdev, netdev
    for member in ("enp170s0f1np1", "enp41s0f1np1"):
        text = (networkd / f"10-netplan-{member}.network").read_text()
        assert "Bond=bond0" in text and "Address=" not in text and "PrimarySlave" not in text
