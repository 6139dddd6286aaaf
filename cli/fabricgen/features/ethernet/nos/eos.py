"""Target ``eos``: Arista EOS configuration for every switch whose NOS is ``eos`` on an Ethernet or RoCE fabric
with an address plan.

Two artifacts per switch, both from one structured config:

- ``switches/<switch>/avd-structured-config.yaml``: the switch as an Arista AVD ``eos_cli_config_gen``
  structured config (hostname, VLAN, interfaces, loopback, QoS map and profile, PFC, eBGP). Feed it to
  ``pyavd.validate_structured_config`` / ``pyavd.get_device_config`` or to the AVD Ansible collection.
- ``switches/<switch>/<switch>.cfg``: the EOS CLI, rendered by fabricgen's own templates from the same dict,
  in AVD's section order. fabricgen never imports pyavd; the tests prove that pyavd accepts the structured
  config and renders the same commands.

Layout: switch-to-switch ports are routed /31s (``no switchport``) with one eBGP session each; host ports of a
leaf are access ports of one VLAN whose SVI is the hosts' gateway. BGP announces the loopback and the host
subnet (``network`` statements, not ``redistribute connected``, so the /31s are not announced).

MLAG pair (``attachment: mlag``; the constants in ``eos.yaml`` ``mlag_eos``): ``mlag configuration`` (domain-id
``<fabric>-<pair>``, local-interface Vlan4094, the peer's VLAN 4094 address, peer-link Port-Channel999); the peer
link a trunk Port-Channel of trunk group MLAG (``channel-group 999 mode active`` on its two ports), VLAN 4094 in that
trunk group only, without spanning tree, its SVI (``no autostate``) the pair's /31; each host bond a Port-Channel
with ``mlag <id>``, an access port of the host VLAN (``channel-group <id> mode active``, ``lacp timer`` at the
host's rate on its port); the host SVI its own address and the gateway as ``ip virtual-router address`` (VARP) with
one ``ip virtual-router mac-address``; BGP announces the pair subnet from both leaves.

The lossless class on a RoCE fabric (REFERENCE "RoCE v2 lossless Ethernet"): ``qos map dscp <lossless> to
traffic-class <priority>`` and the CNP DSCP to its own class; one ``qos profile`` applied to every port as a
``service-profile`` that trusts DSCP, gives the lossless unicast queue its DWRR share and ECN marking
(``random-detect ecn`` in kbytes) and makes the CNP queue strict priority; ``priority-flow-control on`` with the
lossless priority ``no-drop`` on every port; the PFC pause watchdog on every port through the same profile
(``priority-flow-control pause watchdog port timer ...`` / ``port action``) and as the global default (seconds;
polling interval half the shorter of timeout and recovery time, as EOS requires). The lossless queue is set
``no priority`` before its ``bandwidth percent``: EOS queues are strict priority by default, and a strict queue's
bandwidth share is not a DWRR weight (AVD's reference configs write it the same way). Every other DSCP
goes to traffic class 0 in one ``qos map dscp`` line (the form EOS's own ``show qos map`` prints, e.g. DISA's Arista
EOS router STIG ARST-RT-000320): EOS's default map would put DSCP 24-31 in the lossless class and 32-63 in classes
4-7, whose queues stay strict priority above the lossless queue; so the three dialects classify alike. EOS's
pause-watchdog actions are drop, errdisable and notify-only: fabricgen's ``alert`` becomes notify-only and
``forward`` (SONiC's "ignore PFC on the stuck queue") is refused.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from decimal import Decimal
from ipaddress import IPv4Address, IPv4Network
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.templating import render_template
from fabricgen.features.ethernet import block_yaml
from fabricgen.features.ethernet.nos import Nos, PortSetting, nos_data
from fabricgen.features.ethernet.nos.eos_routing import routing
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
from fabricgen.model.cluster import Fabric, Tier
from fabricgen.model.ethernet import RoceQos
from fabricgen.model.hardware import SwitchModel, cage_of
from fabricgen.model.hardware import port_name as panel_name
from fabricgen.model.topology import Topology

DATA = nos_data("eos")

QOS_PROFILE = "ROCE-LOSSLESS"
MAX_ECMP = 64  # maximum-paths cap: what current EOS fixed-config platforms commonly support

# Electrical lanes per cage. EOS names a breakout sub-port after its first lane (an 8-lane OSFP at 2 x 400G is
# Ethernet1/1 and Ethernet1/5, "speed 400g-4"); single-lane cages (SFP, RJ45) have no lane suffix.
_CAGE_LANES = {"OSFP": 8, "QSFP-DD": 8, "QSFP112": 4, "QSFP56": 4, "QSFP28": 4, "QSFP+": 4,
               "SFP112": 1, "SFP56": 1, "SFP28": 1, "SFP+": 1, "SFP": 1, "RJ45": 1}


def _lanes(model: SwitchModel, port: PortView) -> tuple[int, int, int]:
    """(cage, lanes in the cage, lanes of this port) for a fabricgen port name "<cage>" or "<cage>/<n>"."""
    cage = int(port.name.split("/")[0])
    return _split_lanes(model, port.name, model.cage_group(cage).per_cage(port.speed), port.speed)


def _split_lanes(model: SwitchModel, name: str, per_cage: int, speed: str = "") -> tuple[int, int, int]:
    """(cage, lanes in the cage, lanes of one port) for port ``name`` of a cage split into ``per_cage`` ports."""
    cage = int(name.split("/")[0])
    group = model.cage_group(cage)
    cage_lanes = _CAGE_LANES.get(group.form_factor.upper(), max(n for _, n in group.ports_per_cage))
    if per_cage < 1 or cage_lanes % per_cage:
        raise ValueError(f"{model.name} cage {cage} ({group.form_factor}, {cage_lanes} lanes) cannot split into "
                         f"{per_cage} ports{f' at {speed}' if speed else ''}")
    return cage, cage_lanes, cage_lanes // per_cage


def interface_name(model: SwitchModel, port: PortView) -> str:
    """EOS name of a port: Ethernet<cage>/<first lane>, or Ethernet<cage> on a single-lane cage."""
    return _interface(port.name, *_lanes(model, port))  # refuses a split the cage cannot make, naming the speed


def port_name(model: SwitchModel, name: str, per_cage: int) -> str:
    """EOS name of fabricgen port ``name`` on a cage split into ``per_cage`` ports (see interface_name)."""
    return _interface(name, *_split_lanes(model, name, per_cage))


def _interface(name: str, cage: int, cage_lanes: int, port_lanes: int) -> str:
    if cage_lanes == 1:
        return DATA.interface("whole", cage=cage)
    sub = int(name.split("/")[1]) if "/" in name else 1
    return DATA.interface("split", cage=cage, lane=(sub - 1) * port_lanes + 1)


def interface_speed(model: SwitchModel, port: PortView) -> str:
    """EOS ``speed`` keyword: rate and lane count ("400g-4") on multi-lane cages, the bare rate on SFP/RJ45."""
    _, cage_lanes, port_lanes = _lanes(model, port)
    gbps = Decimal(str(port.gbps))
    rate = f"{(gbps / 1000).normalize():f}t" if gbps >= 1000 else f"{gbps.normalize():f}g"
    return rate if cage_lanes == 1 else f"{rate}-{port_lanes}"


def _seconds(ms: int) -> str:
    """Milliseconds as EOS writes seconds: 200 -> "0.2", 5000 -> "5"."""
    return f"{(Decimal(ms) / 1000).normalize():f}"


def _natural(text: str) -> list[int | str]:
    """Natural sort key, as AVD orders interfaces and prefixes: Ethernet2/1 before Ethernet10/1."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", text)]


