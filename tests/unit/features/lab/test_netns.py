"""The lab's per-switch ``ip -batch`` (pure) from storage-leaf001's read-back, and ``down``'s care with pid
files: a stale pid that now runs something else is not signalled. The namespaces themselves run in
tests/external/lab/."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab import netns
from tests.conftest import REPO

GOLDEN = REPO / "tests/golden/h100-4su/switches"


def test_switch_batch_configures_only_cabled_ports() -> None:
    leaf = routing("storage-leaf001", (GOLDEN / "storage-leaf001/config_db.json").read_bytes())
    uplink = next(p for p in leaf.ports if p.addresses)
    host = leaf.vlans[0].members[0]
    lines = netns.switch_batch(leaf, {uplink.name, host}).splitlines()
    assert lines == ["link set lo up", "address add 10.22.0.5/32 dev lo",
                     f"link set {host} mtu 9100", f"link set {host} up",  # a VLAN member: no address of its own
                     f"link set {uplink.name} mtu 9100", f"address add {uplink.addresses[0]} dev {uplink.name}",
                     f"link set {uplink.name} up",
                     "link add Vlan100 type bridge", "link set Vlan100 mtu 9100", f"link set {host} master Vlan100",
                     "address add 10.20.0.1/25 dev Vlan100", "address add 10.20.128.1/23 dev Vlan100",
                     "link set Vlan100 up"]
    other = next(p for p in leaf.ports if p.addresses and p.name != uplink.name)
    assert not any(other.name in line for line in lines)


def test_down_signals_no_process_that_is_not_its_daemon(tmp_path: Path) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "fg-00000000-0").mkdir()
        (tmp_path / "fg-00000000-0" / "bgpd.pid").write_text(f"{bystander.pid}\n")
        netns.stop_daemon(tmp_path / "fg-00000000-0" / "bgpd.pid")
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
