"""SR-IOV host side: sriov-setup.sh runs against a fake /sys with stub ip and mstconfig (0 then N, no write for
the same count, nothing written above sriov_totalvfs, idempotent second run, GUIDs and MACs as planned), and VF
addresses unique across the cluster (a property test). shellcheck, systemd-analyze and strace check the script and
its unit in tests/external/sriov/test_host_sriov.py."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricgen.core.artifacts import Artifact
from fabricgen.core.document import Document
from fabricgen.core.errors import SpecIssue
from fabricgen.core.issues import Issues
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.features.sriov import render as host_sriov
from fabricgen.features.sriov.build import check_vf_guids, check_vf_ranges, vf_guids, vf_range
from fabricgen.model.cluster import Fabric
from fabricgen.model.nodes import Node
from fabricgen.model.sriov import Sriov
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from fabricgen.spec.load import load_file
from tests.conftest import INVENTORIES
from tests.helpers.fake_host import write
from tests.helpers.sriov import ETH_PFS, IB_PFS, NODE, READ_ONLY, FakeHost, fake_host, rebinding_driver

H100 = INVENTORIES / "h100-4su.yaml"


def _vf_ranges(doc: Document, fabrics: list[Fabric], nodes: tuple[Node, ...]) -> list[SpecIssue]:
    """check_vf_ranges' issues against ``doc``."""
    issues = Issues(doc)
    check_vf_ranges(issues, fabrics, nodes)
    return issues.found


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(H100).topology


@pytest.fixture(scope="module")
def h100(topology: Topology) -> dict[str, Artifact]:
    return {a.path: a for a in host_sriov.render(topology)}


@pytest.fixture
def host(tmp_path: Path, h100: dict[str, Artifact], topology: Topology) -> FakeHost:
    return fake_host(tmp_path, h100, topology)


def _planned(topology: Topology, pf: str) -> list[str]:
    return [a for node, port, _, a in host_sriov.vf_addresses(topology, "dgx-h100") if node == NODE and port == pf]


def test_artifact_set(h100: dict[str, Artifact]) -> None:
    assert sorted(h100) == [
        "hosts/dgx-h100/containerd.service.d/fabricgen-memlock.conf", "hosts/dgx-h100/host-preflight.sh",
        "hosts/dgx-h100/slurmd.service.d/fabricgen-memlock.conf", "hosts/dgx-h100/sriov-setup.service",
        "hosts/dgx-h100/sriov-setup.sh", "hosts/dgx-h100/sriov-vfs.tsv",
    ], "the UFM appliance is not in the compute fabric's sriov.nodes"
    assert h100["hosts/dgx-h100/sriov-setup.sh"].mode == 0o755 and h100["hosts/dgx-h100/sriov-vfs.tsv"].mode == 0o644


