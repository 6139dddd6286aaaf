"""Prometheus rules of one fabric: per-cable recording rules joining the exporters' counters to the plan's info series
(served as data, see ``info``), and alerts on them, so every port alert carries ``fabric``, ``rail``, ``leaf`` and
``cable``.

Metric names are the exporters' own (checked in their source): node_exporter's infiniband collector
(``node_infiniband_*``: port counters, port state and the mlx5 ``hw_counters``, the latter from node_exporter
1.11.0) and ethtool collector (``node_ethtool_*``: mlx5's ``rx_prio<p>_pause`` becomes
``node_ethtool_received_prio<p>_pause``), treydock/infiniband_exporter (``infiniband_switch_*``), NVIDIA's
dcgm-exporter (``DCGM_FI_*``) and fabricgen's own Lustre client collector (``fabricgen_lustre_*``, ``lustre``).

The plan is joined through ``last_over_time`` of its info series: one failed scrape of the plan writes staleness
markers for all of it, and an instant selector would then empty every rule and reset every ``for:``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fabricgen.features.monitoring.info import HOST_INFO, LUSTRE_INFO, PLAN_JOB, SWITCH_INFO, textfile_name
from fabricgen.features.monitoring.lustre import COLLECTOR, LNET, LUSTRE_CLIENT, PROM_FILE
from fabricgen.features.monitoring.plan import host_ports, planned_gbps, switch_ports
from fabricgen.model.cluster import FabricType
from fabricgen.model.monitoring import Thresholds
from fabricgen.model.topology import FabricTopology, Topology

HOST_LABELS = "fabric, cable, rail, su, leaf, leaf_port"
SWITCH_LABELS = "fabric, cable, rail, leaf, peer, peer_port"
CABLE = "cable {{ $labels.cable }} (rail {{ $labels.rail }}, leaf {{ $labels.leaf }})"
PLAN_WINDOW = "15m"  # how long a join outlives a failed scrape of the plan
# PortXmitWait ticks: NVIDIA gives the bandwidth lost as xmit_wait x (7 + 1) x 8 bits on current generations
# (tick setting 7: ConnectX-7, Quantum-2; NVIDIA/ib-traffic-monitor#3), so one tick is 8 bytes of line time
XMIT_WAIT_BYTES_PER_TICK = 8
# The PortCounters the kernel (drivers/infiniband/core/sysfs.c PORT_PMA_ATTR) and perfquery read at fixed widths;
# IBTA counters stop at all ones instead of wrapping, and increase() is 0 from then on
SATURATING = (("symbol_error", 16), ("link_downed", 8), ("port_transmit_wait", 32))
PORT_ACTIVE = 4  # node_infiniband_state_id: the port's logical state, 4 = ACTIVE
SLOW_LINK = 0.9  # a port below this share of its planned rate trained at a lower width or speed


def host_info(fabric: str, selector: str = "") -> str:
    return f'last_over_time({HOST_INFO}{{fabric="{fabric}"{selector}}}[{PLAN_WINDOW}])'


def switch_info(fabric: str, selector: str = "") -> str:
    return f'last_over_time({SWITCH_INFO}{{fabric="{fabric}"{selector}}}[{PLAN_WINDOW}])'


def lustre_info(fabric: str, fsname: str = "") -> str:
    selector = f', filesystem="{fsname}"' if fsname else ""
    return f'last_over_time({LUSTRE_INFO}{{fabric="{fabric}"{selector}}}[{PLAN_WINDOW}])'


def on_host(fabric: str, expr: str, selector: str = "") -> str:
    """``expr`` over node_exporter's infiniband series (labels node, device, port) joined to the plan's cables."""
    return f"({expr}) * on(node, device, port) group_left({HOST_LABELS}) {host_info(fabric, selector)}"


def on_netdev(fabric: str, expr: str) -> str:
    """``expr`` over node_exporter's ethtool series (``device`` is the netdev) joined to the plan's cables."""
    return (f'label_replace({expr}, "netdev", "$1", "device", "(.*)") * on(node, netdev) '
            f'group_left({HOST_LABELS}) {host_info(fabric)}')


def named(expr: str) -> str:
    """infiniband_exporter's series (guid, port) named by their switch (``--ibnetdiscover.node-name-map``)."""
    return f"(({expr}) * on(guid) group_left(switch) infiniband_switch_info)"


