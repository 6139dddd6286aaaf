"""Target ``nvue``: NVIDIA Cumulus Linux switches configured through NVUE, one pair of files per switch.

For every switch whose NOS is ``nvue`` on an Ethernet or RoCE fabric with an address plan:

- ``switches/<switch>/startup.yaml``: the persistent NVUE configuration (``/etc/nvue.d/startup.yaml``), a one-item
  list ``- set: {...}`` whose tree mirrors the ``nv set`` command paths;
- ``switches/<switch>/nv-commands.txt``: the same settings as ``nv set`` commands, one per line, each group preceded
  by comment lines saying why, ending with ``nv config apply -y``.

Both files come from one list of settings (a command path and its value), so they cannot drift apart.

Syntax targets the Cumulus Linux 5.9 object model (also valid through 5.14): ``enable on`` switches, ``ip address``,
``link breakout <n>x`` (5.4+), ``qos pfc default-global cable-length`` (5.4+; ``qos roce cable-length`` in 5.3 and
earlier) and the PFC watchdog (5.6+). Cumulus Linux 5.15 renamed ``enable on`` to ``state enabled`` (``qos roce
state enabled``, ``router bgp state enabled``) and ``interface <if> ip address`` to ``ipv4 address``.

MLAG pair (``attachment: mlag``), as Cumulus Linux 5.9's "Multi-Chassis Link Aggregation - MLAG" and "Virtual Router
Redundancy - VRR" pages configure it (their startup.yaml dumps): each host bond a ``bond<MLAG id>`` of its one port
(``bond member``, ``bond mlag id``, ``bond lacp-rate`` as the host's), an access port of the host VLAN; the peer link
the ``peerlink`` bond (type peerlink) of the peer-link ports with its ``peerlink.4094`` subinterface; ``mlag``
with the pair's system MAC (``mac-address``, from NVIDIA's reserved 44:38:39:ff:xx:xx block, one per pair), ``backup``
the peer's loopback ("with routed uplinks, use the peer switch loopback address") and ``peer-ip linklocal``; the
SVI its own address and the pair's gateway as ``ip vrr address`` (``vrr enable on``, ``vrr state up`` and ``router
vrr enable on``, as the VRR page's startup.yaml dumps hold them: "the VLAN interface must have a
unique IP address for both the physical and virtual interface"). Both leaves announce the pair subnet.

Port naming rule (NVUE): a cage running as one port is ``swp<cage>``; a cage split into n ports (fabricgen port
name ``<cage>/<lane>``, lane 1..n) is set to ``link breakout <n>x`` on ``swp<cage>`` and its ports are
``swp<cage>s<lane-1>`` (``1/1`` -> ``swp1s0``, ``1/2`` -> ``swp1s1``). Cages count from 1 across the model's port
groups, as on the front panel.

Sources (NVIDIA, docs.nvidia.com/networking-ethernet-software): cumulus-linux-59 "Quality of Service" (PFC,
PFC watchdog, ECN, egress queues and scheduler), "RDMA over Converged Ethernet - RoCE" (defaults and how to move
the RoCE priority), "Switch Port Attributes" (breakout), BGP "Configuration Example" (startup.yaml dumps), and the
NVUE command reference (nvue-reference, QoS and Interface pages).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, NamedTuple

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.templating import render_template
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.ethernet import block_yaml
from fabricgen.features.ethernet.nos import Nos, PortSetting, nos_data
from fabricgen.features.ethernet.nos.nvue_routing import routing
from fabricgen.features.ethernet.secrets import management_secrets
from fabricgen.features.ethernet.switch_view import (
    BGP_HOLD_S,
    BGP_KEEPALIVE_S,
    HOST_VLAN,
    PortView,
    SwitchView,
    nos_switch_views,
)
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric, FabricType
from fabricgen.model.ethernet import RoceQos, SpectrumX
from fabricgen.model.hardware import SwitchModel
from fabricgen.model.topology import Topology
from fabricgen.spec.catalog import fastest_at

DATA = nos_data("nvue")

BRIDGE = str(DATA.routing["bridge"])  # NVUE's default bridge domain
ON = "on"  # NVUE's literal; a YAML 1.1 loader reads a bare `on` as True, so it is dumped quoted

# NVUE's RoCE lossless defaults (cumulus-linux-59 RoCE page, "Default RoCE Mode Configuration"; QoS page, "Trust
# DSCP"): DSCP d -> switch priority d // 8, switch priority 3 -> TC 3 (RoCE, DWRR 50 %), 6 -> TC 6 (CNP, strict),
# every other priority -> TC 0 (DWRR 50 %), PFC on switch priority 3, ECN marking on TC 3.
ROCE_TC = 3
CNP_TC = 6
DEFAULT_PFC_PRIORITY = 3
DEFAULT_SP_TO_TC = {sp: ROCE_TC if sp == 3 else CNP_TC if sp == 6 else 0 for sp in range(8)}
DEFAULT_LOSSLESS_WEIGHT = 50
KB = 1024  # the spec's ECN KB, in bytes (the SONiC target's reading too)
MTU_RANGE = (552, 9216)  # `nv set interface <if> link mtu`
BREAKOUTS = (2, 4, 8)  # `link breakout 1x|2x|4x|8x`; 1x is an unsplit cage

_TOKEN = re.compile(r"^[A-Za-z0-9_.:/@+-]+$")  # command words need no shell or NVUE quoting
_HOSTNAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")

Value = int | str


class Setting(NamedTuple):
    """One ``nv set`` command: the path of words after ``nv set``; ``value`` None means the path ends in a
    collection key (``ip address 10.0.0.1/32``), stored as ``{}`` in startup.yaml. (A tuple: a large fabric makes
    close to a million of them.)"""

    path: tuple[str, ...]
    value: Value | None = None

    @property
    def command(self) -> str:
        words = [*self.path] if self.value is None else [*self.path, str(self.value)]
        return "nv set " + " ".join(words)


@dataclass
class Block:
    """Settings that belong together, with the comment lines that explain them."""

    comments: list[str]
    settings: list[Setting] = field(default_factory=list)

    def add(self, *path: str | int, value: Value | None = None) -> None:
        self.settings.append(Setting(tuple(map(str, path)), value))

    @property
    def commands(self) -> list[str]:
        return [s.command for s in self.settings]


# -- ports -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NvPort:
    name: str            # swp1s0
    cage: int            # 1, the cage the port is in (swp1 is the cage of a split port)
    breakout: int        # ports the cage is split into (1 = not split)
    port: PortView


def nv_port(model: SwitchModel, port: PortView) -> NvPort:
    """NVUE name of a port: ``swp<cage>`` or, on a split cage, ``swp<cage>s<lane-1>`` (see the module rule)."""
    cage = int(port.name.partition("/")[0])
    per_cage = model.cage_group(cage).per_cage(port.speed) if "/" in port.name and cage >= 1 else 1
    return NvPort(_name(model, port.name, per_cage, f" at {port.speed}"), cage, per_cage, port)


def port_name(model: SwitchModel, name: str, per_cage: int) -> str:
    """NVUE name of fabricgen port ``name`` on a cage split into ``per_cage`` ports (see the module rule)."""
    return _name(model, name, per_cage, "")


def _name(model: SwitchModel, name: str, per_cage: int, at: str) -> str:
    cage_text, _, lane_text = name.partition("/")
    cage = int(cage_text)
    if cage < 1:
        raise ValueError(f"port {name}: cages count from 1")
    if not lane_text:
        return DATA.interface("whole", cage=cage)
    lane = int(lane_text)
    if per_cage not in BREAKOUTS or not 1 <= lane <= per_cage:
        raise ValueError(f"{model.name} port {name}{at}: no NVUE breakout gives lane {lane} of {per_cage}")
    return DATA.interface("split", cage=cage, sub=lane - 1)


def _token(text: str, what: str) -> str:
    if not _TOKEN.fullmatch(text):
        raise ValueError(f"{what} {text!r} is not a plain word (letters, digits, _ . : / -)")
    return text


# -- QoS -------------------------------------------------------------------------------------------------------
def cable_length_m(ports: Iterable[PortView]) -> int:
    """The one PFC cable length of a switch: its longest port cable, rounded up to whole metres (1..100000)."""
    longest = max((p.cable_m for p in ports), default=0.0)
    return min(max(1, math.ceil(longest)), 100_000)


def watchdog_timers(qos: RoceQos) -> tuple[int, int]:
    """(polling-interval ms, robustness) for the spec's detection and restoration times.

    NVUE mitigates a storm after ``robustness`` polling intervals of continuous pause and restores after one
    polling interval without pause frames: detection = interval x robustness, restoration = interval. Detection is
    kept; the interval is the restoration time, but no longer than detection (range 100..5000 ms, robustness
    1..1000 per NVIDIA's watchdog notes).
    """
    interval = min(max(min(qos.pfcwd_restore_ms, qos.pfcwd_detect_ms), 100), 5000)
    robustness = min(max(1, round(qos.pfcwd_detect_ms / interval)), 1000)
    return interval, robustness


def _qos_blocks(view: SwitchView, qos: RoceQos, ports: list[NvPort]) -> Iterator[Block]:
    ll, cnp = qos.lossless, qos.cnp
    if ll.priority == cnp.priority:
        raise ValueError(f"{view.name}: lossless and CNP classes share priority {ll.priority}")
    if qos.pfcwd_action not in DATA.pfc_watchdog_actions:  # the build refuses it first (nvue.yaml)
        raise ValueError(f"{view.name}: PFC watchdog action {qos.pfcwd_action!r} has no NVUE equivalent (NVUE's "
                         "watchdog always drops on the stormed queue); use action: drop for NVUE switches")
    roce = Block([
        "RoCE lossless: PFC plus ECN, trust DSCP/PCP, RoCE on TC 3 (DWRR), CNP on TC 6 (strict), PFC on the RoCE",
        "switch priority, RoCE buffer pool. `nv set qos roce` equals `nv set qos roce mode lossless`; 5.15+ spells",
        "the switch `qos roce state enabled`.",
    ])
    roce.add("qos", "roce", "enable", value=ON)
    roce.add("qos", "roce", "mode", value="lossless")
    yield roce

    # The class mapping: only what differs from NVUE's RoCE defaults, in the order NVIDIA's "Change RoCE
    # Configuration" example uses (pfc switch-priority, egress-queue-mapping, trust, dscp -> switch-priority).
    mapping = Block([
        f"Lossless class: DSCP {ll.dscp} -> switch priority {ll.priority} -> TC {ROCE_TC}, PFC on priority "
        f"{ll.priority};",
        f"CNP: DSCP {cnp.dscp} -> switch priority {cnp.priority} -> TC {CNP_TC} (strict priority).",
    ])
    if ll.priority != DEFAULT_PFC_PRIORITY:
        mapping.add("qos", "pfc", "default-global", "switch-priority", ll.priority)
    wanted = {sp: ROCE_TC if sp == ll.priority else CNP_TC if sp == cnp.priority else 0 for sp in range(8)}
    for sp in range(8):
        if wanted[sp] != DEFAULT_SP_TO_TC[sp]:
            mapping.add("qos", "egress-queue-mapping", "default-global", "switch-priority", sp, "traffic-class",
                        value=wanted[sp])
    dscp_overrides = [(c.dscp, c.priority) for c in (ll, cnp) if c.dscp // 8 != c.priority]
    if dscp_overrides:
        mapping.add("qos", "mapping", "default-global", "trust", value="both")
        for dscp, sp in sorted(dscp_overrides):
            mapping.add("qos", "mapping", "default-global", "dscp", dscp, "switch-priority", value=sp)
    if mapping.settings:
        mapping.comments += ["NVUE's RoCE defaults are DSCP d -> priority d/8, priority 3 -> TC 3 with PFC, 6 -> TC 6,",
                             "others -> TC 0; only the differences are set, as in NVIDIA's example for moving RoCE",
                             "to another priority (qos pfc, egress-queue-mapping, mapping trust both + dscp)."]
    else:
        mapping.comments += ["All of it is NVUE's RoCE default (DSCP 24-31 -> priority 3, 48-55 -> 6): nothing to",
                             "set. A non-default class would set qos pfc / egress-queue-mapping / mapping here."]
    yield mapping

    if qos.lossless_weight != DEFAULT_LOSSLESS_WEIGHT:
        ets = Block([f"ETS: lossless TC {ROCE_TC} gets DWRR {qos.lossless_weight} %, lossy TC 0 the rest, CNP TC "
                     f"{CNP_TC} stays strict (NVUE default 50/50)."])
        ets.add("qos", "egress-scheduler", "default-global", "traffic-class", 0, "mode", value="dwrr")
        if qos.lossless_weight < 100:
            ets.add("qos", "egress-scheduler", "default-global", "traffic-class", 0, "bw-percent",
                    value=100 - qos.lossless_weight)
        ets.add("qos", "egress-scheduler", "default-global", "traffic-class", ROCE_TC, "mode", value="dwrr")
        ets.add("qos", "egress-scheduler", "default-global", "traffic-class", ROCE_TC, "bw-percent",
                value=qos.lossless_weight)
        ets.add("qos", "egress-scheduler", "default-global", "traffic-class", CNP_TC, "mode", value="strict")
        yield ets

    ecn = Block([
        f"ECN on the lossless queue (TC {ROCE_TC}): random marking from {qos.ecn_min_kb} KB, every packet above "
        f"{qos.ecn_max_kb} KB, probability {qos.ecn_max_probability} %.",
        f"KB = 1024 bytes, as the SONiC target writes the same spec ({qos.ecn_min_kb} KB = {qos.ecn_min_kb * KB} B);",
        "NVIDIA quotes its defaults as 150000 / 1500000 B. NVUE's RoCE default marks with probability 100, so the",
        "thresholds and the probability are always set.",
    ])
    tc = ("qos", "congestion-control", "default-global", "traffic-class", ROCE_TC)
    ecn.add(*tc, "ecn", value="enable")
    ecn.add(*tc, "min-threshold", value=qos.ecn_min_kb * KB)
    ecn.add(*tc, "max-threshold", value=qos.ecn_max_kb * KB)
    ecn.add(*tc, "probability", value=qos.ecn_max_probability)
    yield ecn

    if not ports:
        raise ValueError(f"{view.name}: a lossless switch without ports")
    length = cable_length_m(p.port for p in ports)
    longest = max(ports, key=lambda p: (p.port.cable_m, -p.port.number))
    cable = Block([
        f"PFC headroom cable length: {length} m. NVUE takes ONE cable length per PFC profile and the RoCE profile",
        "(default-global) covers every port, so it is this switch's LONGEST port cable "
        f"({longest.port.cable_m:g} m, {longest.name} to {longest.port.peer}),",
        "rounded up to whole metres (NVUE wants an integer). Headroom must hold what is still on the wire after a",
        "PAUSE; sized for the longest link every port stays lossless, shorter ports only reserve a little more",
        "buffer; a shorter value would drop lossless traffic on the long links.",
        "Cumulus Linux 5.3 and earlier: `nv set qos roce cable-length` instead (default 100 m).",
    ])
    cable.add("qos", "pfc", "default-global", "cable-length", value=length)
    yield cable

    interval, robustness = watchdog_timers(qos)
    watchdog = Block([
        f"PFC watchdog (Cumulus Linux 5.6+), on every swp above: detection {interval} ms x {robustness} = "
        f"{interval * robustness} ms (spec {qos.pfcwd_detect_ms} ms);",
        f"restoration after one quiet {interval} ms polling interval (spec {qos.pfcwd_restore_ms} ms).",
        "NVUE has no separate restoration timer: it restores after one polling interval without pause frames.",
    ])
    watchdog.comments.append("On a storm it ignores pause frames and drops on that queue (spec action drop).")
    watchdog.add("qos", "pfc-watchdog", "polling-interval", value=interval)
    watchdog.add("qos", "pfc-watchdog", "robustness", value=robustness)
    yield watchdog


# -- the switch ------------------------------------------------------------------------------------------------
def _management_block(view: SwitchView) -> Block | None:
    """eth0 in the management VRF (Cumulus Linux's default VRF for it), with the spec's gateway when given."""
    addressing = view.fabric.addressing
    if not view.management or addressing is None or not addressing.management:
        return None
    address = ipaddress.ip_interface(f"{view.management}/{ipaddress.ip_network(addressing.management).prefixlen}")
    eth0, vrf = DATA.management_interface, DATA.management_vrf
    block = Block([f"Management: {eth0} {address} in VRF {vrf}"
                   + (f", default route via {addressing.management_gateway}." if addressing.management_gateway
                      else ".")])
    block.add("interface", eth0, "type", value="eth")
    block.add("interface", eth0, "ip", "address", str(address))
    if addressing.management_gateway:
        block.add("interface", eth0, "ip", "gateway", addressing.management_gateway)
    block.add("interface", eth0, "ip", "vrf", value=vrf)
    return block


def _baseline_block(view: SwitchView) -> Block | None:
    """NTP, DNS, syslog, SNMP and the TACACS+ servers, in VRF mgmt when eth0 has a management address, else in the
    default VRF (Cumulus Linux 5.9 NTP, DNS, Syslog, SNMP and TACACS pages; ``service ntp|dns|syslog <vrf>`` through
    5.14). The TACACS+ secret, the SNMP community, TACACS+ `enable on` and the authentication order are
    management-secrets.sh's: TACACS+ login waits for its key."""
    m = view.baseline
    if m is None:
        return None
    in_vrf = bool(view.management and view.fabric.addressing and view.fabric.addressing.management)
    vrf = DATA.management_vrf if in_vrf else "default"
    block = Block([f"Management baseline in VRF {vrf}: NTP, DNS, syslog, SNMP v2c, TACACS+ servers. The TACACS+",
                   "secret, the SNMP community and TACACS+ login come from management-secrets.sh, on the switch."])
    for server in m.ntp:
        block.add("service", "ntp", vrf, "server", server, "iburst", value=ON)
    for server in m.dns_servers:
        block.add("service", "dns", vrf, "server", server)
    if m.dns_domain:  # `nv set service dns <vrf> search <domain>` (NVUE reference, DNS; 5.2 to 5.14)
        block.add("service", "dns", vrf, "search", _token(m.dns_domain, "DNS domain"))
    for server, port in m.syslog:
        block.add("service", "syslog", vrf, "server", server, "port", value=port)
    if m.snmp_community is not None:
        block.add("service", "snmp-server", "enable", value=ON)
        listen = view.management if in_vrf else view.loopback
        block.add("service", "snmp-server", "listening-address", listen, "vrf", value=vrf)
        if m.snmp_contact:
            block.add("service", "snmp-server", "system-contact", value=_token(m.snmp_contact, "SNMP contact"))
        if m.snmp_location:
            block.add("service", "snmp-server", "system-location", value=_token(m.snmp_location, "SNMP location"))
    if m.tacacs_servers:
        for priority, server in enumerate(m.tacacs_servers, start=1):  # lower first (NVIDIA's TACACS page)
            block.add("system", "aaa", "tacacs", "server", priority, "host", value=server)
        block.add("system", "aaa", "tacacs", "vrf", value=vrf)
        block.add("system", "aaa", "tacacs", "timeout", value=m.tacacs_timeout)
    return block


def switch_blocks(view: SwitchView) -> list[Block]:
    """Every setting of one switch, grouped and explained, in apply order."""
    if not _HOSTNAME.fullmatch(view.name):
        raise ValueError(f"switch name {view.name!r} is not a valid hostname")
    ports = [nv_port(view.model, p) for p in view.ports]
    if len({p.name for p in ports}) != len(ports):
        raise ValueError(f"{view.name}: two ports map to the same NVUE interface")
    lossless = view.fabric.type is FabricType.ROCE and view.qos is not None
    if not MTU_RANGE[0] <= view.mtu <= MTU_RANGE[1]:
        raise ValueError(f"{view.name}: port MTU {view.mtu} is outside NVUE's {MTU_RANGE[0]}..{MTU_RANGE[1]}")
    blocks: list[Block] = []

    system = Block([f"{view.name}: {view.tier.value} of fabric {view.fabric.name} ({view.model.name}), "
                    f"ASN {view.asn}."])
    system.add("system", "hostname", value=view.name)
    blocks.append(system)

    loopback = ipaddress.ip_interface(f"{view.loopback}/32")
    lo = Block([f"Loopback {loopback}: BGP router-id and the address this switch is reached at."])
    lo.add("interface", DATA.interface("loopback"), "type", value="loopback")
    lo.add("interface", DATA.interface("loopback"), "ip", "address", str(loopback))
    blocks.append(lo)
    management = _management_block(view)
    if management is not None:
        blocks.append(management)
    baseline = _baseline_block(view)
    if baseline is not None:
        blocks.append(baseline)

    parents = sorted({(p.cage, p.breakout) for p in ports if p.breakout > 1})
    if len({cage for cage, _ in parents}) != len(parents):
        raise ValueError(f"{view.name}: ports of one cage need different breakouts")
    if parents:
        split = Block([
            "Breakouts: a cage split into n ports is `link breakout <n>x` on swp<cage>; its ports are",
            "swp<cage>s0..s<n-1> (fabricgen port <cage>/<lane> -> swp<cage>s<lane-1>). Lanes per port stay NVUE's",
            "default (cage width / n).",
        ])
        for cage, n in parents:
            split.add("interface", DATA.interface("whole", cage=cage), "type", value="swp")
            split.add("interface", DATA.interface("whole", cage=cage), "link", "breakout", f"{n}x")
        blocks.append(split)

    for p in ports:
        pv = p.port
        role = (f"host port, access VLAN {HOST_VLAN}" if pv.kind == "host" and not pv.lag
                else f"member of bond{pv.lag} (MLAG id {pv.lag})" if pv.kind == "host"
                else "member of the MLAG peer link" if pv.kind == "peer"
                else f"routed {pv.kind} /31, eBGP to AS {pv.peer_asn}")
        block = Block([f"{p.name} (port {pv.name}) -> {pv.peer} {pv.peer_port}, {pv.speed}, {pv.cable_m:g} m: "
                       f"{role}."])
        block.add("interface", p.name, "type", value="swp")
        block.add("interface", p.name, "description", value=_token(f"{pv.peer}:{pv.peer_port}", "description"))
        block.add("interface", p.name, "link", "mtu", value=view.mtu)
        block.add("interface", p.name, "link", "speed", value=_token(pv.speed, "speed"))
        block.add("interface", p.name, "link", "state", "up")
        if pv.kind == "host" and not pv.lag:
            block.add("interface", p.name, "bridge", "domain", BRIDGE, "access", value=HOST_VLAN)
        elif pv.kind in ("host", "peer"):
            pass  # a bond member: the bond (below) joins the bridge
        else:
            if not pv.address or not pv.peer_address:
                raise ValueError(f"{view.name} {pv.name}: routed port without a /31")
            block.add("interface", p.name, "ip", "address", _token(pv.address, "address"))  # the plan's, canonical
        if lossless:
            block.add("interface", p.name, "qos", "pfc-watchdog", "state", value="enable")
        blocks.append(block)

    host_ports = [p for p in ports if p.port.kind == "host"]
    if host_ports:
        if not view.host_subnet or not view.gateway:
            raise ValueError(f"{view.name}: host ports but no host subnet")
        subnet = ipaddress.ip_network(view.host_subnet)
        gateway = ipaddress.ip_interface(f"{view.gateway}/{subnet.prefixlen}")
        svi = DATA.interface("vlan", vlan=HOST_VLAN)
        vlan = Block([f"Hosts: VLAN {HOST_VLAN} on the VLAN-aware bridge {BRIDGE}, {len(host_ports)} access ports;",
                      f"SVI {svi} {gateway} is the hosts' gateway on {subnet}."])
        vlan.add("bridge", "domain", BRIDGE, "vlan", str(HOST_VLAN))
        vlan.add("interface", svi, "type", value="svi")
        vlan.add("interface", svi, "vlan", value=HOST_VLAN)
        if view.mlag is None:
            vlan.add("interface", svi, "ip", "address", str(gateway))
        else:
            own = ipaddress.ip_interface(f"{view.mlag.address}/{subnet.prefixlen}")
            vlan.comments[-1] = (f"SVI {svi} {own} (this leaf's) with VRR {gateway}, the pair's gateway on {subnet}, "
                                 f"on {view.name} and {view.mlag.peer}.")
            vlan.add("interface", svi, "ip", "address", str(own))
            vlan.add("interface", svi, "ip", "vrr", "enable", value=ON)
            vlan.add("interface", svi, "ip", "vrr", "address", str(gateway))
            vlan.add("interface", svi, "ip", "vrr", "state", "up")
            vlan.add("router", "vrr", "enable", value=ON)  # as the VRR page's startup.yaml dumps hold it
        if view.pod_gateway:  # the pods' gateway, announced like the host subnet
            pods = ipaddress.ip_network(view.pod_subnet)
            vlan.comments.append(f"SVI {svi} {view.pod_gateway}/{pods.prefixlen} is the pods' gateway on {pods} "
                                 "(pods on the hosts' VFs).")
            vlan.add("interface", svi, "ip", "address", f"{view.pod_gateway}/{pods.prefixlen}")
        blocks.append(vlan)
        if view.mlag is not None:
            blocks.extend(_mlag_blocks(view, ports))

    routed = [p for p in ports if p.port.kind in ("uplink", "downlink")]
    bgp = Block([
        f"eBGP underlay: AS {view.asn}, router-id {loopback.ip}, one numbered session per routed /31 "
        f"({len(routed)}).",
        "Advertised by network statements (loopback" + (" and host subnet" if host_ports else "") + "),",
        "not `redistribute connected`, which would also leak every /31. Timers stay Cumulus's defaults, keepalive",
        f"{BGP_KEEPALIVE_S} s and hold {BGP_HOLD_S} s, as the SONiC and EOS switches set them.",
    ])
    bgp.add("router", "bgp", "enable", value=ON)
    bgp.add("router", "bgp", "autonomous-system", value=view.asn)
    bgp.add("router", "bgp", "router-id", value=str(loopback.ip))
    bgp.add("vrf", "default", "router", "bgp", "enable", value=ON)
    for p in routed:
        peer = _token(p.port.peer_address, "peer address")
        bgp.add("vrf", "default", "router", "bgp", "neighbor", peer, "remote-as", value=p.port.peer_asn)
        bgp.add("vrf", "default", "router", "bgp", "neighbor", peer, "type", value="numbered")
    af = ("vrf", "default", "router", "bgp", "address-family", "ipv4-unicast")
    bgp.add(*af, "enable", value=ON)
    bgp.add(*af, "network", str(loopback.network))
    if host_ports:
        bgp.add(*af, "network", str(ipaddress.ip_network(view.host_subnet)))
        if view.pod_subnet:
            bgp.add(*af, "network", str(ipaddress.ip_network(view.pod_subnet)))
    blocks.append(bgp)

    if lossless:
        assert view.qos is not None
        blocks.extend(_qos_blocks(view, view.qos, ports))
    spx = view.fabric.spectrum_x
    if spx is not None and routed:
        blocks.append(_adaptive_routing_block(spx, routed))
    return blocks


def _mlag_blocks(view: SwitchView, ports: list[NvPort]) -> list[Block]:
    """An MLAG leaf's host bonds, peer link and ``mlag`` settings (module doc)."""
    mlag = view.mlag
    assert mlag is not None
    bonds = Block([f"Host bonds: one per node's LACP bond, bond<MLAG id>, the same id on {view.name} and {mlag.peer};",
                   f"access ports of VLAN {HOST_VLAN}, LACP at the host's rate."])
    for p in ports:
        if p.port.kind == "host" and p.port.lag:
            bond = f"bond{p.port.lag}"
            bonds.add("interface", bond, "type", value="bond")
            bonds.add("interface", bond, "description", value=_token(f"{p.port.peer}:mlag{p.port.lag}",
                                                                     "description"))  # one per bond, any member count
            bonds.add("interface", bond, "bond", "member", p.name)
            bonds.add("interface", bond, "bond", "mlag", "enable", value=ON)
            bonds.add("interface", bond, "bond", "mlag", "id", value=p.port.lag)
            bonds.add("interface", bond, "bond", "lacp-rate", value=_token(p.port.lacp_rate, "lacp-rate"))
            bonds.add("interface", bond, "link", "mtu", value=view.mtu)
            bonds.add("interface", bond, "bridge", "domain", BRIDGE, "access", value=HOST_VLAN)
    members = [p for p in ports if p.port.kind == "peer"]
    pair = Block([f"MLAG with {mlag.peer}: peer link bond peerlink ({', '.join(p.name for p in members)}) and its",
                  "peerlink.4094 control subinterface (link-local peer address); backup over the routed fabric to",
                  f"the peer's loopback {mlag.peer_loopback}; system MAC {mlag.system_mac}, the pair's own."])
    pair.add("interface", "peerlink", "type", value="peerlink")
    for p in members:
        pair.add("interface", "peerlink", "bond", "member", p.name)
    pair.add("interface", "peerlink", "link", "mtu", value=view.mtu)
    pair.add("interface", "peerlink.4094", "type", value="sub")
    pair.add("interface", "peerlink.4094", "base-interface", value="peerlink")
    pair.add("interface", "peerlink.4094", "vlan", value=4094)
    pair.add("mlag", "enable", value=ON)
    pair.add("mlag", "mac-address", value=mlag.system_mac)
    pair.add("mlag", "backup", mlag.peer_loopback)
    pair.add("mlag", "peer-ip", value="linklocal")
    return [bonds, pair]


def _adaptive_routing_block(spx: SpectrumX, routed: list[NvPort]) -> Block:
    """Spectrum-X adaptive routing: on globally and on every routed switch-to-switch port, the members of this
    switch's ECMP routes (host ports are access ports of the VLAN's SVI, where Cumulus Linux has none; a host port
    is one path anyway)."""
    speeds = DATA.adaptive_routing.get("link_speeds", ())
    for p in routed:
        if p.port.speed not in speeds:
            raise ValueError(f"{p.name} at {p.port.speed}: Cumulus Linux has no adaptive routing on it (only at "
                             f"{', '.join(speeds)})")
    block = Block([
        f"Spectrum-X ({spx.profile}): adaptive routing, per packet to the less loaded ECMP member, on every routed",
        f"port ({len(routed)}) and globally. Cumulus Linux 5.x, Spectrum-4 at 400G/200G, layer 3 ports only; applying",
        "it reloads switchd (5.13+; 5.12 and earlier restart it). The SuperNICs put the sprayed packets back in order.",
        "5.15+ spells it `router adaptive-routing state enabled`.",
    ])
    block.add("router", "adaptive-routing", "enable", value=ON)
    threshold = spx.link_utilization_threshold
    if threshold is not None:
        block.comments.append(f"Link utilization above {threshold} % steers traffic away (global switch on, "
                              "threshold per port; NVUE's default threshold is 70, off globally).")
        block.add("router", "adaptive-routing", "link-utilization-threshold", value=ON)
    for p in routed:
        block.add("interface", p.name, "router", "adaptive-routing", "enable", value=ON)
        if threshold is not None:
            block.add("interface", p.name, "router", "adaptive-routing", "link-utilization-threshold",
                      value=threshold)
    return block


def settings_tree(settings: Iterable[Setting]) -> dict[str, Any]:
    """The startup.yaml `set` tree of settings: each command path is a key path, its value the leaf."""
    tree: dict[str, Any] = {}
    for s in settings:
        node = tree
        keys = s.path if s.value is None else s.path[:-1]
        for key in keys:
            child = node.get(key)
            if child is None:
                child = node[key] = {}
            elif type(child) is not dict:
                raise ValueError(f"{s.command}: {key} is already a value")
            node = child
        if s.value is not None:
            previous = node.setdefault(s.path[-1], s.value)
            if previous != s.value:
                raise ValueError(f"{s.command}: {s.path[-1]} is already {previous!r}")
    return tree


def _target(view: SwitchView) -> str:
    """The header's release line: the fabric's release and the releases that share the object model written."""
    releases = list(DATA.releases)
    return f"NVIDIA Cumulus Linux {view.release} (NVUE object model of {releases[0]} through {releases[-1]})"


def startup_yaml(view: SwitchView, blocks: list[Block], source: str) -> bytes:
    tree = settings_tree(s for b in blocks for s in b.settings)
    header = (f"# NVUE startup configuration of {view.name} (/etc/nvue.d/startup.yaml).\n"
              f"# Generated by fabricgen from {source}; do not edit. Same settings as nv-commands.txt.\n"
              f"# Target: {_target(view)}.\n")
    body = block_yaml.dump([{"set": tree}])
    return (header + body).encode("utf-8")


def commands_text(view: SwitchView, blocks: list[Block], source: str) -> bytes:
    return render_template("nvue/nv-commands.txt.j2", switch=view.name, fabric=view.fabric.name, source=source,
                           release=_target(view), blocks=blocks)


def render(topology: Topology) -> list[Artifact]:
    source = PurePosixPath(topology.cluster.source).name
    out = []
    for view in nos_switch_views(topology, DATA.name):
        blocks, folder = switch_blocks(view), f"switches/{view.name}"
        out.append(Artifact(f"{folder}/{DATA.config_file(view.name)}", startup_yaml(view, blocks, source)))
        out.append(Artifact(f"{folder}/nv-commands.txt", commands_text(view, blocks, source)))
        out.extend(management_secrets(view, source))
    return out


def readback(switch: str, content: bytes, fabric: Fabric) -> Iterator[Finding]:
    """NVUE startup.yaml: NVIDIA's RoCE lossless defaults (Cumulus Linux 5.9 RoCE page: DSCP d -> switch priority
    d // 8, priority 3 -> TC 3 with PFC and ECN, 6 -> TC 6 strict) with the file's overrides applied."""
    qos = fabric.qos
    if qos is None:
        return
    tree = safe_yaml(content)[0]["set"]
    host = "switch " + switch
    q = tree.get("qos", {})
    if q.get("roce", {}).get("mode") != "lossless":
        yield mismatch(host, "qos roce is not in lossless mode", fabric)
        return
    dscp_to_sp = {d: d // 8 for d in range(64)}
    mapping = q.get("mapping", {}).get("default-global", {}).get("dscp", {})
    dscp_to_sp |= {int(d): int(v["switch-priority"]) for d, v in mapping.items()}
    sp_to_tc = {sp: sp if sp in (3, 6) else 0 for sp in range(8)}
    queues = q.get("egress-queue-mapping", {}).get("default-global", {}).get("switch-priority", {})
    sp_to_tc |= {int(sp): int(v["traffic-class"]) for sp, v in queues.items()}
    pfc = {int(sp) for sp in q.get("pfc", {}).get("default-global", {}).get("switch-priority", {})} or {3}
    strict = {6}
    for tc, v in q.get("egress-scheduler", {}).get("default-global", {}).get("traffic-class", {}).items():
        (strict.add if v.get("mode") == "strict" else strict.discard)(int(tc))
    congestion = q.get("congestion-control", {}).get("default-global", {}).get("traffic-class", {})
    ecn = ({3} | {int(tc) for tc, v in congestion.items() if v.get("ecn") == "enable"}) - {
        int(tc) for tc, v in congestion.items() if v.get("ecn") == "disable"}
    lossless, cnp = qos.lossless, qos.cnp
    priority = dscp_to_sp[lossless.dscp]
    if priority != lossless.priority:
        yield mismatch(host, f"DSCP {lossless.dscp} maps to switch priority {priority}, but hosts send it on "
                             f"priority {lossless.priority}", fabric)
    if pfc != {lossless.priority}:
        yield mismatch(host, f"PFC is on switch priorities {sorted(pfc)}, hosts pause priority {lossless.priority} "
                             "only", fabric)
    if sp_to_tc[priority] not in ecn:
        yield mismatch(host, f"traffic class {sp_to_tc[priority]} of the lossless class does not mark ECN", fabric)
    if sp_to_tc[dscp_to_sp[cnp.dscp]] not in strict:
        yield mismatch(host, f"CNP DSCP {cnp.dscp} lands in traffic class {sp_to_tc[dscp_to_sp[cnp.dscp]]}, which "
                             "is not strict priority", fabric)
    if fabric.spectrum_x is not None:
        yield from _adaptive_routing_readback(host, tree, fabric)


def _adaptive_routing_readback(host: str, tree: dict[str, Any], fabric: Fabric) -> Iterator[Finding]:
    """Spectrum-X: adaptive routing on globally and on every routed port (a port with an address)."""
    if tree.get("router", {}).get("adaptive-routing", {}).get("enable") != ON:
        yield mismatch(host, "Spectrum-X fabric, but adaptive routing is not enabled (router adaptive-routing)",
                       fabric)
    for name, interface in sorted(tree.get("interface", {}).items()):
        if not name.startswith("swp") or "ip" not in interface:
            continue
        if interface.get("router", {}).get("adaptive-routing", {}).get("enable") != ON:
            yield mismatch(host, f"routed port {name} has no adaptive routing: ECMP traffic over it is hashed, "
                                 "not sprayed", fabric)


def port_setting(topology: Topology, switch: str, cage: int, name: str) -> PortSetting | None:
    """How startup.yaml leaves port ``name`` of ``cage``: a cabled port up (``link state up``) at its ``link speed``;
    any other port is not in the file, so disabled (nvue.yaml ``unconfigured_port``) at the platform's speed; the
    cage's ``link breakout`` as written (``2x``). A cage the file does not split runs as the one port
    ``swp<cage>`` at the cage's whole speed, which `nv show interface` reports as breakout ``1x`` (field review: an
    SN5600's ``800G``, which a 400G host plugged into it does not link at until the spec splits the cage). None
    for a switch with no startup.yaml."""
    settings = topology.shared(_port_settings).get(switch)
    if settings is None:
        return None
    cabled, breakouts, model = settings
    if name in cabled:
        return cabled[name]
    if cage in breakouts:
        return PortSetting("", breakouts[cage], DATA.unconfigured_port)
    whole = fastest_at(model.cage_group(cage), 1)
    return PortSetting(whole.name if whole else "", "1x" if whole else "", DATA.unconfigured_port)


def cage_split(topology: Topology, switch: str, cage: int) -> int | None:
    """The ports startup.yaml splits ``cage`` of ``switch`` into: its ``link breakout``, else 1 (Cumulus Linux runs
    a cage without one as the single port ``swp<cage>``). None for a switch with no startup.yaml."""
    settings = topology.shared(_port_settings).get(switch)
    if settings is None:
        return None
    breakout = settings[1].get(cage, "")
    return int(breakout.removesuffix("x")) if breakout else 1


def _port_settings(topology: Topology) -> dict[str, tuple[dict[str, PortSetting], dict[int, str], SwitchModel]]:
    """Per NVUE switch: its cabled ports' settings by NVUE name and its split cages' breakouts, as render writes
    them (``nv_port``: the one naming and breakout rule), and its model."""
    found: dict[str, tuple[dict[str, PortSetting], dict[int, str], SwitchModel]] = {}
    for view in nos_switch_views(topology, DATA.name):
        ports = [nv_port(view.model, p) for p in view.ports]
        breakouts = {p.cage: f"{p.breakout}x" for p in ports if p.breakout > 1}
        found[view.name] = ({p.name: PortSetting(p.port.speed, breakouts.get(p.cage, ""), "up") for p in ports},
                            breakouts, view.model)
    return found


NOS = Nos(DATA, render, readback, routing=routing, port_name=port_name, port_setting=port_setting,
          cage_split=cage_split)