def test_first_run_creates_vfs_and_sets_planned_guids_then_second_run_changes_nothing(
        host: FakeHost, topology: Topology) -> None:
    first = host.run()
    assert first.returncode == 0, first.stderr
    out = first.stdout
    pf0 = host.pf(IB_PFS[0])
    remove = out.index(f"{IB_PFS[0]}: remove the 4 VFs (a nonzero count cannot change in place): write 0 to "
                       f"{host.root}/sys/class/net/{IB_PFS[0]}/device/sriov_numvfs")
    create = out.index(f"{IB_PFS[0]}: create 8 VFs: write 8 to")
    assert remove < create, "0 is written before the new count"
    assert out.count("remove the") == 1, "ports that had no VFs are not reset"
    assert (pf0 / "sriov_numvfs").read_text() == "8\n"
    for pf in IB_PFS:
        planned = _planned(topology, pf)
        assert len(planned) == 8 and (host.pf(pf) / "sriov_numvfs").read_text() == "8\n"
        for vf, guid in enumerate(planned):
            assert (host.vf(pf, vf) / "NODE_GUID").read_text().strip() == guid
            assert (host.vf(pf, vf) / "PORT_GUID").read_text().strip() == guid
            assert (host.vf(pf, vf) / "link-state").read_text().strip() == "auto"
            assert (host.root / "state" / f"{pf[:10]}v{vf}" / "mtu").read_text() == "4092\n"
    for pf in ETH_PFS:
        planned = _planned(topology, pf)
        assert len(planned) == 4 and (host.pf(pf) / "sriov_numvfs").read_text() == "4\n"
        for vf, mac in enumerate(planned):
            assert (host.vf(pf, vf) / "mac").read_text().strip() == mac
            assert (host.vf(pf, vf) / "spoofchk").read_text().strip() == "on"
            assert (host.vf(pf, vf) / "trust").read_text().strip() == "on"
            assert (host.root / "state" / f"{pf[:10]}v{vf}" / "mtu").read_text() == "9000\n"
    assert "mstconfig -d 0000:18:00.0 query" in host.calls
    assert not any(" set " in c for c in host.calls if c.startswith("mstconfig")), "firmware already right"
    assert f"ip link set dev {IB_PFS[0]} vf 0 node_guid {_planned(topology, IB_PFS[0])[0]}" in host.calls
    assert out.count(": unbind ") == 64 and out.count(": bind ") == 64, "each IB VF rebinds once for its GUIDs"

    before, calls = host.snapshot(), len(host.calls)
    second = host.run()
    assert second.returncode == 0, second.stderr
    assert [c for c in host.calls[calls:] if not c.startswith(READ_ONLY)] == []
    assert host.snapshot() == before, "the second run writes nothing"
    assert second.stdout == "sriov-setup: nothing to change: the VFs of dgx-h100 are configured\n"


def test_same_count_writes_nothing(host: FakeHost) -> None:
    assert host.run().returncode == 0
    numvfs = host.pf(IB_PFS[1]) / "sriov_numvfs"
    stamp = numvfs.stat().st_mtime_ns
    again = host.run()
    assert again.returncode == 0 and "sriov_numvfs" not in again.stdout
    assert numvfs.stat().st_mtime_ns == stamp


def test_above_totalvfs_fails_before_anywrite(host: FakeHost) -> None:
    write(host.pf(IB_PFS[3]) / "sriov_totalvfs", "4")
    before = host.snapshot()
    done = host.run()
    assert done.returncode == 1
    assert f"{IB_PFS[3]}: 8 VFs planned but sriov_totalvfs is 4" in done.stderr and "nothing changed" in done.stderr
    assert host.changing_calls() == [] and host.snapshot() == before


def test_firmware_is_set_only_where_needed_and_asks_for_a_reboot(host: FakeHost) -> None:
    pci = host.pf(IB_PFS[2]).name
    write(host.root / "state" / "fw" / pci / "SRIOV_EN", "False(0)")
    write(host.root / "state" / "fw" / pci / "NUM_OF_VFS", "0")
    done = host.run()
    assert done.returncode == 3, done.stderr
    assert [c for c in host.calls if " -y set " in c] == [
        f"mstconfig -d {pci} -y set SRIOV_EN=1 NUM_OF_VFS=8 LINK_TYPE_P1=1"]
    assert f"{IB_PFS[2]}: skipped until the firmware change is applied" in done.stdout
    assert (host.pf(IB_PFS[2]) / "sriov_numvfs").read_text() == "0\n", "no VFs before the reboot"
    assert (host.pf(IB_PFS[1]) / "sriov_numvfs").read_text() == "8\n", "other ports are configured"
    assert "reboot required: firmware changed on ibp79s0" in done.stdout


