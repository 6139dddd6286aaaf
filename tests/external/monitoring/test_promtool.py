"""The monitoring target through Prometheus's own tool (Debian's `prometheus` package ships promtool):
`promtool check config` accepts prometheus.yml with its rule files, `promtool check rules` every rules file (PromQL
and the annotations' templates), `promtool check metrics` every cable plan (the text exposition format node_exporter's
textfile collector parses), and `promtool test rules` evaluates every alert on synthetic series shaped as the
exporters label them (node_exporter, infiniband_exporter, lustre_exporter, dcgm-exporter) beside the plan's info
series read from the generated .prom files, as the plan's scrape job labels them (its job and instance): each alert
fires on a series that crosses its threshold, with the plan's fabric, rail, leaf and cable in its labels, and stays
silent on one that does not. Annotations are stripped from the rules under test (promtool compares them verbatim,
values included); `check rules` has parsed their templates."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.features.monitoring.info import HOST_INFO, PLAN_JOB, sample
from fabricgen.features.monitoring.plan import HostPort, SwitchPort, host_ports, monitored_fabrics, switch_ports
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, require_tool


@dataclass(frozen=True)
class Case:
    alert: str
    fire: dict[str, str]  # series -> values (promtool's expanding notation), one sample a minute
    quiet: dict[str, str]
    labels: dict[str, str]  # the alert's labels beyond the series' own
    eval_time: str = "65m"
    extra: dict[str, str] = field(default_factory=dict)  # series both runs share
    aggregated: bool = False  # the expression aggregates: the alert keeps none of the series' labels
    without_plan: bool = False  # the firing run has no cable plan


def _quote(value: str) -> str:
    """A label value as PromQL (and the exposition format) quote it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f"{k}={_quote(v)}" for k, v in sorted(labels.items())) + "}"


_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\[\\"n])*)"(,|$)')


def parse_samples(text: str) -> list[tuple[str, dict[str, str], str]]:
    """The samples of a text exposition (name, labels with their values unescaped, value); comments skipped, any
    other line fails."""
    samples = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = _SAMPLE.fullmatch(line)
        assert match, line
        name, body, value = match.groups()
        labels, pos = {}, 0
        while pos < len(body):
            label = _LABEL.match(body, pos)
            assert label, line
            labels[label[1]] = re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], label[2])
            pos = label.end()
        samples.append((name, labels, value))
    return samples


