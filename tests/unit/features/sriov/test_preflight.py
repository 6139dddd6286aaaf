"""host-preflight.sh (GPUDirect RDMA readiness): run against a fake /sys and /proc with stub nvidia-smi (printing
recorded `nvidia-smi topo -m` outputs of 8-GPU systems) and setpci, for profiles whose rail maps do and do not
match the recorded PCIe topology."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabricgen.features.sriov import render as host_sriov
from fabricgen.pipeline import compile_spec
from tests.conftest import REPO

RECORDINGS = REPO / "tests" / "data" / "nvidia-smi-topo"
STUBS = REPO / "tests" / "data" / "fake-sriov"
# Rail maps (GPU i -> RDMA device) that match each recording: the NIC sharing GPU i's PCIe switch.
A100 = ["mlx5_2", "mlx5_3", "mlx5_0", "mlx5_1", "mlx5_8", "mlx5_9", "mlx5_4", "mlx5_5"]
B300 = [f"mlx5_bond_{i}" for i in range(8)]
NAIVE = [f"mlx5_{i}" for i in range(8)]  # GPU i next to mlx5_i: wrong for the A100 recording

SPEC = """apiVersion: fabricgen/v1
kind: Cluster
metadata: {{name: preflight, site: lab}}
facility:
  rows: [{{name: L, racks: 2}}, {{name: M, racks: 1, kind: network}}]
node_profiles:
  gpu-node:
    height_u: 8
    gpus: 8
    nics:
      compute:
{nics}
nodes:
  - {{name: "n{{n:02d}}", count: 2, profile: gpu-node, placement: {{rows: [L], per_rack: 1, start_u: 2}}}}
fabrics:
  compute:
    type: infiniband
    speed: NDR
    switch: QM9700
    topology: {{kind: rail-optimized, scalable_unit: 2}}
"""


def preflight(devices: list[str], tmp_path: Path) -> Path:
    nics = "\n".join(f"        - {{gpu: {i}, dev: {dev}, netdev: ib{i}, port: P{i}, model: ConnectX-7-OSFP}}"
                     for i, dev in enumerate(devices))
    spec = tmp_path / "preflight.yaml"
    spec.write_text(SPEC.format(nics=nics))
    artifacts = {a.path: a for a in host_sriov.render(compile_spec(spec).topology)}
    script = tmp_path / "host-preflight.sh"
    script.write_bytes(artifacts["hosts/gpu-node/host-preflight.sh"].content)
    return script


def fake_node(tmp_path: Path, devices: list[str], recording: str, acs: str = "0000") -> dict[str, str]:
    """A node whose rail r has GPU r and its NIC under one PCIe switch: root port -> upstream port -> two
    downstream ports (ACS control ``acs``; the upstream port has no ACS capability), GPU and NIC below them."""
    sysfs, state = tmp_path / "sys", tmp_path / "state"
    gpus = []
    for rail, dev in enumerate(devices):
        bus = 0x10 + rail * 0x10
        root, up = f"0000:{bus:02x}:01.0", f"0000:{bus + 1:02x}:00.0"
        down_gpu, down_nic = f"0000:{bus + 2:02x}:00.0", f"0000:{bus + 2:02x}:01.0"
        gpu, nic = f"0000:{bus + 3:02x}:00.0", f"0000:{bus + 4:02x}:00.0"
        top = sysfs / "devices" / f"pci0000:{bus:02x}" / root / up
        for below, device in ((down_gpu, gpu), (down_nic, nic)):
            (top / below / device).mkdir(parents=True)
            link = sysfs / "bus" / "pci" / "devices" / device
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(top / below / device)
            (state / "acs").mkdir(parents=True, exist_ok=True)
            (state / "acs" / below).write_text(acs + "\n")
        (sysfs / "class" / "infiniband" / dev).mkdir(parents=True)
        (sysfs / "class" / "infiniband" / dev / "device").symlink_to(top / down_nic / nic)
        gpus.append(f"{rail}, 0000{gpu.upper()}")
    (sysfs / "module" / "nvidia_peermem").mkdir(parents=True)
    (tmp_path / "proc" / "self").mkdir(parents=True)
    (tmp_path / "proc" / "self" / "limits").write_text(
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max locked memory         unlimited            unlimited            bytes\n")
    (tmp_path / "gpus.csv").write_text("\n".join(gpus) + "\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("nvidia-smi", "setpci"):
        shutil.copy(STUBS / tool, bin_dir / tool)
    return {**os.environ, "SYSFS_ROOT": str(sysfs), "PROCFS_ROOT": str(tmp_path / "proc"),
            "NVIDIA_SMI": str(bin_dir / "nvidia-smi"), "SETPCI": str(bin_dir / "setpci"), "STUB_STATE": str(state),
            "STUB_TOPO": str(RECORDINGS / recording), "STUB_GPUS": str(tmp_path / "gpus.csv")}


def run(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)


def results(out: str, check: str) -> dict[str, tuple[str, str]]:
    """SUBJECT -> (RESULT, DETAIL) of one check's rows of the table."""
    rows = {}
    for line in out.splitlines():
        if line.startswith(check + " "):
            rows[line[18:42].strip()] = (line[43:48].strip(), line[49:].rstrip())
    return rows


