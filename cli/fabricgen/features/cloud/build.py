"""Build the ``cloud`` section: a cloud cluster (AWS EFA, Alibaba Cloud eRDMA or Google Cloud A3 with GPUDirect)
instead of racks and fabrics.

Everything a provider would reject only after minutes of ``pulumi up`` is checked here first, each with the
spec's file:line: instance types from the cloud catalog, interface counts above the type's maximum, FSx and
CPFS capacity and throughput values, subnets outside the cluster's zone (EFA and eRDMA do not cross zones),
a placement group next to a capacity block, and the VPC/subnet CIDRs (netaddr). Google Cloud's own checks (zones,
NIC counts, MTU) are in :mod:`.gcp`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from netaddr import IPAddress, IPNetwork, IPSet

from fabricgen.core.document import PathKey
from fabricgen.core.errors import SpecError
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.core.naming import DEVICE_NAME, expand, placeholders, unknown_placeholders
from fabricgen.features.cloud import gcp
from fabricgen.features.feature import BuildContext
from fabricgen.model.cloud import Cloud, CloudAccess, CloudFileSystem, CloudInstanceType, CloudSubnet
from fabricgen.model.cluster import Cluster
from fabricgen.spec.load import load_file
from fabricgen.spec.validate import schema_issues

CATALOG_SCHEMA = "sections/cloud.schema.json#/$defs/catalog_file"
# cloud: cloud.filesystems; nccl: the provider documents its instances' NCCL environment, which nccl.env holds
ON_PREM_SECTIONS = ("facility", "node_profiles", "nodes", "fabrics", "lustre", "gds", "kubernetes", "nccl")
INTERFACE_SECTION = {"aws": "efa", "alicloud": "eri", "gcp": "gpudirect"}
FILESYSTEM_KIND = {"aws": "fsx-lustre", "alicloud": "cpfs", "gcp": "managed-lustre"}
RDMA_KIND = {"aws": "EFA", "alicloud": "eRDMA", "gcp": "GPUDirect"}
DEFAULT_ACCESS = {"aws": "ssm", "alicloud": "none", "gcp": "iap"}
ACCESS_KINDS = {"aws": ("ssm", "bastion", "none"), "alicloud": ("none",), "gcp": ("iap", "none")}


@cache
def catalog() -> Mapping[str, Any]:
    """The shipped cloud catalog, validated; a broken file is a packaging bug reported by file:line."""
    document = load_file(Path(__file__).with_name("instances.yaml"))
    issues = schema_issues(document, document.data, CATALOG_SCHEMA)
    if issues:
        raise SpecError(issues)
    return MappingProxyType(document.data)


def instance_types(provider: str) -> dict[str, CloudInstanceType]:
    """The catalog's instance types of one provider."""
    entries = catalog()[provider]["instances"]
    return {name: CloudInstanceType(name, e["gpus"], e["gpu"], e["network_cards"], e["interfaces"], e["source"],
                                    e.get("fsx_efa_interfaces", 0), e.get("nvswitch", False))
            for name, e in entries.items()}


@dataclass(frozen=True)
class _Context:
    """The ``cloud`` section and its provider's catalog facts; ``issues`` is at ``cloud``."""

    issues: Issues
    spec: Mapping[str, Any]

    @property
    def provider(self) -> str:
        return str(self.spec["provider"])

    @property
    def facts(self) -> Mapping[str, Any]:
        return catalog()[self.provider]  # type: ignore[no-any-return]


def _network(ctx: _Context, text: str, where: PathKey, limits: list[int], what: str) -> IPNetwork | None:
    """A CIDR with its host bits clear and a prefix length the provider accepts, else None (reported)."""
    try:
        network = IPNetwork(text)
    except Exception:  # netaddr raises several types for malformed input
        ctx.issues.error(where, f"{text!r} is not an IPv4 prefix", "an IPv4 prefix such as 10.50.0.0/16")
        return None
    if network.ip != network.network:
        ctx.issues.error(where, f"{text} has host bits set", f"did you mean {network.cidr}?")
        return None
    low, high = limits
    if not low <= network.prefixlen <= high:
        ctx.issues.error(where, f"a {what} of /{network.prefixlen} is not accepted by {ctx.provider}",
                         f"use a prefix length from /{low} to /{high}")
        return None
    return network


