"""Lustre client files through their real consumers: systemd-escape names the mount units as fabricgen does,
systemd-analyze verify accepts the mount units (and refuses a misnamed one), shellcheck passes the scripts. The
model, lnet.conf and the scripts' runs against stub lctl/lfs are in tests/unit/features/lustre/test_lustre.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.kubernetes import storage as k8s_storage
from fabricgen.features.lustre import render as lustre
from fabricgen.features.lustre.build import systemd_escape_path
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES, require_tool
from tests.helpers.lustre import ESCAPE_PATHS as PATHS
from tests.helpers.lustre import LUSTRE_STUBS as STUBS
from tests.helpers.lustre import MOUNT_DIR as BASE

H100 = INVENTORIES / "h100-4su.yaml"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(H100)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in [*lustre.render(compiled.topology), *k8s_storage.render(compiled.topology)]}


@pytest.mark.parametrize("path", PATHS)
def test_systemd_escape_matches_systemd(path: str) -> None:
    tool = require_tool("systemd-escape")
    done = subprocess.run([tool, "--path", path], capture_output=True, text=True, check=True)
    assert systemd_escape_path(path) == done.stdout.strip()


def test_mount_units_pass_systemd_analyze_verify(files: dict[str, Artifact], tmp_path: Path) -> None:
    tool = require_tool("systemd-analyze")
    # lnet.service ships with the Lustre client packages: a stand-in lets verify resolve the dependency.
    (tmp_path / "lnet.service").write_text("[Unit]\nDescription=LNet\n[Service]\nType=oneshot\n"
                                           "ExecStart=/bin/true\nRemainAfterExit=yes\n")
    # the clients' (the servers' target units below, the cache mount in test_storage.py)
    units = [p for p in files if p.endswith(".mount") and "/lustre/" in p and "/targets/" not in p]
    assert len(units) == 2
    for path in units:
        unit = tmp_path / Path(path).name
        unit.write_bytes(files[path].content)
        done = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0 and not done.stderr.strip() and not done.stdout.strip(), done.stderr


def test_server_target_units_pass_systemd_analyze_verify(files: dict[str, Artifact], tmp_path: Path) -> None:
    """The servers' target mount units, named by their Where= as systemd escapes it, each verified with the other
    units of its server (its MGT's and its lustre-wait-mgs unit, whose script is installed where ExecStart names it:
    verify checks that the command exists)."""
    tool = require_tool("systemd-analyze")
    units = [p for p in files if "/lustre/targets/" in p and p.endswith((".mount", ".service"))]
    assert len(units) == 22 + 6  # the MGT on both MDS, both MDTs on both, 8 OSTs on both of their pair; one wait each
    for server in sorted({p.split("/")[1] for p in units}):
        root = tmp_path / server
        root.mkdir()
        (root / "lnet.service").write_text("[Unit]\nDescription=LNet\n[Service]\nType=oneshot\n"
                                           "ExecStart=/bin/true\nRemainAfterExit=yes\n")
        script = root / "lustre-wait-mgs"
        script.write_bytes(files[f"hosts/{server}/lustre/targets/lustre-wait-mgs.sh"].content)
        script.chmod(0o755)
        mine = [p for p in units if p.startswith(f"hosts/{server}/")]
        for path in mine:
            (root / Path(path).name).write_bytes(files[path].content.replace(
                b"ExecStart=/usr/local/sbin/lustre-wait-mgs ", f"ExecStart={script} ".encode()))
        done = subprocess.run([tool, "verify", "--man=no", *(str(root / Path(p).name) for p in mine)],
                              capture_output=True, text=True, cwd=root)
        assert done.returncode == 0 and not done.stderr.strip() and not done.stdout.strip(), (server, done.stderr)


def test_target_fstab_through_systemd_fstab_generator(files: dict[str, Artifact], tmp_path: Path) -> None:
    """systemd's own fstab generator reads each server's target fstab into the units the .mount files are: the
    timeout, lnet.service required, the MDTs and OSTs after their lustre-wait-mgs unit, the partner's noauto."""
    generator = require_tool("/usr/lib/systemd/system-generators/systemd-fstab-generator")
    for fstab in sorted(p for p in files if p.endswith("/lustre/targets/fstab")):
        out = tmp_path / fstab.split("/")[1]
        out.mkdir()
        (out / "fstab").write_bytes(files[fstab].content)
        done = subprocess.run([generator, str(out), str(out), str(out)], capture_output=True, text=True,
                              env={**os.environ, "SYSTEMD_FSTAB": str(out / "fstab")})
        assert done.returncode == 0, done.stderr
        units = {p: files[p].content.decode() for p in files
                 if p.startswith(fstab.removesuffix("fstab")) and p.endswith(".mount")}
        for path, ours in units.items():
            generated = (out / Path(path).name).read_text()
            assert "TimeoutSec=5min\n" in generated and "TimeoutSec=300\n" in ours, path
            assert "Requires=lnet.service\n" in generated and "After=lnet.service\n" in generated
            waits = "After=lustre-wait-mgs-ckpt.service\n" in generated
            assert waits == ("lustre-wait-mgs-ckpt.service" in ours) == ("MGT" not in path.upper()), path
            at_boot = (out / "remote-fs.target.requires" / Path(path).name).exists()  # not noauto
            assert ("\n[Install]\n" in ours) == at_boot, path


