"""The core of a fabric, built before any feature adds its sections: its role, type and speeds, switch models
per tier, the node groups it attaches (and whether their NICs run its speed, lanes and rails), the topology asked
for, switch naming and placement. A fabric whose switches cannot be resolved is left out (its problems reported),
so no feature builds on a fabric the compiler could not compile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.hints import choices_hint
from fabricgen.core.issues import Issues
from fabricgen.core.naming import unknown_placeholders
from fabricgen.model.cluster import (
    Attachment,
    Fabric,
    FabricRole,
    FabricTopologySpec,
    FabricType,
    Tier,
    TierPlacement,
    TopologyKind,
)
from fabricgen.model.hardware import NicModel, Speed, SwitchModel
from fabricgen.model.nodes import NodeGroup, NodeProfile, rail_count
from fabricgen.spec import catalog
from fabricgen.stages.racks import RackPlacer

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


def _switches_for(family: str, speed: Speed, switch_models: Mapping[str, SwitchModel]) -> str:
    """The hint for a switch of the other family: the catalog's switches of the fabric's family that run its speed
    (the Spectrum switches that run RoCE at 200G, say, when a spec asks for an InfiniBand-only Quantum)."""
    fitting = sorted(name for name, m in switch_models.items()
                     if m.fabric_type == family and m.logical_ports(speed.name) > 0)
    if not fitting or speed.type != family:
        return f"choose an {family} switch"
    return f"choose an {family} switch that runs {speed.name}: {', '.join(fitting)}"


def _lanes_text(options: frozenset[tuple[int, int]]) -> str:
    """Lane layouts for a message: ``4 x 100G or 8 x 50G``."""
    return " or ".join(f"{lanes} x {rate}G" for lanes, rate in sorted(options, key=lambda o: (-o[1], o[0])))


@dataclass
class FabricBuilder:
    """Builds the fabrics of the spec, reporting to ``issues``; ``placer`` resolves explicit tier placements
    (None when the facility is broken: placement results would only add noise)."""

    issues: Issues
    data: Mapping[str, Any]
    placer: RackPlacer | None

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
                    self.issues.error(("fabrics", fabric.name),
                                      f"the {fabric.role.nic_role.value} NICs of node group {group!r} already attach "
                                      f"to fabric {first!r}",
                                      "list the node groups of each fabric with nodes:, each group in one fabric per "
                                      "role")

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
            self.issues.error(
                path,
                f"fabric {name!r} has no role and its name is not one",
                "add role: compute | storage | inband | oob",
            )
            return None
        role = FabricRole(role_name)
        kind = TopologyKind(spec["topology"]["kind"])
        if kind is TopologyKind.RAIL_OPTIMIZED and role is not FabricRole.COMPUTE:
            self.issues.error((*path, "topology", "kind"),
                              f"rail-optimized fabrics attach compute NICs (one per rail), but this fabric's role is "
                              f"{role.value}",
                              "use kind: leaf-spine or fat-tree, or role: compute")
        if kind is TopologyKind.LEAF_SPINE and spec["topology"]["tiers"] == 3:
            self.issues.error((*path, "topology", "tiers"), "leaf-spine fabrics have at most two tiers",
                              "use kind: fat-tree for three tiers")
        speed, uplink = speeds[spec["speed"]], speeds[spec.get("uplink_speed", spec["speed"])]
        for key, s in (("speed", speed), ("uplink_speed", uplink)):
            if key in spec and FabricType(spec["type"]).family != s.type:
                self.issues.error(
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
            self.attachment(path, topo, kind, role, FabricType(spec["type"])),
            self.server_ports(path, topo, kind),
            self.max_scalable_units(path, topo, kind),
            self.issues.position((*path, "topology", "max_scalable_units")) if "max_scalable_units" in topo else None,
        )
        placement = self.fabric_placement(path, spec.get("placement", {}), kind)
        return Fabric(
            name,
            role,
            FabricType(spec["type"]),
            speed,
            uplink,
            MappingProxyType(models),
            topology,
            MappingProxyType(naming),
            attached,
            self.issues.position((*path, "topology")),
            MappingProxyType(placement),
        )

    def attachment(self, path: PathKey, topo: Mapping[str, Any], kind: TopologyKind, role: FabricRole,
                   type_: FabricType) -> Attachment:
        """Dual-homed by default where NVIDIA's reference architectures cable it so (storage) and the leaves are
        packed; rail-optimized and top-of-rack leaves are fixed by rail and rack, so they take single only. MLAG
        pairs carry LACP bonds of plain Ethernet: RDMA over a bond needs RoCE LAG, which fabricgen does not plan."""
        packed = kind in (TopologyKind.FAT_TREE, TopologyKind.LEAF_SPINE)
        if "attachment" not in topo:
            return Attachment.DUAL_HOMED if packed and role is FabricRole.STORAGE else Attachment.SINGLE
        asked = Attachment(topo["attachment"])
        where = (*path, "topology", "attachment")
        if asked.paired and not packed:
            self.issues.error(where, f"{kind.value} leaves are fixed by "
                              f"{'rail' if kind is TopologyKind.RAIL_OPTIMIZED else 'rack'}, so a node's ports "
                              "cannot alternate between a leaf pair",
                              f"use kind: leaf-spine or fat-tree for {asked.value} nodes, or attachment: single")
        if asked is Attachment.MLAG and type_ is not FabricType.ETHERNET:
            self.issues.error(where, f"an MLAG pair carries LACP bonds, and a {type_.value} fabric's ports are not "
                              "bonded: " + ("RDMA over a Linux bond needs RoCE LAG (both members on one ConnectX "
                                            "card), which fabricgen does not plan" if type_ is FabricType.ROCE
                                            else "InfiniBand has no LACP"),
                              "use attachment: dual-homed (each port routed in its own leaf's subnet; LNet and NCCL "
                              "run multi-rail over the ports)")
        return asked

    def server_ports(self, path: PathKey, topo: Mapping[str, Any], kind: TopologyKind) -> int | None:
        """A block of server ports is a packed fabric's: rail-optimized slots and top-of-rack leaves are fixed by
        rail and rack, not filled port by port."""
        ports = topo.get("server_ports")
        if ports is not None and kind not in (TopologyKind.FAT_TREE, TopologyKind.LEAF_SPINE):
            self.issues.error((*path, "topology", "server_ports"),
                              f"{kind.value} leaves are fixed by "
                              f"{'rail and scalable unit' if kind is TopologyKind.RAIL_OPTIMIZED else 'rack'}, so no "
                              "block of their ports can be kept for servers",
                              "remove server_ports, or use kind: leaf-spine or fat-tree")
        return None if ports is None else int(ports)

    def max_scalable_units(self, path: PathKey, topo: Mapping[str, Any], kind: TopologyKind) -> int | None:
        """The SUs a rail-optimized fabric is planned to grow to, which its IPoIB rail subnets are sized for; other
        kinds have no SUs to plan. That it is at least the SUs built is checked once compile has built them."""
        if "max_scalable_units" not in topo:
            return None
        if kind is not TopologyKind.RAIL_OPTIMIZED:
            self.issues.error((*path, "topology", "max_scalable_units"),
                              f"{kind.value} fabrics have no scalable units to plan for",
                              "remove max_scalable_units, or use kind: rail-optimized")
            return None
        return int(topo["max_scalable_units"])

    def fabric_placement(self, path: PathKey, spec: Mapping[str, Any], kind: TopologyKind
                         ) -> dict[Tier, TierPlacement]:
        """Explicit tier placements; tiers without one are resolved to the network rows at compile time."""
        out: dict[Tier, TierPlacement] = {}
        if self.placer is None:
            return out
        for tier_name, placement in spec.items():
            where = (*path, "placement", tier_name)
            if tier_name == "leaf" and kind is TopologyKind.TOP_OF_RACK:
                self.issues.error(where, "top-of-rack leaves sit at the top of their own rack", "remove placement.leaf")
                continue
            racks = self.placer.candidates(self.issues, where, placement)
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
                self.issues.error(where, message, hint)

        for tier, model_name in by_tier.items():
            where = (*path, "switch") if isinstance(chosen, str) else (*path, "switch", tier.value)
            if model_name not in switch_models:
                if tier.value in (chosen if isinstance(chosen, dict) else {"leaf": 1}):
                    once(where, f"unknown switch model {model_name!r}", choices_hint(model_name, switch_models))
                continue
            model = switch_models[model_name]
            wanted = FabricType(spec["type"]).family
            if model.fabric_type != wanted:
                once(where, f"{model_name} is an {model.fabric_type} switch but the fabric type is {spec['type']}",
                     _switches_for(wanted, speed, switch_models))
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
                    self.issues.error(
                        (*path, "nodes", i),
                        f"unknown node group {pattern!r}",
                        choices_hint(pattern, by_pattern),
                    )
                elif not profiles[by_pattern[pattern].profile].nics(role.nic_role):
                    self.issues.error(
                        (*path, "nodes", i),
                        f"node group {pattern!r} has no {role.nic_role.value} NIC",
                        f"its profile {by_pattern[pattern].profile} lists none",
                    )
                else:
                    chosen.append(pattern)
            return tuple(chosen)
        attached = tuple(g.pattern for g in groups if profiles[g.profile].nics(role.nic_role))
        if not attached and len(groups) == len(self.data["nodes"]):  # else a rejected group was already reported
            self.issues.error(
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
        link_type = FabricType(spec["type"]).link_type
        reported: set[tuple[str, str]] = set()
        for pattern in attached:
            profile = profiles[by_pattern[pattern].profile]
            for nic in profile.nics(role.nic_role):
                model = nic_models.get(nic.model)
                if model is None or (profile.name, nic.model) in reported:
                    continue
                reported.add((profile.name, nic.model))
                if speed.name not in model.speeds:
                    self.issues.error(
                        (*path, "speed"),
                        f"NIC {nic.model} of profile {profile.name} cannot run at {speed.name}",
                        "it supports " + ", ".join(model.speeds),
                    )
                elif link_type not in model.link_types:
                    self.issues.error(
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
        self.issues.error(
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
                self.issues.error(
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
                self.issues.error(
                    (*path, "naming", tier_name),
                    f"{{{unknown[0]}}} is not available for {kind.value} {tier_name} names",
                    "available: " + ", ".join(f"{{{a}}}" for a in sorted(allowed)),
                )
            naming[tier] = pattern
        return naming


