"""Stage 3, build: validated spec data -> immutable :class:`Cluster`, with the semantic errors a schema
cannot express (unknown references, duplicate names, racks that overflow, profiles short of rails...).

Every issue found is collected and raised together, each with the file:line of the spec node at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fabricgen.core.document import Document, PathKey
from fabricgen.core.errors import SpecError, SpecIssue
from fabricgen.core.hints import choices_hint
from fabricgen.core.naming import DEVICE_NAME, RACK_NAME, expand, placeholders, unknown_placeholders
from fabricgen.features.cloud.build import build_cloud
from fabricgen.features.infiniband.build import build_subnet_manager
from fabricgen.features.lustre.build import build_lustre
from fabricgen.features.sriov.build import build_host_networking
from fabricgen.model.addressing import Addressing, LeafAsn
from fabricgen.model.cluster import (
    Cluster,
    Fabric,
    FabricRole,
    FabricTopologySpec,
    Metadata,
    Tier,
    TierPlacement,
    TopologyKind,
)
from fabricgen.model.ethernet import RoceQos, TrafficClass
from fabricgen.model.hardware import NicModel, Speed, SwitchModel
from fabricgen.model.infiniband import SubnetManager
from fabricgen.model.nodes import Facility, LocalVolume, Nic, NicRole, Node, NodeGroup, NodeProfile, Rack, rail_count
from fabricgen.spec import catalog
from fabricgen.spec.validate import validate_document, with_defaults
from fabricgen.stages.racks import RackSpace

DEFAULT_NAMING = {
    TopologyKind.RAIL_OPTIMIZED: {
        Tier.LEAF: "{fabric}-su{su:02d}-leaf{rail}",
        Tier.SPINE: "{fabric}-spine{n:03d}",
        Tier.CORE: "{fabric}-core{n:03d}",
    },
    TopologyKind.FAT_TREE: {
        Tier.LEAF: "{fabric}-leaf{n:03d}",
        Tier.SPINE: "{fabric}-spine{n:03d}",
        Tier.CORE: "{fabric}-core{n:03d}",
    },
    TopologyKind.LEAF_SPINE: {
        Tier.LEAF: "{fabric}-leaf{n:03d}",
        Tier.SPINE: "{fabric}-spine{n:02d}",
        Tier.CORE: "{fabric}-core{n:02d}",
    },
    TopologyKind.TOP_OF_RACK: {
        Tier.LEAF: "{fabric}-{rack}",
        Tier.SPINE: "{fabric}-agg{n:02d}",
        Tier.CORE: "{fabric}-core{n:02d}",
    },
}
# Placeholders each tier's name pattern may use, by topology kind.
ALLOWED_PLACEHOLDERS = {
    Tier.LEAF: {"fabric", "su", "rail", "n", "rack"},
    Tier.SPINE: {"fabric", "pod", "n"},
    Tier.CORE: {"fabric", "n"},
}
_FABRIC_TYPE_OF_SPEED = {"infiniband": {"infiniband"}, "ethernet": {"roce", "ethernet"}}
_LINK_TYPE = {"infiniband": "ib", "roce": "eth", "ethernet": "eth"}


def _lanes_text(options: frozenset[tuple[int, int]]) -> str:
    """Lane layouts for a message: ``4 x 100G or 8 x 50G``."""
    return " or ".join(f"{lanes} x {rate}G" for lanes, rate in sorted(options, key=lambda o: (-o[1], o[0])))


@dataclass
class _Builder:
    """Collects issues while turning spec data into model objects."""

    doc: Document
    data: dict[str, Any]
    issues: list[SpecIssue] = field(default_factory=list)
    facility_broken: bool = False
    built_nodes: tuple[Node, ...] = ()
    placer: _RackPlacer | None = None

    def error(self, path: PathKey, message: str, hint: str = "") -> None:
        self.issues.append(self.doc.issue(path, message, hint))

    # -- catalog -------------------------------------------------------------------------------------------
    def switch_models(self) -> dict[str, SwitchModel]:
        entries = catalog.merged("switches", self.data.get("catalog", {}).get("switches"))
        return {name: catalog.switch_model(name, e) for name, e in entries.items()}

    def nic_models(self) -> dict[str, NicModel]:
        entries = catalog.merged("nics", self.data.get("catalog", {}).get("nics"))
        return {name: catalog.nic_model(name, e) for name, e in entries.items()}

    # -- facility ------------------------------------------------------------------------------------------
    def facility(self) -> Facility:
        issues_before = len(self.issues)
        facility = self._facility()
        self.facility_broken = len(self.issues) > issues_before
        return facility

    def _facility(self) -> Facility:
        spec = self.data["facility"]
        rows = tuple((r["name"], int(r["racks"])) for r in spec["rows"])
        kinds = {r["name"]: r["kind"] for r in spec["rows"]}
        racks: list[Rack] = []
        seen_rows: dict[str, int] = {}
        for row_index, (row, count) in enumerate(rows):
            if row in seen_rows:
                self.error(
                    ("facility", "rows", row_index, "name"),
                    f"duplicate row {row!r}",
                    f"row {row} is already listed as rows[{seen_rows[row]}]",
                )
                continue
            seen_rows[row] = row_index
            for index in range(1, count + 1):
                name = expand(spec["rack_name"], {"row": row, "rack": index})
                racks.append(Rack(name, row, row_index, index, kinds[row]))
        names = [r.name for r in racks]
        if len(set(names)) != len(names):
            self.error(
                ("facility", "rack_name"),
                "the rack name pattern gives two racks the same name",
                "include both {row} and {rack}",
            )
        bad = [n for n in names if not RACK_NAME.fullmatch(n)]
        if bad:
            self.error(
                ("facility", "rack_name"),
                f"rack name {bad[0]!r} is not a valid name",
                "letters, digits and '-', at most 32 characters",
            )
        return Facility(
            int(spec["rack_units"]),
            float(spec["rack_width_m"]),
            float(spec["row_pitch_m"]),
            float(spec["tray_height_m"]),
            float(spec["slack_m"]),
            rows,
            tuple(racks),
            int(spec["switches_per_network_rack"]),
        )

    # -- node profiles -------------------------------------------------------------------------------------
    def profiles(self, nic_models: Mapping[str, NicModel]) -> dict[str, NodeProfile]:
        shipped = catalog.shipped("node_profiles")
        out: dict[str, NodeProfile] = {}
        for name, entry in shipped.entries.items():
            out[name] = self.profile(name, entry, nic_models, shipped.document, ("node_profiles", name))
        for name, entry in self.data["node_profiles"].items():
            out[name] = self.profile(name, entry, nic_models, self.doc, ("node_profiles", name))
        return out

    def profile(
        self,
        name: str,
        entry: Mapping[str, Any],
        nic_models: Mapping[str, NicModel],
        doc: Document,
        path: PathKey,
    ) -> NodeProfile:
        nics = entry["nics"]
        issues_before = len(self.issues)

        def nic(role: NicRole, index: int, e: Mapping[str, Any], where: PathKey) -> Nic:
            if e["model"] not in nic_models:
                self.issues.append(
                    doc.issue(
                        (*where, "model"),
                        f"unknown NIC model {e['model']!r}",
                        choices_hint(e["model"], nic_models),
                    )
                )
            return Nic(
                role,
                index,
                e["port"],
                e["model"],
                e.get("dev", ""),
                e.get("netdev", ""),
                e.get("gpu"),
                e.get("numa"),
                e.get("rail", index) if role is NicRole.COMPUTE else None,
                e.get("pci", ""),
            )

        compute = tuple(
            nic(NicRole.COMPUTE, i, e, (*path, "nics", "compute", i))
            for i, e in enumerate(nics.get("compute", []))
        )
        storage = tuple(
            nic(NicRole.STORAGE, i, e, (*path, "nics", "storage", i))
            for i, e in enumerate(nics.get("storage", []))
        )
        inband = (
            nic(NicRole.INBAND, 0, nics["inband"], (*path, "nics", "inband")) if "inband" in nics else None
        )
        bmc = nic(NicRole.BMC, 0, nics["bmc"], (*path, "nics", "bmc")) if "bmc" in nics else None
        gpus = int(entry.get("gpus", 0))
        self.profile_consistency(doc, path, compute, storage, inband, bmc, gpus)
        if len(self.issues) > issues_before and doc is not self.doc:
            raise SpecError(self.issues[issues_before:])  # a broken shipped profile is a packaging bug
        return NodeProfile(
            name,
            entry.get("role", "compute"),
            int(entry["height_u"]),
            gpus,
            compute,
            storage,
            inband,
            bmc,
            doc.position(path),
            entry.get("memory_gb"),
            LocalVolume(entry["local_nvme"]["path"], entry["local_nvme"]["capacity_gib"]) if "local_nvme" in entry
            else None,
        )

    def profile_consistency(
        self,
        doc: Document,
        path: PathKey,
        compute: tuple[Nic, ...],
        storage: tuple[Nic, ...],
        inband: Nic | None,
        bmc: Nic | None,
        gpus: int,
    ) -> None:
        rails: dict[int, int] = {}
        for nic in compute:
            where = (*path, "nics", "compute", nic.index)
            if nic.rail is not None and nic.rail in rails:
                self.issues.append(
                    doc.issue(
                        (*where, "rail"),
                        f"rail {nic.rail} is served twice",
                        f"compute[{rails[nic.rail]}] already serves it",
                    )
                )
            elif nic.rail is not None:
                rails[nic.rail] = nic.index
            if nic.gpu is not None and nic.gpu >= gpus:
                self.issues.append(
                    doc.issue(
                        (*where, "gpu"),
                        f"GPU {nic.gpu} does not exist",
                        f"the profile has {gpus} GPUs (0..{gpus - 1})" if gpus else "the profile has no GPUs; set gpus",
                    )
                )
        seen: dict[tuple[str, str], str] = {}
        all_nics = [*compute, *storage, *(n for n in (inband, bmc) if n)]
        for nic in all_nics:
            where = (
                (*path, "nics", nic.role.value, nic.index)
                if nic.role in (NicRole.COMPUTE, NicRole.STORAGE)
                else (*path, "nics", nic.role.value)
            )
            for kind, value in (("port", nic.port), ("netdev", nic.netdev), ("dev", nic.dev)):
                if not value or (kind == "dev" and nic.role is not NicRole.COMPUTE):
                    continue  # several storage ports may share an RDMA device on a dual-port card
                if (kind, value) in seen:
                    self.issues.append(
                        doc.issue(
                            (*where, kind),
                            f"{kind} {value!r} is used twice in this profile",
                            f"also used by {seen[(kind, value)]}",
                        )
                    )
                seen[(kind, value)] = f"{nic.role.value}[{nic.index}]"

    # -- nodes ---------------------------------------------------------------------------------------------
    def nodes(
        self, facility: Facility, profiles: Mapping[str, NodeProfile]
    ) -> tuple[tuple[NodeGroup, ...], tuple[Node, ...]]:
        placer = self.placer = _RackPlacer(facility, broken=self.facility_broken)
        groups: list[NodeGroup] = []
        nodes: list[Node] = []
        first_owner: dict[str, str] = {}
        group_names: dict[str, int] = {}
        for gi, spec in enumerate(self.data["nodes"]):
            path: PathKey = ("nodes", gi)
            pattern = spec["name"]
            if pattern in group_names:
                self.error(
                    (*path, "name"),
                    f"node group {pattern!r} is listed twice",
                    f"first as nodes[{group_names[pattern]}]",
                )
                continue
            group_names[pattern] = gi
            if spec["profile"] not in profiles:
                self.error(
                    (*path, "profile"),
                    f"unknown node profile {spec['profile']!r}",
                    choices_hint(spec["profile"], profiles),
                )
                continue
            if not self.valid_node_pattern(path, pattern, spec["count"]):
                continue
            profile = profiles[spec["profile"]]
            names = [expand(pattern, {"n": spec["start"] + i}) for i in range(spec["count"])]
            for name in names:
                if not DEVICE_NAME.fullmatch(name):
                    self.error(
                        (*path, "name"),
                        f"node name {name!r} is not a valid host name",
                        "lower-case letters, digits and '-', at most 63 characters",
                    )
                    break
                if name in first_owner:
                    self.error(
                        (*path, "name"),
                        f"node name {name!r} is already used by group {first_owner[name]!r}",
                        "change the pattern or its start",
                    )
                    break
                first_owner[name] = pattern
            slots = placer.place(
                self, (*path, "placement"), pattern, spec["count"], profile.height_u, spec["placement"]
            )
            nodes.extend(
                Node(name, pattern, profile, rack, u) for name, (rack, u) in zip(names, slots, strict=False)
            )
            groups.append(NodeGroup(pattern, profile.name, spec["count"], self.doc.position(path)))
        self.built_nodes = tuple(nodes)
        return tuple(groups), self.built_nodes

    def valid_node_pattern(self, path: PathKey, pattern: str, count: int) -> bool:
        unknown = unknown_placeholders(pattern, {"n"})
        if unknown:
            self.error(
                (*path, "name"),
                f"unknown placeholder {{{unknown[0]}}} in node name pattern",
                "only {n} is available, e.g. gpu{n:03d}",
            )
            return False
        if count > 1 and "n" not in placeholders(pattern):
            self.error(
                (*path, "name"), f"{count} nodes would all be named {pattern!r}", "add {n}, e.g. gpu{n:03d}"
            )
            return False
        return True

    # -- fabrics -------------------------------------------------------------------------------------------
    def fabrics(
        self,
        profiles: Mapping[str, NodeProfile],
        groups: tuple[NodeGroup, ...],
        switch_models: Mapping[str, SwitchModel],
        nic_models: Mapping[str, NicModel],
    ) -> tuple[Fabric, ...]:
        speeds = catalog.speeds()
        out = []
        for name, spec in self.data["fabrics"].items():
            fabric = self.fabric(name, spec, profiles, groups, switch_models, nic_models, speeds)
            if fabric is not None:
                out.append(fabric)
        self.check_single_attachment(out)
        return tuple(out)

    def check_single_attachment(self, fabrics: list[Fabric]) -> None:
        """A NIC port has one cable: two fabrics of one role must not attach the same node group."""
        owner: dict[tuple[str, FabricRole], str] = {}
        for fabric in fabrics:
            for group in fabric.node_groups:
                first = owner.setdefault((group, fabric.role), fabric.name)
                if first != fabric.name:
                    self.error(("fabrics", fabric.name), f"the {fabric.role.nic_role.value} NICs of node group "
                                                         f"{group!r} already attach to fabric {first!r}",
                               "list the node groups of each fabric with nodes:, each group in one fabric per role")

    def fabric(
        self,
        name: str,
        spec: Mapping[str, Any],
        profiles: Mapping[str, NodeProfile],
        groups: tuple[NodeGroup, ...],
        switch_models: Mapping[str, SwitchModel],
        nic_models: Mapping[str, NicModel],
        speeds: Mapping[str, Speed],
    ) -> Fabric | None:
        path: PathKey = ("fabrics", name)
        role_name = spec.get("role", name)
        if role_name not in {r.value for r in FabricRole}:
            self.error(
                path,
                f"fabric {name!r} has no role and its name is not one",
                "add role: compute | storage | inband | oob",
            )
            return None
        role = FabricRole(role_name)
        kind = TopologyKind(spec["topology"]["kind"])
        if kind is TopologyKind.RAIL_OPTIMIZED and role is not FabricRole.COMPUTE:
            self.error((*path, "topology", "kind"), f"rail-optimized fabrics attach compute NICs (one per rail), "
                                                    f"but this fabric's role is {role.value}",
                       "use kind: leaf-spine or fat-tree, or role: compute")
        if kind is TopologyKind.LEAF_SPINE and spec["topology"]["tiers"] == 3:
            self.error((*path, "topology", "tiers"), "leaf-spine fabrics have at most two tiers",
                       "use kind: fat-tree for three tiers")
        speed, uplink = speeds[spec["speed"]], speeds[spec.get("uplink_speed", spec["speed"])]
        for key, s in (("speed", speed), ("uplink_speed", uplink)):
            if key in spec and spec["type"] not in _FABRIC_TYPE_OF_SPEED[s.type]:
                self.error(
                    (*path, key),
                    f"{s.name} is an {s.type} speed but the fabric type is {spec['type']}",
                    "InfiniBand fabrics use HDR100..XDR; Ethernet and RoCE fabrics use 1G..800G",
                )
        models = self.fabric_switches(path, spec, kind, speed, uplink, switch_models)
        attached = self.attached_groups(path, spec, role, groups, profiles)
        self.check_nic_speeds(path, spec, role, attached, groups, profiles, nic_models, speed,
                              models.get(Tier.LEAF) if models else None)
        naming = self.fabric_naming(path, kind, spec.get("naming", {}))
        if models is None:
            return None
        topo = spec["topology"]
        topology = FabricTopologySpec(
            kind,
            int(topo["scalable_unit"]),
            str(topo["tiers"]),
            float(topo["oversubscription"]),
            topo.get("uplinks"),
        )
        placement = self.fabric_placement(path, spec.get("placement", {}), kind)
        subnet_manager = self.fabric_subnet_manager(path, spec, attached, profiles)
        ethernet = self.fabric_ethernet(path, spec)
        return Fabric(
            name,
            role,
            spec["type"],
            speed,
            uplink,
            MappingProxyType(models),
            topology,
            MappingProxyType(naming),
            attached,
            self.doc.position((*path, "topology")),
            MappingProxyType(placement),
            subnet_manager,
            **ethernet,
        )

    def fabric_ethernet(self, path: PathKey, spec: Mapping[str, Any]) -> dict[str, Any]:
        """NOS, MTUs, the RoCE class and the address plan; InfiniBand fabrics have none of them."""
        ethernet_only = ("nos", "mtu", "host_mtu", "qos")
        if spec["type"] == "infiniband":
            for key in ethernet_only:
                if key in spec:
                    self.error((*path, key), f"{key} applies to Ethernet and RoCE fabrics only",
                               "InfiniBand fabrics are configured through subnet_manager")
            return {"addressing": self.addressing(path, spec["addressing"], ipoib=True)} if "addressing" in spec else {}
        if spec["type"] != "roce" and "qos" in spec:
            self.error((*path, "qos"), "a lossless QoS class needs type: roce", "use type: roce or remove qos")
        nos = spec.get("nos", "sonic")
        out: dict[str, Any] = {
            "nos": MappingProxyType({t: nos if isinstance(nos, str) else nos.get(t.value, nos.get("leaf", "sonic"))
                                     for t in Tier}),
            "mtu": spec.get("mtu", 9100),
            "host_mtu": spec.get("host_mtu", 9000),
        }
        if out["host_mtu"] > out["mtu"]:
            self.error((*path, "host_mtu"), f"host MTU {out['host_mtu']} exceeds the switch MTU {out['mtu']}",
                       "switch ports must carry the hosts' largest frames")
        if spec["type"] == "roce":
            q = with_defaults(spec.get("qos", {}), "sections/ethernet.schema.json#/$defs/qos")
            out["qos"] = self.roce_qos(path, q, set(out["nos"].values()))
            self.watchdog_support(path, set(out["nos"].values()), q["pfc_watchdog"]["action"])
        if "addressing" in spec:
            out["addressing"] = self.addressing(path, spec["addressing"], ipoib=False)
        return out

    def addressing(self, path: PathKey, spec: Mapping[str, Any], ipoib: bool) -> Addressing:
        """The fabric's pools: IPoIB fabrics carry hosts (and management) only; routed Ethernet needs all three."""
        where = (*path, "addressing")
        if ipoib:
            for key in ("p2p", "loopbacks", "asn"):
                if key in spec:
                    self.error((*where, key), f"{key} applies to routed Ethernet and RoCE fabrics only",
                               "an InfiniBand fabric's addressing holds hosts (IPoIB) and management")
        else:
            for key in ("p2p", "loopbacks"):
                if key not in spec:
                    self.error(where, f"an Ethernet fabric's addressing needs {key}",
                               "give hosts, p2p and loopbacks pools")
        a = with_defaults(spec, "sections/ethernet.schema.json#/$defs/addressing")
        asn = a.get("asn", {})
        leaves = tuple(LeafAsn(leaf, number, self.doc.position((*where, "asn", "leaves", leaf)))
                       for leaf, number in asn.get("leaves", {}).items())
        return Addressing(a["hosts"], a.get("p2p", ""), a.get("loopbacks", ""), a.get("management"),
                          asn.get("core", 64900), asn.get("spine", 65000), asn.get("leaf_base", 65100),
                          self.doc.position(where), a.get("management_gateway"), leaves)

    def watchdog_support(self, path: PathKey, systems: set[str], action: str) -> None:
        """EOS has no 'forward' watchdog action; NVUE's watchdog always drops."""
        supported = {"sonic": {"drop", "forward", "alert"}, "eos": {"drop", "alert"}, "nvue": {"drop"}}
        for nos in sorted(systems):
            if action not in supported[nos]:
                self.error((*path, "qos", "pfc_watchdog", "action"), f"{nos} has no PFC watchdog action {action!r}",
                           f"{nos} supports: {', '.join(sorted(supported[nos]))}")

    def roce_qos(self, path: PathKey, q: Mapping[str, Any], systems: set[str]) -> RoceQos:
        lossless = TrafficClass(q["lossless"]["dscp"], q["lossless"]["priority"])
        cnp = TrafficClass(q["cnp"]["dscp"], q["cnp"]["priority"])
        where = (*path, "qos")
        if lossless.priority == cnp.priority:
            self.error((*where, "cnp", "priority"), f"CNP shares priority {cnp.priority} with the lossless class",
                       "CNPs need their own strict-priority queue (NVIDIA's default: 6)")
        if lossless.dscp == cnp.dscp:
            self.error((*where, "cnp", "dscp"), f"CNP shares DSCP {cnp.dscp} with the lossless class",
                       "use distinct DSCPs (defaults: 26 lossless, 48 CNP)")
        ecn = q["ecn"]
        if ecn["min_kb"] > ecn["max_kb"]:
            self.error((*where, "ecn", "min_kb"), f"ECN minimum {ecn['min_kb']} KB is above the maximum "
                                                 f"{ecn['max_kb']} KB", "WRED needs min <= max")
        shp = q.get("shared_headroom_pool")
        if q["buffer_model"] == "dynamic":
            self._sonic_only((*where, "buffer_model"), systems, "the dynamic buffer model",
                             "use buffer_model: traditional")
        if shp is not None:
            self._sonic_only((*where, "shared_headroom_pool"), systems, "the shared headroom pool",
                             "remove shared_headroom_pool")
        wd = q["pfc_watchdog"]
        return RoceQos(lossless, cnp, ecn["min_kb"], ecn["max_kb"], ecn["max_probability"], wd["detect_ms"],
                       wd["restore_ms"], wd["action"], q["lossless_weight"], q["buffer_model"],
                       shp["over_subscribe_ratio"] if shp is not None else 0,
                       self.doc.position((*where, "shared_headroom_pool", "over_subscribe_ratio"))
                       if shp is not None else None)

    def _sonic_only(self, where: PathKey, systems: set[str], what: str, instead: str) -> None:
        """A SONiC buffer feature on a fabric whose switches (some or all) run NVUE or EOS, which size lossless
        headroom themselves."""
        others = sorted(systems - {"sonic"})
        if not others:
            return
        which = "some of this fabric's switches" if "sonic" in systems else "this fabric's switches"
        self.error(where, f"{what} is SONiC's, but {which} run {' and '.join(others)}",
                   f"NVUE and EOS size lossless headroom themselves: {instead}, or nos: sonic on every tier")

    def fabric_subnet_manager(self, path: PathKey, spec: Mapping[str, Any], attached: tuple[str, ...],
                              profiles: Mapping[str, NodeProfile]) -> SubnetManager | None:
        if spec["type"] == "infiniband" and "subnet_manager" not in spec:
            spec = {**spec, "subnet_manager": with_defaults({}, "sections/subnet_manager.schema.json")}
        if "subnet_manager" not in spec:
            return None
        if spec["type"] != "infiniband":
            self.error((*path, "subnet_manager"), "only InfiniBand fabrics have a subnet manager",
                       "remove subnet_manager or use type: infiniband")
            return None
        groups = {g["name"]: g["profile"] for g in self.data["nodes"]}
        rails = rail_count(profiles[groups[g]] for g in attached if groups.get(g) in profiles)
        return build_subnet_manager(self.doc, (*path, "subnet_manager"), spec["subnet_manager"], self.built_nodes,
                                    attached, rails, self.issues)

    def fabric_placement(self, path: PathKey, spec: Mapping[str, Any], kind: TopologyKind
                         ) -> dict[Tier, TierPlacement]:
        """Explicit tier placements; tiers without one are resolved to the network rows at compile time."""
        out: dict[Tier, TierPlacement] = {}
        if self.placer is None:
            return out
        for tier_name, placement in spec.items():
            where = (*path, "placement", tier_name)
            if tier_name == "leaf" and kind is TopologyKind.TOP_OF_RACK:
                self.error(where, "top-of-rack leaves sit at the top of their own rack", "remove placement.leaf")
                continue
            racks = self.placer.candidates(self, where, placement)
            if racks is not None:
                out[Tier(tier_name)] = TierPlacement(tuple(racks), placement["per_rack"], placement["start_u"])
        return out

    def fabric_switches(
        self,
        path: PathKey,
        spec: Mapping[str, Any],
        kind: TopologyKind,
        speed: Speed,
        uplink: Speed,
        switch_models: Mapping[str, SwitchModel],
    ) -> dict[Tier, SwitchModel] | None:
        chosen = spec["switch"]
        by_tier = (
            dict.fromkeys(Tier, chosen)
            if isinstance(chosen, str)
            else {t: chosen.get(t.value, chosen.get("spine", chosen["leaf"])) for t in Tier}
        )
        models: dict[Tier, SwitchModel] = {}
        reported: set[tuple[str, str]] = set()  # one model for several tiers is reported once per problem

        def once(where: PathKey, message: str, hint: str) -> None:
            if (str(where), message) not in reported:
                reported.add((str(where), message))
                self.error(where, message, hint)

        for tier, model_name in by_tier.items():
            where = (*path, "switch") if isinstance(chosen, str) else (*path, "switch", tier.value)
            if model_name not in switch_models:
                if tier.value in (chosen if isinstance(chosen, dict) else {"leaf": 1}):
                    once(where, f"unknown switch model {model_name!r}", choices_hint(model_name, switch_models))
                continue
            model = switch_models[model_name]
            wanted = "infiniband" if spec["type"] == "infiniband" else "ethernet"
            if model.fabric_type != wanted:
                once(where, f"{model_name} is an {model.fabric_type} switch but the fabric type is {spec['type']}",
                     f"choose an {wanted} switch")
                continue
            needs = [speed.name] if tier is Tier.LEAF else []
            needs.append(uplink.name)
            for s in needs:
                if model.logical_ports(s) == 0 and speed.type == model.fabric_type:
                    supported = ", ".join(sorted({k for g in model.port_groups for k in g.speeds}))
                    once(where, f"{model_name} has no port that runs at {s}", f"speeds it supports: {supported}")
            models[tier] = model
        return models if len(models) == len(Tier) else None

    def attached_groups(
        self,
        path: PathKey,
        spec: Mapping[str, Any],
        role: FabricRole,
        groups: tuple[NodeGroup, ...],
        profiles: Mapping[str, NodeProfile],
    ) -> tuple[str, ...]:
        by_pattern = {g.pattern: g for g in groups}
        if "nodes" in spec:
            chosen = []
            for i, pattern in enumerate(spec["nodes"]):
                if pattern not in by_pattern:
                    self.error(
                        (*path, "nodes", i),
                        f"unknown node group {pattern!r}",
                        choices_hint(pattern, by_pattern),
                    )
                elif not profiles[by_pattern[pattern].profile].nics(role.nic_role):
                    self.error(
                        (*path, "nodes", i),
                        f"node group {pattern!r} has no {role.nic_role.value} NIC",
                        f"its profile {by_pattern[pattern].profile} lists none",
                    )
                else:
                    chosen.append(pattern)
            return tuple(chosen)
        attached = tuple(g.pattern for g in groups if profiles[g.profile].nics(role.nic_role))
        if not attached and len(groups) == len(self.data["nodes"]):  # else a rejected group was already reported
            self.error(
                path,
                f"no node has a {role.nic_role.value} NIC to attach to this fabric",
                f"add nics.{role.nic_role.value} to a node profile",
            )
        return attached

    def check_nic_speeds(
        self,
        path: PathKey,
        spec: Mapping[str, Any],
        role: FabricRole,
        attached: tuple[str, ...],
        groups: tuple[NodeGroup, ...],
        profiles: Mapping[str, NodeProfile],
        nic_models: Mapping[str, NicModel],
        speed: Speed,
        leaf: SwitchModel | None,
    ) -> None:
        by_pattern = {g.pattern: g for g in groups}
        link_type = _LINK_TYPE[spec["type"]]
        reported: set[tuple[str, str]] = set()
        for pattern in attached:
            profile = profiles[by_pattern[pattern].profile]
            for nic in profile.nics(role.nic_role):
                model = nic_models.get(nic.model)
                if model is None or (profile.name, nic.model) in reported:
                    continue
                reported.add((profile.name, nic.model))
                if speed.name not in model.speeds:
                    self.error(
                        (*path, "speed"),
                        f"NIC {nic.model} of profile {profile.name} cannot run at {speed.name}",
                        "it supports " + ", ".join(model.speeds),
                    )
                elif link_type not in model.link_types:
                    self.error(
                        (*path, "type"),
                        f"NIC {nic.model} of profile {profile.name} has no {link_type} link type",
                        "choose another NIC model or fabric type",
                    )
                elif leaf is not None and speed.type == "ethernet":
                    self.check_lanes(path, f"NIC {nic.model} of profile {profile.name}", model, leaf, speed)
        if (
            role is FabricRole.COMPUTE
            and TopologyKind(spec["topology"]["kind"]) is TopologyKind.RAIL_OPTIMIZED
        ):
            self.check_rails(path, attached, by_pattern, profiles)

    def check_lanes(self, path: PathKey, who: str, nic: NicModel, leaf: SwitchModel, speed: Speed) -> None:
        """A NIC and its leaf port must run an Ethernet speed on the same lanes (4 x 100G-PAM4 does not link with
        8 x 50G-PAM4). Checked only where the catalog gives lanes and lane rates for both ends."""
        host = nic.lane_options(speed)
        switch = {g.name: g.lane_options(speed) for g in leaf.port_groups}
        known = {name: options for name, options in switch.items() if options}
        if not host or not known or any(host & options for options in known.values()):
            return
        self.error(
            (*path, "speed"),
            f"{who} runs {speed.name} as {_lanes_text(host)} but {leaf.name} ports run it as "
            f"{_lanes_text(frozenset().union(*known.values()))}: the link does not come up",
            f"use a leaf whose ports run {speed.name} as {_lanes_text(host)}, or a fabric speed both run on the "
            "same lanes",
        )

    def check_rails(
        self,
        path: PathKey,
        attached: tuple[str, ...],
        by_pattern: Mapping[str, NodeGroup],
        profiles: Mapping[str, NodeProfile],
    ) -> None:
        """Every compute node must cover all rails; management nodes may attach to some of them."""
        rails = rail_count(profiles[by_pattern[p].profile] for p in attached)
        for pattern in attached:
            profile = profiles[by_pattern[pattern].profile]
            if profile.role == "management":
                continue
            missing = sorted(set(range(rails)) - profile.rails)
            if missing:
                self.error(
                    (*path, "topology"),
                    f"node profile {profile.name} has {len(profile.compute)} compute "
                    f"NICs but the fabric has {rails} rails (missing rails "
                    f"{', '.join(map(str, missing))})",
                    "give the profile one compute NIC per rail, or role: management",
                )

    def fabric_naming(self, path: PathKey, kind: TopologyKind, spec: Mapping[str, str]) -> dict[Tier, str]:
        naming = dict(DEFAULT_NAMING[kind])
        for tier_name, pattern in spec.items():
            tier = Tier(tier_name)
            allowed = set(ALLOWED_PLACEHOLDERS[tier])
            if tier is Tier.LEAF:
                allowed -= {"su", "rail"} if kind is not TopologyKind.RAIL_OPTIMIZED else {"rack", "n"}
                if kind is not TopologyKind.TOP_OF_RACK:
                    allowed.discard("rack")
            unknown = unknown_placeholders(pattern, allowed)
            if unknown:
                self.error(
                    (*path, "naming", tier_name),
                    f"{{{unknown[0]}}} is not available for {kind.value} {tier_name} names",
                    "available: " + ", ".join(f"{{{a}}}" for a in sorted(allowed)),
                )
            naming[tier] = pattern
        return naming


