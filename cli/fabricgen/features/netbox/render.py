"""Target ``netbox``: the cluster as NetBox's bulk import takes it, one file per object type, numbered in the
order NetBox needs them (each references only what an earlier file created).

00 fabricgen's tag (every other object carries it, so ``netbox sync`` over an imported site takes them as its own)
and its device custom field (``<site>/<name>``: the interface and IP-address imports find a device by it, as a name
is unique only within a site; the two are independent), 01 site, 02 locations (one per row), 03 manufacturers, 04
device roles (a switch role per fabric and tier, a node role per profile role), 05 device types (YAML, one file per
type, so an existing type refuses only its own file: every port of the hardware, switch cages at their native split
and a profile's NIC ports, typed by their cage; a switch model's depth, weight, console and power ports from
device_facts.yaml), 06 racks (in their row's location), 07 devices, 08 interfaces (only
those no template creates: the sub-ports of a cage split finer, loopbacks and VLAN gateways), 09 cables (one per
physical cable, labelled with its id as the sheets print it: a cage-pair cable or a splitter is one cable whose
sides list their devices and interfaces, link k on connector k of a trunk profile; NetBox >= 4.7's import takes
several terminations a side), 10 RIR and 11 ASNs (RFC 6996's private ASNs), 12 VLAN groups (one per fabric) and 13
VLANs (the leaves' host VLAN, in its group by the group's site-prefixed slug), 14 the cluster's VRF (named after the
site, unique by its RD), 15 prefixes (the pools as containers, then every subnet) and 16 IP addresses in it, by its
RD (with the primary and out-of-band marks that set each device's primary and OOB IP: a switch's loopback and
management address, a node's first in-band address and its BMC's).

Re-importing the set creates nothing twice: every object has a NetBox uniqueness rule that refuses the second
copy (names per site, location or device, a cable per interface, an ASN, a VLAN id per group, an address or
prefix in the cluster's VRF, whose ``enforce_unique`` is on; the global table's ENFORCE_GLOBAL_UNIQUE does not
apply to a VRF, so a second cluster on the same address plan imports beside the first). NetBox's bulk import
updates an object only by its NetBox ``id``, which a plan cannot know, so changes after the first import go through
``fabricgen netbox sync`` (:mod:`fabricgen.features.netbox.sync`), which sends these same tables through the REST
API.

Every choice value is one of NetBox's own (tests check them against the choice sets of the release in
tests/data/netbox/). Objects that are not live yet carry NetBox's "not live" status of their model: planned
(site, location, rack, device, cable), reserved (prefix, IP address, VLAN). A manufacturer is spelled as NetBox's
device-type library spells it (manufacturers.yaml). A file NetBox would take longer to import than one request may
run on a stock NetBox (request_costs.yaml: NetBox's measured seconds per object against nginx's 60 s and gunicorn's
120 s) is split into parts (``-partNNN``), each within that budget.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import yaml
from netaddr import IPNetwork

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import csv_bytes
from fabricgen.features.addressing.render import interface_names, plan_rows
from fabricgen.features.cabling.handoff import port_order
from fabricgen.features.cabling.plan import switch_cage
from fabricgen.features.ethernet.nos import fabric_nos
from fabricgen.features.ethernet.switch_view import HOST_VLAN
from fabricgen.model.cabling import Cable, CableEnd
from fabricgen.model.cluster import FabricRole, FabricType, Tier
from fabricgen.model.hardware import SwitchModel, cage_of, port_name
from fabricgen.model.nodes import NicRole, NodeProfile
from fabricgen.model.topology import FabricTopology, Topology
from fabricgen.spec import catalog
from fabricgen.spec.load import load_file

NODE_MANUFACTURER = "Generic"  # a profile names no vendor; NetBox's device-type library uses "Generic" for such
MANAGEMENT_TYPE = "1000base-t"
PRIVATE_ASNS = "RFC 6996"  # the RIR record for private ASNs (4200000000-4294967294, 64512-65534)
# an ASN is one object NetBox-wide, and private ASNs are reused by every isolated fabric (RFC 6996): its
# description names no cluster or switch (review D7: the first cluster's "storage storage-leaf001" stuck to all)
ASN_DESCRIPTION = "private ASN of fabricgen eBGP fabrics (reused per cluster; netbox sync links each site to its own)"
PRIVATE_RD_ASN = 64512  # RFC 6996's first private 2-byte ASN: the administrator part of the VRF's RD
STATUS_PLANNED, STATUS_RESERVED = "planned", "reserved"
# a colour per tier and node role (NetBox wants 6 hex digits)
ROLE_COLOURS = {"leaf": "2196f3", "spine": "3f51b5", "core": "673ab7", "compute": "4caf50", "management": "ff9800",
                "storage": "795548"}

Row = tuple[object, ...]
T = TypeVar("T")
TAG = "fabricgen"  # every object fabricgen makes carries it: netbox sync updates and deletes only tagged objects
TAG_COLOUR = "2196f3"
TAG_WEIGHT = 1000
TAG_DESCRIPTION = "made by fabricgen (netbox import set or netbox sync); netbox sync updates and deletes it"
# NetBox's forms of these files take no tags (TagImportForm, CustomFieldImportForm: CSVModelForm only)
UNTAGGED = ("00-custom-fields", "00-tags")


@dataclass(frozen=True, slots=True)
class Table:
    """One import file's rows (``07-devices``): the CSV set writes it, ``netbox sync`` sends the same rows."""

    name: str
    header: tuple[str, ...]
    rows: tuple[Row, ...]

    def records(self) -> list[dict[str, object]]:
        return [dict(zip(self.header, row, strict=True)) for row in self.rows]


