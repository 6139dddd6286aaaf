"""Build the ``lustre`` section into the model, with every check that needs only the spec and the catalog:

- MGS NIDs well-formed, on the file system's LNet network and inside its fabric's host pool; failover nodes
  listed once each;
- LNet interfaces that exist on each mounting node profile and are NICs of the named fabric;
- client tunables within Lustre's hard limits and the RAM of every mounting node profile (max_dirty_mb < 2048
  and <= RAM/4, read-ahead <= RAM/2, max_rpcs_in_flight <= 256, ...), LND credits within o2iblnd's clamps;
- PFL layouts whose components grow and end at EOF (-1), Data-on-MDT only first.

Also the pure helpers the Lustre renderers share: NID parsing, systemd's path escaping, the volumes a training
pod needs (:func:`pod_storage`). Facts and limits live in ``tuning.yaml`` beside this module with their sources.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from netaddr import IPAddress, IPNetwork, IPSet

from fabricgen.core.document import PathKey
from fabricgen.core.errors import Finding, Severity, SourcePosition
from fabricgen.core.hints import did_you_mean
from fabricgen.core.issues import Issues
from fabricgen.core.naming import DEVICE_NAME as DNS_LABEL
from fabricgen.features.feature import BuildContext
from fabricgen.features.lustre import servers
from fabricgen.model.addressing import FabricAddresses, HostSubnet
from fabricgen.model.cluster import Cluster, Fabric, FabricType
from fabricgen.model.lustre import LnetSettings, LustreComponent, LustreFs, LustreLayout, LustreTunable, LustreVolume
from fabricgen.model.nodes import NicRole, Node, NodeGroup, NodeProfile
from fabricgen.model.object_storage import cached_gib
from fabricgen.model.topology import Topology
from fabricgen.spec.load import shipped_data

NID = re.compile(r"^(?P<ip>[0-9]{1,3}(?:\.[0-9]{1,3}){3})@(?P<lnd>o2ib|tcp)(?P<num>[0-9]{0,3})$")
_SIZE = re.compile(r"^([1-9][0-9]*)([KMGT]?)$")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
STRIPE_ALIGN = 64 << 10  # stripe sizes are multiples of 64 KiB (LOV_MIN_STRIPE_SIZE)
DEFAULT_STRIPE_SIZE = 1 << 20  # lfs setstripe's default stripe size
DOM_MAX = 1 << 30  # lod.*.dom_stripesize tops out at 1 GiB
PAGE = 4096
CSI_DRIVER = "lustre-csi.hpe.com"  # HPE lustre-csi-driver: volumeHandle is the mount device "MGSNID[:MGSNID]:/fsname"
CACHE_VOLUME = "nvme-cache"
CACHE_STORAGE_CLASS = "local-nvme"
CACHE_MOUNT_PATH = "/cache"
_LNET_TUNABLES = ("peer_credits", "peer_credits_hiw", "credits", "concurrent_sends", "ntx", "conns_per_peer")


@cache
def tuning_data() -> Mapping[str, Any]:
    """The shipped tuning file, validated against its schema."""
    data: Mapping[str, Any] = shipped_data(Path(__file__).with_name("tuning.yaml"),
                                           "sections/lustre.schema.json#/$defs/tuning_file")
    return data


# -- pure helpers shared with the renderers ---------------------------------------------------------------------
def canonical_network(name: str) -> str:
    """LNet prints network 0 without its number (libcfs_net2str): o2ib0 -> o2ib, tcp0 -> tcp."""
    match = re.fullmatch(r"(o2ib|tcp)([0-9]*)", name)
    if not match:
        return name
    return match[1] + (str(int(match[2])) if match[2] and int(match[2]) else "")


@dataclass(frozen=True)
class Nid:
    ip: str
    network: str  # canonical

    def __str__(self) -> str:
        return f"{self.ip}@{self.network}"


def parse_nid(text: str) -> Nid | None:
    """A NID ``a.b.c.d@o2ib[N]`` or ``@tcp[N]`` with a valid IPv4 address, in canonical form; None otherwise."""
    match = NID.match(text)
    if not match or any(int(octet) > 255 or (len(octet) > 1 and octet[0] == "0")
                        for octet in match["ip"].split(".")):
        return None
    return Nid(match["ip"], canonical_network(match["lnd"] + match["num"]))


def systemd_escape_path(path: str) -> str:
    """``systemd-escape --path``: trim and collapse '/', then '/' -> '-', other unsafe bytes -> \\xNN."""
    trimmed = "/".join(part for part in path.split("/") if part)
    if not trimmed:
        return "-"
    out = []
    for i, ch in enumerate(trimmed):
        if ch == "/":
            out.append("-")
        elif (ch.isascii() and (ch.isalnum() or ch in ":_.")) and not (i == 0 and ch == "."):
            out.append(ch)
        else:
            out.extend(f"\\x{byte:02x}" for byte in ch.encode())
    return "".join(out)


def mount_unit_name(mountpoint: str) -> str:
    return systemd_escape_path(mountpoint) + ".mount"


def parse_size(value: int | str) -> int:
    """Bytes of a size as lfs reads it (binary K/M/G/T); -1 stays -1 (EOF)."""
    if isinstance(value, int):
        return value
    match = _SIZE.match(value)
    if not match:
        raise ValueError(f"not a size: {value!r}")
    return int(match[1]) * _UNITS[match[2]]


def format_size(size: int) -> str:
    """The shortest exact lfs spelling of a size: 4194304 -> 4M, 0 -> 0, -1 -> -1."""
    if size <= 0:
        return str(size)
    for unit in "TGMK":
        if size % _UNITS[unit] == 0:
            return f"{size // _UNITS[unit]}{unit}"
    return str(size)


# -- build ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Context:
    """What the ``lustre`` section is checked against: the cluster's profiles, node groups, nodes and fabrics."""

    issues: Issues
    profiles: Mapping[str, NodeProfile]
    groups: Mapping[str, NodeGroup]
    fabrics: Mapping[str, Fabric]
    nodes: Mapping[str, Node]


