"""fabricgen's Lustre client collector (monitoring/lustre/fabricgen-lustre-stats.sh) on a fake root: systemd loads its
service and timer, shellcheck passes it, and run against stand-in `lctl`/`lnetctl` that print what Lustre 2.15 prints
(lctl's read_param: a multi-line value as `<param>=` then its lines; lprocfs_stats_seq_show: `<name> <count> samples
[<unit>] <min> <max> <sum> <sumsq>`; lnetctl's `statistics:` YAML, lnet/utils/lnetconfig/liblnetconfig.c at 2.15.0),
it writes a file node_exporter's textfile collector reads (promtool check metrics, no lint finding) with each mount's
byte sums and LNet's counters, by rename; with nothing mounted it writes LNet's counters only, and it refuses a
missing directory."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fabricgen.features.monitoring.lustre import COLLECTOR, PROM_FILE
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, require_tool
from tests.external.monitoring.test_promtool import parse_samples

LLITE = """llite.ckpt-ffff9b4e4a1c8000.stats=
snapshot_time             1764620000.123456789 secs.nsecs
start_time                1764610000.000000000 secs.nsecs
elapsed_time              10000.123456789 secs.nsecs
read_bytes                1024 samples [bytes] 4096 16777216 8589934592 72057594037927936
write_bytes               16 samples [bytes] 1048576 1048576 16777216 17592186044416
open                      10 samples [usecs]
llite.data-ffff9b4e4a1d0000.stats=
snapshot_time             1764620000.123456789 secs.nsecs
read_bytes                3 samples [bytes] 4096 4096 12288 50331648
"""
LNET = """statistics:
    msgs_alloc: 0
    msgs_max: 8
    rst_alloc: 0
    errors: 0
    send_count: 1200
    resend_count: 0
    response_timeout_count: 0
    recv_count: 1100
    route_count: 0
    drop_count: 3
    send_length: 123456
    recv_length: 654321
    route_length: 0
    drop_length: 96
"""


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The rendered monitoring/lustre/ directory of h100-4su."""
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    out = tmp_path_factory.mktemp("collector")
    for artifact in render_spec(compiled, ["monitoring"]):
        if artifact.path.startswith("monitoring/lustre/"):
            path = out / artifact.path.removeprefix("monitoring/lustre/")
            path.write_bytes(artifact.content)
            path.chmod(artifact.mode)
    assert sorted(p.name for p in out.iterdir()) == [f"{COLLECTOR}.{ext}" for ext in ("service", "sh", "timer")]
    return out


@pytest.fixture(scope="module")
def script(collector: Path) -> Path:
    path = collector / f"{COLLECTOR}.sh"
    assert path.stat().st_mode & 0o777 == 0o755
    return path


def test_systemd_loads_the_service_and_timer(collector: Path, tmp_path: Path) -> None:
    """systemd-analyze verify, on a root with the distribution's targets and the script where the unit runs it: no
    error and no warning (an unknown key only warns)."""
    analyze = require_tool("systemd-analyze")
    root = tmp_path / "root"
    for directory in ("lib/systemd/system", "etc/systemd/system", "usr/local/sbin"):
        (root / directory).mkdir(parents=True)
    for unit in [*Path("/lib/systemd/system").glob("*.target"), *Path("/lib/systemd/system").glob("*.slice")]:
        shutil.copy2(unit, root / "lib/systemd/system" / unit.name)
    for ext in ("service", "timer"):
        shutil.copy2(collector / f"{COLLECTOR}.{ext}", root / "etc/systemd/system")
    shutil.copy2(collector / f"{COLLECTOR}.sh", root / "usr/local/sbin")
    done = subprocess.run([analyze, "verify", f"--root={root}", "--man=no", f"{COLLECTOR}.timer",
                           f"{COLLECTOR}.service"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def _fake_tools(bin_dir: Path, llite: str | None) -> None:
    """`lctl get_param llite.*.stats` prints ``llite`` (or fails as lctl does with nothing mounted), `lnetctl stats
    show` prints LNET; any other arguments fail."""
    bin_dir.mkdir()
    (bin_dir / "llite").write_text(llite or "")
    (bin_dir / "lnet").write_text(LNET)
    lctl = ('#!/bin/sh\n[ "$1 $2" = "get_param llite.*.stats" ] || exit 9\n'
            + (f'cat "{bin_dir}/llite"\n' if llite is not None else
               "echo \"error: get_param: param_path 'llite/*/stats': No such file or directory\" >&2\nexit 2\n"))
    (bin_dir / "lctl").write_text(lctl)
    (bin_dir / "lnetctl").write_text(f'#!/bin/sh\n[ "$1 $2" = "stats show" ] || exit 9\ncat "{bin_dir}/lnet"\n')
    for tool in ("lctl", "lnetctl"):
        (bin_dir / tool).chmod(0o755)


def _run(script: Path, tmp_path: Path, llite: str | None, directory: Path) -> subprocess.CompletedProcess[str]:
    _fake_tools(tmp_path / "bin", llite)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run([str(script), str(directory)], capture_output=True, text=True, env=env)


def test_collector_passes_shellcheck(script: Path) -> None:
    shellcheck = require_tool("shellcheck")
    done = subprocess.run([shellcheck, "-x", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def _check_metrics(text: str) -> None:
    promtool = require_tool("promtool")
    done = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
    assert done.returncode == 0 and not done.stdout + done.stderr, done.stdout + done.stderr


def test_collector_writes_each_mount_and_lnet(script: Path, tmp_path: Path) -> None:
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    done = _run(script, tmp_path, LLITE, textfile)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in textfile.iterdir()) == [PROM_FILE]  # no temporary file left behind
    text = (textfile / PROM_FILE).read_text()
    _check_metrics(text)
    samples = {(name, tuple(sorted(labels.items()))): value for name, labels, value in parse_samples(text)}
    ckpt = (("filesystem", "ckpt"), ("mount", "ckpt-ffff9b4e4a1c8000"))
    data = (("filesystem", "data"), ("mount", "data-ffff9b4e4a1d0000"))
    assert samples == {
        ("fabricgen_lustre_client_read_bytes_total", ckpt): "8589934592",
        ("fabricgen_lustre_client_read_bytes_total", data): "12288",
        ("fabricgen_lustre_client_write_bytes_total", ckpt): "16777216",
        ("fabricgen_lustre_client_write_bytes_total", data): "0",  # never written: Lustre does not list it
        ("fabricgen_lnet_send_count_total", ()): "1200",
        ("fabricgen_lnet_receive_count_total", ()): "1100",
        ("fabricgen_lnet_drop_count_total", ()): "3",
    }


def test_collector_without_a_mount_writes_lnet_only(script: Path, tmp_path: Path) -> None:
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    done = _run(script, tmp_path, None, textfile)
    assert done.returncode == 0, done.stderr
    text = (textfile / PROM_FILE).read_text()
    _check_metrics(text)
    assert {name for name, _, _ in parse_samples(text)} == {
        "fabricgen_lnet_send_count_total", "fabricgen_lnet_receive_count_total", "fabricgen_lnet_drop_count_total"}


def test_collector_refuses_a_missing_directory(script: Path, tmp_path: Path) -> None:
    done = _run(script, tmp_path, LLITE, tmp_path / "absent")
    assert done.returncode == 2 and "no directory" in done.stderr