def on_switch(fabric: str, expr: str, selector: str = "") -> str:
    """``expr`` over infiniband_exporter's switch series (guid, port) named by switch, joined to the plan."""
    return f"{named(expr)} * on(switch, port) group_left({SWITCH_LABELS}) {switch_info(fabric, selector)}"


def planned(info: str) -> str:
    """The plan's ports themselves, without the plan job's ``job`` and ``instance``."""
    return f"max without(job, instance) ({info})"


def node_up(job: str = "node") -> str:
    return f'on(node) (up{{job="{job}"}} == 1)'


def _record(name: str, expr: str) -> dict[str, Any]:
    return {"record": name, "expr": expr}


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, **({"for": duration} if duration != "0m" else {}),
            "labels": {"severity": severity}, "annotations": {"summary": summary, "description": description}}


def stalled(wait: str, rate: str) -> str:
    """The share of a port's time it had data but no credit to send it, in percent."""
    return f"100 * {XMIT_WAIT_BYTES_PER_TICK} * rate({wait}[5m]) / {rate}"


def ib_records(fabric: str) -> Iterator[dict[str, Any]]:
    """InfiniBand link health per cable, host end (node_exporter) and switch end (infiniband_exporter)."""
    yield _record("fabricgen:host_port_link_downed:increase10m",
                  on_host(fabric, "increase(node_infiniband_link_downed_total[10m])"))
    yield _record("fabricgen:host_port_symbol_errors:increase1h",
                  on_host(fabric, "increase(node_infiniband_symbol_error_total[1h])"))
    yield _record("fabricgen:host_port_xmit_wait_stalled:percent", on_host(fabric, stalled(
        "node_infiniband_port_transmit_wait_total", "node_infiniband_rate_bytes_per_second")))
    yield _record("fabricgen:switch_port_link_downed:increase10m",
                  on_switch(fabric, "increase(infiniband_switch_port_link_downed_total[10m])"))
    yield _record("fabricgen:switch_port_symbol_errors:increase1h",
                  on_switch(fabric, "increase(infiniband_switch_port_symbol_error_total[1h])"))
    yield _record("fabricgen:switch_port_xmit_wait_stalled:percent", on_switch(fabric, stalled(
        "infiniband_switch_port_transmit_wait_total", "infiniband_switch_port_rate_bytes_per_second")))


def rdma_records(fabric: str) -> Iterator[dict[str, Any]]:
    """What every RDMA port reports (InfiniBand and RoCE HCAs alike): utilisation and loss."""
    yield _record("fabricgen:host_port_tx_utilisation:percent", on_host(fabric, (
        "100 * rate(node_infiniband_port_data_transmitted_bytes_total[5m]) / node_infiniband_rate_bytes_per_second")))
    yield _record("fabricgen:host_port_rdma_loss:percent", on_host(fabric, (
        "100 * rate(node_infiniband_out_of_sequence_packets_received_total[5m])"
        " / (rate(node_infiniband_port_packets_received_total[5m]) > 0)")))


def roce_records(fabric: str, lossless: int) -> Iterator[dict[str, Any]]:
    """RoCE congestion per cable: ECN marks, CNPs (sent by the notification point, handled or ignored by the
    reaction point) from the RDMA hw_counters, PFC pause time per direction from mlx5's ethtool counters."""
    yield _record("fabricgen:host_port_ecn_marked:percent", on_host(fabric, (
        "100 * rate(node_infiniband_np_ecn_marked_roce_packets_received_total[5m])"
        " / (rate(node_infiniband_port_packets_received_total[5m]) > 0)")))
    for name, counter in (("cnp_sent", "np_cnp_packets_sent_total"), ("cnp_handled", "rp_cnp_packets_handled_total"),
                          ("cnp_ignored", "rp_cnp_ignored_packets_received_total")):
        yield _record(f"fabricgen:host_port_{name}:rate5m", on_host(fabric, f"rate(node_infiniband_{counter}[5m])"))
    for direction in ("received", "transmitted"):  # mlx5's *_pause_duration counts microseconds paused
        yield _record(f"fabricgen:host_port_pfc_{direction}_paused:percent", on_netdev(
            fabric, f"100 * rate(node_ethtool_{direction}_prio{lossless}_pause_duration[5m]) / 1e6"))
    others = "".join(str(p) for p in range(8) if p != lossless)
    yield _record("fabricgen:host_port_pfc_lossy_pause:increase10m", on_netdev(fabric, (
        f'sum without(__name__) (increase({{__name__=~"node_ethtool_(received|transmitted)_prio[{others}]_pause"}}'
        "[10m]))")))
    yield _record("fabricgen:host_port_global_pause:increase10m", on_netdev(fabric, (
        'sum without(__name__) (increase({__name__=~"node_ethtool_(received|transmitted)_global_pause"}[10m]))')))
    yield _record("fabricgen:host_port_pause_storms:increase10m", on_netdev(fabric, (
        "increase(node_ethtool_transmitted_pause_storm_error_events[10m])")))


