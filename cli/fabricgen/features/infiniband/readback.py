"""InfiniBand's side of the cross-layer check: the rendered partitions file, QoS policy and every compute profile's
nccl.env, read back as OpenSM and NCCL read them, must agree on who talks where and on which SL.

- The SL OpenSM's SA gives a partition's paths is the first qos-policy rule matching its pkey (``any, pkey``,
  ``ipoib, pkey``; a bare ``ipoib`` rule is pkey 0x7fff), else the ``default`` rule (osm_sa_path_record.c), and
  without QoS always 0; each partition's ``sl=`` (its IPoIB broadcast group's SL) must be that SL.
- NCCL takes the P_Key index and SL from its environment, never from the SA: ``NCCL_IB_PKEY`` must be 0 with the
  profile's compute partition at index 0 (``indx0``, or Default), ``NCCL_IB_SL`` (and ``UCX_IB_SL``) its SL,
  ``UCX_IB_PKEY`` (a P_Key value) its pkey.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.features.feature import fabric_error
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.model.cluster import FabricRole, FabricType
from fabricgen.model.infiniband import DEFAULT_PKEY
from fabricgen.model.topology import FabricTopology, Topology

_HEAD = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)=(0x[0-9a-fA-F]{1,4})((?:\s*,\s*[A-Za-z0-9_]+(?:=[^,:\s]+)?)*)\s*:")
_RULE = re.compile(r"^\s*(default|any|ipoib|sdp|rds|srp|iser)\s*(?:,\s*pkey\s+(0x[0-9a-fA-F]+))?[^:]*:\s*(\d+)\s*$")


@dataclass(frozen=True)
class _Partition:
    name: str
    sl: int
    indx0: bool


def partitions_read(text: str) -> dict[int, _Partition]:
    """pkey -> its SL (``sl=``, 0 without; a later definition sets it again, as in OpenSM) and whether it takes
    P_Key index 0 for its members (any definition with ``indx0``: a second one without it lists only the switches
    and the SM, whose index 0 it leaves alone), from a partitions.conf."""
    out: dict[int, _Partition] = {}
    for line in text.splitlines():
        m = _HEAD.match(line.strip())
        if m:
            flags = dict([*f.split("=", 1), ""][:2] for f in (x.strip() for x in m.group(3).split(",")) if f)
            pkey = int(m.group(2), 16) & DEFAULT_PKEY
            before = out.get(pkey)
            out[pkey] = _Partition(m.group(1), int(flags.get("sl") or 0),
                                   "indx0" in flags or (before is not None and before.indx0))
    return out


def sa_sl(policy: str | None, pkey: int) -> int:
    """The SL OpenSM's SA gives a path of ``pkey`` with no service ID, as a qos-ulps policy says (None: QoS off)."""
    if policy is None:
        return 0
    default = 0
    for line in policy.splitlines():
        m = _RULE.match(line)
        if not m:
            continue
        ulp, key, sl = m.group(1), m.group(2), int(m.group(3))
        if ulp == "default":
            default = sl
        elif (ulp in ("any", "ipoib") and key is not None and int(key, 16) & DEFAULT_PKEY == pkey) or (
                ulp == "ipoib" and key is None and pkey == DEFAULT_PKEY):
            return sl
    return default


def _env(content: bytes) -> dict[str, str]:
    return dict(line.split("=", 1) for line in content.decode().splitlines() if line and not line.startswith("#"))


def _fabric(topology: Topology, ft: FabricTopology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    fabric = ft.fabric
    sm = fabric.subnet_manager
    assert sm is not None
    base = f"infiniband/{fabric.name}"
    path = next((p for p in (f"{base}/partitions.conf", f"{base}/partitions.conf.user_ext") if p in artifacts), None)
    if path is None:
        return
    parts = partitions_read(artifacts[path].content.decode())
    policy_path = f"{base}/qos-policy.conf"
    policy = artifacts[policy_path].content.decode() if policy_path in artifacts else None
    for pkey, read in sorted(parts.items()):
        if read.sl != sa_sl(policy, pkey):
            source = policy_path if policy else "OpenSM without QoS"
            yield fabric_error(fabric, "ib-service-level", path,
                               f"partition {read.name} (0x{pkey:04x}) has sl={read.sl}, but {source} gives its "
                               f"paths SL {sa_sl(policy, pkey)}")
    if fabric.role is not FabricRole.COMPUTE or ib_fabric(topology, ft).missing_guids:
        return  # without GUIDs the partitions are commented out, which the plan already warns about
    profiles = {n.profile.name for n in topology.cluster.nodes
                if n.group in fabric.node_groups and n.profile.role == "compute"}
    for name in sorted(profiles):
        env_path = f"hosts/{name}/nccl.env"
        if env_path not in artifacts:
            continue
        env = _env(artifacts[env_path].content)
        for p in sm.profile_partitions(topology.cluster.nodes, fabric.node_groups, fabric.role.nic_role, name):
            found = parts.get(p.pkey)
            if env.get("NCCL_IB_PKEY") != "0" or not (p.is_default or (found is not None and found.indx0)):
                yield fabric_error(fabric, "ib-partition-index", env_path,
                                   f"NCCL uses P_Key index {env.get('NCCL_IB_PKEY', '0 (unset)')}, but {path} does not "
                                   f"put partition {p.name} (0x{p.pkey:04x}) there")
            sl = sa_sl(policy, p.pkey)
            for key in ("NCCL_IB_SL", "UCX_IB_SL"):
                if env.get(key, "0") != str(sl):
                    yield fabric_error(fabric, "ib-service-level", env_path,
                                       f"{key}={env.get(key, '0 (unset)')}, but the subnet manager gives partition "
                                       f"{p.name}'s paths SL {sl}")
            if "UCX_IB_PKEY" in env and int(env["UCX_IB_PKEY"], 16) & DEFAULT_PKEY != p.pkey:
                yield fabric_error(fabric, "ib-partition-index", env_path,
                                   f"UCX_IB_PKEY={env['UCX_IB_PKEY']}, but these nodes' compute partition is "
                                   f"{p.name} (0x{p.pkey:04x})")


def readback(topology: Topology, artifacts: Mapping[str, Artifact]) -> Iterator[Finding]:
    """Every InfiniBand fabric's partitions, QoS policy and its compute profiles' nccl.env, against each other."""
    for ft in topology.fabrics:
        if ft.fabric.type is FabricType.INFINIBAND and ft.fabric.subnet_manager is not None:
            yield from _fabric(topology, ft, artifacts)
