"""Host side of RoCE: roce-qos.sh runs idempotently against a fake /sys and stub tools, netplan and nftables
snippets carry the address plan and the RoCE ports (shellcheck, netplan and nft check them in
tests/external/ethernet/test_host_roce.py)."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.features.ethernet import host_roce
from fabricgen.model.ethernet import RoceQos, TrafficClass
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.ethernet import ROCE_PORTS as PORTS
from tests.helpers.ethernet import ROCE_STUBS as STUBS
from tests.helpers.fake_host import ScriptHost, write

H100 = INVENTORIES / "h100-4su.yaml"
LAB = INVENTORIES / "lab-1su.yaml"
SERVER_PORTS = ("enp65s0f0np0", "enp65s0f1np1")  # h100-4su's Lustre servers
READ_ONLY = re.compile(r"^(mlnx_qos -i \S+|ip -o link show dev \S+)$")
PFC3 = "0,0,0,1,0,0,0,0"
DEVICES = ("mlx5_7", "mlx5_1")  # the RDMA devices of PORTS


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(H100).topology


@pytest.fixture(scope="module")
def h100(topology: Topology) -> dict[str, Artifact]:
    return {a.path: a for a in host_roce.render(topology)}


# --- the fake host: sysfs, procfs and the state behind the stub mlnx_qos and ip -------------------------------

class FakeHost(ScriptHost):
    def changing_calls(self, since: int = 0) -> list[str]:
        return [c for c in self.calls[since:] if not READ_ONLY.match(c)]

    def net(self, port: str) -> Path:
        return self.root / "sys" / "class" / "net" / port


def fake_host(tmp_path: Path, script: bytes, ports: tuple[str, ...] = PORTS) -> FakeHost:
    """Two mlx5 ports as a freshly booted DGX has them: trust PCP, no PFC, ECN off, CNP DSCP 0, MTU 1500.
    The first port also has a stale DSCP map (26 and 48 -> priority 0) and the optional cnp_802p_prio file."""
    for i, port in enumerate(ports):
        ecn = tmp_path / "sys" / "class" / "net" / port / "ecn"
        for point in ("roce_np", "roce_rp"):
            for prio in range(8):
                write(ecn / point / "enable" / str(prio), "0")
        write(ecn / "roce_np" / "cnp_dscp", "0")
        if i == 0:
            write(ecn / "roce_np" / "cnp_802p_prio", "0")
        conf = tmp_path / "proc" / "sys" / "net" / "ipv4" / "conf" / port
        write(conf / "arp_ignore", "0")
        write(conf / "arp_announce", "0")
        write(conf / "ignore_routes_with_linkdown", "0")
        state = tmp_path / "state" / port
        write(state / "trust", "pcp")
        write(state / "pfc", "0,0,0,0,0,0,0,0")
        write(state / "mtu", "1500")
        if i == 0:
            write(state / "dscp2prio" / "26", "0")
            write(state / "dscp2prio" / "48", "0")
    for dev in DEVICES:  # configfs after rdma_cm loaded and the devices' directories made: ToS 0
        write(tmp_path / "config" / "rdma_cm" / dev / "ports" / "1" / "default_roce_tos", "0")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("mlnx_qos", "ip", "mstconfig"):
        shutil.copy(STUBS / tool, bin_dir / tool)
        (bin_dir / tool).chmod(0o755)
    path = tmp_path / "roce-qos.sh"
    path.write_bytes(script)
    path.chmod(0o755)
    env = {**os.environ, "SYSFS_ROOT": str(tmp_path / "sys"), "PROCFS_ROOT": str(tmp_path / "proc"),
           "CONFIGFS_ROOT": str(tmp_path / "config"),
           "MLNX_QOS": str(bin_dir / "mlnx_qos"), "IP": str(bin_dir / "ip"), "MSTCONFIG": str(bin_dir / "mstconfig"),
           "STUB_STATE": str(tmp_path / "state")}
    return FakeHost(tmp_path, path, env)


@pytest.fixture
def host(tmp_path: Path, h100: dict[str, Artifact]) -> FakeHost:
    return fake_host(tmp_path, h100["hosts/dgx-h100/roce-qos.sh"].content)


# --- roce-qos.sh ------------------------------------------------------------------------------------------------

def test_artifact_set(h100: dict[str, Artifact], topology: Topology) -> None:
    netplans = sorted(p for p in h100 if p.endswith("/netplan-roce.yaml"))
    hosts = sorted(n.name for n in topology.cluster.nodes if n.profile.name in ("dgx-h100", "lustre-server"))
    assert netplans == [f"hosts/{g}/netplan-roce.yaml" for g in hosts] and len(hosts) == 127 + 6
    inband = sorted(p for p in h100 if p.endswith("/netplan-inband.yaml"))
    assert inband == [f"hosts/{g}/netplan-inband.yaml" for g in hosts], "DGX in-band bonds, the servers' one port"
    per_profile = ("roce-qos.sh", "roce-qos.service", "roce-firewall.nft")
    assert set(h100) - set(netplans) - set(inband) == {f"hosts/{p}/{f}" for p in ("dgx-h100", "lustre-server")
                                                       for f in per_profile}, \
        "the storage servers carry the lossless class too; the UFM appliance has no storage NICs: no artifacts"
    assert h100["hosts/dgx-h100/roce-qos.sh"].mode == 0o755
    assert h100["hosts/dgx-h100/roce-firewall.nft"].mode == 0o644


def test_script_documents_the_lossless_chain(h100: dict[str, Artifact]) -> None:
    text = h100["hosts/dgx-h100/roce-qos.sh"].content.decode()
    head = text.split("set -euo pipefail", 1)[0]
    assert "fabric storage: DSCP 26 -> priority 3 (PFC 0,0,0,1,0,0,0,0, NCCL_IB_TC=106)" in head
    assert "CNP DSCP 48 -> priority 6; host MTU 9000 (switch ports 9100)" in head
    assert "#   enp170s0f0np0 (mlx5_7, port Slot1P1), fabric storage" in head
    assert "#   enp41s0f0np0 (mlx5_1, port Slot2P1), fabric storage" in head
    assert "configure 'enp170s0f0np0' '26' '3' '0,0,0,1,0,0,0,0' '48' '6' '9000' 'mlx5_7' '1' '106'" in text
    assert "check_nic_mode" not in text, "ConnectX-7 ports have no DPU mode"
    assert "check_port 'enp170s0f0np0' '3' 'mlx5_7' '0000:aa:00.0' '1'" in text, "a VPI port: its link type"


def test_port_running_infiniband_gets_the_ethernet_link_type_first(host: FakeHost) -> None:
    """The DGX H100's Slot1 port 1 may come up InfiniBand (ibp170s0f0: no Ethernet netdev, link_layer InfiniBand;
    field review R1): the script sets LINK_TYPE_P1=2 at the port's planned PCI function and nothing else, exits 3
    (reboot), and a dry run only says so. A missing netdev that is not InfiniBand stays an error."""
    shutil.rmtree(host.net(PORTS[0]))
    port = host.root / "sys" / "bus" / "pci" / "devices" / "0000:aa:00.0" / "infiniband" / "mlx5_7" / "ports" / "1"
    write(port / "link_layer", "InfiniBand")
    before = host.snapshot()
    dry = host.run("--dry-run")
    assert dry.returncode == 3, dry.stderr
    assert "would" in dry.stdout and "LINK_TYPE_P1=2" in dry.stdout and host.snapshot() == before
    assert host.changing_calls() == []
    done = host.run()
    assert done.returncode == 3, done.stderr
    assert host.changing_calls() == ["mstconfig -d 0000:aa:00.0 -y set LINK_TYPE_P1=2"], "nothing but the link type"
    assert f"reboot required: the link type changed on {PORTS[0]}" in done.stdout
    assert (host.root / "state" / "fw" / "0000:aa:00.0" / "LINK_TYPE_P1").read_text() == "next 2\n"
    write(port / "link_layer", "Ethernet")
    other = host.run()
    assert other.returncode == 1 and f"interface {PORTS[0]} not found" in other.stderr


def test_first_run_configures_everything_and_second_run_changes_nothing(host: FakeHost) -> None:
    first = host.run()
    assert first.returncode == 0, first.stderr
    a, b = PORTS
    assert host.changing_calls() == [
        f"mlnx_qos -i {a} --trust dscp", f"mlnx_qos -i {a} --pfc {PFC3}",
        f"mlnx_qos -i {a} --dscp2prio set,26,3", f"mlnx_qos -i {a} --dscp2prio set,48,6",
        f"ip link set dev {a} mtu 9000",
        # the second port keeps the default DSCP map (26 -> 3, 48 -> 6): no dscp2prio call
        f"mlnx_qos -i {b} --trust dscp", f"mlnx_qos -i {b} --pfc {PFC3}",
        f"ip link set dev {b} mtu 9000",
    ]
    for port in PORTS:
        ecn = host.net(port) / "ecn"
        for point in ("roce_np", "roce_rp"):
            enabled = {p: (ecn / point / "enable" / str(p)).read_text().strip() for p in range(8)}
            assert enabled == {p: "1" if p == 3 else "0" for p in range(8)}, (port, point)
        assert (ecn / "roce_np" / "cnp_dscp").read_text() == "48\n"
        conf = host.root / "proc" / "sys" / "net" / "ipv4" / "conf" / port
        assert (conf / "arp_ignore").read_text() == "1\n" and (conf / "arp_announce").read_text() == "2\n"
        assert (conf / "ignore_routes_with_linkdown").read_text() == "1\n"
        assert (host.root / "state" / port / "mtu").read_text() == "9000\n"
        assert (host.root / "state" / port / "trust").read_text() == "dscp\n"
    assert (host.net(a) / "ecn" / "roce_np" / "cnp_802p_prio").read_text() == "6\n"
    assert not (host.net(b) / "ecn" / "roce_np" / "cnp_802p_prio").exists(), "optional file is never created"
    assert f"roce-qos: {a}: trust DSCP (was pcp)" in first.stdout
    assert f"roce-qos: {a}: DSCP 26 -> priority 3 (was 0)" in first.stdout
    for dev in DEVICES:  # non-NCCL RDMA (NFS-RDMA, GDS, UCX over rdma_cm) on the lossless class, not ToS 0
        tos = host.root / "config" / "rdma_cm" / dev / "ports" / "1" / "default_roce_tos"
        assert tos.read_text() == "106\n"
    assert f"roce-qos: {a}: rdma_cm default RoCE ToS 106 on mlx5_7 port 1 (was 0)" in first.stdout
    assert first.stdout.rstrip().endswith("roce-qos: 23 changes made")

    before, calls = host.snapshot(), len(host.calls)
    second = host.run()
    assert second.returncode == 0, second.stderr
    assert host.calls[calls:], "the second run reads the state"
    assert host.changing_calls(calls) == []
    assert host.snapshot() == before, "the second run writes nothing"
    assert second.stdout == "roce-qos: nothing to change: the RoCE ports of dgx-h100 are configured\n"


def test_dry_run_prints_every_change_and_makes_none(host: FakeHost) -> None:
    before = host.snapshot()
    done = host.run("--dry-run")
    assert done.returncode == 0, done.stderr
    assert host.changing_calls() == [] and host.snapshot() == before
    would = [line for line in done.stdout.splitlines() if line.startswith("roce-qos: would ")]
    assert len(would) == 23 and done.stdout.rstrip().endswith("dry run: 23 changes not made")
    a, b = PORTS
    text = done.stdout
    assert f"would {a}: trust DSCP (was pcp): {host.env['MLNX_QOS']} -i {a} --trust dscp" in text
    assert f"-i {b} --pfc {PFC3}" in text and f"-i {a} --dscp2prio set,48,6" in text
    assert f"would {a}: ECN notification point on priority 3: write 1 to {host.net(a)}/ecn/roce_np/enable/3" in text
    assert f"would {b}: ECN reaction point on priority 3: write 1 to {host.net(b)}/ecn/roce_rp/enable/3" in text
    assert f"would {a}: CNP DSCP 48: write 48 to {host.net(a)}/ecn/roce_np/cnp_dscp (now 0)" in text
    assert f"would {b}: MTU 9000 (was 1500): {host.env['IP']} link set dev {b} mtu 9000" in text


def test_missing_interface_fails_before_any_change(host: FakeHost) -> None:
    shutil.rmtree(host.net(PORTS[1]))  # the second port: the first would otherwise be configured already
    before = host.snapshot()
    done = host.run()
    assert done.returncode == 1
    assert f"interface {PORTS[1]} not found" in done.stderr and "nothing changed" in done.stderr
    assert host.changing_calls() == [] and host.snapshot() == before


def test_missing_ecn_controls_and_tools_fail_clearly(host: FakeHost) -> None:
    (host.net(PORTS[0]) / "ecn" / "roce_rp" / "enable" / "3").unlink()
    done = host.run()
    assert done.returncode == 1 and f"{PORTS[0]}: " in done.stderr and "roce_rp/enable/3 is missing" in done.stderr
    missing_tool = host.run(MLNX_QOS=str(host.root / "no-such-mlnx_qos"))
    assert missing_tool.returncode == 1 and "no-such-mlnx_qos not found" in missing_tool.stderr
    assert host.changing_calls() == []
    bad = host.run("--force")
    assert bad.returncode == 2 and "unknown argument: --force" in bad.stderr


def test_bluefield_in_dpu_mode_is_refused(tmp_path: Path) -> None:
    """lab-1su's storage port is a BlueField-3 B3220, a DPU: in DPU mode its Arm owns the port and host mlnx_qos is
    undefined (NVIDIA BlueField BSP, QoS Configuration), so the script refuses it and changes nothing; in NIC mode
    (INTERNAL_CPU_OFFLOAD_ENGINE DISABLED(1), read as its current value) it configures the port."""
    artifacts = {a.path: a for a in host_roce.render(compile_spec(LAB).topology)}
    script = artifacts["hosts/hgx-8gpu-generic/roce-qos.sh"].content
    assert b"check_nic_mode 'ens1f0np0'" in script
    host = fake_host(tmp_path, script, ports=("ens1f0np0",))
    write(tmp_path / "config" / "rdma_cm" / "mlx5_8" / "ports" / "1" / "default_roce_tos", "0")  # its RDMA device
    bdf = "0000:17:00.0"
    device = tmp_path / "sys" / "devices" / "pci0000:16" / bdf
    device.mkdir(parents=True)
    host.net("ens1f0np0").joinpath("device").symlink_to(device)
    mode = host.root / "state" / "fw" / bdf / "INTERNAL_CPU_OFFLOAD_ENGINE"
    # the current value decides: NIC mode set for the next boot but not yet power-cycled is still DPU mode
    write(mode, "ENABLED(0) ENABLED(0) DISABLED(1)")
    before = host.snapshot()
    dpu = host.run()
    assert dpu.returncode == 1 and "nothing changed" in dpu.stderr
    assert (f"ens1f0np0: the BlueField at {bdf} runs in DPU mode (INTERNAL_CPU_OFFLOAD_ENGINE ENABLED(0)): its Arm "
            "owns the port and host mlnx_qos is undefined") in dpu.stderr
    assert host.changing_calls() == [f"mstconfig -e -d {bdf} query INTERNAL_CPU_OFFLOAD_ENGINE"]
    assert host.snapshot() == before
    unknown = host.run(MSTCONFIG=str(tmp_path / "no-such-mstconfig"))
    assert unknown.returncode == 1 and "no-such-mstconfig (mstflint) is missing" in unknown.stderr
    write(mode, "ENABLED(0) DISABLED(1) DISABLED(1)")
    nic = host.run()
    assert nic.returncode == 0, nic.stderr
    assert "mlnx_qos -i ens1f0np0 --trust dscp" in host.calls


# --- netplan ----------------------------------------------------------------------------------------------------

def test_netplan_addresses_routes_and_mtu(h100: dict[str, Artifact], topology: Topology) -> None:
    plan = topology.addresses["storage"]
    leaf_of = {(node, port): (s, ip) for s in plan.hosts for node, port, ip in s.hosts}
    seen: set[str] = set()
    for path, artifact in h100.items():
        if not path.endswith("/netplan-roce.yaml"):
            continue
        node = path.split("/")[1]
        doc = yaml.safe_load(artifact.content)
        assert set(doc) == {"network"} and doc["network"]["version"] == 2
        ethernets = doc["network"]["ethernets"]
        assert list(ethernets) == list(PORTS if node.startswith("gpu") else SERVER_PORTS)
        assert len({leaf_of[(node, i)][0].leaf for i in (1, 2)}) == 2, "dual-homed: one subnet per leaf"
        for index, cfg in enumerate(ethernets.values(), start=1):
            subnet, ip = leaf_of[(node, index)]
            network = ipaddress.ip_network(subnet.network)
            assert cfg["mtu"] == 9000 and cfg["ignore-carrier"] is True
            [address] = cfg["addresses"]
            interface = ipaddress.ip_interface(address)
            assert str(interface.ip) == ip and interface.network == network
            gateway = ipaddress.ip_address(subnet.gateway)
            assert gateway in network and interface.ip != gateway
            table = 100 + index
            pools = ("10.20.0.0/16", "10.22.0.0/24", "10.21.0.0/20")  # hosts, the switches' loopbacks and p2p
            assert cfg["routes"] == [
                *({"to": pool, "via": subnet.gateway, "metric": table} for pool in pools),
                {"to": str(network), "scope": "link", "table": table},
                *({"to": pool, "via": subnet.gateway, "table": table} for pool in pools),
            ]
            assert cfg["routing-policy"] == [{"from": ip, "table": table, "priority": table}]
            assert all(r["to"] not in ("default", "0.0.0.0/0") for r in cfg["routes"]), "no default route"
            assert ip not in seen
            seen.add(ip)
    assert len(seen) == 2 * (127 + 6)  # DGX nodes and Lustre servers


# --- which fabrics and profiles, determinism, guards ------------------------------------------------------------

def test_render_is_deterministic(h100: dict[str, Artifact]) -> None:
    again = {a.path: a for a in host_roce.render(compile_spec(H100).topology)}
    assert again == h100


def test_every_roce_fabric_and_netplan_only_with_addressing(tmp_path: Path) -> None:
    lab = {a.path: a.content.decode() for a in host_roce.render(compile_spec(LAB).topology)}
    assert "configure 'ens1f0np0' '26' '3' '0,0,0,1,0,0,0,0' '48' '6' '9000'" in \
        lab["hosts/hgx-8gpu-generic/roce-qos.sh"], "a RoCE fabric without a qos section gets the default class"
    assert len([p for p in lab if p.endswith("netplan-roce.yaml")]) == 8
    text = LAB.read_text()
    storage = "    switch: SN4700\n    nos: sonic\n    topology: {kind: leaf-spine}\n"
    assert storage in text
    spec = tmp_path / "lab-qos.yaml"
    spec.write_text(text.replace(storage, "    switch: SN4700\n    nos: sonic\n    host_mtu: 4200\n"
                                 "    qos: {lossless: {dscp: 24, priority: 4}}\n    topology: {kind: leaf-spine}\n"))
    artifacts = {a.path: a.content.decode() for a in host_roce.render(compile_spec(spec).topology)}
    assert "configure 'ens1f0np0' '24' '4' '0,0,0,0,1,0,0,0' '48' '6' '4200'" in \
        artifacts["hosts/hgx-8gpu-generic/roce-qos.sh"]
    assert "mtu: 4200" in artifacts["hosts/hgx01/netplan-roce.yaml"]
    no_plan = tmp_path / "lab-noaddr.yaml"
    unplanned = spec.read_text().replace("    addressing: {hosts: 10.40.0.0/22, p2p: 10.41.0.0/24, "
                                         "loopbacks: 10.42.0.0/26}\n", "")
    no_plan.write_text(unplanned.replace("    switch: SN4700\n    nos: sonic\n", "    switch: SN4700\n"))
    paths = sorted(a.path for a in host_roce.render(compile_spec(no_plan).topology))
    assert paths == ["hosts/hgx-8gpu-generic/roce-firewall.nft", "hosts/hgx-8gpu-generic/roce-qos.service",
                     "hosts/hgx-8gpu-generic/roce-qos.sh"]
    ethernet = spec.read_text().replace("    type: roce\n    speed: 200G", "    type: ethernet\n    speed: 200G")
    assert ethernet != spec.read_text()
    no_roce = tmp_path / "lab-ethernet.yaml"
    no_roce.write_text(ethernet.replace("    qos: {lossless: {dscp: 24, priority: 4}}\n", ""))
    assert host_roce.render(compile_spec(no_roce).topology) == [], "plain Ethernet fabrics get no RoCE host setup"


def _with_profile_netdev(topology: Topology, netdev: str) -> Topology:
    profile = next(n.profile for n in topology.cluster.nodes if n.profile.name == "dgx-h100")
    bad = dataclasses.replace(profile, storage=(dataclasses.replace(profile.storage[0], netdev=netdev),
                                                *profile.storage[1:]))
    nodes = tuple(dataclasses.replace(n, profile=bad) if n.profile is profile else n for n in topology.cluster.nodes)
    return dataclasses.replace(topology, cluster=dataclasses.replace(topology.cluster, nodes=nodes))


def test_unsafe_netdev_never_reaches_a_script(topology: Topology) -> None:
    with pytest.raises(ValueError, match="netdev"):
        host_roce.render(_with_profile_netdev(topology, "eth0;reboot"))


def test_ports_without_netdev_are_listed_not_configured(topology: Topology) -> None:
    artifacts = {a.path: a.content.decode() for a in host_roce.render(_with_profile_netdev(topology, ""))}
    script = artifacts["hosts/dgx-h100/roce-qos.sh"]
    assert "no netdev in the node profile: Slot1P1 (storage)" in script
    assert "configure 'enp41s0f0np0'" in script and "enp170s0f0np0" not in script
    assert list(yaml.safe_load(artifacts["hosts/gpu001/netplan-roce.yaml"])["network"]["ethernets"]) == [PORTS[1]]


def test_two_fabrics_with_different_classes_on_one_port_are_refused(topology: Topology) -> None:
    storage = topology.fabric("storage")
    qos = storage.fabric.qos
    assert qos is not None
    same = dataclasses.replace(storage, fabric=dataclasses.replace(storage.fabric, name="storage2"))
    merged = {a.path: a.content.decode()
              for a in host_roce.render(dataclasses.replace(topology, fabrics=(*topology.fabrics, same)))}
    assert "#   enp170s0f0np0 (mlx5_7, port Slot1P1), fabric storage, storage2" in merged["hosts/dgx-h100/roce-qos.sh"]
    other: RoceQos = dataclasses.replace(qos, lossless=TrafficClass(24, 4))
    clash = dataclasses.replace(storage, fabric=dataclasses.replace(storage.fabric, name="storage2", qos=other))
    with pytest.raises(ValueError, match="two lossless classes"):
        host_roce.render(dataclasses.replace(topology, fabrics=(*topology.fabrics, clash)))


def test_without_rdma_cm_configfs_nothing_changes(host: FakeHost) -> None:
    """The default RoCE ToS lives in rdma_cm's configfs tree: without it (rdma_cm not loaded) nothing is changed."""
    shutil.rmtree(host.root / "config" / "rdma_cm")
    before = host.snapshot()
    done = host.run()
    assert done.returncode == 1 and host.snapshot() == before and host.changing_calls() == []
    assert f"{PORTS[0]}: {host.root}/config/rdma_cm is missing (load rdma_cm" in done.stderr


def test_inband_bond_takes_the_primary_members_address(h100: dict[str, Artifact], topology: Topology) -> None:
    """Every DGX bonds its two in-band ports (bond0, active-backup): the bond carries the plan's address of the primary
    member, both members sit on one leaf, and the members get no address of their own."""
    plan = topology.addresses["inband"]
    address = {(node, port): (subnet, ip) for subnet in plan.hosts for node, port, ip in subnet.hosts}
    gpus = [n.name for n in topology.cluster.nodes if n.profile.name == "dgx-h100"]
    for node in gpus:
        doc = yaml.safe_load(h100[f"hosts/{node}/netplan-inband.yaml"].content)["network"]
        assert doc["ethernets"] == {m: {"mtu": 9000} for m in ("enp170s0f1np1", "enp41s0f1np1")}
        bond = doc["bonds"]["bond0"]
        subnet, ip = address[(node, 1)]
        assert address[(node, 2)][0] is subnet, "both members on one leaf"
        assert bond["addresses"] == [f"{ip}/{ipaddress.ip_network(subnet.network).prefixlen}"]
        assert bond["parameters"] == {"mode": "active-backup", "primary": "enp170s0f1np1", "mii-monitor-interval": 100}
