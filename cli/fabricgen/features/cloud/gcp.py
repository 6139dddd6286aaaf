"""Google Cloud A3 in the ``cloud`` section: the checks and the layout only Google Cloud has.

An A3 instance has one NIC per VPC for every gVNIC NIC (the host NICs, and on A3 High and Mega the GPU NICs that
GPUDirect-TCPX/TCPXO drive), while A3 Ultra's eight MRDMA NICs share one VPC of the zone's RoCE network profile.
The spec lists one subnet per NIC, host NICs first; everything Google would refuse only after minutes of
``pulumi up`` (a zone without the type, a NIC count the type does not have, an MTU outside what VPCs take, a
Managed Lustre capacity off its tier's steps) is reported here with the spec's file:line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.model.cloud import Gcp, GcpNic, GpuDirectStack, GpuNicTopology, NetworkWait

NAME_LIMIT = 40  # Compute Engine names are RFC 1035 labels of at most 63; "<cluster>-gpu-7-subnet" must fit


def zone(issues: Issues, itype: str, zone_name: str, facts: Mapping[str, Any]) -> None:
    """The zone must be one the catalog lists for the machine type (GPU locations, with its source)."""
    zones = facts["zones"]
    if zone_name not in zones:
        close = [z for z in zones if z.startswith(zone_name.rsplit("-", 1)[0])]
        hint = (f"{itype} is offered in {', '.join(close)} of this region" if close else
                did_you_mean(zone_name, zones) or f"zones of {itype}: {', '.join(zones)}")
        issues.error(("zone",), f"{itype} is not offered in {zone_name} (catalog: Compute Engine GPU locations)",
                     f"{hint}; if Google lists it now (gcloud compute machine-types list --filter=name={itype} "
                     f"--zones={zone_name}), add the zone to features/cloud/instances.yaml")


def mtu(issues: Issues, spec: Mapping[str, Any], itype: str, facts: Mapping[str, Any], limits: list[int]
        ) -> tuple[int, int]:
    """The gVNIC VPCs' MTU (the type's documented one unless the spec sets another that VPCs accept) and the host
    VPCs' (network.host_mtu, default the same): the GPU VPCs are not connected to the host VPC (no peering, no
    routes between them), so Google's advice of one MTU for connected networks does not bind them together, and
    Managed Lustre on the host VPC prefers 8896 (its performance page)."""
    value = int(spec["network"].get("mtu", facts["mtu"]))
    host = int(spec["network"].get("host_mtu", value))
    low, high = limits
    for key, given in (("mtu", value), ("host_mtu", host)):
        if key in spec["network"] and not low <= given <= high:
            issues.error(("network", key), f"Google Cloud VPCs do not take an MTU of {given}",
                         f"{low} to {high}; Google documents {facts['mtu']} for {itype}"
                         + (", and Managed Lustre gains most at 8896" if key == "host_mtu" else ""))
    return value, host


def nics(issues: Issues, itype: str, facts: Mapping[str, Any], subnets: int) -> tuple[GcpNic, ...]:
    """One NIC per subnet, host NICs first; each gVNIC NIC its own VPC, the MRDMA NICs one RoCE VPC."""
    host, gpu = int(facts["host_nics"]), int(facts["interfaces"])
    if subnets != host + gpu:
        issues.error(("network", "subnets"), f"{itype} has {host + gpu} NICs ({host} host, {gpu} GPU), and each "
                                             f"needs its subnet; {subnets} given",
                     f"list {host + gpu} subnets: {host} for the host NIC{'s' * (host > 1)} (nic0 first), then one "
                     "per GPU NIC")
        return ()
    out = [GcpNic("host", "GVNIC", i, i) for i in range(host)]
    roce = facts["gpu_nic_type"] == "MRDMA"
    out += [GcpNic("gpu", facts["gpu_nic_type"], host if roce else host + i, host + i) for i in range(gpu)]
    return tuple(out)


def lustre_capacity_hint(capacity: int, throughput: int, tiers: Mapping[str, list[int]]) -> str:
    """Empty when Managed Lustre takes the capacity at the tier, else what it takes."""
    tier = tiers.get(str(throughput))
    if tier is None:
        return f"Managed Lustre tiers: {', '.join(sorted(tiers, key=int))} MB/s/TiB"
    first, step, threshold, large_step, largest = tier
    small = first <= capacity <= threshold and capacity % step == 0
    large = threshold < capacity <= largest and capacity % large_step == 0  # 20,016,000 = 139 x 144,000
    if small or large:
        return ""
    return (f"the {throughput} MB/s/TiB tier takes multiples of {step} GiB from {first} up to {threshold} GiB, "
            f"then multiples of {large_step} GiB up to {largest} GiB")


def names(issues: Issues, cluster: str, instances: tuple[str, ...]) -> None:
    """Compute Engine names are RFC 1035 labels: a lower-case letter first; the cluster's name prefixes them."""
    if not cluster[:1].isalpha() or len(cluster) > NAME_LIMIT:
        issues.root().error(("metadata", "name"), f"{cluster!r} cannot prefix Compute Engine resource names",
                            f"a letter first and at most {NAME_LIMIT} characters (networks are named "
                            "<cluster>-gpu-<n>)")
    bad = next((name for name in instances if not name[:1].isalpha()), None)
    if bad is not None:
        issues.error(("instances", "name"), f"instance name {bad!r} cannot name a Compute Engine instance",
                     "Compute Engine names start with a letter, e.g. a3-{n:03d}")


