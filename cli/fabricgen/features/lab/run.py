"""The ``lab`` commands over a compiled spec and the artifacts ``apply`` wrote to OUT: which fabrics run, what
each is made of (read from OUT: the switches' configuration artifacts through their NOS's read-back, the hosts'
netplan files), and ``up``/``check``/``down`` over the state each keeps under /run/fabricgen/lab/<id>/.

``up`` is idempotent: a lab already running what OUT holds is left as it is; one built from other artifacts (or
another sample) is taken down and rebuilt. ``down`` removes what the state file records, nothing else."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from pathlib import Path

from fabricgen.core.errors import ConfigReadError, LabError
from fabricgen.features.ethernet import lldp
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.lab import check, netns
from fabricgen.features.lab.netplan import HostInterface, host_interfaces
from fabricgen.features.lab.plan import LabFabric, lab_fabric, lab_id, sample_hosts
from fabricgen.model.cluster import Attachment
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import NODE_LEAF, FabricTopology, Topology

RUN_DIR = Path("/run/fabricgen/lab")
MAX_ARTIFACT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class FabricLab:
    """One fabric's lab as OUT describes it, and where its state lives."""

    lab: LabFabric
    switches: Mapping[str, SwitchRouting]
    hosts: Mapping[str, tuple[HostInterface, ...]]
    state_dir: Path
    key: str
    planned: Mapping[str, tuple[IPv4Network, ...]]  # what the address plan has each switch announce
    also_reach: tuple[tuple[IPv4Address, str], ...]  # every switch's loopback and leaf's pod gateway
    left_out: tuple[str, ...] = ()  # sampled hosts without a netplan file for this fabric (BMCs: the site's DHCP)


@dataclass(frozen=True)
class CheckReport:
    fabric: str
    failures: tuple[str, ...]
    notes: tuple[str, ...]
    counts: Mapping[str, int] = field(default_factory=dict)


# Why an MLAG fabric does not run here: its hosts' 802.3ad bonds and the leaves' port-channels need the kernel's
# bonding driver, which this machine's kernel lacks (`ip link add type bond`: "Unknown device type"; no team or vlan
# driver either), and the read-backs do not read MC-LAG or peer links yet.
MLAG_REFUSED = ("this lab cannot run it: LACP needs the kernel's bonding driver (absent here) and the read-backs do "
                "not read MC-LAG, port-channels or peer links yet; its plan and configurations are checked by the "
                "SONiC YANG models and the unit tests instead")


def routed_fabrics(topology: Topology, name: str | None) -> list[FabricTopology]:
    """The Ethernet fabrics whose switches fabricgen configures for BGP (all, or the one named). MLAG fabrics are
    left out (the one named is refused): this lab has no LACP to run them with (see MLAG_REFUSED)."""
    routed = [ft for ft in topology.fabrics if ft.fabric.type.ethernet and ft.fabric.nos and ft.fabric.addressing
              and ft.fabric.addressing.p2p]
    mlag = [ft.fabric.name for ft in routed if ft.fabric.topology.attachment is Attachment.MLAG]
    if name in mlag:
        raise LabError(f"fabric {name!r} pairs its leaves as MLAG: {MLAG_REFUSED}")
    routed = [ft for ft in routed if ft.fabric.name not in mlag]
    names = ", ".join(ft.fabric.name for ft in routed) or "none"
    if name is None:
        if not routed:
            raise LabError("the spec has no routed Ethernet fabric to run")
        return routed
    chosen = [ft for ft in routed if ft.fabric.name == name]
    if not chosen:
        raise LabError(f"fabric {name!r} is not a routed Ethernet fabric of the spec; routed fabrics: {names}")
    return chosen


def _read(path: Path, what: str, problems: list[str]) -> bytes | None:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_ARTIFACT_BYTES + 1)
    except OSError as exc:
        problems.append(f"{what}: cannot read {path} ({exc.strerror or exc}): run `fabricgen apply` first")
        return None
    if len(data) > MAX_ARTIFACT_BYTES:
        problems.append(f"{what}: {path} is larger than {MAX_ARTIFACT_BYTES} bytes")
        return None
    return data


def _switches(ft: FabricTopology, out_dir: Path, problems: list[str]) -> dict[str, SwitchRouting]:
    found = {}
    for sw in ft.switches:
        nos = systems()[ft.fabric.nos[sw.tier]]
        if nos.routing is None:
            problems.append(f"fabric {ft.fabric.name}: {sw.name} runs {nos.data.name}, whose configuration the lab "
                            "cannot read back (its NOS module has no routing read-back)")
            continue
        content = _read(out_dir / "switches" / sw.name / nos.data.config_file(sw.name), sw.name, problems)
        if content is not None:
            try:
                found[sw.name] = nos.routing(sw.name, content)
            except ConfigReadError as exc:
                problems.append(str(exc))
    return found