def _top_block(ctx: _Context, vpc: IPNetwork, taken: list[IPNetwork], prefix: int, what: str, hint: str) -> str:
    """The VPC's last free block of a prefix length: a new AWS VPC's NAT gateway subnet, or Google's private service
    access range for Managed Lustre. Carving from the top keeps clear of the cluster subnets, which specs usually
    number from the bottom."""
    free = [block for block in (IPSet([vpc]) - IPSet(taken)).iter_cidrs() if block.prefixlen <= prefix]
    if not free:
        ctx.issues.error(("network", "vpc", "cidr"), f"the VPC {vpc} has no free /{prefix} for {what}", hint)
        return ""
    last = free[-1]
    return str(IPNetwork(f"{IPAddress(last.last - 2 ** (32 - prefix) + 1)}/{prefix}"))


def _subnets(ctx: _Context) -> tuple[str, str, tuple[CloudSubnet, ...], str]:
    net = ctx.spec["network"]
    vpc = net["vpc"]
    limits = ctx.facts["network"]
    vpc_network = _network(ctx, vpc["cidr"], ("network", "vpc", "cidr"), limits["vpc_prefix"], "VPC") if (
        "cidr" in vpc) else None
    zone = ctx.spec["zone"]
    kind = RDMA_KIND[ctx.provider]
    subnets: list[CloudSubnet] = []
    taken: list[tuple[int, IPNetwork]] = []
    for i, entry in enumerate(net["subnets"]):
        where: PathKey = ("network", "subnets", i)
        if "id" in entry and "cidr" in entry:
            ctx.issues.error(where, "a subnet is either existing (id) or new (cidr), not both", "remove id or cidr")
        if "id" in entry and "id" not in vpc:
            ctx.issues.error((*where, "id"), "an existing subnet cannot be in the new VPC",
                             "give network.vpc.id to reuse its VPC, or a cidr for a new subnet")
        subnet_zone = entry.get("zone", zone)
        if subnet_zone != zone:
            ctx.issues.error((*where, "zone"), f"the subnet is in {subnet_zone} but the cluster is in {zone}",
                             f"{kind} traffic does not cross zones: put every subnet in {zone}")
        if "cidr" in entry:
            network = _network(ctx, entry["cidr"], (*where, "cidr"), limits["subnet_prefix"], "subnet")
            if network is not None and vpc_network is not None and network not in vpc_network:
                ctx.issues.error((*where, "cidr"), f"{network} is outside the VPC {vpc_network}",
                                 "a subnet's CIDR must lie inside its VPC's")
            for j, other in taken:
                if network is not None and IPSet([network]) & IPSet([other]):
                    ctx.issues.error((*where, "cidr"), f"{network} overlaps subnets[{j}] ({other})",
                                     "give every subnet its own range")
            if network is not None:
                taken.append((i, network))
        subnets.append(CloudSubnet(entry.get("id", ""), entry.get("cidr", ""), subnet_zone))
    # AWS, a new VPC: the NAT gateway's public subnet (the smallest subnet AWS takes: it needs one address);
    # gcp with Managed Lustre: the private service access range, which must not overlap any subnet
    public = ""
    if vpc_network is not None and "id" not in vpc and ctx.provider == "aws":
        prefix = int(limits["subnet_prefix"][1])
        public = _top_block(ctx, vpc_network, [n for _, n in taken], prefix, "the NAT gateway's subnet",
                            f"leave a /{prefix} of the VPC outside the subnets for the NAT gateway that gives a new "
                            "VPC egress, or reuse an existing VPC by id")
    if vpc_network is not None and ctx.provider == "gcp" and ctx.spec["filesystems"]:
        prefix = int(ctx.facts["filesystems"]["managed-lustre"]["psa_prefix"])
        public = _top_block(ctx, vpc_network, [n for _, n in taken], prefix,
                            "Managed Lustre's private service access range",
                            f"leave a /{prefix} of network.vpc.cidr outside the subnets: Google peers Managed Lustre "
                            "into it")
    return vpc.get("id", ""), vpc.get("cidr", ""), tuple(subnets), public


