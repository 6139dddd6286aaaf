"""Prometheus rules of one fabric: per-cable recording rules joining the exporters' counters to the plan's info series
(served as data, see ``info``), and alerts on them, so every alert carries ``fabric``, ``rail``, ``leaf`` and
``cable``.

Metric names are the exporters' own (checked in their source): node_exporter's infiniband collector
(``node_infiniband_*``: port counters and the mlx5 ``hw_counters``) and ethtool collector (``node_ethtool_*``: mlx5's
``rx_prio<p>_pause`` becomes ``node_ethtool_received_prio<p>_pause``), treydock/infiniband_exporter
(``infiniband_switch_*``), HPE's lustre_exporter (``lustre_*``) and NVIDIA's dcgm-exporter (``DCGM_FI_*``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fabricgen.features.monitoring.info import HOST_INFO, PLAN_JOB, SWITCH_INFO, textfile_name
from fabricgen.features.monitoring.plan import host_ports
from fabricgen.model.cluster import FabricType
from fabricgen.model.monitoring import Thresholds
from fabricgen.model.topology import FabricTopology, Topology

HOST_LABELS = "fabric, cable, rail, su, leaf, leaf_port"
SWITCH_LABELS = "fabric, cable, rail, leaf, peer, peer_port"
CABLE = "cable {{ $labels.cable }} (rail {{ $labels.rail }}, leaf {{ $labels.leaf }})"


def on_host(fabric: str, expr: str) -> str:
    """``expr`` over node_exporter's infiniband series (labels node, device, port) joined to the plan's cables."""
    return f"({expr}) * on(node, device, port) group_left({HOST_LABELS}) {HOST_INFO}{{fabric=\"{fabric}\"}}"


def on_netdev(fabric: str, expr: str) -> str:
    """``expr`` over node_exporter's ethtool series (``device`` is the netdev) joined to the plan's cables."""
    return (f'label_replace({expr}, "netdev", "$1", "device", "(.*)") * on(node, netdev) '
            f'group_left({HOST_LABELS}) {HOST_INFO}{{fabric="{fabric}"}}')


def on_switch(fabric: str, expr: str) -> str:
    """``expr`` over infiniband_exporter's switch series (guid, port) named by switch, joined to the plan."""
    return (f"(({expr}) * on(guid) group_left(switch) infiniband_switch_info) * on(switch, port) "
            f"group_left({SWITCH_LABELS}) {SWITCH_INFO}{{fabric=\"{fabric}\"}}")


def _record(name: str, expr: str) -> dict[str, Any]:
    return {"record": name, "expr": expr}


def _alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {"alert": name, "expr": expr, **({"for": duration} if duration != "0m" else {}),
            "labels": {"severity": severity}, "annotations": {"summary": summary, "description": description}}


def ib_records(fabric: str) -> Iterator[dict[str, Any]]:
    """InfiniBand link health per cable, host end (node_exporter) and switch end (infiniband_exporter)."""
    yield _record("fabricgen:host_port_link_downed:increase10m",
                  on_host(fabric, "increase(node_infiniband_link_downed_total[10m])"))
    yield _record("fabricgen:host_port_symbol_errors:increase1h",
                  on_host(fabric, "increase(node_infiniband_symbol_error_total[1h])"))
    yield _record("fabricgen:host_port_xmit_wait:percent", on_host(fabric, (
        "100 * rate(node_infiniband_port_transmit_wait_total[5m]) / (rate(node_infiniband_port_transmit_wait_total[5m])"
        " + rate(node_infiniband_port_data_transmitted_bytes_total[5m]) / 4 > 0)")))
    yield _record("fabricgen:switch_port_link_downed:increase10m",
                  on_switch(fabric, "increase(infiniband_switch_port_link_downed_total[10m])"))
    yield _record("fabricgen:switch_port_symbol_errors:increase1h",
                  on_switch(fabric, "increase(infiniband_switch_port_symbol_error_total[1h])"))
    yield _record("fabricgen:switch_port_xmit_wait:percent", on_switch(fabric, (
        "100 * rate(infiniband_switch_port_transmit_wait_total[5m]) / (rate(infiniband_switch_port_transmit_wait_total"
        "[5m]) + rate(infiniband_switch_port_transmit_data_bytes_total[5m]) / 4 > 0)")))


