"""IPoIB host interfaces through their consumers: netplan generate accepts the parent interfaces' netplan-ipoib.yaml;
every key of the systemd-networkd files for child interfaces (netplan 0.106 cannot create them) is one systemd 252's
manual pages document for its section (tests/data/infiniband/systemd-networkd-keys.yaml, checked against the installed
systemd.netdev(5) and systemd.network(5)); systemd-sysctl sets sysctl-ipoib.conf's ARP settings on interfaces of those
names in a network namespace. No networkd runs here to create the interfaces."""

from __future__ import annotations

import configparser
import gzip
import os
import re
import subprocess
from functools import cache
from pathlib import Path

import pytest
import yaml

from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool
from tests.helpers.netplan import netplan_generate


def test_netplan_accepts_it(tmp_path: Path) -> None:
    files = {a.path: a.content for a in host_ipoib.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}
    networkd = netplan_generate(files["hosts/gpu001/netplan-ipoib.yaml"], "61-fabricgen-ipoib.yaml", tmp_path)
    network = (networkd / "10-netplan-ibp24s0.network").read_text()
    assert "Address=10.24.0.1/24" in network and "MTUBytes=4092" in network
    assert "[IPoIB]\nMode=datagram" in network and "Gateway=" not in network
    assert "RequiredForOnline=no" in network, "optional: boot does not wait for a rail"


KEYS = REPO / "tests/data/infiniband/systemd-networkd-keys.yaml"


@cache
def _documented(page: str) -> dict[str, set[str]]:
    """Section -> the keys systemd 252 documents for it in ``page`` (the data file)."""
    data: dict[str, dict[str, list[str]]] = yaml.safe_load(KEYS.read_text())
    return {section: set(keys) for section, keys in data[page].items()}


def _man_page(page: str) -> dict[str, set[str]]:
    """The same from the installed manual page: its '[X] SECTION OPTIONS' headings and the Key= entries below."""
    path = Path(f"/usr/share/man/man5/{page}.5.gz")
    if not path.exists():
        require_tool(f"{page}.5.gz (manual pages of package systemd)")
    out: dict[str, set[str]] = {}
    section = ""
    for line in gzip.decompress(path.read_bytes()).decode(errors="replace").splitlines():
        if m := re.match(r'^\.SH "\[([A-Z0-9]+)\] SECTION OPTIONS"', line):
            section = m.group(1).lower()
            out.setdefault(section, set())
        elif section and line.startswith(".SH "):
            section = ""
        elif section:
            out[section] |= set(re.findall(r"\\fI([A-Za-z0-9]+)=\\fR", line))
    return out


def test_the_key_list_is_systemds() -> None:
    for page in ("systemd.netdev", "systemd.network"):
        installed = _man_page(page)
        for section, keys in _documented(page).items():
            assert keys <= installed[section], f"{page} [{section}]: {sorted(keys - installed[section])}"


def test_networkd_child_interface_keys_are_documented() -> None:
    files = {a.path: a.content for a in host_ipoib.render(
        compile_spec(REPO / "tests/data/infiniband/multi-tenant.yaml").topology)}
    checked = 0
    for path, content in files.items():
        if "/systemd-network/" not in path:
            continue
        page = "systemd.netdev" if path.endswith(".netdev") else "systemd.network"
        parser = configparser.ConfigParser(strict=False)
        parser.optionxform = str  # type: ignore[assignment,method-assign]
        parser.read_string(content.decode())
        for section in parser.sections():
            documented = _documented(page).get(section.lower())
            assert documented, f"{path}: section [{section}] is not in {page}(5)"
            for key in parser[section]:
                assert key in documented, f"{path}: [{section}] {key}= is not in {page}(5)"
                checked += 1
    assert checked > 500


_SYSCTL = """
set -euo pipefail
for dev in $DEVICES; do ip link add "$dev" type bridge; done
"$SYSTEMD_SYSCTL" "$1"
for dev in $DEVICES; do
  echo "$dev $(cat "/proc/sys/net/ipv4/conf/$dev/arp_ignore") $(cat "/proc/sys/net/ipv4/conf/$dev/arp_announce")"
done
"""


@pytest.mark.parametrize(("spec", "node"), [(INVENTORIES / "h100-4su.yaml", "gpu001"),
                                            (REPO / "tests/data/infiniband/multi-tenant.yaml", "beta02")])
def test_systemd_sysctl_sets_arp_per_interface(spec: Path, node: str, tmp_path: Path) -> None:
    """systemd-sysctl (systemd 252) applies sysctl-ipoib.conf in a network namespace holding interfaces of the same
    names (bridges: this kernel has no ipoib or dummy module), a child's dotted name included: each ends with
    arp_ignore 1 and arp_announce 2, and nothing else in the namespace changes."""
    unshare = require_tool("unshare")
    require_tool("ip")
    sysctl = Path("/lib/systemd/systemd-sysctl")
    if not sysctl.exists():
        pytest.fail(f"{sysctl} missing: systemd installs it")
    if os.geteuid() != 0:
        pytest.skip("needs root for a network namespace (CI runs as root)")
    files = {a.path: a.content for a in host_ipoib.render(compile_spec(spec).topology)}
    conf = tmp_path / "61-fabricgen-ipoib.conf"
    conf.write_bytes(files[f"hosts/{node}/sysctl-ipoib.conf"])
    devices = sorted({line.split("/")[3] for line in conf.read_text().splitlines() if line.startswith("net/")})
    assert len(devices) == 8
    done = subprocess.run([unshare, "-n", "bash", "-c", _SYSCTL, "sysctl", str(conf)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "DEVICES": " ".join(devices),
                                           "SYSTEMD_SYSCTL": str(sysctl)})
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split("\n")[:-1]) == [f"{dev} 1 2" for dev in devices], done.stdout + done.stderr