def _description(port: PortView) -> str:
    """Peer and its port as the cabling sheet names them, then this port's fabricgen name and cable."""
    return f"{port.peer}:{port.peer_port} (port {port.name}, cable {port.cable_m:g} m)"


def _qos(q: RoceQos) -> dict[str, Any]:
    """The global half of the lossless class: DSCP map, the service profile, the PFC watchdog."""
    action = DATA.pfc_watchdog_actions[q.pfcwd_action]  # the build refused an action EOS lacks ("forward")
    polling_ms = min(q.pfcwd_detect_ms, q.pfcwd_restore_ms) // 2  # EOS: polling <= min(timeout, recovery) / 2
    # every other DSCP to TC 0, as SONiC and NVUE send them: EOS's default map puts DSCP 24-31 in TC 3 (the lossless
    # class) and 32-63 in TCs 4-7, whose queues stay strict priority above the lossless one
    others = [d for d in range(64) if d not in (q.lossless.dscp, q.cnp.dscp)]
    return {
        "qos": {"map": {"dscp": [f"{' '.join(map(str, others))} to traffic-class 0",
                                 f"{q.lossless.dscp} to traffic-class {q.lossless.priority}",
                                 f"{q.cnp.dscp} to traffic-class {q.cnp.priority}"]}},
        "qos_profiles": [{
            "name": QOS_PROFILE,
            "trust": "dscp",
            # "no priority" first: an EOS tx-queue is strict priority until told otherwise, and a bandwidth
            # share on a strict queue is ignored (it would starve the lossy queues); AVD's reference configs
            # always write it before "bandwidth percent"
            "uc_tx_queues": sorted([
                {"id": q.lossless.priority, "priority": "no priority", "bandwidth_percent": q.lossless_weight,
                 "random_detect": {"ecn": {"threshold": {"units": "kbytes", "min": q.ecn_min_kb,
                                                         "max": q.ecn_max_kb,
                                                         "max_probability": q.ecn_max_probability}}}},
                {"id": q.cnp.priority, "priority": "priority strict"},
            ], key=lambda t: t["id"]),
            # the pause watchdog on every port the profile is applied to, with the spec's times and action (EOS's
            # default action is errdisable)
            "priority_flow_control": {"watchdog": {
                "enabled": True, "action": action,
                "timer": {"timeout": _seconds(q.pfcwd_detect_ms), "polling_interval": _seconds(polling_ms),
                          "recovery_time": _seconds(q.pfcwd_restore_ms)}}},
        }],
        "priority_flow_control": {"watchdog": {"action": action, "timeout": _seconds(q.pfcwd_detect_ms),
                                               "recovery_time": _seconds(q.pfcwd_restore_ms),
                                               "polling_interval": _seconds(polling_ms)}},
    }