def _saturated(prefix: str) -> str:
    """Each saturating counter at its all-ones value, named in label ``counter`` (node_exporter's name; the
    switch series are ``infiniband_switch_port_<name without port_>``)."""
    switch = not prefix.startswith("node_")
    return " or ".join(f'label_replace({prefix}{name.removeprefix("port_") if switch else name}_total'
                       f' >= {2 ** bits - 1}, "counter", "{name}", "", "")' for name, bits in SATURATING)


def ib_alerts(fabric: str, t: Thresholds) -> Iterator[dict[str, Any]]:
    for end, where in (("host", "{{ $labels.node }} {{ $labels.device }} port {{ $labels.port }}"),
                       ("switch", "{{ $labels.switch }} port {{ $labels.port }}")):
        title = end.capitalize()
        yield _alert(f"IbLinkDowned{title}", f"fabricgen:{end}_port_link_downed:increase10m{{fabric=\"{fabric}\"}} > 0",
                     "0m", "critical", f"InfiniBand link went down: {CABLE}",
                     f"{where} counted {{{{ $value }}}} LinkDowned in 10 minutes: reseat or replace the cable and its"
                     " optics.")
        yield _alert(f"IbSymbolErrors{title}", (f"fabricgen:{end}_port_symbol_errors:increase1h{{fabric=\"{fabric}\"}}"
                                                f" > {t.symbol_errors_per_hour}"),
                     "0m", "warning", f"InfiniBand symbol errors: {CABLE}",
                     f"{where} counted {{{{ $value }}}} symbol errors in an hour (threshold"
                     f" {t.symbol_errors_per_hour}): a dirty or failing optic or fiber.")
        yield _alert(f"IbXmitWait{title}", (f"fabricgen:{end}_port_xmit_wait_stalled:percent{{fabric=\"{fabric}\"}}"
                                            f" > {t.xmit_wait_percent}"),
                     "15m", "warning", f"InfiniBand port waits to transmit: {CABLE}",
                     f"{where} had data but no credit to send it {{{{ $value }}}}% of the time (PortXmitWait at"
                     f" {XMIT_WAIT_BYTES_PER_TICK} bytes of line time per tick; threshold {t.xmit_wait_percent}%):"
                     " congestion or missing credits behind this cable.")
    counters = ", ".join(f"{name} {2 ** bits - 1}" for name, bits in SATURATING)
    yield _alert("IbCounterSaturatedHost", on_host(fabric, _saturated("node_infiniband_")), "0m", "warning",
                 f"InfiniBand error counter saturated: {CABLE}",
                 "{{ $labels.node }} {{ $labels.device }} port {{ $labels.port }}: {{ $labels.counter }} stopped at"
                 f" its maximum ({counters}), so its alerts can no longer fire: reset the port's counters"
                 " (perfquery -R) and look at the cable.")
    yield _alert("IbCounterSaturatedSwitch", on_switch(fabric, _saturated("infiniband_switch_port_")), "0m",
                 "warning", f"InfiniBand error counter saturated: {CABLE}",
                 "{{ $labels.switch }} port {{ $labels.port }}: {{ $labels.counter }} stopped at its maximum"
                 f" ({counters}), so its alerts can no longer fire: reset the port's counters (perfquery -R -G <guid>"
                 " <port>) and look at the cable.")
    exporter = f"infiniband-{fabric}"
    linked = "infiniband_switch_uplink_info"  # labelled switch (the node-name-map name) and port
    # only on switches ibnetdiscover finds (a dead switch shows as unlinked ports on its peers)
    yield _alert("IbSwitchPortNotLinked", (f"{planned(switch_info(fabric))} unless on(switch, port) {linked}"
                                           " and on(switch) infiniband_switch_info"
                                           f' and on() (up{{job="{exporter}"}} == 1)'),
                 "10m", "critical", f"Planned InfiniBand link not found: {CABLE}",
                 "ibnetdiscover finds {{ $labels.switch }} but no link on its port {{ $labels.port }}, planned to"
                 " {{ $labels.peer }} port {{ $labels.peer_port }}: the cable is unplugged, dead or not yet installed.")
    # the plan's peer is a switch name or a node, the discovered uplink a switch name or an HCA's node description
    # ("gpu001 mlx5_0", or "gpu001.example.org mlx5_0" with a domain): compare its first word up to a dot
    seen = f'label_replace({linked}, "peer", "$1", "uplink", "([^ .]*).*")'
    yield _alert("IbSwitchPortMiswired", (f"({planned(switch_info(fabric))} and on(switch, port) {linked})"
                                          f" unless on(switch, port, peer) {seen}"),
                 "10m", "critical", f"InfiniBand cable plugged to the wrong peer: {CABLE}",
                 "{{ $labels.switch }} port {{ $labels.port }} links to another device than the planned"
                 " {{ $labels.peer }}: check the cable's far end against the cabling sheet.")


