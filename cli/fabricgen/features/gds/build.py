"""Build the ``gds`` section: GPUDirect Storage per node profile, refused where it cannot work:

- a profile no node group uses, has no GPUs, or names nothing to read (no file system and no
  NVMe tier);
- a file system the profile does not mount, whose LNet network is not RDMA (tcp: no GPUDirect path; GDS over
  Lustre runs nvidia-fs through o2iblnd), or whose LNet interfaces on the profile are NICs without GPUDirect RDMA
  (catalog ``gpudirect``);
- a Lustre client older than the floor in ``cufile.yaml`` (2.15);
- ``nvme`` without the profile's ``local_nvme``; cuFile sizes that are not 4K aligned, or a pinned-memory limit below
  the bounce buffers it must hold.

Facts and NVIDIA's defaults live in ``cufile.yaml`` beside this module, with their sources.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster
from fabricgen.model.gds import GdsProfile
from fabricgen.model.lustre import LustreFs
from fabricgen.model.nodes import NodeProfile
from fabricgen.spec.load import shipped_data

_VERSION = re.compile(r"^([0-9]+)\.([0-9]+)")
_ALIGNED_KB = ("max_direct_io_size_kb", "max_device_cache_size_kb", "max_device_pinned_mem_size_kb")


@cache
def cufile_data() -> Mapping[str, Any]:
    """The shipped cuFile defaults, validated against their schema."""
    data: Mapping[str, Any] = shipped_data(Path(__file__).with_name("cufile.yaml"),
                                           "sections/gds.schema.json#/$defs/cufile_file")
    return data


def version_tuple(text: str) -> tuple[int, int]:
    """Major and minor of a Lustre version (2.15.5 -> (2, 15), 2.12.3_ddn39 -> (2, 12))."""
    match = _VERSION.match(text)
    if match is None:
        raise ValueError(f"not a Lustre version: {text!r}")
    return int(match[1]), int(match[2])


def _filesystems(issues: Issues, spec: Mapping[str, Any], profile: NodeProfile, cluster: Cluster,
                 mounted: list[LustreFs]) -> tuple[LustreFs, ...]:
    """The file systems GDS reads through: the spec's list (each mounted by the profile) or all it mounts."""
    if "filesystems" not in spec:
        return tuple(mounted)
    known = {fs.name: fs for fs in cluster.lustre}
    chosen = []
    for i, name in enumerate(spec["filesystems"]):
        fs = known.get(name)
        if fs is None:
            issues.error(("filesystems", i), f"unknown Lustre file system {name!r}",
                         did_you_mean(name, known) or "name a file system of the lustre section")
        elif fs not in mounted:
            issues.error(("filesystems", i), f"node profile {profile.name} does not mount {name}",
                         f"add its node groups to lustre.{name}.nodes, or leave {name} out")
        else:
            chosen.append(fs)
    return tuple(chosen)


def _rdma_path(issues: Issues, where: PathKey, fs: LustreFs, profile: NodeProfile, cluster: Cluster) -> None:
    """GDS over Lustre needs an RDMA LNet network and GPUDirect RDMA on every NIC LNet uses on the profile."""
    if fs.lnet.lnd != "o2ib":
        issues.error(where, f"file system {fs.name} is mounted over LNet network {fs.lnet.network} (TCP sockets): "
                            "GPUDirect Storage has no RDMA path to it",
                     f"mount it over an RDMA fabric (o2ib on InfiniBand or RoCE: lustre.{fs.name}.fabric), or "
                     f"leave it out of gds.{profile.name}.filesystems")
        return
    nics = {nic.netdev: nic for nic in (*profile.storage, *profile.compute, *profile.inband)}
    for netdev in fs.interfaces.get(profile.name, ()):
        bond = next((b for b in profile.bonds if b.name == netdev), None)
        for member in bond.members if bond is not None else (netdev,):
            nic = nics.get(member)
            model = cluster.nic_models.get(nic.model) if nic is not None else None
            if nic is not None and (model is None or not model.gpudirect):
                issues.error(where, f"{member} ({nic.model}) of node profile {profile.name} carries LNet for "
                                    f"{fs.name} but has no GPUDirect RDMA: GDS cannot move data into GPU memory "
                                    "through it",
                             "use a ConnectX-6/7 or BlueField-3 port (catalog: gpudirect: true) for the file "
                             f"system, or set gpudirect in catalog.nics.{nic.model} if the card supports it")