MLAG = DATA.mlag_settings


def _ethernet(view: SwitchView, port: PortView) -> dict[str, Any]:
    iface: dict[str, Any] = {
        "name": interface_name(view.model, port),
        "description": _description(port),
        "shutdown": False,
        "speed": interface_speed(view.model, port),
        "mtu": view.mtu,
    }
    if port.lag or port.kind == "peer":  # a port-channel's member: the port-channel carries the VLAN
        iface["channel_group"] = {"id": port.lag or MLAG["peer_link"], "mode": "active"}
        if port.lag:
            iface["lacp_timer"] = {"mode": "fast" if port.lacp_rate == "fast" else "normal"}
    elif port.kind == "host":
        iface["switchport"] = {"enabled": True, "mode": "access", "access_vlan": HOST_VLAN}
        iface["spanning_tree_portfast"] = "edge"
    else:
        iface["switchport"] = {"enabled": False}
        iface["ip_address"] = port.address
    if view.qos is not None:
        iface["service_profile"] = QOS_PROFILE
        iface["priority_flow_control"] = {"enabled": True,
                                          "priorities": [{"priority": view.qos.lossless.priority, "no_drop": True}]}
    return iface


UNUSED = "unused"  # the description of a front-panel interface no cable uses


def unused_interfaces(view: SwitchView) -> list[str]:
    """Every front-panel interface of the switch that no cable uses, by its EOS name, in faceplate order: an
    interface the file does not name runs enabled, an access port of VLAN 1 (eos.yaml ``unconfigured_port``), so a
    device plugged in there gets link; <switch>.cfg shuts each one instead. A cage with a cabled port has the
    interfaces of that port's speed mode (``400g-4``: Ethernet1/1 and Ethernet1/5); a cage with none those of the
    tier's speed (a leaf's host speed, a spine's uplink speed; the cage's native split where it cannot run it), as
    cabling/free-ports.csv names its ports: a lane that speed mode leaves inactive still takes the ``shutdown`` and
    keeps it when a later ``speed`` activates it."""
    speed = (view.fabric.speed if view.tier is Tier.LEAF else view.fabric.uplink_speed).name
    cabled = {interface_name(view.model, p) for p in view.ports}
    modes = {cage_of(p.name): view.model.port_group(p.name).per_cage(p.speed) for p in view.ports}
    unused = []
    for cage, group in view.model.cages():
        split = modes.get(cage) or group.per_cage(speed) or group.native_split
        for n in range(1, split + 1):
            name = port_name(view.model, panel_name(cage, n, split), split)
            if name not in cabled:
                unused.append(name)
    return unused