def _hosts(ft: FabricTopology, out_dir: Path, sampled: Sequence[str], problems: list[str]
           ) -> tuple[dict[str, tuple[HostInterface, ...]], list[str]]:
    netdevs: dict[str, list[str]] = {}
    for link in ft.links:
        if link.tier == NODE_LEAF and link.a.device in sampled and link.nic is not None and link.nic.netdev:
            netdevs.setdefault(link.a.device, []).append(link.nic.netdev)
    found, left_out = {}, []
    for host in sampled:
        folder = out_dir / "hosts" / host
        files = [(str(p), data) for p in sorted(folder.glob("netplan-*.yaml"))
                 if (data := _read(p, host, problems)) is not None]
        try:
            interfaces = host_interfaces(files, netdevs.get(host, ()))
        except ConfigReadError as exc:
            problems.append(str(exc))
            continue
        if any(i.addresses for i in interfaces):
            found[host] = interfaces
        else:
            left_out.append(host)
    return found, left_out


def planned_networks(topology: Topology, ft: FabricTopology) -> dict[str, tuple[IPv4Network, ...]]:
    """Each switch's prefixes by the address plan: its loopback, the host subnets and pod ranges it is the gateway
    of."""
    plan = topology.addresses.get(ft.fabric.name)
    out: dict[str, tuple[IPv4Network, ...]] = {}
    for sw in ft.switches:
        loopback = [IPv4Interface(plan.loopbacks[sw.name]).network] if plan and sw.name in plan.loopbacks else []
        subnets = [IPv4Network(h.network) for h in (plan.hosts if plan else ()) if h.leaf == sw.name]
        subnets += [IPv4Network(p.network) for p in (plan.pods if plan else ()) if p.leaf == sw.name]
        out[sw.name] = (*loopback, *subnets)
    return out


def _switch_targets(topology: Topology, ft: FabricTopology) -> tuple[tuple[IPv4Address, str], ...]:
    """What every host must reach on the switches: each switch's loopback (the hosts route the loopback pool to
    their leaf) and each leaf's pod gateway."""
    plan = topology.addresses.get(ft.fabric.name)
    if plan is None:
        return ()
    loopbacks = [(IPv4Address(ip), f"{name}'s loopback {ip}") for name, ip in plan.loopbacks.items()]
    return (*loopbacks, *((IPv4Address(p.gateway), f"{p.leaf}'s pod gateway {p.gateway}") for p in plan.pods))


def _key(sample: int, lab: LabFabric, switches: Mapping[str, SwitchRouting],
         hosts: Mapping[str, tuple[HostInterface, ...]]) -> str:
    """What a running lab was built from: the sample and a digest of everything configured."""
    digest = hashlib.sha256(repr((lab, sorted(switches.items()), sorted(hosts.items()))).encode()).hexdigest()
    return f"{sample}:{digest[:16]}"


def labs(topology: Topology, out_dir: Path, fabric: str | None, sample: int) -> list[FabricLab]:
    """Each chosen fabric's lab from OUT; one ConfigReadError with every problem found."""
    if sample < 1:
        raise LabError(f"--sample is {sample}: give at least one host per leaf")
    nodes = {n.name: n for n in topology.cluster.nodes}
    cluster = topology.cluster.metadata.name
    problems: list[str] = []
    out = []
    for ft in routed_fabrics(topology, fabric):
        switches = _switches(ft, out_dir, problems)
        hosts, left_out = _hosts(ft, out_dir, sample_hosts(ft, nodes, sample), problems)
        if len(switches) != len(ft.switches):
            continue
        try:
            lab = lab_fabric(cluster, ft, switches, list(hosts), topology.cables)
        except ConfigReadError as exc:
            problems.append(str(exc))
            continue
        out.append(FabricLab(lab, switches, hosts, RUN_DIR / lab_id(cluster, ft.fabric.name),
                             _key(sample, lab, switches, hosts), planned_networks(topology, ft),
                             _switch_targets(topology, ft), tuple(left_out)))
    if problems:
        raise ConfigReadError("\n".join(problems))
    return out


def up(fl: FabricLab, timeout_s: float = 120) -> str:
    """Build one fabric's lab unless it runs already as OUT describes it; wait for its sessions. What was done."""
    netns.require_tools()
    found = netns.recorded(fl.state_dir)
    if found is not None:
        namespaces, key = found
        if key == fl.key and sorted(namespaces) == sorted(fl.lab.every_namespace()) and \
                netns.running(fl.state_dir, namespaces):
            return "already up with these artifacts: unchanged"
        netns.down(fl.state_dir)
    start = time.monotonic()
    netns.up(fl.lab, fl.switches, fl.state_dir, fl.hosts, fl.key)
    expected = {name: sum(not n.shutdown for n in s.neighbors) for name, s in fl.switches.items()}
    settled = netns.wait_established(fl.lab, fl.state_dir, expected, timeout_s)
    took = time.monotonic() - start
    return (f"up in {took:.1f} s: {len(fl.lab.namespaces)} switches, {len(fl.lab.host_namespaces)} hosts, "
            f"{len(fl.lab.veths)} cables" + ("" if settled else f"; not every session up after {timeout_s:.0f} s"))


