"""The lab's only I/O: Linux network namespaces, veth pairs, addresses, FRR (zebra + bgpd) per switch, lldpd in
every namespace, ping, and the state file that lists everything it made so ``down`` removes that and nothing
else. Needs root.

Each switch's namespace gets what its read-back says: the routed ports' addresses and MTUs, admin state,
Loopback0's address on ``lo`` (no dummy interface: this machine's kernel has no dummy driver), each VLAN as a
bridge named as the SVI, with its addresses; FRR runs in it with its sockets and pid files in the state directory.
Each host's namespace gets what its netplan says: MTUs, addresses, routes, source rules; an active-backup bond is
a bridge named as the bond over its primary member only (the kernel here has no bonding driver either; with its
primary up, an active-backup bond sends and receives on the primary alone, as this does; its other members are
up without addresses, as a bond's backup members are, so LLDP runs on them too). lldpd runs in every namespace with
its control socket, pid file and start-up file in the namespace's state directory.
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
from dataclasses import dataclass
from ipaddress import IPv4Address
from pathlib import Path

from fabricgen.core.errors import LabError
from fabricgen.features.lab.frr import bgpd_conf
from fabricgen.features.lab.lldpd import lldpd_conf
from fabricgen.features.lab.netplan import HostInterface
from fabricgen.features.lab.plan import PREFIX, LabFabric
from fabricgen.model.routing import RoutedPort, SwitchRouting

STATE = "lab.json"
FRR_DAEMONS = Path("/usr/lib/frr")  # Debian's frr installs zebra and bgpd here, off PATH
LLDPD = Path("/usr/sbin/lldpd")     # Debian's lldpd
# the programs whose pid files the lab writes (<daemon>.pid): `down` signals a pid only while it runs that program
DAEMONS = {"zebra": FRR_DAEMONS / "zebra", "bgpd": FRR_DAEMONS / "bgpd", "lldpd": LLDPD}


def _run(argv: Sequence[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(list(argv), input=stdin, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{argv[0]}: {exc}") from None
    if done.returncode:
        raise LabError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _record(state_dir: Path, namespaces: Sequence[str], key: str) -> None:
    """Written (atomically) before anything is made, so a crash mid-way still leaves ``down`` the full list;
    ``key`` names what was built (see :func:`recorded`)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o755)  # FRR's daemons run as user frr and must reach their directories below it
    tmp = state_dir / f".{STATE}.tmp"
    tmp.write_text(json.dumps({"namespaces": sorted(namespaces), "key": key}, indent=1) + "\n")
    tmp.replace(state_dir / STATE)


def recorded(state_dir: Path) -> tuple[list[str], str] | None:
    """The namespaces and key a state file records, or None without one."""
    try:
        state = json.loads((state_dir / STATE).read_text())
        return [str(n) for n in state["namespaces"]], str(state.get("key", ""))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LabError(f"{state_dir / STATE} is not a lab state file ({exc}); remove the lab's namespaces by hand "
                       "(ip netns list: the fg- ones)") from None


def running(state_dir: Path, namespaces: Sequence[str]) -> bool:
    """Every namespace exists and every switch's daemons recorded beside the state file still run."""
    existing = set(_run(["ip", "netns", "list"]).split())
    if not set(namespaces) <= existing:
        return False
    pidfiles = [p for n in namespaces for p in sorted((state_dir / n).glob("*.pid"))]
    return all(_daemon_pid(p) is not None for p in pidfiles)


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
        # SONiC's SVI is oper-up only with a member up; an empty Linux bridge would be up and announced regardless.
        # Members the lab leaves uncabled (hosts not sampled) count as up, as their hosts would be.
        if vlan.members:
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


def _start_lldpd(namespace: str, system: str, run_dir: Path, interfaces: set[str],
                 ports: Sequence[RoutedPort] | None) -> None:
    """lldpd on the cabled ``interfaces`` of one namespace, as ``system`` (its switch ``ports``, None on a host);
    started after the links are up, so it finds them all."""
    run_dir.mkdir(parents=True, exist_ok=True)
    run_dir.chmod(0o755)
    (run_dir / "lldpd.conf").write_bytes(lldpd_conf(system, ports))
    pidfile = run_dir / "lldpd.pid"
    _run(["ip", "netns", "exec", namespace, str(LLDPD), "-u", str(run_dir / "lldpd.socket"),
          "-p", str(pidfile), "-O", str(run_dir / "lldpd.conf"), "-I", ",".join(sorted(interfaces))])
    # lldpd's parent returns before the daemon writes its pid file: without it `down` could not stop the daemon
    deadline = time.monotonic() + 10
    while _daemon_pid(pidfile) is None:
        if time.monotonic() > deadline:
            raise LabError(f"{namespace}: lldpd wrote no pid file {pidfile} within 10 s")
        time.sleep(0.05)


