"""Host side of RoCE through its real consumers: shellcheck passes roce-qos.sh, netplan generates the RoCE netplan,
nft checks the RoCE firewall snippet. The script's runs against a fake /sys are in
tests/unit/features/ethernet/test_host_roce.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.ethernet import host_roce
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool
from tests.helpers.ethernet import ROCE_PORTS as PORTS
from tests.helpers.ethernet import ROCE_STUBS as STUBS
from tests.helpers.netplan import netplan_generate

H100 = INVENTORIES / "h100-4su.yaml"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(H100).topology


@pytest.fixture(scope="module")
def h100(topology: Topology) -> dict[str, Artifact]:
    return {a.path: a for a in host_roce.render(topology)}


# --- roce-qos.sh ------------------------------------------------------------------------------------------------

def test_script_is_shellcheck_clean(h100: dict[str, Artifact], tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    script = tmp_path / "roce-qos.sh"
    script.write_bytes(h100["hosts/dgx-h100/roce-qos.sh"].content)
    stubs = [str(STUBS / "mlnx_qos"), str(STUBS / "ip")]
    done = subprocess.run([shellcheck, "-S", "style", str(script), *stubs], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_boot_unit_loads_rdma_cm_and_runs_before_the_network(h100: dict[str, Artifact], tmp_path: Path) -> None:
    """roce-qos.sh's settings are lost at every reboot, and it refuses without rdma_cm's configfs directory: the unit
    loads rdma_ucm first, waits for configfs and every RoCE port, and finishes before the network is online (LNet,
    kubelet, slurmd). systemd-analyze verify accepts it (with stand-ins for the script and modprobe, absent here)."""
    analyze = require_tool("systemd-analyze")
    text = h100["hosts/dgx-h100/roce-qos.service"].content.decode()
    lines = {k: v for k, _, v in (x.partition("=") for x in text.splitlines() if "=" in x and not x.startswith("#"))}
    assert lines["Type"] == "oneshot" and lines["RemainAfterExit"] == "yes"
    assert lines["ExecStartPre"] == "/sbin/modprobe rdma_ucm" and lines["ExecStart"] == "/etc/fabricgen/roce-qos.sh"
    ports = {"sys-subsystem-net-devices-enp41s0f0np0.device", "sys-subsystem-net-devices-enp170s0f0np0.device"}
    assert ports | {"sys-kernel-config.mount", "sriov-setup.service"} <= set(lines["After"].split())
    assert ports <= set(lines["Wants"].split())
    assert {"network-online.target", "lnet.service", "kubelet.service"} <= set(lines["Before"].split())
    script = tmp_path / "roce-qos.sh"
    script.write_bytes(h100["hosts/dgx-h100/roce-qos.sh"].content)
    script.chmod(0o755)
    unit = tmp_path / "roce-qos.service"
    unit.write_text(text.replace("ExecStart=/etc/fabricgen/roce-qos.sh", f"ExecStart={script}")
                    .replace("/sbin/modprobe", "/bin/true"))
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr


# --- netplan ----------------------------------------------------------------------------------------------------

def test_netplan_is_accepted_by_netplan(h100: dict[str, Artifact], tmp_path: Path) -> None:
    networkd = netplan_generate(h100["hosts/gpu001/netplan-roce.yaml"].content, "60-fabricgen-roce.yaml", tmp_path)
    network = (networkd / f"10-netplan-{PORTS[1]}.network").read_text()
    assert "Address=10.20.0.130/25" in network and "MTUBytes=9000" in network, "dual-homed: leaf002's subnet"
    assert "[RoutingPolicyRule]\nFrom=10.20.0.130\nTable=102\nPriority=102" in network
    assert "ConfigureWithoutCarrier=yes" in network, "a dead leaf at boot must not take the address (and LNet) away"


def test_inband_bond_is_accepted_by_netplan(h100: dict[str, Artifact], tmp_path: Path) -> None:
    """The DGX in-band bond (BasePOD: port 2 of both slots): netplan makes bond0 an active-backup bond with the
    primary's planned address, and both members enslaved to it without an address."""
    networkd = netplan_generate(h100["hosts/gpu001/netplan-inband.yaml"].content, "60-fabricgen-inband.yaml",
                                tmp_path)
    netdev = (networkd / "10-netplan-bond0.netdev").read_text()
    assert "Kind=bond" in netdev and "Mode=active-backup" in netdev and "MIIMonitorSec=100ms" in netdev
    bond = (networkd / "10-netplan-bond0.network").read_text()
    assert "Address=10.30.0.2/27" in bond and "MTUBytes=9000" in bond  # 24 hosts a leaf (one per SN4700 cage)
    assert "Table=201\nPriority=201" in bond, "in-band tables are numbered apart from the RoCE ports' 101, 102"
    for member in ("enp170s0f1np1", "enp41s0f1np1"):
        text = (networkd / f"10-netplan-{member}.network").read_text()
        assert "Bond=bond0" in text and "Address=" not in text
    assert "PrimarySlave=true" in (networkd / "10-netplan-enp170s0f1np1.network").read_text()


# --- nftables ---------------------------------------------------------------------------------------------------

def test_firewall_accepts_roce_v2_on_each_port(h100: dict[str, Artifact], tmp_path: Path) -> None:
    text = h100["hosts/dgx-h100/roce-firewall.nft"].content.decode()
    assert "table inet fabricgen_roce {" in text and "policy accept;" in text
    for port in PORTS:
        assert f'iifname "{port}" udp dport 4791 accept' in text
    assert 'define FABRICGEN_ROCE_PORTS = { "enp170s0f0np0", "enp41s0f0np0" }' in text
    assert "include" in text and "drop in any of them is final" in text, "explains how to include it"
    nft = require_tool("nft")
    path = tmp_path / "roce-firewall.nft"
    path.write_text(text)
    done = subprocess.run([nft, "-c", "-f", str(path)], capture_output=True, text=True, timeout=60)
    if "Operation not permitted" in done.stderr:
        pytest.skip("nft --check needs CAP_NET_ADMIN")
    assert done.returncode == 0, done.stderr
