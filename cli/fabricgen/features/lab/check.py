"""``lab check``'s findings over a running lab, each naming what does not hold and where (switch, port, cable).

- sessions: every session the read-back configures (not shut down) Established in FRR, with FRR's last
  NOTIFICATION as the why; every planned cable between two switches carries a session on both ends;
- routes: what each switch must learn and over how many next hops, from the sessions the read-back configures and
  eBGP's own rules (:func:`expected_routes`), against FRR's RIB: every leaf's prefixes on every other switch over
  every session that carries a shortest path (a leaf: all its uplink sessions), a prefix eBGP's loop prevention
  drops (a spine's loopback on the other spines of its AS) absent;
- reachability: every sampled host's every address reaches every other sampled host's, its gateways, every
  switch's loopback and every leaf's pod gateway, with a
  ping of the planned MTU and DF set; one byte more is refused (DF honoured, nothing fragments).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path

from fabricgen.features.lab import netns
from fabricgen.features.lab.frr import FRR_MULTIPATH_LIMIT
from fabricgen.features.lab.netplan import HostInterface
from fabricgen.features.lab.plan import LabFabric
from fabricgen.model.routing import BgpNeighbor, SwitchRouting


def _why(peer: Mapping[str, object]) -> str:
    """FRR's ``lastNotificationReason`` ("OPEN Message Error/Bad Peer AS") and ``lastResetDueTo``, where it has them."""
    reasons = [str(peer[key]) for key in ("lastNotificationReason", "lastResetDueTo") if peer.get(key)]
    return f" (last NOTIFICATION: {', '.join(reasons)})" if reasons else ""


def port_of(switch: SwitchRouting, address: IPv4Address) -> str:
    """The port whose subnet holds ``address`` (a neighbor's), or "" when none does."""
    return next((p.name for p in switch.ports for a in p.addresses if address in a.network), "")


def _where(lab: LabFabric, switch: SwitchRouting, address: IPv4Address) -> str:
    """" on <port> (cable <label>)" for the port facing ``address``."""
    port = port_of(switch, address)
    if not port:
        return ""
    cable = lab.cable_at(lab.namespaces[switch.name], port)
    return f" on {port}" + (f" (cable {cable.label})" if cable is not None and cable.label else "")


def session_failures(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path) -> Iterator[str]:
    """Every configured session that is not Established, by switch, peer, the peer's address and AS, the local
    port and its cable, and why."""
    for name, namespace in lab.namespaces.items():
        answer = netns.vtysh(state_dir, namespace, "show bgp neighbors json")
        peers = answer if isinstance(answer, dict) else {}
        for n in switches[name].neighbors:
            peer = peers.get(str(n.address))
            state = str(peer.get("bgpState", "")) if isinstance(peer, dict) else "not configured in FRR"
            if not n.shutdown and state != "Established":
                why = _why(peer) if isinstance(peer, dict) else ""
                yield (f"fabric {lab.fabric}: {name}: BGP session to {n.description or n.address} ({n.address}, "
                       f"AS {n.remote_asn}){_where(lab, switches[name], n.address)} is {state}{why}")


def _owners(switches: Mapping[str, SwitchRouting]) -> dict[IPv4Address, str]:
    return {a.ip: s.name for s in switches.values() for p in s.ports for a in p.addresses}


def unsessioned_cables(lab: LabFabric, switches: Mapping[str, SwitchRouting]) -> Iterator[str]:
    """Every planned cable between two switches without a BGP session configured on both ends over it (pure)."""
    by_ns = {ns: switches[name] for name, ns in lab.namespaces.items()}
    for v in lab.veths:
        if v.a_namespace not in by_ns or v.z_namespace not in by_ns:
            continue
        ends = ((by_ns[v.a_namespace], v.a_interface, by_ns[v.z_namespace], v.z_interface),
                (by_ns[v.z_namespace], v.z_interface, by_ns[v.a_namespace], v.a_interface))
        for here, port, there, far in ends:
            far_ips = {a.ip for p in there.ports if p.name == far for a in p.addresses}
            if not any(n.address in far_ips and not n.shutdown and port_of(here, n.address) == port
                       for n in here.neighbors):
                yield (f"fabric {lab.fabric}: {here.name}: no BGP session on {port} to {there.name} {far} "
                       f"(cable {v.label or '?'})")


@dataclass(frozen=True)
class Expected:
    """What one switch should hold for one prefix another switch originates: the neighbors (sessions) it learns
    it over; none: eBGP drops every path to it (the switch must not learn it)."""

    origin: str
    via: tuple[BgpNeighbor, ...]

    def width(self, switch: SwitchRouting) -> int:
        """The next hops FRR installs: one per session, up to the NOS's maximum-paths and the installed FRR's limit."""
        return min(len(self.via), switch.maximum_paths or FRR_MULTIPATH_LIMIT, FRR_MULTIPATH_LIMIT)


