"""Target ``sonic``: a SONiC config_db.json per switch whose NOS is SONiC, plus the PFC headroom worksheet.

For every switch of an Ethernet/RoCE fabric with an address plan and ``nos: sonic``:

- ``switches/<switch>/config_db.json``: DEVICE_METADATA, PORT, BREAKOUT_CFG, INTERFACE, LOOPBACK_INTERFACE, the
  leaf's host VLAN (VLAN, VLAN_MEMBER, VLAN_INTERFACE), BGP_NEIGHBOR, management (MGMT_PORT, MGMT_INTERFACE in the
  management VRF, MGMT_VRF_CONFIG), the SKU's buffers and, on a RoCE fabric with a lossless class, the QoS tables
  (DSCP_TO_TC_MAP ... PFC_WD). All values are strings, keys sorted: the same spec gives the same bytes.
- ``switches/<switch>/pfc-headroom.csv`` (lossless class only, :mod:`.sheet`): one row per port with the cable
  the plan gives it and the headroom each buffer model gives it, so an engineer can audit it.

Decisions, each one a failure seen in the field or a SONiC rule:

- The switch runs the SKU whose port layout fits its ports (:mod:`.layout`, data in ``skus/``): DEVICE_METADATA
  hwsku and platform are that SKU's, PORT names, lanes, aliases and index its port_config.ini rows. On a release
  whose SKU runs independent module mode (CMIS host management; ``subport_releases`` in the SKU file) every port
  of a broken-out cage carries its ``subport`` (its position in the cage), as the SKU's hwsku.json gives it.
- BREAKOUT_CFG gives every cage of the SKU its current mode, keyed by the cage's parent port (its first port,
  platform.json's name) and spelled as platform.json spells it: sonic-cfggen writes the table from hwsku.json's
  default modes (sonic-config-engine portconfig.py ``get_breakout_mode``), and ``config interface breakout`` and
  ``show interfaces breakout`` start from it (without it: "BREAKOUT_CFG table is NOT present"). Only parent ports:
  they are all that either reads (sonic-breakout_cfg.yang: "Parent ports and their current breakout-mode").
- The SKU's ports the plan cables nothing to (a one-host cage's second port, a half-used or empty cage) stay in
  PORT, ``admin_status down``, at their mode's speed, FEC ``rs`` from 50G a lane as SONiC's own port generation
  writes it, with no address, VLAN or QoS: breakout deletes every port of a cage's current mode and refuses one
  that PORT lacks. Each gets CABLE_LENGTH "0m" and, in the traditional model, the zero pool and profiles NVIDIA's
  templates give a port without a neighbour (``traditional.inactive`` of the SKU file), so a dark port holds no
  buffer; in the dynamic model the lossy objects every port gets (buffermgrdyn applies zero profiles to an
  admin-down port itself).
- DEVICE_METADATA type follows the tier: a leaf is a ToRRouter (T0), a spine a LeafRouter (T1), a core a
  SpineRouter (T2), SONiC's own roles (bgpcfgd and the buffer templates key on them).
- Buffers are the SKU's, as sonic-cfggen renders NVIDIA's templates for the device type (t0/t1/t2): its pools
  (traditional model: with their sizes, the ingress lossless pool's shared headroom ``xoff`` where the SKU has
  one; dynamic: without the sizes buffermgrd computes), its profiles, and per port its lossy PG, queue and
  profile-list objects. Every Ethernet switch gets them, lossless or not.
- SONiC's default QoS template makes DSCP 3 and 4 lossless and sends DSCP 26 to a lossy TC, so the map is
  fabricgen's own (``ROCE``): every one of the 64 DSCPs listed, the lossless DSCP -> TC = lossless priority,
  the CNP DSCP -> TC = CNP priority, all others -> TC 0; TC p -> PG p for the lossless priority, PG 0 for the
  rest; TC -> queue and PFC priority -> queue are identities. pfc_enable holds the lossless priority only. The
  lossless queue takes the SKU's lossless queue profile, the others its lossy one. PFC priority -> PG
  (PFC_PRIORITY_TO_PRIORITY_GROUP_MAP, every port's ``pfc_to_pg_map``) sends the lossless priority to its PG, as
  qos_config.j2 writes it on Mellanox (``pfc_to_pg_map_supported_asics``): the SAI then knows whose xoff pauses
  which priority instead of relying on its default mapping.
- CABLE_LENGTH on every port, as buffers_config.j2 writes it: on a switch without a lossless class "0m", which
  buffermgrd takes as "no lossless PG here" (without a length it retries every port forever).
- Traditional pool sizes are the SKU's, but never more than sonic-swss's buffer_pool_mellanox.lua leaves each
  shared pool after this switch's PGs, queues and reserves (:mod:`.pools`): NVIDIA's templates assume their default
  cable on every port, and an SN5600-O128 ToR with 40m lossless rows would otherwise be given ~20 MB more than it has.
- Buffer model ``traditional``: buffermgrd takes the pfc_enable priorities as lossless PG numbers and looks the
  profile up in the SKU's pg_profile_lookup.ini by speed and CABLE_LENGTH. CABLE_LENGTH is therefore the table's
  length at or above the port's cable (15 m -> 40m on an SN5600), and the lossless profile
  ``pg_lossless_<speed>_<cable>_profile`` carries exactly that row (xon, xoff, size, threshold as dynamic_th), so
  buffermgrd reuses it and finds it in its table. A cable beyond the table's longest row is a check error.
- Buffer model ``dynamic``, as NVIDIA's SKU templates write that mode (buffers_dynamic.json.j2):
  DEVICE_METADATA.buffer_model ``dynamic``; each lossless PG ``profile: NULL``, which buffermgrdyn takes as
  "compute the headroom" (handleOneBufferPgEntry), with the release's lua; CABLE_LENGTH the cable in whole
  metres; DEFAULT_LOSSLESS_BUFFER_PARAMETER|AZURE default_dynamic_th 0 (and over_subscribe_ratio with a shared
  headroom pool); LOSSLESS_TRAFFIC_PATTERN|AZURE the lossless MTU and the release's small-packet percentage.
  pfc-headroom.csv predicts what buffermgrd computes.
- VERSIONS|DATABASE is the release's config_db schema version (nos/sonic.yaml ``db_version``), as ``config save``
  on that release writes it: db_migrator then knows the file needs no migration.
- ``docker_routing_config_mode`` is ``separated``: bgpcfgd renders FRR's bgpd.conf from CONFIG_DB
  (BGP_NEIGHBOR in the template form keyed by peer IP, the ASN from DEVICE_METADATA.bgp_asn, router-id and
  advertised /32 from Loopback0, the leaf's host VLAN subnet advertised). ``split`` would make FRR ignore
  CONFIG_DB and the BGP_NEIGHBOR table with it.
- FEC ``rs`` at 25G and above (RS-FEC is mandatory on PAM4 lanes), ``none`` below.
- Management: MGMT_INTERFACE needs a default gateway (the YANG's must condition requires ``gwaddr``), so it is
  written only with the spec's ``management_gateway``; with it MGMT_VRF_CONFIG enables SONiC's management VRF
  ("mgmt": hostcfgd moves eth0 and its default route into it).
- MLAG pair (``attachment: mlag``), as SONiC's ICCP MC-LAG takes it (sonic-mclag.yang, sonic-portchannel.yang;
  sonic-net/SONiC doc/mclag/MCLAG_Enhancements_HLD.md): MCLAG_DOMAIN|<pair number> with ``source_ip`` this leaf's
  Loopback0 and ``peer_ip`` the peer's (the ICCP session runs over the routed fabric, so losing the peer link does
  not end it) and ``peer_link`` a PortChannel of the peer-link ports, a tagged member of the host VLAN; each host
  bond a PortChannel numbered by its MLAG id on both leaves (PORTCHANNEL, PORTCHANNEL_MEMBER, ``fast_rate`` as
  the host's lacp-rate), an MCLAG_INTERFACE and the VLAN's untagged member in the host port's place. The VLAN
  interface carries the pair's gateway on both leaves: "Current design mandates configuring same IP address on
  the VLAN interface for each VLAN of which an MCLAG is a member" (the HLD, 2.1.9; MCLAG_UNIQUE_IP is left out),
  so both announce the pair subnet; ICCP syncs ARP and MACs, and the standby takes the active's LACP system ID.
- ``default_pfcwd_status`` is left unset (disable): ``pfcwd start_default`` would otherwise rewrite PFC_WD with
  its own defaults; the per-port PFC_WD entries here carry the spec's times.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.features.ethernet.nos.sonic.headroom import catalog
from fabricgen.features.ethernet.nos.sonic.layout import DATA, SonicLayout, SonicLayoutError, sonic_layouts
from fabricgen.features.ethernet.nos.sonic.pools import pool_budget
from fabricgen.features.ethernet.nos.sonic.sheet import headroom_csv
from fabricgen.features.ethernet.secrets import management_secrets
from fabricgen.features.ethernet.switch_view import (
    BGP_HOLD_S,
    BGP_KEEPALIVE_S,
    HOST_VLAN,
    SwitchView,
)
from fabricgen.model.ethernet import RoceQos
from fabricgen.model.topology import Topology

QOS_MAP = "ROCE"                    # name of every QoS map fabricgen writes
WRED_PROFILE = "ROCE_ECN"
SCHEDULER_LOSSLESS = "scheduler.lossless"
SCHEDULER_LOSSY = "scheduler.lossy"
SCHEDULER_STRICT = "scheduler.strict"
ROUTING_CONFIG_MODE = "separated"   # FRR config generated from CONFIG_DB by bgpcfgd (see module doc)
RS_FEC_MIN_GBPS = 25
PFCWD_POLL_INTERVAL_MS = 100        # YANG range 100..1000; the spec's detection time is at least 100
PORT_MTU_RANGE = (68, 9216)         # sonic-port.yang
QUEUES = range(8)
LOSSLESS_DYNAMIC_TH = "0"           # buffers_config.j2 DEFAULT_LOSSLESS_BUFFER_PARAMETER default_dynamic_th
NULL_PROFILE = "NULL"               # dynamic model: buffermgrd computes the PG's headroom
# CABLE_LENGTH of a port without a lossless PG: buffermgrd's doSpeedUpdateTask retries a port without a length
# forever ("Cable length is not set") and skips one at "0m" (sonic-swss cfgmgr/buffermgr.cpp, 202505 l.145-155)
NO_LOSSLESS_CABLE = "0m"
# a dark port's FEC as SONiC's platform.json port generation writes it: rs from 50G a lane (sonic-config-engine
# portconfig.py BreakoutCfg.get_config)
PAM4_LANE_MBPS = 50_000


def _prefixlen(network: str) -> str:
    return network.rsplit("/", 1)[1]


def _ranges(values: list[int]) -> Iterator[str]:
    """Contiguous runs of sorted integers as SONiC index ranges: [0, 1, 2, 4, 5] -> "0-2", "4-5"."""
    start = prev = values[0]
    for value in [*values[1:], None]:
        if value is not None and value == prev + 1:
            prev = value
            continue
        yield str(start) if start == prev else f"{start}-{prev}"
        if value is not None:
            start = prev = value


def _check_qos(view: SwitchView, qos: RoceQos) -> None:
    lossless, cnp = qos.lossless, qos.cnp
    if lossless.priority == 0:
        raise ValueError(f"{view.name}: lossless priority 0 would share priority group 0 with all lossy traffic")
    if lossless.priority == cnp.priority or lossless.dscp == cnp.dscp:
        raise ValueError(f"{view.name}: the lossless class (DSCP {lossless.dscp}, priority {lossless.priority}) and "
                         f"CNP (DSCP {cnp.dscp}, priority {cnp.priority}) must differ")


def _buffer_tables(layout: SonicLayout) -> dict[str, Any]:
    """The SKU's pools and profiles, and per port its PG, queue and profile-list objects; with a lossless class
    the lossless PG (its table row, or NULL in the dynamic model) and queue, and CABLE_LENGTH."""
    sku, qos, dynamic = layout.sku, layout.view.qos, layout.dynamic
    model = "dynamic" if dynamic else "traditional"
    objects = sku.port_buffers[model]
    pools = sku.dynamic_pools if dynamic else sku.pools[layout.topology]
    tables: dict[str, Any] = {
        "BUFFER_POOL": {name: dict(fields) for name, fields in pools.items()},
        "BUFFER_PROFILE": {name: dict(fields) for name, fields in sku.profiles.items()},
    }
    lossless = qos.lossless.priority if qos is not None else None
    lossy_queues = [q for q in QUEUES if q != lossless]
    lossy_pg, lossless_pg_null = {"profile": objects.lossy_pg}, {"profile": NULL_PROFILE}
    lossless_queue, lossy_queue = {"profile": objects.lossless_queue}, {"profile": objects.lossy_queue}
    ingress, egress = {"profile_list": objects.ingress_profiles}, {"profile_list": objects.egress_profiles}
    lossy_ranges = list(_ranges(lossy_queues))
    per_port: dict[str, dict[str, Any]] = {name: {} for name in (
        "BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST")}
    lossless_pgs: dict[str, dict[str, str]] = {}
    cables: dict[str, str] = {}
    for port in layout.ports:
        n = port.name
        per_port["BUFFER_PG"][f"{n}|0"] = lossy_pg
        per_port["BUFFER_QUEUE"].update({f"{n}|{r}": lossy_queue for r in lossy_ranges})
        per_port["BUFFER_PORT_INGRESS_PROFILE_LIST"][n] = ingress
        per_port["BUFFER_PORT_EGRESS_PROFILE_LIST"][n] = egress
        if lossless is None:
            cables[n] = NO_LOSSLESS_CABLE
            continue
        per_port["BUFFER_QUEUE"][f"{n}|{lossless}"] = lossless_queue
        cables[n] = port.cable_length
        if dynamic:
            per_port["BUFFER_PG"][f"{n}|{lossless}"] = lossless_pg_null
            continue
        if port.profile not in lossless_pgs:
            row = port.row
            assert row is not None  # sonic_layout found a row for every lossless port, or refused the switch
            tables["BUFFER_PROFILE"][port.profile] = {"pool": "ingress_lossless_pool", "xon": str(row.xon),
                                                      "xoff": str(row.xoff), "size": str(row.size),
                                                      "dynamic_th": row.threshold}
            lossless_pgs[port.profile] = {"profile": port.profile}
        per_port["BUFFER_PG"][f"{n}|{lossless}"] = lossless_pgs[port.profile]
    inactive = sku.inactive
    if layout.dark and not dynamic:
        tables["BUFFER_POOL"].update({name: dict(fields) for name, fields in inactive.pools.items()})
        tables["BUFFER_PROFILE"].update({name: dict(fields) for name, fields in inactive.profiles.items()})
    zero = {table: {suffix: dict(fields) for suffix, fields in entries.items()}
            for table, entries in inactive.port.items()}
    for dark in layout.dark:
        n = dark.name
        cables[n] = NO_LOSSLESS_CABLE
        if dynamic:  # as on a cabled port: buffermgrdyn itself gives an admin-down port zero profiles
            per_port["BUFFER_PG"][f"{n}|0"] = lossy_pg
            per_port["BUFFER_QUEUE"].update({f"{n}|{r}": lossy_queue for r in lossy_ranges})
            if lossless is not None:
                per_port["BUFFER_QUEUE"][f"{n}|{lossless}"] = lossless_queue
            per_port["BUFFER_PORT_INGRESS_PROFILE_LIST"][n] = ingress
            per_port["BUFFER_PORT_EGRESS_PROFILE_LIST"][n] = egress
            continue
        for table, entries in zero.items():
            per_port[table].update({f"{n}|{suffix}" if suffix else n: fields for suffix, fields in entries.items()})
    tables.update(per_port)
    if not dynamic:
        _fit_pools(layout, tables)
    if cables:
        tables["CABLE_LENGTH"] = {"AZURE": cables}
    if dynamic and qos is not None:
        params = {"default_dynamic_th": LOSSLESS_DYNAMIC_TH}
        if qos.over_subscribe_ratio:
            params["over_subscribe_ratio"] = str(qos.over_subscribe_ratio)
        tables["DEFAULT_LOSSLESS_BUFFER_PARAMETER"] = {"AZURE": params}
        pattern = {"mtu": str(catalog().lossless_mtu),
                   "small_packet_percentage": str(layout.facts["small_packet_percentage"])}
        tables["LOSSLESS_TRAFFIC_PATTERN"] = {"AZURE": pattern}
    return tables


def _fit_pools(layout: SonicLayout, tables: dict[str, Any]) -> None:
    """Traditional model: each pool the SKU's dynamic template leaves to buffermgrd's pool plugin gets at most what
    that plugin's arithmetic leaves it (:mod:`.pools`) once this switch's PGs, queues and reserves are taken. The
    SKU's size is kept where it fits; a switch whose lossless PGs reserve more than the template assumed (longer
    cables than its default) gets the smaller size instead of pools the ASIC cannot hold."""
    sku, asic = layout.sku, layout.switch.asic
    shared = [name for name, pool in sku.dynamic_pools.items() if "size" not in pool]
    ingress = sum(1 for name in shared if sku.dynamic_pools[name].get("type") == "ingress")
    ports = {p.name: {"lanes": p.sku_port.lanes, "admin_status": "up"} for p in layout.ports}
    ports.update({p.name: {"lanes": p.lanes, "admin_status": "down"} for p in layout.dark})
    budget = pool_budget({**tables, "PORT": ports}, asic.cell_size, asic.pipeline_latency_kb, ingress)
    for name in shared:
        pool = tables["BUFFER_POOL"][name]
        if int(pool["size"]) > budget.pool_size:
            pool["size"] = str(budget.pool_size)


def _qos_tables(layout: SonicLayout, qos: RoceQos) -> dict[str, Any]:
    view = layout.view
    _check_qos(view, qos)
    p, c = qos.lossless.priority, qos.cnp.priority
    dscp_to_tc = {str(d): "0" for d in range(64)}
    dscp_to_tc[str(qos.lossless.dscp)] = str(p)
    dscp_to_tc[str(qos.cnp.dscp)] = str(c)
    tables: dict[str, Any] = {
        "DSCP_TO_TC_MAP": {QOS_MAP: dscp_to_tc},
        "TC_TO_PRIORITY_GROUP_MAP": {QOS_MAP: {str(tc): str(tc if tc == p else 0) for tc in QUEUES}},
        "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP": {QOS_MAP: {str(p): str(p)}},
        "TC_TO_QUEUE_MAP": {QOS_MAP: {str(tc): str(tc) for tc in QUEUES}},
        "MAP_PFC_PRIORITY_TO_QUEUE": {QOS_MAP: {str(pr): str(pr) for pr in QUEUES}},
        "SCHEDULER": {
            SCHEDULER_LOSSLESS: {"type": "DWRR", "weight": str(qos.lossless_weight)},
            SCHEDULER_LOSSY: {"type": "DWRR", "weight": str(max(1, 100 - qos.lossless_weight))},
            SCHEDULER_STRICT: {"type": "STRICT"},
        },
        "WRED_PROFILE": {WRED_PROFILE: {
            "ecn": "ecn_all", "wred_green_enable": "true",
            "green_min_threshold": str(qos.ecn_min_kb * 1024), "green_max_threshold": str(qos.ecn_max_kb * 1024),
            "green_drop_probability": str(qos.ecn_max_probability),
        }},
        "PFC_WD": {"GLOBAL": {"POLL_INTERVAL": str(PFCWD_POLL_INTERVAL_MS)}},
    }
    # Every port shares one object per entry kind: the same settings, and dump_config_db encodes each object once.
    port_qos_map = {"dscp_to_tc_map": QOS_MAP, "tc_to_queue_map": QOS_MAP, "tc_to_pg_map": QOS_MAP,
                    "pfc_to_queue_map": QOS_MAP, "pfc_to_pg_map": QOS_MAP, "pfc_enable": str(p),
                    "pfcwd_sw_enable": str(p)}
    queue = {q: {"scheduler": SCHEDULER_LOSSLESS, "wred_profile": WRED_PROFILE} if q == p
             else {"scheduler": SCHEDULER_STRICT if q == c else SCHEDULER_LOSSY} for q in QUEUES}
    watchdog = {"action": DATA.pfc_watchdog_actions[qos.pfcwd_action], "detection_time": str(qos.pfcwd_detect_ms),
                "restoration_time": str(qos.pfcwd_restore_ms)}
    tables["PORT_QOS_MAP"], tables["QUEUE"] = {}, {}
    for port in layout.ports:
        n = port.name
        tables["PORT_QOS_MAP"][n] = port_qos_map
        tables["QUEUE"].update({f"{n}|{q}": entry for q, entry in queue.items()})
        tables["PFC_WD"][n] = watchdog
    return tables


def _baseline(view: SwitchView, in_vrf: bool) -> dict[str, Any]:
    """NTP, DNS, syslog, SNMP and TACACS+ (sonic-ntp/-dns/-syslog/-snmp/-system-tacacs.yang), in the management VRF
    when the switch has one, else in the default VRF with the SNMP agent on its loopback. The TACACS+ passkey, the
    SNMP community and TACACS+ login (which the YANG refuses without the passkey) are management-secrets.sh's."""
    m = view.baseline
    assert m is not None
    vrf = DATA.management_vrf if in_vrf else "default"
    tables: dict[str, Any] = {}
    if m.ntp:
        tables["NTP"] = {"global": {"vrf": vrf}}
        tables["NTP_SERVER"] = {server: {"association_type": "server", "iburst": "on"} for server in m.ntp}
    if m.dns_servers:
        tables["DNS_NAMESERVER"] = {server: {} for server in m.dns_servers}
    if m.syslog:
        tables["SYSLOG_SERVER"] = {server: {"port": str(port), "vrf": vrf} for server, port in m.syslog}
    if m.snmp_community is not None:
        agent = view.management if in_vrf else view.loopback
        # key agent_ip|port|vrf, as `config snmpagentaddress add <ip> [-v mgmt]` writes it: no port = snmpd's 161
        tables["SNMP_AGENT_ADDRESS_CONFIG"] = {f"{agent}||{DATA.management_vrf if in_vrf else ''}": {}}
        about = {"LOCATION": {"Location": m.snmp_location}, "CONTACT": {"Contact": m.snmp_contact}}
        if m.snmp_location or m.snmp_contact:
            tables["SNMP"] = {key: entry for key, entry in about.items() if next(iter(entry.values()))}
    if m.tacacs_servers:
        tables["TACPLUS"] = {"global": {"auth_type": "pap", "timeout": str(m.tacacs_timeout)}}
        tables["TACPLUS_SERVER"] = {server: {"priority": str(len(m.tacacs_servers) - i), "tcp_port": "49",
                                             "timeout": str(m.tacacs_timeout), "vrf": vrf}
                                    for i, server in enumerate(m.tacacs_servers)}
    return tables