def rdma_records(fabric: str) -> Iterator[dict[str, Any]]:
    """What every RDMA port reports (InfiniBand and RoCE HCAs alike): utilisation and loss."""
    yield _record("fabricgen:host_port_tx_utilisation:percent", on_host(fabric, (
        "100 * rate(node_infiniband_port_data_transmitted_bytes_total[5m]) / node_infiniband_rate_bytes_per_second")))
    yield _record("fabricgen:host_port_rdma_loss:percent", on_host(fabric, (
        "100 * rate(node_infiniband_out_of_sequence_packets_received_total[5m])"
        " / (rate(node_infiniband_port_packets_received_total[5m]) > 0)")))


def roce_records(fabric: str, lossless: int) -> Iterator[dict[str, Any]]:
    """RoCE congestion per cable: ECN marks, CNPs (sent by the notification point, handled or ignored by the
    reaction point) from the RDMA hw_counters, PFC pause frames per direction from mlx5's ethtool counters."""
    yield _record("fabricgen:host_port_ecn_marked:percent", on_host(fabric, (
        "100 * rate(node_infiniband_np_ecn_marked_roce_packets_received_total[5m])"
        " / (rate(node_infiniband_port_packets_received_total[5m]) > 0)")))
    for name, counter in (("cnp_sent", "np_cnp_packets_sent_total"), ("cnp_handled", "rp_cnp_packets_handled_total"),
                          ("cnp_ignored", "rp_cnp_ignored_packets_received_total")):
        yield _record(f"fabricgen:host_port_{name}:rate5m", on_host(fabric, f"rate(node_infiniband_{counter}[5m])"))
    for direction in ("received", "transmitted"):
        yield _record(f"fabricgen:host_port_pfc_{direction}_pause:rate5m",
                      on_netdev(fabric, f"rate(node_ethtool_{direction}_prio{lossless}_pause[5m])"))
    others = "".join(str(p) for p in range(8) if p != lossless)
    yield _record("fabricgen:host_port_pfc_lossy_pause:increase10m", on_netdev(fabric, (
        f'sum without(__name__) (increase({{__name__=~"node_ethtool_(received|transmitted)_prio[{others}]_pause"}}'
        "[10m]))")))
    yield _record("fabricgen:host_port_pause_storms:increase10m", on_netdev(fabric, (
        "increase(node_ethtool_transmitted_pause_storm_error_events[10m])")))


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
        yield _alert(f"IbXmitWait{title}", (f"fabricgen:{end}_port_xmit_wait:percent{{fabric=\"{fabric}\"}}"
                                            f" > {t.xmit_wait_percent}"),
                     "15m", "warning", f"InfiniBand port waits to transmit: {CABLE}",
                     f"{where} waited {{{{ $value }}}}% of its transmit time (threshold {t.xmit_wait_percent}%):"
                     " congestion or missing credits behind this cable.")


def rdma_alerts(fabric: str, t: Thresholds) -> Iterator[dict[str, Any]]:
    where = "{{ $labels.node }} {{ $labels.device }}"
    yield _alert("RdmaLossHigh",
                 f"fabricgen:host_port_rdma_loss:percent{{fabric=\"{fabric}\"}} > {t.rdma_loss_percent}",
                 "5m", "critical", f"RDMA packet loss: {CABLE}",
                 f"{where} received {{{{ $value }}}}% of its packets out of sequence (alert {t.rdma_loss_percent}%,"
                 f" healthy below {t.rdma_loss_healthy_percent}%).")
    yield _alert("LinkUtilisationHigh", (f"fabricgen:host_port_tx_utilisation:percent{{fabric=\"{fabric}\"}}"
                                         f" > {t.utilisation_high_percent}"),
                 "15m", "warning", f"Port saturated: {CABLE}",
                 f"{where} transmits at {{{{ $value }}}}% of its link rate (alert above {t.utilisation_high_percent}%,"
                 " target 70-90%).")
    yield _alert("LinkUtilisationLow", (f"fabricgen:host_port_tx_utilisation:percent{{fabric=\"{fabric}\"}}"
                                        f" < {t.utilisation_low_percent} > 0"),
                 "30m", "info", f"Port under-used while carrying traffic: {CABLE}",
                 f"{where} transmits at {{{{ $value }}}}% of its link rate (below {t.utilisation_low_percent}%,"
                 " target 70-90%): a slow rail, a degraded link width or a job that is not rail-aligned.")


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
            f"fabricgen:host_port_pfc_{direction}_pause:rate5m{{fabric=\"{fabric}\"}} > {t.pfc_pause_per_second}"),
            "15m", "warning", f"PFC pauses on priority {lossless}: {CABLE}",
            f"{where} {direction} {{{{ $value }}}} pause frames per second on priority {lossless} (threshold"
            f" {t.pfc_pause_per_second}).")
    yield _alert("RocePfcPauseLossyPriority", (
        f"fabricgen:host_port_pfc_lossy_pause:increase10m{{fabric=\"{fabric}\"}} > 0"),
        "0m", "warning", f"PFC pauses on a lossy priority: {CABLE}",
        f"{where} sent or received pause frames on a priority other than {lossless}: host and switch disagree on"
        " the lossless class.")
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
    records = [*rdma_records(fabric)]
    alerts = [*plan_alerts(fabric), *rdma_alerts(fabric, t)]
    if ib:
        records += ib_records(fabric)
        alerts += ib_alerts(fabric, t)
    elif ft.fabric.qos is not None:
        lossless = ft.fabric.qos.lossless.priority
        records += roce_records(fabric, lossless)
        alerts += roce_alerts(fabric, lossless, t)
    if any(p.gpu is not None for p in topology.derived(host_ports, ft)):
        alerts += gpu_alerts(fabric, t)
    groups = [{"name": f"{fabric}-ports", "rules": records}, {"name": f"{fabric}-alerts", "rules": alerts}]
    lustre = [fs for fs in topology.cluster.lustre if fs.fabric == fabric]
    if lustre:
        groups.append({"name": f"{fabric}-lustre",
                       "rules": list(lustre_alerts(fabric, [fs.fsname for fs in lustre], t))})
    return groups


