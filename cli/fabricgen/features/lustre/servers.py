"""The Lustre servers' side: the ``targets`` of each file system (MGT, MDTs, OSTs on failover pairs of storage
nodes), their checks, the servers' NIDs from the address plan, and the checks that need them:

- every target has a servicenode set of two storage nodes on the file system's fabric, a server has one failover
  partner and serves at most one MGT, a device holds one target per pair;
- the MGS a file system's clients mount is a planned MGT: each MGS entry all the planned NIDs of one server of the
  MGT's pair, both servers listed;
- a storage server without an in-band port is reached by no planned network (NTP, DNS, monitoring): a warning.

mkfs.lustre's own rules these follow are in lustre-release lustre/utils/mkfs_lustre.c and
Documentation/man8/mkfs.lustre.8 (--servicenode: every node equal, each with all its NIDs; --index required for
MDTs and OSTs; --fsname not for the MGS).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.errors import Finding, Severity, SourcePosition
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.model.cluster import Fabric
from fabricgen.model.lustre import LustreFs, LustreTarget
from fabricgen.model.nodes import NicRole, Node
from fabricgen.model.topology import Topology

KINDS = ("mdt", "ost")
# Names of a shared LUN that both servers of a pair see alike and that survive a reboot: udev's by-id links (the
# LUN's WWN or serial, 60-persistent-storage.rules) and device-mapper names (a multipath alias or WWID in
# /etc/multipath/bindings, kept alike on both servers). Not by-path (one host's HBA and port: the partner's
# differs), by-uuid or by-label (mkfs.lustre gives the file system new ones), nor a kernel name such as /dev/sdc
# (probe order, not the LUN: after a reboot or a path failure it can name another disk).
PERSISTENT = ("/dev/disk/by-id/", "/dev/mapper/")


def _device(issues: Issues, where: PathKey, device: str) -> None:
    """A target's device by a persistent name both servers share (review D4: /dev/sdc passed)."""
    if device.startswith(PERSISTENT):
        return
    why = ("by-path names one host's HBA port, so the partner's path differs" if device.startswith("/dev/disk/by-path/")
           else "mkfs.lustre gives the device a new file system UUID and label" if device.startswith(
               ("/dev/disk/by-uuid/", "/dev/disk/by-label/", "/dev/disk/by-partuuid/"))
           else "a kernel name follows probe order, not the LUN: after a reboot or a path failure it can be another "
                "disk, and mkfs.lustre would format that one")
    issues.error(where, f"device {device} is not a persistent name of the shared LUN ({why})",
                 "name it as both servers see it: /dev/disk/by-id/wwn-0x... or /dev/disk/by-id/dm-uuid-mpath-<wwid>, "
                 "or /dev/mapper/<multipath alias> with the same alias on both servers")




def _options(issues: Issues, where: PathKey, spec: Mapping[str, Any]) -> tuple[tuple[str, ...], str]:
    """A target group's --param words and --mkfsoptions, without what the script sets itself: the failover NIDs
    (--servicenode; mgsnode and network, keys without a dot, the schema refuses) and the label (mkfs.lustre runs
    mke2fs -L with the target name, and a later -L would replace it)."""
    params = tuple(spec.get("params", ()))
    for i, param in enumerate(params):
        key = param.split("=", 1)[0]
        if key == "failover.node":
            issues.error((*where, "params", i), "failover.node is set from the failover pair's planned NIDs",
                         "leave it out: format-targets.sh passes --servicenode with every NID of both servers")
    keys = [p.split("=", 1)[0] for p in params]
    for i, key in enumerate(keys):
        if key in keys[:i]:
            issues.error((*where, "params", i), f"parameter {key} is given twice",
                         "tunefs.lustre --param keeps only the last value of a key: give it once")
    options = spec.get("mkfsoptions", "")
    if any(word.startswith("-L") for word in options.split()):  # -L LABEL or -LLABEL
        issues.error((*where, "mkfsoptions"), "mkfsoptions sets a file system label (-L)",
                     "leave -L out: mkfs.lustre labels the file system with the target name, which the servers "
                     "and tunefs.lustre read")
    return params, options