def test_ethernet_only_card_has_no_link_type(host: FakeHost) -> None:
    """An Ethernet-only ConnectX has no LINK_TYPE_P<n> (mstconfig refuses to query or set it): its firmware is
    judged on SRIOV_EN and NUM_OF_VFS alone and set without a link type."""
    pci = host.pf(ETH_PFS[0]).name
    (host.root / "state" / "fw" / pci / "LINK_TYPE_P1").unlink()
    ready = host.run()
    assert ready.returncode == 0, ready.stderr
    assert (host.pf(ETH_PFS[0]) / "sriov_numvfs").read_text() == "4\n"
    assert not [c for c in host.calls if " -y set " in c]
    write(host.root / "state" / "fw" / pci / "SRIOV_EN", "False(0)")
    changed = host.run()
    assert changed.returncode == 3, changed.stderr
    assert [c for c in host.calls if " -y set " in c] == [f"mstconfig -d {pci} -y set SRIOV_EN=1 NUM_OF_VFS=4"]


def test_infiniband_vfs_on_a_card_without_link_type_fail_before_any_change(host: FakeHost) -> None:
    (host.root / "state" / "fw" / host.pf(IB_PFS[1]).name / "LINK_TYPE_P1").unlink()
    before = host.snapshot()
    done = host.run()
    assert done.returncode == 1
    assert f"{IB_PFS[1]}: the firmware has no LINK_TYPE_P1 (an Ethernet-only card): it cannot run InfiniBand" in \
        done.stderr
    assert host.changing_calls() == [] and host.snapshot() == before


def test_dry_run_prints_every_change_and_makes_none(host: FakeHost) -> None:
    before = host.snapshot()
    done = host.run("--dry-run")
    assert done.returncode == 0, done.stderr
    assert host.changing_calls() == [] and host.snapshot() == before
    assert f"would {IB_PFS[0]}: remove the 4 VFs" in done.stdout
    assert f"would {ETH_PFS[1]}: create 4 VFs: write 4 to" in done.stdout
    assert done.stdout.rstrip().endswith("dry run: 15 changes not made")  # the GRUB drop-in, then update-grub


def test_missing_vf_netdev_times_out_clearly(host: FakeHost) -> None:
    shutil.rmtree(host.pf(IB_PFS[0]).parent / "0000:19:00.5" / "net")
    done = host.run()
    assert done.returncode == 1
    assert f"{IB_PFS[0]}: VF 5 has no netdev after 1 s" in done.stderr


def test_a_rebound_vf_is_configured_under_the_name_udev_gives_it(host: FakeHost, topology: Topology) -> None:
    """A GUID change rebinds the VF: its netdev goes away and comes back later, renamed by udev. The script waits for
    udev and the new netdev before setting the MTU (it used to read the name at once and abort under set -e, or set
    the MTU of a netdev that no longer exists)."""
    planned = {pf: _planned(topology, pf) for pf in IB_PFS}
    for pf, guids in planned.items():  # every GUID already right but VF 3 of the second rail: one rebind
        for vf, guid in enumerate(guids):
            if (pf, vf) != (IB_PFS[1], 3):
                for key in ("NODE_GUID", "PORT_GUID"):
                    write(host.vf(pf, vf) / key, guid)
    with rebinding_driver(host, delay=0.3) as driver:
        done = host.run(SRIOV_WAIT_SECONDS="5")
    assert done.returncode == 0, done.stderr
    assert host.pf(IB_PFS[1]).name == "0000:40:00.0"
    bdf = "0000:41:00.3"  # its VF 3 (the fake numbers VFs on the next bus)
    assert driver == [f"unbind {bdf}", f"bind {bdf}"]
    renamed = f"{IB_PFS[1][:10]}v3r"
    assert f"{IB_PFS[1]} VF 3 ({renamed}): MTU 4092 (was 1500)" in done.stdout
    assert (host.root / "state" / renamed / "mtu").read_text() == "4092\n"
    assert "udevadm settle --timeout=5" in host.calls