def _management(view: SwitchView) -> dict[str, Any]:
    """Management1 in its own VRF, with a default route to the spec's management gateway when there is one."""
    addressing = view.fabric.addressing
    if not view.management or addressing is None or not addressing.management:
        return {}
    prefix = IPv4Network(addressing.management).prefixlen
    interface = {"name": DATA.management_interface, "description": "out-of-band management", "shutdown": False,
                 "vrf": DATA.management_vrf, "ip_address": f"{view.management}/{prefix}", "type": "oob"}
    config: dict[str, Any] = {"vrfs": [{"name": DATA.management_vrf, "ip_routing": False}],
                              "management_interfaces": [interface]}
    if addressing.management_gateway:
        interface["gateway"] = addressing.management_gateway
        config["static_routes"] = [{"vrf": DATA.management_vrf, "prefix": "0.0.0.0/0",
                                    "next_hop": addressing.management_gateway}]
    return config


TACACS_GROUP = "TACACS"  # the aaa group server management-secrets.sh logs in through


def _baseline(view: SwitchView) -> dict[str, Any]:
    """NTP, DNS, syslog, SNMP and the TACACS+ servers in AVD's keys, in VRF MGMT from Management1 when the switch
    has a management address, else in the default VRF from Loopback0. The key, the community and AAA login are
    management-secrets.sh's."""
    m = view.baseline
    if m is None:
        return {}
    in_vrf = bool(view.management and view.fabric.addressing and view.fabric.addressing.management)
    vrf = DATA.management_vrf if in_vrf else "default"
    source = DATA.management_interface if in_vrf else DATA.interface("loopback")
    config: dict[str, Any] = {}
    if m.ntp:
        config["ntp"] = {"local_interface": {"name": source, "vrf": vrf}, "servers": [
            {"name": server, "iburst": True} for server in m.ntp]}
        if in_vrf:
            config["ntp"]["vrf"] = vrf
    if m.dns_servers:
        config["ip_name_server"] = {"vrfs": [{"name": vrf, "servers": [{"ip_address": s} for s in m.dns_servers]}]}
        config["ip_domain_lookup"] = {"source_interfaces": [{"name": source, "vrf": vrf}]}
    if m.dns_domain:
        config["dns_domain"] = m.dns_domain
    if m.syslog:
        config["logging"] = {"vrfs": [{"name": vrf, "source_interface": source, "hosts": [
            {"name": server, "protocol": "udp", "ports": [port]} for server, port in m.syslog]}]}
    if m.snmp_community is not None:
        snmp: dict[str, Any] = {"local_interfaces": [{"name": source, "vrf": vrf}], "vrfs": [{"name": vrf,
                                                                                            "enable": True}]}
        snmp |= {k: v for k, v in (("contact", m.snmp_contact), ("location", m.snmp_location)) if v}
        config["snmp_server"] = snmp
    if m.tacacs_servers:
        config["tacacs_servers"] = {"timeout": m.tacacs_timeout,
                                    "hosts": [{"host": server, "vrf": vrf} for server in m.tacacs_servers]}
        config["ip_tacacs"] = ({"vrfs": [{"name": vrf, "source_interface": source}]} if in_vrf
                               else {"source_interface": source})
        config["aaa_server_groups"] = [{"name": TACACS_GROUP, "type": "tacacs+", "servers": [
            {"server": server, "vrf": vrf} for server in m.tacacs_servers]}]
    return config