@pytest.mark.parametrize(("recording", "devices"), [("a100-8gpu-10nic.txt", A100), ("b300-cx8-8gpu.txt", B300)])
def test_matching_rail_map_passes(recording: str, devices: list[str], tmp_path: Path) -> None:
    done = run(preflight(devices, tmp_path), fake_node(tmp_path, devices, recording))
    assert done.returncode == 0, done.stdout + done.stderr
    topology = results(done.stdout, "gpu-nic-topology")
    assert topology == {f"rail {r}: GPU{r}-{d}": ("PASS", "PXB") for r, d in enumerate(devices)}
    acs = results(done.stdout, "pcie-acs")
    assert acs == {f"rail {r}: GPU{r}-{d}": ("PASS", "ACS off on 2 bridges with ACS") for r, d in enumerate(devices)}
    assert results(done.stdout, "gpudirect-rdma") == {"memory registration": ("PASS", "nvidia_peermem loaded")}
    assert results(done.stdout, "memlock") == {"this shell": ("PASS", "unlimited (no containerd or slurmd running)")}
    assert results(done.stdout, "iommu") == {f"rail {r}: GPU{r}-{d}": ("PASS", "passthrough or off")
                                             for r, d in enumerate(devices)}
    assert done.stdout.rstrip().endswith("host-preflight: all 26 checks passed")


def test_rail_map_that_contradicts_the_pcie_topology_fails(tmp_path: Path) -> None:
    done = run(preflight(NAIVE, tmp_path), fake_node(tmp_path, NAIVE, "a100-8gpu-10nic.txt"))
    assert done.returncode == 1
    topology = results(done.stdout, "gpu-nic-topology")
    # GPU0-1 sit with NIC2-3, GPU2-3 with NIC0-1, GPU4-5 with NIC8-9, GPU6-7 with NIC4-5 in the recording
    assert [r for r, (result, _) in sorted(topology.items()) if result == "FAIL"] == [
        f"rail {r}: GPU{r}-mlx5_{r}" for r in range(8)]
    assert topology["rail 0: GPU0-mlx5_0"] == (
        "FAIL", "SYS, expected PIX or PXB: the NIC is not under the GPU's PCIe switch")
    assert "8 checks failed" in done.stderr


def test_b300_swapped_rails_show_node(tmp_path: Path) -> None:
    swapped = [B300[1], B300[0], *B300[2:]]
    done = run(preflight(swapped, tmp_path), fake_node(tmp_path, swapped, "b300-cx8-8gpu.txt"))
    topology = results(done.stdout, "gpu-nic-topology")
    assert topology["rail 0: GPU0-mlx5_bond_1"][0] == "FAIL" and topology["rail 0: GPU0-mlx5_bond_1"][1].startswith(
        "NODE,")
    assert topology["rail 2: GPU2-mlx5_bond_2"] == ("PASS", "PXB")


def test_recording_without_nic_legend_is_reported(tmp_path: Path) -> None:
    done = run(preflight(NAIVE, tmp_path), fake_node(tmp_path, NAIVE, "hgx-h100-8gpu-10nic-gpu-rows.txt"))
    topology = results(done.stdout, "gpu-nic-topology")
    assert topology == {f"rail {r}: GPU{r}-mlx5_{r}": (
        "FAIL", f"mlx5_{r} not in nvidia-smi topo -m: its NIC<n> columns have no NIC Legend") for r in range(8)}
    assert done.returncode == 1


def test_acs_memlock_and_peermem_failures(tmp_path: Path) -> None:
    env = fake_node(tmp_path, B300, "b300-cx8-8gpu.txt", acs="001d")
    (tmp_path / "sys" / "module" / "nvidia_peermem").rmdir()
    (tmp_path / "proc" / "self" / "limits").write_text("Max locked memory         8388608              8388608"
                                                       "              bytes\n")
    done = run(preflight(B300, tmp_path), env)
    assert done.returncode == 1
    assert results(done.stdout, "gpudirect-rdma")["memory registration"][0] == "FAIL"
    assert results(done.stdout, "memlock")["this shell"] == (
        "FAIL", "soft limit 8388608 bytes (no containerd or slurmd running): set memlock unlimited (limits.conf, "
                "LimitMEMLOCK=infinity)")
    acs = results(done.stdout, "pcie-acs")["rail 0: GPU0-mlx5_bond_0"]
    assert acs[0] == "FAIL" and "0000:12:00.0 (ACSCtl 0x001d) 0000:12:01.0 (ACSCtl 0x001d)" in acs[1]
    assert "10 checks failed" in done.stderr


def test_missing_nvidia_smi_fails_every_rail(tmp_path: Path) -> None:
    env = fake_node(tmp_path, B300, "b300-cx8-8gpu.txt")
    env["NVIDIA_SMI"] = str(tmp_path / "no-nvidia-smi")
    done = run(preflight(B300, tmp_path), env)
    assert done.returncode == 1
    topology = results(done.stdout, "gpu-nic-topology")
    assert len(topology) == 8 and all(r == "FAIL" and "failed" in d for r, d in topology.values())


