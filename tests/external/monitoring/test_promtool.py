"""The monitoring target through Prometheus's own tool (Debian's `prometheus` package ships promtool): `promtool check
config` accepts prometheus.yml with its rule files, `promtool check rules` every rules file (PromQL and the
annotations' templates), `promtool check metrics` every cable plan (the text exposition format node_exporter's
textfile collector parses), and `promtool test rules` evaluates every alert on synthetic series shaped as the
exporters label them (node_exporter, infiniband_exporter, dcgm-exporter, fabricgen's Lustre collector) beside the
plan's info series read from the generated .prom files, as the plan's scrape job labels them (its job and instance):
each alert fires on a series that crosses its threshold, with the plan's fabric, rail, leaf and cable in its labels,
and stays silent on one that does not. Annotations are stripped from the rules under test (promtool compares them
verbatim, values included); `check rules` has parsed their templates."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.features.monitoring.info import HOST_INFO, PLAN_JOB, host_labels, sample, switch_labels
from fabricgen.features.monitoring.lustre import PROM_FILE
from fabricgen.features.monitoring.plan import (
    HostPort,
    SwitchPort,
    host_ports,
    monitored_fabrics,
    planned_gbps,
    switch_ports,
)
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
    stale_plan: bool = False  # the firing run's plan has one failed scrape (a staleness marker) at 10 min


def _quote(value: str) -> str:
    """A label value as PromQL (and the exposition format) quote it."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _series(name: str, labels: dict[str, str]) -> str:
    return name + "{" + ", ".join(f"{k}={_quote(v)}" for k, v in sorted(labels.items())) + "}"


_SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)")
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
        name, body, value = match.groups(default="")
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


def _info(labels: dict[str, str | int | None]) -> dict[str, str]:
    """An info series' labels as the plan's alerts keep them (no job or instance)."""
    return {k: str(v) for k, v in labels.items() if v is not None and v != ""}


def _up(node: str, job: str = "node", port: int = 9100, value: str = "1x70") -> dict[str, str]:
    return {_series("up", {"job": job, "instance": f"{node}:{port}", "node": node}): value}