def _mclag(layout: SonicLayout, vlan: str, members: dict[str, Any]) -> dict[str, Any]:
    """An MLAG leaf's MC-LAG tables (module doc); adds the peer link and the host port-channels to ``members``."""
    view, mlag = layout.view, layout.view.mlag
    assert mlag is not None
    mtu = str(view.mtu)
    peer_link = DATA.interface("peer_link")
    channels: dict[str, dict[str, str]] = {peer_link: {"admin_status": "up", "mtu": mtu, "min_links": "1",
                                                       "lacp_key": "auto"}}
    channel_members: dict[str, dict[str, str]] = {f"{peer_link}|{p.name}": {} for p in layout.ports
                                                  if p.view.kind == "peer"}
    interfaces: dict[str, dict[str, str]] = {}
    for port in layout.ports:
        if port.view.lag:
            name = DATA.interface("portchannel", lag=port.view.lag)
            channels[name] = {"admin_status": "up", "mtu": mtu, "min_links": "1", "lacp_key": "auto",
                              "fast_rate": "true" if port.view.lacp_rate == "fast" else "false"}
            channel_members[f"{name}|{port.name}"] = {}
            interfaces[f"{mlag.domain}|{name}"] = {"if_type": "PortChannel"}
            members[f"{vlan}|{name}"] = {"tagging_mode": "untagged"}
    members[f"{vlan}|{peer_link}"] = {"tagging_mode": "tagged"}
    return {
        "PORTCHANNEL": channels, "PORTCHANNEL_MEMBER": channel_members, "MCLAG_INTERFACE": interfaces,
        "MCLAG_DOMAIN": {str(mlag.domain): {"source_ip": view.loopback, "peer_ip": mlag.peer_loopback,
                                            "peer_link": peer_link}},
    }