def plan_series(prometheus: Path) -> dict[str, str]:
    """The spec's cable plans as promtool input: every .prom file's samples, labelled as the plan's scrape job
    labels them (its job and instance), constant over the test's 70 minutes."""
    config = yaml.safe_load((prometheus / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == PLAN_JOB)
    scraped = {"job": PLAN_JOB, "instance": job["static_configs"][0]["targets"][0]}
    return {_series(name, {**labels, **scraped}): f"{value}x70"
            for path in sorted((prometheus / "textfile").glob("*.prom"))
            for name, labels, value in parse_samples(path.read_text())}


def _plan_labels(port: HostPort | SwitchPort, fabric: str) -> dict[str, str]:
    keys = ("cable", "rail", "su", "leaf", "leaf_port") if isinstance(port, HostPort) else (
        "cable", "rail", "leaf", "peer", "peer_port")
    labels = {k: str(getattr(port, k)) for k in keys if getattr(port, k) is not None}
    return {"fabric": fabric, **labels}


def _host(port: HostPort) -> dict[str, str]:
    return {"node": port.node, "device": port.device, "port": str(port.port), "job": "node",
            "instance": f"{port.node}:9100"}


def _netdev(port: HostPort) -> dict[str, str]:
    return {"node": port.node, "device": port.netdev, "job": "node", "instance": f"{port.node}:9100"}


def ib_cases(topology: Topology, fabric: str) -> list[Case]:
    ft = topology.fabric(fabric)
    host = host_ports(topology, ft)[0]
    sw = next(p for p in switch_ports(topology, ft) if p.switch != host.leaf)  # a leaf-spine cable's upper end
    h, plan = _host(host), _plan_labels(host, fabric)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    s = {"guid": "0x0002c90301000099", "port": str(sw.port), "job": f"infiniband-{fabric}", "instance": "sm:9315"}
    switch_info = {_series("infiniband_switch_info", {"guid": s["guid"], "switch": sw.switch, "lid": "7",
                                                      "job": s["job"], "instance": s["instance"]}): "1x70"}
    swc = lambda name: _series(f"infiniband_switch_{name}", s)  # noqa: E731
    sw_labels = {**_plan_labels(sw, fabric), "switch": sw.switch}
    return [
        Case("IbLinkDownedHost", {counter("link_downed_total"): "0x30 1x40"}, {counter("link_downed_total"): "0x70"},
             {**plan, "severity": "critical"}, "35m"),
        Case("IbSymbolErrorsHost", {counter("symbol_error_total"): "0+1x70"},
             {counter("symbol_error_total"): "0+0.1x70"}, {**plan, "severity": "warning"}),
        Case("IbXmitWaitHost", {counter("port_transmit_wait_total"): "0+1000x70",
                                counter("port_data_transmitted_bytes_total"): "0+400x70"},
             {counter("port_transmit_wait_total"): "0+1x70", counter("port_data_transmitted_bytes_total"): "0+400x70"},
             {**plan, "severity": "warning"}),
        Case("IbLinkDownedSwitch", {swc("port_link_downed_total"): "0x30 1x40"},
             {swc("port_link_downed_total"): "0x70"},
             {**sw_labels, "severity": "critical"}, "35m", switch_info),
        Case("IbSymbolErrorsSwitch", {swc("port_symbol_error_total"): "0+1x70"},
             {swc("port_symbol_error_total"): "0x70"}, {**sw_labels, "severity": "warning"}, extra=switch_info),
        Case("IbXmitWaitSwitch", {swc("port_transmit_wait_total"): "0+1000x70",
                                  swc("port_transmit_data_bytes_total"): "0+400x70"},
             {swc("port_transmit_wait_total"): "0x70", swc("port_transmit_data_bytes_total"): "0+400x70"},
             {**sw_labels, "severity": "warning"}, extra=switch_info),
        *rdma_cases(host, plan),
        Case("GpuDataWait", *_gpu(host), {**plan, "severity": "warning"}),
        plan_case(fabric),
    ]


def plan_case(fabric: str) -> Case:
    """Without the fabric's cable plan every other alert is silent: CablePlanMissing says so."""
    return Case("CablePlanMissing", {}, {}, {"fabric": fabric, "severity": "critical"}, aggregated=True,
                without_plan=True)


def _gpu(port: HostPort) -> tuple[dict[str, str], dict[str, str]]:
    labels = {"node": port.node, "gpu": str(port.gpu), "UUID": "GPU-1", "device": f"nvidia{port.gpu}",
              "modelName": "NVIDIA H100 80GB HBM3", "Hostname": port.node, "job": "dcgm",
              "instance": f"{port.node}:9400"}
    used = {_series("DCGM_FI_DEV_FB_USED", labels): "30000x70"}
    active = _series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels)
    return {**used, active: "0.5x70"}, {**used, active: "0.9x70"}


def rdma_cases(port: HostPort, plan: dict[str, str]) -> list[Case]:
    h = _host(port)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    rate = {counter("rate_bytes_per_second"): "1e9x70"}
    return [
        Case("RdmaLossHigh", {counter("out_of_sequence_packets_received_total"): "0+10x70",
                              counter("port_packets_received_total"): "0+1000x70"},
             {counter("out_of_sequence_packets_received_total"): "0+0.005x70",
              counter("port_packets_received_total"): "0+1000x70"}, {**plan, "severity": "critical"}),
        Case("LinkUtilisationHigh", {counter("port_data_transmitted_bytes_total"): "0+60e9x70"},
             {counter("port_data_transmitted_bytes_total"): "0+48e9x70"}, {**plan, "severity": "warning"}, extra=rate),
        Case("LinkUtilisationLow", {counter("port_data_transmitted_bytes_total"): "0+12e9x70"},
             {counter("port_data_transmitted_bytes_total"): "0x70"}, {**plan, "severity": "info"}, extra=rate),
    ]