def ib_cases(topology: Topology, fabric: str) -> list[Case]:
    ft = topology.fabric(fabric)
    host = host_ports(topology, ft)[0]
    sw = next(p for p in switch_ports(topology, ft) if p.switch != host.leaf)  # a leaf-spine cable's upper end
    h, plan = _host(host), _plan_labels(host, fabric)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    rate = {counter("rate_bytes_per_second"): "5e10x70"}
    exporter = {"job": f"infiniband-{fabric}", "instance": "sm:9315"}
    guid = {name: f"0x0002c903010{i:05x}" for i, name in enumerate(sorted({p.switch for p in switch_ports(
        topology, ft)}))}
    s = {"guid": guid[sw.switch], "port": str(sw.port), **exporter}
    switch_info = {_series("infiniband_switch_info", {"guid": guid[sw.switch], "switch": sw.switch, "lid": "7",
                                                      **exporter}): "1x70"}
    swc = lambda name: _series(f"infiniband_switch_{name}", s)  # noqa: E731
    sw_rate = {swc("port_rate_bytes_per_second"): "4.8e10x70", **switch_info}
    sw_labels = {**_plan_labels(sw, fabric), "switch": sw.switch}
    # ibnetdiscover's links as infiniband_exporter reports them: every planned port of the switch (the one
    # infiniband_switch_info names), to its planned peer (an HCA by its node description)
    ports = [p for p in switch_ports(topology, ft) if p.switch == sw.switch]
    nodes = {p.node for p in host_ports(topology, ft)}

    def uplinks(wrong: SwitchPort | None = None, missing: SwitchPort | None = None) -> dict[str, str]:
        return {_series("infiniband_switch_uplink_info", {
            "guid": guid[p.switch], "port": str(p.port), "switch": p.switch, **exporter,
            "uplink": ("elsewhere" if p == wrong else f"{p.peer} mlx5_0" if p.peer in nodes else p.peer),
            "uplink_port": str(p.peer_port)}): "1x70" for p in ports if p != missing}

    sw_up = {_series("up", exporter): "1x70"}
    planned_sw = {**_info(switch_labels(fabric, sw)), "severity": "critical"}
    wait, data = counter("port_transmit_wait_total"), counter("port_data_transmitted_bytes_total")
    return [
        Case("IbLinkDownedHost", {counter("link_downed_total"): "0x30 1x40"}, {counter("link_downed_total"): "0x70"},
             {**plan, "severity": "critical"}, "35m"),
        Case("IbSymbolErrorsHost", {counter("symbol_error_total"): "0+1x70"},
             {counter("symbol_error_total"): "0+0.1x70"}, {**plan, "severity": "warning"}),
        # 8 bytes of line time per tick: 3e9 ticks a minute at 5e10 B/s is 0.8% stalled, 3e10 is 8%, 9e10 24%
        Case("IbXmitWaitHost", {wait: "0+9e10x70", data: "0+400x70"}, {wait: "0+3e10x70", data: "0+400x70"},
             {**plan, "severity": "warning"}, extra=rate),
        # one failed scrape of the plan (stale at 10 min) neither empties the join nor resets the alert's for:
        Case("IbXmitWaitHost", {wait: "0+9e10x70"}, {wait: "0+3e10x70"}, {**plan, "severity": "warning"}, "24m",
             extra=rate, stale_plan=True),
        Case("IbCounterSaturatedHost", {counter("symbol_error_total"): "65535x70"},
             {counter("symbol_error_total"): "65534x70"}, {**plan, "counter": "symbol_error", "severity": "warning"}),
        Case("IbCounterSaturatedHost", {counter("link_downed_total"): "255x70"},
             {counter("port_transmit_wait_total"): "4294967294x70"},
             {**plan, "counter": "link_downed", "severity": "warning"}),
        Case("IbLinkDownedSwitch", {swc("port_link_downed_total"): "0x30 1x40"},
             {swc("port_link_downed_total"): "0x70"},
             {**sw_labels, "severity": "critical"}, "35m", switch_info),
        Case("IbSymbolErrorsSwitch", {swc("port_symbol_error_total"): "0+1x70"},
             {swc("port_symbol_error_total"): "0x70"}, {**sw_labels, "severity": "warning"}, extra=switch_info),
        Case("IbXmitWaitSwitch", {swc("port_transmit_wait_total"): "0+9e10x70"},
             {swc("port_transmit_wait_total"): "0+3e10x70"}, {**sw_labels, "severity": "warning"}, extra=sw_rate),
        Case("IbCounterSaturatedSwitch", {swc("port_transmit_wait_total"): "4294967295x70"},
             {swc("port_transmit_wait_total"): "4294967294x70"},
             {**sw_labels, "counter": "port_transmit_wait", "severity": "warning"}, extra=switch_info),
        Case("IbSwitchLinkSlow", {swc("port_rate_bytes_per_second"): "2.4e10x70"},
             {swc("port_rate_bytes_per_second"): "4.8e10x70"}, {**sw_labels, "severity": "warning"},
             extra=switch_info),
        Case("IbSwitchPortNotLinked", {**uplinks(missing=sw), **sw_up}, {**uplinks(), **sw_up}, planned_sw,
             aggregated=True, extra=switch_info),
        Case("IbSwitchPortMiswired", {**uplinks(wrong=sw), **sw_up}, {**uplinks(), **sw_up}, planned_sw,
             aggregated=True, extra=switch_info),
        *port_cases(topology, fabric, host),
        *rdma_cases(host, plan, gpus=True),
        Case("GpuDataWait", *_gpu(host), {"fabric": fabric, "severity": "warning"}),
        plan_case(fabric),
    ]


