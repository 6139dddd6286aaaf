"""`make bench`: fabricgen's EOS configs against Arista's pyavd on the same leaf-spine fabric, CPU per switch.

The fabric is the benchmark spec's RoCE storage fabric on Arista switches (7060DX5-64S leaves, 7060X6-64PE
spines, eBGP underlay). pyavd gets AVD design inputs for the same switches and links: an ``l3leaf`` node group per
leaf with its own AS (as fabricgen numbers them), the spines in one AS, each leaf's uplinks on the same
interfaces to the same spine interfaces, loopback and point-to-point pools of the same sizes, no overlay. pyavd's
leaves carry no host ports (AVD needs network services for those); fabricgen's carry theirs, its lossless QoS and
its management baseline, so the ratio is in pyavd's favour.

Timed, CPU seconds (time.process_time), each side in this process after a warm-up run:
- pyavd: validate_inputs per switch, get_avd_facts over the fabric, get_device_structured_config (a typed
  structured config, already in the schema) and get_device_config per switch: inputs to CLI;
- fabricgen: the EOS renderer (structured config, its YAML and the CLI from it, per switch) over the compiled
  topology, and, beside it, compile + checks of the whole spec divided among the EOS switches (what a plan of this
  fabric alone could not avoid; the spec also has the InfiniBand, in-band and out-of-band fabrics).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import spec_text  # bench/bench.py (this directory is on sys.path when run as a script)

from fabricgen.features.ethernet.nos import eos
from fabricgen.features.ethernet.switch_view import SwitchView
from fabricgen.pipeline import compile_spec

SONIC_STORAGE = "    switch: SN5600\n    nos: sonic\n"
EOS_STORAGE = "    switch: {leaf: 7060DX5-64S, spine: 7060X6-64PE}\n    nos: eos\n"
GPUS = 4096


def eos_spec(gpus: int, tmp: Path) -> Path:
    text = spec_text(gpus)
    assert text.count(SONIC_STORAGE) == 1
    spec = tmp / f"avd-{gpus}.yaml"
    spec.write_text(text.replace(SONIC_STORAGE, EOS_STORAGE), encoding="utf-8")
    return spec


def avd_inputs(views: Sequence[SwitchView]) -> dict[str, dict[str, Any]]:
    """AVD design inputs (eos_designs, l3ls-evpn without an overlay) for the switches and uplinks of ``views``."""
    spines = [v for v in views if v.tier.value == "spine"]
    leaves = [v for v in views if v.tier.value == "leaf"]
    if not spines or not leaves or len(spines) + len(leaves) != len(views):
        raise SystemExit(f"expected a 2-tier leaf-spine fabric, got tiers {sorted({v.tier.value for v in views})}")
    node_id = {v.name: i for i, v in enumerate(spines, 1)} | {v.name: i for i, v in enumerate(leaves, 1)}
    groups = []
    for leaf in leaves:
        uplinks = sorted((p for p in leaf.ports if p.kind == "uplink"), key=lambda p: p.number)
        groups.append({"group": leaf.name, "bgp_as": str(leaf.asn), "nodes": [{
            "name": leaf.name, "id": node_id[leaf.name], "mgmt_ip": f"{leaf.management}/20",
            "uplink_interfaces": [f"Ethernet{p.name}" for p in uplinks],
            "uplink_switches": [p.peer for p in uplinks],
            "uplink_switch_interfaces": [f"Ethernet{p.peer_port}" for p in uplinks]}]})
    p2p = sum(len([p for p in v.ports if p.kind == "uplink"]) for v in leaves) * 2
    common = {
        "fabric_name": "STORAGE",
        "underlay_routing_protocol": "ebgp",
        "overlay_routing_protocol": "none",
        "p2p_uplinks_mtu": leaves[0].mtu,
        "spine": {"defaults": {"loopback_ipv4_pool": "10.5.0.0/20", "bgp_as": str(spines[0].asn)},
                  "nodes": [{"name": s.name, "id": node_id[s.name], "mgmt_ip": f"{s.management}/20"} for s in spines]},
        "l3leaf": {"defaults": {"loopback_ipv4_pool": "10.5.0.0/20", "loopback_ipv4_offset": len(spines), "vtep": False,
                                "uplink_ipv4_pool": f"10.4.0.0/{32 - max(p2p - 1, 1).bit_length()}"},
                   "node_groups": groups},
    }
    return {v.name: {**common, "type": "spine" if v.tier.value == "spine" else "l3leaf"} for v in views}


def pyavd_cpu(all_inputs: dict[str, dict[str, Any]]) -> float:
    """CPU seconds of pyavd from design inputs to EOS CLI for every switch."""
    import pyavd

    start = time.process_time()
    validated = {}
    for name, inputs in all_inputs.items():
        result = pyavd.validate_inputs(inputs)
        if result.validated_data is None or result.validation_result.violations:
            raise SystemExit(f"pyavd refused the inputs of {name}: {result.validation_result.violations[:3]}")
        validated[name] = result.validated_data
    facts = pyavd.get_avd_facts(validated)
    for name in all_inputs:
        pyavd.get_device_config(pyavd.get_device_structured_config(name, validated[name], facts))
    return time.process_time() - start


def main() -> int:
    gpus = int(sys.argv[sys.argv.index("--gpus") + 1]) if "--gpus" in sys.argv else GPUS
    try:
        import pyavd  # noqa: F401
    except ImportError:
        print("pyavd not installed (it is in the test extra): skipping the pyavd comparison")
        return 0
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.process_time()
        compiled = compile_spec(eos_spec(gpus, Path(tmp)))
        compile_cpu = time.process_time() - start
    topology = compiled.topology
    views = [v for v in eos.eos_views(topology) if v.fabric.name == "storage"]
    inputs = avd_inputs(views)
    pyavd_cpu(inputs)  # warm-up, both sides: imports, schema and template loading
    eos.render(topology)
    start = time.process_time()
    eos.render(topology)
    ours = time.process_time() - start
    theirs = pyavd_cpu(inputs)
    n = len(views)
    leaves = sum(v.tier.value == "leaf" for v in views)
    host_ports = sum(len(v.host_ports) for v in views)
    print(f"\nEOS configs against pyavd {sys.modules['pyavd'].__version__} ({gpus} GPUs' storage fabric: {n} switches, "
          f"{leaves} leaves, {n - leaves} spines, {host_ports} host ports on fabricgen's leaves; load "
          f"{load:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores)")
    print(f"  pyavd, inputs to CLI: {theirs:.2f} s CPU, {1000 * theirs / n:.1f} ms per switch")
    print(f"  fabricgen, EOS renderer: {ours:.2f} s CPU, {1000 * ours / n:.1f} ms per switch: "
          f"{theirs / ours:.1f}x less CPU than pyavd (target >= 20x)")
    print(f"  fabricgen, with the whole spec's compile and checks shared among these switches: "
          f"{1000 * (ours + compile_cpu) / n:.1f} ms per switch ({theirs / (ours + compile_cpu):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