def roce_cases(topology: Topology, fabric: str, lossless: int) -> list[Case]:
    port = host_ports(topology, topology.fabric(fabric))[0]
    h, plan = _host(port), _plan_labels(port, fabric)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    ethtool = lambda name: _series(f"node_ethtool_{name}", _netdev(port))  # noqa: E731
    lossy = (lossless + 1) % 8
    nd = {**plan, "netdev": port.netdev}  # the ethtool joins name the netdev too
    return [
        *rdma_cases(port, plan),
        plan_case(fabric),
        Case("RoceCnpIgnored", {counter("rp_cnp_ignored_packets_received_total"): "0+5x70"},
             {counter("rp_cnp_ignored_packets_received_total"): "0x70"}, {**plan, "severity": "critical"}),
        Case("RoceEcnMarksHigh", {counter("np_ecn_marked_roce_packets_received_total"): "0+100x70",
                                  counter("port_packets_received_total"): "0+1000x70"},
             {counter("np_ecn_marked_roce_packets_received_total"): "0+10x70",
              counter("port_packets_received_total"): "0+1000x70"}, {**plan, "severity": "warning"}),
        Case("RocePfcPauseReceived", {ethtool(f"received_prio{lossless}_pause"): "0+120000x70"},
             {ethtool(f"received_prio{lossless}_pause"): "0+6000x70"}, {**nd, "severity": "warning"}),
        Case("RocePfcPauseTransmitted", {ethtool(f"transmitted_prio{lossless}_pause"): "0+120000x70"},
             {ethtool(f"transmitted_prio{lossless}_pause"): "0+6000x70"}, {**nd, "severity": "warning"}),
        Case("RocePfcPauseLossyPriority", {ethtool(f"received_prio{lossy}_pause"): "0x30 5x40"},
             {ethtool(f"received_prio{lossless}_pause"): "0+100x70"}, {**nd, "severity": "warning"}, "35m"),
        Case("RocePfcStorm", {ethtool("transmitted_pause_storm_error_events"): "0x30 1x40"},
             {ethtool("transmitted_pause_storm_error_events"): "0x70"}, {**nd, "severity": "critical"}, "35m"),
    ]


def lustre_cases(topology: Topology, fabric: str, fsname: str) -> list[Case]:
    port = host_ports(topology, topology.fabric(fabric))[0]
    client = {"component": "client", "target": f"{fsname}-ffff8f2a3c5e1000", "job": "lustre",
              "instance": f"{port.node}:9169", "node": port.node}
    lnet = {"component": "lnet", "target": "lnet", "job": "lustre", "instance": f"{port.node}:9169",
            "node": port.node}
    read = _series("lustre_read_bytes_total", client)
    messages = {_series("lustre_receive_count_total", lnet): "0+500x70",
                _series("lustre_send_count_total", lnet): "0+500x70"}
    return [
        Case("LustreClientThroughputLow", {read: "0+6e9x70"}, {read: "0+120e9x70"},
             {"node": port.node, "fabric": fabric, "filesystem": fsname, "severity": "warning"}, aggregated=True),
        Case("LnetLossHigh", {_series("lustre_drop_count_total", lnet): "0+10x70"},
             {_series("lustre_drop_count_total", lnet): "0x70"}, {"fabric": fabric, "severity": "critical"},
             extra=messages),
    ]


def _own_labels(case: Case) -> dict[str, str]:
    """The labels of the series the alert's expression keeps: the first series of the firing run, without its
    name."""
    if case.aggregated:
        return {}
    _, _, rest = next(iter(case.fire)).partition("{")
    return {k: v.strip('"') for k, v in (item.split("=", 1) for item in rest.rstrip("}").split(", "))}


def _test_file(rules: Path, cases: list[Case], plan: dict[str, str]) -> dict[str, Any]:
    tests = []
    for case in cases:
        expected = {**_own_labels(case), **case.labels}
        for series, alerts, info in ((case.fire, [{"exp_labels": expected}], {} if case.without_plan else plan),
                                     (case.quiet, [], plan)):
            inputs = {**info, **case.extra, **series}
            tests.append({"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in inputs.items()],
                          "alert_rule_test": [{"eval_time": case.eval_time, "alertname": case.alert,
                                               "exp_alerts": alerts}]})
    return {"rule_files": [str(rules)], "evaluation_interval": "1m", "tests": tests}


def _rendered(spec: str, tmp_path: Path) -> tuple[Topology, Path]:
    compiled = compile_spec(INVENTORIES / f"{spec}.yaml")
    out = tmp_path / spec
    for artifact in render_spec(compiled, ["monitoring"]):
        path = out / artifact.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(artifact.content)
    return compiled.topology, out / "monitoring" / "prometheus"


