"""Target ``host-sriov``: the host side of SR-IOV and of GPUDirect RDMA, per node profile.

- ``hosts/<profile>/sriov-setup.sh`` (0755): checks the NIC firmware (``mstconfig query``) and sets SRIOV_EN,
  NUM_OF_VFS and LINK_TYPE only when needed (then a reboot is required); creates the VFs (``sriov_numvfs`` 0
  then N when another count is set, never above ``sriov_totalvfs``); waits, bounded, for the VF netdevs; sets
  each VF's InfiniBand node/port GUID (rebinding the VF so the GUID takes effect) and link state, or its
  Ethernet MAC, VLAN/QoS, spoof check, trust, rates and link state; sets the VF MTU. Idempotent, ``--dry-run``,
  ``SYSFS_ROOT`` and ``IP``/``MSTCONFIG`` overrides.
- ``hosts/<profile>/sriov-vfs.tsv``: the per-node data, one row per VF (node, PF, VF, GUID or MAC) from the
  cluster-wide derivation in :mod:`fabricgen.features.sriov.build`; the script reads its own node's rows.
- ``hosts/<profile>/sriov-setup.service``: a oneshot systemd unit running the script at boot, before the network.
- ``hosts/<profile>/host-preflight.sh`` (0755, every profile with GPU-mapped compute NICs): GPUDirect RDMA
  readiness as a pass/fail table: nvidia-peermem loaded, unlimited memlock, PCIe ACS off on the bridges between
  each rail's GPU and NIC, and ``nvidia-smi topo -m`` showing PIX or PXB between them, as the rail map says.
- ``hosts/<profile>/{containerd,slurmd}.service.d/fabricgen-memlock.conf`` (the same profiles): systemd drop-ins with
  ``LimitMEMLOCK=infinity``, since pods and Slurm jobs inherit those daemons' limit.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, LABEL, NETDEV, PCI_ADDRESS, checked
from fabricgen.core.templating import render_template
from fabricgen.features.sriov.build import colons
from fabricgen.model.cluster import Fabric
from fabricgen.model.kubernetes import EXCLUSIVE
from fabricgen.model.nodes import Nic, Node, NodeProfile
from fabricgen.model.sriov import Sriov
from fabricgen.model.topology import Topology

INSTALL_DIR = "/etc/fabricgen"  # where the unit expects the script and its data


@dataclass(frozen=True)
class VfPort:
    """One PF of a profile and the VFs it gets."""

    netdev: str
    dev: str
    pci: str
    fabric: str
    link_type: str
    vfs: int
    firmware_vfs: int
    mtu: int
    link_state: str
    trust: str
    spoofchk: str
    vlan: int
    qos: int
    min_rate: int
    max_rate: int
    addressed: bool  # per-VF GUIDs or MACs in the data file

    @property
    def line(self) -> str:
        """The script's record of this port: space-separated words, each from a checked pattern or a number."""
        return " ".join(str(v) for v in (
            self.netdev, self.dev or "-", self.pci or "-", self.link_type, self.vfs, self.firmware_vfs, self.mtu,
            self.link_state, self.trust, self.spoofchk, self.vlan, self.qos, self.min_rate, self.max_rate,
            int(self.addressed)))


@dataclass(frozen=True)
class Rail:
    rail: int
    gpu: int
    dev: str
    netdev: str


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _vf_port(fabric: Fabric, sriov: Sriov, nic: Nic, profile: str) -> VfPort:
    return VfPort(checked(NETDEV, nic.netdev, f"profile {profile}: netdev"),
                  checked(LABEL, nic.dev, "RDMA device") if nic.dev else "",
                  checked(PCI_ADDRESS, nic.pci, f"profile {profile}: PCI address") if nic.pci else "",
                  checked(IDENTIFIER, fabric.name, "fabric name"), sriov.link_type, sriov.vfs_per_port,
                  sriov.firmware_vfs, sriov.mtu, sriov.link_state, _on(sriov.trust), _on(sriov.spoofchk), sriov.vlan,
                  sriov.qos, sriov.min_tx_rate_mbps, sriov.max_tx_rate_mbps,
                  sriov.guid_base is not None or sriov.mac_base is not None)


def _sriov_fabrics(topology: Topology) -> Iterator[tuple[Fabric, Sriov]]:
    for ft in topology.fabrics:
        if ft.fabric.sriov is not None:
            yield ft.fabric, ft.fabric.sriov


def vf_addresses(topology: Topology, profile: str) -> list[tuple[str, str, int, str]]:
    """(node, PF netdev, VF, GUID or MAC) of every addressed VF of a profile's nodes, in node then port order."""
    rows = []
    for index, node in enumerate(topology.cluster.nodes):
        if node.profile.name != profile:
            continue
        for fabric, sriov in _sriov_fabrics(topology):
            base, width = (sriov.guid_base, 8) if sriov.guid_base is not None else (sriov.mac_base, 6)
            if base is None or node.group not in sriov.groups:
                continue
            for nic in sriov.ports(node.profile, fabric.role.nic_role):
                rows += [(checked(DEVICE_NAME, node.name, "node name"), nic.netdev, vf,
                          colons(base + Sriov.offset(index, Sriov.slot(nic), vf), width))
                         for vf in range(sriov.vfs_per_port)]
    return rows


