"""FRR (Debian's frr, `vtysh -C`: parse a configuration without running it) accepts the bgpd configuration of every
switch of h100-4su's storage fabric, read back from its golden config_db.json; and refuses a command it does not
know, so the check can fail."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab.frr import FRR_MULTIPATH_LIMIT, bgpd_conf
from tests.conftest import REPO, require_tool
from tests.helpers.ethernet import STORAGE_SWITCHES

GOLDEN = REPO / "tests/golden/h100-4su/switches"


def _check(vtysh: str, conf: bytes, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "bgpd.conf"
    path.write_bytes(conf)
    return subprocess.run([vtysh, "-C", "-f", str(path)], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("switch", STORAGE_SWITCHES)
def test_frr_parses_every_switch(switch: str, tmp_path: Path) -> None:
    vtysh = require_tool("vtysh")
    conf = bgpd_conf(routing(switch, (GOLDEN / switch / "config_db.json").read_bytes()))
    done = _check(vtysh, conf, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_frr_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    """The limit is the installed FRR's: one path more is refused, as an unknown command is."""
    vtysh = require_tool("vtysh")
    conf = bgpd_conf(routing("storage-leaf001", (GOLDEN / "storage-leaf001/config_db.json").read_bytes()))
    limit = f"maximum-paths {FRR_MULTIPATH_LIMIT}"
    wider = conf.replace(limit.encode(), f"maximum-paths {FRR_MULTIPATH_LIMIT + 1}".encode())
    assert wider != conf and _check(vtysh, wider, tmp_path).returncode != 0
    assert _check(vtysh, conf.replace(b" bgp log-neighbor-changes", b" bgp log-neighbour-changes"), tmp_path).returncode