class _RackPlacer:
    """Fills racks bottom-up, group by group in spec order (the only order-dependent step, and documented)."""

    def __init__(self, facility: Facility, broken: bool) -> None:
        self.facility = facility
        self.broken = broken  # racks are misnamed: placement results would only add noise
        self.racks = {r.name: r for r in facility.racks}
        self.space = RackSpace(facility)

    def candidates(self, builder: _Builder, path: PathKey, placement: Mapping[str, Any]) -> list[Rack] | None:
        rows = {row for row, _ in self.facility.rows}
        if "racks" in placement:
            unknown = [i for i, name in enumerate(placement["racks"]) if name not in self.racks]
            for i in unknown:
                builder.error(
                    (*path, "racks", i),
                    f"unknown rack {placement['racks'][i]!r}",
                    choices_hint(placement["racks"][i], self.racks),
                )
            return None if unknown else [self.racks[n] for n in placement["racks"]]
        unknown = [i for i, row in enumerate(placement["rows"]) if row not in rows]
        for i in unknown:
            builder.error(
                (*path, "rows", i),
                f"unknown row {placement['rows'][i]!r}",
                choices_hint(placement["rows"][i], rows),
            )
        if unknown:
            return None
        order = {row: i for i, row in enumerate(placement["rows"])}
        return sorted(
            (r for r in self.facility.racks if r.row in order), key=lambda r: (order[r.row], r.index)
        )

    def place(
        self,
        builder: _Builder,
        path: PathKey,
        group: str,
        count: int,
        height: int,
        placement: Mapping[str, Any],
    ) -> list[tuple[Rack, int]]:
        racks = self.candidates(builder, path, placement)
        if racks is None or self.broken:
            return []
        per_rack, start_u, top = placement["per_rack"], placement["start_u"], self.facility.rack_units
        if start_u + height - 1 > top:
            builder.error((*path, "start_u"), f"a node of {height}U starting at U{start_u} does not fit a {top}U rack",
                          f"start_u at most {top - height + 1}")
            return []
        if start_u + per_rack * height - 1 > top:
            builder.error(
                (*path, "per_rack"),
                f"{per_rack} nodes of {height}U starting at U{start_u} would reach U{start_u + per_rack * height - 1}"
                f" but racks have {top}U",
                f"at most {(top - start_u + 1) // height} per rack",
            )
            return []
        slots = self.space.fill(racks, count, height, per_rack, start_u)
        if len(slots) == count:
            return slots
        builder.error(
            path,
            f"{count - len(slots)} of {count} nodes of group {group!r} do not fit in their racks",
            f"{len(racks)} racks with {per_rack} per rack hold {len(slots)}; add racks or rows",
        )
        return slots