def test_multus_sriov_hosts_set_the_exclusive_rdma_namespace_mode(tmp_path: Path) -> None:
    """Without the SR-IOV operator the boot script itself puts the RDMA subsystem in exclusive namespace mode (the rdma
    CNI refuses shared mode): at once and for every later load of ib_core; while other network namespaces exist the
    kernel refuses and the script asks for a reboot. With the operator (the example) the script leaves it alone."""
    spec = tmp_path / "multus.yaml"
    spec.write_text(H100.read_text().replace("kubernetes:  ", "kubernetes:\n  operator: none\n  cni: sriov\n#", 1))
    topology = compile_spec(spec).topology
    assert topology.cluster.kubernetes is not None and topology.cluster.kubernetes.operator == "none"
    host = fake_host(tmp_path / "host", {a.path: a for a in host_sriov.render(topology)}, topology)
    (host.root / "state" / "other-netns").touch()
    busy = host.run()
    assert busy.returncode == 3, busy.stderr
    assert "reboot required: the RDMA namespace mode is not exclusive yet" in busy.stdout
    conf = host.root / "modprobe.d" / "fabricgen-rdma-netns.conf"
    assert conf.read_text() == "options ib_core netns_mode=0\n"
    (host.root / "state" / "other-netns").unlink()
    first = host.run()
    assert first.returncode == 0, first.stderr
    assert "RDMA namespace mode: exclusive (was shared)" in first.stdout
    assert "rdma system set netns exclusive" in host.calls
    assert (host.root / "state" / "rdma-netns").read_text() == "exclusive\n"
    grub = host.root / "grub.d" / "fabricgen-rdma-netns.cfg"
    assert grub.read_text() == 'GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX} ib_core.netns_mode=0"\n'
    assert "update-grub" in host.calls
    calls = len(host.calls)
    assert host.run().stdout == "sriov-setup: nothing to change: the VFs of dgx-h100 are configured\n"
    assert [c for c in host.calls[calls:] if not c.startswith(READ_ONLY)] == []


def test_operator_nodes_get_the_kernel_argument_at_bring_up(host: FakeHost) -> None:
    """With the SR-IOV operator (the example) the pool config asks for exclusive mode and its config daemon drains and
    reboots, one node at a time, every node whose /proc/cmdline lacks ib_core.netns_mode=0. The boot script puts it on
    the kernel command line (and in modprobe.d) at bring-up and asks for the reboot itself while this boot lacks it;
    once booted with it, nothing is left to do (the daemon then finds it set: no reboot wave)."""
    write(host.root / "proc-cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=1 ro iommu=pt")
    first = host.run()
    assert first.returncode == 3, first.stderr
    assert "reboot required: ib_core.netns_mode=0 is not on this boot's kernel command line" in first.stdout
    assert (host.root / "grub.d" / "fabricgen-rdma-netns.cfg").exists() and "update-grub" in host.calls
    assert (host.root / "modprobe.d" / "fabricgen-rdma-netns.conf").read_text() == "options ib_core netns_mode=0\n"
    write(host.root / "proc-cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=1 ro iommu=pt ib_core.netns_mode=0")
    calls = len(host.calls)
    assert host.run().returncode == 0
    assert [c for c in host.calls[calls:] if c.startswith("update-grub")] == []
    grubby = _grubby(host, default="ro iommu=pt", others=("ro iommu=pt ib_core.netns_mode=0",))
    assert host.run(GRUBBY=str(grubby)).returncode == 0
    # RHEL-family hosts: grubby; an older entry with the argument does not make the default entry's
    assert "grubby --update-kernel=ALL --args=ib_core.netns_mode=0" in host.calls


def _grubby(host: FakeHost, default: str, others: tuple[str, ...] = ()) -> Path:
    """A grubby stub: --info=DEFAULT prints the default entry with kernel arguments ``default``, --info=ALL that
    entry and one per ``others``; every call is recorded."""
    grubby = host.root / "bin" / "grubby"
    entries = "".join(f'echo \'index={i}\'; echo \'args="{a}"\'; ' for i, a in enumerate((default, *others)))
    write(grubby, f'#!/bin/sh\necho "grubby $*" >>"{host.root}/state/calls"\n'
                  f'case "$1" in --info=DEFAULT) echo index=0; echo \'args="{default}"\' ;;\n'
                  f'  --info=ALL) {entries};;\nesac')
    grubby.chmod(0o755)
    return grubby