DEVICE_FIELD = "fabricgen_device"  # fabricgen's custom field on devices: <site>/<name> (device_key)
# The interface and IP-address imports find their device by that field: NetBox's CSV import takes a dotted column
# (<field>.<lookup>) as the lookup of the related object, and a device's name alone is ambiguous in a NetBox that
# holds two sites ("not a unique value": InterfaceImportForm.device is every device, by name).
DEVICE_COLUMN = f"device.custom_field_data__{DEVICE_FIELD}"
INTERFACE_COLUMNS = (DEVICE_COLUMN, "name", "label", "type", "mgmt_only", "description")


@cache
def interface_types() -> dict[str, dict[str, str]]:
    data: dict[str, dict[str, str]] = {
        form: dict(types)
        for form, types in load_file(Path(__file__).with_name("interface_types.yaml")).data.items()}
    return data


def interface_type(form_factor: str, speed: Any, infiniband: bool) -> str:
    """NetBox's type of a port: by its cage (and the speed where NetBox has a slug for both), InfiniBand by speed."""
    if infiniband:
        return str(speed.netbox_interface_type)
    types = interface_types().get(form_factor)
    if types is None:
        return str(speed.netbox_interface_type)
    return types.get(str(int(speed.gbps)), types["cage"])


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def _table(name: str, header: Sequence[str], rows: Sequence[Row]) -> Table:
    """An import file; every row carries fabricgen's tag where NetBox's import form takes one (all but 00), so
    ``netbox sync`` over an imported site finds the objects its own."""
    if "description" in header:  # free text: clamped to NetBox's limit (an identity never is: netbox-limits)
        at = list(header).index("description")
        rows = [(*row[:at], clamp(str(row[at])), *row[at + 1:]) for row in rows]
    if name in UNTAGGED:
        return Table(name, tuple(header), tuple(rows))
    return Table(name, (*header, "tags"), tuple((*row, TAG) for row in rows))


@dataclass(frozen=True, slots=True)
class RequestCosts:
    """NetBox's seconds per object in a write request and the most one request may cost (request_costs.yaml)."""

    budget_s: float
    default_s: float
    port_s: float
    per_object_s: dict[str, float]

    def of(self, kind: str) -> float:
        """One object of ``kind`` (an import file's object type, ``cables``; a REST endpoint's, ``ip_addresses``)."""
        return self.per_object_s.get(kind.replace("_", "-"), self.default_s)


@cache
def request_costs() -> RequestCosts:
    data = load_file(Path(__file__).with_name("request_costs.yaml")).data
    return RequestCosts(float(data["budget_s"]), float(data["default_s"]), float(data["port_s"]),
                        {str(k): float(v) for k, v in data["per_object_s"].items()})


def budgeted(items: Sequence[T], seconds: Callable[[T], float], budget: float) -> list[list[T]]:
    """``items`` in order, cut into runs that each cost NetBox at most ``budget`` seconds (an object over it alone):
    what times out on a stock NetBox is one request's time, not its size."""
    runs: list[list[T]] = []
    spent = budget
    for item in items:
        cost = seconds(item)
        if spent + cost > budget or not runs:
            runs.append([])
            spent = 0.0
        runs[-1].append(item)
        spent += cost
    return runs


# The columns that name a row's object (a device by its name and location, an interface by its device and name, a
# cable by its A end, an address by itself and its device), whichever a table has; a table with none, its first
NATURAL_KEY = ("location", "name", "device.custom_field_data__fabricgen_device", "side_a_device", "side_a_name",
               "prefix", "address")
RUN_REQUESTS = 2  # the rows between two cuts the rows choose cost this many requests' budget on average


def _chunks(table: Table, seconds: Callable[[Row], float]) -> list[Artifact]:
    """One file, or part files that each import within one request's budget, named so that a change to some rows
    leaves the other parts' names and bytes alone (:func:`stable_parts`)."""
    budget = request_costs().budget_s
    if sum(seconds(row) for row in table.rows) <= budget:
        return [Artifact(f"netbox/{table.name}.csv", csv_bytes(table.header, table.rows))]
    return [Artifact(f"netbox/{table.name}-part-{name}.csv", csv_bytes(table.header, part))
            for name, part in stable_parts(table, seconds, budget)]