def _network(ctx: _Context, path: PathKey, spec: Mapping[str, Any], fabric: Fabric) -> str:
    default = "tcp" if fabric.type is FabricType.ETHERNET else "o2ib"
    network = canonical_network(spec.get("network", default))
    if network.startswith("o2ib") and fabric.type is FabricType.ETHERNET:
        ctx.issues.error((*path, "network"), f"LNet network {network} needs RDMA but fabric {fabric.name} is plain "
                                             "Ethernet", "use tcp, or make the fabric type roce")
    return network


@dataclass(frozen=True)
class _Mgs:
    """The MGS entries as built: explicit NIDs per failover node, the storage node an entry names instead (its NIDs
    come from the address plan at compile), and where each entry is in the spec."""

    nids: tuple[tuple[str, ...], ...]
    servers: tuple[str, ...]
    positions: tuple[SourcePosition, ...]


def _mgs(ctx: _Context, path: PathKey, spec: Mapping[str, Any], network: str, fabric: Fabric) -> _Mgs:
    pool = IPNetwork(fabric.addressing.hosts) if fabric.addressing is not None else None
    seen: dict[str, PathKey] = {}
    nodes: list[tuple[str, ...]] = []
    servers: list[str] = []
    for i, entry in enumerate(spec["mgs"]):
        if isinstance(entry, str) and "@" not in entry and DNS_LABEL.fullmatch(entry):
            servers.append(_server(ctx, (*path, "mgs", i), entry, fabric, servers))
            nodes.append(())
            continue
        servers.append("")
        texts = [entry] if isinstance(entry, str) else list(entry)
        nids = []
        for j, text in enumerate(texts):
            where: PathKey = (*path, "mgs", i) if isinstance(entry, str) else (*path, "mgs", i, j)
            nid = _checked_nid(ctx, where, text, network, fabric, pool)
            if nid is None:
                continue
            if str(nid) in seen:
                ctx.issues.error(where, f"NID {nid} is listed twice", "each MGS NID belongs to one failover node")
            seen[str(nid)] = where
            nids.append(str(nid))
        nodes.append(tuple(nids))
    positions = tuple(ctx.issues.position((*path, "mgs", i)) for i in range(len(spec["mgs"])))
    return _Mgs(tuple(nodes), tuple(servers), positions)


