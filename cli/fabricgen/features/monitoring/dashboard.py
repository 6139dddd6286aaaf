"""A Grafana dashboard per monitored fabric over the recording rules: the worst cables first, then each counter by
cable, filtered by rail and leaf (template variables read from the plan's cable info series)."""

from __future__ import annotations

from typing import Any

from fabricgen.features.monitoring.info import HOST_INFO
from fabricgen.model.cluster import FabricType
from fabricgen.model.monitoring import Thresholds
from fabricgen.model.topology import FabricTopology

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SCOPE = 'fabric="{fabric}", rail=~"$rail", leaf=~"$leaf"'


TOP = 20  # series a panel draws: the worst cables (a fabric has up to ~16k ports)


def _panel(index: int, title: str, record: str, unit: str, fabric: str, *, table: bool = False,
           thresholds: tuple[float, ...] = (), worst: str = "topk") -> dict[str, Any]:
    expr = f"{record}{{{SCOPE.format(fabric=fabric)}}}"
    steps = [{"color": "green", "value": None}, *({"color": c, "value": v} for c, v in
                                                  zip(("yellow", "red"), thresholds, strict=False))]
    panel: dict[str, Any] = {
        "id": index + 1, "title": title, "datasource": DATASOURCE,  # Grafana renumbers a falsy id
        "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}},
                        "overrides": []},
    }
    if table:
        panel |= {"type": "table", "targets": [{"refId": "A", "expr": f"topk({TOP}, {expr})", "instant": True,
                                                "format": "table"}]}
    else:
        panel |= {"type": "timeseries", "targets": [{"refId": "A", "expr": f"{worst}({TOP}, {expr})",
                                                     "legendFormat": "{{cable}} {{node}}{{switch}}"}]}
    return panel


def _variable(name: str, fabric: str, scope: str = "") -> dict[str, Any]:
    query = f'label_values({HOST_INFO}{{fabric="{fabric}"{scope}}}, {name})'
    return {"name": name, "type": "query", "datasource": DATASOURCE, "query": {"query": query, "refId": name},
            "definition": query, "includeAll": True, "multi": True, "allValue": ".*", "refresh": 1, "sort": 3,
            "current": {"selected": True, "text": "All", "value": "$__all"}}


def dashboard(ft: FabricTopology, t: Thresholds) -> dict[str, Any]:
    fabric = ft.fabric.name
    rows: list[tuple[str, str, str, dict[str, Any]]] = [
        ("RDMA loss (% out of sequence)", "fabricgen:host_port_rdma_loss:percent", "percent",
         {"table": True, "thresholds": (t.rdma_loss_healthy_percent, t.rdma_loss_percent)}),
        ("Transmit utilisation, busiest ports (% of link rate)", "fabricgen:host_port_tx_utilisation:percent",
         "percent", {"thresholds": (t.utilisation_low_percent, t.utilisation_high_percent)}),
        ("Transmit utilisation, least used ports (% of link rate)", "fabricgen:host_port_tx_utilisation:percent",
         "percent", {"thresholds": (t.utilisation_low_percent, t.utilisation_high_percent), "worst": "bottomk"}),
    ]
    if ft.fabric.type is FabricType.INFINIBAND:
        rows += [
            ("Symbol errors per hour, host ends", "fabricgen:host_port_symbol_errors:increase1h", "short",
             {"table": True, "thresholds": (1, t.symbol_errors_per_hour)}),
            ("Symbol errors per hour, switch ends", "fabricgen:switch_port_symbol_errors:increase1h", "short",
             {"table": True, "thresholds": (1, t.symbol_errors_per_hour)}),
            ("Link downed in 10 min, host ends", "fabricgen:host_port_link_downed:increase10m", "short",
             {"table": True, "thresholds": (1,)}),
            ("Link downed in 10 min, switch ends", "fabricgen:switch_port_link_downed:increase10m", "short",
             {"table": True, "thresholds": (1,)}),
            ("Transmit wait, host ends (% of time stalled)", "fabricgen:host_port_xmit_wait_stalled:percent",
             "percent", {"thresholds": (t.xmit_wait_percent,)}),
            ("Transmit wait, switch ends (% of time stalled)", "fabricgen:switch_port_xmit_wait_stalled:percent",
             "percent", {"thresholds": (t.xmit_wait_percent,)}),
        ]
    else:
        rows += [
            ("ECN-marked packets received (%)", "fabricgen:host_port_ecn_marked:percent", "percent",
             {"thresholds": (t.ecn_marked_percent,)}),
            ("CNPs sent (notification point)", "fabricgen:host_port_cnp_sent:rate5m", "pps", {}),
            ("CNPs handled (reaction point)", "fabricgen:host_port_cnp_handled:rate5m", "pps", {}),
            ("CNPs ignored (congestion control off)", "fabricgen:host_port_cnp_ignored:rate5m", "pps",
             {"table": True, "thresholds": (0.001,)}),
            ("Paused by the peer, lossless priority (% of time)", "fabricgen:host_port_pfc_received_paused:percent",
             "percent", {"thresholds": (t.pfc_paused_percent,)}),
            ("Pausing the peer, lossless priority (% of time)", "fabricgen:host_port_pfc_transmitted_paused:percent",
             "percent", {"thresholds": (t.pfc_paused_percent,)}),
            ("PFC pauses on lossy priorities (10 min)", "fabricgen:host_port_pfc_lossy_pause:increase10m", "short",
             {"table": True, "thresholds": (1,)}),
            ("Global (link-level) pauses (10 min)", "fabricgen:host_port_global_pause:increase10m", "short",
             {"table": True, "thresholds": (1,)}),
            ("NIC pause storms (10 min)", "fabricgen:host_port_pause_storms:increase10m", "short",
             {"table": True, "thresholds": (1,)}),
        ]
    panels = [_panel(i, title, record, unit, fabric, **options)
              for i, (title, record, unit, options) in enumerate(rows)]
    datasource = {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {}}
    return {
        "uid": f"fabricgen-{fabric}"[:40], "title": f"fabricgen: fabric {fabric} ({ft.fabric.type})",
        "tags": ["fabricgen", str(ft.fabric.type)], "schemaVersion": 39, "version": 1, "editable": True,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "1m", "timezone": "utc",
        "templating": {"list": [datasource, _variable("rail", fabric),
                                 _variable("leaf", fabric, ', rail=~"$rail"')]},
        "panels": panels, "annotations": {"list": []},
    }