def _pair(issues: Issues, where: PathKey, names: Sequence[str], fabric: Fabric, nodes: Mapping[str, Node]
          ) -> tuple[str, str] | None:
    """A failover pair: two distinct storage nodes of the spec on the file system's fabric."""
    ok = True
    for i, name in enumerate(names):
        node = nodes.get(name)
        if node is None:
            issues.error((*where, i), f"unknown failover server {name!r}",
                         did_you_mean(name, [n for n, node in nodes.items() if node.profile.role == "storage"])
                         or "name a storage node of the spec (role: storage in its profile)")
            ok = False
        elif node.profile.role != "storage":
            issues.error((*where, i), f"node {name} is a {node.profile.role} node, not a storage server",
                         f"give profile {node.profile.name} role: storage, or name a storage node")
            ok = False
        elif node.group not in fabric.node_groups or not node.profile.nics(fabric.role.nic_role):
            issues.error((*where, i), f"server {name} has no port on fabric {fabric.name}, which the file system "
                                      "runs on", f"attach its group {node.group!r} to {fabric.name} with "
                                                 f"{fabric.role.nic_role.value} NICs, or pair servers of the fabric")
            ok = False
    if len(names) == 1:
        issues.error(where, f"the target has a servicenode set of 1 ({names[0]}): its failover partner is missing",
                     f"name the server that shares its storage: servers: [{names[0]}, <partner>]")
        return None
    if ok and names[0] == names[1]:
        issues.error((*where, 1), f"server {names[0]} is its own failover partner",
                     "a failover pair is two servers that see the same shared storage")
        return None
    return (names[0], names[1]) if ok else None


def _turn(pair: tuple[str, str], index: int) -> tuple[str, str]:
    """The pair in the order a target uses it, from the target's own index: an even index is its first server's to
    format and serve first, an odd one its second's, so both carry half the targets while neither has failed
    (active/active), and adding a target elsewhere never moves one."""
    return pair if index % 2 == 0 else (pair[1], pair[0])


def targets(issues: Issues, path: PathKey, spec: Mapping[str, Any], fabric: Fabric,
            nodes: Mapping[str, Node]) -> tuple[LustreTarget, ...]:
    """The targets of one file system's ``targets`` section, in order: its MGT (if declared), MDTs, OSTs. A group's
    targets take the indices from its ``first_index`` (required beside another group of the kind, whose range it
    may not overlap: a formatted target's index is on it and in the MGS's logs)."""
    section = spec.get("targets")
    if section is None:
        return ()
    where: PathKey = (*path, "targets")
    out = []
    mgt = section.get("mgt")
    if mgt is not None:
        _device(issues, (*where, "mgt", "device"), mgt["device"])
        pair = _pair(issues, (*where, "mgt", "servers"), mgt["servers"], fabric, nodes)
        params, options = _options(issues, (*where, "mgt"), mgt)
        if pair is not None:
            out.append(LustreTarget("mgt", 0, mgt["device"], pair, issues.position((*where, "mgt")),
                                    (*issues.prefix, *where, "mgt", "servers"), params, options))
    for kind in KINDS:
        groups = section[kind]
        taken: dict[int, int] = {}  # index -> the group holding it
        for i, group in enumerate(groups):
            unstated = len(groups) > 1 and "first_index" not in group
            if unstated:
                issues.error((*where, kind, i), f"{kind} group {i} of {len(groups)} states no first_index",
                             "give every group its first_index (0 for the first): an index is the target's for "
                             "life, and without it a device added to an earlier group renumbers the later ones")
            first = group.get("first_index", 0)
            pair = _pair(issues, (*where, kind, i, "servers"), group["servers"], fabric, nodes)
            params, options = _options(issues, (*where, kind, i), group)
            for j, device in enumerate(group["devices"]):
                _device(issues, (*where, kind, i, "devices", j), device)
                index = first + j
                if index in taken and taken[index] != i and not unstated:  # an unstated range is reported once
                    issues.error((*where, kind, i, "devices", j), f"{kind.upper()}{index:04x} is already a target "
                                 f"of {kind} group {taken[index]}",
                                 "start this group's first_index after the other group's last target")
                taken.setdefault(index, i)
                if pair is not None:
                    out.append(LustreTarget(kind, index, device, _turn(pair, index),
                                            issues.position((*where, kind, i, "devices", j)),
                                            (*issues.prefix, *where, kind, i, "servers"), params, options))
    return tuple(out)