def _running(fl: FabricLab) -> None:
    found = netns.recorded(fl.state_dir)
    if found is None or not netns.running(fl.state_dir, found[0]):
        raise LabError(f"fabric {fl.lab.fabric}: no lab runs (run `fabricgen lab up`)")
    if found[1] != fl.key:
        raise LabError(f"fabric {fl.lab.fabric}: the lab runs other artifacts or another --sample than OUT and "
                       "these options give (run `fabricgen lab up` again)")


def recorded_sample(topology: Topology, fabric: str | None) -> int | None:
    """The --sample the running lab of the first chosen fabric was built with."""
    for ft in routed_fabrics(topology, fabric):
        found = netns.recorded(RUN_DIR / lab_id(topology.cluster.metadata.name, ft.fabric.name))
        if found is not None and found[1].partition(":")[0].isdigit():
            return int(found[1].partition(":")[0])
    return None


def run_check(fl: FabricLab, settle_s: float = 60) -> CheckReport:
    """Every check over one running lab (sessions, routes, reachability), waiting up to ``settle_s`` for BGP."""
    netns.require_tools()
    _running(fl)
    expected_sessions = {name: sum(not n.shutdown for n in s.neighbors) for name, s in fl.switches.items()}
    netns.wait_established(fl.lab, fl.state_dir, expected_sessions, settle_s)
    failures = list(check.unsessioned_cables(fl.lab, fl.switches))
    failures += check.unannounced(fl.lab, fl.switches, fl.planned)
    failures += check.session_failures(fl.lab, fl.switches, fl.state_dir)
    expected = check.expected_routes(fl.switches, fl.planned)
    failures += check.narrowed(fl.switches, expected)
    deadline, seen, same = time.monotonic() + settle_s, None, 0
    while True:  # the RIB settles a moment after the sessions: until no failure, or the same ones three times
        routes = list(check.route_failures(fl.lab, fl.switches, fl.state_dir, expected))
        same = same + 1 if routes == seen else 0
        if not routes or same >= 2 or time.monotonic() > deadline:
            break
        seen = routes
        time.sleep(1)
    failures += routes
    failures += check.reach_failures(fl.lab, fl.hosts, fl.also_reach)
    notes = list(check.capped(fl.switches, expected))
    notes += [f"{h}: no netplan file for fabric {fl.lab.fabric} in OUT: not in the lab" for h in fl.left_out]
    sessions = sum(expected_sessions.values())
    counts = {"switches": len(fl.lab.namespaces), "hosts": len(fl.lab.host_namespaces), "sessions": sessions,
              "routes": sum(len(v) for v in expected.values()),
              "addresses": sum(len(i.addresses) for h in fl.hosts.values() for i in h)}
    return CheckReport(fl.lab.fabric, tuple(failures), tuple(notes), counts)


def lldp_tables(fl: FabricLab, timeout_s: float = 30) -> dict[str, str]:
    """Every lab device's LLDP neighbours as its lldpd writes them (``lldpctl -f json``), device name -> text: each
    lldpd is made to send at once, then the tables are read until every cabled interface that is up at both ends
    (a port shut on either end carries nothing) has a neighbour, or ``timeout_s`` has passed (an interface still
    without one is then ``missing`` to verify)."""
    netns.require_tools()
    _running(fl)
    devices = {**fl.lab.namespaces, **fl.lab.host_namespaces}
    for namespace in devices.values():
        netns.lldp_update(fl.state_dir, namespace)
    up = {namespace: netns.admin_up(namespace) for namespace in devices.values()}
    wanted: dict[str, set[str]] = {namespace: set() for namespace in devices.values()}
    for v in fl.lab.veths:
        if v.a_interface in up[v.a_namespace] and v.z_interface in up[v.z_namespace]:
            wanted[v.a_namespace].add(v.a_interface)
            wanted[v.z_namespace].add(v.z_interface)
    deadline = time.monotonic() + timeout_s
    while True:
        tables = {device: netns.lldp_neighbors(fl.state_dir, namespace) for device, namespace in devices.items()}
        seen = {device: {n.local_port for n in lldp.parse(device, text)} for device, text in tables.items()}
        short = {device for device, namespace in devices.items() if not wanted[namespace] <= seen[device]}
        if not short or time.monotonic() > deadline:
            return tables
        time.sleep(1)
        # a port made since the last update (a cable re-plugged) waits for lldpd's next 30 s send: send now
        peers = {v.z_namespace if v.a_namespace == devices[d] else v.a_namespace for d in short
                 for v in fl.lab.veths if devices[d] in (v.a_namespace, v.z_namespace)}
        for namespace in sorted(peers):
            netns.lldp_update(fl.state_dir, namespace)


def down(topology: Topology, fabric: str | None) -> dict[str, list[str]]:
    """Remove each chosen fabric's lab (its recorded namespaces and daemons): fabric -> namespaces removed."""
    netns.require_tools()
    cluster = topology.cluster.metadata.name
    return {ft.fabric.name: netns.down(RUN_DIR / lab_id(cluster, ft.fabric.name))
            for ft in routed_fabrics(topology, fabric)}