def _access(ctx: _Context, public_subnet: str) -> CloudAccess:
    """The operators' way in: the instances have no public address, so an SSH rule alone reaches nothing."""
    spec = ctx.spec.get("access", {})
    kind = spec.get("kind", DEFAULT_ACCESS[ctx.provider])
    where: PathKey = ("access", "kind")
    if kind not in ACCESS_KINDS[ctx.provider]:
        owner = next(p for p, kinds in ACCESS_KINDS.items() if kind in kinds and p != ctx.provider)
        hint = {"alicloud": "Alibaba Cloud instances are reached through Cloud Assistant or Workbench, which need no "
                            "resource: access none",
                "gcp": "Google Cloud instances are reached through IAP TCP forwarding (access iap) or not at all "
                       "(none)",
                "aws": "use ssm, bastion or none"}[ctx.provider]
        ctx.issues.error(where, f"access {kind} is {owner}'s, not {ctx.provider}'s", hint)
    if kind != "bastion":
        for key in ("ingress", "instance_type"):
            if key in spec:
                ctx.issues.error(("access", key), f"{key} applies to access: bastion only", f"drop {key}")
        return CloudAccess(kind)
    if "ingress" not in spec:
        ctx.issues.error(where, "a bastion needs the CIDRs allowed to reach it", "add access.ingress")
    for i, text in enumerate(spec.get("ingress", ())):
        _network(ctx, text, ("access", "ingress", i), [0, 32], "CIDR")
    if not public_subnet:
        ctx.issues.error(where, "a bastion needs the public subnet of a new VPC (an existing VPC's routing is left "
                                "alone)", "use access: ssm, or give the network a new VPC (vpc.cidr)")
    if not ctx.spec["instances"].get("key_pair"):
        ctx.issues.error(where, "a bastion is reached by SSH: it needs instances.key_pair", "add instances.key_pair")
    return CloudAccess(kind, tuple(spec.get("ingress", ())), spec.get("instance_type", "t3.small"))


def _instance_type(ctx: _Context) -> CloudInstanceType | None:
    name = ctx.spec["instances"]["type"]
    known = instance_types(ctx.provider)
    if name in known:
        return known[name]
    other = next((p for p in INTERFACE_SECTION if p != ctx.provider and name in instance_types(p)), "")
    hint = (f"{name} is {'an' if other[:1] in 'aeiou' else 'a'} {other} type; set provider: {other}" if other else
            did_you_mean(name, known) or f"known {ctx.provider} types: {', '.join(sorted(known))}")
    ctx.issues.error(("instances", "type"), f"unknown {ctx.provider} instance type {name!r}", hint)
    return None


def _interfaces(ctx: _Context, itype: CloudInstanceType | None) -> int:
    wanted = INTERFACE_SECTION[ctx.provider]
    for provider, section in INTERFACE_SECTION.items():
        if section in ctx.spec and section != wanted:
            ctx.issues.error((section,), f"{section} is for provider {provider}", f"use {wanted}: on {ctx.provider}")
    asked = ctx.spec.get(wanted, {}).get("interfaces", "max")
    if itype is None:
        return 0
    if ctx.provider == "gcp" and asked not in ("max", itype.interfaces):
        ctx.issues.error((wanted, "interfaces"), f"{itype.name} has {itype.interfaces} GPU NICs, not {asked}",
                         f"Google's NCCL plugin and GPU NIC layout use every GPU NIC: max or {itype.interfaces}")
        return itype.interfaces
    if asked != "max" and asked > itype.interfaces:
        kind = "EFA interfaces" if ctx.provider == "aws" else "ERIs"
        ctx.issues.error((wanted, "interfaces"), f"{itype.name} has at most {itype.interfaces} {kind}, not {asked}",
                         f"use max or a number up to {itype.interfaces}")
        return itype.interfaces
    return itype.interfaces if asked == "max" else int(asked)