def host_batch(interfaces: Sequence[HostInterface], cabled: set[str]) -> str:
    """``ip -batch`` lines configuring one host's namespace from its netplan interfaces: links, then source rules
    and routes (their gateways are on links that are up by then)."""
    lines, routes = ["link set lo up"], []
    for i in interfaces:
        if i.members:
            if i.mode != "active-backup":
                raise LabError(f"bond {i.name} is {i.mode}: the lab runs active-backup bonds only")
            primary = i.primary or i.members[0]
            lines += [f"link add {i.name} type bridge", f"link set {i.name} mtu {i.mtu}"]
            lines += [f"link set {primary} master {i.name}"] if primary in cabled else []
        elif i.name in cabled:
            lines.append(f"link set {i.name} mtu {i.mtu}")
        else:
            continue
        lines += [f"address add {a} dev {i.name}" for a in i.addresses]
        lines.append(f"link set {i.name} up")
        routes += [f"rule add from {source} table {table}" + (f" priority {priority}" if priority else "")
                   for source, table, priority in i.rules]
        for r in i.routes:
            how = " scope link" if r.on_link else f" via {r.via}" if r.via else ""
            routes.append(f"route add {r.to}{how} dev {i.name}" + (f" metric {r.metric}" if r.metric else "")
                          + (f" table {r.table}" if r.table else ""))
    return "\n".join(lines + routes) + "\n"


def require_tools() -> None:
    """Root and the programs the lab runs, each missing one said before anything is made."""
    missing = [] if os.geteuid() == 0 else ["root (network namespaces, veth pairs, FRR): run it as root"]
    for program, package in (("ip", "iproute2"), ("vtysh", "frr"), ("ping", "iputils-ping"), ("lldpctl", "lldpd")):
        if shutil.which(program) is None:
            missing.append(f"{program} (Debian package {package})")
    for daemon, path in DAEMONS.items():
        if not os.access(path, os.X_OK):
            missing.append(f"{path} (Debian package {'lldpd' if daemon == 'lldpd' else 'frr'})")
    if missing:
        raise LabError("the lab needs " + "; ".join(missing))


def up(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path,
       hosts: Mapping[str, Sequence[HostInterface]] | None = None, key: str = "") -> None:
    """Build ``lab``: namespaces, veth pairs, each switch's configuration and FRR, then each host's netplan."""
    if os.geteuid() != 0:
        raise LabError("the lab needs root (network namespaces, veth pairs, FRR)")
    existing = set(_run(["ip", "netns", "list"]).split())
    taken = sorted(set(lab.every_namespace()) & existing)
    if taken:
        raise LabError(f"namespaces {', '.join(taken)} exist already: run `lab down` first")
    _record(state_dir, lab.every_namespace(), key)
    for namespace in lab.every_namespace():
        _run(["ip", "netns", "add", namespace])
    cabled: dict[str, set[str]] = {namespace: set() for namespace in lab.every_namespace()}
    for v in lab.veths:
        _run(["ip", "-n", v.a_namespace, "link", "add", v.a_interface, "type", "veth", "peer", "name", v.z_interface,
              "netns", v.z_namespace])
        cabled[v.a_namespace].add(v.a_interface)
        cabled[v.z_namespace].add(v.z_interface)
    for name, namespace in lab.namespaces.items():
        # a switch routes: a new namespace starts with forwarding off (hosts keep it off, as a host's kernel does)
        _run(["ip", "netns", "exec", namespace, "sysctl", "-q", "-w", "net.ipv4.conf.all.forwarding=1"])
        _run(["ip", "-n", namespace, "-batch", "-"], switch_batch(switches[name], cabled[namespace]))
    for name, namespace in lab.namespaces.items():
        _start_frr(namespace, switches[name], state_dir / namespace)
    for name, namespace in lab.host_namespaces.items():
        _run(["ip", "-n", namespace, "-batch", "-"], host_batch((hosts or {}).get(name, ()), cabled[namespace]))
    for name, namespace in lab.namespaces.items():
        ports = [p for p in switches[name].ports if p.name in cabled[namespace]]
        _start_lldpd(namespace, name, state_dir / namespace, cabled[namespace], ports)
    for name, namespace in lab.host_namespaces.items():
        _start_lldpd(namespace, name, state_dir / namespace, cabled[namespace], None)


