"""SR-IOV VFs on a fabric's NIC ports and the arithmetic of their addresses."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition
from fabricgen.model.nodes import Nic, NicRole, NodeProfile

VF_NODE_SHIFT = 16  # VF address offset = node << 16 | port << 8 | vf: readable in hex, unique by construction
VF_PORT_SHIFT = 8


@dataclass(frozen=True)
class Sriov:
    """SR-IOV VFs on a fabric's NIC ports; VF GUIDs (InfiniBand) and MACs (Ethernet) derive from a base."""

    link_type: str  # "ib" or "eth", from the fabric type
    vfs_per_port: int
    firmware_vfs: int
    rails: tuple[int, ...] | None
    devices: tuple[str, ...] | None
    guid_base: int | None
    mac_base: int | None
    link_state: str
    trust: bool
    spoofchk: bool
    vlan: int
    qos: int
    min_tx_rate_mbps: int
    max_tx_rate_mbps: int
    mtu: int
    position: SourcePosition = field(compare=False)
    groups: tuple[str, ...] = ()  # the node groups whose nodes get VFs: the fabric's, or the spec's subset

    def ports(self, profile: NodeProfile, role: NicRole) -> tuple[Nic, ...]:
        """The profile's NIC ports of the fabric's role that get VFs (rails and devices both narrow)."""
        return tuple(nic for nic in profile.nics(role)
                     if (self.rails is None or nic.rail in self.rails)
                     and (self.devices is None or nic.dev in self.devices))

    @staticmethod
    def slot(nic: Nic) -> int:
        """The port byte of a VF address: the rail of a compute port, the list index of any other port."""
        return nic.rail if nic.role is NicRole.COMPUTE and nic.rail is not None else nic.index

    @staticmethod
    def offset(node_index: int, slot: int, vf: int) -> int:
        """VF address offset from the base: node << 16 | port << 8 | vf."""
        return node_index << VF_NODE_SHIFT | slot << VF_PORT_SHIFT | vf

    def vf_guids(self, node_index: int, nic: Nic) -> tuple[int, ...]:
        """The InfiniBand GUIDs (node and port GUID alike) of the VFs of ``nic`` on the ``node_index``-th node of the
        cluster; none without a ``guid_base``."""
        if self.guid_base is None:
            return ()
        return tuple(self.guid_base + self.offset(node_index, self.slot(nic), vf) for vf in range(self.vfs_per_port))