def stable_parts(table: Table, seconds: Callable[[Row], float], budget: float) -> list[tuple[str, list[Row]]]:
    """The rows cut where their content says, not where a count falls (content-defined chunking, as rsync and
    restic cut files): a run of rows starts at each row whose natural key's digest, read as a fraction of 1, falls
    below that row's share of ``RUN_REQUESTS`` budgets (runs then cost that on average whatever their rows cost), and
    a run is cut by budget within it. A row added or removed changes its own run's parts only: removing a 16k-GPU
    cluster's last node changed ~1,230 of the numbered parts after its rows, every boundary behind it having
    shifted. A part is named by its run's first key's digest and its place in the run (``3f09a1c2e4b7-01``); parts
    hold no references to each other, so their import order within a table is free."""
    columns = [i for i, column in enumerate(table.header) if column in NATURAL_KEY] or [0]
    runs: list[tuple[str, list[Row]]] = []
    for row in table.rows:
        digest = hashlib.blake2b("\x1f".join(str(row[i]) for i in columns).encode(), digest_size=6).digest()
        if not runs or int.from_bytes(digest, "big") < seconds(row) / (RUN_REQUESTS * budget) * 2 ** 48:
            runs.append((digest.hex(), []))
        runs[-1][1].append(row)
    parts: list[tuple[str, list[Row]]] = []
    taken: set[str] = set()
    for first, rows in runs:
        name = first if first not in taken else f"{first}x{len(parts)}"  # one key's digest twice: ~1 in 10^8
        taken.add(name)
        parts += [(f"{name}-{k:02d}", part) for k, part in enumerate(budgeted(rows, seconds, budget), 1)]
    return parts


def _row_seconds(table: Table, templated: dict[str, int]) -> Callable[[Row], float]:
    """What NetBox spends on one row of ``table``: a device also on every port its type's templates make, a cable
    on each of its links."""
    costs = request_costs()
    each = costs.of(table.name.split("-", 1)[1])
    if table.name == "09-cables":  # a cable costs NetBox per link (its terminations and their paths)
        links = table.header.index("side_a_name")
        return lambda row: each * (str(row[links]).count(",") + 1)
    if table.name != "07-devices":
        return lambda _: each
    column = table.header.index("device_type")
    return lambda row: each + costs.port_s * templated[str(row[column])]


@cache
def field_limits() -> dict[str, Any]:
    """NetBox's longest text per field fabricgen writes (field_limits.yaml: ``description``, ``names``)."""
    return dict(load_file(Path(__file__).with_name("field_limits.yaml")).data)


def clamp(text: str, limit: int | None = None) -> str:
    """``text`` cut to NetBox's ``limit`` (a description's by default) at the last word that fits, ending in an
    ellipsis, so NetBox takes it rather than refuse the row; the same text gives the same cut. A description leads
    with what it is (a cable's part and plugs), so the cut takes its explanation, not its subject."""
    limit = int(field_limits()["description"]) if limit is None else limit
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return f"{cut.rstrip(' ,;:(')}\u2026"


@cache
def manufacturer_names() -> dict[str, str]:
    return {str(k): str(v) for k, v in load_file(Path(__file__).with_name("manufacturers.yaml")).data.items()}


@cache
def device_facts() -> dict[str, dict[str, Any]]:
    """A switch model's DCIM facts (device_facts.yaml: depth, weight, console and power ports), by model."""
    return {str(k): dict(v) for k, v in load_file(Path(__file__).with_name("device_facts.yaml")).data.items()}


def _facts_entry(model: str) -> dict[str, Any]:
    """What a device type carries of its model's facts, in the device-type YAML's keys (console-ports, power-ports:
    the templates NetBox makes each device's console and power ports from); a fact not known is left out."""
    facts = device_facts().get(model, {})
    entry: dict[str, Any] = {"is_full_depth": bool(facts.get("is_full_depth", True))}  # NetBox's default
    if "weight_kg" in facts:
        entry |= {"weight": float(facts["weight_kg"]), "weight_unit": "kg"}
    for key in ("console_ports", "power_ports"):
        if facts.get(key):
            entry[key.replace("_", "-")] = [dict(port) for port in facts[key]]
    return entry


def manufacturer(vendor: str) -> str:
    """The catalog vendor as NetBox's device-type library names the manufacturer (``NVIDIA``: ``Nvidia``)."""
    return manufacturer_names().get(vendor, vendor)


def _location(row: str) -> str:
    return f"row {row}"


def _switch_role(ft: FabricTopology, tier: str) -> str:
    return f"{ft.fabric.name}-{tier}"


def _node_role(role: str) -> str:
    return f"{role}-node"


Port = tuple[str, bool, str]  # NetBox type, mgmt only, label (the faceplate name, "" where it is the name)


@dataclass(frozen=True, slots=True)
class PortNames:
    """NetBox's interface name of each fabricgen port (review D1): what the device itself and LLDP call it, so
    discovery and assurance tools match NetBox's ports: a switch port as its NOS names it (SONiC ``Ethernet136``,
    EOS ``Ethernet17/1``, NVUE ``swp17s1``: the NOS module's ``port_name``, as its configuration), a node's NIC
    port by its Linux netdev (``ibp24s0``); the faceplate name (``17/2``, ``OSFP4P2``) goes in the interface's
    label. A port of a switch fabricgen configures no NOS for (InfiniBand, ``nos`` unset) and a BMC keep the
    faceplate name."""

    names: dict[tuple[str, str], str]

    def __call__(self, device: str, port: str) -> str:
        return self.names.get((device, port), port)

    def label(self, device: str, port: str) -> str:
        """The faceplate name as the interface's label, where it is not the name itself."""
        return port if self(device, port) != port else ""


# The title of a switch type whose ports keep the faceplate's names (an InfiniBand switch, fabricgen configures no NOS
# on it; a switch without ``nos``), as a NOS's title names a type whose ports the NOS names (``SN4700 SONiC``). The bare
# catalog model would be the device-type library's key (review D3: its ``Nvidia QM9700``, slug ``nvidia-qm9700``,
# whose ports are ``P0.0``..``P31.1`` typed 400GBASE OSFP, no management port, and P22.1 and P23.0 missing at commit
# 108982125f57): NetBox holds one type per manufacturer and model, so fabricgen's type and the library's would clash
# or the one be taken for the other with other ports
FACEPLATE = "faceplate"