def check_shared(issues: Issues, filesystems: Sequence[LustreFs]) -> None:
    """Across file systems: one failover partner per server, at most one MGT per server (a node runs one MGS),
    one target per device of a server, and one LNet setup per server and network."""
    root = issues.root()
    partner: dict[str, tuple[str, str]] = {}
    mgt: dict[str, str] = {}
    device: dict[tuple[str, str], str] = {}
    lnet: dict[tuple[str, str], LustreFs] = {}
    reported: set[tuple[str, str]] = set()
    for fs in filesystems:
        for target in fs.targets:
            at = f"{target.label(fs.fsname)} (lustre.{fs.name})"
            for server, other in (target.servers, target.servers[::-1]):
                known = partner.setdefault(server, (other, at))
                if known[0] != other and (server, other) not in reported:
                    reported.add((server, other))
                    root.error(target.where, f"server {server} is paired with {other} here but with {known[0]} "
                                             f"for {known[1]}",
                               "a server has one failover partner: the one that sees its shared storage")
                owner = device.setdefault((server, target.device), at)
                if owner != at:
                    root.error(target.where, f"device {target.device} of server {server} already holds {owner}",
                               "each target needs its own device")
                known_lnet = lnet.setdefault((server, fs.lnet.network), fs)
                if known_lnet.serving_lnet != fs.serving_lnet and (server, fs.name) not in reported:
                    reported.add((server, fs.name))
                    root.error(("lustre", fs.name, "tuning"), f"server {server} would configure LNet network "
                                                              f"{fs.lnet.network} differently for {known_lnet.name} "
                                                              f"and {fs.name}",
                               "file systems served on one network share its LNet tunables")
            if target.kind == "mgt":
                for server in target.servers:
                    owner = mgt.setdefault(server, fs.name)
                    if owner != fs.name:
                        root.error(target.where, f"server {server} already serves the MGT of lustre.{owner}",
                                   "a node runs one MGS; file systems sharing it declare the MGT once and mount "
                                   "the same MGS NIDs")


# -- compile: every named server's NIDs ---------------------------------------------------------------------------
def server_nids(topology: Topology) -> Topology:
    """The topology whose file systems carry each named server's NIDs (its addresses on the fabric, one per port in
    port order: the NIDs LNet gives it, one NI per storage port) and, in ``mgs``, those of the MGS nodes named."""
    resolved = []
    for fs in topology.cluster.lustre:
        named = {*(s for s in fs.mgs_servers if s), *(s for t in fs.targets for s in t.servers)}
        if not named:
            resolved.append(fs)
            continue
        plan = topology.addresses.get(fs.fabric)
        ports: dict[str, list[tuple[int, str]]] = {}
        for subnet in plan.hosts if plan is not None else ():
            for node, port, ip in subnet.hosts:
                if node in named:
                    ports.setdefault(node, []).append((port, ip))
        nids = {node: tuple(f"{ip}@{fs.lnet.network}" for _, ip in sorted(ports.get(node, ())))
                for node in sorted(named)}
        mgs = tuple(nids[server] if server else entry for entry, server in zip(fs.mgs, fs.mgs_servers, strict=True))
        resolved.append(replace(fs, mgs=mgs, server_nids=nids))
    return replace(topology, cluster=replace(topology.cluster, lustre=tuple(resolved)))


# -- checks over the compiled topology ----------------------------------------------------------------------------
def mgt_of(fs: LustreFs, filesystems: Sequence[LustreFs]) -> tuple[LustreFs, LustreTarget] | None:
    """The MGT that serves ``fs``: its own, else the one of a file system on the same fabric whose MGS nodes have
    the NIDs ``fs`` mounts (on ``fs``'s LNet network: one MGS may serve file systems on several networks)."""
    own = next((t for t in fs.targets if t.kind == "mgt"), None)
    if own is not None:
        return fs, own
    for other in filesystems:
        target = next((t for t in other.targets if t.kind == "mgt"), None)
        if target is not None and other.fabric == fs.fabric and set(fs.mgs) <= set(
                mgs_nids(other, target, fs.lnet.network)):  # check_mgs reports a server of the pair left out
            return other, target
    return None