def structured_config(view: SwitchView) -> dict[str, Any]:
    """The switch as an AVD eos_cli_config_gen structured config (plain data, deterministic)."""
    routed = view.routed_ports
    host = view.host_ports
    config: dict[str, Any] = {
        "hostname": view.name,
        "service_routing_protocols_model": "multi-agent",
        "ip_routing": True,
        "ethernet_interfaces": sorted([*(_ethernet(view, p) for p in view.ports),
                                       *({"name": name, "description": UNUSED, "shutdown": True}
                                         for name in unused_interfaces(view))], key=lambda i: _natural(i["name"])),
        "loopback_interfaces": [{"name": DATA.interface("loopback"), "description": "router-id",
                                 "ip_address": f"{view.loopback}/32"}],
    }
    networks = [f"{view.loopback}/32"]
    if host and view.host_subnet:
        prefix = IPv4Network(view.host_subnet).prefixlen
        config["vlans"] = [{"id": HOST_VLAN, "name": "HOSTS"}]
        config["vlan_interfaces"] = [{"name": DATA.interface("vlan", vlan=HOST_VLAN),
                                      "description": f"hosts {view.host_subnet}", "shutdown": False, "mtu": view.mtu,
                                      "ip_address": f"{view.gateway}/{prefix}"}]
        networks.append(view.host_subnet)
        if view.pod_gateway:  # the pods' gateway, announced like the host subnet
            pods = IPv4Network(view.pod_subnet)
            config["vlan_interfaces"][0]["ip_address_secondaries"] = [f"{view.pod_gateway}/{pods.prefixlen}"]
            networks.append(view.pod_subnet)
    if view.mlag is not None and "vlan_interfaces" in config:
        config.update(_mlag(view, config))
    if routed:
        paths = min(len(routed), MAX_ECMP)
        config["router_bgp"] = {
            "as": str(view.asn),
            "router_id": view.loopback,
            "timers": {"keepalive_time": BGP_KEEPALIVE_S, "hold_time": BGP_HOLD_S},
            "maximum_paths": {"paths": paths, "ecmp": paths},
            "neighbors": sorted(({"ip_address": p.peer_address, "remote_as": str(p.peer_asn),
                                  "description": f"{p.peer}:{p.peer_port}"} for p in routed),
                                key=lambda n: IPv4Address(n["ip_address"])),
            "address_family_ipv4": {"networks": [{"prefix": n} for n in sorted(networks, key=_natural)]},
        }
    config.update(_management(view))
    config.update(_baseline(view))
    if view.qos is not None:
        config.update(_qos(view.qos))
    config["config_end"] = True
    return config


