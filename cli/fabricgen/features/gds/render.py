"""Target ``gds``: GPUDirect Storage on every node profile of the ``gds`` section, under ``hosts/<profile>/gds/``:

- ``cufile/<node>.json`` per node: the node's /etc/cufile.json, NVIDIA's keys and defaults (``cufile.yaml``) with
  the spec's values; ``fs.lustre.rdma_dev_addr_list`` the node's addresses on the LNet interfaces of its GDS file
  systems (the NIDs LNet serves, from the address plan) and ``fs.lustre.mount_table`` each mount point's own. One
  file per node because the addresses are the node's;
- ``gds-preflight.sh``: nvidia-fs, the installed cufile.json, `gdscheck -p` (Lustre and NVMe driver modes,
  PeerDirect, GPUs, platform verification, the settings cuFile loaded), the Lustre client version and LNet's NIDs,
  the NVMe tier's file system.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, checked
from fabricgen.core.templating import render_template
from fabricgen.features.gds.build import cufile_data
from fabricgen.model.gds import GdsProfile
from fabricgen.model.lustre import LustreFs
from fabricgen.model.nodes import Node
from fabricgen.model.topology import Topology

_NVME_PATH = re.compile(r"^(/[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}){1,8}$")  # node_profiles' local_nvme.path
# What gdscheck -p prints under CUFILE CONFIGURATION for the settings fabricgen plans (GDS 1.0 .. 1.16 outputs).
_REPORTED = ("max_direct_io_size_kb", "max_device_cache_size_kb", "max_device_pinned_mem_size_kb", "use_poll_mode",
             "poll_mode_max_size_kb", "gds_rdma_write_support")


def lustre_addresses(topology: Topology, fs: LustreFs, node: Node) -> tuple[str, ...]:
    """The node's addresses on the file system's LNet interfaces (its NIs, one per port), in interface order."""
    fabric = next(f.fabric for f in topology.fabrics if f.fabric.name == fs.fabric)
    ports = {nic.netdev: nic.index + 1 for nic in node.profile.nics(fabric.role.nic_role)}
    plan = {(name, port): ip for subnet in topology.addresses[fs.fabric].hosts for name, port, ip in subnet.hosts}
    out = []
    for netdev in fs.interfaces[node.profile.name]:
        ip = plan.get((node.name, ports.get(netdev, 0)))
        if ip is None:
            raise ValueError(f"{node.name} {netdev}: no address in the plan of fabric {fs.fabric}")
        out.append(ip)
    return tuple(out)


def cufile(gds: GdsProfile, mounts: list[tuple[LustreFs, tuple[str, ...]]]) -> dict[str, Any]:
    """One node's cufile.json: NVIDIA's sections in the order of its published file; ``mounts`` are the node's GDS
    file systems with its addresses on each."""
    data = cufile_data()
    addresses = list(dict.fromkeys(ip for _, ips in mounts for ip in ips))
    lustre: dict[str, Any] = {"posix_gds_min_kb": gds.posix_gds_min_kb}
    if mounts:
        lustre["rdma_dev_addr_list"] = addresses
        lustre["mount_table"] = {fs.mountpoint: {"rdma_dev_addr_list": list(ips)} for fs, ips in mounts}
    return {
        "logging": {**data["logging"], "level": gds.logging_level},
        "profile": dict(data["profile"]),
        "execution": dict(data["execution"]),
        "properties": dict(gds.properties),
        "fs": {"generic": {"posix_unaligned_writes": gds.posix_unaligned_writes}, "lustre": lustre},
        "denylist": {"drivers": [], "devices": [], "mounts": [], "filesystems": []},
        "miscellaneous": {"api_check_aggressive": False},
    }


def _text(value: int | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _profile_artifacts(topology: Topology, source: str, gds: GdsProfile) -> list[Artifact]:
    base = f"hosts/{checked(IDENTIFIER, gds.profile, 'profile name')}/gds"
    filesystems = [fs for fs in topology.cluster.lustre if fs.name in gds.filesystems]
    profile = topology.cluster.profiles[gds.profile]
    out = []
    nodes = []
    for node in topology.cluster.nodes:
        if node.profile.name != gds.profile:
            continue
        mounts = [(fs, lustre_addresses(topology, fs, node)) for fs in filesystems if node.group in fs.groups]
        name = checked(DEVICE_NAME, node.name, "node name")
        text = json.dumps(cufile(gds, mounts), indent=2) + "\n"
        out.append(Artifact(f"{base}/cufile/{name}.json", text.encode()))
        nodes.append((name, list(dict.fromkeys(f"{ip}@{fs.lnet.network}" for fs, ips in mounts for ip in ips))))
    properties = dict(gds.properties)
    reported = [(f"properties.{key}", _text(properties[key])) for key in _REPORTED]
    reported += [("fs.generic.posix_unaligned_writes", _text(gds.posix_unaligned_writes)),
                 ("fs.lustre.posix_gds_min_kb", _text(gds.posix_gds_min_kb))]
    nvme = profile.local_nvme.path if gds.nvme and profile.local_nvme is not None else ""
    data = cufile_data()
    out.append(Artifact(f"{base}/gds-preflight.sh", render_template(
        "gds/gds-preflight.sh.j2", profile=gds.profile, source=source, gpus=profile.gpus,
        lustre=bool(filesystems), lustre_names=data["gdscheck_lustre_names"], min_lustre=data["min_lustre_client"],
        nodes=nodes, nvme=checked(_NVME_PATH, nvme, "local_nvme path") if nvme else "", reported=reported), 0o755))
    return out


def render(topology: Topology) -> list[Artifact]:
    """The GDS files of every profile of the ``gds`` section: see the module docstring."""
    source = PurePosixPath(topology.cluster.source).name
    return [a for gds in topology.cluster.gds for a in _profile_artifacts(topology, source, gds)]