def rdma_alerts(topology: Topology, ft: FabricTopology, t: Thresholds, gpus: bool) -> Iterator[dict[str, Any]]:
    fabric = ft.fabric.name
    where = "{{ $labels.node }} {{ $labels.device }}"
    yield _alert("RdmaLossHigh",
                 f"fabricgen:host_port_rdma_loss:percent{{fabric=\"{fabric}\"}} > {t.rdma_loss_percent}",
                 "5m", "critical", f"RDMA packet loss: {CABLE}",
                 f"{where} received {{{{ $value }}}}% of its packets out of sequence (alert {t.rdma_loss_percent}%,"
                 f" healthy below {t.rdma_loss_healthy_percent}%).")
    utilisation = f'fabricgen:host_port_tx_utilisation:percent{{fabric="{fabric}"}}'
    yield _alert("LinkUtilisationHigh", f"{utilisation} > {t.utilisation_high_percent}",
                 "15m", "warning", f"Port saturated: {CABLE}",
                 f"{where} transmits at {{{{ $value }}}}% of its link rate (alert above {t.utilisation_high_percent}%,"
                 " target 70-90%).")
    # busy: the port carries more than background traffic (ARP, MADs, agents) and, on a GPU fabric, a job holds
    # memory on one of the node's GPUs
    busy = f" and {utilisation} > {t.utilisation_busy_percent}"
    if gpus:
        busy += " and on(node) max by(node) (DCGM_FI_DEV_FB_USED) > 0"
    yield _alert("LinkUtilisationLow", f"{utilisation} < {t.utilisation_low_percent}{busy}",
                 "30m", "info", f"Port under-used by a running job: {CABLE}",
                 f"{where} transmits at {{{{ $value }}}}% of its link rate (below {t.utilisation_low_percent}%,"
                 f" above {t.utilisation_busy_percent}%, target 70-90%): a slow rail or a job that is not"
                 " rail-aligned.")
    yield _alert("RdmaPortNotActive", on_host(fabric, f"node_infiniband_state_id != {PORT_ACTIVE}"), "5m", "critical",
                 f"RDMA port not active: {CABLE}",
                 f"{where} port {{{{ $labels.port }}}} is in state {{{{ $value }}}} (4 = ACTIVE) for 5 minutes: the"
                 " link is down, not trained or, on InfiniBand, not configured by the subnet manager.")
    yield _alert("RdmaPortNotSeen", (f"{planned(host_info(fabric))} unless on(node, device, port)"
                                     f" node_infiniband_state_id and {node_up()}"),
                 "10m", "critical", f"Planned RDMA port not exported: {CABLE}",
                 "node_exporter on {{ $labels.node }} reports no RDMA device {{ $labels.device }} port"
                 " {{ $labels.port }}: the HCA is missing or dead, or the device is named otherwise than planned"
                 " (then every alert of this cable is silent).")
    yield _alert("RdmaHwCountersMissing", (f"{planned(host_info(fabric))} unless on(node, device, port)"
                                           " node_infiniband_out_of_sequence_packets_received_total and on(node,"
                                           " device, port) node_infiniband_state_id"),
                 "10m", "warning", f"No RDMA hw_counters: {CABLE}",
                 "node_exporter on {{ $labels.node }} exports {{ $labels.device }} but none of its"
                 " hw_counters: RDMA loss, ECN and CNP alerts cannot fire. node_exporter reads them from 1.11.0;"
                 " older versions and kernels without hw_counters do not.")
    gbps = planned_gbps(ft)
    hosts = sorted({p.speed for p in topology.derived(host_ports, ft)})
    yield _alert("RdmaLinkSlow", " or ".join(on_host(fabric, f"node_infiniband_rate_bytes_per_second < {slow(gbps[s])}",
                                                     f', speed="{s}"') for s in hosts),
                 "10m", "warning", f"Link trained below its planned speed: {CABLE}",
                 f"{where} port {{{{ $labels.port }}}} runs at {{{{ $value | humanize }}}}B/s, below the planned"
                 " {{ $labels.speed }}: fewer lanes or a lower speed (a damaged cable or optic, or a port forced"
                 " down); its utilisation is computed against the degraded rate.")
    if ft.fabric.type is FabricType.INFINIBAND:
        switches = sorted({p.speed for p in switch_ports(topology, ft)})
        yield _alert("IbSwitchLinkSlow", " or ".join(on_switch(
            fabric, f"infiniband_switch_port_rate_bytes_per_second < {slow(gbps[s])}", f', speed="{s}"')
            for s in switches), "10m", "warning", f"Link trained below its planned speed: {CABLE}",
            "{{ $labels.switch }} port {{ $labels.port }} runs at {{ $value | humanize }}B/s, below the planned"
            " {{ $labels.speed }}: fewer lanes or a lower speed.")