def test_a_pxe_booted_node_relies_on_modprobe_and_does_not_ask_for_reboots(host: FakeHost) -> None:
    """A node whose kernel command line comes from a boot server (no grubby default entry, no grub.cfg) cannot get
    the argument from this script: it exits 0 (it used to exit 3 on every boot), says the boot server must add it,
    and ib_core takes netns_mode=0 from modprobe.d; KERNEL_CMDLINE=boot-server says so where a local GRUB exists."""
    write(host.root / "proc-cmdline", "BOOT_IMAGE=/vmlinuz-6.8.0 root=UUID=1 ro iommu=pt")
    (host.root / "grub.cfg").unlink()
    done = host.run()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the kernel command line comes from a boot server" in done.stdout
    assert "the SR-IOV operator's config daemon reboots the node for it until the boot server adds it" in done.stdout
    assert not (host.root / "grub.d").exists() and "update-grub" not in host.calls
    assert (host.root / "modprobe.d" / "fabricgen-rdma-netns.conf").read_text() == "options ib_core netns_mode=0\n"
    write(host.root / "grub.cfg", 'menuentry "Linux" {\n\tlinux /vmlinuz root=UUID=1 ro\n}')
    assert host.run(KERNEL_CMDLINE="boot-server").returncode == 0 and "update-grub" not in host.calls


def test_update_grub_is_checked_in_the_generated_grub_cfg(host: FakeHost) -> None:
    """The drop-in appends the argument, but a later /etc/default/grub.d file that assigns GRUB_CMDLINE_LINUX drops it:
    the script reads the generated grub.cfg and fails with the reason instead of waiting for a boot that never has
    it."""
    write(host.root / "grub.d" / "zz-site.cfg", 'GRUB_CMDLINE_LINUX="quiet"')
    done = host.run()
    assert done.returncode == 1
    assert "grub.cfg has no ib_core.netns_mode=0 after" in done.stderr
    (host.root / "grub.d" / "zz-site.cfg").unlink()
    assert host.run().returncode == 0
    assert "ib_core.netns_mode=0" in (host.root / "grub.cfg").read_text()
    calls = len(host.calls)
    assert host.run().returncode == 0 and "update-grub" not in host.calls[calls:], "grub.cfg has it: nothing to do"


def test_wrong_pci_address_and_unknown_node_fail_before_any_change(host: FakeHost) -> None:
    before = host.snapshot()
    done = host.run(NODE_NAME="gpu999")
    assert done.returncode == 1 and "node gpu999 has no rows" in done.stderr
    link = host.root / "sys" / "class" / "net" / IB_PFS[1] / "device"
    link.unlink()
    link.symlink_to(host.pf(IB_PFS[0]))
    moved = host.run()
    assert moved.returncode == 1 and f"{IB_PFS[1]} is at PCI 0000:18:00.0, the plan says 0000:40:00.0" in moved.stderr
    assert host.changing_calls() == [] and host.snapshot() == before


# --- VF addresses -----------------------------------------------------------------------------------------------

def test_guids_follow_the_documented_derivation(topology: Topology) -> None:
    rows = host_sriov.vf_addresses(topology, "dgx-h100")
    nodes = [n.name for n in topology.cluster.nodes]
    base = 0x0200000310000000  # the example spec's guid_base (locally administered)
    for node, pf, vf, address in rows:
        if pf not in IB_PFS:
            continue
        rail = IB_PFS.index(pf)
        assert int(address.replace(":", ""), 16) == base + (nodes.index(node) << 16) + (rail << 8) + vf
    addresses = [a for *_, a in rows]
    assert len(addresses) == len(set(addresses)) == 127 * (64 + 8)
    assert host_sriov.vf_addresses(topology, "ufm-appliance") == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4095), st.integers(0, 255), st.integers(0, 255)), min_size=2,
                max_size=50, unique=True))