def mgs_nids(owner: LustreFs, mgt: LustreTarget, network: str) -> tuple[tuple[str, ...], ...]:
    """The NIDs of each server of ``mgt`` (declared by ``owner``) on LNet ``network`` of the same fabric."""
    return tuple(tuple(f"{nid.split('@', 1)[0]}@{network}" for nid in owner.server_nids.get(s, ()))
                 for s in mgt.servers)


def check_mgs(topology: Topology) -> Iterator[Finding]:
    """A file system with planned targets mounts its MGS by the planned NIDs of an MGT's pair: each MGS entry of
    the client mount is all the NIDs of one server of that pair, and both servers are in it."""
    filesystems = topology.cluster.lustre
    for fs in filesystems:
        if not fs.targets:
            continue
        found = mgt_of(fs, filesystems)
        if found is None:
            yield Finding(Severity.ERROR, "lustre-mgt", f"lustre.{fs.name}.mgs",
                          f"no planned MGT serves the MGS NIDs the clients mount ({fs.mgs_spec})",
                          "declare targets.mgt on the MGS pair here, or mount the MGS of a file system that "
                          "declares one (the same mgs entries)", _position(fs, 0))
            continue
        owner, mgt = found
        planned = dict(zip(mgs_nids(owner, mgt, fs.lnet.network), mgt.servers, strict=True))
        for i, nids in enumerate(fs.mgs):
            if nids not in planned:
                shown = "; ".join(f"{s}: {','.join(n)}" for n, s in planned.items())
                yield Finding(Severity.ERROR, "lustre-mgs-nids", f"lustre.{fs.name}.mgs[{i}]",
                              f"the client mount's MGS NIDs {','.join(nids)} are not the planned NIDs of a server "
                              f"of the MGT pair ({shown})",
                              "name the MGS nodes (mgs: [" + ", ".join(mgt.servers) + "]) so the mount uses their "
                              "planned NIDs; a NID the MGS does not have fails the mount, a missing one loses a "
                              "rail or the failover MGS", _position(fs, i))
        missing = [s for n, s in planned.items() if n not in fs.mgs]
        if missing and all(n in planned for n in fs.mgs):
            yield Finding(Severity.ERROR, "lustre-mgs-nids", f"lustre.{fs.name}.mgs",
                          f"the client mount lists no NIDs of MGT server {', '.join(missing)}: clients cannot "
                          "reach the MGS after it fails over", "list both servers of the MGT pair in mgs",
                          _position(fs, 0))


def _position(fs: LustreFs, i: int) -> SourcePosition:
    return fs.mgs_positions[i] if i < len(fs.mgs_positions) else fs.position


def check_inband(topology: Topology) -> Iterator[Finding]:
    """A Lustre server whose profile has no in-band port on a planned fabric is reached only from the storage
    fabric's host pool: NTP, DNS, monitoring, package mirrors and ssh from the management network reach it through
    no planned network (reachability review R8)."""
    cluster = topology.cluster
    servers = {s for fs in cluster.lustre for s in (*fs.server_nids, *(s for s in fs.mgs_servers if s))}
    inband = {g for f in cluster.fabrics if f.role.nic_role is NicRole.INBAND for g in f.node_groups}
    seen = set()
    for node in cluster.nodes:
        if node.name not in servers or node.group in seen:
            continue
        if node.profile.inband and node.group in inband:
            continue
        seen.add(node.group)
        group = next(g for g in cluster.groups if g.pattern == node.group)
        yield Finding(Severity.WARNING, "lustre-server-unreachable", f"nodes[{node.group}]",
                      f"Lustre server group {node.group} (profile {node.profile.name}) has no in-band port on a "
                      "planned fabric: NTP, DNS, monitoring and the management network reach it through no planned "
                      "network, and Lustre servers need synchronized clocks",
                      f"give profile {node.profile.name} an inband NIC attached to an in-band fabric, or make sure "
                      "the site's own management network reaches it", group.position)
