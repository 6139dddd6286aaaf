"""GPUDirect Storage: the ``gds`` section's build and each node's cufile.json, parsed as JSON and held against the keys
of NVIDIA's published cufile.json (tests/data/cufile/), with the Lustre addresses the LNet setup serves."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import SpecError
from fabricgen.features.gds import readback as gds_readback
from fabricgen.features.gds import render
from fabricgen.features.lustre import render as lustre_render
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO

NVIDIA_CUFILE = REPO / "tests" / "data" / "cufile" / "configuration-guide-cufile.jsonc"
_KEY = re.compile(r'^\s*(//)?\s*"(\w+)"\s*:\s*(\{)?')


@cache
def example() -> Topology:
    return compile_spec(INVENTORIES / "h100-4su.yaml").topology


@cache
def nvidia_keys() -> frozenset[tuple[str, ...]]:
    """Every key path NVIDIA's published cufile.json names, active or commented out (// "key": ...)."""
    stack: list[str] = []
    keys = set()
    for line in NVIDIA_CUFILE.read_text().splitlines():
        match = _KEY.match(line)
        if match:
            keys.add((*stack, match[2]))
            if match[3] and not match[1] and "}" not in line:
                stack.append(match[2])
        elif not line.lstrip().startswith("//") and line.strip().startswith("}") and stack:
            stack.pop()
    return frozenset(keys)