def test_vf_offsets_are_distinct(vfs: list[tuple[int, int, int]]) -> None:
    """Property: distinct (node, port, VF) triples always get distinct offsets (so distinct GUIDs per base)."""
    offsets = [Sriov.offset(*vf) for vf in vfs]
    assert len(set(offsets)) == len(offsets)
    assert all(0 <= o < 1 << 28 for o in offsets)


@pytest.fixture(scope="module")
def two_ib_fabrics(topology: Topology) -> tuple[Document, Fabric, tuple[Node, ...]]:
    return load_file(H100), topology.fabric("compute").fabric, topology.cluster.nodes


@settings(max_examples=60, deadline=None)
@given(st.integers(1, (1 << 40)), st.integers(-(1 << 24), 1 << 24))
def test_guid_ranges_of_two_fabrics_overlap_iff_reported(
        two_ib_fabrics: tuple[Document, Fabric, tuple[Node, ...]], base: int, shift: int) -> None:
    """Property: a second InfiniBand fabric with VFs on the same nodes is refused exactly when its GUID range
    meets the first one's; when accepted, every VF GUID of both fabrics is distinct."""
    doc, fabric, nodes = two_ib_fabrics
    assert fabric.sriov is not None
    other_base = max(1, base + shift)
    second = dataclasses.replace(fabric, name="compute2",
                                 sriov=dataclasses.replace(fabric.sriov, guid_base=other_base))
    first = dataclasses.replace(fabric, sriov=dataclasses.replace(fabric.sriov, guid_base=base))
    span = vf_range(first, nodes)
    assert span is not None
    low, high = span
    overlap = base + low <= other_base + high and other_base + low <= base + high
    issues = _vf_ranges(doc, [first, second], nodes)
    assert bool(issues) == overlap
    if not overlap:
        guids = [s.guid_base + Sriov.offset(i, Sriov.slot(nic), vf)
                 for f, s in ((first, first.sriov), (second, second.sriov)) if s is not None and s.guid_base
                 for i, n in enumerate(nodes) if n.group in s.groups
                 for nic in s.ports(n.profile, f.role.nic_role) for vf in range(s.vfs_per_port)]
        assert len(guids) == len(set(guids)) == 2 * 127 * 64


def test_ethernet_vlan_qos_and_rates(tmp_path: Path) -> None:
    """Ethernet VF settings beyond the defaults reach every VF, and a second run leaves them alone."""
    spec = tmp_path / "h100.yaml"
    spec.write_text(H100.read_text().replace("      trust: true\n      spoofchk: true\n", "      trust: false\n"
                                             "      spoofchk: false\n      vlan: 100\n      qos: 3\n"
                                             "      min_tx_rate_mbps: 1000\n      max_tx_rate_mbps: 200000\n"))
    topology = compile_spec(spec).topology
    host = fake_host(tmp_path / "host", {a.path: a for a in host_sriov.render(topology)}, topology)
    first = host.run()
    assert first.returncode == 0, first.stderr
    for pf in ETH_PFS:
        for vf in range(4):
            state = {k: (host.vf(pf, vf) / k).read_text().strip()
                     for k in ("vlan", "qos", "min_tx_rate", "max_tx_rate", "trust", "spoofchk")}
            assert state == {"vlan": "100", "qos": "3", "min_tx_rate": "1000", "max_tx_rate": "200000",
                             "trust": "off", "spoofchk": "off"}
    assert f"ip link set dev {ETH_PFS[0]} vf 0 min_tx_rate 1000 max_tx_rate 200000" in host.calls
    calls = len(host.calls)
    assert host.run().stdout == "sriov-setup: nothing to change: the VFs of dgx-h100 are configured\n"
    assert [c for c in host.calls[calls:] if not c.startswith(READ_ONLY)] == []