def _properties(issues: Issues, spec: Mapping[str, Any]) -> tuple[tuple[str, int | bool], ...]:
    """cufile.json's properties: NVIDIA's defaults with the spec's values, sizes 4K aligned."""
    values = {**cufile_data()["properties"], **{k: spec[k] for k in cufile_data()["properties"] if k in spec}}
    for key in _ALIGNED_KB:
        if values[key] % 4:
            issues.error((key,), f"{key} {values[key]} is not 4K aligned", "cuFile sizes are multiples of 4 KiB: "
                                                                          f"{values[key] // 4 * 4 or 4}")
    if values["max_device_pinned_mem_size_kb"] < values["max_device_cache_size_kb"]:
        issues.error(("max_device_pinned_mem_size_kb",),
                     f"max_device_pinned_mem_size_kb {values['max_device_pinned_mem_size_kb']} is below "
                     f"max_device_cache_size_kb {values['max_device_cache_size_kb']}",
                     "the pinned limit includes the bounce buffers: raise it or shrink the cache")
    return tuple(values.items())


def _profile(issues: Issues, name: str, spec: Mapping[str, Any], cluster: Cluster) -> GdsProfile | None:
    profile = cluster.profiles.get(name)
    if profile is None or not any(g.profile == name for g in cluster.groups):
        used = sorted({g.profile for g in cluster.groups})
        issues.error((), f"no node group uses node profile {name!r}", did_you_mean(name, used)
                     or f"name the profile of a node group: {', '.join(used)}")
        return None
    if profile.gpus == 0:
        issues.error((), f"node profile {name} has no GPUs: GPUDirect Storage moves data into GPU memory",
                     f"set node_profiles.{name}.gpus, or remove the entry")
    data = cufile_data()
    floor = version_tuple(data["min_lustre_client"])
    mounted = [fs for fs in cluster.lustre if name in fs.interfaces]
    filesystems = _filesystems(issues, spec, profile, cluster, mounted)
    client = spec.get("lustre_client", "")
    if filesystems and not client:
        issues.error((), f"GDS over Lustre on node profile {name} needs the client's release",
                     f"set gds.{name}.lustre_client to what `lctl get_param -n version` prints (2.15.5)")
    elif filesystems and version_tuple(client) < floor:
        issues.error(("lustre_client",), f"Lustre client {client} is older than "
                                         f"{data['min_lustre_client']}, the first with GPUDirect Storage support",
                     f"upgrade the client of node profile {name} to Lustre {data['min_lustre_client']} or later "
                     "(built with GDS against nvidia-fs)")
    for i, fs in enumerate(filesystems):
        _rdma_path(issues, ("filesystems", i) if "filesystems" in spec else (), fs, profile, cluster)
    nvme = spec.get("nvme", profile.local_nvme is not None)
    if nvme and profile.local_nvme is None:
        issues.error(("nvme",), f"node profile {name} states no local_nvme", f"set node_profiles.{name}.local_nvme "
                                                                            "(path, capacity_gib), or nvme: false")
    if not filesystems and not nvme:
        issues.error((), f"node profile {name} mounts no Lustre file system and has no NVMe tier: GDS has nothing "
                         "to read", "mount a file system on it (lustre.<name>.nodes) or give it local_nvme")
    return GdsProfile(name, client, tuple(fs.name for fs in filesystems), nvme,
                      _properties(issues, spec), spec.get("posix_unaligned_writes", data["posix_unaligned_writes"]),
                      _posix_gds_min_kb(issues, spec, data), spec.get("logging_level", data["logging"]["level"]),
                      issues.position(()))


def _posix_gds_min_kb(issues: Issues, spec: Mapping[str, Any], data: Mapping[str, Any]) -> int:
    value: int = spec.get("posix_gds_min_kb", data["posix_gds_min_kb"])
    if value % 4:
        issues.error(("posix_gds_min_kb",), f"posix_gds_min_kb {value} is not 4K aligned",
                     "a multiple of 4 KiB, or 0 for every IO through GDS")
    return value


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """The cluster with the GPUDirect Storage profiles of the ``gds`` section, in spec order."""
    built = [gds for name, spec in context.data.get("gds", {}).items()
             if (gds := _profile(context.issues.at("gds", name), name, spec, cluster)) is not None]
    return replace(cluster, gds=tuple(built))
