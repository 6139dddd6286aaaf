"""The Ethernet sections of a fabric: its NOS per tier, MTUs and, on RoCE, the lossless class, checked against
what each NOS can do (its data file in ``nos/``): a watchdog action, buffer model or shared headroom pool the
fabric's NOS lacks is an error at the spec line that asks for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from fabricgen.core.issues import Issues
from fabricgen.features.ethernet.nos import NosData, systems
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster, Fabric, FabricType, Tier
from fabricgen.model.ethernet import RoceQos, TrafficClass
from fabricgen.spec.validate import with_defaults

ETHERNET_ONLY = ("nos", "mtu", "host_mtu", "qos")
DEFAULT_NOS = "sonic"
QOS_SCHEMA = "sections/ethernet.schema.json#/$defs/qos"


def build(context: BuildContext, cluster: Cluster, fabric: Fabric) -> Fabric:
    """NOS, MTUs and the RoCE class of an Ethernet fabric; an InfiniBand fabric may carry none of them."""
    path, spec = context.fabric_spec(fabric)
    issues = context.issues.at(*path)
    if fabric.type is FabricType.INFINIBAND:
        for key in ETHERNET_ONLY:
            if key in spec:
                issues.error((key,), f"{key} applies to Ethernet and RoCE fabrics only",
                             "InfiniBand fabrics are configured through subnet_manager")
        return fabric
    if fabric.type is not FabricType.ROCE and "qos" in spec:
        issues.error(("qos",), "a lossless QoS class needs type: roce", "use type: roce or remove qos")
    nos = spec.get("nos", DEFAULT_NOS)
    by_tier = MappingProxyType({t: nos if isinstance(nos, str) else nos.get(t.value, nos.get("leaf", DEFAULT_NOS))
                                for t in Tier})
    mtu, host_mtu = spec.get("mtu", 9100), spec.get("host_mtu", 9000)
    if host_mtu > mtu:
        issues.error(("host_mtu",), f"host MTU {host_mtu} exceeds the switch MTU {mtu}",
                     "switch ports must carry the hosts' largest frames")
    qos = None
    if fabric.type is FabricType.ROCE:
        used = [systems()[name].data for name in sorted(set(by_tier.values()))]
        qos = _roce_qos(issues.at("qos"), with_defaults(spec.get("qos", {}), QOS_SCHEMA), used)
    return replace(fabric, nos=by_tier, mtu=mtu, host_mtu=host_mtu, qos=qos)


def _roce_qos(issues: Issues, q: Mapping[str, Any], used: Sequence[NosData]) -> RoceQos:
    lossless = TrafficClass(q["lossless"]["dscp"], q["lossless"]["priority"])
    cnp = TrafficClass(q["cnp"]["dscp"], q["cnp"]["priority"])
    if lossless.priority == 0:
        issues.error(("lossless", "priority"), "the lossless class cannot be priority 0",
                     "priority 0 carries all unclassified traffic (priority group 0 on SONiC), which PFC would then "
                     "pause too; NVIDIA's default is 3")
    if lossless.priority == cnp.priority:
        issues.error(("cnp", "priority"), f"CNP shares priority {cnp.priority} with the lossless class",
                     "CNPs need their own strict-priority queue (NVIDIA's default: 6)")
    if lossless.dscp == cnp.dscp:
        issues.error(("cnp", "dscp"), f"CNP shares DSCP {cnp.dscp} with the lossless class",
                     "use distinct DSCPs (defaults: 26 lossless, 48 CNP)")
    ecn = q["ecn"]
    if ecn["min_kb"] > ecn["max_kb"]:
        issues.error(("ecn", "min_kb"), f"ECN minimum {ecn['min_kb']} KB is above the maximum {ecn['max_kb']} KB",
                     "WRED needs min <= max")
    wd, shp = q["pfc_watchdog"], q.get("shared_headroom_pool")
    for nos in used:
        if wd["action"] not in nos.pfc_watchdog_actions:
            issues.error(("pfc_watchdog", "action"), f"{nos.name} has no PFC watchdog action {wd['action']!r}",
                         f"{nos.name} supports: {', '.join(sorted(nos.pfc_watchdog_actions))}")
    _capability(issues, ("buffer_model",), used, lambda n: q["buffer_model"] in n.buffer_models,
                f"the {q['buffer_model']} buffer model", "use buffer_model: traditional")
    if shp is not None:
        _capability(issues, ("shared_headroom_pool",), used, lambda n: n.shared_headroom_pool,
                    "the shared headroom pool", "remove shared_headroom_pool")
    return RoceQos(lossless, cnp, ecn["min_kb"], ecn["max_kb"], ecn["max_probability"], wd["detect_ms"],
                   wd["restore_ms"], wd["action"], q["lossless_weight"], q["buffer_model"],
                   shp["over_subscribe_ratio"] if shp is not None else 0,
                   issues.position(("shared_headroom_pool", "over_subscribe_ratio")) if shp is not None else None)


def _capability(issues: Issues, where: tuple[str, ...], used: Sequence[NosData], has: Callable[[NosData], bool],
                what: str, instead: str) -> None:
    """A buffer feature that some of the fabric's NOSes lack: they size lossless headroom themselves."""
    lacking = [n.name for n in used if not has(n)]
    if not lacking:
        return
    known = [nos.data for nos in systems().values()]
    owners = [n for n in known if has(n)]
    which = "some of this fabric's switches" if len(lacking) < len(used) else "this fabric's switches"
    issues.error(where, f"{what} is {' and '.join(n.title for n in owners)}'s, but {which} run "
                        f"{' and '.join(lacking)}",
                 f"{' and '.join(n.title for n in known if not has(n))} size lossless headroom themselves: {instead}, "
                 f"or nos: {' or '.join(n.name for n in owners)} on every tier")