def key_paths(value: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Key paths of a cufile.json; the mount points of a mount_table stand as "<mount>"."""
    if not isinstance(value, dict):
        return []
    out = []
    for key, child in value.items():
        name = "<mount>" if path[-1:] == ("mount_table",) else key
        out.append((*path, name))
        out += key_paths(child, (*path, name))
    return out


def cufiles(topology: Topology) -> dict[str, dict[str, Any]]:
    return {a.path: json.loads(a.content) for a in render.render(topology) if a.path.endswith(".json")}


def test_nvidia_file_is_read_whole() -> None:
    keys = nvidia_keys()
    assert ("fs", "lustre", "posix_gds_min_kb") in keys
    assert ("fs", "lustre", "rdma_dev_addr_list") in keys and ("fs", "lustre", "mount_table") in keys
    assert ("properties", "max_direct_io_size_kb") in keys  # the legacy key, commented in the current guide
    assert ("miscellaneous", "static_routing_filepath") in keys
    assert ("properties", "gpu_bounce_buffer_slab_config", "slab_count") in keys


def test_every_key_is_nvidias() -> None:
    files = cufiles(example())
    assert len(files) == 127, "one cufile.json per DGX node"
    mount = {("fs", "lustre", "mount_table", "<mount>"), ("fs", "lustre", "mount_table", "<mount>",
                                                         "rdma_dev_addr_list")}
    for path, data in files.items():
        unknown = set(key_paths(data)) - nvidia_keys() - mount
        assert not unknown, f"{path}: keys NVIDIA's cufile.json does not name: {sorted(unknown)}"


def test_defaults_are_nvidias() -> None:
    data = cufiles(example())["hosts/dgx-h100/gds/cufile/gpu001.json"]
    assert data["properties"]["max_direct_io_size_kb"] == 16384
    assert data["properties"]["max_device_cache_size_kb"] == 131072
    assert data["properties"]["max_device_pinned_mem_size_kb"] == 33554432
    assert data["properties"]["allow_compat_mode"] is True
    assert data["fs"]["generic"]["posix_unaligned_writes"] is False
    assert data["fs"]["lustre"]["posix_gds_min_kb"] == 0
    assert data["logging"]["level"] == "ERROR"


def test_addresses_are_the_nodes_lnet_nids() -> None:
    """cuFile's Lustre addresses are exactly the NIDs lustre-client-tune.sh checks LNet serves on that node."""
    topology = example()
    tune = next(a for a in lustre_render.render(topology)
                if a.path == "hosts/dgx-h100/lustre/lustre-client-tune.sh").content.decode()
    planned = dict(re.findall(r"^    (gpu\d+)\) echo \"([^\"]+)\" ;;$", tune, re.M))
    files = cufiles(topology)
    assert len(planned) == 127
    for node, nids in planned.items():
        data = files[f"hosts/dgx-h100/gds/cufile/{node}.json"]["fs"]["lustre"]
        want = [nid.split("@")[0] for nid in nids.split()]
        assert data["rdma_dev_addr_list"] == want, node
        assert data["mount_table"] == {"/lustre/ckpt": {"rdma_dev_addr_list": want},
                                       "/lustre/data": {"rdma_dev_addr_list": want}}
    assert len({tuple(f["fs"]["lustre"]["rdma_dev_addr_list"]) for f in files.values()}) == 127, "per node"


def with_gds(text: str, tmp_path: Path) -> Path:
    spec = tmp_path / "h100-4su.yaml"
    source = (INVENTORIES / "h100-4su.yaml").read_text()
    spec.write_text(source[:source.index("\ngds:")] + "\n" + text)
    return spec


def test_spec_values_and_filesystem_subset(tmp_path: Path) -> None:
    spec = with_gds("""gds:
  dgx-h100:
    lustre_client: 2.16.1
    filesystems: [datasets]
    nvme: false
    allow_compat_mode: false
    max_direct_io_size_kb: 8192
    posix_gds_min_kb: 64
    posix_unaligned_writes: true
    logging_level: WARN
""", tmp_path)
    topology = compile_spec(spec).topology
    data = cufiles(topology)["hosts/dgx-h100/gds/cufile/gpu007.json"]
    assert data["properties"]["allow_compat_mode"] is False
    assert data["properties"]["max_direct_io_size_kb"] == 8192
    assert data["fs"]["lustre"]["posix_gds_min_kb"] == 64
    assert data["fs"]["generic"]["posix_unaligned_writes"] is True
    assert data["logging"]["level"] == "WARN"
    assert list(data["fs"]["lustre"]["mount_table"]) == ["/lustre/data"]
    script = next(a for a in render.render(topology) if a.path.endswith("gds-preflight.sh")).content.decode()
    assert "nvme-mount" not in script and "'properties.max_direct_io_size_kb=8192'" in script


@pytest.mark.parametrize(("entry", "message"), [
    ("lustre_client: 2.14.0_ddn98", "Lustre client 2.14.0_ddn98 is older than 2.15"),
    ("nvme: true", "GDS over Lustre on node profile dgx-h100 needs the client's release"),
    ("lustre_client: 2.15.5\n    max_device_cache_size_kb: 130", "max_device_cache_size_kb 130 is not 4K aligned"),
    ("lustre_client: 2.15.5\n    max_device_pinned_mem_size_kb: 4096", "is below max_device_cache_size_kb 131072"),
    ("lustre_client: 2.15.5\n    posix_gds_min_kb: 6", "posix_gds_min_kb 6 is not 4K aligned"),
])
def test_refused(entry: str, message: str, tmp_path: Path) -> None:
    spec = with_gds(f"gds:\n  dgx-h100:\n    {entry}\n", tmp_path)
    with pytest.raises(SpecError) as error:
        compile_spec(spec)
    assert message in str(error.value)
    assert "h100-4su.yaml:" in str(error.value)


def rendered(topology: Topology) -> dict[str, Artifact]:
    return {a.path: a for a in (*render.render(topology), *lustre_render.render(topology))}


def test_readback_holds_cufile_against_lnet_and_fstab() -> None:
    """The example reads back clean; a cufile.json address LNet does not serve, an lnet.conf without the second
    storage NI, and a mount_table entry fstab does not mount are each found."""
    topology = example()
    artifacts = rendered(topology)
    assert list(gds_readback.readback(topology, artifacts)) == []
    path = "hosts/dgx-h100/gds/cufile/gpu001.json"
    data = json.loads(artifacts[path].content)
    data["fs"]["lustre"]["rdma_dev_addr_list"].append("10.20.0.3")  # gpu002's address
    data["fs"]["lustre"]["mount_table"]["/lustre/scratch"] = {"rdma_dev_addr_list": ["10.20.0.2"]}
    wrong = {**artifacts, path: Artifact(path, json.dumps(data).encode())}
    found = [f.message for f in gds_readback.readback(topology, wrong)]
    assert found == ["cuFile may use 10.20.0.3 of gpu001, but lnet.conf of dgx-h100 runs no LNet NI on it (no port "
                     "of the plan)",
                     "mount_table names /lustre/scratch, which the fstab of dgx-h100 does not mount"]
    lnet = "hosts/dgx-h100/lustre/lnet.conf"
    conf = yaml.safe_load(artifacts[lnet].content)
    conf["net"][0]["local NI(s)"].pop()
    one_rail = {**artifacts, lnet: Artifact(lnet, yaml.safe_dump(conf).encode())}
    found = [f.message for f in gds_readback.readback(topology, one_rail)]
    assert len(found) == 127 and found[0] == ("cuFile may use 10.20.0.130 of gpu001, but lnet.conf of dgx-h100 runs "
                                              "no LNet NI on it (enp41s0f0np0)")
