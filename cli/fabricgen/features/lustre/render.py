"""Target ``lustre``: the Lustre client of every node profile that mounts a file system of the ``lustre`` section,
and the per-file-system files for the storage administrators.

Per node profile, under ``hosts/<profile>/lustre/``:
- ``lnet.conf``: YAML for ``lnetctl import``: one net per LNet network, one local NI per interface (several =
  multi-rail), the network's tunables and each NI's LND tunables (on RoCE the ToS of the lossless class);
- ``lnet.modprobe.conf`` and ``fabricgen-ko2iblnd.conf``: the same networks and o2ib values as module options (the
  latter beside the Lustre package's own /etc/modprobe.d/ko2iblnd.conf, which holds its ko2iblnd-probe line);
- ``<escaped mount point>.mount`` per file system (systemd unit after lnet.service and network-online.target)
  and ``fstab`` (the same mounts as fstab lines): use one or the other;
- ``lustre-client-tune.sh``: checks the node's NIDs against the address plan, then ``lctl set_param`` where a
  value differs (idempotent, ``--dry-run``; ``LCTL``/``NODE`` overrides for tests);
- ``mount.<fsname>.params``: the same parameters for ``/etc/lustre/`` on Lustre 2.17+ clients, applied at mount.

Per Lustre server profile (a storage profile whose nodes serve a file system), under ``hosts/<profile>/lustre/``:
``lnet.conf``, ``lnet.modprobe.conf`` and ``fabricgen-ko2iblnd.conf`` with one NI per storage port (multi-rail, as the
clients) and the clients' LNet values of each network (o2iblnd takes the smaller queue depth of two peers only
after refusing the larger one: kiblnd_passive_connect in lnet/klnds/o2iblnd/o2iblnd_cb.c).
Per server of a file system with ``targets``: ``hosts/<node>/lustre/format-targets.sh`` (mkfs.lustre or
tunefs.lustre of the targets it formats, checks of those it backs up; ``--dry-run``) and ``targets/``: a mount unit
and fstab line per target of its pair under /srv/lustre, and per MGT its MDTs and OSTs use a lustre-wait-mgs unit
(``lctl ping`` of the MGS's NIDs) with its script.

Per file system, under ``storage/lustre/<fsname>/``: ``mgs-set_param.sh`` (``lctl set_param -P`` on the MGS)
and ``setstripe.sh`` (``lfs setstripe`` of each directory layout).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, NETDEV, checked
from fabricgen.core.templating import render_template
from fabricgen.features.lustre.build import format_size, mount_unit_name, tuning_data
from fabricgen.features.lustre.servers import mgs_nids, mgt_of
from fabricgen.model.lustre import LnetSettings, LustreComponent, LustreFs, LustreLayout, LustreTarget
from fabricgen.model.nodes import NodeProfile
from fabricgen.model.topology import Topology

FSNAME = re.compile(r"^[A-Za-z0-9_]{1,8}$")
UNIT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.mount$")  # an escaped path without \x escapes
KINDS = ("mgt", "mdt", "ost")  # the order targets start in
# fabricgen's own modprobe.d file: lustre.spec.in installs /etc/modprobe.d/ko2iblnd.conf as %config(noreplace) with
# "install ko2iblnd /usr/sbin/ko2iblnd-probe" (which loads ko2iblnd with every "options ko2iblnd" line), so a file of
# that name would drop the probe line and leave a .rpmnew at each upgrade.
KO2IBLND_CONF = "fabricgen-ko2iblnd.conf"


@dataclass(frozen=True)
class Net:
    """One LNet network of a profile, for lnet.conf and the module options."""

    network: str
    fabric: str
    interfaces: tuple[str, ...]
    tunables: tuple[tuple[str, int], ...]
    lnd_tunables: tuple[tuple[str, int], ...]
    settings: LnetSettings
    filesystems: tuple[str, ...]
    tos: int | None
    dscp: int | None
    use: str = "used by"  # clients use a file system, servers serve it
    server_values: tuple[str, ...] = ()  # the NI-wide values the servers set for themselves (tuning.servers)


@dataclass(frozen=True)
class LayoutView:
    path: str
    path_q: str
    options_q: str
    summary: str


def _mounted(topology: Topology) -> dict[str, tuple[NodeProfile, list[LustreFs]]]:
    """Per node profile (sorted) the file systems its groups mount, in spec order."""
    profiles = {g.pattern: topology.cluster.profiles[g.profile] for g in topology.cluster.groups}
    out: dict[str, tuple[NodeProfile, list[LustreFs]]] = {}
    for fs in topology.cluster.lustre:
        for profile in dict.fromkeys(profiles[g] for g in fs.groups):
            out.setdefault(profile.name, (profile, []))[1].append(fs)
    return {name: out[name] for name in sorted(out)}


def _nets(topology: Topology, profile: str, filesystems: list[LustreFs],
          server: NodeProfile | None = None) -> list[Net]:
    """The LNet networks of a client profile (its interfaces of each file system) or of a ``server`` profile
    (every port of it on the file system's fabric), with the file system's LNet values."""
    fabrics = {f.fabric.name: f.fabric for f in topology.fabrics}
    nets: dict[str, Net] = {}
    for fs in filesystems:
        known = nets.get(fs.lnet.network)
        if known is not None:  # build checked that file systems on one network agree
            nets[fs.lnet.network] = Net(**{**known.__dict__, "filesystems": (*known.filesystems, fs.fsname)})
            continue
        qos = fabrics[fs.fabric].qos
        lnet = fs.lnet if server is None else fs.serving_lnet
        tos = dict(lnet.lnd_tunables).get("tos")
        netdevs = fs.interfaces[profile] if server is None else tuple(dict.fromkeys(
            server.interface(nic) for nic in server.nics(fabrics[fs.fabric].role.nic_role)))
        interfaces = tuple(checked(NETDEV, n, f"profile {profile}: netdev") for n in netdevs)
        nets[lnet.network] = Net(lnet.network, fs.fabric, interfaces, lnet.tunables, lnet.lnd_tunables,
                                 lnet, (fs.fsname,), tos, qos.lossless.dscp if qos and tos is not None else None,
                                 "used by" if server is None else "serving", tuple(
                                     k for (k, v), (_, mine) in zip(fs.lnet.module_options or fs.lnet.tunables,
                                                                     lnet.module_options or lnet.tunables, strict=True)
                                     if v != mine))
    return list(nets.values())


def _node_nids(topology: Topology, profile: NodeProfile, filesystems: list[LustreFs], nets: list[Net]
               ) -> list[tuple[str, list[str]]]:
    """Each node of the profile that mounts a file system, with its NIDs from the address plan, in net order."""
    fabrics = {f.fabric.name: f.fabric for f in topology.fabrics}
    groups = {g for fs in filesystems for g in fs.groups}
    addresses = {}
    for net in nets:
        plan = topology.addresses[net.fabric]
        addresses[net.network] = {(node, port): ip for subnet in plan.hosts for node, port, ip in subnet.hosts}
    out = []
    for node in topology.cluster.nodes:
        if node.group not in groups or node.profile.name != profile.name:
            continue
        nids = []
        for net in nets:
            ports = {nic.netdev: nic.index + 1 for nic in profile.nics(fabrics[net.fabric].role.nic_role)}
            for netdev in net.interfaces:
                ip = addresses[net.network].get((node.name, ports[netdev]))
                if ip is None:
                    raise ValueError(f"{node.name} {netdev}: no address in the plan of fabric {net.fabric}")
                nids.append(f"{ip}@{net.network}")
        out.append((checked(DEVICE_NAME, node.name, "node name"), nids))
    return out


def _module_options(nets: list[Net]) -> tuple[str, list[str]]:
    o2ib = [n for n in nets if n.settings.lnd == "o2ib"]
    options = " ".join(f"{k}={v}" for k, v in o2ib[0].settings.module_options)
    why = [f"LNet network {o2ib[0].network} over fabric {o2ib[0].fabric}: credits sized for the fabric's link speed;",
           "fmr_pool_size at least ntx/4, as o2iblnd's own parameter description asks (o2iblnd_modparams.c)."]
    if o2ib[0].server_values:
        why.append(f"{', '.join(o2ib[0].server_values)}: the servers' own (tuning.servers): a server's NI sends to "
                   "every client; the per-connection values are the clients'.")
    if o2ib[0].tos is not None:
        why.append(f"tos={o2ib[0].tos}: RDMA connections carry DSCP {o2ib[0].dscp}, the fabric's lossless class "
                   "(Lustre 2.15+).")
    why += [f"Network {n.network} ({n.fabric}) takes its own values from lnet.conf." for n in o2ib[1:]]
    return options, why


def _client_artifacts(topology: Topology, source: str, name: str, profile: NodeProfile,
                      filesystems: list[LustreFs]) -> list[Artifact]:
    base = f"hosts/{checked(IDENTIFIER, name, 'profile name')}/lustre"
    nets = _nets(topology, name, filesystems)
    common = {"profile": name, "source": source}
    out = _lnet_artifacts(base, nets, common)
    lines = []
    for fs in filesystems:
        checked(FSNAME, fs.fsname, "fsname")
        unit = checked(UNIT, mount_unit_name(fs.mountpoint), "mount unit")
        options = ",".join(fs.mount_options)
        out.append(Artifact(f"{base}/{unit}", render_template("lustre/client.mount.j2", fs=fs, unit=unit,
                                                              options=options, **common)))
        lines.append(f"{fs.mgs_spec} {fs.mountpoint} lustre {options},x-systemd.requires=lnet.service 0 0")
        out.append(Artifact(f"{base}/mount.{fs.fsname}.params",
                            "".join(f"{t.param}={t.value}\n" for t in fs.client).encode()))
    out.append(Artifact(f"{base}/fstab", render_template("lustre/fstab.j2", lines=lines, **common)))
    settings = [(shlex.quote(t.param), shlex.quote(str(t.value))) for fs in filesystems for t in fs.client]
    out.append(Artifact(f"{base}/lustre-client-tune.sh", render_template(
        "lustre/lustre-client-tune.sh.j2", filesystems=filesystems, settings=settings,
        nodes=_node_nids(topology, profile, filesystems, nets), **common), 0o755))
    return out


def _lnet_artifacts(base: str, nets: list[Net], common: dict[str, str]) -> list[Artifact]:
    """lnet.conf for lnetctl import, and the same networks and o2ib values as module options."""
    out = [
        Artifact(f"{base}/lnet.conf", render_template("lustre/lnet.conf.j2", nets=nets, **common)),
        Artifact(f"{base}/lnet.modprobe.conf", render_template(
            "lustre/lnet.modprobe.conf.j2", networks=",".join(f"{n.network}({','.join(n.interfaces)})" for n in nets),
            **common)),
    ]
    if any(n.settings.lnd == "o2ib" for n in nets):
        options, why = _module_options(nets)
        out.append(Artifact(f"{base}/{KO2IBLND_CONF}", render_template("lustre/ko2iblnd.conf.j2", options=options,
                                                                     why=why, **common)))
    return out


@dataclass(frozen=True)
class TargetView:
    """One target in a server's script: what it is, and the quoted words of its ``format`` or ``partner`` line."""

    label: str
    device: str
    role: str
    pair: str
    mgs: str
    first: bool
    label_q: str
    device_q: str
    mgsnode_q: str
    failover_q: str
    options_q: str
    first_q: str
    partner_q: str
    kind: str
    where: str  # the target's mount point on the servers: /srv/lustre/mgt, /srv/lustre/<fsname>_ost<n>
    unit: str  # its systemd mount unit
    mgs_wait: str  # the unit waiting for its MGS ("" for the MGT)


@dataclass(frozen=True)
class MgsWait:
    """A server's lustre-wait-mgs unit for one MGT: the MGS NIDs of the pair's other servers to ``lctl ping`` and, on
    a server of the MGT pair, its own MGT mount (then the MGS is here)."""

    unit: str
    filesystems: tuple[str, ...]
    nids: tuple[str, ...]
    local_unit: str
    local_where: str


def target_where(fs: LustreFs, target: LustreTarget) -> str:
    """A target's mount point: one flat directory per target under the servers' target root, so none lies under
    another mount (a file system named mgt included)."""
    root = tuning_data()["servers"]["target_root"]
    return f"{root}/mgt" if target.kind == "mgt" else f"{root}/{fs.fsname}_{target.kind}{target.index}"


def _target_view(fs: LustreFs, target: LustreTarget, node: str, nids: dict[str, tuple[str, ...]],
                 mgs_wait: str) -> TargetView:
    """``nids``: each server's NIDs for --servicenode (the MGT's on every network of the file systems it serves).
    --mgsnode takes the mount's MGS (nodes ':'-separated, NIDs ','), which check_mgs proved is the MGT pair's."""
    label = target.label(fs.fsname)
    first, second = target.servers
    mgs = "" if target.kind == "mgt" else ":".join(",".join(n) for n in fs.mgs)
    failover = ":".join(",".join(nids[s]) for s in target.servers)
    options = ["--mgs"] if target.kind == "mgt" else [f"--{target.kind}", f"--fsname={fs.fsname}",
                                                      f"--index={target.index}"]
    options += [*(f"--param={p}" for p in target.params),
                *([f"--mkfsoptions={target.mkfsoptions}"] if target.mkfsoptions else [])]
    role = (f"formatted here, backed up by {second}" if node == first else f"backed up here, formatted by {first}")
    where = target_where(fs, target)
    return TargetView(label, target.device, role, f"{first} ({','.join(nids[first])}), {second} "
                      f"({','.join(nids[second])})", mgs, node == first, shlex.quote(label),
                      shlex.quote(target.device), shlex.quote(mgs), shlex.quote(failover),
                      " ".join(shlex.quote(o) for o in options), shlex.quote(first), shlex.quote(second),
                      target.kind, where, checked(UNIT, mount_unit_name(where), "mount unit"), mgs_wait)


def _wait_unit(owner: LustreFs) -> str:
    """The lustre-wait-mgs unit of the MGT that ``owner`` declares."""
    return f"lustre-wait-mgs-{checked(FSNAME, owner.fsname, 'fsname')}.service"


def _mgs_wait(node: str, owner: LustreFs, mgt: LustreTarget, filesystems: list[LustreFs]) -> MgsWait:
    """The wait of server ``node`` for the MGS of ``mgt`` (declared by ``owner``) that ``filesystems`` mount: the
    NIDs those mounts name, but this server's own (which answer lctl ping as soon as its LNet is up)."""
    nids = [nid for fs in filesystems for server, node_nids in zip(mgt.servers, mgs_nids(
        owner, mgt, fs.lnet.network), strict=True) if server != node for nid in node_nids]
    local = node in mgt.servers
    where = target_where(owner, mgt)
    return MgsWait(_wait_unit(owner),
                   tuple(fs.fsname for fs in filesystems), tuple(dict.fromkeys(nids)),
                   checked(UNIT, mount_unit_name(where), "mount unit") if local else "", where if local else "")


def _target_mounts(node: str, views: list[TargetView], waits: list[MgsWait], source: str) -> list[Artifact]:
    """The server's mount units and fstab lines of its targets, as a site without HA software runs them: the
    targets it serves first mount at boot, MGT before MDTs before OSTs (the start order of the Lustre wiki's
    "Starting and Stopping Lustre Services"), each MDT and OST after lustre-wait-mgs found its MGS or gave up (no
    unit of this server can order one on another; a registered target starts without the MGS, so it only Wants
    it); its partner's only by hand, once the partner is down (MMP refuses a second mount while one is active).
    The start timeout covers a first registration (tuning.yaml ``servers``)."""
    data = tuning_data()["servers"]
    timeout = data["obd_timeout_s"] * data["mount_timeout_obd_timeouts"]
    base = f"hosts/{node}/lustre/targets"
    out, lines = [], []
    for i, view in enumerate(views):
        before = [v.unit for v in views[:i] if KINDS.index(v.kind) < KINDS.index(view.kind)]
        out.append(Artifact(f"{base}/{view.unit}", render_template(
            "lustre/target.mount.j2", node=node, target=view, after=before, timeout=timeout, source=source)))
        after = f"x-systemd.after={view.mgs_wait}," if view.mgs_wait else ""  # the wait unit is enabled itself
        lines.append(f"{view.device} {view.where} lustre {'' if view.first else 'noauto,'}_netdev,"
                     f"x-systemd.requires=lnet.service,{after}x-systemd.mount-timeout={timeout} 0 0")
    for wait in waits:
        args = [*(("--mounted", wait.local_where) if wait.local_where else ()), "--wait", str(data["mgs_wait_s"]),
                "--interval", str(data["mgs_ping_interval_s"]), *wait.nids]
        out.append(Artifact(f"{base}/{wait.unit}", render_template(
            "lustre/wait-mgs.service.j2", node=node, wait=wait, args=" ".join(args), wait_s=data["mgs_wait_s"],
            source=source,
            timeout=data["mgs_wait_s"] + data["mgs_ping_interval_s"] * (len(wait.nids) + 1) + 30)))
    out.append(Artifact(f"{base}/fstab", render_template("lustre/target-fstab.j2", node=node, lines=lines,
                                                         source=source)))
    if waits:
        out.append(Artifact(f"{base}/lustre-wait-mgs.sh", render_template(
            "lustre/wait-mgs.sh.j2", node=node, wait_s=data["mgs_wait_s"], interval_s=data["mgs_ping_interval_s"],
            source=source), 0o755))
    return out


def _mgt_nids(owner: LustreFs, mgt: LustreTarget, filesystems: tuple[LustreFs, ...]) -> dict[str, tuple[str, ...]]:
    """The MGT pair's NIDs on every LNet network of the file systems it serves, so clients of each reach it."""
    networks = dict.fromkeys(fs.lnet.network for fs in filesystems if mgt_of(fs, filesystems) == (owner, mgt))
    per_network = [mgs_nids(owner, mgt, network) for network in networks]
    return {s: tuple(nid for nids in per_network for nid in nids[i]) for i, s in enumerate(mgt.servers)}


def _server_artifacts(topology: Topology, source: str) -> list[Artifact]:
    """Each Lustre server profile's LNet files and each server's format-targets.sh."""
    cluster = topology.cluster
    nodes = {n.name: n for n in cluster.nodes}
    served: dict[str, list[LustreFs]] = {}
    for fs in cluster.lustre:
        for server in fs.server_nids:
            served.setdefault(server, []).append(fs)
    out: list[Artifact] = []
    profiles: dict[str, list[LustreFs]] = {}
    for server in sorted(served):
        known = profiles.setdefault(nodes[server].profile.name, [])
        known += [fs for fs in served[server] if fs not in known]
    for name in sorted(profiles):
        base = f"hosts/{checked(IDENTIFIER, name, 'profile name')}/lustre"
        nets = _nets(topology, name, profiles[name], cluster.profiles[name])
        out += _lnet_artifacts(base, nets, {"profile": name, "source": source})
    for server in sorted(served):
        views = []
        mgts: dict[str, tuple[LustreFs, LustreTarget, list[LustreFs]]] = {}  # MGT owner's name -> its clients here
        for fs in served[server]:
            found = mgt_of(fs, cluster.lustre)  # check_mgs proved every file system with targets has one
            if found is not None and any(server in t.servers and t.kind != "mgt" for t in fs.targets):
                mgts.setdefault(found[0].name, (*found, []))[2].append(fs)
            for target in fs.targets:
                if server in target.servers:
                    pair = _mgt_nids(fs, target, cluster.lustre) if target.kind == "mgt" else fs.server_nids
                    wait = "" if target.kind == "mgt" or found is None else _wait_unit(found[0])
                    views.append(_target_view(fs, target, server, dict(pair), wait))
        if not views:
            continue
        node = checked(DEVICE_NAME, server, "node name")
        nids = list(dict.fromkeys(nid for fs in served[server] for nid in fs.server_nids[server]))
        waits = [_mgs_wait(server, owner, mgt, clients) for owner, mgt, clients in mgts.values()]
        out += _target_mounts(node, sorted(views, key=lambda v: KINDS.index(v.kind)), waits, source)
        out.append(Artifact(f"hosts/{node}/lustre/format-targets.sh", render_template(
            "lustre/format-targets.sh.j2", node=node, node_q=shlex.quote(node), profile=nodes[server].profile.name,
            nids=nids, nids_q=" ".join(shlex.quote(n) for n in nids), targets=views, source=source), 0o755))
    return out


def layout_options(components: tuple[LustreComponent, ...]) -> list[str]:
    """``lfs setstripe`` arguments of a PFL layout: -E END then -L mdt, or -c COUNT / -S SIZE, per component."""
    args: list[str] = []
    for c in components:
        args += ["-E", format_size(c.end)]
        if c.mdt:
            args += ["-L", "mdt"]
            continue
        if c.stripe_count is not None:
            args += ["-c", str(c.stripe_count)]
        if c.stripe_size is not None:
            args += ["-S", format_size(c.stripe_size)]
    return args


def _summary(layout: LustreLayout) -> str:
    parts = []
    start = 0
    for c in layout.components:
        end = "EOF" if c.end < 0 else format_size(c.end)
        where = "on the MDT" if c.mdt else (
            "over all OSTs" if c.stripe_count == -1 else
            f"{c.stripe_count or 'default'} stripe(s)" + (f" of {format_size(c.stripe_size)}" if c.stripe_size else ""))
        parts.append(f"[{format_size(start)}, {end}) {where}")
        start = max(c.end, 0)
    return "; ".join(parts)


def _storage_artifacts(topology: Topology, source: str, fs: LustreFs) -> list[Artifact]:
    base = f"storage/lustre/{checked(FSNAME, fs.fsname, 'fsname')}"
    profiles = sorted({g.profile for g in topology.cluster.groups if g.pattern in fs.groups})
    settings = [(shlex.quote(t.param), shlex.quote(str(t.value))) for t in fs.client]
    out = [Artifact(f"{base}/mgs-set_param.sh", render_template(
        "lustre/mgs-set_param.sh.j2", fs=fs, profiles=profiles, settings=settings, source=source), 0o755)]
    if fs.layouts:
        layouts = [LayoutView(layout.path, shlex.quote(layout.path), " ".join(shlex.quote(a) for a in layout_options(
            layout.components)), _summary(layout)) for layout in fs.layouts]
        out.append(Artifact(f"{base}/setstripe.sh", render_template("lustre/setstripe.sh.j2", fs=fs, layouts=layouts,
                                                                    source=source), 0o755))
    return out


def render(topology: Topology) -> list[Artifact]:
    """The Lustre client and storage-administrator files: see the module docstring."""
    source = topology.cluster.source
    out = []
    for name, (profile, filesystems) in _mounted(topology).items():
        out += _client_artifacts(topology, source, name, profile, filesystems)
    out += _server_artifacts(topology, source)
    for fs in topology.cluster.lustre:
        out += _storage_artifacts(topology, source, fs)
    return out