def _names(ctx: _Context) -> tuple[str, ...]:
    spec = ctx.spec["instances"]
    pattern, count = spec["name"], spec["count"]
    where: PathKey = ("instances", "name")
    unknown = unknown_placeholders(pattern, {"n"})
    if unknown:
        ctx.issues.error(where, f"unknown placeholder {{{unknown[0]}}} in the instance name pattern",
                         "only {n} is available, e.g. gpu{n:03d}")
        return ()
    if count > 1 and "n" not in placeholders(pattern):
        ctx.issues.error(where, f"{count} instances would all be named {pattern!r}", "add {n}, e.g. gpu{n:03d}")
        return ()
    names = tuple(expand(pattern, {"n": n}) for n in range(1, count + 1))
    bad = next((n for n in names if not DEVICE_NAME.fullmatch(n)), None)
    if bad is not None:
        ctx.issues.error(where, f"instance name {bad!r} is not a valid host name",
                         "lower-case letters, digits and '-', at most 63 characters")
    return names


def _placement(ctx: _Context) -> tuple[bool, str, str]:
    spec = ctx.spec["instances"]
    capacity = spec.get("capacity", {})
    kind, block = capacity.get("kind", ""), capacity.get("kind") == "block"
    group = spec["group"]
    if "max_distance" in spec and ctx.provider != "gcp":
        ctx.issues.error(("instances", "max_distance"), "max_distance is for provider gcp",
                         "remove it: a placement group has no distance")
    if ctx.provider == "gcp":
        if block:
            ctx.issues.error(("instances", "capacity", "kind"), "capacity blocks are AWS's",
                             "on gcp, consume a reservation by name: kind: reservation")
        if group == "auto-scaling":
            ctx.issues.error(("instances", "group"), "auto-scaling is for provider aws",
                             "use group: instances or managed-instance-group")
        return gcp.placement(ctx.issues, spec), kind, capacity.get("id", "")
    if group == "managed-instance-group":
        ctx.issues.error(("instances", "group"), "a managed instance group is for provider gcp",
                         "use group: instances" + (" or auto-scaling" if ctx.provider == "aws" else ""))
    if ctx.provider != "aws":
        for key in ("capacity", "placement_group"):
            if key in spec:
                ctx.issues.error(("instances", key), f"{key} is for provider aws",
                                 "Alibaba Cloud instances always join a LowLatency deployment set")
        if spec["group"] == "auto-scaling":
            ctx.issues.error(("instances", "group"), "auto-scaling is for provider aws", "use group: instances")
        return False, "", ""
    if spec.get("placement_group") and block:
        ctx.issues.error(("instances", "placement_group"), "a placement group cannot be combined with a capacity block",
                         "Capacity Blocks are already co-located; remove placement_group")
    return spec.get("placement_group", not block), kind, capacity.get("id", "")


def _capacity_values(facts: Mapping[str, Any]) -> str:
    first, step = int(facts["capacity_first_gib"]), int(facts["capacity_step_gib"])
    return f"{first} GiB or {step}, {2 * step}, ... GiB" if first < step else f"{first} GiB, then steps of {step} GiB"


def _capacity_ok(capacity: int, facts: Mapping[str, Any]) -> bool:
    """FSx: the small size, then multiples of the step; CPFS: a minimum, then steps above it."""
    first, step = int(facts["capacity_first_gib"]), int(facts["capacity_step_gib"])
    if first < step:
        return capacity == first or capacity % step == 0
    return capacity >= first and (capacity - first) % step == 0


def _filesystem(ctx: _Context, i: int, spec: Mapping[str, Any], itype: CloudInstanceType | None
                ) -> CloudFileSystem | None:
    where: PathKey = ("filesystems", i)
    kind = spec["kind"]
    if kind != FILESYSTEM_KIND[ctx.provider]:
        ctx.issues.error((*where, "kind"), f"{kind} is not available on {ctx.provider}",
                         f"use kind: {FILESYSTEM_KIND[ctx.provider]}")
        return None
    facts = ctx.facts["filesystems"][kind]
    if kind == "managed-lustre":
        return _managed_lustre(ctx, where, spec, facts)
    if not _capacity_ok(spec["capacity_gib"], facts):
        ctx.issues.error((*where, "capacity_gib"), f"{kind} does not accept {spec['capacity_gib']} GiB",
                         f"valid: {_capacity_values(facts)}")
    if kind == "fsx-lustre":
        return _fsx(ctx, where, spec, facts, itype)
    for key in ("efa", "metadata_iops"):
        if key in spec:
            ctx.issues.error((*where, key), f"{key} is for fsx-lustre", f"remove {key}")
    storage_types = facts["storage_types"]
    if str(spec["throughput"]) not in storage_types:
        ctx.issues.error((*where, "throughput"), f"CPFS has no {spec['throughput']} MB/s/TiB class",
                         f"valid: {', '.join(sorted(storage_types))} MB/s/TiB")
    return CloudFileSystem(kind, spec["name"], spec["capacity_gib"], spec["throughput"], spec["mountpoint"],
                           storage_type=storage_types.get(str(spec["throughput"]), ""))


