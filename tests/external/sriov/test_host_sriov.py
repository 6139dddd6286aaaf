"""SR-IOV host side through its real consumers: shellcheck passes sriov-setup.sh and host-preflight.sh,
systemd-analyze verify accepts the unit, and strace shows the script's sriov_numvfs writes (0 before a new count,
none on a second run). The runs against a fake /sys are in tests/unit/features/sriov/test_host_sriov.py."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.features.sriov import render as host_sriov
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool
from tests.helpers.sriov import ETH_PFS, IB_PFS, FakeHost, fake_host
from tests.helpers.sriov import SRIOV_STUBS as STUBS

H100 = INVENTORIES / "h100-4su.yaml"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return compile_spec(H100).topology


@pytest.fixture(scope="module")
def h100(topology: Topology) -> dict[str, Artifact]:
    return {a.path: a for a in host_sriov.render(topology)}


@pytest.fixture
def host(tmp_path: Path, h100: dict[str, Artifact], topology: Topology) -> FakeHost:
    return fake_host(tmp_path, h100, topology)


def test_scripts_are_shellcheck_clean(h100: dict[str, Artifact], tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    paths = []
    for name in ("hosts/dgx-h100/sriov-setup.sh", "hosts/dgx-h100/host-preflight.sh"):
        path = tmp_path / name.replace("/", "_")
        path.write_bytes(h100[name].content)
        paths.append(str(path))
    stubs = [str(p) for p in sorted(STUBS.iterdir())]
    done = subprocess.run([shellcheck, "-S", "style", *paths, *stubs], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def test_systemd_unit_is_valid(h100: dict[str, Artifact], tmp_path: Path) -> None:
    analyze = require_tool("systemd-analyze")
    unit = tmp_path / "sriov-setup.service"
    text = h100["hosts/dgx-h100/sriov-setup.service"].content.decode()
    script = tmp_path / "sriov-setup.sh"
    script.write_bytes(h100["hosts/dgx-h100/sriov-setup.sh"].content)
    script.chmod(0o755)
    unit.write_text(text.replace("ExecStart=/etc/fabricgen/sriov-setup.sh", f"ExecStart={script}"))
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Before=network-pre.target" in text and "Type=oneshot" in text and "ExecStart=/etc/fabricgen/" in text
    devices = {f"sys-subsystem-net-devices-{pf}.device" for pf in (*IB_PFS, *ETH_PFS)}
    for key in ("After", "Wants"):
        line = next(x for x in text.splitlines() if x.startswith(f"{key}="))
        assert devices <= set(line.removeprefix(f"{key}=").split()), f"{key}= must name every PF's device unit"


@pytest.mark.parametrize("unit", ["containerd", "slurmd"])
def test_memlock_drop_ins_load_into_their_units(unit: str, h100: dict[str, Artifact], tmp_path: Path) -> None:
    """systemd loads each drop-in into its unit without a complaint (a misspelt key is reported and ignored, which
    the test checks it would catch): pods and Slurm jobs inherit LimitMEMLOCK=infinity from these daemons."""
    analyze = require_tool("systemd-analyze")
    text = h100[f"hosts/dgx-h100/{unit}.service.d/fabricgen-memlock.conf"].content.decode()
    assert "\n[Service]\nLimitMEMLOCK=infinity\n" in text
    (tmp_path / f"{unit}.service").write_text(f"[Unit]\nDescription=stand-in {unit}\n[Service]\nExecStart=/bin/true\n")
    drop_in = tmp_path / f"{unit}.service.d" / "fabricgen-memlock.conf"
    drop_in.parent.mkdir()
    for content, clean in ((text, True), (text.replace("LimitMEMLOCK", "LimitMEMLOK"), False)):
        drop_in.write_text(content)
        done = subprocess.run([analyze, "verify", str(tmp_path / f"{unit}.service")], capture_output=True, text=True)
        assert done.returncode == 0 and (done.stderr == "") is clean, done.stderr


def _numvfs_writes(trace: str) -> dict[str, list[str]]:
    """PF -> the values written to its sriov_numvfs, in order, from an strace of the script:
    bash opens the file, moves it to stdout and writes the value before restoring stdout."""
    writes: dict[str, list[str]] = {}
    target = ""
    for line in trace.splitlines():
        match = re.search(r'openat\(AT_FDCWD, "([^"]*/sriov_numvfs)", O_WRONLY', line)
        if match:
            target = match.group(1)
            continue
        written = re.search(r'write\(1, "([^"]*)\\n", \d+\)', line)
        if target and written:
            writes.setdefault(Path(target).parent.parent.name, []).append(written.group(1))  # class/net/<PF>/device
            target = ""
    return writes


def test_numvfs_system_calls_write_zero_then_the_new_count(host: FakeHost) -> None:
    """The kernel refuses nonzero -> other nonzero (EBUSY): traced writes show 0 then 8 on the port that had 4 VFs,
    one write on the ports that had none, and no write at all on a second run."""
    strace = require_tool("strace")

    def traced() -> tuple[subprocess.CompletedProcess[str], dict[str, list[str]]]:
        log = host.root / "trace"
        done = subprocess.run([strace, "-f", "-qq", "-e", "trace=openat,write", "-s", "256", "-o", str(log), "bash",
                               str(host.script)], env=host.env, capture_output=True, text=True, timeout=300)
        return done, _numvfs_writes(log.read_text())

    done, writes = traced()
    assert done.returncode == 0, done.stderr
    assert writes == {IB_PFS[0]: ["0", "8"], **{pf: ["8"] for pf in IB_PFS[1:]}, **{pf: ["4"] for pf in ETH_PFS}}
    again, writes = traced()
    assert again.returncode == 0 and writes == {}