@pytest.fixture(scope="module")
def storage(topology: Topology) -> Fabric:
    """The example's Ethernet fabric with VFs (MAC-addressed)."""
    fabric = topology.fabric("storage").fabric
    assert fabric.sriov is not None and fabric.sriov.mac_base is not None
    return fabric


def _with_mac_base(fabric: Fabric, base: int) -> Fabric:
    assert fabric.sriov is not None
    return dataclasses.replace(fabric, sriov=dataclasses.replace(fabric.sriov, mac_base=base))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, (1 << 40) - 1))
def test_mac_range_is_refused_exactly_when_it_leaves_the_first_byte(
        two_ib_fabrics: tuple[Document, Fabric, tuple[Node, ...]], storage: Fabric, low: int) -> None:
    """Property: Ethernet VF MACs from a unicast base (02:...) are refused exactly when the last one's first byte
    is not the base's (03:...: multicast, which no NIC takes as a VF MAC)."""
    doc, _, nodes = two_ib_fabrics
    fabric = _with_mac_base(storage, 0x02 << 40 | low)
    span = vf_range(fabric, nodes)
    assert span is not None
    crosses = (0x02 << 40 | low) + span[1] >= 0x03 << 40
    assert [bool("multicast" in i.message) for i in _vf_ranges(doc, [fabric], nodes)] == [True] * crosses


def test_mac_range_into_multicast_names_the_range_and_the_highest_base(
        two_ib_fabrics: tuple[Document, Fabric, tuple[Node, ...]], storage: Fabric) -> None:
    doc, _, nodes = two_ib_fabrics
    fabric = _with_mac_base(storage, 0x02FFFFFF0000)
    span = vf_range(fabric, nodes)
    assert span is not None
    (issue,) = _vf_ranges(doc, [fabric], nodes)
    highest = 0x02FFFFFFFFFF - span[1]
    assert issue.path == "fabrics.storage.sriov.mac_base"
    assert issue.message.startswith("the VF MACs run from 02:ff:ff:ff:00:00 to 03:")
    assert issue.hint == "use a base at most " + ":".join(f"{highest >> s & 0xff:02x}" for s in range(40, -8, -8))
    assert _vf_ranges(doc, [_with_mac_base(storage, highest)], nodes) == []
    assert len(_vf_ranges(doc, [_with_mac_base(storage, highest + 1)], nodes)) == 1


def test_vf_guids_clear_of_the_fabrics_own_guids(topology: Topology) -> None:
    """The example's VF GUIDs miss every simulated switch and HCA GUID of the compute fabric; the base it had
    before (0x0002c90300a00000) put VFs 1-7 of gpu097's rail 0 on the GUIDs of leaves 0-6 of SU 1."""
    ft = topology.fabric("compute")
    physical = {g for n in ib_fabric(topology, ft).nodes for g in (n.node_guid, n.port_guid) if g is not None}
    assert physical and not physical & vf_guids(ft.fabric, topology.cluster.nodes).keys()
    assert list(check_vf_guids(topology)) == []
    assert ft.fabric.sriov is not None
    old = dataclasses.replace(topology, fabrics=tuple(
        dataclasses.replace(f, fabric=dataclasses.replace(f.fabric, sriov=dataclasses.replace(
            ft.fabric.sriov, guid_base=0x0002C90300A00000))) if f is ft else f for f in topology.fabrics))
    (finding,) = check_vf_guids(old)
    assert finding.subject == "fabrics.compute.sriov.guid_base" and finding.severity.value == "error"
    assert finding.message == ("7 VF GUID(s) equal GUIDs of the fabric's switches and HCAs, first 0x0002c90301000001: "
                               "gpu097 ibp24s0 VF 1 and compute-su01-leaf0")
