"""gds-preflight.sh (GPUDirect Storage readiness): run against a fake /sys and /proc, the node's installed
cufile.json, a stub gdscheck printing recorded `gdscheck -p` outputs (tests/data/gdscheck/, sources in its README)
and the stub lctl of the Lustre tests (shellcheck: tests/external/gds/)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fabricgen.features.gds import render
from fabricgen.pipeline import compile_spec
from tests.conftest import REPO
from tests.helpers.fake_host import write
from tests.helpers.lustre import LUSTRE_STUBS

RECORDINGS = REPO / "tests" / "data" / "gdscheck"
GDS_1_0 = (RECORDINGS / "quadro-p1000-gds-1.0.0.82.txt").read_text()
LUSTRE_UNSUPPORTED = "DDN EXAScaler      : Unsupported"


def nvidia_fixture_line(name: str) -> str:
    """The DDN EXAScaler line of one of NVIDIA's gds-diag fixtures, as gdscheck prints it."""
    line = next(line for line in (RECORDINGS / name).read_text().splitlines() if "DDN EXAScaler" in line)
    return line.strip()


# The full recorded 1.0.0.82 run with Lustre active: its DDN EXAScaler line replaced by NVIDIA's fixture lines
# (no public full run with Lustre GDS active was found; see tests/data/gdscheck/README.md).
LUSTRE_SUPPORTED = GDS_1_0.replace(LUSTRE_UNSUPPORTED, nvidia_fixture_line("gds-diag-old-supported.txt"))
LUSTRE_MODES = GDS_1_0.replace(LUSTRE_UNSUPPORTED, nvidia_fixture_line("gds-diag-ddn-exascaler-modes.txt"))

SPEC = """apiVersion: fabricgen/v1
kind: Cluster
metadata: {{name: gds, site: lab}}
facility:
  rows: [{{name: L, racks: 2}}, {{name: M, racks: 1, kind: network}}]
node_profiles:
  gds-node:
    height_u: 4
    gpus: {gpus}
    memory_gb: 512
    local_nvme: {{path: /raid, capacity_gib: 7000}}
    nics:
      storage:
        - {{dev: mlx5_0, netdev: ens1f0np0, port: P1, model: ConnectX-7-QSFP112-2P}}
        - {{dev: mlx5_1, netdev: ens1f1np1, port: P2, model: ConnectX-7-QSFP112-2P}}
  mds:
    role: storage
    height_u: 2
    nics:
      storage:
        - {{dev: mlx5_0, netdev: ens1f0np0, port: P1, model: ConnectX-7-QSFP112-2P}}
nodes:
  - {{name: "n{{n:02d}}", count: 2, profile: gds-node, placement: {{rows: [L], per_rack: 1, start_u: 2}}}}
  - {{name: mds01, count: 1, profile: mds, placement: {{rows: [L], per_rack: 1, start_u: 20}}}}
fabrics:
  storage:
    type: roce
    speed: 400G
    switch: SN5600
    topology: {{kind: leaf-spine}}
    qos: {{lossless: {{dscp: 26, priority: 3}}, cnp: {{dscp: 48, priority: 6}}}}
    addressing:
      {{hosts: 10.40.0.0/16, p2p: 10.41.0.0/20, loopbacks: 10.42.0.0/24, asn: {{spine: 65000, leaf_base: 65100}}}}
lustre:
  scratch:
    fsname: scratch
    mgs: [mds01]
    mountpoint: /lustre/scratch
    fabric: storage
gds:
  gds-node:
    lustre_client: "2.15.5"
{extra}"""


def fake_node(tmp_path: Path, gpus: int = 1, extra: str = "") -> tuple[Path, dict[str, str], list[str]]:
    """The rendered preflight and cufile/ of profile gds-node, a fake root for node n01 (nvidia_fs loaded, its
    planned cufile.json installed, /raid ext4 data=ordered, Lustre 2.15.5 with the planned NIDs) and stubs."""
    spec = tmp_path / "gds.yaml"
    spec.write_text(SPEC.format(gpus=gpus, extra=extra))
    artifacts = {a.path: a.content for a in render.render(compile_spec(spec).topology)}
    out = tmp_path / "out"
    for path, content in artifacts.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_bytes(content)
    base = out / "hosts" / "gds-node" / "gds"
    script = base / "gds-preflight.sh"
    root, state = tmp_path / "root", tmp_path / "state"
    write(root / "sys" / "module" / "nvidia_fs" / "version", "2.7.49")
    write(root / "proc" / "mounts", "/dev/md0 /raid ext4 rw,relatime,data=ordered 0 0\n"
                                    "10.40.0.9@o2ib:/scratch /lustre/scratch lustre rw,flock 0 0")
    (root / "etc").mkdir(parents=True)
    shutil.copy(base / "cufile" / "n01.json", root / "etc" / "cufile.json")
    nids = next(line.split("\"")[1].split() for line in script.read_text().splitlines() if line.startswith("    n01)"))
    write(state / "nids", "0@lo\n" + "\n".join(nids))
    write(state / "params" / "version", "2.15.5")
    write(state / "gdscheck.txt", LUSTRE_SUPPORTED)
    write(tmp_path / "bin" / "gdscheck", '#!/bin/sh\ncat "$STUB_STATE/gdscheck.txt"\n')
    (tmp_path / "bin" / "gdscheck").chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "NODE": "n01", "SYSFS_ROOT": str(root / "sys"), "PROCFS_ROOT": str(root / "proc"),
           "CUFILE_ENV_PATH_JSON": str(root / "etc" / "cufile.json"), "GDSCHECK": str(tmp_path / "bin" / "gdscheck"),
           "LCTL": str(LUSTRE_STUBS / "lctl"), "STUB_STATE": str(state)}
    return script, env, nids