def _mlag(view: SwitchView, config: dict[str, Any]) -> dict[str, Any]:
    """An MLAG leaf's pair (module doc): amends the host SVI and VLANs in ``config``, returns the new sections."""
    mlag = view.mlag
    assert mlag is not None
    vlan, group = int(MLAG["peer_vlan"]), str(MLAG["trunk_group"])
    peer_link = f"Port-Channel{MLAG['peer_link']}"
    svi = config["vlan_interfaces"][0]
    prefix = IPv4Network(view.host_subnet).prefixlen
    svi["ip_address"] = f"{mlag.address}/{prefix}"
    svi["ip_virtual_router_addresses"] = [view.gateway]
    pair = IPv4Network(str(MLAG["peer_network"]))
    own, peer = (pair[0], pair[1]) if mlag.primary else (pair[1], pair[0])
    peer_svi = DATA.interface("vlan", vlan=vlan)
    config["vlans"].append({"id": vlan, "name": "MLAG_PEER", "trunk_groups": [group]})
    config["vlan_interfaces"].append({"name": peer_svi, "description": f"MLAG peer {mlag.peer}", "shutdown": False,
                                      "mtu": view.mtu, "no_autostate": True,
                                      "ip_address": f"{own}/{pair.prefixlen}"})
    channels = [{"name": f"Port-Channel{p.lag}", "description": f"{p.peer} bond, MLAG {p.lag}", "shutdown": False,
                 "mtu": view.mtu, "switchport": {"enabled": True, "mode": "access", "access_vlan": HOST_VLAN},
                 "mlag": p.lag, "spanning_tree_portfast": "edge"}
                for p in {p.lag: p for p in view.host_ports if p.lag}.values()]  # a bond of 4: 2 members a leaf
    channels.append({"name": peer_link, "description": f"MLAG peer link to {mlag.peer}", "shutdown": False,
                     "mtu": view.mtu, "switchport": {"enabled": True, "mode": "trunk", "trunk": {"groups": [group]}}})
    return {
        "spanning_tree": {"no_spanning_tree_vlan": str(vlan)},
        "port_channel_interfaces": sorted(channels, key=lambda c: _natural(c["name"])),
        "ip_virtual_router_mac_address": str(MLAG["virtual_router_mac"]),
        "mlag_configuration": {"domain_id": f"{view.fabric.name}-{mlag.domain}", "local_interface": peer_svi,
                               "peer_address": str(peer), "peer_link": peer_link},
    }


def eos_views(topology: Topology) -> list[SwitchView]:
    """Switches that run EOS, on every Ethernet or RoCE fabric with an address plan, in compile order."""
    return nos_switch_views(topology, DATA.name)


def render(topology: Topology) -> list[Artifact]:
    """Per EOS switch: its AVD structured config (YAML, keys sorted) and the EOS CLI rendered from it."""
    source = PurePosixPath(topology.cluster.source).name
    out = []
    for view in eos_views(topology):
        config = structured_config(view)
        header = (f"# {view.name}: AVD eos_cli_config_gen structured config, fabric {view.fabric.name} "
                  f"({view.tier.value}). Generated by fabricgen from\n# {source}; do not edit. "
                  f"{DATA.config_file(view.name)} next to this file is the same configuration as EOS CLI.\n")
        body = block_yaml.dump(config)
        out.append(Artifact(f"switches/{view.name}/avd-structured-config.yaml", (header + body).encode("utf-8")))
        cli = render_template("eos/switch.cfg.j2", c=config, fabric=view.fabric.name, tier=view.tier.value,
                              source=source)
        out.append(Artifact(f"switches/{view.name}/{DATA.config_file(view.name)}", cli))
        out.extend(management_secrets(view, source, group=TACACS_GROUP))
    return out