def config_db(layout: SonicLayout, *, management_gateway: str = "") -> dict[str, Any]:
    """The switch's config_db.json content (module doc); MGMT_INTERFACE only with a management gateway."""
    view, sku = layout.view, layout.sku
    low, high = PORT_MTU_RANGE
    if not low <= view.mtu <= high:
        raise ValueError(f"{view.name}: port MTU {view.mtu} is outside SONiC's {low}..{high}")
    loopback = DATA.interface("loopback")
    db: dict[str, Any] = {
        "DEVICE_METADATA": {"localhost": {
            "hostname": view.name, "platform": sku.platform, "hwsku": sku.hwsku, "type": layout.device_type,
            "bgp_asn": str(view.asn),
            "buffer_model": view.qos.buffer_model if view.qos is not None else "traditional",
            "docker_routing_config_mode": ROUTING_CONFIG_MODE,
        }},
        "PORT": {},
        "LOOPBACK_INTERFACE": {loopback: {}, f"{loopback}|{view.loopback}/32": {}},
        "VERSIONS": {"DATABASE": {"VERSION": str(layout.facts["db_version"])}},
    }
    for port in layout.ports:
        pv, sp = port.view, port.sku_port
        entry = {
            "admin_status": "up", "alias": sp.alias, "index": str(sp.cage), "lanes": sp.lanes,
            "speed": str(port.speed_mbps), "mtu": str(view.mtu),
            "fec": pv.fec or ("rs" if pv.gbps >= RS_FEC_MIN_GBPS else "none"),
            "description": f"{pv.peer}:{pv.peer_port}",
        }
        if layout.subports and sp.cage_ports > 1:
            entry["subport"] = str(sp.position)
        db["PORT"][port.name] = entry
        if pv.kind in ("host", "peer"):  # a VLAN member (the peer link: through its PortChannel)
            continue
        db.setdefault("INTERFACE", {}).update({port.name: {}, f"{port.name}|{pv.address}": {}})
        db.setdefault("BGP_NEIGHBOR", {})[pv.peer_address] = {
            "asn": str(pv.peer_asn), "name": pv.peer, "local_addr": pv.address.split("/")[0],
            "admin_status": "up", "keepalive": str(BGP_KEEPALIVE_S), "holdtime": str(BGP_HOLD_S),
            "nhopself": "0", "rrclient": "0",
        }
    for sp in layout.dark:
        entry = {"admin_status": "down", "alias": sp.alias, "index": str(sp.cage), "lanes": sp.lanes,
                 "speed": str(sp.default_speed), "mtu": str(view.mtu)}
        if sp.default_speed // sp.lane_count >= PAM4_LANE_MBPS:
            entry["fec"] = "rs"
        if layout.subports and sp.cage_ports > 1:
            entry["subport"] = str(sp.position)
        db["PORT"][sp.name] = entry
    db["BREAKOUT_CFG"] = {rows[0].name: {"brkout_mode": rows[0].mode} for rows in sku.ports.values()}
    hosts = [p for p in layout.ports if p.view.kind == "host"]
    if hosts and view.gateway:
        vlan = DATA.interface("vlan", vlan=HOST_VLAN)
        db["VLAN"] = {vlan: {"vlanid": str(HOST_VLAN), "mtu": str(view.mtu), "admin_status": "up"}}
        db["VLAN_MEMBER"] = {f"{vlan}|{p.name}": {"tagging_mode": "untagged"} for p in hosts if not p.view.lag}
        db["VLAN_INTERFACE"] = {vlan: {}, f"{vlan}|{view.gateway}/{_prefixlen(view.host_subnet)}": {}}
        if view.mlag is not None:
            db.update(_mclag(layout, vlan, db["VLAN_MEMBER"]))
        if view.pod_gateway:  # the pods' gateway; bgpcfgd announces every VLAN_INTERFACE prefix
            db["VLAN_INTERFACE"][f"{vlan}|{view.pod_gateway}/{_prefixlen(view.pod_subnet)}"] = {}
    management = view.fabric.addressing.management if view.fabric.addressing else None
    in_vrf = bool(view.management and management and management_gateway)
    if in_vrf:
        eth0 = DATA.management_interface
        db["MGMT_PORT"] = {eth0: {"alias": eth0, "admin_status": "up"}}
        address = f"{view.management}/{_prefixlen(management or '')}"
        db["MGMT_INTERFACE"] = {f"{eth0}|{address}": {"gwaddr": management_gateway}}
        db["MGMT_VRF_CONFIG"] = {"vrf_global": {"mgmtVrfEnabled": "true"}}
    if view.baseline is not None:
        db.update(_baseline(view, in_vrf))
    db.update(_buffer_tables(layout))
    if view.qos is not None:
        db.update(_qos_tables(layout, view.qos))
    return db