def _without_annotations(rules: Path, target: Path) -> Path:
    doc = yaml.safe_load(rules.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations", None)
    target.write_text(yaml.safe_dump(doc))
    return target


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_promtool_checks_config_rules_and_cable_plans(spec: str, tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    topology, prometheus = _rendered(spec, tmp_path)
    done = subprocess.run([promtool, "check", "config", str(prometheus / "prometheus.yml")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout and "rule files found" in done.stdout
    plans = sorted((prometheus / "textfile").glob("*.prom"))
    assert [p.name for p in plans] == sorted(f"{ft.fabric.name}-cables.prom" for ft in monitored_fabrics(topology))
    for plan in plans:
        _check_metrics(promtool, plan.read_text())
        hosts = [labels for name, labels, value in parse_samples(plan.read_text()) if name == HOST_INFO]
        assert len(hosts) == len(host_ports(topology, topology.fabric(plan.name.removesuffix("-cables.prom"))))


def _check_metrics(promtool: str, text: str) -> None:
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not done.stdout + done.stderr  # no lint finding either


def test_label_values_are_escaped_for_the_exposition_format() -> None:
    """A value with a backslash, a double quote and a line feed passes promtool and reads back unchanged; written
    unescaped it does not pass (so promtool reads the values)."""
    promtool = require_tool("promtool")
    hostile = 'rack "7"\\\nrow'
    header = f"# HELP {HOST_INFO} x\n# TYPE {HOST_INFO} gauge\n"
    text = header + sample(HOST_INFO, {"cable": hostile, "node": "hgx01", "port": 1, "gpu": None}) + "\n"
    _check_metrics(promtool, text)
    assert parse_samples(text) == [(HOST_INFO, {"cable": hostile, "node": "hgx01", "port": "1"}, "1")]
    raw = header + f'{HOST_INFO}{{cable="{hostile}"}} 1\n'
    assert subprocess.run([promtool, "check", "metrics"], input=raw, capture_output=True, text=True).returncode != 0


def _run_tests(promtool: str, rules: Path, cases: list[Case], tmp_path: Path) -> None:
    stripped = _without_annotations(rules, tmp_path / f"{rules.stem}.stripped.yml")
    test_file = tmp_path / f"{rules.stem}.test.yml"
    plan = plan_series(rules.parent.parent)
    assert plan
    test_file.write_text(yaml.safe_dump(_test_file(stripped, cases, plan), sort_keys=False))
    done = subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_alert_fires_and_stays_silent_ib_roce_gpu(tmp_path: Path) -> None:
    """lab-1su: the InfiniBand compute fabric (host and switch ends, GPUs) and the RoCE storage fabric."""
    promtool = require_tool("promtool")
    topology, prometheus = _rendered("lab-1su", tmp_path)
    storage = topology.fabric("storage").fabric
    assert storage.qos is not None
    compute = ib_cases(topology, "compute")
    roce = roce_cases(topology, "storage", storage.qos.lossless.priority)
    _assert_cover(prometheus / "rules" / "compute.rules.yml", compute)
    _assert_cover(prometheus / "rules" / "storage.rules.yml", roce)
    _run_tests(promtool, prometheus / "rules" / "compute.rules.yml", compute, tmp_path)
    _run_tests(promtool, prometheus / "rules" / "storage.rules.yml", roce, tmp_path)


def test_lustre_alerts_fire_and_stay_silent(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    topology, prometheus = _rendered("h100-4su", tmp_path)
    fs = topology.cluster.lustre[0]
    cases = lustre_cases(topology, fs.fabric, fs.fsname)
    doc = yaml.safe_load((prometheus / "rules" / f"{fs.fabric}.rules.yml").read_text())
    assert {r["alert"] for g in doc["groups"] if g["name"].endswith("-lustre") for r in g["rules"]} == {
        c.alert for c in cases}
    _run_tests(promtool, prometheus / "rules" / f"{fs.fabric}.rules.yml", cases, tmp_path)


def _assert_cover(rules: Path, cases: list[Case]) -> None:
    """Every alert of the file has a case (a new alert without a test fails here)."""
    doc = yaml.safe_load(rules.read_text())
    alerts = {r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r and "lustre" not in g["name"]}
    assert alerts == {c.alert for c in cases}
