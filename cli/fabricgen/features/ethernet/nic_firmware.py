"""Target ``host-firmware``: ``hosts/<profile>/nic-firmware.sh`` (0755), the persistent firmware (nvconfig) settings
of a node profile's NICs, set with mlxconfig where they differ:

- the BlueField-3 mode the profile asks for (``bluefield_mode``: nic or dpu; INTERNAL_CPU_MODEL and
  INTERNAL_CPU_OFFLOAD_ENGINE, from DOCA "BlueField Modes of Operation");
- on the ports of a Spectrum-X fabric, the SuperNIC settings of its reference architecture release
  (ROCE_ADAPTIVE_ROUTING_EN, USER_PROGRAMMABLE_CC, ... as NVIDIA's NIC Configuration Operator sets them), unless
  that operator applies them (``spectrum_x.nic_configuration_operator``: two writers of one card's firmware would
  undo each other, and the operator reboots a node to apply what it finds changed).

Data and sources: ``nic_firmware.yaml``. The settings apply at the next cold boot only: the script queries first
(mlxconfig ``-e``: default, current, next boot), sets only what the next boot would not already have, and exits 3
while a setting waits for a power cycle; it never reboots or power-cycles the host itself. ``--dry-run``,
``SYSFS_ROOT``, ``MLXCONFIG``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import IDENTIFIER, LABEL, NETDEV, PCI_ADDRESS, checked
from fabricgen.core.templating import render_template
from fabricgen.features.ethernet.spectrum_x import (
    attached_ports,
    bluefield_devices,
    bluefield_mode_settings,
    ra_profile,
)
from fabricgen.model.cluster import Cluster
from fabricgen.model.nodes import Nic, NodeProfile
from fabricgen.model.topology import Topology


@dataclass(frozen=True)
class FirmwarePort:
    """One NIC port of a profile and the nvconfig values its card must have (``settings``: NAME=VALUE words)."""

    label: str
    netdev: str  # how the script finds the card when the profile gives no PCI address
    pci: str
    model: str
    why: str
    settings: tuple[str, ...]


def _wanted(cluster: Cluster, profile: NodeProfile, nic: Nic) -> tuple[dict[str, int], list[str]]:
    """The nvconfig values ``nic``'s card must have, and why (the mode, the Spectrum-X fabrics)."""
    model = cluster.nic_models.get(nic.model)
    device = model.pci_device_id if model is not None else ""
    wanted: dict[str, int] = {}
    why = []
    if profile.bluefield_mode and device in bluefield_devices():
        wanted |= bluefield_mode_settings(profile.bluefield_mode)
        why.append(f"BlueField-3 {profile.bluefield_mode.upper()} mode")
    for fabric in cluster.fabrics:
        spx = fabric.spectrum_x
        if spx is None or spx.nic_configuration_operator or nic.role is not fabric.role.nic_role:
            continue
        if not any(p.name == profile.name and n == nic for p, n in attached_ports(cluster, fabric)):
            continue
        for name, value in ra_profile(spx.profile)["nvconfig"][device].items():
            if wanted.setdefault(name, value) != value:
                raise ValueError(f"profile {profile.name} port {nic.port}: {name} would be {wanted[name]} and "
                                 f"{value}")
        why.append(f"Spectrum-X {spx.profile} on fabric {fabric.name}")
    return wanted, why


def _profile_ports(cluster: Cluster, profile: NodeProfile) -> tuple[list[FirmwarePort], list[str]]:
    """The profile's ports with firmware settings to make, and those the script cannot find (no netdev or PCI)."""
    ports, unfound = [], []
    for nic in (*profile.compute, *profile.storage, *profile.inband):
        wanted, why = _wanted(cluster, profile, nic)
        if not wanted:
            continue
        label = checked(LABEL, nic.port, "port label")
        if not nic.pci and not nic.netdev:
            unfound.append(label)
            continue
        ports.append(FirmwarePort(
            label, checked(NETDEV, nic.netdev, f"profile {profile.name}: netdev") if nic.netdev else "",
            checked(PCI_ADDRESS, nic.pci, f"profile {profile.name}: PCI address") if nic.pci else "",
            checked(LABEL, nic.model, "NIC model"), "; ".join(why),
            tuple(f"{name}={value}" for name, value in wanted.items())))
    return ports, unfound


def render(topology: Topology) -> list[Artifact]:
    """One script per node profile whose NICs need firmware settings (see the module docstring)."""
    cluster = topology.cluster
    source = PurePosixPath(cluster.source).name
    used: Mapping[str, NodeProfile] = {n.profile.name: n.profile for n in cluster.nodes}
    out = []
    for name in sorted(used):
        ports, unfound = _profile_ports(cluster, used[name])
        if not ports:
            continue
        out.append(Artifact(f"hosts/{name}/nic-firmware.sh", render_template(
            "host-firmware/nic-firmware.sh.j2", profile=checked(IDENTIFIER, name, "profile name"), source=source,
            ports=ports, unfound=unfound), 0o755))
    return out
