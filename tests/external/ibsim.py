"""A small harness around ibsim (ibsim-utils 0.10), OpenSM and infiniband-diags for the external tests and
bench/opensm_bringup.py.

- ``IbSim``: boot ``ibsim -s -n NETFILE`` with a unique ``IBSIM_SOCKNAME`` (so parallel runs never share a
  simulator), node/switch/port limits raised to fit the net file, wait until it says it is ready, run clients
  with ``LD_PRELOAD=libumad2sim.so`` and the simulator's environment, and stop it by PID (``with`` block /
  ``stop()`` in a finally). Without ``-n`` and without a terminal ibsim spins at 100% CPU on its console.
- ``stage_opensm_config``: fabricgen writes OpenSM's files for the SM host, where they live in the spec's
  ``config_dir`` (``/etc/opensm``) and OpenSM logs to ``/var/log``. To run them here they are copied to a
  temporary config dir and those absolute paths are rewritten to it, then the generated ``opensm-keys.sh``
  writes the runtime config with the keys, exactly as ``ExecStartPre`` does on the SM host.
- ``run_opensm``: ``opensm -F CONF -e -o -s 0 -f LOG`` (run once: one heavy sweep, then exit). ``-o`` exits 0
  even when the routing engine or the partition file failed, so callers read the log (``OpenSmRun``).
- ``SubnetManager``: OpenSM as a daemon on one node of the simulated fabric (its own priority and port GUID, as a
  unit on an SM host starts it), so the SA answers ``saquery`` and a second one can stand by; stopped by PID.
- ``stage_ufm_config``: a stand-in UFM tree (upstream OpenSM's default opensm.conf where UFM keeps its own, and a
  ``sync_partitions_conf.sh`` that writes partitions.conf as UFM's documentation describes: UFM's Default with every
  port a full member, then partitions.conf.user_ext) into which the generated ufm-install.sh installs its files.
- infiniband-diags parsers: ``ibnetdiscover -p`` CA ports, ``smpquery pkeys``, ``saquery -g`` multicast groups,
  ``saquery PR`` path records, ``sminfo``.

Every wait is bounded: each call takes a timeout (callers pass what is left of their own deadline).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

READY = "Network simulator ready."
LIBUMAD2SIM_PATTERNS = (
    "/usr/lib/*/umad2sim/libumad2sim.so",  # Debian/Ubuntu: libumad2sim0 (pulled in by ibsim-utils)
    "/usr/lib64/umad2sim/libumad2sim.so",
    "/usr/lib/umad2sim/libumad2sim.so",
    "/usr/local/lib/umad2sim/libumad2sim.so",
)


def terminate(proc: subprocess.Popen[bytes] | None, grace_s: float) -> None:
    """SIGTERM by PID, then SIGKILL if it lingers past grace_s; nothing for a process already gone."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    except ProcessLookupError:
        pass


class HarnessError(RuntimeError):
    """The simulator or a client did not behave (did not start, exited, timed out)."""


class Deadline:
    """A time budget shared by several bounded steps: ``left()`` is the timeout for the next one."""

    def __init__(self, seconds: float, what: str = "step") -> None:
        self.seconds = seconds
        self.what = what
        self.start = time.monotonic()
        self.end = self.start + seconds

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def left(self, cap: float | None = None) -> float:
        remaining = self.end - time.monotonic()
        if remaining <= 0:
            raise HarnessError(f"{self.what}: time budget of {self.seconds:.0f} s exhausted")
        return remaining if cap is None else min(remaining, cap)


def find_libumad2sim() -> Path | None:
    """libumad2sim.so, the libibumad replacement that sends a client's MADs to ibsim instead of a kernel."""
    env = os.environ.get("FABRICGEN_LIBUMAD2SIM")
    if env and Path(env).is_file():
        return Path(env)
    for pattern in LIBUMAD2SIM_PATTERNS:
        for hit in sorted(Path("/").glob(pattern.lstrip("/"))):
            return Path(hit)
    return None


# --- net files -------------------------------------------------------------------------------------------

