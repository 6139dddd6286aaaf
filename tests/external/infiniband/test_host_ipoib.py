"""IPoIB host addresses through netplan: netplan generate accepts the generated netplan-ipoib.yaml."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


@pytest.fixture(scope="module")
def files(topology: Topology) -> dict[str, bytes]:
    return {a.path: a.content for a in host_ipoib.render(topology)}


def test_netplan_accepts_it(files: dict[str, bytes], tmp_path: Path) -> None:
    netplan = require_tool("netplan")
    target = tmp_path / "etc" / "netplan" / "61-fabricgen-ipoib.yaml"
    target.parent.mkdir(parents=True)
    target.write_bytes(files["hosts/gpu001/netplan-ipoib.yaml"])
    target.chmod(0o600)
    done = subprocess.run([netplan, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    network = (tmp_path / "run" / "systemd" / "network" / "10-netplan-ibp24s0.network").read_text()
    assert "Address=10.24.0.1/24" in network and "MTUBytes=4092" in network
    assert "[IPoIB]\nMode=datagram" in network and "Gateway=" not in network