def _server(ctx: _Context, where: PathKey, name: str, fabric: Fabric, earlier: Sequence[str]) -> str:
    """A storage node named as an MGS failover node: it must exist, serve storage and attach to the fabric."""
    node = ctx.nodes.get(name)
    if node is None:
        ctx.issues.error(where, f"{name!r} is neither a NID nor a node of the spec",
                         did_you_mean(name, ctx.nodes) or "name a storage node (role: storage in its profile) "
                         "or give its NID: 10.20.0.5@o2ib")
    elif node.profile.role != "storage":
        ctx.issues.error(where, f"node {name} is a {node.profile.role} node, not a storage server",
                         f"give profile {node.profile.name} role: storage, or name the MGS's own node")
    elif node.group not in fabric.node_groups or not node.profile.nics(fabric.role.nic_role):
        ctx.issues.error(where, f"node {name} has no port on fabric {fabric.name}",
                         f"attach its group {node.group!r} to {fabric.name} (fabrics.{fabric.name}.nodes) with "
                         f"{fabric.role.nic_role.value} NICs in its profile")
    elif name in earlier:
        ctx.issues.error(where, f"node {name} is listed twice", "each failover MGS node is listed once")
    return name


def _checked_nid(ctx: _Context, where: PathKey, text: str, network: str, fabric: Fabric,
                 pool: IPNetwork | None) -> Nid | None:
    if ":" in text or "," in text:
        ctx.issues.error(where, f"{text!r} holds several NIDs",
                         "list failover MGS nodes as separate entries and the NIDs of one node as a list: "
                         "mgs: [[a@o2ib, b@o2ib], c@o2ib]")
        return None
    nid = parse_nid(text)
    if nid is None:
        ctx.issues.error(where, f"{text!r} is not a NID", "an IPv4 address, '@' and an LNet network: 10.20.255.1@o2ib; "
                                                       "or the name of a storage node")
        return None
    if nid.network != network:
        ctx.issues.error(where, f"NID {text} is on LNet network {nid.network}, not {network}",
                         "the client reaches the MGS on the file system's network (no LNet routers are planned)")
    if pool is not None and IPAddress(nid.ip) not in pool:
        ctx.issues.error(where, f"{nid.ip} is outside the host pool {pool.cidr} of fabric {fabric.name}",
                         "the MGS must be reachable on that fabric: give it an address from addressing.hosts")
    return nid


def _groups(ctx: _Context, path: PathKey, spec: Mapping[str, Any], fabric: Fabric) -> tuple[str, ...]:
    if "nodes" not in spec:  # the storage servers on the fabric serve it, they do not mount it
        return tuple(g for g in fabric.node_groups
                     if g in ctx.groups and ctx.profiles[ctx.groups[g].profile].role != "storage")
    chosen = []
    for i, pattern in enumerate(spec["nodes"]):
        if pattern in ctx.groups and ctx.profiles[ctx.groups[pattern].profile].role == "storage":
            ctx.issues.error((*path, "nodes", i), f"node group {pattern!r} holds storage servers",
                             "storage servers serve the file system; list the client groups")
        elif pattern not in fabric.node_groups:
            known = pattern in ctx.groups
            ctx.issues.error((*path, "nodes", i), f"node group {pattern!r} is not attached to fabric {fabric.name}"
                             if known else f"unknown node group {pattern!r}",
                             "attach it to the fabric" if known else did_you_mean(pattern, fabric.node_groups))
        else:
            chosen.append(pattern)
    return tuple(chosen)