def switch_namer(ft: FabricTopology, tier: Tier) -> tuple[str, Callable[[SwitchModel, str, int], str] | None]:
    """The NOS title a switch of ``tier`` runs and its port naming (``("", None)``: fabricgen configures none)."""
    record = fabric_nos(ft.fabric, tier)
    return ("", None) if record is None else (record.data.title, record.port_name)


def port_names(topology: Topology) -> PortNames:
    """Every cabled port's NetBox name (PortNames), by the cage split its cable's speed makes."""
    names: dict[tuple[str, str], str] = {}
    for node in topology.cluster.nodes:
        names |= {(node.name, nic.port): nic.netdev for nic in (*node.profile.compute, *node.profile.storage,
                                                                *node.profile.inband) if nic.netdev}
    namers = {sw.name: (sw.model, switch_namer(ft, sw.tier)[1]) for ft in topology.fabrics for sw in ft.switches}
    for c in topology.cables:
        for end in (c.a, c.z):
            model, namer = namers.get(end.device, (None, None))
            if model is None or namer is None:
                continue
            per_cage = model.cage_group(cage_of(end.port)).per_cage(c.speed)
            if per_cage:
                names[(end.device, end.port)] = namer(model, end.port, per_cage)
    return PortNames(names)


def _port_types(topology: Topology) -> dict[tuple[str, str], tuple[str, bool]]:
    """(device, port) -> (NetBox type, mgmt only) for every cabled port."""
    speeds = {ft.fabric.name: ft.fabric for ft in topology.fabrics}
    nic_form = {}
    for node in topology.cluster.nodes:
        for nic in (*node.profile.compute, *node.profile.storage, *node.profile.inband):
            model = topology.cluster.nic_models.get(nic.model)
            nic_form[(node.name, nic.port)] = model.form_factor if model else ""
        if node.profile.bmc:
            nic_form[(node.name, node.profile.bmc.port)] = "RJ45"
    types: dict[tuple[str, str], tuple[str, bool]] = {}
    for c in topology.cables:
        fabric = speeds[c.fabric]
        infiniband = fabric.type is FabricType.INFINIBAND
        host_speed = fabric.speed if c.tier == "node-leaf" else fabric.uplink_speed
        oob = fabric.role is FabricRole.OOB
        for end, switch in ((c.a, c.tier != "node-leaf"), (c.z, True)):
            form = end.form_factor if switch else nic_form.get((end.device, end.port), "")
            types[(end.device, end.port)] = (interface_type(form, host_speed, infiniband), oob and not switch)
    return types


def _faceplate(model: SwitchModel, namer: Callable[[SwitchModel, str, int], str] | None) -> dict[str, Port]:
    """Every front-panel port of a switch model, each cage at its native split (a twin-port OSFP cage is ``1/1`` and
    ``1/2``, a QSFP-DD cage ``1``), typed by its cage at the fastest speed of that split: the hardware, whatever
    this cluster cables (device types are global in NetBox and their templates apply only when a device is
    made); named as the NOS names it (``namer``), the faceplate name its label."""
    infiniband = model.fabric_type == FabricType.INFINIBAND.value
    ports: dict[str, Port] = {}
    cage = 0
    for group in model.port_groups:
        split = group.native_split
        speed = catalog.fastest_at(group, split)
        assert speed is not None  # the native split is one of the group's own
        kind = interface_type(group.form_factor, speed, infiniband)
        for _ in range(group.cages):
            cage += 1
            for lane in range(1, split + 1):
                face = port_name(cage, lane, split)
                name = namer(model, face, split) if namer else face
                ports[name] = (kind, False, face if name != face else "")
    return ports


def _nic_ports(topology: Topology, profile: NodeProfile, cabled: dict[tuple[str, str], tuple[str, bool]],
               devices: list[str]) -> dict[str, Port]:
    """Every NIC port and the BMC of a node profile, by netdev (the faceplate port its label): typed as cabled on
    its first device that cables it, an uncabled one by its NIC's cage (InfiniBand only for an InfiniBand-only NIC:
    review D6, the two ports of one VPI card were typed apart by the catalog's speed order)."""
    ports: dict[str, Port] = {}
    for nic in (*profile.compute, *profile.storage, *profile.inband):
        kind = next((cabled[(d, nic.port)] for d in devices if (d, nic.port) in cabled), None)
        model = topology.cluster.nic_models.get(nic.model)
        if kind is None and model is not None:
            known = [catalog.speeds()[s] for s in model.speeds if s in catalog.speeds()]
            ethernet = [s for s in known if s.type != FabricType.INFINIBAND.value]
            fastest = max(ethernet or known, key=lambda s: s.gbps, default=None)
            if fastest is not None:
                kind = (interface_type(model.form_factor, fastest, not ethernet), False)
        name = nic.netdev or nic.port
        ports[name] = (*(kind or ("other", False)), nic.port if name != nic.port else "")
    if profile.bmc:
        ports[profile.bmc.port] = (MANAGEMENT_TYPE, True, "")
    return ports