def _sessions(switches: Mapping[str, SwitchRouting]) -> dict[str, list[tuple[BgpNeighbor, str]]]:
    """Each switch's sessions that can come up in the lab: the peer is a lab switch configured back to one of this
    switch's addresses, and each side expects the other's ASN."""
    owners = _owners(switches)
    out: dict[str, list[tuple[BgpNeighbor, str]]] = {name: [] for name in switches}
    for name, s in switches.items():
        mine = {a.ip for p in s.ports for a in p.addresses}
        for n in s.neighbors:
            peer = switches.get(owners.get(n.address, ""))
            if n.shutdown or peer is None or n.remote_asn != peer.asn:
                continue
            if any(b.address in mine and b.remote_asn == s.asn and not b.shutdown for b in peer.neighbors):
                out[name].append((n, peer.name))
    return out


def unannounced(lab: LabFabric, switches: Mapping[str, SwitchRouting],
                planned: Mapping[str, Sequence[IPv4Network]]) -> Iterator[str]:
    """Every prefix the plan gives a switch (its loopback, its host subnets) that its configuration does not
    originate into BGP (pure)."""
    for name, prefixes in planned.items():
        for prefix in prefixes:
            if prefix not in switches[name].networks:
                yield f"fabric {lab.fabric}: {name}: announces no network {prefix}, which the plan gives it"


def expected_routes(switches: Mapping[str, SwitchRouting], planned: Mapping[str, Sequence[IPv4Network]] | None = None
                    ) -> dict[str, dict[IPv4Network, Expected]]:
    """Per switch, per prefix the plan has another switch originate (``planned``; default: what each configuration
    originates), the sessions eBGP installs it over (pure).

    Each switch advertises its best path with its ASN prepended; a switch drops a path carrying its own ASN more
    often than its allowas-in; it installs every session offering a shortest path (multipath; without
    multipath-relax only those of the best neighbor AS). Ties between equally short paths advertise the lowest AS
    sequence, as bestpath's router-id tie-break would pick one; in a two-tier Clos all tie alike."""
    sessions = _sessions(switches)
    out: dict[str, dict[IPv4Network, Expected]] = {name: {} for name in switches}
    for origin, o in switches.items():
        originated = tuple(planned.get(origin, ())) if planned is not None else o.networks
        best: dict[str, tuple[int, ...]] = {origin: ()}
        frontier = [origin]
        while frontier:
            offers: dict[str, list[tuple[tuple[int, ...], BgpNeighbor]]] = {}
            for x in frontier:
                path = (switches[x].asn, *best[x])
                for y, y_sessions in sessions.items():
                    if y in best:
                        continue
                    for n, peer in y_sessions:
                        if peer == x and path.count(switches[y].asn) <= switches[y].allowas_in:
                            offers.setdefault(y, []).append((path, n))
            for y, got in offers.items():
                path = min(p for p, _ in got)
                best[y] = path
                via = [n for p, n in got if switches[y].multipath_relax or p[0] == path[0]]
                for prefix in originated:
                    out[y][prefix] = Expected(origin, tuple(sorted(via, key=lambda n: n.address)))
            frontier = sorted(offers)
        for y in switches:
            if y not in best:
                for prefix in originated:
                    out[y][prefix] = Expected(origin, ())
    return out


def _bgp_nexthops(answer: object, prefix: IPv4Network) -> set[IPv4Address] | None:
    """The active next hops of FRR's BGP route to ``prefix`` in a ``show ip route json`` answer; None: no route."""
    entries = answer.get(str(prefix), []) if isinstance(answer, dict) else []
    for e in entries:
        if isinstance(e, dict) and e.get("protocol") == "bgp" and e.get("selected"):
            return {IPv4Address(h["ip"]) for h in e.get("nexthops", []) if h.get("active") and h.get("ip")}
    return None


def route_failures(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path,
                   expected: Mapping[str, Mapping[IPv4Network, Expected]]) -> Iterator[str]:
    """Every prefix a switch holds otherwise than :func:`expected_routes` says: missing, over too few next hops
    (each missing one named by port and cable), or learned where eBGP must drop it."""
    for name, namespace in lab.namespaces.items():
        s = switches[name]
        answer = netns.vtysh(state_dir, namespace, "show ip route json")
        for prefix, want in sorted(expected[name].items()):
            got = _bgp_nexthops(answer, prefix)
            what = f"fabric {lab.fabric}: {name}: {prefix} (from {want.origin})"
            if not want.via:
                if got is not None:
                    yield f"{what} is learned over {len(got)} next hops; eBGP must drop every path to it here"
                continue
            width = want.width(s)
            if got is None:
                yield f"{what} is missing; expected over {width} sessions"
            elif len(got) < width:
                missing = [n for n in want.via if n.address not in got]
                named = ", ".join(f"{n.description or n.address} {n.address}{_where(lab, s, n.address)}"
                                  for n in missing[:4])
                more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
                yield f"{what} has {len(got)} next hops, expected {width}: missing {named}{more}"