def _interfaces(ctx: _Context, path: PathKey, spec: Mapping[str, Any], fabric: Fabric, profile: NodeProfile
                ) -> tuple[str, ...]:
    on_fabric = list(dict.fromkeys(profile.interface(n) for n in profile.nics(fabric.role.nic_role) if n.netdev))
    if "interfaces" not in spec:
        if not on_fabric:
            ctx.issues.error(path, f"node profile {profile.name} names no interface on fabric {fabric.name}",
                             f"give its {fabric.role.nic_role.value} NICs a netdev, or list interfaces")
        return tuple(on_fabric)
    everywhere = {n.netdev: n.role for role in NicRole for n in profile.nics(role) if n.netdev}
    for i, netdev in enumerate(spec["interfaces"]):
        if netdev not in everywhere:
            ctx.issues.error((*path, "interfaces", i), f"node profile {profile.name} has no interface {netdev!r}",
                             did_you_mean(netdev, on_fabric)
                             or f"its interfaces on {fabric.name}: {', '.join(on_fabric)}")
        elif netdev not in on_fabric:
            ctx.issues.error((*path, "interfaces", i), f"{netdev} is one of node profile {profile.name}'s "
                                                       f"{everywhere[netdev].value} NICs, not attached to fabric "
                                                       f"{fabric.name}",
                             f"its interfaces on {fabric.name}: {', '.join(on_fabric) or 'none'}")
    return tuple(spec["interfaces"])


def _ram_mib(ctx: _Context, path: PathKey, profile: NodeProfile) -> int | None:
    if profile.memory_gb is None:
        ctx.issues.error(path, f"node profile {profile.name} mounts it but does not state its RAM",
                         f"set node_profiles.{profile.name}.memory_gb: Lustre's client limits depend on it")
        return None
    return profile.memory_gb * 1024


def _value_path(path: PathKey, spec: Mapping[str, Any], name: str, fallback: str) -> PathKey:
    """Where a tuned value comes from: its override in ``tuning``, else ``fallback`` (the profile or the fabric)."""
    return (*path, "tuning", name) if name in spec["tuning"] else (*path, *fallback.split("."))


def _client(ctx: _Context, path: PathKey, spec: Mapping[str, Any], fsname: str,
            rams: Sequence[tuple[str, int]]) -> tuple[LustreTunable, ...]:
    data = tuning_data()
    tuning = spec["tuning"]
    values = {**data["profiles"][tuning["profile"]]["values"],
              **{k: v for k, v in tuning.items() if k in data["tunables"]}}
    brw_mb = spec.get("ost_brw_size_mb", data["default_ost_brw_size_mb"])
    out = []
    for name, rule in data["tunables"].items():
        value = values[name]
        where = _value_path(path, spec, name, "tuning.profile")
        limits = [(value >= rule["min"], f"at least {rule['min']}")]
        if "max" in rule:
            limits.append((value <= rule["max"], f"Lustre's limit is {rule['max']}"))
        if "below" in rule:
            top = values[rule["below"]]
            limits.append((value <= top, f"it may not exceed {rule['below']} ({top})"))
        if rule.get("brw_limited"):
            top = brw_mb * (1 << 20) // PAGE
            limits.append((value <= top, f"the OSTs' brw_size of {brw_mb} MiB allows {top} pages "
                                         "(set ost_brw_size_mb if the OSTs use more)"))
        for profile, ram in rams if "ram_fraction" in rule else ():
            top = int(ram * rule["ram_fraction"])
            limits.append((value <= top, f"node profile {profile} has {ram // 1024} GiB of RAM: at most {top} MiB "
                                         f"(RAM/{round(1 / rule['ram_fraction'])})"))
        failed = next((why for ok, why in limits if not ok), None)
        if failed:
            ctx.issues.error(where, f"{name} {value} is out of range", failed)
        out.append(LustreTunable(name, rule["param"].replace("{fs}", fsname), value, rule["why"]))
    return tuple(out)