def _device_types(topology: Topology, names: PortNames) -> tuple[list[dict[str, Any]], dict[str, tuple[str, str]],
                                                                 list[tuple[str, str, str, str]]]:
    """NetBox device types (switch models under their NOS, node hardware) with their interface templates, every
    port of the hardware (``_faceplate``, ``_nic_ports``) and a switch's management port; device -> (manufacturer,
    model); the cabled ports no template makes, (device, name, label, type): the sub-ports of a cage split finer
    than its native split whose NOS name is not the cage's own (SONiC's and EOS's first sub-port is), which
    08-interfaces imports.

    A switch model is a type per NOS (``SN4700 SONiC``): the NOS names its ports. A node is a type per hardware
    (``DGX H100`` of NVIDIA, from the profile's ``manufacturer`` and ``model``), else per profile under Generic:
    two clusters sharing a type must agree on its templates, or sync stops (review B7)."""
    cabled = _port_types(topology)
    types: dict[str, dict[str, Any]] = {}
    device_type: dict[str, tuple[str, str]] = {}
    by_profile: dict[str, list[str]] = {}
    for node in topology.cluster.nodes:
        by_profile.setdefault(node.profile.name, []).append(node.name)
    for node in topology.cluster.nodes:
        profile = node.profile
        maker, model_name = node_type(profile)
        device_type[node.name] = (maker, model_name)
        if model_name not in types:
            types[model_name] = _type_entry(maker, model_name, profile.height_u,
                                            _nic_ports(topology, profile, cabled, by_profile[profile.name]))
    sub_ports: list[tuple[str, str, str, str]] = []
    for ft in topology.fabrics:
        for sw in ft.switches:
            model = sw.model
            maker = manufacturer(model.vendor)
            title, namer = switch_namer(ft, sw.tier)
            type_name = f"{model.name} {title or FACEPLATE}"
            entry = types.setdefault(type_name, _type_entry(maker, type_name, model.height_u,
                                                            _faceplate(model, namer), model.name))
            entry["interfaces"].setdefault(interface_names(ft, sw.tier)[1], (MANAGEMENT_TYPE, True, ""))
            device_type[sw.name] = (maker, type_name)
    cage_types: dict[str, dict[str, str]] = {}  # device type -> its cages' types, once per type (not per sub-port)
    for (device, port), _ in sorted(cabled.items(), key=lambda i: (i[0][0], port_order(i[0][1]))):
        type_name = device_type[device][1]
        templates = types[type_name]["interfaces"]
        if names(device, port) not in templates:
            if type_name not in cage_types:
                cage_types[type_name] = _cage_types(templates)
            sub_ports.append((device, names(device, port), port, cage_types[type_name][switch_cage(port)]))
    documents = []
    for name in sorted(types):
        entry = dict(types[name])
        entry["interfaces"] = [{"name": port, **({"label": label} if label else {}), "type": kind,
                                "mgmt_only": mgmt} for port, (kind, mgmt, label)
                               in sorted(entry["interfaces"].items(), key=lambda i: port_order(i[1][2] or i[0]))]
        documents.append(entry)
    return documents, device_type, sub_ports


def _cage_types(templates: dict[str, Port]) -> dict[str, str]:
    """Each cage's NetBox type, its first templated port's, which a sub-port of it takes too: the first lane of a split
    cage is the cage's own templated port (SONiC's ``Ethernet0`` is ``1`` and ``1/1``), typed by the cage, and the CSV
    import cannot retype a templated port, so the lanes beside it are typed alike (they were typed by their speed,
    ``100gbase-x-qsfpdd`` beside the first lane's ``400gbase-x-qsfpdd``: one cage's lanes typed apart); a lane's
    speed is its ``speed`` (sync). One pass over a type's templates, once per type: a search of them per sub-port
    (17,428 at 16k GPUs, 528,000 cage lookups) was a tenth of the NetBox render."""
    types: dict[str, str] = {}
    for name, (kind, _, label) in templates.items():
        types.setdefault(switch_cage(label or name), kind)
    return types


COMPONENTS = ("console-ports", "power-ports")  # a device type's template lists beside its interfaces (YAML keys)


def templated_ports(device_type: dict[str, Any]) -> int:
    """The ports NetBox makes on each device of a type from its templates (interfaces, console and power ports):
    what a device costs NetBox beyond itself."""
    return len(device_type["interfaces"]) + sum(len(device_type.get(k, ())) for k in COMPONENTS)


def node_type(profile: NodeProfile) -> tuple[str, str]:
    """A node's NetBox manufacturer and model: its hardware's where the profile names it (``NVIDIA``, ``DGX H100``;
    the manufacturer as NetBox's device-type library spells it), else Generic and the profile's name."""
    if profile.manufacturer and profile.model:
        return manufacturer(profile.manufacturer), profile.model
    return NODE_MANUFACTURER, profile.name


def _type_entry(manufacturer: str, model: str, height: int, ports: dict[str, Port], facts: str = "") -> dict[str, Any]:
    """A device type: ``facts``, the catalog model whose DCIM facts it carries (a switch's; a node has none)."""
    known = _facts_entry(facts)
    components = {k: known.pop(k) for k in COMPONENTS if k in known}
    return {"manufacturer": manufacturer, "model": model, "slug": slug(model), "u_height": height, **known,
            "tags": [TAG], "interfaces": dict(ports), **components}


