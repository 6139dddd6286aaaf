"""Lustre file systems as clients mount them: MGS NIDs, LNet settings, client tunables, layouts and the
Kubernetes volume."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition


@dataclass(frozen=True)
class LustreComponent:
    """One PFL component: up to ``end`` bytes (-1 = EOF), on OSTs or, with ``mdt``, on the MDT (Data-on-MDT)."""

    end: int
    stripe_count: int | None = None
    stripe_size: int | None = None
    mdt: bool = False


@dataclass(frozen=True)
class LustreLayout:
    path: str
    components: tuple[LustreComponent, ...]


@dataclass(frozen=True)
class LustreTunable:
    """A client parameter: ``param`` is the lctl name with the fsname filled in, ``why`` says what it does."""

    name: str
    param: str
    value: int
    why: str


@dataclass(frozen=True)
class LnetSettings:
    """One LNet network of a client: its LND, common tunables (per net) and LND tunables (per NI)."""

    network: str  # canonical: o2ib, o2ib1, tcp ... (network 0 is printed without its number)
    lnd: str  # o2ib or tcp
    tunables: tuple[tuple[str, int], ...]
    lnd_tunables: tuple[tuple[str, int], ...]
    module_options: tuple[tuple[str, int], ...]  # ko2iblnd module options (o2ib only)


@dataclass(frozen=True)
class LustreVolume:
    """The file system as a static Kubernetes PersistentVolume through the HPE Lustre CSI driver."""

    access: str
    capacity: str
    namespace: str
    mount_path: str


@dataclass(frozen=True)
class LustreTarget:
    """A Lustre target on shared storage: the MGT (no fsname, no index), an MDT or an OST, served by a failover
    pair (``servers``, the mkfs.lustre --servicenode set); ``servers[0]`` formats it and mounts it first."""

    kind: str  # mgt, mdt or ost
    index: int  # the MDT or OST index; 0 for the MGT
    device: str
    servers: tuple[str, str]
    position: SourcePosition = field(compare=False)
    where: tuple[str | int, ...] = field(default=(), compare=False)  # the spec path of its servers, for reports
    params: tuple[str, ...] = ()  # permanent KEY=VALUE parameters (mkfs.lustre/tunefs.lustre --param)
    mkfsoptions: str = ""  # mke2fs options at format (mkfs.lustre --mkfsoptions)

    def label(self, fsname: str) -> str:
        """The target's name as mkfs.lustre writes it (ldd_svname): MGS, or fsname-MDTxxxx / fsname-OSTxxxx."""
        return "MGS" if self.kind == "mgt" else f"{fsname}-{self.kind.upper()}{self.index:04x}"


@dataclass(frozen=True)
class LustreFs:
    """A Lustre file system the nodes of ``profiles`` mount over ``fabric`` through ``interfaces`` (per profile)."""

    name: str
    fsname: str
    mgs: tuple[tuple[str, ...], ...]  # failover nodes, each with its NIDs (a named server's: from the address plan)
    mountpoint: str
    fabric: str
    groups: tuple[str, ...]
    interfaces: Mapping[str, tuple[str, ...]]  # profile name -> netdevs, in profile order
    lnet: LnetSettings
    mount_options: tuple[str, ...]
    profile: str
    client: tuple[LustreTunable, ...]
    layouts: tuple[LustreLayout, ...]
    volume: LustreVolume | None
    position: SourcePosition = field(compare=False)
    mgs_servers: tuple[str, ...] = ()  # per MGS entry: the storage node it names, or "" for explicit NIDs
    mgs_positions: tuple[SourcePosition, ...] = field(default=(), compare=False)  # per MGS entry
    targets: tuple[LustreTarget, ...] = ()  # the MGT (if this file system declares it), MDTs and OSTs
    server_nids: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # every server named: its NIDs (compile)
    server_lnet: LnetSettings | None = None  # the servers' LNet values where tuning.servers overrides the clients'

    @property
    def serving_lnet(self) -> LnetSettings:
        """The LNet values the file system's servers run on its network."""
        return self.server_lnet or self.lnet

    @property
    def mgs_spec(self) -> str:
        """mount.lustre's device: NIDs of one MGS node joined by ',', failover nodes by ':', then :/fsname."""
        return ":".join(",".join(nids) for nids in self.mgs) + f":/{self.fsname}"