_ENCODE = json.JSONEncoder(sort_keys=True).encode


def dump_config_db(db: dict[str, dict[str, Any]]) -> str:
    """config_db.json laid out one table per block and one key per line, each key's fields on that line.

    Diffs stay one line per changed key. Encoding runs in json's C encoder (indent= would switch to the
    pure-Python one), and the many identical field sets (every port's QUEUE, BUFFER_PG, PFC_WD ...) are encoded
    once: together ~4x faster on a 1,000-switch render.
    """
    encoded: dict[tuple[tuple[str, Any], ...], str] = {}
    by_object: dict[int, str] = {}  # the db holds every value for the whole dump, so ids stay unique

    def encode(value: Any) -> str:
        text = by_object.get(id(value))
        if text is not None:
            return text
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            text = _ENCODE(value)
        elif (key := tuple(sorted(value.items()))) in encoded:
            text = encoded[key]
        else:
            text = encoded[key] = _ENCODE(value)
        by_object[id(value)] = text
        return text

    def name(key: str) -> str:
        """SONiC keys are plain ASCII names and addresses: quote them without the encoder."""
        plain = key.isascii() and key.isprintable() and '"' not in key and "\\" not in key
        return f'"{key}"' if plain else _ENCODE(key)

    tables = []
    for table in sorted(db):
        rows = ",\n".join(f"    {name(key)}: {encode(value)}" for key, value in sorted(db[table].items()))
        tables.append(f"  {_ENCODE(table)}: {{\n{rows}\n  }}" if rows else f"  {_ENCODE(table)}: {{}}")
    return "{\n" + ",\n".join(tables) + "\n}\n"


def render(topology: Topology) -> list[Artifact]:
    source = PurePosixPath(topology.cluster.source).name
    out = []
    for view, layout in sonic_layouts(topology):
        if isinstance(layout, SonicLayoutError):  # the SONiC check refused every such switch
            raise layout
        addressing = view.fabric.addressing
        gateway = addressing.management_gateway if addressing is not None else None
        content = dump_config_db(config_db(layout, management_gateway=gateway or ""))
        out.append(Artifact(f"switches/{view.name}/{DATA.config_file(view.name)}", content.encode("utf-8")))
        if view.qos is not None:
            out.append(Artifact(f"switches/{view.name}/pfc-headroom.csv", headroom_csv(layout)))
        out.extend(management_secrets(view, source))
    return out