_HEADER = re.compile(r'^(Switch|Hca|Ca)\s+(\d+)\s+"([^"]+)"(?:\s*#\s*"([^"]*)")?')
_PORT = re.compile(r'^\[(\d+)\](?:\([0-9a-fA-F]+\))?\s+"([^"]+)"\[(\d+)\]')
_SPEED_TOKEN = re.compile(r"\b(\d+)x(NDR|XDR)\b")

# ibsim 0.10 defaults (sim.h: MAXNETNODES 2048, MAXNETSWITCHS 256, MAXNETPORTS = 256 * 36 + 2048 * 2).
DEFAULT_LIMITS = (2048, 256, 13312)


@dataclass
class NetNode:
    kind: str  # Switch, Ca (Hca is read as Ca)
    id: str
    nports: int
    description: str
    line: int  # 0-based index of the header line
    ports: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # port -> (remote id, remote port, line)


@dataclass
class NetFile:
    """The records of an ibsim/ibnetdiscover net file, enough to size ibsim and to rewire cables."""

    lines: list[str]
    nodes: dict[str, NetNode]

    @classmethod
    def parse(cls, text: str) -> NetFile:
        lines = text.splitlines()
        nodes: dict[str, NetNode] = {}
        current: NetNode | None = None
        for i, raw in enumerate(lines):
            line = raw.strip()
            if m := _HEADER.match(line):
                kind = "Switch" if m.group(1) == "Switch" else "Ca"
                current = NetNode(kind, m.group(3), int(m.group(2)), m.group(4) or m.group(3), i)
                nodes[current.id] = current
            elif (m := _PORT.match(line)) and current is not None:
                current.ports[int(m.group(1))] = (m.group(2), int(m.group(3)), i)
            elif not line:
                current = None
        return cls(lines, nodes)

    @property
    def switches(self) -> list[NetNode]:
        return [n for n in self.nodes.values() if n.kind == "Switch"]

    @property
    def cas(self) -> list[NetNode]:
        return [n for n in self.nodes.values() if n.kind == "Ca"]

    def first_ca(self) -> NetNode:
        return min(self.cas, key=lambda n: n.line)

    def by_description(self, description: str) -> NetNode:
        hits = [n for n in self.nodes.values() if n.description == description]
        if len(hits) != 1:
            raise KeyError(f"{len(hits)} net records describe {description!r}")
        return hits[0]

    def limits(self) -> tuple[int, int, int]:
        """ibsim -N/-S/-P for this file: the defaults, raised with headroom when the file needs more.

        ibsim counts a switch as nports + 1 ports (port 0 is its SMA) and a CA as nports ports.
        """
        nodes = len(self.nodes)
        switches = len(self.switches)
        ports = sum(n.nports + (1 if n.kind == "Switch" else 0) for n in self.nodes.values())
        def fit(need: int, default: int) -> int:
            return default if need <= default else need + need // 8 + 16

        return fit(nodes, DEFAULT_LIMITS[0]), fit(switches, DEFAULT_LIMITS[1]), fit(ports, DEFAULT_LIMITS[2])

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def swap_far_ends(self, a: tuple[str, int], b: tuple[str, int]) -> None:
        """Swap the far ends of the cables at ports ``a`` and ``b`` (node id, port), on all four port lines.

        Cable a: A[pa] <-> X[px]; cable b: B[pb] <-> Y[py]. After the swap A[pa] <-> Y[py] and B[pb] <-> X[px]:
        the remainder of A's and B's port lines (remote id, remote port, comment) trade places, and so do X's
        and Y's, so both ends of every link still agree (ibsim refuses a file where they do not).
        """
        (a_id, a_port), (b_id, b_port) = a, b
        x_id, x_port, _ = self.nodes[a_id].ports[a_port]
        y_id, y_port, _ = self.nodes[b_id].ports[b_port]
        for (n1, p1), (n2, p2) in (((a_id, a_port), (b_id, b_port)), ((x_id, x_port), (y_id, y_port))):
            i1, i2 = self.nodes[n1].ports[p1][2], self.nodes[n2].ports[p2][2]
            head1, tail1 = _split_port_line(self.lines[i1])
            head2, tail2 = _split_port_line(self.lines[i2])
            self.lines[i1], self.lines[i2] = head1 + tail2, head2 + tail1
        reparsed = NetFile.parse(self.text())
        self.nodes = reparsed.nodes