def _managed_lustre(ctx: _Context, where: PathKey, spec: Mapping[str, Any], facts: Mapping[str, Any]
                    ) -> CloudFileSystem:
    """Managed Lustre capacities Google accepts at the performance tier (``throughput``, MB/s per TiB)."""
    for key in ("efa", "metadata_iops"):
        if key in spec:
            ctx.issues.error((*where, key), f"{key} is for fsx-lustre", f"remove {key}")
    tiers = facts["tiers"]
    if str(spec["throughput"]) not in tiers:
        ctx.issues.error((*where, "throughput"), f"Managed Lustre has no {spec['throughput']} MB/s/TiB tier",
                         f"valid: {', '.join(sorted(tiers, key=int))} MB/s/TiB")
    else:
        hint = gcp.lustre_capacity_hint(spec["capacity_gib"], spec["throughput"], tiers)
        if hint:
            ctx.issues.error((*where, "capacity_gib"), f"Managed Lustre does not take {spec['capacity_gib']} GiB "
                                                       f"at {spec['throughput']} MB/s/TiB", hint)
    return CloudFileSystem(spec["kind"], spec["name"], spec["capacity_gib"], spec["throughput"], spec["mountpoint"],
                           storage_type=facts["filesystem"])


def _fsx(ctx: _Context, where: PathKey, spec: Mapping[str, Any], facts: Mapping[str, Any],
         itype: CloudInstanceType | None) -> CloudFileSystem:
    """FSx values AWS accepts; EFA on by default where the instances can be its EFA clients (Nitro v4 or later)."""
    efa_client = itype is None or itype.fsx_efa_interfaces > 0
    if spec.get("efa") and itype is not None and not efa_client:
        ctx.issues.error((*where, "efa"), f"{itype.name} cannot be an EFA client of FSx for Lustre",
                         "FSx EFA clients need Nitro v4 or later; set efa: false to reach the file system over TCP")
    if spec["throughput"] not in facts["throughputs"]:
        ctx.issues.error((*where, "throughput"),
                         f"{facts['deployment_type']} does not accept {spec['throughput']} MB/s/TiB",
                         f"valid: {', '.join(map(str, facts['throughputs']))}")
    iops = spec.get("metadata_iops")
    if iops is not None and iops not in facts["metadata_iops_small"] and iops % facts["metadata_iops_step"]:
        ctx.issues.error((*where, "metadata_iops"), f"FSx does not accept {iops} metadata IOPS",
                         f"valid: {', '.join(map(str, facts['metadata_iops_small']))} or a multiple of "
                         f"{facts['metadata_iops_step']} up to 192000")
    return CloudFileSystem(spec["kind"], spec["name"], spec["capacity_gib"], spec["throughput"], spec["mountpoint"],
                           spec.get("efa", efa_client), iops)


def _filesystems(ctx: _Context, itype: CloudInstanceType | None) -> tuple[CloudFileSystem, ...]:
    out = []
    seen: dict[tuple[str, str], int] = {}
    for i, spec in enumerate(ctx.spec["filesystems"]):
        for key in ("name", "mountpoint"):
            if (key, spec[key]) in seen:
                ctx.issues.error(("filesystems", i, key), f"{key} {spec[key]!r} is used twice",
                                 f"also used by filesystems[{seen[(key, spec[key])]}]")
            seen.setdefault((key, spec[key]), i)
        fs = _filesystem(ctx, i, spec, itype)
        if fs is not None:
            out.append(fs)
    return tuple(out)