def _lnet(ctx: _Context, path: PathKey, spec: Mapping[str, Any], network: str, fabric: Fabric) -> LnetSettings:
    data = tuning_data()["lnet"]
    row = next(r for r in data["by_speed"] if fabric.speed.name in r["speeds"])  # every speed has a row (tested)
    tuning = spec["tuning"]
    values = {k: int(tuning.get(k, row[k])) for k in _LNET_TUNABLES}
    pc = values["peer_credits"]
    checks = [
        *((k, values[k], lim["min"] <= values[k] <= lim["max"], f"o2iblnd allows {lim['min']}..{lim['max']}")
          for k, lim in data["limits"].items()),
        ("credits", values["credits"], values["credits"] >= pc, f"at least peer_credits ({pc})"),
        ("concurrent_sends", values["concurrent_sends"], pc // 2 <= values["concurrent_sends"] <= 2 * pc,
         f"o2iblnd clamps it to peer_credits/2..2*peer_credits ({pc // 2}..{2 * pc})"),
        ("peer_credits_hiw", values["peer_credits_hiw"], pc // 2 <= values["peer_credits_hiw"] < pc,
         f"o2iblnd clamps it to peer_credits/2..peer_credits-1 ({pc // 2}..{pc - 1})"),
    ]
    for name, value, ok, why in checks:
        if not ok:
            ctx.issues.error(_value_path(path, spec, name, "fabric"), f"{name} {value} is out of range", why)
    common = (("peer_timeout", data["peer_timeout"]), ("peer_credits", pc), ("peer_buffer_credits", 0),
              ("credits", values["credits"]))
    lnd = "tcp" if network.startswith("tcp") else "o2ib"
    tos = fabric.qos.nccl_tc if fabric.qos is not None else None  # RDMA CM ToS = DSCP << 2 | ECT(0), as NCCL_IB_TC
    if lnd == "tcp":
        per_ni: tuple[tuple[str, int], ...] = (("conns_per_peer", values["conns_per_peer"]),)
        return LnetSettings(network, lnd, common, per_ni + ((("tos", tos),) if tos is not None else ()), ())
    per_ni = (("concurrent_sends", values["concurrent_sends"]), ("ntx", values["ntx"]),
              ("conns_per_peer", values["conns_per_peer"]), *((("tos", tos),) if tos is not None else ()))
    module = (("peer_credits", pc), ("peer_credits_hiw", values["peer_credits_hiw"]), ("credits", values["credits"]),
              *per_ni[:3], ("peer_timeout", data["peer_timeout"]), *per_ni[3:])
    return LnetSettings(network, lnd, common, per_ni, module)


