"""How long the lab takes on h100-4su's storage fabric (10 SONiC switches, 384 leaf-spine cables, FRR per switch,
one sampled host per leaf and the six storage servers, from the golden artifacts as OUT): `lab up` to every
session Established, `lab check` (sessions, routes and ECMP width, every DF ping), `lab down`. Prints one line
with the three wall times and the up time per switch.

    .venv/bin/python bench/lab_up.py

Needs root, Debian's frr and iputils-ping. Exit 0 when the check passed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from fabricgen.features.lab import netns, run  # noqa: E402
from fabricgen.pipeline import compile_spec  # noqa: E402


def main() -> int:
    compiled = compile_spec(REPO / "inventories/h100-4su.yaml")
    [fl] = run.labs(compiled.topology, REPO / "tests/golden/h100-4su", "storage", 1)
    netns.down(fl.state_dir)
    try:
        start = time.monotonic()
        run.up(fl)
        up_s = time.monotonic() - start
        start = time.monotonic()
        report = run.run_check(fl)
        check_s = time.monotonic() - start
    finally:
        start = time.monotonic()
        netns.down(fl.state_dir)
        down_s = time.monotonic() - start
    switches = len(fl.lab.namespaces)
    print(f"lab, h100-4su storage: {switches} switches, {len(fl.lab.host_namespaces)} hosts, {len(fl.lab.veths)} "
          f"cables, {report.counts['sessions']} sessions: up {up_s:.1f} s ({up_s / switches:.2f} s per switch), "
          f"check {check_s:.1f} s ({check_s / switches:.2f} s per switch), down {down_s:.1f} s; "
          + ("all checks hold" if not report.failures else f"{len(report.failures)} FAILURES"))
    return 0 if not report.failures else 1


if __name__ == "__main__":
    sys.exit(main())
