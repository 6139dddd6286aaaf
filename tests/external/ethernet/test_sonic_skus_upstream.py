"""The SKU data files (cli/fabricgen/features/ethernet/nos/sonic/skus/) against sonic-buildimage itself: with
FABRICGEN_SONIC_BUILDIMAGE set to a git checkout (or bare mirror) of sonic-net/sonic-buildimage that has the release
branches, every file a SKU cites is the cited blob on each cited release, and the facts taken from it are the
file's own: port_config.ini rows and hwsku.json breakout modes, pg_profile_lookup.ini rows, the pool sizes
buffers_defaults_t<n>.j2 sets. Skipped without the checkout (CI has none; run it when refreshing the data)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

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
            if topology == "port":
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