def slow(gbps: float) -> str:
    """The rate, in bytes/s, below which a port planned at ``gbps`` trained at a lower width or speed."""
    return f"{SLOW_LINK * gbps * 1e9 / 8:.0f}"


def roce_alerts(fabric: str, lossless: int, t: Thresholds) -> Iterator[dict[str, Any]]:
    where = "{{ $labels.node }} {{ $labels.netdev }}"
    yield _alert("RoceCnpIgnored", f"fabricgen:host_port_cnp_ignored:rate5m{{fabric=\"{fabric}\"}} > 0", "5m",
                 "critical", f"CNPs ignored (congestion control off): {CABLE}",
                 f"{where} ignores the CNPs it receives: RoCE congestion control (roce_rp) is not enabled on priority"
                 f" {lossless}.")
    yield _alert("RoceEcnMarksHigh", (f"fabricgen:host_port_ecn_marked:percent{{fabric=\"{fabric}\"}}"
                                      f" > {t.ecn_marked_percent}"),
                 "15m", "warning", f"ECN marks high: {CABLE}",
                 f"{{{{ $value }}}}% of the RoCE packets {where} receives are ECN-marked (threshold"
                 f" {t.ecn_marked_percent}%): a congested path towards it.")
    for direction in ("received", "transmitted"):
        yield _alert(f"RocePfcPause{direction.capitalize()}", (
            f"fabricgen:host_port_pfc_{direction}_paused:percent{{fabric=\"{fabric}\"}} > {t.pfc_paused_percent}"),
            "15m", "warning", f"PFC pauses on priority {lossless}: {CABLE}",
            f"{where} was paused ({direction} pause frames) {{{{ $value }}}}% of the time on priority {lossless}"
            f" (threshold {t.pfc_paused_percent}%).")
    pfc = (f'label_replace(node_ethtool_received_prio{lossless}_pause, "netdev", "$1", "device", "(.*)")')
    yield _alert("RocePfcNotEnabled", (f"{planned(host_info(fabric))} unless on(node, netdev) {pfc}"
                                       f" and {node_up()}"),
                 "10m", "critical", f"PFC off on the lossless priority: {CABLE}",
                 f"{where} has no PFC counters for priority {lossless}: mlx5 lists them only for priorities with PFC"
                 f" enabled, so PFC is off on {lossless} (the host's roce-qos was not applied) or node_exporter's"
                 " ethtool collector is not started as prometheus.yml says.")
    yield _alert("RocePfcPauseLossyPriority", (
        f"fabricgen:host_port_pfc_lossy_pause:increase10m{{fabric=\"{fabric}\"}} > 0"),
        "0m", "warning", f"PFC pauses on a lossy priority: {CABLE}",
        f"{where} has PFC enabled on a priority other than {lossless} and sent or received pause frames on it:"
        " host and switch disagree on the lossless class.")
    yield _alert("RoceGlobalPause", f"fabricgen:host_port_global_pause:increase10m{{fabric=\"{fabric}\"}} > 0", "0m",
                 "warning", f"Link-level (global) pause on a RoCE port: {CABLE}",
                 f"{where} sent or received global pause frames: link-level flow control is on (ethtool -A) and"
                 f" pauses every priority, not only {lossless}.")
    yield _alert("RocePfcStorm", f"fabricgen:host_port_pause_storms:increase10m{{fabric=\"{fabric}\"}} > 0", "0m",
                 "critical", f"PFC storm: {CABLE}",
                 f"{where}'s NIC stalled past its timeout and stopped sending pause frames (mlx5 device stall"
                 " prevention, tx_pause_storm_error_events): a stuck receiver or a PFC storm.")