def _split_port_line(line: str) -> tuple[str, str]:
    """``[3]`` (plus an optional ``(guid)``) and the rest of a port line."""
    m = re.match(r"^\s*\[\d+\](?:\([0-9a-fA-F]+\))?", line)
    if not m:
        raise ValueError(f"not a port line: {line!r}")
    return line[: m.end()], line[m.end():]


def speeds_for_ibsim(text: str, speed: str = "HDR") -> str:
    """Rewrite NDR/XDR link tokens (``4xNDR``) to ``speed`` for ibsim 0.10.

    ibsim 0.10 knows SDR..HDR: an unknown token is skipped with ``cannot parse speed / invalid speed`` and the
    port comes up at its default, SDR, so the fabric would come up (and be discovered) at 4xSDR. NDR support
    arrived in ibsim 0.11. Width and every other field are left as planned; ``fabricgen verify --speed-as HDR``
    expects the same substitution.
    """
    return _SPEED_TOKEN.sub(lambda m: f"{m.group(1)}x{speed}", text)


# --- the simulator ---------------------------------------------------------------------------------------


class IbSim:
    """One ibsim process on one net file, with its own socket name and work dir."""

    def __init__(self, net: Path, workdir: Path, *, host: str | None = None,
                 limits: tuple[int, int, int] | None = None) -> None:
        self.net = net
        self.workdir = workdir
        self.sockname = f"fgsim-{uuid.uuid4().hex[:12]}"
        self.host = host
        self.limits = limits or NetFile.parse(net.read_text()).limits()
        self.proc: subprocess.Popen[bytes] | None = None
        self.stdout_path = workdir / "ibsim.out"
        self.stderr_path = workdir / "ibsim.err"
        self.osm_dir = workdir / "osm"
        self.lib = find_libumad2sim()
        self.boot_seconds = 0.0

    # lifecycle
    def start(self, timeout: float = 30.0) -> IbSim:
        ibsim = shutil.which("ibsim")
        if not ibsim:
            raise HarnessError("ibsim is not installed")
        if self.lib is None:
            raise HarnessError("libumad2sim.so not found (Debian: libumad2sim0)")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.osm_dir.mkdir(exist_ok=True)
        nodes, switches, ports = self.limits
        argv = [ibsim, "-s", "-n", "-N", str(nodes), "-S", str(switches), "-P", str(ports), str(self.net)]
        env = {**os.environ, "IBSIM_SOCKNAME": self.sockname}
        t0 = time.monotonic()
        with self.stdout_path.open("wb") as out, self.stderr_path.open("wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                         cwd=self.workdir, start_new_session=True)
        end = t0 + timeout
        try:
            while True:
                if READY in self.stdout_path.read_text(errors="replace"):
                    break
                if self.proc.poll() is not None:
                    raise HarnessError(f"ibsim exited with {self.proc.returncode} before it was ready:\n"
                                       f"{self.log()}")
                if time.monotonic() > end:
                    raise HarnessError(f"ibsim not ready after {timeout:.0f} s:\n{self.log()}")
                time.sleep(0.05)
        except BaseException:
            self.stop()
            raise
        self.boot_seconds = time.monotonic() - t0
        return self

    def stop(self) -> None:
        """Stop ibsim by its PID: SIGTERM, then SIGKILL if it lingers. Safe to call twice."""
        proc, self.proc = self.proc, None
        terminate(proc, grace_s=5)

    def __enter__(self) -> IbSim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        out = self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""
        err = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return out + err

    def warnings(self) -> list[str]:
        """ibsim's complaints about the net file (``ibwarn:``/``ibpanic:`` lines on stderr)."""
        err = self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""
        return [line for line in err.splitlines() if line.startswith(("ibwarn", "ibpanic"))]

    # clients
    def env(self, host: str | None = None) -> dict[str, str]:
        """The environment of a client: LD_PRELOAD libumad2sim, the socket name, the node it attaches to."""
        assert self.lib is not None
        env = {**os.environ, "LD_PRELOAD": str(self.lib), "IBSIM_SOCKNAME": self.sockname,
               "OSM_TMP_DIR": str(self.osm_dir), "OSM_CACHE_DIR": str(self.osm_dir)}
        attach = host or self.host
        if attach:
            env["SIM_HOST"] = attach  # the SM/client port is this node's (else the file's first node)
        return env

    def run(self, argv: Sequence[str], *, timeout: float, host: str | None = None, check: bool = True,
            extra_env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a client (opensm, ibnetdiscover, smpquery...) attached to the simulator, bounded by ``timeout``."""
        if not self.running:
            raise HarnessError(f"ibsim is not running:\n{self.log()}")
        env = self.env(host)
        env.update(extra_env or {})
        try:
            cp = subprocess.run(list(argv), env=env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"{argv[0]} did not finish within {timeout:.0f} s (ibsim running: "
                               f"{self.running})") from e
        if check and cp.returncode != 0:
            raise HarnessError(f"{' '.join(argv)} exited {cp.returncode}:\n{cp.stdout[-2000:]}{cp.stderr[-2000:]}")
        return cp


@contextmanager
def booted(net: Path, workdir: Path, *, host: str | None = None, timeout: float = 30.0) -> Iterator[IbSim]:
    """``with booted(net, dir) as sim:`` ibsim runs inside the block and is stopped by PID however it ends."""
    sim = IbSim(net, workdir, host=host)
    try:
        sim.start(timeout=timeout)
        yield sim
    finally:
        sim.stop()


# --- OpenSM ----------------------------------------------------------------------------------------------

_LOG_TIME = re.compile(r"^\w{3} +\d+ (\d\d):(\d\d):(\d\d) (\d{6}) ")


@dataclass
class OpenSmRun:
    returncode: int
    log: str
    stdout: str
    seconds: float  # wall clock of `opensm -o`

    def lines(self, needle: str) -> list[str]:
        return [line for line in self.log.splitlines() if needle in line]

    @property
    def subnet_up(self) -> bool:
        return bool(self.lines("SUBNET UP"))

    def errors(self) -> list[str]:
        """Error-level log lines (OpenSM marks them 0x01)."""
        return [line for line in self.log.splitlines() if "] 0x01 -> " in line]

    def seconds_to(self, needle: str) -> float | None:
        """Seconds from OpenSM's first log line to the first line containing ``needle`` (log timestamps)."""
        stamps = [(t, line) for line in self.log.splitlines() if (t := _stamp(line)) is not None]
        if not stamps:
            return None
        start = stamps[0][0]
        for t, line in stamps:
            if needle in line:
                delta = t - start
                return delta + 86400 if delta < 0 else delta
        return None


def _stamp(line: str) -> float | None:
    m = _LOG_TIME.match(line)
    if not m:
        return None
    h, mi, s, us = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s + us / 1e6


def run_opensm(sim: IbSim, conf: Path, *, timeout: float, host: str | None = None) -> OpenSmRun:
    """``opensm -F conf -e -o -s 0 -f LOG``: one heavy sweep (discovery, LIDs, routing, partitions, QoS), exit."""
    opensm = shutil.which("opensm")
    if not opensm:
        raise HarnessError("opensm is not installed")
    log = sim.workdir / f"opensm-{uuid.uuid4().hex[:6]}.log"
    t0 = time.monotonic()
    cp = sim.run([opensm, "-F", str(conf), "-e", "-o", "-s", "0", "-f", str(log)], timeout=timeout, host=host,
                 check=False)
    seconds = time.monotonic() - t0
    text = log.read_text(errors="replace") if log.exists() else ""
    return OpenSmRun(cp.returncode, text, cp.stdout + cp.stderr, seconds)


@dataclass
class StagedConfig:
    config_dir: Path  # the copied files, /etc/opensm rewritten to here
    conf_in: Path  # staged opensm.conf (key placeholders)
    conf_out: Path  # runtime config written by opensm-keys.sh
    keys_script: Path
    original_config_dir: str  # what the generated files say (/etc/opensm)
    keys_output: str = ""  # stdout + stderr of opensm-keys.sh


def _local_logs(text: str, logs: Path) -> str:
    """OpenSM's log and dumps to a writable dir, the log flushed line by line (a daemon's log is read while it
    runs; ``force_log_flush``)."""
    text = re.sub(r"^log_file\s+\S+", f"log_file {logs}/opensm.log", text, flags=re.M)
    text = re.sub(r"^force_log_flush\s+\S+", "force_log_flush TRUE", text, flags=re.M)
    return re.sub(r"^dump_files_dir\s+\S+", f"dump_files_dir {logs}/", text, flags=re.M)


def stage_opensm_config(fabric_dir: Path, workdir: Path) -> StagedConfig:
    """Copy fabricgen's OpenSM files to ``workdir/etc-opensm`` and point every absolute path in them there.

    The generated opensm.conf names its files under the spec's config_dir (``partition_config_file
    /etc/opensm/partitions.conf``...) and logs/dumps under /var/log: right on the SM host, not writable here.
    Both are rewritten (opensm.conf and opensm-keys.sh, whose key files live in config_dir too); nothing else
    in the files changes.
    """
    conf = (fabric_dir / "opensm.conf").read_text()
    m = re.search(r"^partition_config_file\s+(/\S*)/[^/\s]+$", conf, re.M)
    original = m.group(1) if m else "/etc/opensm"
    cfg = workdir / "etc-opensm"
    logs = workdir / "var-log"
    cfg.mkdir(parents=True, exist_ok=True)
    logs.mkdir(exist_ok=True)
    for f in fabric_dir.iterdir():
        if f.is_file():
            shutil.copy2(f, cfg / f.name)

    def rewrite(text: str) -> str:
        text = text.replace(f"{original}/", f"{cfg}/")
        return _local_logs(text, logs)

    conf_in = cfg / "opensm.conf"
    conf_in.write_text(rewrite(conf))
    script = cfg / "opensm-keys.sh"
    if script.exists():
        script.write_text(rewrite(script.read_text()))
        script.chmod(0o700)
    return StagedConfig(cfg, conf_in, workdir / "run" / "opensm.conf", script, original)


def write_runtime_config(staged: StagedConfig, env: Mapping[str, str], *, timeout: float = 20.0) -> None:
    """Run the generated opensm-keys.sh (OPENSM_CONF_IN/OPENSM_CONF_OUT + the key sources) like ExecStartPre."""
    if not staged.keys_script.exists():
        shutil.copy2(staged.conf_in, staged.conf_out)
        return
    run_env = {**os.environ, **env, "OPENSM_CONF_IN": str(staged.conf_in), "OPENSM_CONF_OUT": str(staged.conf_out)}
    cp = subprocess.run(["bash", str(staged.keys_script)], env=run_env, capture_output=True, text=True,
                        timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    staged.keys_output = cp.stdout + cp.stderr
    if cp.returncode != 0:
        raise HarnessError(f"opensm-keys.sh exited {cp.returncode}: {cp.stderr.strip()}")


# --- infiniband-diags output -----------------------------------------------------------------------------

_P_CA = re.compile(r"^CA\s+(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]+)\s.*\(\s*'([^']*)'\s+-\s+'")


def ca_ports(ibnetdiscover_p: str) -> dict[str, tuple[int, int]]:
    """From ``ibnetdiscover -p``: HCA node description -> (LID, port GUID), for connected CA ports."""
    out: dict[str, tuple[int, int]] = {}
    for line in ibnetdiscover_p.splitlines():
        if m := _P_CA.match(line.strip()):
            out[m.group(4)] = (int(m.group(1)), int(m.group(3), 16))
    return out


def pkey_table(smpquery_pkeys: str) -> list[int]:
    """The non-zero P_Keys of ``smpquery pkeys <lid>`` (lines ``   0: 0x7fff 0x8001 ...``)."""
    keys: list[int] = []
    for line in smpquery_pkeys.splitlines():
        head, sep, rest = line.partition(":")
        if sep and head.strip().isdigit():
            keys.extend(int(tok, 16) for tok in rest.split() if tok.startswith("0x") and int(tok, 16))
    return keys


# --- OpenSM as a daemon ------------------------------------------------------------------------------------------

class SubnetManager:
    """``opensm -F CONF -e -s 0 -f LOG [-p PRIORITY] [-g GUID]`` attached to ``host`` of a running simulator, as a
    daemon: its SA answers queries and, with a lower priority, it stands by for another SM. Stopped by PID."""

    def __init__(self, sim: IbSim, conf: Path, *, host: str, priority: int | None = None,
                 guid: str | None = None) -> None:
        self.sim = sim
        self.conf = conf
        self.host = host
        self.priority = priority
        self.guid = guid
        self.log_path = sim.workdir / f"opensm-{host}-{uuid.uuid4().hex[:6]}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.seconds = 0.0

    def start(self, *, timeout: float, until: Sequence[str] = ("SUBNET UP",)) -> SubnetManager:
        """Start and wait until the log shows one of ``until`` (SUBNET UP for a master, STANDBY for a standby)."""
        opensm = shutil.which("opensm")
        if not opensm:
            raise HarnessError("opensm is not installed")
        argv = [opensm, "-F", str(self.conf), "-e", "-s", "0", "-f", str(self.log_path)]
        argv += ["-p", str(self.priority)] if self.priority is not None else []
        argv += ["-g", self.guid] if self.guid else []
        t0 = time.monotonic()
        self.proc = subprocess.Popen(argv, env=self.sim.env(self.host), cwd=self.sim.workdir,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        try:
            while not any(word in self.log() for word in until):
                if self.proc.poll() is not None:
                    raise HarnessError(f"opensm on {self.host} exited with {self.proc.returncode}:\n"
                                       f"{self.log()[-3000:]}")
                if time.monotonic() - t0 > timeout:
                    raise HarnessError(f"opensm on {self.host}: none of {list(until)} after {timeout:.0f} s:\n"
                                       f"{self.log()[-3000:]}")
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise
        self.seconds = time.monotonic() - t0
        return self

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def run(self) -> OpenSmRun:
        """The log so far as an OpenSmRun, for the same checks as a one-shot run."""
        return OpenSmRun(0, self.log(), "", self.seconds)

    def stop(self) -> None:
        """SIGTERM by PID, then SIGKILL if it lingers. Safe to call twice."""
        proc, self.proc = self.proc, None
        terminate(proc, grace_s=10)


# --- UFM Enterprise stand-in -------------------------------------------------------------------------------------

# UFM user manual, "Appendix - Partitioning": UFM generates partitions.conf with the SMs, switches and (by default)
# every HCA port full members of Default, and merges partitions.conf.user_ext into it (sync_partitions_conf.sh).
UFM_DEFAULT_RULE = "management=0x7fff, ipoib, defmember=full : ALL=full, ALL_SWITCHES=full, SELF=full ;"
_SYNC_SCRIPT = """#!/usr/bin/env bash
# Stand-in for UFM's /opt/ufm/scripts/sync_partitions_conf.sh: UFM's Default, then the user extension.
set -euo pipefail
conf="$(dirname "$0")/../files/conf"
{{ printf '%s\\n' '{rule}'; cat "$conf/partitions.conf.user_ext"; }} > "$conf/opensm/partitions.conf"
"""


@dataclass
class StagedUfm:
    root: Path  # UFM_ROOT: holds opt/ufm/files/conf/...
    conf: Path  # UFM's opensm.conf, as ufm-install.sh left it, /opt/ufm rewritten to root
    install_output: str
    install_code: int


def stage_ufm_config(fabric_dir: Path, workdir: Path, key_env: Mapping[str, str], defaults: Path, *,
                     timeout: float = 30.0) -> StagedUfm:
    """A stand-in UFM tree, the generated ufm-install.sh run into it, and the SM's config made runnable here.

    UFM's own opensm.conf is NVIDIA OpenSM's; here upstream OpenSM's default file (``defaults``) stands in for it,
    so the settings ufm-install.sh merges are tested on a file of that format. The installed opensm.conf names
    /opt/ufm paths; they are rewritten to the stand-in tree, partition_config_file is set to UFM's partitions.conf
    as UFM's own opensm.conf names it, and NVIDIA's adaptive-routing engines (ar_ftree, ar_updn) become the upstream
    engines they extend (ftree, updn); upstream ignores NVIDIA-only settings (virt_enabled, m_key_per_port).
    """
    root = workdir / "ufm-root"
    sm_dir = root / "opt/ufm/files/conf/opensm"
    scripts = root / "opt/ufm/scripts"
    sm_dir.mkdir(parents=True, exist_ok=True)
    scripts.mkdir(parents=True, exist_ok=True)
    shutil.copy2(defaults, sm_dir / "opensm.conf")
    # UFM's gv.cfg and sharp_am.cfg, which ufm-install.sh edits for SHARP: stand-ins (UFM's own are not public)
    (sm_dir.parent / "gv.cfg").write_text("[Sharp]\nsharp_enabled = false\n")
    (sm_dir.parent / "sharp").mkdir(exist_ok=True)
    (sm_dir.parent / "sharp" / "sharp_am.cfg").write_text("ib_qpc_pkey 0xffff\n")
    sync = scripts / "sync_partitions_conf.sh"
    sync.write_text(_SYNC_SCRIPT.format(rule=UFM_DEFAULT_RULE))
    sync.chmod(0o755)
    here = workdir / "ufm-files"
    shutil.copytree(fabric_dir, here, dirs_exist_ok=True)
    cp = subprocess.run(["bash", str(here / "ufm-install.sh")], env={**os.environ, **key_env, "UFM_ROOT": str(root)},
                        capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)
    logs = workdir / "var-log"
    logs.mkdir(exist_ok=True)
    text = (sm_dir / "opensm.conf").read_text().replace("/opt/ufm/", f"{root}/opt/ufm/")
    # Upstream has no adaptive routing: NVIDIA's ar_ftree/ar_updn run here as the static engines they extend.
    text = re.sub(r"^(routing_engine\s+.*)$", lambda m: re.sub(r"\bar_(ftree|updn)\b", r"\1", m.group(1)), text,
                  flags=re.M)
    text = re.sub(r"^partition_config_file\s+\S+", f"partition_config_file {sm_dir}/partitions.conf", text,
                  flags=re.M)
    conf = workdir / "ufm-opensm.conf"
    conf.write_text(_local_logs(text, logs))
    return StagedUfm(root, conf, cp.stdout + cp.stderr, cp.returncode)


# --- more infiniband-diags output --------------------------------------------------------------------------------

@dataclass(frozen=True)
class McGroup:
    mgid: str
    mlid: int
    mtu: int  # MTU code (selector bits cleared)
    rate: int  # rate code
    pkey: int
    sl: int


def _records(text: str, title: str) -> list[dict[str, str]]:
    """``saquery`` dumps: one dict per '<title> dump:' block, field name -> value ('....' leaders dropped)."""
    out: list[dict[str, str]] = []
    for line in text.splitlines():
        if line.strip() == f"{title} dump:":
            out.append({})
        elif out and (m := re.match(r"^\s*([A-Za-z_]+)\.+(\S.*)$", line)):
            out[-1][m.group(1)] = m.group(2).strip()
    return out


def mc_groups(saquery_g: str) -> list[McGroup]:
    """``saquery -g``: the multicast groups the SA holds."""
    return [McGroup(r["MGID"], int(r["Mlid"], 16), int(r["Mtu"], 16) & 0x3F, int(r["Rate"], 16) & 0x3F,
                    int(r["pkey"], 16), int(r["SL"], 16)) for r in _records(saquery_g, "MCMemberRecord group")]


def path_records(saquery_pr: str) -> list[dict[str, int]]:
    """``saquery PR``: slid, dlid, pkey and sl of every path record returned."""
    return [{k: int(r[k], 0) for k in ("slid", "dlid", "pkey", "sl")} for r in _records(saquery_pr, "PathRecord")]


def sm_state(sminfo: str) -> tuple[int, str]:
    """``sminfo [lid]``: the SM's priority and state (SMINFO_MASTER, SMINFO_STANDBY ...)."""
    m = re.search(r"priority (\d+) state \d+ (\S+)", sminfo)
    if not m:
        raise HarnessError(f"unexpected sminfo output: {sminfo!r}")
    return int(m.group(1)), m.group(2)
