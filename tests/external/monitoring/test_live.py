"""The cable plan served as the README says, by the real programs (Debian's prometheus and prometheus-node-exporter):
node_exporter's textfile collector serves lab-1su's two .prom files (one metric from two files), Prometheus scrapes
them by the generated plan job and an exporter by the generated node job, whose target also serves a copy of the
plan (a Prometheus host that is one of the nodes); the plan is read once, keeps its own node label, and the rules'
join names the cable of a counter the node job scraped. Only targets and intervals are changed in the generated
prometheus.yml (the real hosts do not exist here)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from fabricgen.features.monitoring.info import PLAN_JOB
from tests.conftest import require_tool
from tests.external.monitoring.test_promtool import _rendered

COUNTER = ("# HELP node_infiniband_port_data_transmitted_bytes_total x\n"
           "# TYPE node_infiniband_port_data_transmitted_bytes_total counter\n"
           'node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",port="1"} 123\n')


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _running(*argv: str, log: Path) -> Iterator[None]:
    with log.open("w") as out:
        process = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield
        finally:
            process.terminate()
            process.wait(10)


def _get(base: str, path: str, **params: str) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(params)}"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.load(reply)["data"]


def _query(base: str, expr: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = _get(base, "/api/v1/query", query=expr)["result"]
    return result


def test_prometheus_reads_the_plan_from_node_exporter_and_joins_it(tmp_path: Path) -> None:
    exporter, prometheus = require_tool("prometheus-node-exporter"), require_tool("prometheus")
    _, generated = _rendered("lab-1su", tmp_path)
    node_dir = tmp_path / "node-textfile"  # hgx01's node_exporter: a counter and a copy of the plan
    node_dir.mkdir()
    (node_dir / "counters.prom").write_text(COUNTER)
    shutil.copy(generated / "textfile" / "compute-cables.prom", node_dir)
    plan_port, node_port, web_port = _port(), _port(), _port()
    config = yaml.safe_load((generated / "prometheus.yml").read_text())
    config["global"] = {"scrape_interval": "2s", "evaluation_interval": "2s"}
    config["rule_files"] = [str(generated / f) for f in config["rule_files"]]
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    node, plan = jobs["node"], jobs[PLAN_JOB]
    node["static_configs"] = [{"targets": [f"127.0.0.1:{node_port}"]}]
    node["relabel_configs"][0]["replacement"] = "hgx01"  # the target stands for hgx01
    plan["static_configs"] = [{"targets": [f"127.0.0.1:{plan_port}"]}]
    plan |= {"scrape_interval": "2s", "scrape_timeout": "2s"}
    config["scrape_configs"] = [node, plan]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    textfile = ("--collector.disable-defaults", "--collector.textfile")
    base = f"http://127.0.0.1:{web_port}"
    with (_running(exporter, f"--web.listen-address=127.0.0.1:{plan_port}", *textfile,
                   f"--collector.textfile.directory={generated / 'textfile'}", log=tmp_path / "plan.log"),
          _running(exporter, f"--web.listen-address=127.0.0.1:{node_port}", *textfile,
                   f"--collector.textfile.directory={node_dir}", log=tmp_path / "node.log"),
          _running(prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                   f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{web_port}",
                   log=tmp_path / "prometheus.log")):
        joined: list[dict[str, Any]] = []
        error: object = None
        deadline = time.monotonic() + 90
        while not joined and time.monotonic() < deadline:
            time.sleep(2)
            try:
                joined = _query(base, 'node_infiniband_port_data_transmitted_bytes_total * on(node, device, port)'
                                ' group_left(fabric, cable, rail, su, leaf, leaf_port)'
                                ' fabricgen_host_port_info{fabric="compute"}')
            except urllib.error.HTTPError as refused:  # the query fails (a many-to-many match)
                error = refused.read().decode()
            except OSError as down:  # Prometheus not listening yet
                error = down
        assert joined, error
        assert [r["metric"] for r in joined] == [{
            "node": "hgx01", "device": "mlx5_0", "port": "1", "job": "node", "instance": f"127.0.0.1:{node_port}",
            "fabric": "compute", "cable": "compute-su01-leaf0-001", "rail": "0", "su": "1",
            "leaf": "compute-su01-leaf0",
            "leaf_port": "1"}]
        plans = _query(base, 'count by(job, instance) ({__name__=~"fabricgen_.+_info"})')
        samples = sum(1 for f in (generated / "textfile").glob("*.prom") for line in f.read_text().splitlines()
                      if not line.startswith("#"))
        assert [(r["metric"], r["value"][1]) for r in plans] == [
            ({"job": PLAN_JOB, "instance": f"127.0.0.1:{plan_port}"}, str(samples))]
        assert not _query(base, '{__name__=~"fabricgen_.+_info", exported_node!=""}')
        assert _query(base, 'node_textfile_scrape_error{job="node"} == 0')  # hgx01's exporter read its two files
        rules = [r for g in _get(base, "/api/v1/rules")["groups"] for r in g["rules"]]
        assert rules and {r["health"] for r in rules} <= {"ok", "unknown"}, [r.get("lastError") for r in rules]
