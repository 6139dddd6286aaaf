"""The SM hosts' systemd unit against the real systems: systemd 252 loads it beside the distribution's own
opensm.service, and OpenSM on ibsim shows where its keys go and that the unit keeps them out of the journal.

- systemd: `systemd-analyze verify --root` of a tree holding Debian's installed /lib/systemd/system/opensm.service and
  opensm@.service (package opensm) and the generated opensm-<fabric>.service; the unit as systemd loaded it (its
  debug dump) runs opensm in the foreground (Type=exec, RemainAfterExit no, no ExecCondition, not ordered before
  network.target) and conflicts with the distribution's opensm.service and MLNX_OFED/DOCA's opensmd.service, whose
  oneshot wrapper a drop-in would have kept (the review's B1: `systemctl start` never returned).
- keys: OpenSM (Debian 12's 3.3.23) runs on ibsim with the runtime config opensm-keys.sh wrote, in a private mount
  namespace whose /dev/log is a datagram socket read by this test: each key is printed on stdout and sent to syslog,
  only at priority info, and never written to OpenSM's log file. The unit sends stdout nowhere and caps the journal
  at notice (LogLevelMax, which journald applies to the unit's syslog messages too), so neither copy is kept; this
  test cannot run journald itself. Needs root (unshare -m, mounts): CI runs as root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import INVENTORIES, REPO, require_tool
from tests.external.ibsim import booted, find_libumad2sim, speeds_for_ibsim, stage_opensm_config, write_runtime_config

pytestmark = pytest.mark.external

DISTRO_UNITS = Path("/lib/systemd/system")
LOG_INFO, LOG_NOTICE = 6, 5  # syslog(3) levels
SPECS = (INVENTORIES / "lab-1su.yaml", REPO / "tests/data/infiniband/multi-tenant.yaml")


def _apply(spec: Path, out: Path) -> Path:
    cp = subprocess.run([sys.executable, "-m", "fabricgen", "apply", str(spec), "-o", str(out), "--yes"], cwd=REPO,
                        capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    return out / "infiniband" / "compute"


def _loaded(dump: str, unit: str) -> dict[str, list[str]]:
    """Property -> values of ``unit`` in systemd's debug dump of the units it loaded (``-> Unit X:`` blocks)."""
    props: dict[str, list[str]] = {}
    inside = False
    for line in dump.splitlines():
        if line.strip().startswith("-> Unit "):
            inside = line.strip() == f"-> Unit {unit}:"
            continue
        m = re.match(r"^\t\t([A-Za-z]+): (.*)$", line)
        if inside and m:
            props.setdefault(m.group(1), []).append(m.group(2))
    return props


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_systemd_loads_the_unit_beside_the_distributions(spec: Path, tmp_path: Path) -> None:
    analyze = require_tool("systemd-analyze")
    opensm = require_tool("opensm")
    distro = DISTRO_UNITS / "opensm.service"
    if not distro.exists():
        pytest.fail(f"{distro} missing: the Debian package opensm installs it")
    fabric_dir = _apply(spec, tmp_path / "out")
    units = sorted(fabric_dir.glob("hosts/*/opensm-compute.service"))
    assert len(units) == 2 and not list(fabric_dir.glob("hosts/*/*.d")), "one unit per SM host, no drop-in"
    root = tmp_path / "root"
    system = root / "lib/systemd/system"
    system.mkdir(parents=True)
    for path in [*DISTRO_UNITS.glob("*.target"), *DISTRO_UNITS.glob("*.slice"), distro,
                 DISTRO_UNITS / "opensm@.service"]:
        shutil.copy2(path, system / path.name)
    for path, source in (("etc/opensm/opensm-keys.sh", fabric_dir / "opensm-keys.sh"), ("usr/sbin/opensm", opensm),
                         ("bin/sh", "/bin/sh")):  # the distribution's unit runs /bin/sh
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, root / path)
    distro_props = None
    for unit in units:
        (root / "etc/systemd/system").mkdir(parents=True, exist_ok=True)
        shutil.copy2(unit, root / "etc/systemd/system" / unit.name)
        cp = subprocess.run([analyze, "verify", f"--root={root}", "--man=no", unit.name, "opensm.service"],
                            env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"}, capture_output=True, text=True,
                            timeout=60, check=False)
        assert cp.returncode == 0, cp.stderr[-3000:]
        props = _loaded(cp.stdout, unit.name)
        assert props["Type"] == ["exec"] and props.get("RemainAfterExit", ["no"]) == ["no"], props
        assert "ExecCondition" not in props and "network.target" not in props.get("Before", []), props
        assert {"opensm.service (origin-file)", "opensmd.service (origin-file)"} <= set(props["Conflicts"])
        assert props["StandardOutput"] == ["null"] and props["LogLevelMax"] == ["notice"], props
        assert props["UMask"] == ["0077"] and props["Restart"] == ["on-failure"], props
        text = unit.read_text()
        host = unit.parts[-2]
        assert re.search(r"^ExecStart=/usr/sbin/opensm --config /run/opensm/compute.conf --priority \d+ "
                         r"--guid 0x[0-9a-f]{16}$", text, re.M), host
        distro_props = _loaded(cp.stdout, "opensm.service")
    # what a drop-in on the distribution's unit would have inherited
    assert distro_props is not None and distro_props["Type"] == ["oneshot"], distro_props
    assert "network.target" in " ".join(distro_props.get("Before", [])), distro_props