def placement(issues: Issues, spec: Mapping[str, Any]) -> bool:
    """Whether fabricgen makes the placement policy (a compact one for instances, a workload policy for a managed
    instance group): yes by default, but never for instances that consume a specific reservation. The reservation
    brings its own placement: slurm-gcp (resume.py) gives such instances the reservation's resource policies or
    none, never its own, and Cluster Toolkit lets only dense reservations take an external policy (PR #3347).
    pulumi-gcp 10.2.0's get_reservation does not return a reservation's policies, so fabricgen attaches none."""
    reserved = spec.get("capacity", {}).get("kind") == "reservation"
    wanted = bool(spec.get("placement_group", not reserved))
    if reserved:
        for key in ("placement_group", "max_distance"):
            if key in spec and (key == "max_distance" or spec[key]):
                issues.error(("instances", key), f"{key} cannot be combined with a specific reservation: the "
                                                 "reservation brings its own placement",
                             f"remove {key}: reserved VMs are placed by the reservation's own policy, as slurm-gcp "
                             "(resume.py) and Cluster Toolkit (PR #3347) consume reservations; fabricgen attaches "
                             "none")
        return False
    if "max_distance" in spec and not wanted:
        issues.error(("instances", "max_distance"), "max_distance needs the compact placement policy",
                     "remove max_distance or placement_group: false")
    elif "max_distance" in spec and spec["group"] == "managed-instance-group":
        issues.error(("instances", "max_distance"), "a managed instance group takes a workload policy, which has no "
                                                    "max_distance",
                     "remove max_distance: Google places a MIG of A3 VMs with a HIGH_THROUGHPUT workload policy "
                     "(a compact placement policy is for MIGs of general-purpose GPUs)")
    return wanted


def max_distance(issues: Issues, spec: Mapping[str, Any], itype: str, facts: Mapping[str, Any]) -> int:
    """The compact policy's maxDistance, one the machine type takes (Compute Engine refuses 1 for A3 Ultra and A3
    High: the catalog's max_distance with its source); 0: best effort."""
    value = int(spec.get("max_distance", 0))
    allowed = facts["max_distance"]
    if value and value not in allowed:
        issues.error(("instances", "max_distance"), f"{itype} does not take a max_distance of {value}",
                     f"{itype} takes {' or '.join(map(str, allowed))} (Compute Engine, \"Use compact placement "
                     "policies\"), or leave max_distance out for best effort")
    return value


def topology(facts: Mapping[str, Any] | None) -> GpuNicTopology | None:
    """The catalog's GPU-NIC topology file for RxDM, if the stack has one (TCPX)."""
    if facts is None:
        return None
    return GpuNicTopology(facts["path"], tuple((n["ifname"], n["pci"], tuple(n["gpus"])) for n in facts["nics"]),
                          tuple(tuple(q) for q in facts["queues"]), facts["rss_set_size"], facts["tcpd_queue_size"],
                          facts["max_rx_rules"])


def stack(kind: str, facts: Mapping[str, Any]) -> GpuDirectStack:
    """The catalog's GPUDirect software of one kind."""
    return GpuDirectStack(kind, facts["name"], facts["library_dir"], facts.get("plugin_image", ""),
                          tuple(facts.get("plugin_install", ())), facts.get("rxdm_image", ""),
                          facts.get("package", ""), facts.get("profile", ""), facts.get("nccl_package", ""),
                          topology(facts.get("topology")))


def build(issues: Issues, spec: Mapping[str, Any], itype: str, catalog: Mapping[str, Any], services: str,
          compact: bool) -> Gcp:
    """The Google-only part of an A3 cluster, all of it checked; ``services`` is the private service access range
    carved from network.vpc.cidr for Managed Lustre (empty without file systems); ``compact``: the instances get
    fabricgen's compact placement policy (see :func:`placement`)."""
    facts, limits = catalog["instances"][itype], catalog["network"]
    where: PathKey = ("project",)
    if "project" not in spec:
        issues.error(where, "a Google Cloud cluster needs its project", "add cloud.project, e.g. my-ml-project")
    if "id" in spec["network"]["vpc"]:
        issues.error(("network", "vpc", "id"), "reusing an existing VPC is not offered on gcp: an A3 cluster "
                                               "creates one VPC per gVNIC NIC", "give network.vpc.cidr instead")
    zone(issues, itype, spec["zone"], facts)
    wait = facts["network_wait"]
    layout = nics(issues, itype, facts, len(spec["network"]["subnets"]))
    return Gcp(spec.get("project", ""), stack(facts["gpudirect"], catalog["gpudirect"][facts["gpudirect"]]), layout,
               *mtu(issues, spec, itype, facts, limits["mtu"]),
               max_distance(issues, spec["instances"], itype, facts) if compact else 0,
               facts["boot_disk"], NetworkWait(tuple(wait["interfaces"]), wait["timeout"], wait["settle"]),
               tuple((name, value, why) for name, value, why in catalog["nccl"].get(itype, ())), services)
