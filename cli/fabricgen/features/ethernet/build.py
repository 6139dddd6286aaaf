"""The Ethernet sections of a fabric: its NOS per tier and their software releases, MTUs and, on RoCE, the
lossless class, checked against what each NOS is and can do (its data file in ``nos/``): a NOS on a switch it does
not run on, a release it does not have, a watchdog action, buffer model or shared headroom pool it lacks is an
error at the spec line that asks for it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from fabricgen.core.issues import Issues
from fabricgen.features.ethernet import spectrum_x
from fabricgen.features.ethernet.nos import NosData, systems
from fabricgen.features.feature import BuildContext, per_fabric
from fabricgen.model.cluster import Cluster, Fabric, FabricType, Tier
from fabricgen.model.ethernet import RoceQos, SwitchManagement, TrafficClass
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.infiniband import Secret
from fabricgen.spec.validate import with_defaults

ETHERNET_ONLY = ("nos", "software", "mtu", "host_mtu", "qos", "spectrum_x")
QOS_SCHEMA = "sections/ethernet.schema.json#/$defs/qos"
MANAGEMENT_SCHEMA = "sections/management.schema.json"


def build_sections(context: BuildContext, cluster: Cluster) -> Cluster:
    """Each Ethernet fabric's sections (:func:`build`), then the switches' management baseline; the profiles'
    BlueField-3 modes are checked once the fabrics' lossless classes are known."""
    cluster = management(context, per_fabric(build)(context, cluster))
    spectrum_x.bluefield_modes(context, cluster)
    return cluster


def management(context: BuildContext, cluster: Cluster) -> Cluster:
    """The spec's ``management`` section: the baseline every configured switch gets (schema-validated)."""
    spec = context.data.get("management")
    if spec is None:
        return cluster
    m = with_defaults(spec, MANAGEMENT_SCHEMA)

    def secret(entry: Mapping[str, str] | None) -> Secret | None:
        return Secret(entry.get("env", ""), entry.get("file", "")) if entry is not None else None

    dns, snmp, tacacs = m.get("dns", {}), m.get("snmp", {}), m.get("tacacs", {})
    return replace(cluster, management=SwitchManagement(
        tuple(m.get("ntp", ())), tuple(dns.get("servers", ())), dns.get("domain", ""),
        tuple((s["server"], s["port"]) for s in m.get("syslog", ())), secret(snmp.get("community")),
        snmp.get("location", ""), snmp.get("contact", ""), tuple(tacacs.get("servers", ())),
        secret(tacacs.get("key")), tacacs.get("timeout", 5)))


def build(context: BuildContext, cluster: Cluster, fabric: Fabric) -> Fabric:
    """NOS per tier (checked against each tier's switch model), its software release, MTUs and the RoCE class of
    an Ethernet fabric; an InfiniBand fabric may carry none of them."""
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
    by_tier = _nos_by_tier(issues, fabric, spec.get("nos"))
    if by_tier and "addressing" not in spec:
        issues.error(("nos",), f"switch configs ({', '.join(sorted(set(by_tier.values())))}) need the fabric's "
                               "address plan: loopbacks, routed links and host subnets",
                     "add addressing: {hosts, p2p, loopbacks} (and management for the switches' management "
                     "ports), or remove nos to leave the switches unconfigured")
    software = _software(issues, by_tier, spec.get("software", {}))
    mtu, host_mtu = spec.get("mtu", 9100), spec.get("host_mtu", 9000)
    if host_mtu > mtu:
        issues.error(("host_mtu",), f"host MTU {host_mtu} exceeds the switch MTU {mtu}",
                     "switch ports must carry the hosts' largest frames")
    qos = None
    if fabric.type is FabricType.ROCE:
        used = [systems()[name].data for name in sorted(set(by_tier.values()))]
        qos = _roce_qos(issues.at("qos"), with_defaults(spec.get("qos", {}), QOS_SCHEMA), used)
    return replace(fabric, nos=by_tier, software=software, mtu=mtu, host_mtu=host_mtu, qos=qos,
                   spectrum_x=spectrum_x.build(context, cluster, fabric, spec, issues, by_tier, qos))


def _nos_by_tier(issues: Issues, fabric: Fabric, nos: str | Mapping[str, str] | None) -> Mapping[Tier, str]:
    """The NOS of each tier (a tier left out of a per-tier mapping takes the spine's, then the leaf's, as
    ``switch`` does), each checked against the tier's switch model: a NOS that does not run on it is an error at
    the ``nos`` entry that chose it. No ``nos``: no switch configurations (the plan says so)."""
    if nos is None:
        return MappingProxyType({})
    by_tier: dict[Tier, str] = {}
    refused = set()
    where: tuple[str, ...]
    for tier in Tier:
        if isinstance(nos, str):
            by_tier[tier], where = nos, ("nos",)
        else:  # the schema requires leaf
            key = next(k for k in (tier.value, "spine", "leaf") if k in nos)
            by_tier[tier], where = nos[key], ("nos", key)
        model = fabric.switches[tier]
        data = systems()[by_tier[tier]].data
        if not data.runs_on(model) and (where, model.name) not in refused:
            refused.add((where, model.name))
            issues.error(where, f"{data.title} does not run on the {tier.value} switch {model.name} ({model.vendor})",
                         _runs_on_hint(data, model))
    return MappingProxyType(by_tier)


def _runs_on_hint(data: NosData, model: SwitchModel) -> str:
    """Where the refused NOS runs, and which NOSes run on the model instead."""
    where = " and ".join(filter(None, (
        f"{'/'.join(data.vendors)} switches" if data.vendors else "",
        f"the models {', '.join(data.models)}" if data.models else "")))
    others = [name for name, nos in systems().items() if nos.data.runs_on(model)]
    instead = (f"nos: {' or '.join(others)} runs on {model.name}" if others
               else f"fabricgen writes no NOS for {model.name}")
    return f"{data.title} runs on {where}; {instead}"


def _software(issues: Issues, by_tier: Mapping[Tier, str], given: Mapping[str, str]) -> Mapping[str, str]:
    """The release of every NOS the fabric runs that has releases: the spec's, else the NOS's default."""
    used = sorted(set(by_tier.values()))
    for name, release in sorted(given.items()):
        releases = systems()[name].data.releases if name in systems() else {}
        if name not in used:
            issues.error(("software", name), f"no tier of this fabric runs {name}",
                         f"this fabric runs: {', '.join(used)}" if used else "set nos first")
        elif release not in releases:
            issues.error(("software", name), f"fabricgen does not write {name} {release}",
                         f"releases: {', '.join(releases)}")
    out = {}
    for name in used:
        data = systems()[name].data
        if data.releases:
            chosen = given.get(name, "")
            out[name] = chosen if chosen in data.releases else data.default_release
    return MappingProxyType(out)


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
        _capability(issues, ("shared_headroom_pool",), used, lambda n: bool(n.shared_headroom_pool),
                    "the shared headroom pool", "remove shared_headroom_pool")
        for nos in used:
            if nos.shared_headroom_pool and q["buffer_model"] not in nos.shared_headroom_pool:
                issues.error(("shared_headroom_pool",), f"{nos.title} takes a shared headroom pool of the spec's "
                                                         f"size only in the {' and '.join(nos.shared_headroom_pool)} "
                                                         f"buffer model, not {q['buffer_model']}",
                             f"use buffer_model: {nos.shared_headroom_pool[0]}, or remove shared_headroom_pool "
                             f"(the {q['buffer_model']} model runs each SKU's own buffers)")
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