def device_key(site: str, device: str) -> str:
    """The value of fabricgen's device custom field: NetBox names a device uniquely only within its site, and
    the interface and IP-address imports find their device by one value, NetBox-wide."""
    return f"{site}/{device}"


def _dcim(topology: Topology, documents: list[dict[str, Any]], device_type: dict[str, tuple[str, str]],
          names: PortNames) -> list[Table]:
    cluster = topology.cluster
    site = cluster.metadata.site
    facility = cluster.facility
    roles = {_switch_role(ft, s.tier.value): ROLE_COLOURS[s.tier.value] for ft in topology.fabrics
             for s in ft.switches}
    roles |= {_node_role(n.profile.role): ROLE_COLOURS.get(n.profile.role, "9e9e9e") for n in cluster.nodes}
    # every declared rack, whether it holds a device yet or not (UX review D9): NetBox is the rack elevations'
    # truth, and a rack that left the set when its last node did would be deleted by the next sync
    racks = list(facility.racks)
    rows = sorted({r.row for r in racks}, key=[name for name, _ in facility.rows].index)
    manufacturers = sorted({str(d["manufacturer"]) for d in documents})
    devices: list[Row] = [(n.name, _node_role(n.profile.role), *device_type[n.name], STATUS_PLANNED, site,
                           _location(n.rack.row), n.rack.name, n.u, "front", device_key(site, n.name))
                          for n in cluster.nodes]
    row_of = {r.name: r.row for r in facility.racks}
    devices += [(s.name, _switch_role(ft, s.tier.value), *device_type[s.name], STATUS_PLANNED, site,
                 _location(row_of[s.rack]) if s.rack else "", s.rack or "", s.u or "", "front" if s.rack else "",
                 device_key(site, s.name))
                for ft in topology.fabrics for s in ft.switches]
    return [
        # weight: the import form requires it (the model's default, extras/models/tags.py)
        _table("00-tags", ("name", "slug", "color", "weight", "description"),
               [(TAG, TAG, TAG_COLOUR, TAG_WEIGHT, TAG_DESCRIPTION)]),
        # search_weight, filter_logic and weight: the import form requires them (NetBox's UI defaults)
        _table("00-custom-fields", ("name", "label", "type", "object_types", "unique", "search_weight",
                                      "filter_logic", "weight", "description"),
                 [(DEVICE_FIELD, "fabricgen device", "text", "dcim.device", "true", 1000, "exact", 100,
                   "<site>/<name>: the device NetBox-wide, for fabricgen's interface and IP-address imports")]),
        _table("01-sites", ("name", "slug", "status", "description"),
                 [(site, slug(site), STATUS_PLANNED, f"fabricgen cluster {cluster.metadata.name}")]),
        _table("02-locations", ("site", "name", "slug", "status"),
                 [(site, _location(r), slug(f"{site}-row-{r}"), STATUS_PLANNED) for r in rows]),
        _table("03-manufacturers", ("name", "slug"), [(m, slug(m)) for m in manufacturers]),
        _table("04-device-roles", ("name", "slug", "color"), [(r, slug(r), c) for r, c in sorted(roles.items())]),
        _table("06-racks", ("site", "location", "name", "status", "u_height", "width"),
                 [(site, _location(r.row), r.name, STATUS_PLANNED, facility.rack_units, 19) for r in racks]),
        _table("07-devices", ("name", "role", "manufacturer", "device_type", "status", "site", "location", "rack",
                                "position", "face", f"cf_{DEVICE_FIELD}"), devices),
        _table("09-cables", CABLE_COLUMNS, [_cable(c, site, names) for c in netbox_cables(topology.cables)]),
    ]


CABLE_COLUMNS = ("side_a_site", "side_a_device", "side_a_type", "side_a_name", "side_b_site", "side_b_device",
                 "side_b_type", "side_b_name", "type", "profile", "status", "label", "color", "length", "length_unit",
                 "description")
# NetBox's cable profiles that carry n one-lane connectors a side, connector k to connector k (dcim/cable_profiles.py,
# NetBox >= 4.5): the links of one physical cable (a cage pair's lanes, a splitter's legs) on one NetBox cable, each
# link's two interfaces tracing to each other. The profile is the part's (its legs, a cage pair's lanes), not the
# links used: BaseCableProfile.clean caps a side's terminations at the profile's connectors and asks no more (NetBox
# 4.7.3), so a 4-leg harness with 1 or 3 legs used is still one trunk-4c1p cable. The single (one connector) and
# breakout profiles take one termination on a one-connector side: the cage's own interface, not the lane sub-ports
# fabricgen configures and addresses (README "NetBox sync")
TRUNK_PROFILES = {2: "trunk-2c1p", 4: "trunk-4c1p"}