def narrowed(switches: Mapping[str, SwitchRouting], expected: Mapping[str, Mapping[IPv4Network, Expected]]
             ) -> Iterator[str]:
    """Every switch whose configured maximum-paths is below the equal-cost sessions eBGP offers it for a prefix:
    the lab would install (and accept) that many next hops while the planned uplinks stay idle, so it is a failure,
    not a width to check against (NVUE ``multipaths ebgp 1``, EOS without ``maximum-paths``: its default is 1)."""
    for name, prefixes in sorted(expected.items()):
        limit = switches[name].maximum_paths
        wide = max((len(e.via) for e in prefixes.values()), default=0)
        if limit and limit < wide:
            example = next(p for p, e in sorted(prefixes.items()) if len(e.via) == wide)
            yield (f"{name}: maximum-paths {limit} is below the {wide} equal-cost sessions eBGP offers (e.g. for "
                   f"{example}): ECMP narrows to {limit} of the planned paths")


def capped(switches: Mapping[str, SwitchRouting], expected: Mapping[str, Mapping[IPv4Network, Expected]]
           ) -> Iterator[str]:
    """Notes (not failures) where the design wants more next hops than the installed FRR installs."""
    for name, prefixes in expected.items():
        wide = max((len(e.via) for e in prefixes.values()), default=0)
        if wide > FRR_MULTIPATH_LIMIT:
            yield (f"{name}: up to {wide} equal paths, FRR here installs {FRR_MULTIPATH_LIMIT} (its MULTIPATH_NUM; "
                   "SONiC's FRR takes 514): checked to that width")


@dataclass(frozen=True)
class _Source:
    host: str
    interface: HostInterface
    address: IPv4Address


def _sources(hosts: Mapping[str, Sequence[HostInterface]]) -> list[_Source]:
    return [_Source(h, i, a.ip) for h, interfaces in hosts.items() for i in interfaces for a in i.addresses]


def reach_failures(lab: LabFabric, hosts: Mapping[str, Sequence[HostInterface]],
                   also: Sequence[tuple[IPv4Address, str]] = ()) -> Iterator[str]:
    """Every source address of every sampled host to every address of every other sampled host, to its own
    gateways and to ``also`` (the switches' loopbacks, the leaves' pod gateways), at its interface's MTU with DF
    set; and one byte above it from each source, which must fail."""
    sources = _sources(hosts)
    jobs: list[tuple[netns.Ping, bool, str]] = []
    for src in sources:
        namespace = lab.host_namespaces[src.host]
        mtu = src.interface.mtu
        gateways = sorted({r.via for r in src.interface.routes if r.via is not None})
        targets = [(g, f"its gateway {g}") for g in gateways]
        targets += [(d.address, f"{d.host} {d.interface.name} {d.address}") for d in sources if d.host != src.host]
        targets += list(also)
        jobs += [(netns.Ping(namespace, src.address, t, mtu), True, what) for t, what in targets]
        if targets:
            jobs.append((netns.Ping(namespace, src.address, targets[0][0], mtu + 1), False, targets[0][1]))
    answers = netns.pings([j for j, _, _ in jobs])
    # a first echo can die in a neighbour table still resolving (its queue holds few jumbo frames): once more,
    # three echoes, before an unanswered one counts
    again = [n for n, ((_, should, _), answered) in enumerate(zip(jobs, answers, strict=True))
             if should and not answered]
    for n, answered in zip(again, netns.pings([jobs[n][0] for n in again], count=3), strict=True):
        answers[n] = answered
    for (job, should, what), answered in zip(jobs, answers, strict=True):
        if answered == should:
            continue
        src = next(s for s in sources if s.address == job.source and lab.host_namespaces[s.host] == job.namespace)
        cable = lab.cable_at(job.namespace, src.interface.primary or src.interface.name)
        via = f" (first cable {cable.label})" if cable is not None and cable.label else ""
        verdict = "no answer to" if should else "an answer to a packet above the MTU,"
        yield (f"fabric {lab.fabric}: {src.host} {src.interface.name} {job.source} -> {what}: {verdict} a "
               f"{job.size}-byte ping with DF set{via}")