def test_verify_catches_a_wait_unit_without_its_script(files: dict[str, Artifact], tmp_path: Path) -> None:
    """The check above can fail: the wait unit with lustre-wait-mgs not installed where ExecStart names it."""
    tool = require_tool("systemd-analyze")
    (tmp_path / "lnet.service").write_text("[Unit]\nDescription=LNet\n[Service]\nExecStart=/bin/true\n")
    unit = tmp_path / "lustre-wait-mgs-ckpt.service"
    unit.write_bytes(files[f"hosts/oss01/lustre/targets/{unit.name}"].content.replace(
        b"/usr/local/sbin/lustre-wait-mgs ", str(tmp_path / "lustre-wait-mgs ").encode()))
    done = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0 and "lustre-wait-mgs is not executable" in done.stderr


def test_verify_catches_a_misnamed_unit(files: dict[str, Artifact], tmp_path: Path) -> None:
    """The check above can fail: a unit whose name is not the escaped Where= is refused."""
    tool = require_tool("systemd-analyze")
    (tmp_path / "lnet.service").write_text("[Unit]\nDescription=LNet\n[Service]\nExecStart=/bin/true\n")
    unit = tmp_path / "lustre-checkpoints.mount"
    unit.write_bytes(files[f"{BASE}/lustre-ckpt.mount"].content)
    done = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode != 0 and "doesn't match unit name" in done.stderr


def test_scripts_are_shellcheck_clean(files: dict[str, Artifact], tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    scripts = []
    for path, artifact in files.items():
        if path.endswith(".sh"):
            scripts.append(tmp_path / path.replace("/", "_"))
            scripts[-1].write_bytes(artifact.content)
    assert len(scripts) == 17  # 5 client and admin scripts, format-targets.sh and lustre-wait-mgs.sh of 6 servers
    stubs = [str(STUBS / tool) for tool in ("lctl", "lfs", "mkfs.lustre", "tunefs.lustre", "blkid")]
    done = subprocess.run([shellcheck, "-S", "style", *map(str, scripts), *stubs],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_format_targets_reads_real_blkid(files: dict[str, Artifact], tmp_path: Path) -> None:
    """format-targets.sh parses util-linux blkid's own export output: an ext4 file system labelled as a Lustre
    target (ldiskfs before its first registration: "ckpt:MDT0000") that tunefs.lustre cannot read is refused
    without a wipefs hint (C4), an unlabelled ext4 with one, an empty device is formatted."""
    blkid, mke2fs = require_tool("blkid"), require_tool("mke2fs")
    mapper = tmp_path / "dev" / "mapper"
    mapper.mkdir(parents=True)
    (mapper / "mgt").write_bytes(b"")
    for name, label in (("ckpt-mdt0", "ckpt:MDT0000"), ("data-mdt0", "")):
        image = mapper / name
        image.write_bytes(b"\0" * (8 << 20))
        subprocess.run([mke2fs, "-q", "-F", "-t", "ext4", *(["-L", label] if label else []), str(image)],
                       check=True, capture_output=True)
    (tmp_path / "nids").write_text("10.20.0.65@o2ib\n10.20.0.193@o2ib\n")
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "mounts").write_text("/dev/sda1 / ext4 rw 0 0\n")
    script = tmp_path / "format-targets.sh"
    script.write_bytes(files["hosts/mds01/lustre/format-targets.sh"].content)
    env = {**os.environ, "STUB_STATE": str(tmp_path), "LCTL": str(STUBS / "lctl"), "BLKID": blkid,
           "MKFS_LUSTRE": str(STUBS / "mkfs.lustre"), "TUNEFS_LUSTRE": str(STUBS / "tunefs.lustre"),
           "PROCFS_ROOT": str(tmp_path), "DEVICE_ROOT": str(tmp_path), "NODE": "mds01"}
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert ("ckpt-MDT0000: /dev/mapper/ckpt-mdt0 holds a file system (ext4) labelled ckpt:MDT0000, a Lustre target, "
            "which tunefs.lustre cannot read") in done.stderr
    mdt, = (line for line in done.stderr.splitlines() if "ckpt-MDT0000" in line)
    assert "wipefs" not in mdt and "never wipe or reformat it" in mdt
    assert ("data-MDT0000: /dev/mapper/data-mdt0 holds a signature (ext4: a file system or partition table) and no "
            "Lustre target; if its data is not needed, wipefs -a clears it") in done.stderr
    assert "format-targets: format MGS on /dev/mapper/mgt" in done.stdout
    assert (mapper / "mgt").read_text().startswith("Target:     MGS")