def connectors(cable: Cable) -> int:
    """The connectors a side of the physical part a link rides: a splitter's legs; a cage-pair cable's lanes (its
    medium's speed over the link's: a 400G DAC carrying 200G links has 2); 1 for an ordinary cable."""
    if not cable.leg:
        return 1
    if cable.medium.legs > 1:
        return cable.medium.legs
    return int(max(_gbps(s) for s in cable.medium.speeds) // _gbps(cable.speed))


@cache
def _gbps(speed: str) -> float:
    return catalog.speeds()[speed].gbps


@dataclass(frozen=True, slots=True)
class NetBoxCable:
    """One NetBox cable: a physical cable as the sheets label it, its links in connector order (``profile``: its
    trunk profile, "" for a cable of one link)."""

    label: str
    links: tuple[Cable, ...]
    profile: str = ""

    @property
    def length(self) -> float:
        return max(c.length_m for c in self.links)

    @property
    def description(self) -> str:
        """The medium; a trunk also its part, its plugs, how many of its legs or lanes are used and what its
        connectors are (review D3: ``trunk-2c1p`` reads as two connectors a side, where a cage-pair DAC has one plug
        each end; review D1: a harness with legs unused is still one cable, its used legs on connectors 1..n)."""
        first = self.links[0]
        if not self.profile:
            return clamp(first.medium.name)
        whole, used = connectors(first), len(self.links)
        plugs = "one plug each end" if first.medium.legs == 1 else "one plug at B (the trunk), one a leg at A"
        parts = "lanes" if first.medium.legs == 1 else "legs"
        if used < whole:
            plugs += f", {used} of {whole} {parts} used ({', '.join(str(c.leg) for c in self.links)})"
        return clamp(f"{first.part} ({first.medium.name}), {plugs}: {used} links, connector k of each side is link "
                     "k, not a plug")


def netbox_cables(cables: Iterable[Cable]) -> list[NetBoxCable]:
    """NetBox's cables, one per physical cable (the cables sharing ``physical``: a cage pair's links, a splitter's
    legs), labelled with its id, as the sheets' plug labels begin, its trunk profile the part's whatever the links
    used; a part of a connector count no trunk profile has stays a cable per link, labelled as the sheets label that
    leg (``<physical>/L<leg>``)."""
    by_physical: dict[str, list[Cable]] = {}
    for c in cables:
        by_physical.setdefault(c.physical, []).append(c)
    out: list[NetBoxCable] = []
    for physical, links in by_physical.items():
        links.sort(key=lambda c: c.leg)
        profile = TRUNK_PROFILES.get(connectors(links[0]), "")
        if profile:
            out.append(NetBoxCable(physical, tuple(links), profile))
        else:
            out += [NetBoxCable(c.name, (c,)) for c in links]
    return out


def _cable(cable: NetBoxCable, site: str, names: PortNames) -> Row:
    """A 09 row: each side's devices (one for all its interfaces, or one per interface) and interfaces, in connector
    order, comma-separated (NetBox's CableImportForm pairs them by position)."""
    def side(ends: Sequence[CableEnd]) -> Row:
        devices = [e.device for e in ends]
        return (site, ",".join(devices[:1] if len(set(devices)) == 1 else devices), "dcim.interface",
                ",".join(names(e.device, e.port) for e in ends))

    first = cable.links[0]
    return (*side([c.a for c in cable.links]), *side([c.z for c in cable.links]), first.medium.netbox_type,
            cable.profile, STATUS_PLANNED, cable.label, first.medium.color.lower(), cable.length, "m",
            cable.description)


def vrf_rd(site: str) -> str:
    """The route distinguisher of the cluster's VRF, the one VRF field NetBox keeps unique (a name is not:
    ``ipam/models/vrfs.py``), so a second import of 14-vrfs is refused and 15/16 find the VRF by it: RFC 4364's
    type 0 form with RFC 6996's first private ASN and a CRC-32 of the site. The switches never carry it (they route
    the plan in their default VRF)."""
    return f"{PRIVATE_RD_ASN}:{zlib.crc32(site.encode())}"


def _ipam(topology: Topology, sub_ports: list[tuple[str, str, str, str]], names: PortNames) -> list[Table]:
    site = topology.cluster.metadata.site
    vrf = vrf_rd(site)
    # NetBox takes a parent only for a virtual interface: the sub-port names its cage in its description
    interfaces: list[Row] = [(device_key(site, device), name, label, kind, "false",
                              f"sub-port of cage {switch_cage(label)}") for device, name, label, kind in sub_ports]
    addresses: list[Row] = []
    prefixes: dict[str, Row] = {}
    vlans: list[Row] = []
    asns: dict[int, str] = {}
    has_oob: set[str] = set()  # NetBox keeps one primary IPv4 and one OOB IP per device: the first of each
    bmc_fabrics = {ft.fabric.name for ft in topology.fabrics if ft.fabric.role.nic_role is NicRole.BMC}
    ranks = {ft.fabric.name: _primary_rank(ft) for ft in topology.fabrics}
    primary: dict[str, tuple[int, int]] = {}  # device -> (rank, row) of its primary address
    for ft in topology.fabrics:
        plan = topology.addresses.get(ft.fabric.name)
        if plan is None:
            continue
        name, pools = ft.fabric.name, ft.fabric.addressing
        for kind, pool in (("hosts", pools.hosts), ("p2p", pools.p2p), ("loopbacks", pools.loopbacks),
                           ("management", pools.management)) if pools else ():
            if pool:
                prefixes.setdefault(str(IPNetwork(pool).cidr), (str(IPNetwork(pool).cidr), "container", site,
                                                                f"{name} {kind} pool"))
        if any(s.gateway for s in plan.hosts):
            vlans.append((site, name, HOST_VLAN, f"{name}-hosts", STATUS_RESERVED, f"{name}: each leaf's host subnet"))
        asns |= dict.fromkeys(plan.asn.values(), ASN_DESCRIPTION)
        for _, device, interface, address, role, network, *_ in plan_rows(ft, plan):
            if not interface:
                continue
            if network:
                kind = {"gateway": "hosts", "host": "hosts", "pod-gateway": "pods"}.get(role, role)
                prefixes.setdefault(network, (network, STATUS_RESERVED, site, f"{name} {kind}"))
            if role in ("loopback", "gateway"):
                interfaces.append((device_key(site, device), interface, "", "virtual", "false", f"{name} {role}"))
            rank = 0 if role == "loopback" else ranks[name] if role == "host" else None
            if rank is not None and rank < primary.get(device, (99, 0))[0]:
                primary[device] = (rank, len(addresses))
            oob = (role == "management" or (role == "host" and name in bmc_fabrics)) and device not in has_oob
            has_oob |= {device} if oob else set()
            addresses.append((address, vrf, STATUS_RESERVED, "loopback" if role == "loopback" else "",
                              device_key(site, device), names(device, interface),
                              "false", str(oob).lower(), f"{name} {role}"))
    chosen = {row for _, row in primary.values()}
    addresses = [(*a[:6], "true" if i in chosen else "false", *a[7:]) for i, a in enumerate(addresses)]
    if not addresses:
        return [_table("08-interfaces", INTERFACE_COLUMNS, interfaces)] if interfaces else []
    return [
        _table("08-interfaces", INTERFACE_COLUMNS, interfaces),
        _table("10-rirs", ("name", "slug", "is_private", "description"),
                 [(PRIVATE_ASNS, slug(PRIVATE_ASNS), "true", "private ASNs")] if asns else []),
        _table("11-asns", ("asn", "rir", "description"), [(a, PRIVATE_ASNS, d) for a, d in sorted(asns.items())]),
        _table("12-vlan-groups", ("name", "slug", "scope_type", "scope_name", "description"),
                 [(v[1], slug(f"{site}-{v[1]}"), "dcim.site", site, f"fabric {v[1]}") for v in vlans]),
        _table("13-vlans", ("site", "group.slug", "vid", "name", "status", "description"),
                 [(s, slug(f"{s}-{group}"), *rest) for s, group, *rest in vlans]),
        _table("14-vrfs", ("name", "rd", "enforce_unique", "description"),
                 [(site, vrf, "true", f"fabricgen cluster {topology.cluster.metadata.name}: its address plan, unique "
                                      "in it (the switches route it in their default VRF; the RD only names it)")]),
        _table("15-prefixes", ("prefix", "vrf.rd", "status", "scope_type", "scope_name", "description"),
                 [(p, vrf, status, "dcim.site", s, d) for p, status, s, d in _prefix_order(prefixes)]),
        _table("16-ip-addresses", ("address", "vrf.rd", "status", "role", DEVICE_COLUMN, "interface", "is_primary",
                                     "is_oob", "description"), addresses),
    ]


def _primary_rank(ft: FabricTopology) -> int | None:
    """Which of a node's addresses is its primary IP (review D10: nodes without an in-band fabric had none, so
    inventory tools had nothing to reach them by): the in-band fabric's first (a switch: its loopback, rank 0),
    else a storage or other Ethernet fabric's, else IPoIB's; never an out-of-band (BMC) address."""
    if ft.fabric.role is FabricRole.OOB or ft.fabric.role.nic_role is NicRole.BMC:
        return None
    if ft.fabric.role is FabricRole.INBAND:
        return 1
    return 3 if ft.fabric.type is FabricType.INFINIBAND else 2


def _prefix_order(prefixes: dict[str, Row]) -> Iterator[tuple[str, str, str, str]]:
    """Containers first (widest first), then the subnets in address order."""
    def key(item: tuple[str, Row]) -> tuple[int, int, int]:
        net = IPNetwork(item[0])
        return (0 if item[1][1] == "container" else 1, net.first, net.prefixlen)

    for _, (p, status, s, d) in sorted(prefixes.items(), key=key):
        yield str(p), str(status), str(s), str(d)


@dataclass(frozen=True, slots=True)
class ImportSet:
    """What the cluster puts in NetBox: the device types (with their interface templates) and one table per
    import file, by name (``07-devices``)."""

    device_types: tuple[dict[str, Any], ...]
    tables: dict[str, Table]
    names: PortNames  # NetBox's name of each cabled port (its label: the faceplate name)

    def records(self, name: str) -> list[dict[str, object]]:
        table = self.tables.get(name)
        return table.records() if table else []


def import_set(topology: Topology) -> ImportSet:
    names = port_names(topology)
    documents, device_type, sub_ports = _device_types(topology, names)
    tables = [*_dcim(topology, documents, device_type, names), *_ipam(topology, sub_ports, names)]
    return ImportSet(tuple(documents), {t.name: t for t in tables}, names)


def render(topology: Topology) -> list[Artifact]:
    if not topology.cables and not topology.cluster.nodes:
        return []
    imports = import_set(topology)
    templated = {str(d["model"]): templated_ports(d) for d in imports.device_types}
    artifacts = [a for t in imports.tables.values() for a in _chunks(t, _row_seconds(t, templated))]
    artifacts += [Artifact(f"netbox/05-device-types/{slug(str(d['manufacturer']))}-{d['slug']}.yaml",
                           yaml.safe_dump(d, sort_keys=False, explicit_start=True).encode())
                  for d in imports.device_types]
    return sorted(artifacts, key=lambda a: a.path)
