"""Target ``monitoring``: Prometheus rules per fabric, the plan's info series per fabric (a textfile for
node_exporter), the scrape configuration of the exporters that feed them, and a Grafana dashboard per fabric, all
under ``monitoring/``."""

from __future__ import annotations

import json
from typing import Any

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.features.monitoring.dashboard import dashboard
from fabricgen.features.monitoring.info import PLAN_JOB, TEXTFILE_DIR, cables_prom, textfile_name
from fabricgen.features.monitoring.lustre import collector
from fabricgen.features.monitoring.plan import host_ports, monitored_fabrics
from fabricgen.features.monitoring.rules import exporter_rules, fabric_rules
from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import Topology

# The exporters' default ports (their flag defaults): node_exporter --web.listen-address, dcgm-exporter
# --address, infiniband_exporter's web flag.
NODE_EXPORTER, DCGM_EXPORTER, IB_EXPORTER = 9100, 9400, 9315
PLAN_SERIES = "fabricgen_.+_info"
EXPORTER_RULES = "rules/fabricgen-exporters.rules.yml"


def _dump(data: Any, flow: bool = False) -> str:
    """YAML in spec order; ``flow`` writes each mapping of scalars on one line (a recording rule, an alert's labels)."""
    return yaml.safe_dump(data, sort_keys=False, width=1 << 16, default_flow_style=None if flow else False)


def _job(name: str, hosts: list[str], port: int, **extra: Any) -> dict[str, Any]:
    """A job scraping an exporter on each of ``hosts``, its series labelled ``node`` (the host), which the rules
    join on."""
    return _fabric_job(name, hosts, port, **extra) | {"relabel_configs": [{
        "source_labels": ["__address__"], "regex": "(.+):[0-9]+", "target_label": "node", "replacement": "$1"}]}


def _fabric_job(name: str, hosts: list[str], port: int, **extra: Any) -> dict[str, Any]:
    """A job whose series describe the fabric, not the host they are read on: no ``node`` (Alertmanager would
    group a switch's faults under the exporter's host)."""
    return {"job_name": name, **extra, "static_configs": [{"targets": [f"{h}:{port}" for h in hosts]}]}


def _plan_job() -> dict[str, Any]:
    """The plan's info series from node_exporter on the Prometheus host, only those, with their own ``node`` (the
    job sets none: a target's ``node`` would rename theirs ``exported_node``); they change only on apply."""
    return {"job_name": PLAN_JOB, "scrape_interval": "60s", "scrape_timeout": "30s",
            "static_configs": [{"targets": [f"localhost:{NODE_EXPORTER}"]}],
            "metric_relabel_configs": [{"source_labels": ["__name__"], "regex": PLAN_SERIES, "action": "keep"}]}


def scrape_config(topology: Topology) -> dict[str, Any]:
    """Prometheus's configuration: the rule files and one job per exporter, targets by host name."""
    cluster = topology.cluster
    fabrics = monitored_fabrics(topology)
    ported = {p.node for ft in fabrics for p in topology.derived(host_ports, ft)}
    scraped = ported | {n.name for fs in cluster.lustre for n in cluster.nodes if n.group in fs.groups}
    jobs = [_job("node", [n.name for n in cluster.nodes if n.name in scraped], NODE_EXPORTER)]
    # a node that is also the Prometheus host serves the plan too: read it once, by the plan's job
    jobs[0]["metric_relabel_configs"] = [{"source_labels": ["__name__"], "regex": PLAN_SERIES, "action": "drop"}]
    gpus = [n.name for n in cluster.nodes if n.profile.gpus and n.name in ported]
    if gpus:
        jobs.append(_job("dcgm", gpus, DCGM_EXPORTER))
    for ft in fabrics:
        sm = ft.fabric.subnet_manager
        if ft.fabric.type is FabricType.INFINIBAND and sm is not None and sm.hosts:
            jobs.append(_fabric_job(f"infiniband-{ft.fabric.name}", [h for h, _ in sm.hosts[:1]], IB_EXPORTER,
                                    scrape_interval="60s", scrape_timeout="50s"))
    jobs.append(_plan_job())
    return {"global": {"scrape_interval": "30s", "evaluation_interval": "30s"},
            "rule_files": [*(f"rules/{ft.fabric.name}.rules.yml" for ft in fabrics), EXPORTER_RULES],
            "scrape_configs": jobs}


def render(topology: Topology) -> list[Artifact]:
    cluster = topology.cluster
    fabrics = monitored_fabrics(topology)
    if not fabrics or cluster.monitoring is None:
        return []
    thresholds = cluster.monitoring.thresholds
    common = {"source": cluster.source}
    artifacts = [Artifact("monitoring/prometheus/prometheus.yml", render_template(
        "monitoring/prometheus.yml.j2", body=_dump(scrape_config(topology)), **common)),
                 Artifact(f"monitoring/prometheus/{EXPORTER_RULES}", render_template(
                     "monitoring/exporters.rules.yml.j2", body=_dump({"groups": exporter_rules()}, flow=True),
                     **common))]
    if cluster.lustre:
        artifacts += collector(cluster.source)
    for ft in fabrics:
        name = ft.fabric.name
        groups = fabric_rules(topology, ft, thresholds)
        artifacts.append(Artifact(f"monitoring/prometheus/rules/{name}.rules.yml", render_template(
            "monitoring/rules.yml.j2", body=_dump({"groups": groups}, flow=True), fabric=name,
            type=str(ft.fabric.type), textfile=f"textfile/{textfile_name(name)}", **common)))
        artifacts.append(Artifact(f"{TEXTFILE_DIR}/{textfile_name(name)}", render_template(
            "monitoring/cables.prom.j2", body=cables_prom(topology, ft), fabric=name, job=PLAN_JOB,
            **common)))
        artifacts.append(Artifact(f"monitoring/grafana/{name}.json",
                                  (json.dumps(dashboard(ft, thresholds), indent=1, sort_keys=True) + "\n").encode()))
    return artifacts
