"""Target ``nccl``: NCCL environment per node profile on the compute fabric, each value with why.

Shared by every fabric type: InfiniBand (HCA order, the compute partition's P_Key index, P_Key and service level, for
NCCL and UCX) and RoCE (traffic class of the lossless
class, RoCE v2 over IPv4); the bootstrap socket runs on the in-band interface. A cloud cluster gets one file for
its instance type: AWS EFA through aws-ofi-nccl, or Alibaba Cloud eRDMA.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import env_line, render_template
from fabricgen.features.nccl.topo import INSTALLED, topology_nics, topology_xml
from fabricgen.model.cloud import Cloud
from fabricgen.model.cluster import Fabric, FabricType
from fabricgen.model.infiniband import Partition, SubnetManager
from fabricgen.model.nccl import NcclOption
from fabricgen.model.nodes import Node, NodeProfile
from fabricgen.model.topology import Topology

_SAFE_VALUE = re.compile(r"^[A-Za-z0-9_=:,./\-]+$")  # env-file values stay unquoted: nothing to escape
POD_VFS = "vfs"  # the pod holds SR-IOV VFs of the fabric's rails
POD_PFS = "pfs"  # the pod holds the PFs themselves (host-device)


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    why: str

    @property
    def line(self) -> str:
        """NAME=VALUE as nccl.env holds it."""
        return env_line(self.name, self.value)


def hca_list(profile: NodeProfile, fabric: Fabric) -> str:
    """NCCL_IB_HCA: the fabric's RDMA device:port in rail order (rail r next to GPU r); '=' asks for exact names."""
    rail_order = sorted(profile.nics(fabric.role.nic_role), key=lambda n: n.rail or 0)
    return "=" + ",".join(f"{nic.dev}:{profile.hca_port(nic)}" for nic in rail_order)


def _hca(profile: NodeProfile, fabric: Fabric, pod: str) -> Setting:
    if pod == POD_VFS:
        return Setting("NCCL_IB_HCA", "mlx5", "in the pod the only RDMA devices are the VFs of its rail networks, "
                                              "numbered by the kernel rather than named as on the host: the prefix "
                                              "takes them all and NCCL pairs each GPU with its nearest VF")
    return Setting("NCCL_IB_HCA", hca_list(profile, fabric),
                   f"{fabric.role.nic_role.value} NICs in rail order, each next to its GPU per the rail map (a NIC far "
                   "from its GPU halves bandwidth); '=' matches these exact devices")


def nccl_settings(profile: NodeProfile, fabric: Fabric, pod: str = "", partitions: Sequence[Partition] = (),
                  options: Sequence[NcclOption] = ()) -> list[Setting]:
    """NCCL settings of a profile's nodes on a fabric: on the host (``pod`` empty), or in a pod that holds the
    fabric's VFs (:data:`POD_VFS`) or its PFs (:data:`POD_PFS`, moved in by host-device, names kept). On
    InfiniBand, ``partitions`` are the profile's compute partitions (:func:`compute_partitions`); ``options`` the
    spec's ``nccl`` section (host and pod alike)."""
    settings = [
        _hca(profile, fabric, pod),
        Setting("NCCL_NET_GDR_LEVEL", "PXB", "GPUDirect RDMA when GPU and NIC share a PCIe switch, as the rail map "
                                             "places them; traffic crossing the CPU would be slower than staging"),
    ]
    if pod:
        settings.append(Setting("NCCL_SOCKET_IFNAME", "=eth0", "bootstrap and out-of-band exchange on the pod's "
                                                               "primary interface, never on a rail"))
    elif profile.inband and profile.interface(profile.inband[0]):
        bonded = profile.bond_of(profile.inband[0].netdev) is not None
        settings.append(Setting("NCCL_SOCKET_IFNAME", f"={profile.interface(profile.inband[0])}",
                                "bootstrap and out-of-band exchange on the in-band bond (it holds the address: an "
                                "exact match on a member finds none), never on a rail" if bonded else
                                "bootstrap and out-of-band exchange on the in-band interface, never on a rail"))
    if fabric.type is FabricType.ROCE and fabric.qos is not None:
        q = fabric.qos
        settings += [
            Setting("NCCL_IB_TC", str(q.nccl_tc), f"traffic class byte = DSCP {q.lossless.dscp} << 2 | ECT(0): the "
                                                  f"lossless class (priority {q.lossless.priority}) end to end"),
            Setting("NCCL_IB_ROCE_VERSION_NUM", "2", "RoCE v2 (routable UDP); NCCL then auto-selects the matching "
                                                     "GID, so no fixed NCCL_IB_GID_INDEX is set"),
            Setting("NCCL_IB_ADDR_FAMILY", "AF_INET", "the IPv4 RoCE v2 GID, matching the fabric's IPv4 plan"),
        ]
        if fabric.spectrum_x is not None:
            settings.append(Setting("NCCL_IB_ADAPTIVE_ROUTING", "1", "Spectrum-X sprays each flow over every uplink "
                                    "and the SuperNIC restores order: NCCL posts its large transfers as adaptive-"
                                    "routing-safe writes (data, then a 0-byte write with immediate), which it does on "
                                    "InfiniBand only by default (net_ib/init.cc: ar = link layer is InfiniBand)"))
    if fabric.type is FabricType.INFINIBAND and fabric.subnet_manager is not None:
        settings += _partition_settings(fabric.subnet_manager, partitions)
    settings += [Setting(o.env, str(o.value), f"{o.why} (spec: nccl)") for o in options]
    return _checked(settings)