def plan_alerts(fabric: str) -> Iterator[dict[str, Any]]:
    """The plan itself: without its info series every join above is empty, and no alert of the fabric can fire."""
    yield _alert("CablePlanMissing", f"absent({HOST_INFO}{{fabric=\"{fabric}\"}})", "10m", "critical",
                 f"No cable plan for fabric {fabric}: its cable alerts cannot fire",
                 f"Prometheus has no {HOST_INFO} of fabric {fabric}: node_exporter's textfile collector on the"
                 f" Prometheus host does not serve {textfile_name(fabric)} (missing, unreadable, or"
                 f" not scraped by job {PLAN_JOB}), so no counter of this fabric is joined to its cable.")


def fabric_rules(topology: Topology, ft: FabricTopology, t: Thresholds) -> list[dict[str, Any]]:
    """The rule groups of one monitored fabric: O(alerts) rules, the cables are data (``info``)."""
    fabric = ft.fabric.name
    ib = ft.fabric.type is FabricType.INFINIBAND
    gpus = any(p.gpu is not None for p in topology.derived(host_ports, ft))
    records = [*rdma_records(fabric)]
    alerts = [*plan_alerts(fabric), *rdma_alerts(topology, ft, t, gpus)]
    if ib:
        records += ib_records(fabric)
        alerts += ib_alerts(fabric, t)
    elif ft.fabric.qos is not None:
        lossless = ft.fabric.qos.lossless.priority
        records += roce_records(fabric, lossless)
        alerts += roce_alerts(fabric, lossless, t)
    if gpus:
        alerts += gpu_alerts(fabric, t)
    groups = [{"name": f"{fabric}-ports", "rules": records}, {"name": f"{fabric}-alerts", "rules": alerts}]
    lustre = [fs for fs in topology.cluster.lustre if fs.fabric == fabric]
    if lustre:
        groups.append({"name": f"{fabric}-lustre",
                       "rules": list(lustre_alerts(fabric, [fs.fsname for fs in lustre], t))})
    return groups


def data_waiting(t: Thresholds) -> str:
    """Nodes with a GPU that holds memory (a job is on it) but is idle above the data-wait share."""
    return (f"max by(node) (100 * (1 - DCGM_FI_PROF_GR_ENGINE_ACTIVE) and on(node, gpu) DCGM_FI_DEV_FB_USED > 0)"
            f" > {t.data_wait_percent}")


