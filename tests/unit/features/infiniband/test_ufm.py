"""flavor: ufm: the files UFM Enterprise itself reads, and ufm-install.sh putting them there, run against a stand-in
UFM tree (upstream OpenSM's default opensm.conf where UFM keeps its own; a sync_partitions_conf.sh stub). shellcheck
passes the script in tests/external/infiniband/test_infiniband.py; OpenSM boots the installed result on ibsim in
tests/external/infiniband/test_opensm_ibsim.py."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.infiniband import render as infiniband_render
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

KEYS = {"OPENSM_SM_KEY": "0x00000000000000b1", "OPENSM_SA_KEY": "0x00000000000000b2",
        "OPENSM_M_KEY": "0x00000000000000b3"}
# Stand-ins for UFM's gv.cfg (an INI file; SHARP in its [Sharp] section, UFM user manual, Appendix - NVIDIA SHARP
# Integration) and sharp_am.cfg ("parameter value" lines with sharp_am's defaults): UFM's own are not public.
GV_CFG = ("[Server]\nport = 8000\n\n[Sharp]\nsharp_enabled = false\nsharp_allocation_enabled = false\n\n"
          "[Logging]\nlevel = INFO\n")
SHARP_AM_CFG = "# sharp_am stand-in\nib_qpc_pkey 0xffff\nsmx_protocol 2\ndynamic_tree_allocation TRUE\n"


@pytest.fixture(scope="module")
def h100() -> dict[str, Artifact]:
    return {a.path: a for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))
            if a.path.startswith("infiniband/compute/")}


def test_ufm_gets_the_files_it_reads_and_no_opensm_unit(h100: dict[str, Artifact]) -> None:
    names = {p.rsplit("/", 1)[1] for p in h100}
    assert names == {"opensm-settings.conf", "partitions.conf.user_ext", "qos-policy.conf", "root-guids.conf",
                     "cn-guids.conf", "io-guids.conf", "ib-node-name-map", "topology.net", "ufm-install.sh",
                     "sharp_am-settings.conf"}
    assert not [p for p in h100 if "opensm.service" in p or p.endswith(("opensm.conf", "opensm-keys.sh"))]
    user_ext = h100["infiniband/compute/partitions.conf.user_ext"].content.decode()
    assert "Default" not in user_ext.split("# Switch ports")[1], "UFM owns Default"
    settings = h100["infiniband/compute/opensm-settings.conf"].content.decode()
    assert "partition_config_file" not in settings and "log_file" not in settings, "UFM keeps its own"
    for line in ("root_guid_file /opt/ufm/files/conf/opensm/root-guids.conf",
                 "io_guid_file /opt/ufm/files/conf/opensm/io-guids.conf",
                 "node_name_map_name /opt/ufm/files/conf/opensm/ib-node-name-map",
                 "qos_policy_file /opt/ufm/files/conf/opensm/qos-policy.conf", "sm_priority 15"):
        assert line in settings.splitlines()
    io = h100["infiniband/compute/io-guids.conf"].content.decode().split()
    assert len([g for g in io if g.startswith("0x")]) == 4, "the UFM pair's 4 ports are I/O nodes, not compute"


def _ufm_tree(tmp_path: Path, h100: dict[str, Artifact]) -> tuple[Path, Path, Path]:
    files = tmp_path / "files"
    files.mkdir()
    for path, artifact in h100.items():
        target = files / path.rsplit("/", 1)[1]
        target.write_bytes(artifact.content)
        target.chmod(artifact.mode)
    root = tmp_path / "root"
    sm_dir = root / "opt/ufm/files/conf/opensm"
    sm_dir.mkdir(parents=True)
    shutil.copy(Path(infiniband_render.__file__).with_name("opensm-3.3.23.conf"), sm_dir / "opensm.conf")
    (root / "opt/ufm/files/conf/gv.cfg").write_text(GV_CFG)
    (root / "opt/ufm/files/conf/sharp").mkdir()
    (root / "opt/ufm/files/conf/sharp/sharp_am.cfg").write_text(SHARP_AM_CFG)
    (root / "opt/ufm/files/conf/sharp/sharp_am.cfg").chmod(0o644)
    scripts = root / "opt/ufm/scripts"
    scripts.mkdir(parents=True)
    sync = scripts / "sync_partitions_conf.sh"
    sync.write_text("#!/bin/sh\necho synced >> \"$(dirname \"$0\")/sync.log\"\n")
    sync.chmod(0o755)
    return files / "ufm-install.sh", root, sm_dir


def _run(script: Path, root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], env={**os.environ, "UFM_ROOT": str(root), **(env or KEYS)},
                          capture_output=True, text=True, timeout=60, check=False)


def test_install_merges_settings_keys_and_partitions_once(tmp_path: Path, h100: dict[str, Artifact]) -> None:
    script, root, sm_dir = _ufm_tree(tmp_path, h100)
    before = (sm_dir / "opensm.conf").read_text()
    first = _run(script, root)
    assert first.returncode == 3, first.stdout + first.stderr  # settings changed: restart UFM
    conf = (sm_dir / "opensm.conf").read_text()
    assert stat.S_IMODE((sm_dir / "opensm.conf").stat().st_mode) == 0o600
    for line in ("sm_key 0x00000000000000b1", "sa_key 0x00000000000000b2", "m_key 0x00000000000000b3",
                 "routing_engine ar_ftree,ar_updn,no_fallback", "m_key_protection_level 2", "virt_enabled 2",
                 "qos_high_limit 0", "m_key_per_port TRUE", "m_key_lookup TRUE", "consolidate_ipv6_snm_req TRUE"):
        assert conf.count(f"\n{line}\n") == 1, line
    kept = [line for line in before.splitlines() if line.startswith("max_wire_smps ")]
    assert kept and kept[0] in conf.splitlines(), "UFM's other settings stay as they were"
    assert (root / "opt/ufm/files/conf/partitions.conf.user_ext").read_bytes() == \
        h100["infiniband/compute/partitions.conf.user_ext"].content
    assert (sm_dir / "ib-node-name-map").read_bytes() == h100["infiniband/compute/ib-node-name-map"].content
    assert (root / "opt/ufm/scripts/sync.log").read_text() == "synced\n"
    for value in KEYS.values():
        assert value not in first.stdout + first.stderr, "a key was printed"
    gv = (root / "opt/ufm/files/conf/gv.cfg").read_text()
    assert gv == GV_CFG.replace("sharp_enabled = false", "sharp_enabled = true"), "only [Sharp] sharp_enabled changes"
    am = root / "opt/ufm/files/conf/sharp/sharp_am.cfg"
    assert am.read_text() == SHARP_AM_CFG.replace("ib_qpc_pkey 0xffff", "ib_qpc_pkey 0x8001").replace(
        "smx_protocol 2", "smx_protocol 1") + ("ib_qpc_sl 1\nib_sat_qpc_sl 1\nsmx_enabled_protocols 7\n"
                                             "smx_ucx_interface mlx5_1:1\n"), \
        "tenant-a, full member, on its SL 1, over UCX"
    assert stat.S_IMODE(am.stat().st_mode) == 0o644, "UFM's mode kept"
    again = _run(script, root)
    assert again.returncode == 0 and "0 change(s)" in again.stdout, again.stdout + again.stderr
    assert (root / "opt/ufm/scripts/sync.log").read_text() == "synced\n", "no second sync"
    assert (sm_dir / "opensm.conf").read_text() == conf


def test_dry_run_and_missing_keys_change_nothing(tmp_path: Path, h100: dict[str, Artifact]) -> None:
    script, root, sm_dir = _ufm_tree(tmp_path, h100)
    before = sorted(p.relative_to(root) for p in root.rglob("*"))
    conf = (sm_dir / "opensm.conf").read_bytes()
    dry = _run(script, root, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would set in" in dry.stdout and "sm_key" in dry.stdout and "would run" in dry.stdout
    assert "[Sharp] sharp_enabled" in dry.stdout and "ib_qpc_pkey" in dry.stdout
    assert not [v for v in KEYS.values() if v in dry.stdout]
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before and (sm_dir / "opensm.conf").read_bytes() \
        == conf
    missing = _run(script, root, env={k: v for k, v in KEYS.items() if k != "OPENSM_M_KEY"})
    assert missing.returncode == 1 and "no value for m_key" in missing.stderr
    assert sorted(p.relative_to(root) for p in root.rglob("*")) == before, "a missing key changes nothing"


def test_install_refuses_a_host_without_ufm(tmp_path: Path, h100: dict[str, Artifact]) -> None:
    script, root, sm_dir = _ufm_tree(tmp_path, h100)
    (sm_dir / "opensm.conf").unlink()
    result = _run(script, root)
    assert result.returncode == 1 and "is UFM Enterprise installed here?" in result.stderr
