"""How long the lab takes on h100-4su's storage fabric (10 SONiC switches, 384 leaf-spine cables, FRR and lldpd
per switch, one sampled host per leaf and the six storage servers, from the golden artifacts as OUT) and on the
RoCE compute fabric of tests/data/lab/roce-compute.yaml (18 SONiC SN5600, 2 DGX H100 on 8 rails, applied to a
temporary OUT): `lab up` to every session Established, `lab check` (sessions, routes and ECMP width, every DF
ping), `lab lldp` (every lldpd's table), `lab down`. Prints one line per fabric with the wall times and the up
and check times per switch.

    .venv/bin/python bench/lab_up.py

Needs root, Debian's frr, lldpd and iputils-ping. Exit 0 when every check passed.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fabricgen.features.lab import netns, run  # noqa: E402
from fabricgen.pipeline import compile_spec  # noqa: E402


def bench(title: str, fl: run.FabricLab) -> bool:
    """One fabric's lab up, check, LLDP tables and down, timed; one line printed; True when every check held."""
    netns.down(fl.state_dir)
    try:
        start = time.monotonic()
        run.up(fl)
        up_s = time.monotonic() - start
        start = time.monotonic()
        report = run.run_check(fl)
        check_s = time.monotonic() - start
        start = time.monotonic()
        tables = run.lldp_tables(fl)
        lldp_s = time.monotonic() - start
    finally:
        start = time.monotonic()
        netns.down(fl.state_dir)
        down_s = time.monotonic() - start
    switches = len(fl.lab.namespaces)
    print(f"lab, {title}: {switches} switches, {len(fl.lab.host_namespaces)} hosts, {len(fl.lab.veths)} "
          f"cables, {report.counts['sessions']} sessions: up {up_s:.1f} s ({up_s / switches:.2f} s per switch), "
          f"check {check_s:.1f} s ({check_s / switches:.2f} s per switch), lldp {lldp_s:.1f} s ({len(tables)} "
          f"tables), down {down_s:.1f} s; "
          + ("all checks hold" if not report.failures else f"{len(report.failures)} FAILURES"))
    return not report.failures


def main() -> int:
    compiled = compile_spec(REPO / "inventories/h100-4su.yaml")
    [storage] = run.labs(compiled.topology, REPO / "tests/golden/h100-4su", "storage", 1)
    held = bench("h100-4su storage", storage)
    spec = REPO / "tests/data/lab/roce-compute.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        subprocess.run([sys.executable, "-m", "fabricgen", "apply", str(spec), "-o", str(out), "--yes"],
                       check=True, stdout=subprocess.DEVNULL)
        [compute] = run.labs(compile_spec(spec).topology, out, "compute", 1)
        held = bench("RoCE compute (tests/data/lab/roce-compute.yaml)", compute) and held
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
