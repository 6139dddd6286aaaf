"""Checks of an Ethernet fabric over the compiled topology (the rest of its rules are build-time spec checks)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from fabricgen.core.errors import Finding, Severity
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.feature import fabric_warning
from fabricgen.model.cluster import Attachment, Tier
from fabricgen.model.topology import Topology


def mlag_image(topology: Topology) -> Iterator[Finding]:
    """Where an MLAG pair's NOS image must carry something for it (SONiC: the iccpd container), say so at plan:
    without it the leaves come up as lone routed leaves and the hosts' LACP bonds never aggregate across them."""
    for ft in topology.fabrics:
        nos = ft.fabric.nos.get(Tier.LEAF, "")
        if ft.fabric.topology.attachment is not Attachment.MLAG or not nos:
            continue
        data = systems()[nos].data
        if data.mlag_requires:
            yield fabric_warning(ft.fabric, "mlag-nos", ft.fabric.name,
                                 f"fabric {ft.fabric.name}'s {data.title} leaves run their MLAG pairs only on "
                                 f"{data.mlag_requires}", "check the image before deploying")


def unconfigured_switches(topology: Topology) -> Iterator[Finding]:
    """An Ethernet fabric without ``nos`` gets no switch configuration: say so in the plan, not by silence."""
    for ft in topology.fabrics:
        if ft.fabric.type.ethernet and not ft.fabric.nos and ft.switches:
            yield fabric_warning(ft.fabric, "no-switch-configs", ft.fabric.name,
                                 f"no switch configs: fabric {ft.fabric.name} has no nos, so its {len(ft.switches)} "
                                 "switches get no configuration", "set nos: sonic, nvue or eos (with an addressing "
                                 "plan) to configure them")


def unrouted_management(topology: Topology) -> Iterator[Finding]:
    """The management baseline needs a path to its servers. With a management pool and gateway the switches use
    their management port in the management VRF; without them the services run in the default VRF, whose only
    routes are the fabric's own eBGP (no border, no default route fabricgen writes): they can reach no server
    outside the fabric. Say so at plan instead of rendering services that cannot work."""
    m = topology.cluster.management
    if m is None:
        return
    servers = sorted({*m.ntp, *m.dns_servers, *(server for server, _ in m.syslog), *m.tacacs_servers})
    if not servers:
        return
    for ft in topology.fabrics:
        fabric, addressing = ft.fabric, ft.fabric.addressing
        if not (fabric.type.ethernet and fabric.nos and ft.switches and addressing is not None):
            continue
        if addressing.management and addressing.management_gateway:
            continue
        missing = "management_gateway" if addressing.management else "management pool"
        shown = ", ".join(servers[:4]) + (f" and {len(servers) - 4} more" if len(servers) > 4 else "")
        yield fabric_warning(fabric, "management-unrouted", fabric.name,
                             f"the management services of fabric {fabric.name}'s {len(ft.switches)} switches "
                             f"({shown}) run in the default VRF, but the fabric has no {missing} and fabricgen "
                             "writes no border or default route there: NTP never syncs, syslog and TACACS+ are "
                             "unreachable (login falls back to local accounts)",
                             "give the fabric addressing.management and management_gateway (the switches' "
                             "management ports on the site's OOB network), or route its loopbacks to those "
                             "servers outside fabricgen")


def shared_headroom_pool(topology: Topology) -> Iterator[Finding]:
    """over_subscribe_ratio at most the ports of each switch, all of them lossless (SONiC's bound: sonic-utilities
    ``config buffer shared_headroom_pool over-subscribe-ratio`` takes 0..len(PORT)). A larger ratio sizes the pool
    below one port's xoff: even one pausing port can overrun it and drop lossless traffic."""
    for ft in topology.fabrics:
        qos = ft.fabric.qos
        if qos is None or not qos.over_subscribe_ratio:
            continue
        ports = Counter(end.device for link in ft.links for end in (link.a, link.z))
        short = sorted((count, sw.name) for sw in ft.switches if (count := ports[sw.name]) < qos.over_subscribe_ratio)
        if not short:
            continue
        fewest, name = short[0]
        others = f" (and {len(short) - 1} more switches)" if len(short) > 1 else ""
        yield Finding(Severity.ERROR, "shared-headroom-pool", name,
                      f"over_subscribe_ratio {qos.over_subscribe_ratio} is above its {fewest} lossless ports{others}: "
                      "the shared headroom pool would hold less than one port's xoff",
                      f"use over_subscribe_ratio {fewest} or less: SONiC's own CLI takes at most the port count",
                      qos.shared_headroom_pool_position or ft.fabric.position)
