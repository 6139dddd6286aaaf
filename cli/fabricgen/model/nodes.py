"""Servers and where they stand: NIC ports with their rail and GPU affinity, node profiles, nodes, racks and
the facility."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from fabricgen.core.errors import SourcePosition
from fabricgen.model.hardware import NicModel


class NicRole(StrEnum):
    COMPUTE = "compute"
    STORAGE = "storage"
    INBAND = "inband"
    BMC = "bmc"


@dataclass(frozen=True)
class Nic:
    """One NIC port of a node profile, with its affinity: the rail it serves and the GPU next to it."""

    role: NicRole
    index: int
    port: str
    model: str
    dev: str = ""
    netdev: str = ""
    gpu: int | None = None
    numa: int | None = None
    rail: int | None = None
    pci: str = ""
    gpu_pci: str = ""  # compute NICs: the PCI address of the GPU next to this NIC
    cage: str = ""  # the chassis cage the port shares with others (DGX twin-port OSFP); empty: the port's own

    @property
    def host_cage(self) -> str:
        """The cage whose one transceiver serves this port: its shared cage, else the port itself."""
        return self.cage or self.port


@dataclass(frozen=True)
class LocalVolume:
    """A node's local NVMe file system offered to Kubernetes as a local PersistentVolume (the cache tier)."""

    path: str
    capacity_gib: int


@dataclass(frozen=True)
class Bond:
    """A Linux bond over NIC ports of one role (by netdev, primary first); it carries the first member's address.
    ``802.3ad`` (LACP) runs over an MLAG leaf pair, ``active-backup`` on one leaf."""

    name: str
    role: NicRole
    members: tuple[str, ...]
    mode: str = ""  # "": by the fabric its members attach to (802.3ad over an MLAG pair, else active-backup)
    mii_monitor_ms: int = 100
    lacp_rate: str = "fast"                     # 802.3ad only: LACPDUs every second (fast) or 30 s (slow)
    transmit_hash_policy: str = "layer3+4"      # 802.3ad only: flows spread over the members by IP and port
    position: SourcePosition | None = field(default=None, compare=False)

    @property
    def lacp(self) -> bool:
        return self.mode == "802.3ad"

    def on(self, mlag: bool) -> Bond:
        """This bond as it runs on its fabric: a mode left open is 802.3ad over an MLAG leaf pair (both leaves
        run the port-channel), active-backup on one leaf (no switch configuration)."""
        return self if self.mode else replace(self, mode="802.3ad" if mlag else "active-backup")


@dataclass(frozen=True)
class NodeProfile:
    name: str
    role: str
    height_u: int
    gpus: int
    compute: tuple[Nic, ...]
    storage: tuple[Nic, ...]
    inband: tuple[Nic, ...]
    bmc: Nic | None
    position: SourcePosition | None = field(default=None, compare=False)
    memory_gb: int | None = None
    local_nvme: LocalVolume | None = None
    bonds: tuple[Bond, ...] = ()
    bluefield_mode: str = ""  # nic or dpu: set in the BlueField cards' firmware (nic-firmware.sh); "" left as it is
    manufacturer: str = ""  # the server's maker and model (NVIDIA, DGX H100): NetBox's device type; "" for a template
    model: str = ""

    def bond_of(self, netdev: str) -> Bond | None:
        """The bond ``netdev`` is a member of, if any."""
        return next((b for b in self.bonds if netdev in b.members), None)

    def interface(self, nic: Nic) -> str:
        """The interface that carries ``nic``'s address: its bond, else its own netdev ("" without one)."""
        bond = self.bond_of(nic.netdev) if nic.netdev else None
        return bond.name if bond is not None else nic.netdev

    @property
    def rails(self) -> frozenset[int]:
        """The rails this profile's compute NICs serve."""
        return frozenset(n.rail or 0 for n in self.compute)

    def hca_port(self, nic: Nic) -> int:
        """The port number of ``nic`` on its HCA: NIC ports sharing one RDMA device count up in profile order."""
        if not nic.dev:
            return 1
        return [n for n in self.nics(nic.role) if n.dev == nic.dev].index(nic) + 1

    def devices_beside(self, role: NicRole, models: Mapping[str, NicModel]) -> frozenset[str]:
        """The PCI device ids of this profile's data ports of the other roles: a card setting that selects a
        role's cards by device id alone would reach these too."""
        mine = self.nics(role)
        return frozenset(models[n.model].pci_device_id for n in (*self.compute, *self.storage, *self.inband)
                         if n not in mine and n.model in models)

    def nics(self, role: NicRole) -> tuple[Nic, ...]:
        """This profile's NIC ports of one role, in order."""
        if role is NicRole.COMPUTE:
            return self.compute
        if role is NicRole.STORAGE:
            return self.storage
        if role is NicRole.INBAND:
            return self.inband
        return (self.bmc,) if self.bmc is not None else ()


def rail_count(profiles: Iterable[NodeProfile]) -> int:
    """Rails of a fabric: one more than the highest rail any attached profile serves."""
    return 1 + max((max(p.rails, default=-1) for p in profiles), default=-1)


@dataclass(frozen=True)
class Rack:
    """A rack: its row, its 1-based index along the row and its facility position, the 0-based place the
    top-of-rack subnets and switch values are carved at (each row holds ``max_racks`` places, so a row grown up
    to it moves no later row's racks)."""

    name: str
    row: str
    row_index: int
    index: int
    position: int
    kind: str = "compute"


@dataclass(frozen=True)
class Node:
    name: str
    group: str
    profile: NodeProfile
    rack: Rack
    u: int


@dataclass(frozen=True)
class NodeGroup:
    pattern: str
    profile: str
    count: int
    position: SourcePosition


@dataclass(frozen=True)
class Facility:
    rack_units: int
    rack_width_m: float
    row_pitch_m: float
    tray_height_m: float
    slack_m: float
    rows: tuple[tuple[str, int], ...]
    racks: tuple[Rack, ...]
    switches_per_network_rack: int = 16
    positions: int = 0  # facility positions: every row's max_racks