def readback(switch: str, content: bytes, fabric: Fabric) -> Iterator[Finding]:
    """The EOS CLI read back: the DSCP maps, a no-drop PFC priority on every PFC port, ECN and strict CNP in the
    qos profile (RoCE fabrics; EOS ports take the fabric MTU as configured)."""
    qos = fabric.qos
    if qos is None:
        return
    text = content.decode()
    host = "switch " + switch
    maps = {int(d): int(tc) for ds, tc in re.findall(r"^qos map dscp ([\d ]+) to traffic-class (\d+)$", text, re.M)
            for d in ds.split()}
    lossless, cnp = qos.lossless, qos.cnp
    if maps.get(lossless.dscp) != lossless.priority:
        yield mismatch(host, f"DSCP {lossless.dscp} maps to traffic class {maps.get(lossless.dscp)} on the switch, "
                             f"but hosts send it on priority {lossless.priority}", fabric)
    unmapped = [d for d in range(64) if d not in (lossless.dscp, cnp.dscp) and maps.get(d) != 0]
    if unmapped:
        yield mismatch(host, f"{len(unmapped)} other DSCPs (first {unmapped[0]}) are not mapped to traffic class 0: "
                             "EOS's default map sends DSCP 24-31 to the lossless class and 32-63 to strict queues",
                       fabric, "qos map dscp <every other DSCP> to traffic-class 0, as SONiC and NVUE classify")
    no_drop = set(re.findall(r"^   priority-flow-control priority (\d) no-drop$", text, re.M))
    if no_drop != {str(lossless.priority)}:
        yield mismatch(host, f"no-drop PFC priorities are {sorted(no_drop) or 'none'}, hosts pause priority "
                             f"{lossless.priority} only", fabric)
    queues = dict(re.findall(r"^   uc-tx-queue (\d)\n((?:      .*\n)*)", text, re.M))
    lossless_queue = queues.get(str(lossless.priority), "")
    if "random-detect ecn" not in lossless_queue:
        yield mismatch(host, f"uc-tx-queue {lossless.priority} has no ECN random-detect: ECN never marks", fabric)
    if "bandwidth percent" in lossless_queue and "      no priority\n" not in lossless_queue:
        yield mismatch(host, f"uc-tx-queue {lossless.priority} has a bandwidth share but no `no priority`: it stays "
                             "strict priority and starves the lossy queues", fabric)
    if not re.search(r"^   priority-flow-control pause watchdog port action ", text, re.M):
        yield mismatch(host, "the qos profile enables no per-port PFC watchdog: a pause storm on a port is never "
                             "broken", fabric)
    if "priority strict" not in queues.get(str(maps.get(cnp.dscp, -1)), ""):
        yield mismatch(host, f"CNP DSCP {cnp.dscp} lands in queue {maps.get(cnp.dscp)}, which is not strict "
                             "priority", fabric)


def port_setting(topology: Topology, switch: str, cage: int, name: str) -> PortSetting | None:
    """How <switch>.cfg leaves interface ``name``: a cabled one ``no shutdown`` at its planned speed (its ``speed``
    keyword, the breakout here, carries the lanes: ``400g-4``, which is how EOS splits a cage); an unused one
    ``shutdown`` without a speed (``unused_interfaces``); a name the file does not hold (none fabricgen writes)
    runs at EOS's defaults (eos.yaml ``unconfigured_port``: enabled, its speed and lanes the platform's). None for a
    switch with no configuration written."""
    settings = topology.shared(_port_settings).get(switch)
    if settings is None:
        return None
    return settings.get(name) or PortSetting("", "", DATA.unconfigured_port)


def _port_settings(topology: Topology) -> dict[str, dict[str, PortSetting]]:
    """Per EOS switch its interfaces' settings by name, as ``structured_config`` writes them: the cabled ones
    (``_ethernet``) up, the unused ones down."""
    return {view.name: {**dict.fromkeys(unused_interfaces(view), PortSetting("", "", "down")),
                        **{interface_name(view.model, p): PortSetting(p.speed, interface_speed(view.model, p), "up")
                           for p in view.ports}} for view in eos_views(topology)}


NOS = Nos(DATA, render, readback, routing=routing, port_name=port_name, port_setting=port_setting)