def on_node(fabric: str, expr: str) -> str:
    """``expr`` (labelled ``node``) for the nodes with a port on ``fabric``, labelled with the fabric."""
    return f"({expr}) * on(node) group_left(fabric) max by(node, fabric) ({HOST_INFO}{{fabric=\"{fabric}\"}})"


def lustre_alerts(fabric: str, fsnames: list[str], t: Thresholds) -> Iterator[dict[str, Any]]:
    """Lustre clients over ``fabric`` (HPE lustre_exporter): per-client throughput per file system, LNet drops."""
    floor = t.lustre_client_min_gbytes_per_s * 1e9
    for fsname in fsnames:
        # one selector for both: llite's stats list write_bytes only once the client has written (a sum of the
        # two series would be empty on a reader)
        rate = (f'sum by(node) (rate({{__name__=~"lustre_(read|write)_bytes_total", component="client",'
                f' target=~"{fsname}-.*"}}[5m]))')
        alert = _alert("LustreClientThroughputLow", f"{on_node(fabric, rate)} < {floor:.0f} > 0", "15m", "warning",
                       f"Lustre {fsname} client slow: {{{{ $labels.node }}}}",
                       f"{{{{ $labels.node }}}} moves {{{{ $value | humanize }}}}B/s on {fsname} (alert below"
                       f" {t.lustre_client_min_gbytes_per_s} GB/s while it reads or writes).")
        alert["labels"]["filesystem"] = fsname
        yield alert
    drops = ("100 * rate(lustre_drop_count_total[5m]) / (rate(lustre_receive_count_total[5m])"
             " + rate(lustre_send_count_total[5m]) > 0)")
    yield _alert("LnetLossHigh", f"{on_node(fabric, drops)} > {t.rdma_loss_percent}", "5m", "critical",
                 "LNet drops messages: {{ $labels.node }}",
                 f"{{{{ $labels.node }}}} dropped {{{{ $value }}}}% of its LNet messages (alert {t.rdma_loss_percent}%,"
                 f" healthy below {t.rdma_loss_healthy_percent}%).")


def gpu_alerts(fabric: str, t: Thresholds) -> Iterator[dict[str, Any]]:
    """GPUs idle while a job holds their memory (dcgm-exporter), named by the rail cable next to each GPU."""
    idle = ("100 * (1 - DCGM_FI_PROF_GR_ENGINE_ACTIVE) and on(node, gpu) DCGM_FI_DEV_FB_USED > 0")
    expr = (f"({idle}) * on(node, gpu) group_left({HOST_LABELS}) {HOST_INFO}{{fabric=\"{fabric}\"}}"
            f" > {t.data_wait_percent}")
    yield _alert("GpuDataWait", expr, "15m", "warning", "GPU waits: {{ $labels.node }} GPU {{ $labels.gpu }}",
                 f"GPU {{{{ $labels.gpu }}}} of {{{{ $labels.node }}}} is idle {{{{ $value }}}}% of the time with a job"
                 f" on it (alert above {t.data_wait_percent}%): input pipeline, storage or the {CABLE}.")
