"""What upstream OpenSM does with the NVIDIA-only settings of SHARP and adaptive routing, shown on ibsim rather than
assumed: why fabricgen refuses `sharp` and `adaptive_routing` under `flavor: opensm` (build.py, tests/negative/
sm-sharp-upstream.yaml, sm-adaptive-routing-upstream.yaml).

lab-1su's generated OpenSM files (upstream OpenSM 3.3.23, 64 HCAs) run once (`opensm -o`) on ibsim with, added by the
test:
- the adaptive-routing and SHIELD lines fabricgen writes for NVIDIA's SM (h100-4su's opensm-settings.conf:
  ar_sl_mask; shield_mode as `shield: no-pfrn` writes it): upstream reports each as an unrecognized token and runs on;
- NVIDIA's adaptive-routing engines (`routing_engine ar_ftree,ar_updn,no_fallback`, what UFM gets): upstream logs
  "cannot find or setup routing engine 'ar_ftree'" (and 'ar_updn'), then "No routing engine able to successfully
  configure switch tables", and the subnet never comes up; this is why `flavor: opensm` refuses ar_ engines;
- a `sharp` flag on the compute partition (NVIDIA documents none in partitions.conf: SHARP's partition is sharp_am's
  ib_qpc_pkey; the flag stands for any vendor keyword): upstream logs "unrecognized partition flag 'sharp' - ignored"
  at its verbose level and programs the partition as without it, read back with `smpquery pkeys`.
What upstream accepts for SHARP is the partition itself: the compute partition, its hosts full members at the index
NCCL uses (the main ibsim proof, test_opensm_ibsim.py, reads it on every HCA of h100-4su, whose sharp_am runs on it).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES
from tests.external.ibsim import (
    Deadline,
    HarnessError,
    IbSim,
    OpenSmRun,
    ca_ports,
    pkey_table,
    run_opensm,
    speeds_for_ibsim,
    stage_opensm_config,
)
from tests.external.infiniband.test_opensm_ibsim import apply, tools  # noqa: F401  (the tools fixture)

pytestmark = pytest.mark.external

BUDGET_S = 120.0
ENGINE_WAIT_S = 20.0  # how long the test lets `opensm -o` try with NVIDIA's engines
HCA = "hgx02 mlx5_0"  # rail 0 of a lab-1su node: the training partition (0x0001) at index 0


def _ufm_only_lines() -> list[str]:
    """The NVIDIA-only lines fabricgen writes into UFM's opensm.conf for h100-4su (adaptive routing's SL mask), and
    shield_mode as `shield: no-pfrn` writes it."""
    artifacts = {a.path: a for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"))}
    settings = artifacts["infiniband/compute/opensm-settings.conf"].content.decode().splitlines()
    lines = [line for line in settings if line.startswith("ar_sl_mask ")]
    assert lines, "h100-4su sets ar_sl_mask"
    return [*lines, "shield_mode 2"]


@pytest.fixture(scope="module")
def staged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """lab-1su applied and staged (paths rewritten to a temp dir), and its net file at ibsim's HDR."""
    work = tmp_path_factory.mktemp("upstream")
    out = work / "out"
    apply(INVENTORIES / "lab-1su.yaml", out, timeout=90)
    fabric_dir = out / "infiniband" / "compute"
    config = stage_opensm_config(fabric_dir, work)
    net = work / "topology-hdr.net"
    net.write_text(speeds_for_ibsim((fabric_dir / "topology.net").read_text()))
    yield config.conf_in, net