def lldp_update(state_dir: Path, namespace: str) -> None:
    """Have one namespace's lldpd send on every port now (its first frames went out before its peers listened)."""
    _run(["ip", "netns", "exec", namespace, "lldpcli", "-u", str(state_dir / namespace / "lldpd.socket"), "update"])


def lldp_neighbors(state_dir: Path, namespace: str) -> str:
    """One namespace's LLDP neighbours as lldpd writes them (``lldpctl -f json``)."""
    return _run(["ip", "netns", "exec", namespace, "lldpctl", "-u", str(state_dir / namespace / "lldpd.socket"),
                 "-f", "json"])


def admin_up(namespace: str) -> set[str]:
    """The interfaces of one namespace set up (``ip link set ... up``): a veth with both ends up gets carrier, a
    moment later."""
    links = json.loads(_run(["ip", "-n", namespace, "-j", "link", "show"]) or "[]")
    return {str(link["ifname"]) for link in links if "UP" in link.get("flags", ())}


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


def _daemon_pid(pidfile: Path) -> int | None:
    """The pid a pid file names while that pid still runs that daemon (a stale file's pid may belong to another
    process by now)."""
    with contextlib.suppress(ValueError, IndexError, OSError):
        pid = int(pidfile.read_text().split()[0])
        program = DAEMONS.get(pidfile.stem)
        if program is not None and Path(f"/proc/{pid}/exe").resolve() == program.resolve():
            return pid
    return None


def stop_daemon(pidfile: Path, how: signal.Signals = signal.SIGTERM) -> None:
    """SIGTERM (or ``how``) to the daemon a pid file names, if it still runs."""
    pid = _daemon_pid(pidfile)
    if pid is not None:
        with contextlib.suppress(OSError):
            os.kill(pid, how)


@dataclass(frozen=True)
class Ping:
    """One ICMP echo with DF set: from ``source`` in ``namespace`` to ``target``, ``size`` bytes of IP packet."""

    namespace: str
    source: IPv4Address
    target: IPv4Address
    size: int


def pings(jobs: Sequence[Ping], parallel: int = 32, count: int = 1) -> list[bool]:
    """Whether each echo was answered, ``parallel`` running at a time (``ping -M do``: DF set, never fragmented);
    with ``count`` > 1, whether any of that many was. A finished ping makes room for the next at once: an echo
    that must go unanswered waits out its 2 s, and should not hold up the others."""
    answered: dict[int, bool] = {}
    running: dict[int, subprocess.Popen[bytes]] = {}
    queue = list(enumerate(jobs))
    limit_s = 60 + 3 * len(jobs)  # far beyond any ping's own -W 2 per echo
    deadline = time.monotonic() + limit_s
    while queue or running:
        while queue and len(running) < parallel:
            n, j = queue.pop(0)
            running[n] = subprocess.Popen(["ip", "netns", "exec", j.namespace, "ping", "-n", "-q", "-c", str(count),
                                           "-i", "0.2", "-W", "2", "-M", "do", "-s", str(j.size - 28), "-I",
                                           str(j.source), str(j.target)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for n, p in list(running.items()):
            if p.poll() is not None:
                answered[n] = p.returncode == 0
                del running[n]
        if time.monotonic() > deadline:
            for p in running.values():
                p.kill()
                p.wait()
            raise LabError(f"{len(running)} pings still running after {limit_s} s")
        time.sleep(0.01)
    return [answered[n] for n in range(len(jobs))]


def down(state_dir: Path) -> list[str]:
    """Stop the daemons (FRR, lldpd) and delete the namespaces the state file lists (only ``fg-`` ones); the names
    removed."""
    state = state_dir / STATE
    if not state.exists():
        return []
    found = recorded(state_dir)
    namespaces = [n for n in (found[0] if found else []) if n.startswith(PREFIX)]
    existing = set(_run(["ip", "netns", "list"]).split())
    pidfiles = [p for namespace in namespaces for p in sorted((state_dir / namespace).glob("*.pid"))]
    for pidfile in pidfiles:
        stop_daemon(pidfile)
    deadline = time.monotonic() + 10  # gone when down returns: SIGKILL to a daemon still there after 10 s
    while (left := [p for p in pidfiles if _daemon_pid(p) is not None]) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pidfile in left:
        stop_daemon(pidfile, signal.SIGKILL)
    removed = []
    for namespace in namespaces:
        if namespace in existing:
            _run(["ip", "netns", "del", namespace])
            removed.append(namespace)
        shutil.rmtree(state_dir / namespace, ignore_errors=True)
    state.unlink()
    with contextlib.suppress(OSError):  # the lab's directory goes too, unless something else was put in it
        state_dir.rmdir()
    return removed