def _alibaba_names(ctx: _Context, cluster: str, names: tuple[str, ...]) -> None:
    """Alibaba Cloud names (security groups, deployment sets, vSwitches, NAT gateways, ENIs, instances: named
    after the cluster or the instance) must start with a letter; a DNS label may start with a digit."""
    if ctx.provider != "alicloud":
        return
    if not cluster[:1].isalpha():
        ctx.issues.root().error(("metadata", "name"), f"{cluster!r} cannot name Alibaba Cloud resources",
                              "Alibaba Cloud names start with a letter: rename the cluster")
    bad = next((name for name in names if not name[:1].isalpha()), None)
    if bad is not None:
        ctx.issues.error(("instances", "name"), f"instance name {bad!r} cannot name an ECS instance",
                         "Alibaba Cloud names start with a letter, e.g. gpu{n:03d}")


ALIBABA_SYSTEM_DISK_GIB = 500  # pulumi-alicloud 4.0.0 ecs.Instance system_disk_size: 20 to 500 GiB


def _system_disk(ctx: _Context) -> int:
    size = int(ctx.spec["instances"]["system_disk_gib"])
    if ctx.provider == "alicloud" and size > ALIBABA_SYSTEM_DISK_GIB:
        ctx.issues.error(("instances", "system_disk_gib"), f"{size} GiB is above the {ALIBABA_SYSTEM_DISK_GIB} GiB "
                                                           "an Alibaba Cloud system disk takes",
                         f"at most {ALIBABA_SYSTEM_DISK_GIB}; put data on CPFS or a data disk")
    return size


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """The cluster of a cloud spec: no racks, nodes or fabrics, one group of instances in one zone."""
    data, top = context.data, context.issues
    ctx = _Context(top.at("cloud"), data["cloud"])
    for section in ON_PREM_SECTIONS:
        if section in top.doc.data:
            top.error((section,), f"a cloud cluster has no {section}",
                      f"remove {section}, or remove cloud for an on-premises cluster")
    if not ctx.spec["zone"].startswith(ctx.spec["region"]):
        ctx.issues.error(("zone",), f"zone {ctx.spec['zone']} is not in region {ctx.spec['region']}",
                         f"a zone of {ctx.spec['region']} such as {ctx.spec['region']}a")
    if "project" in ctx.spec and ctx.provider != "gcp":
        ctx.issues.error(("project",), "project is for provider gcp", "remove project")
    for key in ("mtu", "host_mtu"):
        if key in ctx.spec["network"] and ctx.provider != "gcp":
            ctx.issues.error(("network", key), f"network.{key} is for provider gcp",
                             "remove it: EFA and ERI MTUs follow the instance type (eri.jumbo_frames on Alibaba "
                             "Cloud)")
    vpc_id, vpc_cidr, subnets, public_subnet = _subnets(ctx)
    access = _access(ctx, public_subnet)
    itype = _instance_type(ctx)
    interfaces = _interfaces(ctx, itype)
    names = _names(ctx)
    _alibaba_names(ctx, data["metadata"]["name"], names)
    placement_group, capacity_kind, capacity_id = _placement(ctx)
    filesystems = _filesystems(ctx, itype)
    if itype is None:
        return cluster
    google = None
    if ctx.provider == "gcp":
        gcp.names(ctx.issues, data["metadata"]["name"], names)
        google = gcp.build(ctx.issues, ctx.spec, itype.name, ctx.facts, public_subnet,
                           placement_group and ctx.spec["instances"]["group"] == "instances")
        public_subnet = ""
    spec, meta = ctx.spec, data["metadata"]
    instances = spec["instances"]
    return replace(cluster, cloud=Cloud(
        ctx.provider, spec["region"], spec["zone"], vpc_id, vpc_cidr, subnets, access,
        itype, names, instances["image"], instances.get("key_pair", ""), instances["group"], placement_group,
        capacity_kind, capacity_id, interfaces, filesystems,
        tuple(sorted({**spec["tags"], "cluster": meta["name"]}.items())), ctx.issues.position(()), public_subnet,
        _system_disk(ctx), spec.get("eri", {}).get("jumbo_frames", False), google))