def _variant(conf: Path, name: str, *, extra: Sequence[str] = (), engines: str = "", flag: str = "") -> Path:
    """A copy of the staged opensm.conf (key placeholders are valid values) with extra lines, other engines, verbose
    logging, and a partitions.conf whose indx0 partition carries ``flag``."""
    text = conf.read_text()
    text = re.sub(r"^log_flags\s+\S+", "log_flags 0x07", text, flags=re.M)  # errors, info, verbose
    if engines:
        text = re.sub(r"^routing_engine\s+\S+", f"routing_engine {engines}", text, flags=re.M)
    partitions = Path(re.search(r"^partition_config_file\s+(\S+)", text, re.M).group(1))  # type: ignore[union-attr]
    if flag:
        flagged = conf.parent / f"partitions-{name}.conf"
        flagged.write_text(re.sub(r"(, indx0)", rf"\1, {flag}", partitions.read_text(), count=1))
        text = text.replace(f"partition_config_file {partitions}", f"partition_config_file {flagged}")
    out = conf.parent / f"opensm-{name}.conf"
    out.write_text(text + "".join(f"{line}\n" for line in extra))
    return out


def _boot(net: Path, conf: Path, work: Path, tools: dict[str, str]) -> tuple[OpenSmRun, list[int]]:  # noqa: F811
    deadline = Deadline(BUDGET_S, work.name)
    with IbSim(net, work) as sim:
        sim.start(timeout=deadline.left(30))
        run = run_opensm(sim, conf, timeout=deadline.left(60))
        ports = ca_ports(sim.run([tools["ibnetdiscover"], "-p"], timeout=deadline.left(30)).stdout)
        lid = ports[HCA][0]
        table = pkey_table(sim.run([tools["smpquery"], "pkeys", str(lid)], timeout=deadline.left(30)).stdout)
    return run, table


def test_upstream_skips_nvidia_adaptive_routing_settings(staged: tuple[Path, Path], tools: dict[str, str],  # noqa: F811
                                                         tmp_path: Path) -> None:
    conf, net = staged
    extra = _ufm_only_lines()
    run, table = _boot(net, _variant(conf, "ar-keys", extra=extra), tmp_path / "sim", tools)
    for line in extra:
        key = line.split()[0]
        assert f'Unrecognized token: "{key}"' in run.stdout, (key, run.stdout[-2000:])
    assert run.subnet_up, "upstream runs on without them"
    assert table[0] == 0x8001, [hex(k) for k in table]


def test_upstream_has_no_adaptive_routing_engine(staged: tuple[Path, Path], tools: dict[str, str],  # noqa: F811
                                                 tmp_path: Path) -> None:
    """With NVIDIA's engines and no_fallback, upstream sets up no engine and never brings the subnet up: `opensm -o`
    does not finish its sweep (bounded here), the log says why."""
    conf, net = staged
    variant = _variant(conf, "ar-engines", engines="ar_ftree,ar_updn,no_fallback")
    log = tmp_path / "opensm.log"
    deadline = Deadline(BUDGET_S, "ar-engines")
    with IbSim(net, tmp_path / "sim") as sim:
        sim.start(timeout=deadline.left(30))
        with contextlib.suppress(HarnessError):  # the sweep never completes: the point of the test
            sim.run([tools["opensm"], "-F", str(variant), "-e", "-o", "-s", "0", "-f", str(log)], timeout=ENGINE_WAIT_S,
                    check=False)
    text = log.read_text(errors="replace")
    for engine in ("ar_ftree", "ar_updn"):
        assert f"cannot find or setup routing engine '{engine}'" in text, (engine, text[-3000:])
    assert "No routing engine able to successfully configure" in text, text[-3000:]
    assert "SUBNET UP" not in text and "ftree tables configured" not in text


def test_upstream_ignores_a_vendor_partition_flag(staged: tuple[Path, Path], tools: dict[str, str],  # noqa: F811
                                                  tmp_path: Path) -> None:
    conf, net = staged
    run, table = _boot(net, _variant(conf, "sharp-flag", flag="sharp"), tmp_path / "sim", tools)
    assert run.lines("unrecognized partition flag 'sharp' - ignored"), run.log[-2000:]
    assert run.subnet_up and not [e for e in run.errors() if "partition" in e.lower()]
    assert table[0] == 0x8001, "the partition is programmed as without the flag"
