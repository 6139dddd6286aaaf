"""IPoIB host interfaces through their consumers: netplan generate accepts the parent interfaces' netplan-ipoib.yaml;
every key of the systemd-networkd files for child interfaces (netplan 0.106 cannot create them) is one systemd 252's
manual pages document for its section (tests/data/infiniband/systemd-networkd-keys.yaml, checked against the installed
systemd.netdev(5) and systemd.network(5)). No networkd runs here to create the interfaces."""

from __future__ import annotations

import configparser
import gzip
import re
import subprocess
from functools import cache
from pathlib import Path

import yaml

from fabricgen.features.infiniband import ipoib as host_ipoib
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool


def test_netplan_accepts_it(tmp_path: Path) -> None:
    netplan = require_tool("netplan")
    files = {a.path: a.content for a in host_ipoib.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)}
    target = tmp_path / "etc" / "netplan" / "61-fabricgen-ipoib.yaml"
    target.parent.mkdir(parents=True)
    target.write_bytes(files["hosts/gpu001/netplan-ipoib.yaml"])
    target.chmod(0o600)
    done = subprocess.run([netplan, "generate", "--root-dir", str(tmp_path)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    network = (tmp_path / "run" / "systemd" / "network" / "10-netplan-ibp24s0.network").read_text()
    assert "Address=10.24.0.1/24" in network and "MTUBytes=4092" in network
    assert "[IPoIB]\nMode=datagram" in network and "Gateway=" not in network


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