def port_cases(topology: Topology, fabric: str, port: HostPort) -> list[Case]:
    """A planned port's state: not active, not exported, without hw_counters, trained below its planned speed."""
    own_ports = [p for p in host_ports(topology, topology.fabric(fabric)) if p.node == port.node and p != port]
    state = lambda p, value="4x70": {_series("node_infiniband_state_id", _host(p)): value}  # noqa: E731
    others = {k: v for p in own_ports for k, v in state(p).items()}  # the node's other ports are fine
    planned = {**_info(host_labels(fabric, port)), "severity": "critical"}
    plan = _plan_labels(port, fabric)
    rate = _series("node_infiniband_rate_bytes_per_second", _host(port))
    full = planned_gbps(topology.fabric(fabric))[port.speed] * 1e9 / 8  # as node_exporter reads "400 Gb/sec"
    return [
        Case("RdmaPortNotActive", state(port, "1x70"), state(port), {**plan, "severity": "critical"}),
        Case("RdmaPortNotSeen", {**others, **_up(port.node)}, {**others, **state(port), **_up(port.node)},
             planned, aggregated=True),
        Case("RdmaHwCountersMissing", state(port), {**state(port), _series(
            "node_infiniband_out_of_sequence_packets_received_total", _host(port)): "0x70"},
             {**planned, "severity": "warning"}, aggregated=True),
        Case("RdmaLinkSlow", {rate: f"{full / 2:.0f}x70"}, {rate: f"{full:.0f}x70"}, {**plan, "severity": "warning"}),
    ]


def plan_case(fabric: str) -> Case:
    """Without the fabric's cable plan every other alert is silent: CablePlanMissing says so."""
    return Case("CablePlanMissing", {}, {}, {"fabric": fabric, "severity": "critical"}, aggregated=True,
                without_plan=True)


def _gpu_labels(port: HostPort) -> dict[str, str]:
    return {"node": port.node, "gpu": str(port.gpu or 0), "UUID": "GPU-1", "device": f"nvidia{port.gpu or 0}",
            "modelName": "NVIDIA H100 80GB HBM3", "Hostname": port.node, "job": "dcgm",
            "instance": f"{port.node}:9400"}


def _gpu(port: HostPort) -> tuple[dict[str, str], dict[str, str]]:
    """A GPU with a job on it: idle half the time (fires GpuDataWait), busy 90% (quiet)."""
    labels = _gpu_labels(port)
    used = {_series("DCGM_FI_DEV_FB_USED", labels): "30000x70"}
    active = _series("DCGM_FI_PROF_GR_ENGINE_ACTIVE", labels)
    return {**used, active: "0.5x70"}, {**used, active: "0.9x70"}


def rdma_cases(port: HostPort, plan: dict[str, str], gpus: bool) -> list[Case]:
    h = _host(port)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    rate = {counter("rate_bytes_per_second"): "1e9x70"}
    job, _ = _gpu(port)
    busy = {**rate, **(job if gpus else {})}
    low = [  # a running job's port at 20% of its rate; a port with background traffic only (10 kB/s) is quiet
        Case("LinkUtilisationLow", {counter("port_data_transmitted_bytes_total"): "0+12e9x70"},
             {counter("port_data_transmitted_bytes_total"): "0+6e5x70"}, {**plan, "severity": "info"}, extra=busy)]
    if gpus:  # at 20% with no job on the node's GPUs: quiet
        idle = {_series("DCGM_FI_DEV_FB_USED", _gpu_labels(port)): "0x70"}
        low.append(Case("LinkUtilisationLow", {counter("port_data_transmitted_bytes_total"): "0+12e9x70", **job},
                        {counter("port_data_transmitted_bytes_total"): "0+12e9x70", **idle},
                        {**plan, "severity": "info"}, extra=rate))
    return [
        Case("RdmaLossHigh", {counter("out_of_sequence_packets_received_total"): "0+10x70",
                              counter("port_packets_received_total"): "0+1000x70"},
             {counter("out_of_sequence_packets_received_total"): "0+0.005x70",
              counter("port_packets_received_total"): "0+1000x70"}, {**plan, "severity": "critical"}),
        Case("LinkUtilisationHigh", {counter("port_data_transmitted_bytes_total"): "0+60e9x70"},
             {counter("port_data_transmitted_bytes_total"): "0+48e9x70"}, {**plan, "severity": "warning"}, extra=rate),
        *low,
    ]