def build_cluster(doc: Document) -> Cluster:
    """Validate a loaded spec and build the Cluster model, raising :class:`SpecError` with every issue."""
    data = validate_document(doc)
    if "cloud" in data:
        return build_cloud(doc, data)
    builder = _Builder(doc, data)
    switch_models = builder.switch_models()
    nic_models = builder.nic_models()
    facility = builder.facility()
    profiles = builder.profiles(nic_models)
    groups, nodes = builder.nodes(facility, profiles)
    fabrics = builder.fabrics(profiles, groups, switch_models, nic_models)
    fabrics, kubernetes = build_host_networking(doc, data, fabrics, nodes, nic_models, builder.issues)
    lustre = build_lustre(doc, data["lustre"], profiles, groups, fabrics, builder.issues)
    if builder.issues:
        raise SpecError(builder.issues)
    meta = data["metadata"]
    used_profiles = {g.profile for g in groups}
    return Cluster(
        Metadata(meta["name"], meta["site"], meta.get("description", "")),
        facility,
        MappingProxyType({k: v for k, v in profiles.items() if k in used_profiles}),
        groups,
        nodes,
        fabrics,
        MappingProxyType(nic_models),
        doc.digest,
        doc.source,
        catalog.media(data.get("catalog", {}).get("media")),
        lustre=lustre,
        kubernetes=kubernetes,
    )
