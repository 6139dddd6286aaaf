"""fabricgen's Lustre client collector: a script that reads a Lustre >= 2.12 client's llite and LNet statistics
through ``lctl``/``lnetctl`` (they moved from /proc to debugfs in 2.12, where /proc-reading exporters find nothing)
and writes them for node_exporter's textfile collector, with the systemd timer that runs it."""

from __future__ import annotations

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template

COLLECTOR = "fabricgen-lustre-stats"
PROM_FILE = "fabricgen-lustre.prom"
LUSTRE_CLIENT = "fabricgen_lustre_client"  # {filesystem, mount}: read and write bytes
LNET = "fabricgen_lnet"  # send, receive and drop counts
DIR = "monitoring/lustre"


def collector(source: str) -> list[Artifact]:
    names = {"collector": COLLECTOR, "script": f"{COLLECTOR}.sh", "service": f"{COLLECTOR}.service",
             "timer": f"{COLLECTOR}.timer", "prom": PROM_FILE, "client": LUSTRE_CLIENT, "lnet": LNET,
             "source": source}
    return [Artifact(f"{DIR}/{names[kind]}", render_template(f"monitoring/{COLLECTOR}.{ext}.j2", **names),
                     mode=0o755 if kind == "script" else 0o644)
            for kind, ext in (("script", "sh"), ("service", "service"), ("timer", "timer"))]
