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
from fabricgen.core.templating import env_line, render_template
from fabricgen.features.cloud.build import catalog
from fabricgen.model.cloud import Cloud, CloudFileSystem
from fabricgen.model.topology import Topology

PROGRAMS = {"aws": "aws_efa", "alicloud": "alicloud_erdma", "gcp": "gcp_a3"}
# The SDK versions the stack tests run with (tests/external/cloud/test_pulumi_stacks.py checks the installed
# ones match).
PINS = {
    "aws": (("pulumi", "3.272.0"), ("pulumi-aws", "7.51.1")),
    # the NAS SDK reads each CPFS export's mount domain, which pulumi-alicloud does not output
    "alicloud": (("pulumi", "3.272.0"), ("pulumi-alicloud", "4.0.0"), ("alibabacloud-nas20170626", "3.7.5"),
                 ("alibabacloud-credentials", "1.0.12"), ("alibabacloud-tea-openapi", "0.4.6")),
    "gcp": (("pulumi", "3.272.0"), ("pulumi-gcp", "10.2.0")),
}
# The first-boot script the program fills in with the file systems' outputs and hands to the instances: EC2/ECS
# user data, or Compute Engine's startup-script metadata (which runs at every boot).
USER_DATA = {"aws": "user-data.sh", "alicloud": "user-data.sh", "gcp": "startup-script.sh"}
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
    if cloud.gcp is not None:  # an A3 NIC needs its network and subnet names: cluster_data lays them out (_google)
        return []
    if cloud.provider == "aws":
        return [{"network_card_index": card, "device_index": 0 if card == 0 else 1,
                 "interface_type": "efa" if card == 0 else "efa-only"} for card in range(cloud.interfaces)]
    return [{"network_card_index": card, "primary": card == 0, "traffic_mode": "HighPerformance"}
            for card in range(cloud.interfaces)]


def _filesystem(cluster: str, fs: CloudFileSystem) -> dict[str, Any]:
    if fs.kind == "managed-lustre":  # storage_type holds the Lustre file system name
        return {"name": fs.name, "instance_id": f"{cluster}-{fs.name}", "filesystem": fs.storage_type,
                "capacity_gib": fs.capacity_gib, "per_unit_storage_throughput": fs.throughput,
                "mountpoint": fs.mountpoint}
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
    if cloud.gcp is not None:  # always: the GPUDirect stack, its RxDM and the NCCL environment, then Lustre mounts
        return Artifact(f"pulumi/{name}/{USER_DATA['gcp']}", render_template(
            "pulumi/gcp-a3-startup.sh.j2", cluster=name, source=source, machine_type=cloud.instance_type.name,
            stack=cloud.gcp.stack, wait=cloud.gcp.network_wait, nccl=[env_line(n, v) for n, v, _ in cloud.gcp.nccl]))
    if cloud.provider == "alicloud":  # always: the eRDMA stack, the GPU driver (and Fabric Manager), the ERIs' MTU,
        # then any CPFS mounts
        return Artifact(f"pulumi/{name}/{USER_DATA['alicloud']}", render_template(
            "pulumi/cpfs-client.sh.j2", cluster=name, source=source, mtu=cloud.eri_mtu,
            driver=catalog()["alicloud"]["gpu_driver"]["version"], nvswitch=cloud.instance_type.nvswitch))
    if not cloud.filesystems:
        return None
    wanted = cloud.instance_type.fsx_efa_interfaces if any(fs.efa for fs in cloud.filesystems) else 0
    efa_interfaces = min(wanted, cloud.interfaces)
    stride = max(1, cloud.interfaces // efa_interfaces) if efa_interfaces else 1
    return Artifact(f"pulumi/{name}/{USER_DATA['aws']}", render_template(
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
        yield Finding(Severity.ERROR, "cloud-user-data-size",
                      f"pulumi/{cluster.metadata.name}/{USER_DATA[cloud.provider]}",
                      f"the first-boot script would be {filled} bytes of user data ({len(boot.content)} rendered, "
                      f"{len(cloud.filesystems)} file systems filled in), above {cloud.provider}'s limit of {limit} "
                      "bytes before base64: every instance would fail at pulumi up",
                      "fewer file systems (mount the others from a configuration tool after first boot)",
                      cloud.position)


def _stack_config(cloud: Cloud) -> list[tuple[str, str]]:
    """The provider's stack configuration: its region, and on Google Cloud the project and zone."""
    config = [("region", cloud.region)]
    if cloud.gcp is not None:
        config = [("project", cloud.gcp.project), *config, ("zone", cloud.zone)]
    return config


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
        "filesystems": [_filesystem(name, fs) for fs in cloud.filesystems],
        "tags": dict(cloud.tags),
        "user_data_limit": user_data_limit(cloud),
    }
    if cloud.gcp is not None:
        data["gcp"], data["interfaces"] = _google(name, cloud)
    elif cloud.provider == "aws":  # a new VPC's egress: the NAT gateway's public subnet (none: the VPC is left alone)
        data["public_subnet"] = {"cidr": cloud.public_subnet, "zone": cloud.zone} if cloud.public_subnet else None
    else:  # a new VPC's egress: an enhanced NAT gateway in its vSwitch, with SNAT (an existing VPC is left alone)
        data["egress"] = not cloud.vpc_id
    return data


def _google(name: str, cloud: Cloud) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The A3 layout: the VPCs (host, each GPU NIC's, or the RoCE VPC of the zone's RDMA network profile) and the NICs
    on them in NIC order, named after the cluster."""
    google = cloud.gcp
    assert google is not None
    nets: list[dict[str, Any]] = []
    for nic in google.nics:
        if nic.network < len(nets):
            continue
        roce = nic.nic_type == "MRDMA"
        suffix = "roce" if roce else f"{nic.role}-{sum(1 for n in nets if n['role'] == nic.role)}"
        mtu = 8896 if roce else google.host_mtu if nic.role == "host" else google.mtu
        nets.append({"name": f"{name}-{suffix}", "role": nic.role, "mtu": mtu,
                     "profile": f"projects/{google.project}/global/networkProfiles/{cloud.zone}-vpc-roce" if roce
                     else ""})
    nics = [{"nic_type": nic.nic_type, "role": nic.role, "network": nic.network, "subnet": nic.subnet,
             "subnet_name": f"{nets[nic.network]['name']}-subnet" + (f"-{i - nic.network}" if nic.nic_type == "MRDMA"
                                                                     else "")}
            for i, nic in enumerate(google.nics)]
    facts = catalog()["gcp"]
    lustre = facts["filesystems"]["managed-lustre"]
    apis = [*facts["apis"]["cluster"], *(facts["apis"]["filesystems"] if cloud.filesystems else ())]
    return {"project": google.project, "networks": nets, "max_distance": google.max_distance,
            "boot_disk": google.boot_disk, "gpudirect": google.stack.kind, "services_range": google.services,
            "apis": apis, "lustre_port": lustre["lnet_port"], "lustre_timeout": lustre["timeout"]}, nics


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
            config=_stack_config(cloud))),
        Artifact(f"{root}/__main__.py", (shipped_dir("stacks") / program / "__main__.py").read_bytes()),
        Artifact(f"{root}/first_boot.py", (shipped_dir("stacks") / "first_boot.py").read_bytes()),
        Artifact(f"{root}/cluster.json", (json.dumps(cluster_data(name, cloud), indent=2, sort_keys=True) + "\n"
                                          ).encode()),
        Artifact(f"{root}/requirements.txt", render_template("pulumi/requirements.txt.j2", pins=PINS[cloud.provider])),
        *([boot] if boot else []),
    ]
