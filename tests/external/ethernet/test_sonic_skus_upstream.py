"""The SKU data files (cli/fabricgen/features/ethernet/nos/sonic/skus/) against sonic-buildimage itself: with
FABRICGEN_SONIC_BUILDIMAGE set to a git checkout (or bare mirror) of sonic-net/sonic-buildimage that has the release
branches, every file a SKU cites is the cited blob on each cited release, and the facts taken from it are the
file's own: port_config.ini rows and hwsku.json breakout modes, pg_profile_lookup.ini rows, the pool sizes
buffers_defaults_t<n>.j2 sets; the ports SONiC builds from platform.json and hwsku.json (sonic-config-engine's own
portconfig.py, run here) are the SKU's rows, as fabricgen writes them for dark ports, and its BREAKOUT_CFG modes
are the cages'; NVIDIA's templates, rendered with jinja2 for a port without a neighbour, give it the SKU file's
``traditional.inactive`` objects. Skipped without the checkout (CI has none; run it when refreshing the data)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import types
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml

from fabricgen.features.ethernet.nos.sonic.skus import SKU_DIR

CHECKOUT = os.environ.get("FABRICGEN_SONIC_BUILDIMAGE", "")
pytestmark = pytest.mark.skipif(not CHECKOUT, reason="set FABRICGEN_SONIC_BUILDIMAGE to a sonic-buildimage checkout")
SKUS = sorted(p.name for p in SKU_DIR.glob("*.yaml"))
_SET = re.compile(r"\{%\s*set (\w+)\s*=\s*'([^']*)'\s*%\}")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", CHECKOUT, *args], capture_output=True, text=True, check=True).stdout


def _data(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((SKU_DIR / name).read_text())
    return data


def _file(data: dict[str, Any], name: str, release: str) -> str:
    entry = next(v for v in data["files"][name] if release in v["releases"])
    return _git("show", f"{release}:{entry['path']}")


@pytest.mark.parametrize("name", SKUS)
def test_cited_blobs_are_upstream(name: str) -> None:
    data = _data(name)
    for versions in data["files"].values():
        for version in versions:
            for release in version["releases"]:
                assert _git("rev-parse", f"{release}:{version['path']}").startswith(version["blob"]), (
                    name, version["path"], release)


@pytest.mark.parametrize("name", SKUS)
def test_ports_lookup_and_pools_are_the_files(name: str) -> None:
    data = _data(name)
    cages = max(p[3] for p in data["ports"])
    for release in data["releases"]:
        rows = [line.split() for line in _file(data, "port_config.ini", release).splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
        modes = json.loads(_file(data, "hwsku.json", release))["interfaces"]
        upstream = [[r[0], r[1], r[2], int(r[3]), int(r[4]) if len(r) > 4 and r[4].isdigit() else 0,
                     modes[r[0]]["default_brkout_mode"]] for r in rows if int(r[3]) <= cages]
        assert [list(p) for p in data["ports"]] == upstream, (name, release)
        table = [line for line in _file(data, "pg_profile_lookup.ini", release).splitlines()
                 if line.strip() and not line.startswith("##")]
        assert data["pg_profile_lookup"].splitlines() == [line.rstrip() for line in table], (name, release)
        for topology, entry in data["traditional"].items():
            if topology in ("port", "inactive"):
                continue
            text = _file(data, f"buffers_defaults_{topology}.j2", release)
            text = re.sub(r"\{%-?\s*if .*?\{%-?\s*else\s*-?%\}", "", text, flags=re.S)  # the default branch
            sets = dict(_SET.findall(text))
            pools = entry["BUFFER_POOL"]
            for pool, key in (("ingress_lossless_pool", "ingress_lossless_pool_size"),
                              ("egress_lossless_pool", "egress_lossless_pool_size"),
                              ("egress_lossy_pool", "egress_lossy_pool_size"),
                              ("ingress_lossy_pool", "ingress_lossy_pool_size")):
                if key in sets and pool in pools:
                    assert pools[pool]["size"] == sets[key], (name, release, topology, pool)
            if "ingress_lossless_pool_xoff" in sets:
                assert pools["ingress_lossless_pool"]["xoff"] == sets["ingress_lossless_pool_xoff"], (name, topology)
            assert entry["cable"] == sets["default_cable"], (name, topology)


def _portconfig(release: str) -> types.ModuleType:
    """sonic-config-engine's portconfig.py of the release, with stand-ins for the switch-side modules it imports
    (its platform.json functions use none of them)."""
    stubs = {"swsscommon": types.ModuleType("swsscommon"), "sonic_py_common": types.ModuleType("sonic_py_common"),
             "sonic_py_common.device_info": types.ModuleType("device_info"),
             "sonic_py_common.multi_asic": types.ModuleType("multi_asic")}
    stubs["swsscommon"].swsscommon = None  # type: ignore[attr-defined]
    stubs["sonic_py_common"].device_info = stubs["sonic_py_common.device_info"]  # type: ignore[attr-defined]
    stubs["sonic_py_common.multi_asic"].get_asic_id_from_name = None  # type: ignore[attr-defined]
    module = types.ModuleType("portconfig")
    source = _git("show", f"{release}:src/sonic-config-engine/portconfig.py")
    saved = {name: sys.modules.get(name) for name in stubs}
    sys.modules.update(stubs)
    try:
        exec(compile(source, "portconfig.py", "exec"), module.__dict__)  # upstream's own code
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


# "Add fec: rs to port config for ports with >=50G per lane" (#23978, 2909a8a0c4): the releases before write none
FEC_SINCE = "202505"


@pytest.mark.parametrize("name", SKUS)
def test_platform_json_ports_and_breakout_modes(name: str, tmp_path: Path) -> None:
    """Each cage's ports as SONiC builds them from platform.json in the cage's hwsku.json mode (get_child_ports,
    which refuses a mode the parent port lacks) are the SKU's rows at the mode's speed, with the FEC fabricgen gives
    a dark port (from 202505, as SONiC's generation; before it SONiC writes none, and rs is what PAM4 lanes need),
    and get_breakout_mode's BREAKOUT_CFG gives each parent port that mode."""
    data = _data(name)
    by_cage: dict[int, list[list[Any]]] = {}
    for row in data["ports"]:
        by_cage.setdefault(row[3], []).append(row)
    for release in data["releases"]:
        portconfig = _portconfig(release)
        platform, hwsku = tmp_path / "platform.json", tmp_path / "hwsku.json"
        platform.write_text(_file(data, "platform.json", release))
        hwsku.write_text(_file(data, "hwsku.json", release))
        modes = portconfig.parse_breakout_mode(str(hwsku))
        for cage, rows in by_cage.items():
            parent, mode = rows[0][0], rows[0][5]
            assert modes[parent]["brkout_mode"] == mode, (name, release, cage)
            ports = portconfig.get_child_ports(parent, mode, str(platform))
            assert list(ports) == [r[0] for r in rows], (name, release, cage)
            rate = mode.split("[")[0].partition("x")[2]
            speed = int(rate.removesuffix("G")) * (1000 if rate.endswith("G") else 1)
            for position, (port, lanes, alias, index, _, _) in enumerate(rows, start=1):
                up = ports[port]
                assert (up["lanes"], up["alias"], up["index"], up["speed"]) == (lanes, alias, str(index), str(speed))
                fec = "rs" if speed // len(lanes.split(",")) >= 50_000 else None
                assert up.get("fec") == (fec if release >= FEC_SINCE else None), (name, release, port)
                assert up["subport"] == ("0" if len(rows) == 1 else str(position)), (name, release, port)


def _tree(data: dict[str, Any], release: str, root: Path) -> Path:
    """The release's template directories the SKU's files come from, and files/build_templates, under root."""
    dirs = sorted({v["path"].rsplit("/", 1)[0] for vs in data["files"].values() for v in vs if release in v["releases"]}
                  | {f"device/mellanox/{data['platform']}/{data['hwsku']}", "files/build_templates"})
    archive = subprocess.run(["git", "-C", CHECKOUT, "archive", release, *dirs], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(root, filter="tar")
    return root / f"device/mellanox/{data['platform']}/{data['hwsku']}"


def _render(env: jinja2.Environment, device_type: str, ports: list[list[Any]], active: list[Any]) -> dict[str, Any]:
    """buffers.json.j2 for these PORT rows, the ``active`` one with a neighbour (DEVICE_NEIGHBOR)."""
    context = {"DEVICE_METADATA": {"localhost": {"type": device_type}},
               "PORT": {p[0]: {"lanes": p[1], "speed": str(p[4])} for p in ports},
               "DEVICE_NEIGHBOR": {active[0]: {"name": "peer", "port": "x"}}}
    rendered: dict[str, Any] = json.loads(env.get_template("buffers.json.j2").render(context))
    return rendered


@pytest.mark.parametrize("name", SKUS)
def test_inactive_port_buffers_are_the_templates(name: str, tmp_path: Path) -> None:
    """buffers.json.j2 rendered as sonic-cfggen renders it (jinja2, the SKU directory and build templates on the
    search path) for one port with a neighbour and one without: the second gets the SKU file's inactive objects,
    and the zero pool and profiles are all the template adds for it, on every release and device type."""
    data = _data(name)
    inactive = data["traditional"]["inactive"]
    active, dark = data["ports"][0], data["ports"][1]
    tables = ("BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST")
    for release in data["releases"]:
        sku = _tree(data, release, tmp_path / release)
        search = [str(sku), str(tmp_path / release / "files/build_templates")]
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(search), trim_blocks=True)
        for topology, device_type in (("t0", "ToRRouter"), ("t1", "LeafRouter"), ("t2", "SpineRouter")):
            if topology not in data["traditional"]:
                continue
            alone = _render(env, device_type, [active], active)
            both = _render(env, device_type, [active, dark], active)
            for table in ("BUFFER_POOL", "BUFFER_PROFILE"):
                added = {k: v for k, v in both[table].items() if k not in alone[table]}
                assert added == inactive[table], (name, release, topology, table)
            for table in tables:
                got = {k.partition("|")[2]: v for k, v in both[table].items() if k.split("|")[0] == dark[0]}
                want = {"": inactive["port"][table]} if table.endswith("_LIST") else inactive["port"][table]
                assert got == want, (name, release, topology, table)
