"""The monitoring target's plan: every cable end of an RDMA fabric is one info series (a sample of the fabric's
textfile) with its cable id, rail and leaf, and no rule; every alert reads a series joined to them; the spec's
thresholds reach the alerts; the scrape config lists each exporter's hosts and reads the plan once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from fabricgen.features.monitoring.info import HOST_INFO, LUSTRE_INFO, PLAN_JOB, SWITCH_INFO
from fabricgen.model.topology import NODE_LEAF
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES
from tests.external.monitoring.test_promtool import parse_samples


def _files(spec: Path) -> tuple[Any, dict[str, Any]]:
    compiled = compile_spec(spec)
    return compiled.topology, {a.path: a.content for a in render_spec(compiled, ["monitoring"])}


def _rules(content: bytes) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(content)["groups"] for rule in group["rules"]]


def test_every_cable_end_is_an_info_series_with_its_plan_labels() -> None:
    topology, files = _files(INVENTORIES / "lab-1su.yaml")
    samples = parse_samples(files["monitoring/prometheus/textfile/compute-cables.prom"].decode())
    hosts = [labels for name, labels, _ in samples if name == HOST_INFO]
    switches = [labels for name, labels, _ in samples if name == SWITCH_INFO]
    assert {value for _, _, value in samples} == {"1"}
    lines = [line for line in files["monitoring/prometheus/textfile/compute-cables.prom"].decode().splitlines()
             if not line.startswith("#")]
    assert lines == sorted(lines[:len(hosts)]) + sorted(lines[len(hosts):])
    ft = topology.fabric("compute")
    cables = {c.id: c for c in topology.cables if c.fabric == "compute"}
    assert len(hosts) == len(ft.links_in(NODE_LEAF)) and len(switches) == 2 * len(ft.links) - len(hosts)
    for labels in hosts:
        cable = cables[labels["cable"]]
        assert (labels["node"], labels["device"], labels["netdev"], labels["leaf"], labels["leaf_port"]) == (
            cable.a.device, cable.a.rdma_dev, cable.a.netdev, cable.z.device, str(cable.z.port_number))
        assert labels["rail"] == str(cable.rail) and labels["gpu"] == str(cable.a.gpu)
    assert {(s["switch"], s["port"]) for s in switches} == {
        (end.device, str(end.port_number)) for c in cables.values() for end in (c.a, c.z)
        if not end.rdma_dev}
    for path in (p for p in files if p.endswith(".rules.yml")):  # O(alerts) rules, none per cable
        rules = _rules(files[path])
        assert len(rules) < 40 and not [r for r in rules if r.get("record") in (HOST_INFO, SWITCH_INFO)]


def test_every_alert_reads_the_plan_and_is_labelled_by_it() -> None:
    _, files = _files(INVENTORIES / "h100-4su.yaml")
    for path in ("monitoring/prometheus/rules/compute.rules.yml", "monitoring/prometheus/rules/storage.rules.yml"):
        rules = _rules(files[path])
        records = {r["record"]: r["expr"] for r in rules if "record" in r and r["record"].startswith("fabricgen:")}
        assert all("fabricgen_" in expr and "group_left(fabric, cable, rail" in expr for expr in records.values())
        for alert in (r for r in rules if "alert" in r):
            joined = any(name in alert["expr"] for name in (*records, HOST_INFO, SWITCH_INFO, LUSTRE_INFO))
            assert joined, alert["alert"]
            assert alert["labels"]["severity"] in {"critical", "warning", "info"}
            assert "summary" in alert["annotations"]


def test_thresholds_come_from_the_spec(tmp_path: Path) -> None:
    text = (INVENTORIES / "lab-1su.yaml").read_text() + (
        "monitoring:\n  thresholds: {symbol_errors_per_hour: 3, rdma_loss_percent: 0.05, pfc_paused_percent: 25}\n")
    spec = tmp_path / "lab.yaml"
    spec.write_text(text)
    _, files = _files(spec)
    compute = {r["alert"]: r["expr"] for r in _rules(files["monitoring/prometheus/rules/compute.rules.yml"])
               if "alert" in r}
    storage = {r["alert"]: r["expr"] for r in _rules(files["monitoring/prometheus/rules/storage.rules.yml"])
               if "alert" in r}
    assert compute["IbSymbolErrorsHost"].endswith("> 3") and compute["RdmaLossHigh"].endswith("> 0.05")
    assert storage["RocePfcPauseReceived"].endswith("> 25")
    _, defaults = _files(INVENTORIES / "lab-1su.yaml")
    default = {r["alert"]: r["expr"] for r in _rules(defaults["monitoring/prometheus/rules/compute.rules.yml"])
               if "alert" in r}
    assert default["IbSymbolErrorsHost"].endswith("> 10") and default["RdmaLossHigh"].endswith("> 0.1")


def test_scrape_config_lists_each_exporter_by_host() -> None:
    topology, files = _files(INVENTORIES / "h100-4su.yaml")
    config = yaml.safe_load(files["monitoring/prometheus/prometheus.yml"])
    jobs = {job["job_name"]: job["static_configs"][0]["targets"] for job in config["scrape_configs"]}
    sm = topology.fabric("compute").fabric.subnet_manager
    assert sm is not None
    assert jobs["infiniband-compute"] == [f"{sm.hosts[0][0]}:9315"]
    gpus = [n.name for n in topology.cluster.nodes if n.profile.gpus]
    assert jobs["dcgm"] == [f"{n}:9400" for n in gpus]
    assert set(jobs["node"]) >= {f"{n}:9100" for n in gpus}
    assert config["rule_files"] == ["rules/compute.rules.yml", "rules/storage.rules.yml",
                                    "rules/fabricgen-exporters.rules.yml"]
    exporters = [job for job in config["scrape_configs"] if job["job_name"] != PLAN_JOB]
    # host exporters label their series node; the fabric's (switch) exporter does not: a switch is no host
    assert [job["job_name"] for job in exporters if "relabel_configs" not in job] == ["infiniband-compute"]
    assert all(job["relabel_configs"][0]["target_label"] == "node" for job in exporters if "relabel_configs" in job)
    assert "lustre" not in jobs  # Lustre clients' statistics come through node_exporter's textfile collector
    # the plan keeps its own node label (no target label of that name) and is read by its job only
    plan = next(job for job in config["scrape_configs"] if job["job_name"] == PLAN_JOB)
    assert "relabel_configs" not in plan and len(plan["static_configs"][0]["targets"]) == 1
    assert plan["metric_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "fabricgen_.+_info",
                                               "action": "keep"}]
    node = next(job for job in exporters if job["job_name"] == "node")
    assert node["metric_relabel_configs"] == [{"source_labels": ["__name__"], "regex": "fabricgen_.+_info",
                                               "action": "drop"}]


def test_dashboards_query_the_recorded_series() -> None:
    _, files = _files(INVENTORIES / "lab-1su.yaml")
    records = {r["record"] for path in files if path.endswith(".rules.yml") for r in _rules(files[path])
               if "record" in r}
    for fabric in ("compute", "storage"):
        board = json.loads(files[f"monitoring/grafana/{fabric}.json"])
        assert board["uid"] == f"fabricgen-{fabric}"
        for panel in board["panels"]:
            expr = panel["targets"][0]["expr"]
            assert any(record in expr for record in records) and f'fabric="{fabric}"' in expr, panel["title"]