_LISTENER = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
s.settimeout(float(sys.argv[2]))
with open(sys.argv[1], "wb") as out:
    try:
        while True:
            out.write(s.recv(65536).replace(b"\\n", b" ") + b"\\n")
            out.flush()
    except socket.timeout:
        pass
"""

# A private /dev with the few devices OpenSM opens and a /dev/log socket the listener reads; nothing outside the
# mount namespace changes.
_NAMESPACE = """
set -euo pipefail
orig="$(mktemp -d)"
mount --bind /dev "$orig"
mount -t tmpfs -o mode=755 fabricgen-test-dev /dev
for n in null zero urandom random full; do touch "/dev/$n"; mount --bind "$orig/$n" "/dev/$n"; done
umount "$orig"
"$PYTHON" -c "$LISTENER" "$SYSLOG_OUT" 5 &
for _ in $(seq 200); do [[ -S /dev/log ]] && break; sleep 0.05; done
[[ -S /dev/log ]]
"$@"
wait
"""


def test_keys_stay_out_of_the_journal(tmp_path: Path) -> None:
    opensm = require_tool("opensm")
    unshare = require_tool("unshare")
    require_tool("ibsim")
    if find_libumad2sim() is None:
        pytest.skip("libumad2sim.so not installed")
    if os.geteuid() != 0:
        pytest.skip("needs root for a private mount namespace (CI runs as root)")
    fabric_dir = _apply(INVENTORIES / "lab-1su.yaml", tmp_path / "out")
    staged = stage_opensm_config(fabric_dir, tmp_path)
    keys = {"sm_key": "0x5e3c0de5a1f00d01", "m_key": "0x0de1e7ab1e5eed02"}
    (staged.config_dir / "m_key").write_text(keys["m_key"] + "\n")  # lab-1su: m_key from /etc/opensm/m_key
    write_runtime_config(staged, {"OPENSM_SM_KEY": keys["sm_key"]})
    net = tmp_path / "hdr.net"
    net.write_text(speeds_for_ibsim((fabric_dir / "topology.net").read_text(), "HDR"))
    log, syslog = tmp_path / "opensm.log", tmp_path / "syslog.txt"
    with booted(net, tmp_path / "sim", timeout=30) as sim:
        cp = sim.run([unshare, "-m", "--propagation", "private", "bash", "-c", _NAMESPACE, "namespace", opensm,
                      "-F", str(staged.conf_out), "-e", "-o", "-s", "0", "-f", str(log)], timeout=90, check=False,
                     extra_env={"PYTHON": sys.executable, "LISTENER": _LISTENER, "SYSLOG_OUT": str(syslog)})
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    messages = syslog.read_text(errors="replace").splitlines()
    assert any("Entering MASTER state" in m for m in messages), "the listener got OpenSM's syslog messages"
    for name, value in keys.items():
        assert f"Loading Cached Option:{name} = {value}" in cp.stdout, f"{name}: OpenSM prints it on stdout"
        carrying = [m for m in messages if value[2:] in m]
        assert carrying, f"{name}: OpenSM sends it to syslog"
        levels = {int(re.match(r"<(\d+)>", m).group(1)) & 7 for m in carrying}  # type: ignore[union-attr]
        assert levels == {LOG_INFO}, f"{name} reaches syslog at levels {levels}"
        assert value[2:] not in log.read_text().lower(), f"{name} is in OpenSM's log file"
    unit = next(fabric_dir.glob("hosts/*/opensm-compute.service")).read_text()
    assert re.search(r"^StandardOutput=null$", unit, re.M), "stdout (with the keys) must not reach the journal"
    cap = re.search(r"^LogLevelMax=(\w+)$", unit, re.M)
    levels_by_name = {"emerg": 0, "alert": 1, "crit": 2, "err": 3, "warning": 4, "notice": 5, "info": 6, "debug": 7}
    assert cap and levels_by_name[cap.group(1)] < LOG_INFO, "journald must drop the unit's info messages"