def roce_cases(topology: Topology, fabric: str, lossless: int) -> list[Case]:
    ports = host_ports(topology, topology.fabric(fabric))
    port = ports[0]
    h, plan = _host(port), _plan_labels(port, fabric)
    counter = lambda name: _series(f"node_infiniband_{name}", h)  # noqa: E731
    ethtool = lambda name: _series(f"node_ethtool_{name}", _netdev(port))  # noqa: E731
    lossy = (lossless + 1) % 8
    nd = {**plan, "netdev": port.netdev}  # the ethtool joins name the netdev too
    pfc = {_series(f"node_ethtool_received_prio{lossless}_pause", _netdev(p)): "0x70"
           for p in ports if p.node == port.node and p != port}  # the node's other ports have PFC on
    own_pfc = {ethtool(f"received_prio{lossless}_pause"): "0x70"}
    return [
        *rdma_cases(port, plan, gpus=False),
        plan_case(fabric),
        *port_cases(topology, fabric, port),
        Case("RoceCnpIgnored", {counter("rp_cnp_ignored_packets_received_total"): "0+5x70"},
             {counter("rp_cnp_ignored_packets_received_total"): "0x70"}, {**plan, "severity": "critical"}),
        Case("RoceEcnMarksHigh", {counter("np_ecn_marked_roce_packets_received_total"): "0+100x70",
                                  counter("port_packets_received_total"): "0+1000x70"},
             {counter("np_ecn_marked_roce_packets_received_total"): "0+10x70",
              counter("port_packets_received_total"): "0+1000x70"}, {**plan, "severity": "warning"}),
        # pause durations in microseconds: 12 s a minute is 20% of the time paused, 3 s is 5%
        Case("RocePfcPauseReceived", {ethtool(f"received_prio{lossless}_pause_duration"): "0+12e6x70"},
             {ethtool(f"received_prio{lossless}_pause_duration"): "0+3e6x70"}, {**nd, "severity": "warning"}),
        Case("RocePfcPauseTransmitted", {ethtool(f"transmitted_prio{lossless}_pause_duration"): "0+12e6x70"},
             {ethtool(f"transmitted_prio{lossless}_pause_duration"): "0+3e6x70"}, {**nd, "severity": "warning"}),
        Case("RocePfcNotEnabled", {**pfc, **_up(port.node)}, {**pfc, **own_pfc, **_up(port.node)},
             {**_info(host_labels(fabric, port)), "severity": "critical"}, aggregated=True),
        Case("RocePfcPauseLossyPriority", {ethtool(f"received_prio{lossy}_pause"): "0x30 5x40"},
             {ethtool(f"received_prio{lossless}_pause"): "0+100x70"}, {**nd, "severity": "warning"}, "35m"),
        Case("RoceGlobalPause", {ethtool("transmitted_global_pause"): "0x30 5x40"},
             {ethtool("transmitted_global_pause"): "0x70"}, {**nd, "severity": "warning"}, "35m"),
        Case("RocePfcStorm", {ethtool("transmitted_pause_storm_error_events"): "0x30 1x40"},
             {ethtool("transmitted_pause_storm_error_events"): "0x70"}, {**nd, "severity": "critical"}, "35m"),
    ]