def lustre_alerts(fabric: str, fsnames: list[str], t: Thresholds) -> Iterator[dict[str, Any]]:
    """Lustre clients over ``fabric`` (fabricgen's collector, ``lustre``): per-client throughput per file system
    while the node's GPUs wait for data, LNet drops, and a client whose statistics are missing or stale."""
    floor = t.lustre_client_min_gbytes_per_s * 1e9
    for fsname in fsnames:
        rate = (f'sum by(node, filesystem) (rate({{__name__=~"{LUSTRE_CLIENT}_(read|write)_bytes_total",'
                f' filesystem="{fsname}"}}[5m]))')
        joined = f"{rate} * on(node, filesystem) group_left(fabric) {lustre_info(fabric, fsname)}"
        alert = _alert("LustreClientThroughputLow", f"{joined} < {floor:.0f} and on(node) {data_waiting(t)}",
                       "15m", "warning", f"Lustre {fsname} client slow while its GPUs wait: {{{{ $labels.node }}}}",
                       f"{{{{ $labels.node }}}} moves {{{{ $value | humanize }}}}B/s on {fsname} (alert below"
                       f" {t.lustre_client_min_gbytes_per_s} GB/s) while a GPU of it with a job idles above"
                       f" {t.data_wait_percent}%: the job is likely storage-bound.")
        alert["labels"]["filesystem"] = fsname
        yield alert
    missing = (f"{planned(lustre_info(fabric))} unless on(node, filesystem) {LUSTRE_CLIENT}_read_bytes_total"
               f" and {node_up()}")
    yield _alert("LustreClientStatsMissing", missing, "10m", "warning",
                 "No Lustre {{ $labels.filesystem }} client statistics: {{ $labels.node }}",
                 "{{ $labels.node }} reports no llite statistics of {{ $labels.filesystem }}: it is not mounted, or"
                 f" {COLLECTOR} does not run there (its timer, or node_exporter's textfile directory); the"
                 " client's Lustre alerts cannot fire.")
    clients = f"max by(node, fabric) ({lustre_info(fabric)})"
    stale = f'time() - node_textfile_mtime_seconds{{file=~"(.*/)?{PROM_FILE}"}}'
    yield _alert("LustreClientStatsStale", f"({stale}) * on(node) group_left(fabric) {clients} > 300", "5m",
                 "warning", "Lustre client statistics stale: {{ $labels.node }}",
                 f"{{{{ $labels.node }}}}'s {COLLECTOR} last wrote {{{{ $value | humanizeDuration }}}} ago: its"
                 " Lustre throughput reads as zero.")
    drops = (f"100 * rate({LNET}_drop_count_total[5m]) / (rate({LNET}_receive_count_total[5m])"
             f" + rate({LNET}_send_count_total[5m]) > 0)")
    yield _alert("LnetLossHigh", f"({drops}) * on(node) group_left(fabric) {clients} > {t.rdma_loss_percent}", "5m",
                 "critical", "LNet drops messages: {{ $labels.node }}",
                 f"{{{{ $labels.node }}}} dropped {{{{ $value }}}}% of its LNet messages (alert {t.rdma_loss_percent}%,"
                 f" healthy below {t.rdma_loss_healthy_percent}%).")


def gpu_alerts(fabric: str, t: Thresholds) -> Iterator[dict[str, Any]]:
    """GPUs idle while a job holds their memory (dcgm-exporter). NCCL's kernels keep the graphics engine active
    while they wait for the network, so this sees input, host and storage stalls, not the rails: no cable named."""
    idle = "100 * (1 - DCGM_FI_PROF_GR_ENGINE_ACTIVE) and on(node, gpu) DCGM_FI_DEV_FB_USED > 0"
    expr = (f"({idle}) * on(node, gpu) group_left(fabric) group by(node, gpu, fabric) ({host_info(fabric)})"
            f" > {t.data_wait_percent}")
    yield _alert("GpuDataWait", expr, "15m", "warning", "GPU waits: {{ $labels.node }} GPU {{ $labels.gpu }}",
                 f"GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} is idle {{{{ $value }}}}% of the time with a job"
                 f" on it (alert above {t.data_wait_percent}%): its input pipeline, the host or storage. Waits on the"
                 " network do not show here (NCCL's kernels spin on the GPU while they wait).")


def exporter_rules() -> list[dict[str, Any]]:
    """One group for the whole cluster: exporters down, the plan not scraped, node_exporter too old."""
    jobs = "node|dcgm|infiniband-.*"
    return [{"name": "fabricgen-exporters", "rules": [
        _alert("ExporterDown", f'up{{job=~"{jobs}"}} == 0', "5m", "critical",
               "Exporter down: {{ $labels.job }} on {{ $labels.instance }}",
               "Prometheus cannot scrape {{ $labels.instance }} (job {{ $labels.job }}): the host or the exporter is"
               " down, and no alert reads its counters."),
        _alert("CablePlanScrapeFailing", f'up{{job="{PLAN_JOB}"}} == 0', "5m", "critical",
               "The cable plan is not scraped",
               f"Job {PLAN_JOB} fails on {{{{ $labels.instance }}}}: the alerts keep the plan for {PLAN_WINDOW}"
               " (last_over_time), then every cable join is empty."),
        _alert("NodeExporterTooOld", ('node_exporter_build_info{job="node", version=~"0\\\\..*|1\\\\.([0-9]|10)'
                                      '\\\\..*"}'), "1h", "warning",
               "node_exporter {{ $labels.version }} on {{ $labels.instance }} has no RDMA hw_counters",
               "node_exporter exports the mlx5 hw_counters (out of sequence, ECN, CNP) from 1.11.0: with"
               " {{ $labels.version }} the RDMA loss, ECN and CNP alerts of this host cannot fire."),
    ]}]
