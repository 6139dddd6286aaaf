"""The plan as data: one info series per cable end, in Prometheus's text exposition format, one file per fabric for
node_exporter's textfile collector on the Prometheus host. The rules join every exporter counter to these series.

Served as scraped data, not as rules: bench-16k's ~98k cable ends were as many constant recording rules, evaluated
every interval. The lines are joined as plain strings (no emitter) and sorted, so the file is byte-identical for the
same plan.
"""

from __future__ import annotations

from fabricgen.features.monitoring.plan import HostPort, SwitchPort, host_ports, lustre_clients, switch_ports
from fabricgen.model.cluster import FabricType
from fabricgen.model.topology import FabricTopology, Topology

HOST_INFO = "fabricgen_host_port_info"
SWITCH_INFO = "fabricgen_switch_port_info"
LUSTRE_INFO = "fabricgen_lustre_client_info"
# The same help in every fabric's file: node_exporter drops a metric whose help differs from one file to another.
HELP = {
    HOST_INFO: "A node's end of a planned node-leaf cable (fabricgen): node, RDMA device, HCA port, netdev, GPU,"
               " the cable id, rail, scalable unit, leaf and leaf port, the planned speed.",
    SWITCH_INFO: "A switch's end of a planned cable (fabricgen): switch, port, the peer and its port, the cable id,"
                 " rail, the cable's leaf and the planned speed.",
    LUSTRE_INFO: "A planned Lustre client (fabricgen): node and file system, on the fabric that carries it.",
}
Labels = dict[str, str | int | None]
PLAN_JOB = "fabricgen-cables"  # the scrape job that reads these files
TEXTFILE_DIR = "monitoring/prometheus/textfile"


def textfile_name(fabric: str) -> str:
    return f"{fabric}-cables.prom"


def host_labels(fabric: str, p: HostPort) -> Labels:
    """A host end's labels, by name (the order Prometheus itself exposes them in)."""
    return {"cable": p.cable, "device": p.device, "fabric": fabric, "gpu": p.gpu, "leaf": p.leaf,
            "leaf_port": p.leaf_port, "netdev": p.netdev, "node": p.node, "port": p.port, "rail": p.rail,
            "speed": p.speed, "su": p.su}


def switch_labels(fabric: str, p: SwitchPort) -> Labels:
    """A switch end's labels, by name."""
    return {"cable": p.cable, "fabric": fabric, "leaf": p.leaf, "peer": p.peer, "peer_port": p.peer_port,
            "port": p.port, "rail": p.rail, "speed": p.speed, "switch": p.switch}


def escape(value: str) -> str:
    """A label value as the exposition format writes it: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def sample(name: str, labels: Labels) -> str:
    """One sample of value 1; a label without a value is left out (Prometheus's empty label is no label)."""
    shown = [(k, v) for k, v in labels.items() if v is not None and v != ""]
    pairs = ",".join([f'{k}="{v}"' for k, v in shown])
    # Escaped only when a value needs it (a quote beyond the pairs' own, a backslash or a line feed): 100,000
    # samples at 16k GPUs, none of whose names and ports does
    if "\\" in pairs or "\n" in pairs or pairs.count('"') != 2 * len(shown):
        pairs = ",".join([f'{k}="{v}"' if isinstance(v, int) else f'{k}="{escape(v)}"' for k, v in shown])
    return f"{name}{{{pairs}}} 1"


def _family(name: str, samples: list[str]) -> list[str]:
    return [f"# HELP {name} {HELP[name]}", f"# TYPE {name} gauge", *sorted(samples)]


def cables_prom(topology: Topology, ft: FabricTopology) -> str:
    """The fabric's info series: every host end, on InfiniBand both ends of every switch port, and the Lustre
    clients of the file systems the fabric carries."""
    fabric = ft.fabric.name
    lines = _family(HOST_INFO, [sample(HOST_INFO, host_labels(fabric, p)) for p in topology.derived(host_ports, ft)])
    if ft.fabric.type is FabricType.INFINIBAND:
        lines += _family(SWITCH_INFO, [sample(SWITCH_INFO, switch_labels(fabric, p))
                                       for p in switch_ports(topology, ft)])
    clients = lustre_clients(topology, ft)
    if clients:
        lines += _family(LUSTRE_INFO, [sample(LUSTRE_INFO, {"fabric": fabric, "filesystem": fs, "node": node})
                                       for node, fs in clients])
    return "\n".join(lines) + "\n"