def run(script: Path, env: dict[str, str]) -> tuple[int, dict[str, str]]:
    """Exit code and each check's result row (check -> "PASS detail" / "FAIL detail")."""
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    rows = {}
    for line in done.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1][:4] in ("PASS", "FAIL"):
            rows[parts[0]] = parts[1]
    assert done.stderr == "", done.stderr
    return done.returncode, rows


def state_of(env: dict[str, str]) -> Path:
    return Path(env["STUB_STATE"])


def test_ready_node_passes_every_check(tmp_path: Path) -> None:
    script, env, nids = fake_node(tmp_path)
    assert len(nids) == 2 and all(nid.endswith("@o2ib") for nid in nids), "both storage ports: multi-rail"
    code, rows = run(script, env)
    assert code == 0, rows
    assert sorted(rows) == sorted(["nvidia-fs", "cufile-json", "gdscheck", "gpus", "gds-lustre", "peerdirect",
                                   "gds-nvme", "cufile-loaded", "lustre-client", "lnet-nids", "nvme-mount"])
    assert all(result.startswith("PASS") for result in rows.values()), rows
    assert "Lustre: Supported" in rows["gds-lustre"] and "NVMe: Supported" in rows["gds-nvme"]


def test_gds_1_16_modes(tmp_path: Path) -> None:
    """GDS 1.16 prints the modes: nvfs is native GDS."""
    script, env, _ = fake_node(tmp_path)
    write(state_of(env) / "gdscheck.txt", LUSTRE_MODES)
    code, rows = run(script, env)
    assert code == 0 and rows["gds-lustre"] == "PASS  Lustre: nvfs, compat", rows


def test_dmabuf_needs_no_peerdirect(tmp_path: Path) -> None:
    """Lustre through DMA-BUF registers GPU memory without MOFED's PeerDirect. The "dmabuf, compat" line is
    constructed: NVIDIA's gds-diag (checks/gdscheck.py) counts dmabuf as a native mode, no recording shows it."""
    script, env, _ = fake_node(tmp_path)
    write(state_of(env) / "gdscheck.txt", LUSTRE_MODES.replace("nvfs, compat", "dmabuf, compat").replace(
        "--Mellanox PeerDirect : Enabled", "--Mellanox PeerDirect : Disabled"))
    code, rows = run(script, env)
    assert code == 0 and rows["peerdirect"].startswith("PASS  not needed: Lustre registers GPU memory through"), rows
    write(state_of(env) / "gdscheck.txt", LUSTRE_MODES.replace("--Mellanox PeerDirect : Enabled",
                                                               "--Mellanox PeerDirect : Disabled"))
    code, rows = run(script, env)
    assert code == 1 and rows["peerdirect"].startswith("FAIL  Mellanox PeerDirect: Disabled: reinstall"), rows


@pytest.mark.parametrize("mode", ["Unsupported", "compat"])
def test_lustre_without_native_gds_fails(mode: str, tmp_path: Path) -> None:
    script, env, _ = fake_node(tmp_path)
    write(state_of(env) / "gdscheck.txt", GDS_1_0.replace(LUSTRE_UNSUPPORTED, f"DDN EXAScaler      : {mode}"))
    code, rows = run(script, env)
    assert code == 1 and rows["gds-lustre"].startswith(f"FAIL  Lustre: {mode}: install a Lustre client"), rows
    assert [check for check, result in rows.items() if result.startswith("FAIL")] == ["gds-lustre"]