def lustre_cases(topology: Topology, fabric: str, fsnames: list[str]) -> list[Case]:
    """fabricgen's collector's series, as node_exporter's textfile collector serves them (job node)."""
    port = host_ports(topology, topology.fabric(fabric))[0]
    fsname, *more = fsnames
    scraped = {"job": "node", "instance": f"{port.node}:9100", "node": port.node}
    read = lambda fs: _series("fabricgen_lustre_client_read_bytes_total", {  # noqa: E731
        "filesystem": fs, "mount": f"{fs}-ffff8f2a3c5e1000", **scraped})
    others = {read(fs): "0+120e9x70" for fs in more}  # the node's other file systems report
    messages = {_series("fabricgen_lnet_receive_count_total", scraped): "0+500x70",
                _series("fabricgen_lnet_send_count_total", scraped): "0+500x70"}
    gpu = HostPort("", port.node, "", 0, "", 0, None, None, "", 0, "")
    waiting, working = _gpu(gpu)
    mtime = _series("node_textfile_mtime_seconds", {"file": f"/var/lib/prometheus/node-exporter/{PROM_FILE}",
                                                    **scraped})
    client = {"node": port.node, "fabric": fabric, "filesystem": fsname}
    return [
        # 100 MB/s while a GPU of the node idles half the time with a job on it; quiet while it computes
        Case("LustreClientThroughputLow", {read(fsname): "0+6e9x70", **waiting}, {read(fsname): "0+6e9x70", **working},
             {**client, "severity": "warning"}, aggregated=True),
        Case("LustreClientStatsMissing", {**others, **_up(port.node)}, {**others, read(fsname): "0x70",
                                                                         **_up(port.node)},
             {**client, "severity": "warning"}, aggregated=True),
        Case("LustreClientStatsStale", {mtime: "0x70"}, {mtime: "0+60x70"}, {"fabric": fabric, "severity": "warning"}),
        Case("LnetLossHigh", {_series("fabricgen_lnet_drop_count_total", scraped): "0+10x70"},
             {_series("fabricgen_lnet_drop_count_total", scraped): "0x70"}, {"fabric": fabric, "severity": "critical"},
             extra=messages),
    ]


def exporter_cases() -> list[Case]:
    node = {"job": "node", "instance": "hgx01:9100", "node": "hgx01"}
    build = lambda version: {_series("node_exporter_build_info", {  # noqa: E731
        "version": version, "goversion": "go1.24", **node}): "1x70"}
    return [
        Case("ExporterDown", {_series("up", node): "0x70"}, {_series("up", node): "1x70"}, {"severity": "critical"}),
        Case("CablePlanScrapeFailing", {_series("up", {"job": PLAN_JOB, "instance": "localhost:9100"}): "0x70"},
             {_series("up", {"job": PLAN_JOB, "instance": "localhost:9100"}): "1x70"}, {"severity": "critical"}),
        Case("NodeExporterTooOld", build("1.5.0"), build("1.11.0"), {"severity": "warning"}),
        Case("NodeExporterTooOld", build("1.10.2"), build("2.0.0"), {"severity": "warning"}),
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
        fire_plan = {} if case.without_plan else dict.fromkeys(plan, "1x9 stale 1x60") if case.stale_plan else plan
        for series, alerts, info in ((case.fire, [{"exp_labels": expected}], fire_plan), (case.quiet, [], plan)):
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
    fabric = topology.cluster.lustre[0].fabric
    cases = lustre_cases(topology, fabric, [fs.fsname for fs in topology.cluster.lustre if fs.fabric == fabric])
    doc = yaml.safe_load((prometheus / "rules" / f"{fabric}.rules.yml").read_text())
    assert {r["alert"] for g in doc["groups"] if g["name"].endswith("-lustre") for r in g["rules"]} == {
        c.alert for c in cases}
    _run_tests(promtool, prometheus / "rules" / f"{fabric}.rules.yml", cases, tmp_path)


def test_exporter_alerts_fire_and_stay_silent(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    _, prometheus = _rendered("lab-1su", tmp_path)
    rules = prometheus / "rules" / "fabricgen-exporters.rules.yml"
    cases = exporter_cases()
    _assert_cover(rules, cases)
    _run_tests(promtool, rules, cases, tmp_path)


def _assert_cover(rules: Path, cases: list[Case]) -> None:
    """Every alert of the file has a case (a new alert without a test fails here)."""
    doc = yaml.safe_load(rules.read_text())
    alerts = {r["alert"] for g in doc["groups"] for r in g["rules"] if "alert" in r and "lustre" not in g["name"]}
    assert alerts == {c.alert for c in cases}