def compute_partitions(fabric: Fabric, nodes: Sequence[Node], profile: NodeProfile) -> list[Partition]:
    """The compute partitions the profile's nodes run NCCL on (one per tenant), by pkey."""
    sm = fabric.subnet_manager
    return sm.profile_partitions(nodes, fabric.node_groups, fabric.role.nic_role, profile.name) if sm else []


def _partition_settings(sm: SubnetManager, partitions: Sequence[Partition]) -> list[Setting]:
    """P_Key index, P_Key and SL of the compute partition. NCCL never asks the SA: it takes the P_Key *index* and
    the SL from its environment (defaults 0), so both must match what the subnet manager programmed."""
    if not partitions:
        return []
    names = ", ".join(f"{p.name} (0x{p.pkey:04x})" for p in partitions)
    where = "Default, which OpenSM keeps at P_Key index 0" if partitions[0].is_default else (
        f"{names}, which the subnet manager puts at P_Key index 0 of every member port (indx0)")
    settings = [Setting("NCCL_IB_PKEY", "0", f"P_Key index of the compute partition: {where}; a pod's VF sees it "
                                             "at its own index 0")]
    if len(partitions) == 1:
        settings.append(Setting("UCX_IB_PKEY", f"0x{partitions[0].pkey:04x}", f"UCX takes the P_Key value: "
                                                                              f"{partitions[0].name}'s"))
    else:
        settings[0] = replace(settings[0], why=settings[0].why + "; UCX_IB_PKEY stays unset: these nodes sit in "
                                                                 "several tenants, and UCX's default (auto: the first "
                                                                 "full-member P_Key) is each one's index 0")
    sl = partitions[0].sl
    origin = "its QoS level in qos-policy.conf and sl= in partitions.conf" if sm.qos is not None else (
        "QoS is off: OpenSM runs every path on SL 0")
    settings += [Setting("NCCL_IB_SL", str(sl), f"service level of the compute partition ({origin})"),
                 Setting("UCX_IB_SL", str(sl), "the same service level for UCX")]
    if sm.sharp is not None and any(p.name == sm.sharp.partition for p in partitions):
        settings.append(Setting("NCCL_COLLNET_ENABLE", "1", f"SHARP on partition {sm.sharp.partition}: NCCL's CollNet "
                                "algorithms through NCCL's SHARP plugin (nccl-rdma-sharp-plugins' libnccl-net.so, "
                                "which NCCL loads from the library path, e.g. HPC-X's); the plugin itself sets "
                                "SHARP_COLL_ENABLE_SAT=1 (streaming aggregation) and SHARP_COLL_LOCK_ON_COMM_INIT=1 "
                                "unless set; without the plugin NCCL runs without CollNet"))
    return settings


def _checked(settings: list[Setting]) -> list[Setting]:
    for s in settings:
        if not _SAFE_VALUE.fullmatch(s.value.replace(";", ",")):  # a ';' is quoted (env_line)
            raise ValueError(f"NCCL value {s.value!r} of {s.name} is not a plain word")
    return settings