def test_recorded_outputs_as_they_are(tmp_path: Path) -> None:
    """Each recorded run as published: none had Lustre GDS; the beta's names and 0/1 booleans are read; NVIDIA's
    abridged sample lists no GPUs and no cuFile settings."""
    script, env, _ = fake_node(tmp_path)
    expected = {
        "quadro-p1000-gds-1.0.0.82.txt": {"gds-lustre"},
        "quadro-p1000-gds-0.95.0.94-beta.txt": {"gds-lustre"},
        "cucim-gds-1.1.0.37.txt": {"gds-lustre", "gpus", "cufile-loaded"},
    }
    for name, failing in expected.items():
        write(state_of(env) / "gdscheck.txt", (RECORDINGS / name).read_text())
        code, rows = run(script, env)
        assert code == 1 and {c for c, r in rows.items() if r.startswith("FAIL")} == failing, (name, rows)
    assert rows["gpus"] == "FAIL  gdscheck lists 0 GPU(s), 0 supporting GDS; the profile has 1"
    write(state_of(env) / "gdscheck.txt", (RECORDINGS / "quadro-p1000-gds-0.95.0.94-beta.txt").read_text())
    _, rows = run(script, env)
    assert rows["peerdirect"] == "PASS  Mellanox PeerDirect: enabled" and rows["gds-lustre"].startswith(
        "FAIL  Lustre: Unsupported"), rows


def test_gpu_count_and_loaded_settings(tmp_path: Path) -> None:
    """An 8-GPU profile against the 1-GPU recording, and planned settings gdscheck does not report."""
    script, env, _ = fake_node(tmp_path, gpus=8, extra="    max_direct_io_size_kb: 8192\n    posix_gds_min_kb: 64\n")
    code, rows = run(script, env)
    assert code == 1
    assert rows["gpus"] == "FAIL  gdscheck lists 1 GPU(s), 1 supporting GDS; the profile has 8"
    assert rows["cufile-loaded"] == ("FAIL  gdscheck reports properties.max_direct_io_size_kb=16384 (planned 8192) "
                                     "fs.lustre.posix_gds_min_kb=0 (planned 64): cuFile read another cufile.json")


def test_host_faults(tmp_path: Path) -> None:
    script, env, nids = fake_node(tmp_path)
    root = Path(env["SYSFS_ROOT"]).parent
    shutil.rmtree(root / "sys" / "module" / "nvidia_fs")
    (root / "etc" / "cufile.json").write_text("{}\n")
    write(state_of(env) / "params" / "version", "2.12.3_ddn39")
    write(state_of(env) / "nids", nids[0])
    write(root / "proc" / "mounts", "/dev/md0 /raid ext4 rw,relatime 0 0")
    code, rows = run(script, env)
    assert code == 1
    assert rows["nvidia-fs"].startswith("FAIL  nvidia_fs is not loaded")
    assert rows["cufile-json"].startswith("FAIL") and "is not cufile/n01.json" in rows["cufile-json"]
    assert rows["lustre-client"] == "FAIL  Lustre 2.12.3 is older than 2.15, the first with GDS support"
    assert rows["lnet-nids"] == f"FAIL  LNet has no NI for {nids[1]} (it has: {nids[0]})"
    assert rows["nvme-mount"].startswith("FAIL  /raid: ext4 without an explicit data=ordered")
    write(root / "proc" / "mounts", "/dev/md0 /raid xfs rw,noatime 0 0")
    assert run(script, env)[1]["nvme-mount"] == "PASS  /raid: xfs (rw,noatime)"
    write(root / "proc" / "mounts", "/dev/md0 /raid ext4 rw,data=writeback 0 0")
    assert run(script, env)[1]["nvme-mount"].startswith("FAIL  /raid: ext4 (rw,data=writeback)")


def test_unplanned_node_and_failing_gdscheck(tmp_path: Path) -> None:
    script, env, _ = fake_node(tmp_path)
    write(Path(env["GDSCHECK"]), "#!/bin/sh\necho 'error: libcufile.so not found' >&2\nexit 1\n")
    code, rows = run(script, {**env, "NODE": "n99"})
    assert code == 1
    assert rows["cufile-json"].startswith("FAIL  node n99 is not planned with profile gds-node")
    assert rows["gdscheck"].endswith("-p failed: error: libcufile.so not found")
    assert rows["lnet-nids"] == "FAIL  node n99 is not planned with profile gds-node"


def test_nvme_only_profile(tmp_path: Path) -> None:
    """A profile whose GDS reads only its NVMe tier: no Lustre client named, no Lustre checks, no addresses."""
    spec = tmp_path / "gds.yaml"
    text = SPEC.format(gpus=1, extra="")
    spec.write_text(text[:text.index("lustre:\n")] + "gds:\n  gds-node: {}\n")
    artifacts = {a.path: a.content for a in render.render(compile_spec(spec).topology)}
    script = artifacts["hosts/gds-node/gds/gds-preflight.sh"].decode()
    assert "gds-nvme" in script and "lnet-nids" not in script and "LCTL" not in script
    lustre = json.loads(artifacts["hosts/gds-node/gds/cufile/n01.json"])["fs"]["lustre"]
    assert lustre == {"posix_gds_min_kb": 0}