def _server_lnet(ctx: _Context, path: PathKey, spec: Mapping[str, Any], lnet: LnetSettings) -> LnetSettings | None:
    """The servers' values of ``lnet``: the clients' but for the NI-wide ``credits`` and ``ntx`` of tuning.servers
    (a server's NI sends to every client; credits limits the sends of one NI to all peers, peer_credits those to one,
    which o2iblnd negotiates only downwards after a refusal: kiblnd_passive_connect). None without an override."""
    override = spec["tuning"].get("servers") or {}
    if not override:
        return None
    limits = tuning_data()["lnet"]["limits"]
    peer_credits = dict(lnet.tunables)["peer_credits"]
    for name, value in override.items():
        where = (*path, "tuning", "servers", name)
        if not limits[name]["min"] <= value <= limits[name]["max"]:
            ctx.issues.error(where, f"{name} {value} is out of range",
                             f"o2iblnd allows {limits[name]['min']}..{limits[name]['max']}")
        elif name == "credits" and value < peer_credits:
            ctx.issues.error(where, f"server credits {value} are below peer_credits ({peer_credits})",
                             "o2iblnd lowers peer_credits to credits (kiblnd_tunables_setup), so clients' "
                             "connections are refused before they retry with the smaller queue depth")
        elif name == "ntx" and lnet.lnd != "o2ib":
            ctx.issues.error(where, f"ntx is an o2iblnd value; LNet network {lnet.network} runs socklnd",
                             "leave ntx out on a tcp network")

    def swap(values: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        return tuple((k, int(override.get(k, v))) for k, v in values)

    return replace(lnet, tunables=swap(lnet.tunables), lnd_tunables=swap(lnet.lnd_tunables),
                   module_options=swap(lnet.module_options))


def _components(ctx: _Context, where: PathKey, spec: Sequence[Mapping[str, Any]]) -> tuple[LustreComponent, ...]:
    out = []
    previous = 0
    for i, entry in enumerate(spec):
        at: PathKey = (*where, i)
        end = parse_size(entry["end"])
        stripe_size = parse_size(entry["stripe_size"]) if "stripe_size" in entry else None
        last = i == len(spec) - 1
        if end == -1 and not last:
            ctx.issues.error((*at, "end"), "only the last component may end at EOF (-1)",
                             "components run in file order")
        elif end != -1 and end <= previous:
            ctx.issues.error((*at, "end"), f"component ends at {format_size(end)}, not after the previous end "
                                           f"{format_size(previous)}", "component ends must grow")
        elif last and end != -1:
            ctx.issues.error((*at, "end"), f"the last component ends at {format_size(end)}, not at EOF",
                             "end the layout with end: -1, or writes past it fail")
        if entry["mdt"]:
            if i > 0:
                ctx.issues.error((*at, "mdt"), "only the first component can be on the MDT", "Data-on-MDT holds the "
                                                                                             "start of a file")
            if "stripe_count" in entry or stripe_size is not None:
                ctx.issues.error(at, "a Data-on-MDT component has no stripes", "remove stripe_count and stripe_size")
            if end == -1 or end > DOM_MAX:
                ctx.issues.error((*at, "end"), "a Data-on-MDT component must end at 1G or below",
                                 "lod.*.dom_stripesize is at most 1 GiB")
        size = stripe_size or DEFAULT_STRIPE_SIZE
        if stripe_size is not None and stripe_size % STRIPE_ALIGN:
            ctx.issues.error((*at, "stripe_size"), f"stripe size {format_size(stripe_size)} is not a multiple of 64K",
                             "Lustre stripes in multiples of 64 KiB")
        elif end > 0 and not entry["mdt"] and end % size:
            ctx.issues.error((*at, "end"), f"component end {format_size(end)} is not a multiple of its stripe size "
                                           f"{format_size(size)}", "lfs refuses extents that split a stripe")
        previous = max(previous, end)
        out.append(LustreComponent(end, entry.get("stripe_count"), stripe_size, entry["mdt"]))
    return tuple(out)


def _layouts(ctx: _Context, path: PathKey, spec: Mapping[str, Any]) -> tuple[LustreLayout, ...]:
    seen: dict[str, int] = {}
    out = []
    for i, layout in enumerate(spec["layouts"]):
        if layout["path"] in seen:
            ctx.issues.error((*path, "layouts", i, "path"), f"directory {layout['path']!r} has two layouts",
                             f"first as layouts[{seen[layout['path']]}]")
            continue
        seen[layout["path"]] = i
        components = _components(ctx, (*path, "layouts", i, "components"), layout["components"])
        out.append(LustreLayout(layout["path"], components))
    return tuple(out)


def _volume(ctx: _Context, path: PathKey, name: str, spec: Mapping[str, Any]) -> LustreVolume | None:
    k8s = spec.get("kubernetes")
    if k8s is None:
        return None
    if not DNS_LABEL.fullmatch(volume_name(name)):
        ctx.issues.error((*path, "kubernetes"), f"the volume name {volume_name(name)!r} is not a DNS label",
                         "name the file system so that lustre-<name> (with '_' as '-') ends in a letter or digit")
    return LustreVolume(k8s["access"], k8s["capacity"], k8s["namespace"], k8s.get("mount_path", spec["mountpoint"]))


def _filesystem(ctx: _Context, name: str, spec: Mapping[str, Any]) -> LustreFs | None:
    path: PathKey = ("lustre", name)
    fabric = ctx.fabrics.get(spec["fabric"])
    if fabric is None:
        ctx.issues.error((*path, "fabric"), f"unknown fabric {spec['fabric']!r}",
                         did_you_mean(spec["fabric"], ctx.fabrics))
        return None
    if fabric.addressing is None:
        ctx.issues.error((*path, "fabric"), f"fabric {fabric.name} has no address plan",
                         "LNet NIDs are IP addresses: give the fabric addressing.hosts")
    network = _network(ctx, path, spec, fabric)
    mgs = _mgs(ctx, path, spec, network, fabric)
    groups = _groups(ctx, path, spec, fabric)
    profiles = {ctx.groups[g].profile: ctx.profiles[ctx.groups[g].profile] for g in groups}
    interfaces = {p: _interfaces(ctx, path, spec, fabric, profile) for p, profile in sorted(profiles.items())}
    rams = [(p, ram) for p, profile in sorted(profiles.items()) if (ram := _ram_mib(ctx, path, profile))]
    client = _client(ctx, path, spec, spec["fsname"], rams)
    lnet = _lnet(ctx, path, spec, network, fabric)
    options = (*(o for o in spec["mount_options"] if o != "_netdev"), "_netdev")
    return LustreFs(name, spec["fsname"], mgs.nids, spec["mountpoint"], fabric.name, groups, interfaces, lnet,
                    options, spec["tuning"]["profile"], client, _layouts(ctx, path, spec),
                    _volume(ctx, path, name, spec), ctx.issues.position(path), mgs.servers, mgs.positions,
                    servers.targets(ctx.issues, path, spec, fabric, ctx.nodes),
                    server_lnet=_server_lnet(ctx, path, spec, lnet))


def _shared(ctx: _Context, filesystems: Sequence[LustreFs]) -> None:
    """Across file systems: unique fsnames and mount points; one LNet setup per profile and network."""
    for what in ("fsname", "mountpoint"):
        owner: dict[str, str] = {}
        for fs in filesystems:
            value = getattr(fs, what)
            if value in owner:
                ctx.issues.error(("lustre", fs.name, what), f"{what} {value} is also used by {owner[value]}",
                                 f"each file system needs its own {what}")
            owner.setdefault(value, fs.name)
    lnet: dict[tuple[str, str], tuple[str, tuple[str, ...], LnetSettings]] = {}
    for fs in filesystems:
        for profile, netdevs in fs.interfaces.items():
            known = lnet.setdefault((profile, fs.lnet.network), (fs.name, netdevs, fs.lnet))
            if known[1:] != (netdevs, fs.lnet):
                ctx.issues.error(("lustre", fs.name, "tuning" if known[1] == netdevs else "interfaces"),
                                 f"node profile {profile} would configure LNet network {fs.lnet.network} "
                                 f"differently for {known[0]} and {fs.name}",
                                 "file systems on one network share its interfaces and LNet tunables")


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    """The cluster with the file systems of the ``lustre`` section."""
    ctx = _Context(context.issues, cluster.profiles, {g.pattern: g for g in cluster.groups},
                   {f.name: f for f in cluster.fabrics}, {n.name: n for n in cluster.nodes})
    built = [fs for name, entry in context.data["lustre"].items() if (fs := _filesystem(ctx, name, entry)) is not None]
    _shared(ctx, built)
    servers.check_shared(ctx.issues, built)
    return replace(cluster, lustre=tuple(built))


# -- check over the compiled topology ------------------------------------------------------------------------
def check_mgs_addresses(topology: Topology) -> Iterator[Finding]:
    """An explicit MGS NID must lie in a subnet a leaf announces (else no client reaches it) and must not take an
    address the plan gives a node port, a leaf gateway or a subnet's ends."""
    for fs in topology.cluster.lustre:
        plan = topology.addresses.get(fs.fabric)
        if plan is None:
            continue
        taken: dict[str, str] = {}
        for subnet in plan.hosts:
            network = IPNetwork(subnet.network)
            taken[str(network.network)] = f"the network address of {_owner(subnet)}'s subnet {subnet.network}"
            taken[str(network.broadcast)] = f"the broadcast address of {_owner(subnet)}'s subnet {subnet.network}"
            if subnet.gateway:
                taken[subnet.gateway] = f"the gateway of {subnet.leaf}"
            taken.update({ip: f"{node} port {port}" for node, port, ip in subnet.hosts})
        announced = IPSet(subnet.network for subnet in plan.hosts)
        for i, (nids, server) in enumerate(zip(fs.mgs, fs.mgs_servers or ("",) * len(fs.mgs), strict=True)):
            if server:
                continue  # the plan's own addresses
            position = fs.mgs_positions[i] if fs.mgs_positions else fs.position
            for nid in nids:
                ip = nid.split("@", 1)[0]
                if IPAddress(ip) not in announced:
                    yield Finding(Severity.ERROR, "lustre-mgs-address", f"lustre.{fs.name}.mgs[{i}]",
                                  f"MGS NID {nid} is in no subnet of fabric {fs.fabric}'s {_subnets_of(plan)}: no "
                                  "route leads to it, so no client can mount the file system",
                                  "model the MGS as a storage node on the fabric and name it here (mgs: [mds01, "
                                  f"mds02]), or use a free address of one of {_subnets_text(plan)}", position)
                elif ip in taken:
                    yield Finding(Severity.ERROR, "lustre-mgs-address", f"lustre.{fs.name}.mgs[{i}]",
                                  f"MGS NID {nid} takes {taken[ip]} in the address plan of fabric {fs.fabric}",
                                  "name the storage node instead, or give the MGS an address of a leaf subnet that "
                                  "the plan leaves free", position)


def _owner(subnet: HostSubnet) -> str:
    return subnet.leaf or f"rail {subnet.rail}"


def _subnets_of(plan: FabricAddresses) -> str:
    """What announces a fabric's host subnets: its leaves (routed Ethernet) or nothing but the link (IPoIB)."""
    return "leaves" if any(subnet.leaf for subnet in plan.hosts) else "IPoIB rail subnets"


def _subnets_text(plan: FabricAddresses) -> str:
    shown = [f"{s.network} ({_owner(s)})" for s in plan.hosts[:2]]
    return ", ".join(shown) + (f" ... ({len(plan.hosts)} subnets)" if len(plan.hosts) > 2 else "")


# -- the training pod's view ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PodStorage:
    """Volumes and volumeMounts (Kubernetes API dicts) a training pod adds for the Lustre PVCs and the NVMe cache."""

    volumes: tuple[dict[str, Any], ...]
    volume_mounts: tuple[dict[str, Any], ...]


def volume_name(name: str) -> str:
    """The PV and PVC name of file system ``name``: Kubernetes names are DNS labels (no '_')."""
    return f"lustre-{name.replace('_', '-')}"


def claim_name(fs: LustreFs) -> str:
    return volume_name(fs.name)


def cache_request_gib(cluster: Cluster) -> int | None:
    """The cache claim: 90% of the smallest local NVMe of any node, less the Fluid caches of the object tier its
    profile holds on the same file system. The local static provisioner gives each PV the size its file system
    reports (statfs), below the raw capacity by the file system's own overhead; a claim of the raw capacity would
    stay Pending. Each node's one PV goes whole to the pod that claims it. Neither size is enforced on the shared
    file system: the claim is the scheduler's figure of what is left."""
    fluid = {p: cached_gib(cluster.object_stores, p) for p in cluster.profiles}
    sizes = [n.profile.local_nvme.capacity_gib - fluid[n.profile.name] for n in cluster.nodes
             if n.profile.local_nvme is not None]
    return max(1, min(sizes) * 9 // 10) if sizes else None


def pod_storage(cluster: Cluster, namespace: str | None = None) -> PodStorage:
    """What a training pod mounts: each Lustre PVC (read-only for ReadOnlyMany) at its mount path, each object
    store's claim (Mountpoint's, or the one Fluid makes for its Dataset) at its own, and a generic ephemeral volume
    from the local-nvme class at /cache (bound to a local PV on the pod's node). A pod reaches only the claims of
    its own ``namespace`` (all claims when None)."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    claims = [(claim_name(fs), fs.volume.namespace, fs.volume.mount_path, fs.volume.access == "ReadOnlyMany")
              for fs in cluster.lustre if fs.volume is not None]
    claims += [(store.claim, store.namespace, store.mount_path, store.read_only or store.cache is not None)
               for store in cluster.object_stores]
    for claim, claim_namespace, mount_path, read_only in claims:
        if namespace not in (None, claim_namespace):
            continue
        volumes.append({"name": claim, "persistentVolumeClaim": {"claimName": claim, "readOnly": read_only}})
        mounts.append({"name": claim, "mountPath": mount_path, "readOnly": read_only})
    request = cache_request_gib(cluster)
    if request is not None:
        volumes.append({"name": CACHE_VOLUME, "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "storageClassName": CACHE_STORAGE_CLASS,
            "resources": {"requests": {"storage": f"{request}Gi"}}}}}})
        mounts.append({"name": CACHE_VOLUME, "mountPath": CACHE_MOUNT_PATH})
    return PodStorage(tuple(volumes), tuple(mounts))