def cloud_settings(cloud: Cloud) -> list[Setting]:
    """EFA (aws-ofi-nccl >= 1.7 with libfabric >= 1.18, as AWS's EFA installer ships), eRDMA (NCCL >= 2.19) or
    Google's A3 GPUDirect settings (the catalog's, from Cluster Toolkit's NCCL test scripts, loaded after the
    profile Google's plugin installs, which the startup script's login profile sources first)."""
    if cloud.gcp is not None:
        return _checked([Setting(name, value, why) for name, value, why in cloud.gcp.nccl])
    if cloud.provider == "aws":
        return _checked([
            Setting("FI_PROVIDER", "efa", "libfabric's EFA provider, never a silent fallback to TCP sockets"),
            Setting("FI_EFA_USE_DEVICE_RDMA", "1", f"RDMA read on the {cloud.instance_type.name}'s EFA devices; "
                                                   "recent aws-ofi-nccl sets it itself, older stacks need it"),
            Setting("FI_EFA_USE_HUGE_PAGE", "0", "no huge-page bounce buffers: they run out when training forks "
                                                 "data-loader workers"),
        ])
    return _checked([
        Setting("NCCL_IB_HCA", "erdma", "the eRDMA devices of the ERIs"),
        Setting("NCCL_IB_GID_INDEX", "1", "the RoCE v2 IPv4 GID of an ERI"),
        Setting("NCCL_SOCKET_IFNAME", "eth0", "bootstrap on the primary ENI"),
        Setting("NCCL_IB_QPS_PER_CONNECTION", "8", "eRDMA spreads traffic over queue pairs: 8 per connection"),
        Setting("NCCL_MIN_NCHANNELS", "16", "enough channels to fill the ERIs' bandwidth"),
        Setting("NCCL_NET_PLUGIN", "none", "NCCL's built-in IB transport drives eRDMA; no external net plugin"),
    ])


def _render_cloud(cloud: Cloud, source: str) -> list[Artifact]:
    itype = cloud.instance_type
    if cloud.gcp is not None:
        stack = cloud.gcp.stack
        kind = f"{stack.name}, {cloud.interfaces} GPU NICs"
        after = f"Load after {stack.profile}, which Google's plugin installs." if stack.profile else ""
        fabric = stack.kind
    else:
        kind = f"{'AWS EFA' if cloud.provider == 'aws' else 'Alibaba Cloud eRDMA'}, {cloud.interfaces} per instance"
        after, fabric = "", cloud.interface_kind.lower()
    content = render_template("nccl/nccl.env.j2", profile=itype.name, fabric=fabric, kind=kind, source=source,
                              settings=cloud_settings(cloud), after=after)
    return [Artifact(f"hosts/{itype.name}/nccl.env", content)]


def render(topology: Topology) -> list[Artifact]:
    source = PurePosixPath(topology.cluster.source).name
    if topology.cluster.cloud is not None:
        return _render_cloud(topology.cluster.cloud, source)
    out = []
    for ft in topology.fabrics:
        fabric = ft.fabric
        if fabric.role.value != "compute":
            continue
        profiles = sorted({n.profile.name: n.profile for n in topology.cluster.nodes
                           if n.group in fabric.node_groups and n.profile.role == "compute"}.items())
        for name, profile in profiles:
            partitions = compute_partitions(fabric, topology.cluster.nodes, profile)
            settings = nccl_settings(profile, fabric, partitions=partitions, options=topology.cluster.nccl)
            nics = topology_nics(profile, fabric)
            if nics:
                settings.append(Setting("NCCL_TOPO_FILE", INSTALLED, "the node's PCI tree from the rail map "
                                        "(nccl-topo.xml beside this file): each rail's GPU and NIC under one PCIe "
                                        "switch, matched by their PCI addresses"))
                out.append(Artifact(f"hosts/{name}/nccl-topo.xml",
                                    topology_xml(profile, fabric, nics, source).encode()))
            content = render_template("nccl/nccl.env.j2", profile=name, fabric=fabric.name,
                                      kind=f"{fabric.type} {fabric.speed.name}", source=source,
                                      settings=_checked(settings), after="")
            out.append(Artifact(f"hosts/{name}/nccl.env", content))
    return out