def _profiles(topology: Topology) -> dict[str, list[VfPort]]:
    """Per attached profile (sorted by name), its ports with VFs in fabric then NIC order."""
    out: dict[str, list[VfPort]] = {}
    for fabric, sriov in _sriov_fabrics(topology):
        groups = set(sriov.groups)
        attached = {n.profile.name: n.profile for n in topology.cluster.nodes if n.group in groups}
        for name, profile in sorted(attached.items()):
            ports = out.setdefault(name, [])
            for nic in sriov.ports(profile, fabric.role.nic_role):
                port = _vf_port(fabric, sriov, nic, name)
                if any(p.netdev == port.netdev for p in ports):
                    raise ValueError(f"profile {name}: {port.netdev} gets VFs from two fabrics")
                ports.append(port)
    return {name: out[name] for name in sorted(out)}


def _exclusive_profiles(topology: Topology) -> set[str]:
    """The profiles whose boot script puts the RDMA subsystem in exclusive namespace mode: those with VFs on a pod
    network fabric (see :class:`fabricgen.model.kubernetes.Kubernetes`). With the SR-IOV operator too: its pool
    config would otherwise set the kernel argument and reboot the nodes one at a time."""
    k8s = topology.cluster.kubernetes
    if k8s is None or k8s.rdma_mode != EXCLUSIVE:
        return set()
    return {n.profile.name for fabric, sriov in _sriov_fabrics(topology) if fabric.name in k8s.fabrics
            for n in topology.cluster.nodes if n.group in sriov.groups and sriov.ports(n.profile, fabric.role.nic_role)}


def _attached(nodes: Sequence[Node], fabric: Fabric) -> list[Node]:
    groups = set(fabric.node_groups)
    return [n for n in nodes if n.group in groups]


def rails(profile: NodeProfile) -> list[Rail]:
    """Compute NICs with a GPU next to them, in rail order: what GPUDirect RDMA preflight checks."""
    return [Rail(nic.rail or 0, nic.gpu, checked(LABEL, nic.dev, "RDMA device"), nic.netdev)
            for nic in sorted(profile.compute, key=lambda n: n.rail or 0) if nic.gpu is not None and nic.dev]


# The daemons whose children run RDMA (they inherit its RLIMIT_MEMLOCK) and who those children are.
MEMLOCK_USERS = (("containerd", "pods (through their containers)"), ("slurmd", "Slurm jobs"))


def render(topology: Topology) -> list[Artifact]:
    """The host SR-IOV and preflight artifacts: see the module docstring."""
    source = PurePosixPath(topology.cluster.source).name
    exclusive = _exclusive_profiles(topology)
    operator = topology.cluster.kubernetes is not None and topology.cluster.kubernetes.operator != "none"
    out = []
    for name, ports in _profiles(topology).items():
        safe = checked(IDENTIFIER, name, "profile name")
        addresses = vf_addresses(topology, name)
        out.append(Artifact(f"hosts/{safe}/sriov-setup.sh", render_template(
            "host-sriov/sriov-setup.sh.j2", profile=safe, source=source, ports=ports, install_dir=INSTALL_DIR,
            rdma_exclusive=name in exclusive, operator=operator), 0o755))
        out.append(Artifact(f"hosts/{safe}/sriov-setup.service", render_template(
            "host-sriov/sriov-setup.service.j2", profile=safe, source=source, install_dir=INSTALL_DIR,
            devices=[f"sys-subsystem-net-devices-{p.netdev}.device" for p in ports])))  # netdevs need no escaping
        if addresses:
            out.append(Artifact(f"hosts/{safe}/sriov-vfs.tsv", render_template(
                "host-sriov/sriov-vfs.tsv.j2", profile=safe, source=source, rows=addresses)))
    compute = {n.profile.name: n.profile for ft in topology.fabrics if ft.fabric.role.value == "compute"
               for n in _attached(topology.cluster.nodes, ft.fabric) if n.profile.gpus}
    for name, profile in sorted(compute.items()):
        gpu_rails = rails(profile)
        if gpu_rails:
            out.append(Artifact(f"hosts/{checked(IDENTIFIER, name, 'profile name')}/host-preflight.sh",
                                render_template("host-sriov/host-preflight.sh.j2", profile=name, source=source,
                                                rails=gpu_rails), 0o755))
            for unit, users in MEMLOCK_USERS:
                out.append(Artifact(f"hosts/{checked(IDENTIFIER, name, 'profile name')}/{unit}.service.d/"
                                    "fabricgen-memlock.conf", render_template(
                                        "host-sriov/memlock.conf.j2", profile=name, source=source, unit=unit,
                                        users=users)))
    return out

