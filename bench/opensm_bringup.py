"""How long OpenSM takes to bring up a simulated fabric from fabricgen's generated files.

Builds a spec of N generic 8-GPU HGX servers (profile hgx-8gpu-generic, 8 NDR rails, scalable units of 32
nodes, simulated GUIDs, ftree, a Default and an IPoIB partition, two QoS levels), runs `fabricgen apply`, stages
the OpenSM files (tests/external/ibsim.py: /etc/opensm rewritten to a temporary dir), boots the expected
topology in ibsim 0.10 (NDR links as HDR, node/switch/port limits raised to fit) and runs `opensm -o` attached
to the first HCA. Prints one line: sizes, ibsim boot time, seconds from OpenSM's start to SUBNET UP (from its
log timestamps) and the wall time of the `opensm -o` run.

    .venv/bin/python bench/opensm_bringup.py              # 256 nodes x 8 rails = 2048 HCAs, 8 SUs
    .venv/bin/python bench/opensm_bringup.py --nodes 16   # a quick run (what tests/external runs)

Needs opensm, ibsim (ibsim-utils) and libumad2sim. Exit 0 when the subnet came up routed by ftree.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.external.ibsim import (  # noqa: E402  (the repository root must be importable first)
    Deadline,
    IbSim,
    NetFile,
    run_opensm,
    speeds_for_ibsim,
    stage_opensm_config,
    write_runtime_config,
)

RAILS = 8  # hgx-8gpu-generic: one ConnectX-7 per GPU
RACKS_PER_ROW = 32
NODES_PER_RACK = 4
SWITCHES_PER_NETWORK_RACK = 16


def spec_text(nodes: int) -> str:
    su = min(32, nodes)
    racks = math.ceil(nodes / NODES_PER_RACK)
    rows = [chr(ord("A") + i) for i in range(math.ceil(racks / RACKS_PER_ROW))]
    leaves = RAILS * math.ceil(nodes / su)
    network_racks = math.ceil(3 * leaves / SWITCHES_PER_NETWORK_RACK) + 1  # leaves, spines and a core if any
    row_lines = "\n".join(f"    - {{name: {r}, racks: {RACKS_PER_ROW}}}" for r in rows)
    return f"""apiVersion: fabricgen/v1
kind: Cluster
metadata: {{name: bringup-{nodes}, site: bench}}
facility:
  rows:
{row_lines}
    - {{name: N1, racks: {network_racks}, kind: network}}
nodes:
  - name: hgx{{n:04d}}
    count: {nodes}
    profile: hgx-8gpu-generic
    placement: {{rows: [{", ".join(rows)}], per_rack: {NODES_PER_RACK}, start_u: 2}}
fabrics:
  compute:
    type: infiniband
    speed: NDR
    switch: QM9700
    topology: {{kind: rail-optimized, scalable_unit: {su}}}
    subnet_manager:
      routing_engine: ftree
      guids: simulated
      partitions:
        - {{name: Default, pkey: "0x7fff", members: all, membership: limited}}
        - {{name: training, pkey: "0x8001", members: {{groups: ["hgx{{n:04d}}"]}},
           ipoib: {{mtu: 4096, rate_gbps: 400}}}}
      traffic: {{compute: training}}
      qos:
        levels:
          - {{ulp: default, sl: 0}}
          - {{partition: training, sl: 1}}
"""


@dataclass
class Result:
    nodes: int
    hcas: int
    switches: int
    leaves: int
    limits: tuple[int, int, int]
    apply_s: float
    ibsim_boot_s: float
    opensm_wall_s: float
    subnet_up_s: float | None  # OpenSM start -> SUBNET UP, from its log
    ftree: bool
    errors: list[str]

    @property
    def ok(self) -> bool:
        return self.subnet_up_s is not None and self.ftree

    def line(self) -> str:
        up = f"SUBNET UP {self.subnet_up_s:.1f} s after OpenSM started" if self.subnet_up_s is not None \
            else "no SUBNET UP"
        n, s, p = self.limits
        return (f"opensm-bringup: {self.nodes} nodes x {RAILS} rails = {self.hcas} HCAs, {self.switches} switches "
                f"({self.leaves} leaves), ibsim -N {n} -S {s} -P {p}: apply {self.apply_s:.1f} s, "
                f"ibsim ready {self.ibsim_boot_s:.1f} s, {up} (opensm -o wall {self.opensm_wall_s:.1f} s), "
                f"ftree {'yes' if self.ftree else 'NO'}, {len(self.errors)} error line(s) in the log")


def measure(nodes: int, workdir: Path, timeout: float = 600.0) -> Result:
    deadline = Deadline(timeout, f"bring-up of {nodes} nodes")
    spec = workdir / f"bringup-{nodes}.yaml"
    spec.write_text(spec_text(nodes))
    out = workdir / "out"
    t0 = time.monotonic()
    cp = subprocess.run([sys.executable, "-m", "fabricgen", "apply", str(spec), "-o", str(out), "--yes"],
                        capture_output=True, text=True, timeout=deadline.left(300), check=False)
    if cp.returncode != 0:
        raise RuntimeError(f"fabricgen apply failed ({cp.returncode}):\n{cp.stdout}{cp.stderr}")
    apply_s = time.monotonic() - t0
    fabric_dir = out / "infiniband" / "compute"
    staged = stage_opensm_config(fabric_dir, workdir)
    write_runtime_config(staged, {}, timeout=deadline.left(20))  # no keys in this spec: a plain copy
    net_text = speeds_for_ibsim((fabric_dir / "topology.net").read_text())  # ibsim 0.10 stops at HDR
    net_path = workdir / "topology-hdr.net"
    net_path.write_text(net_text)
    net = NetFile.parse(net_text)
    sim = IbSim(net_path, workdir / "sim", host=net.first_ca().id, limits=net.limits())
    try:
        sim.start(timeout=deadline.left(120))
        run = run_opensm(sim, staged.conf_out, timeout=deadline.left())
    finally:
        sim.stop()
    leaves = sum(1 for s in net.switches if any(net.nodes[r].kind == "Ca" for r, _, _ in s.ports.values()))
    return Result(nodes=nodes, hcas=len(net.cas), switches=len(net.switches), leaves=leaves, limits=sim.limits,
                  apply_s=apply_s, ibsim_boot_s=sim.boot_seconds, opensm_wall_s=run.seconds,
                  subnet_up_s=run.seconds_to("SUBNET UP"),
                  ftree=bool(run.lines("ftree tables configured on all switches")), errors=run.errors())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=256, help="8-GPU nodes (8 HCAs each); default 256 = 2048 HCAs")
    parser.add_argument("--workdir", type=Path, help="keep the spec, generated files, logs here (default: a temp dir)")
    parser.add_argument("--timeout", type=float, default=600.0, help="overall bound in seconds")
    args = parser.parse_args(argv)
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        result = measure(args.nodes, args.workdir, args.timeout)
    else:
        with tempfile.TemporaryDirectory(prefix="opensm-bringup-") as tmp:
            result = measure(args.nodes, Path(tmp), args.timeout)
    print(result.line())
    for line in result.errors:
        print(f"  {line}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
