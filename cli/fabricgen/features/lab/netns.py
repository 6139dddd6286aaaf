"""The lab's only I/O: Linux network namespaces, veth pairs, addresses and FRR (zebra + bgpd) per switch, and
the state file that lists everything it made so ``down`` removes that and nothing else. Needs root.

Each switch's namespace gets what its read-back says: the routed ports' addresses and MTUs, admin state,
Loopback0's address on ``lo`` (no dummy interface: this machine's kernel has no dummy driver), each VLAN as a
bridge named as the SVI, with its addresses; FRR runs in it with its sockets and pid files in the state directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from fabricgen.core.errors import LabError
from fabricgen.features.lab.frr import bgpd_conf
from fabricgen.features.lab.plan import PREFIX, LabFabric
from fabricgen.model.routing import SwitchRouting

STATE = "lab.json"
FRR_DAEMONS = Path("/usr/lib/frr")  # Debian's frr installs zebra and bgpd here, off PATH


def _run(argv: Sequence[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{argv[0]}: {exc}") from None
    if done.returncode:
        raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _record(state_dir: Path, namespaces: Sequence[str]) -> None:
    """Written (atomically) before anything is made, so a crash mid-way still leaves ``down`` the full list."""
    state_dir.mkdir(parents=True, exist_ok=True)
    tmp = state_dir / f".{STATE}.tmp"
    tmp.write_text(json.dumps({"namespaces": sorted(namespaces)}, indent=1) + "\n")
    tmp.replace(state_dir / STATE)


def switch_batch(switch: SwitchRouting, cabled: set[str]) -> str:
    """``ip -batch`` lines configuring one switch's namespace: only the ports a planned cable put there."""
    lines = ["link set lo up", f"address add {switch.loopback} dev lo"]
    for port in switch.ports:
        if port.name not in cabled:
            continue
        lines.append(f"link set {port.name} mtu {port.mtu}")
        lines += [f"address add {a} dev {port.name}" for a in port.addresses]
        if port.up:
            lines.append(f"link set {port.name} up")
    for vlan in switch.vlans:
        lines += [f"link add {vlan.name} type bridge", f"link set {vlan.name} mtu {vlan.mtu}"]
        lines += [f"link set {m} master {vlan.name}" for m in vlan.members if m in cabled]
        lines += [f"address add {a} dev {vlan.name}" for a in vlan.addresses]
        lines.append(f"link set {vlan.name} up")
    return "\n".join(lines) + "\n"


def _start_frr(namespace: str, switch: SwitchRouting, run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "bgpd.conf").write_bytes(bgpd_conf(switch))
    # the daemons drop to user frr (root is not in Debian's frrvty group) and write their sockets and pids here:
    # the state directory must be one user frr can reach (/run/fabricgen/lab/, not a 0700 temporary directory)
    try:
        shutil.chown(run_dir, "frr", "frr")
    except (LookupError, PermissionError) as exc:
        raise LabError(f"cannot hand {run_dir} to user frr (is Debian's frr installed?): {exc}") from None
    for daemon, config in (("zebra", os.devnull), ("bgpd", str(run_dir / "bgpd.conf"))):
        _run(["ip", "netns", "exec", namespace, str(FRR_DAEMONS / daemon), "-d", "-f", config,
              "-i", str(run_dir / f"{daemon}.pid"), "--vty_socket", str(run_dir), "-z", str(run_dir / "zserv.api")])


def up(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path) -> None:
    """Build ``lab``: namespaces, veth pairs, each switch's configuration, FRR."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, veth pairs, FRR)")
    existing = set(_run(["ip", "netns", "list"]).split())
    taken = sorted(set(lab.namespaces.values()) & existing)
    if taken:
        raise LabError(f"namespaces {', '.join(taken)} exist already: run `lab down` first")
    _record(state_dir, list(lab.namespaces.values()))
    for namespace in lab.namespaces.values():
        _run(["ip", "netns", "add", namespace])
    cabled: dict[str, set[str]] = {namespace: set() for namespace in lab.namespaces.values()}
    for v in lab.veths:
        _run(["ip", "-n", v.a_namespace, "link", "add", v.a_interface, "type", "veth", "peer", "name", v.z_interface,
              "netns", v.z_namespace])
        cabled[v.a_namespace].add(v.a_interface)
        cabled[v.z_namespace].add(v.z_interface)
    for name, namespace in lab.namespaces.items():
        _run(["ip", "-n", namespace, "-batch", "-"], switch_batch(switches[name], cabled[namespace]))
    for name, namespace in lab.namespaces.items():
        _start_frr(namespace, switches[name], state_dir / namespace)


def vtysh(state_dir: Path, namespace: str, command: str) -> object:
    """A ``show ... json`` command's answer from one switch's FRR."""
    out = _run(["ip", "netns", "exec", namespace, "vtysh", "--vty_socket", str(state_dir / namespace), "-c", command])
    try:
        return json.loads(out)
    except json.JSONDecodeError:
        raise LabError(f"{namespace}: `{command}` answered no JSON: {out[:200]!r}") from None


def sessions(state_dir: Path, namespace: str) -> Mapping[str, str]:
    """Each BGP peer's state on one switch."""
    answer = vtysh(state_dir, namespace, "show bgp ipv4 unicast summary json")
    peers = answer.get("peers", {}) if isinstance(answer, dict) else {}
    return {peer: str(info.get("state", "")) for peer, info in peers.items()}


def wait_established(lab: LabFabric, state_dir: Path, expected: Mapping[str, int], timeout_s: float) -> bool:
    """Poll until every switch has ``expected[switch]`` Established sessions or the time is up."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = all(list(sessions(state_dir, lab.namespaces[s]).values()).count("Established") >= n
                   for s, n in expected.items())
        if done or time.monotonic() > deadline:
            return done
        time.sleep(1)


def stop_daemon(pidfile: Path) -> None:
    """SIGTERM to the daemon a pid file names, only while that pid still runs that FRR daemon (a stale file's pid
    may belong to another process by now)."""
    with contextlib.suppress(ValueError, IndexError, OSError):
        pid = int(pidfile.read_text().split()[0])
        if Path(f"/proc/{pid}/exe").resolve() == (FRR_DAEMONS / pidfile.stem).resolve():
            os.kill(pid, signal.SIGTERM)


def down(state_dir: Path) -> list[str]:
    """Stop the FRR daemons and delete the namespaces the state file lists (only ``fg-`` ones); the names removed."""
    state = state_dir / STATE
    if not state.exists():
        return []
    namespaces = [n for n in json.loads(state.read_text())["namespaces"] if n.startswith(PREFIX)]
    existing = set(_run(["ip", "netns", "list"]).split())
    for namespace in namespaces:
        for pidfile in sorted((state_dir / namespace).glob("*.pid")):
            stop_daemon(pidfile)
    removed = []
    for namespace in namespaces:
        if namespace in existing:
            _run(["ip", "netns", "del", namespace])
            removed.append(namespace)
        shutil.rmtree(state_dir / namespace, ignore_errors=True)
    state.unlink()
    return removed