def _driver(tmp_path: Path, flavour: str, kernel: str) -> None:
    """/proc/driver/nvidia/version of an open or proprietary kernel module and the running kernel's release."""
    version = tmp_path / "proc" / "driver" / "nvidia" / "version"
    version.parent.mkdir(parents=True, exist_ok=True)
    version.write_text(f"NVRM version: NVIDIA UNIX {flavour}Kernel Module for x86_64  570.86.15  Release Build\n"
                       "GCC version:  gcc version 12.3.0\n")
    release = tmp_path / "proc" / "sys" / "kernel" / "osrelease"
    release.parent.mkdir(parents=True, exist_ok=True)
    release.write_text(kernel + "\n")


def test_dma_buf_replaces_nvidia_peermem(tmp_path: Path) -> None:
    """NCCL 2.19+ registers GPU memory through DMA-BUF with NVIDIA's open kernel module on Linux 5.12+: no
    nvidia-peermem is needed there (the preflight used to fail such a node); the proprietary module or an older
    kernel still needs it."""
    env = fake_node(tmp_path, B300, "b300-cx8-8gpu.txt")
    (tmp_path / "sys" / "module" / "nvidia_peermem").rmdir()
    script = preflight(B300, tmp_path)
    _driver(tmp_path, "Open ", "6.8.0-51-generic")
    done = run(script, env)
    assert done.returncode == 0, done.stdout
    assert results(done.stdout, "gpudirect-rdma") == {"memory registration": (
        "PASS", "DMA-BUF: open GPU kernel module, kernel 6.8.0-51-generic (NCCL 2.19+)")}
    _driver(tmp_path, "Open ", "5.4.0-200-generic")
    old = results(run(script, env).stdout, "gpudirect-rdma")["memory registration"]
    assert old[0] == "FAIL" and old[1].startswith("open GPU kernel module but kernel 5.4.0-200-generic is older")
    _driver(tmp_path, "", "6.8.0-51-generic")
    closed = results(run(script, env).stdout, "gpudirect-rdma")["memory registration"]
    assert closed[0] == "FAIL" and closed[1].startswith("proprietary GPU kernel module (DMA-BUF needs the open one)")


def test_iommu_translation_fails_and_passthrough_passes(tmp_path: Path) -> None:
    """Each rail's GPU and NIC must reach each other untranslated: iommu_group type identity (iommu=pt) or no IOMMU."""
    env = fake_node(tmp_path, B300, "b300-cx8-8gpu.txt")
    script = preflight(B300, tmp_path)
    devices = sorted((tmp_path / "sys" / "bus" / "pci" / "devices").iterdir())
    for i, device in enumerate(devices):
        group = tmp_path / "sys" / "kernel" / "iommu_groups" / str(i)
        group.mkdir(parents=True)
        (group / "type").write_text("identity\n")
        (device.resolve() / "iommu_group").symlink_to(group)
    assert set(results(run(script, env).stdout, "iommu").values()) == {("PASS", "passthrough or off")}
    for i in range(len(devices)):
        (tmp_path / "sys" / "kernel" / "iommu_groups" / str(i) / "type").write_text("DMA-FQ\n")
    done = run(script, env)
    assert done.returncode == 1
    rail0 = results(done.stdout, "iommu")["rail 0: GPU0-mlx5_bond_0"]
    assert rail0 == ("FAIL", "translated DMA at 0000:13:00.0 (DMA-FQ) 0000:14:00.0 (DMA-FQ): boot with iommu=pt "
                             "(intel_iommu=on iommu=pt, or amd_iommu=on iommu=pt)")


def test_memlock_is_the_daemons_not_the_login_shell(tmp_path: Path) -> None:
    """Pods inherit containerd's RLIMIT_MEMLOCK and Slurm jobs slurmd's: a login shell's 8 MiB limit must not fail a
    node whose daemons run unlimited, and an unlimited shell must not pass a node whose containerd is limited."""
    env = fake_node(tmp_path, B300, "b300-cx8-8gpu.txt")
    (tmp_path / "proc" / "self" / "limits").write_text("Max locked memory         8388608              8388608"
                                                       "              bytes\n")
    for pid, name, limit in (("812", "containerd", "unlimited            unlimited"),
                             ("1204", "slurmd", "65536                65536"), ("77", "sshd", "8388608 8388608")):
        (tmp_path / "proc" / pid).mkdir()
        (tmp_path / "proc" / pid / "comm").write_text(name + "\n")
        (tmp_path / "proc" / pid / "limits").write_text(f"Max locked memory         {limit}            bytes\n")
    done = run(preflight(B300, tmp_path), env)
    assert results(done.stdout, "memlock") == {
        "containerd": ("PASS", "unlimited"),
        "slurmd": ("FAIL", "soft limit 65536 bytes: install slurmd.service.d/fabricgen-memlock.conf "
                           "(LimitMEMLOCK=infinity), restart slurmd")}
