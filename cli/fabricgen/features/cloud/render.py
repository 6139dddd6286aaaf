"""Target ``pulumi``: a cloud cluster's Pulumi project under ``pulumi/<stack>/``, runnable as is with ``pulumi up``.

The program is the shipped ``stacks/<program>/__main__.py`` copied verbatim; everything cluster-specific is in
``cluster.json`` beside it (sorted keys, so byte-identical per spec), computed here: the interface layout per
network card, FSx/CPFS arguments in the provider's own terms, names and tags. The stack is named after the
cluster (a DNS label, checked by the schema).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding, Severity
from fabricgen.core.resources import shipped_dir
from fabricgen.core.templating import render_template
from fabricgen.features.cloud.build import catalog
from fabricgen.model.cloud import Cloud, CloudFileSystem
from fabricgen.model.topology import Topology

PROGRAMS = {"aws": "aws_efa", "alicloud": "alicloud_erdma"}
# The SDK versions the stack tests run with (tests/external/cloud/test_pulumi_stacks.py checks the installed
# ones match).
PINS = {
    "aws": (("pulumi", "3.272.0"), ("pulumi-aws", "7.51.1")),
    # the NAS SDK reads each CPFS export's mount domain, which pulumi-alicloud does not output
    "alicloud": (("pulumi", "3.272.0"), ("pulumi-alicloud", "4.0.0"), ("alibabacloud-nas20170626", "3.7.5"),
                 ("alibabacloud-credentials", "1.0.12"), ("alibabacloud-tea-openapi", "0.4.6")),
}
USER_DATA = "user-data.sh"  # the program fills in the file systems' outputs and hands it to the instances
# Bytes set aside per file system for the mount source the program fills in (FSx: "<dns>@tcp:/<mount name>", about
# 62; CPFS: "<export domain>:/share", about 55): its real length is known only once the cloud has created it.
SOURCE_ALLOWANCE = 128
FSX_LUSTRE_VERSION = "2.15"  # EFA-enabled FSx needs Lustre 2.15 (PERSISTENT_2 with a metadata configuration)


def interfaces(cloud: Cloud) -> list[dict[str, Any]]:
    """One RDMA interface per network card from card 0.

    AWS (efa-acc-inst-types, "use case 1"): card 0 / device 0 is the primary, an EFA with ENA (``efa``: an
    EFA-only interface cannot be primary); every further card gets an ``efa-only`` interface at device index 1.
    Alibaba Cloud: an ERI (an ENI in HighPerformance mode) per card, the ``primary`` ENI on card 0 and a
    secondary ENI on each further card, as Alibaba's eRDMA controller and GPU-instance guide lay them out
    (sources in the stack program); never two on one card, which would cap their bandwidth (ebmgn7ex section of
    https://help.aliyun.com/document_detail/25378.html).
    """
    if cloud.provider == "aws":
        return [{"network_card_index": card, "device_index": 0 if card == 0 else 1,
                 "interface_type": "efa" if card == 0 else "efa-only"} for card in range(cloud.interfaces)]
    return [{"network_card_index": card, "primary": card == 0, "traffic_mode": "HighPerformance"}
            for card in range(cloud.interfaces)]


def _filesystem(fs: CloudFileSystem) -> dict[str, Any]:
    if fs.kind == "cpfs":
        return {"name": fs.name, "storage_type": fs.storage_type, "capacity": fs.capacity_gib,
                "mountpoint": fs.mountpoint}
    metadata: dict[str, Any] = {"mode": "AUTOMATIC"} if fs.metadata_iops is None else {
        "mode": "USER_PROVISIONED", "iops": fs.metadata_iops}
    return {"name": fs.name, "deployment_type": catalog()["aws"]["filesystems"]["fsx-lustre"]["deployment_type"],
            "storage_capacity": fs.capacity_gib, "per_unit_storage_throughput": fs.throughput,
            "efa_enabled": fs.efa, "metadata_configuration": metadata,
            "file_system_type_version": FSX_LUSTRE_VERSION, "mountpoint": fs.mountpoint}


def user_data(name: str, source: str, cloud: Cloud) -> Artifact | None:
    """The instances' first-boot script (user data) for their file systems: client install, mounts and, for FSx
    on EFA, LNet over EFA; the program fills in the file systems' outputs.

    LNet gets the catalog's EFA interface count for FSx clients (AWS: 8 on p5-class types) spread evenly over
    the EFA devices the instance has, one in ``stride``: AWS takes every 4th of a p5's 32, one per PCIe switch.
    """
    if cloud.provider == "alicloud":  # always: the eRDMA stack, the GPU driver (and Fabric Manager), the ERIs' MTU,
        # then any CPFS mounts
        return Artifact(f"pulumi/{name}/{USER_DATA}", render_template(
            "pulumi/cpfs-client.sh.j2", cluster=name, source=source, mtu=cloud.eri_mtu,
            driver=catalog()["alicloud"]["gpu_driver"]["version"], nvswitch=cloud.instance_type.nvswitch))
    if not cloud.filesystems:
        return None
    wanted = cloud.instance_type.fsx_efa_interfaces if any(fs.efa for fs in cloud.filesystems) else 0
    efa_interfaces = min(wanted, cloud.interfaces)
    stride = max(1, cloud.interfaces // efa_interfaces) if efa_interfaces else 1
    return Artifact(f"pulumi/{name}/{USER_DATA}", render_template(
        "pulumi/fsx-client.sh.j2", cluster=name, source=source, efa_interfaces=efa_interfaces, stride=stride))


def user_data_limit(cloud: Cloud) -> int:
    """The most bytes of user data the provider accepts before base64 (the catalog's, with its source)."""
    return int(catalog()[cloud.provider]["user_data"]["limit"])


def user_data_size(topology: Topology) -> Iterator[Finding]:
    """User data above the provider's limit makes every instance fail at ``pulumi up``: refused here, counting the
    mount sources the program adds (SOURCE_ALLOWANCE each) and the mount points."""
    cluster = topology.cluster
    cloud = cluster.cloud
    if cloud is None:
        return
    boot = user_data(cluster.metadata.name, PurePosixPath(cluster.source).name, cloud)
    if boot is None:
        return
    filled = len(boot.content) + sum(SOURCE_ALLOWANCE + len(shlex.quote(fs.mountpoint)) + 2 for fs in cloud.filesystems)
    limit = user_data_limit(cloud)
    if filled > limit:
        yield Finding(Severity.ERROR, "cloud-user-data-size", f"pulumi/{cluster.metadata.name}/{USER_DATA}",
                      f"the first-boot script would be {filled} bytes of user data ({len(boot.content)} rendered, "
                      f"{len(cloud.filesystems)} file systems filled in), above {cloud.provider}'s limit of {limit} "
                      "bytes before base64: every instance would fail at pulumi up",
                      "fewer file systems (mount the others from a configuration tool after first boot)",
                      cloud.position)


def cluster_data(name: str, cloud: Cloud) -> dict[str, Any]:
    """What the program reads: the compiled cloud cluster in the provider's terms."""
    capacity = {"kind": cloud.capacity_kind, "id": cloud.capacity_id} if cloud.capacity_kind else None
    data: dict[str, Any] = {
        "cluster": name,
        "provider": cloud.provider,
        "region": cloud.region,
        "zone": cloud.zone,
        "vpc": {"id": cloud.vpc_id, "cidr": cloud.vpc_cidr},
        "subnets": [{"id": s.id, "cidr": s.cidr, "zone": s.zone} for s in cloud.subnets],
        "access": {"kind": cloud.access.kind, "ingress": list(cloud.access.ingress),
                   "instance_type": cloud.access.instance_type},
        "instances": {"names": list(cloud.names), "type": cloud.instance_type.name, "image": cloud.image,
                      "key_pair": cloud.key_pair, "group": cloud.group, "placement_group": cloud.placement_group,
                      "capacity": capacity, "gpus": cloud.instance_type.gpus,
                      "system_disk_gib": cloud.system_disk_gib, "jumbo_frames": cloud.jumbo_frames},
        "interfaces": interfaces(cloud),
        "filesystems": [_filesystem(fs) for fs in cloud.filesystems],
        "tags": dict(cloud.tags),
        "user_data_limit": user_data_limit(cloud),
    }
    if cloud.provider == "aws":  # a new VPC's egress: the NAT gateway's public subnet (none: the VPC is left alone)
        data["public_subnet"] = {"cidr": cloud.public_subnet, "zone": cloud.zone} if cloud.public_subnet else None
    else:  # a new VPC's egress: an enhanced NAT gateway in its vSwitch, with SNAT (an existing VPC is left alone)
        data["egress"] = not cloud.vpc_id
    return data


def render(topology: Topology) -> list[Artifact]:
    cluster = topology.cluster
    cloud = cluster.cloud
    if cloud is None:
        return []
    stack = name = cluster.metadata.name
    source = PurePosixPath(cluster.source).name
    program = PROGRAMS[cloud.provider]
    root = f"pulumi/{stack}"
    description = cluster.metadata.description or f"{cloud.instance_type.name} cluster"
    boot = user_data(name, source, cloud)
    return [
        Artifact(f"{root}/Pulumi.yaml", render_template("pulumi/Pulumi.yaml.j2", project=name, source=source,
                                                        description=json.dumps(description))),
        Artifact(f"{root}/Pulumi.{stack}.yaml", render_template(
            "pulumi/Pulumi.stack.yaml.j2", project=name, stack=stack, source=source, provider=cloud.provider,
            region=cloud.region)),
        Artifact(f"{root}/__main__.py", (shipped_dir("stacks") / program / "__main__.py").read_bytes()),
        Artifact(f"{root}/first_boot.py", (shipped_dir("stacks") / "first_boot.py").read_bytes()),
        Artifact(f"{root}/cluster.json", (json.dumps(cluster_data(name, cloud), indent=2, sort_keys=True) + "\n"
                                          ).encode()),
        Artifact(f"{root}/requirements.txt", render_template("pulumi/requirements.txt.j2", pins=PINS[cloud.provider])),
        *([boot] if boot else []),
    ]
