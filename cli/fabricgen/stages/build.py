"""Stage 3, build: validated spec data -> immutable :class:`Cluster`, with the semantic errors a schema
cannot express (unknown references, duplicate names, racks that overflow, profiles short of rails...).

The core builds the site: the catalog's models with the spec's overrides, the facility, node profiles, nodes placed
in racks and the core of each fabric (:mod:`fabricgen.stages.fabrics`). Then every feature with a build step adds
its sections to that cluster, in :data:`~fabricgen.features.registry.FEATURES` order. A feature whose section
describes the whole cluster instead (``cluster_section``: a cloud spec) builds alone, on an empty cluster. Every
issue found anywhere is collected and raised together, each with the file:line of the spec node at fault.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from fabricgen.core.document import Document, PathKey
from fabricgen.core.errors import SpecError
from fabricgen.core.hints import choices_hint
from fabricgen.core.issues import Issues
from fabricgen.core.naming import DEVICE_NAME, RACK_NAME, cluster_label, expand, placeholders, unknown_placeholders
from fabricgen.features.feature import BuildContext
from fabricgen.features.registry import FEATURES
from fabricgen.model.cluster import Cluster, Metadata
from fabricgen.model.hardware import NicModel, SwitchModel
from fabricgen.model.nodes import Bond, Facility, LocalVolume, Nic, NicRole, Node, NodeGroup, NodeProfile, Rack
from fabricgen.spec import catalog
from fabricgen.spec.validate import validate_document
from fabricgen.stages.fabrics import FabricBuilder
from fabricgen.stages.racks import RackPlacer

NO_FACILITY = Facility(0, 0.0, 0.0, 0.0, 0.0, (), ())  # a cloud cluster has no racks


@dataclass
class _Site:
    """Turns the site sections (catalog overrides, facility, node profiles, nodes) into model objects."""

    issues: Issues
    data: Mapping[str, Any]
    facility_broken: bool = False
    placer: RackPlacer | None = None

    # -- catalog -------------------------------------------------------------------------------------------
    def switch_models(self) -> dict[str, SwitchModel]:
        overrides = self.data.get("catalog", {}).get("switches") or {}
        for name, entry in overrides.items():
            first: dict[str, int] = {}
            for i, group in enumerate(entry["port_groups"]):
                if group["name"] in first:
                    self.issues.error(("catalog", "switches", name, "port_groups", i, "name"),
                                      f"port group {group['name']!r} is listed twice",
                                      f"first as port_groups[{first[group['name']]}]; cages are counted group by group")
                first.setdefault(group["name"], i)
        entries = catalog.merged("switches", overrides)
        return {name: catalog.switch_model(name, e) for name, e in entries.items()}

    def nic_models(self) -> dict[str, NicModel]:
        entries = catalog.merged("nics", self.data.get("catalog", {}).get("nics"))
        return {name: catalog.nic_model(name, e) for name, e in entries.items()}

    # -- facility ------------------------------------------------------------------------------------------
    def facility(self) -> Facility:
        before = len(self.issues)
        facility = self._facility()
        self.facility_broken = self.issues.since(before)
        return facility

    def _facility(self) -> Facility:
        spec = self.data["facility"]
        rows = tuple((r["name"], int(r["racks"])) for r in spec["rows"])
        kinds = {r["name"]: r["kind"] for r in spec["rows"]}
        racks: list[Rack] = []
        seen_rows: dict[str, int] = {}
        positions = 0
        for row_index, (row, count) in enumerate(rows):
            if row in seen_rows:
                self.issues.error(
                    ("facility", "rows", row_index, "name"),
                    f"duplicate row {row!r}",
                    f"row {row} is already listed as rows[{seen_rows[row]}]",
                )
                continue
            seen_rows[row] = row_index
            for index in range(1, count + 1):
                name = expand(spec["rack_name"], {"row": row, "rack": index})
                racks.append(Rack(name, row, row_index, index, positions + index - 1, kinds[row]))
            positions += self._row_places(spec["rows"][row_index], row_index)
        names = [r.name for r in racks]
        if len(set(names)) != len(names):
            self.issues.error(
                ("facility", "rack_name"),
                "the rack name pattern gives two racks the same name",
                "include both {row} and {rack}",
            )
        bad = [n for n in names if not RACK_NAME.fullmatch(n)]
        if bad:
            self.issues.error(
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
            positions,
        )

    def _row_places(self, row: Mapping[str, Any], row_index: int) -> int:
        """The facility positions a row holds: ``max_racks`` where the row is planned to grow (its racks added
        then take places of their own, moving no later row's subnets), else its racks."""
        planned = int(row.get("max_racks", row["racks"]))
        if planned < row["racks"]:
            self.issues.error(("facility", "rows", row_index, "max_racks"),
                              f"row {row['name']} plans {planned} racks but has {row['racks']}",
                              f"raise max_racks to at least {row['racks']}, or remove it")
            return int(row["racks"])
        return planned

    # -- node profiles -------------------------------------------------------------------------------------
    def profiles(self, nic_models: Mapping[str, NicModel]) -> dict[str, NodeProfile]:
        shipped = catalog.shipped("node_profiles")
        out: dict[str, NodeProfile] = {}
        for name, entry in shipped.entries.items():
            out[name] = self.profile(name, entry, nic_models, Issues(shipped.document, found=self.issues.found),
                                     ("node_profiles", name))
        for name, entry in self.data["node_profiles"].items():
            out[name] = self.profile(name, entry, nic_models, self.issues, ("node_profiles", name))
        return out

    def profile(
        self,
        name: str,
        entry: Mapping[str, Any],
        nic_models: Mapping[str, NicModel],
        issues: Issues,
        path: PathKey,
    ) -> NodeProfile:
        """One profile; ``issues`` reports against the document it comes from (the spec or the shipped catalog)."""
        nics = entry["nics"]
        before = len(issues)

        def nic(role: NicRole, index: int, e: Mapping[str, Any], where: PathKey) -> Nic:
            if e["model"] not in nic_models:
                issues.error(
                    (*where, "model"),
                    f"unknown NIC model {e['model']!r}",
                    choices_hint(e["model"], nic_models),
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
                e.get("gpu_pci", ""),
                e.get("cage", ""),
            )

        compute = tuple(
            nic(NicRole.COMPUTE, i, e, (*path, "nics", "compute", i))
            for i, e in enumerate(nics.get("compute", []))
        )
        storage = tuple(
            nic(NicRole.STORAGE, i, e, (*path, "nics", "storage", i))
            for i, e in enumerate(nics.get("storage", []))
        )
        inband_spec = nics.get("inband", [])
        inband = (
            (nic(NicRole.INBAND, 0, inband_spec, (*path, "nics", "inband")),) if isinstance(inband_spec, Mapping)
            else tuple(nic(NicRole.INBAND, i, e, (*path, "nics", "inband", i)) for i, e in enumerate(inband_spec))
        )
        bmc = nic(NicRole.BMC, 0, nics["bmc"], (*path, "nics", "bmc")) if "bmc" in nics else None
        gpus = int(entry.get("gpus", 0))
        self.profile_consistency(issues, path, compute, storage, inband, bmc, gpus)
        bonds = self.bonds(issues, path, entry.get("bonds", {}), (*compute, *storage, *inband))
        if issues.since(before) and issues.doc is not self.issues.doc:
            raise SpecError(issues.found[before:])  # a broken shipped profile is a packaging bug
        return NodeProfile(
            name,
            entry.get("role", "compute"),
            int(entry["height_u"]),
            gpus,
            compute,
            storage,
            inband,
            bmc,
            issues.position(path),
            entry.get("memory_gb"),
            LocalVolume(entry["local_nvme"]["path"], entry["local_nvme"]["capacity_gib"]) if "local_nvme" in entry
            else None,
            bonds,
            entry.get("bluefield_mode", ""),
            str(entry.get("manufacturer", "")),
            str(entry.get("model", "")),
        )

    @staticmethod
    def bonds(issues: Issues, path: PathKey, spec: Mapping[str, Any], nics: tuple[Nic, ...]) -> tuple[Bond, ...]:
        """Bonds over the profile's in-band or storage ports: members are netdevs of one role, each in one bond,
        and no bond takes a NIC's own name."""
        by_netdev = {n.netdev: n for n in nics if n.netdev}
        owner: dict[str, str] = {}
        out = []
        for name, bond in spec.items():
            where = (*path, "bonds", name)
            if name in by_netdev:
                issues.error(where, f"{name} is also a NIC's netdev", "give the bond a name of its own")
            roles = set()
            for i, member in enumerate(bond["members"]):
                nic = by_netdev.get(member)
                if nic is None:
                    issues.error((*where, "members", i), f"no NIC of this profile has netdev {member!r}",
                                 choices_hint(member, by_netdev))
                elif nic.role not in (NicRole.INBAND, NicRole.STORAGE):
                    issues.error((*where, "members", i), f"{member} is a {nic.role.value} port",
                                 "bond in-band or storage ports; compute ports are rails, one NIC each")
                elif member in owner:
                    issues.error((*where, "members", i), f"{member} is already a member of {owner[member]}",
                                 "a port joins one bond")
                else:
                    roles.add(nic.role)
                    owner[member] = name
            if len(roles) > 1:
                issues.error((*where, "members"), "the members mix in-band and storage ports",
                             "a bond's members attach to one fabric")
            if len(roles) == 1:
                out.append(Bond(name, roles.pop(), tuple(bond["members"]), bond.get("mode", ""),
                                bond.get("mii_monitor_ms", 100), bond.get("lacp_rate", "fast"),
                                bond.get("transmit_hash_policy", "layer3+4"), issues.position(where)))
        return tuple(out)

    def profile_consistency(
        self,
        issues: Issues,
        path: PathKey,
        compute: tuple[Nic, ...],
        storage: tuple[Nic, ...],
        inband: tuple[Nic, ...],
        bmc: Nic | None,
        gpus: int,
    ) -> None:
        rails: dict[int, int] = {}
        for nic in compute:
            where = (*path, "nics", "compute", nic.index)
            if nic.rail is not None and nic.rail in rails:
                issues.error(
                    (*where, "rail"),
                    f"rail {nic.rail} is served twice",
                    f"compute[{rails[nic.rail]}] already serves it",
                )
            elif nic.rail is not None:
                rails[nic.rail] = nic.index
            if nic.gpu is not None and nic.gpu >= gpus:
                issues.error(
                    (*where, "gpu"),
                    f"GPU {nic.gpu} does not exist",
                    f"the profile has {gpus} GPUs (0..{gpus - 1})" if gpus else "the profile has no GPUs; set gpus",
                )
        seen: dict[tuple[str, str], str] = {}
        all_nics = [*compute, *storage, *inband, *(n for n in (bmc,) if n)]
        for nic in all_nics:
            where = (
                (*path, "nics", nic.role.value, nic.index)
                if nic.role in (NicRole.COMPUTE, NicRole.STORAGE) or (len(inband) > 1 and nic.role is NicRole.INBAND)
                else (*path, "nics", nic.role.value)
            )
            for kind, value in (("port", nic.port), ("netdev", nic.netdev), ("dev", nic.dev)):
                if not value or (kind == "dev" and nic.role is not NicRole.COMPUTE):
                    continue  # several storage ports may share an RDMA device on a dual-port card
                if (kind, value) in seen:
                    issues.error(
                        (*where, kind),
                        f"{kind} {value!r} is used twice in this profile",
                        f"also used by {seen[(kind, value)]}",
                    )
                seen[(kind, value)] = f"{nic.role.value}[{nic.index}]"

    # -- nodes ---------------------------------------------------------------------------------------------
    def nodes(
        self, facility: Facility, profiles: Mapping[str, NodeProfile]
    ) -> tuple[tuple[NodeGroup, ...], tuple[Node, ...]]:
        placer = self.placer = RackPlacer(facility, broken=self.facility_broken)
        groups: list[NodeGroup] = []
        nodes: list[Node] = []
        first_owner: dict[str, str] = {}
        group_names: dict[str, int] = {}
        for gi, spec in enumerate(self.data["nodes"]):
            path: PathKey = ("nodes", gi)
            pattern = spec["name"]
            if pattern in group_names:
                self.issues.error(
                    (*path, "name"),
                    f"node group {pattern!r} is listed twice",
                    f"first as nodes[{group_names[pattern]}]",
                )
                continue
            group_names[pattern] = gi
            if spec["profile"] not in profiles:
                self.issues.error(
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
                    self.issues.error(
                        (*path, "name"),
                        f"node name {name!r} is not a valid host name",
                        "lower-case letters, digits and '-', at most 63 characters",
                    )
                    break
                if name in first_owner:
                    self.issues.error(
                        (*path, "name"),
                        f"node name {name!r} is already used by group {first_owner[name]!r}",
                        "change the pattern or its start",
                    )
                    break
                first_owner[name] = pattern
            slots = placer.place(
                self.issues, (*path, "placement"), pattern, spec["count"], profile.height_u, spec["placement"]
            )
            nodes.extend(
                Node(name, pattern, profile, rack, u) for name, (rack, u) in zip(names, slots, strict=False)
            )
            groups.append(NodeGroup(pattern, profile.name, spec["count"], self.issues.position(path)))
        return tuple(groups), tuple(nodes)

    def valid_node_pattern(self, path: PathKey, pattern: str, count: int) -> bool:
        unknown = unknown_placeholders(pattern, {"n"})
        if unknown:
            self.issues.error(
                (*path, "name"),
                f"unknown placeholder {{{unknown[0]}}} in node name pattern",
                "only {n} is available, e.g. gpu{n:03d}",
            )
            return False
        if count > 1 and "n" not in placeholders(pattern):
            self.issues.error(
                (*path, "name"), f"{count} nodes would all be named {pattern!r}", "add {n}, e.g. gpu{n:03d}"
            )
            return False
        return True


def build_cluster(doc: Document) -> Cluster:
    """Validate a loaded spec and build the Cluster model, raising :class:`SpecError` with every issue."""
    data = validate_document(doc)
    issues = Issues(doc)
    whole = next((f for f in FEATURES if f.cluster_section and f.cluster_section in data and f.build), None)
    if whole is not None and whole.build is not None:
        cluster = whole.build(BuildContext(data, issues, {}, {}), _cluster(doc, data, NO_FACILITY))
    else:
        site = _Site(issues, data)
        context = BuildContext(data, issues, site.switch_models(), site.nic_models())
        cluster = _site(site, context, doc)
        for feature in FEATURES:
            if feature.build is not None and not feature.cluster_section:
                cluster = feature.build(context, cluster)
    issues.raise_any()
    return cluster


def _cluster(doc: Document, data: Mapping[str, Any], facility: Facility) -> Cluster:
    """A cluster of the spec's metadata and nothing else yet."""
    meta = data["metadata"]
    return Cluster(Metadata(meta["name"], meta["site"], meta.get("description", "")), facility, MappingProxyType({}),
                   (), (), (), MappingProxyType({}), doc.digest, cluster_label(meta["name"]))


def _site(site: _Site, context: BuildContext, doc: Document) -> Cluster:
    """The core cluster: facility, the profiles the nodes use, nodes, the fabrics' cores, the catalog's media."""
    facility = site.facility()
    profiles = site.profiles(context.nic_models)
    before = len(context.issues)
    groups, nodes = site.nodes(facility, profiles)
    if context.issues.since(before):
        # A node group that could not be built (unknown profile, bad pattern, clashing names) leaves the fabrics,
        # SM hosts and partitions without its nodes: everything checked past here would be a follow-on error.
        context.issues.raise_any()
    fabrics = FabricBuilder(context.issues, context.data, site.placer).fabrics(profiles, groups, context.switch_models,
                                                                              context.nic_models)
    used = {g.profile for g in groups}
    return Cluster(
        _cluster(doc, context.data, facility).metadata,
        facility,
        MappingProxyType({k: v for k, v in profiles.items() if k in used}),
        groups,
        nodes,
        fabrics,
        MappingProxyType(dict(context.nic_models)),
        doc.digest,
        cluster_label(context.data["metadata"]["name"]),
        catalog.media(context.data.get("catalog", {}).get("media")),
    )
