"""Target ``cabling``: the cable run list and bill of materials as CSV, and NetBox bulk-import files.

cables.csv has one row per cable (A = lower tier); the legs of a 1:N splitter are one row each, sharing
``physical_cable`` (the id of the first leg) and numbered in ``leg`` (empty for an ordinary cable, whose
``physical_cable`` is its own id): count physical cables by distinct ``physical_cable``, as bom.csv does.
The NetBox files import in order: racks, devices, interfaces, cables (columns as NetBox's CSV bulk import
expects; cables reference interfaces by device/name).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import csv_bytes
from fabricgen.features.cabling.plan import bill_of_materials
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology

CABLE_COLUMNS = (
    "cable_id", "physical_cable", "leg", "label", "fabric", "tier", "rail", "su", "speed", "medium", "kind", "fiber",
    "length_m", "run_m", "cable_part", "a_optic", "z_optic",
    "a_site", "a_row", "a_rack", "a_u", "a_device", "a_port", "a_port_number", "a_gpu", "a_rdma_dev", "a_netdev",
    "z_site", "z_row", "z_rack", "z_u", "z_device", "z_port", "z_port_number",
)
NETBOX_CABLE_COLUMNS = ("side_a_device", "side_a_type", "side_a_name", "side_b_device", "side_b_type", "side_b_name",
                        "type", "status", "label", "color", "length", "length_unit")


Cell = str | int | float | None


def _blank(value: int | None) -> Cell:
    return "" if value is None else value


def cable_row(cable: Cable, site: str) -> tuple[Cell, ...]:
    """The cables.csv row of one cable (also the XLSX row), in CABLE_COLUMNS order."""
    a, z, m = cable.a, cable.z, cable.medium
    return (cable.id, cable.physical, cable.leg or "", cable.label, cable.fabric, cable.tier, _blank(cable.rail),
            _blank(cable.su), cable.speed, m.name, m.kind, m.fiber, cable.length_m, cable.run_m, cable.part,
            cable.a_optic.part if cable.a_optic else "", cable.z_optic.part if cable.z_optic else "",
            site, a.row, a.rack, a.u, a.device, a.port, a.port_number, _blank(a.gpu), a.rdma_dev, a.netdev,
            site, z.row, z.rack, z.u, z.device, z.port, z.port_number)


def _netbox_cables(cables: Sequence[Cable]) -> bytes:
    """One NetBox cable per link (NetBox models a breakout as separate cables); a splitter leg's label is
    ``<physical id>/L<leg>``."""
    rows = ((c.a.device, "dcim.interface", c.a.port, c.z.device, "dcim.interface", c.z.port, c.medium.netbox_type,
             "planned", f"{c.physical}/L{c.leg}" if c.leg else c.id, c.medium.color, c.length_m, "m") for c in cables)
    return csv_bytes(NETBOX_CABLE_COLUMNS, rows)


def _netbox_devices(topology: Topology) -> tuple[bytes, bytes]:
    cluster = topology.cluster
    site = cluster.metadata.site
    racks = sorted({n.rack.name for n in cluster.nodes} | {s.rack for f in topology.fabrics for s in f.switches
                                                           if s.rack})
    racks_csv = csv_bytes(("site", "name", "status", "u_height", "width"),
                     ((site, rack, "planned", cluster.facility.rack_units, 19) for rack in racks))
    devices: list[tuple[object, ...]] = [
        (n.name, "server", "", n.profile.name, "planned", site, n.rack.name, n.u, "front") for n in cluster.nodes]
    devices += [(s.name, f"{f.fabric.name}-{s.tier.value}", s.model.vendor, s.model.name, "planned", site, s.rack,
                 s.u, "front") for f in topology.fabrics for s in f.switches]
    header = ("name", "role", "manufacturer", "device_type", "status", "site", "rack", "position", "face")
    return racks_csv, csv_bytes(header, devices)


def _netbox_interfaces(topology: Topology) -> bytes:
    """Every cabled port once (each port has exactly one cable, a checked invariant), in cable order."""
    speeds = {f.fabric.name: (f.fabric.speed, f.fabric.uplink_speed) for f in topology.fabrics}

    def rows() -> Iterator[tuple[str, str, str, str]]:
        for c in topology.cables:
            host_speed, uplink_speed = speeds[c.fabric]
            kind = (host_speed if c.tier == "node-leaf" else uplink_speed).netbox_interface_type
            yield c.a.device, c.a.port, kind, c.a.netdev
            yield c.z.device, c.z.port, kind, ""

    return csv_bytes(("device", "name", "type", "description"), rows())


def render(topology: Topology) -> list[Artifact]:
    site = topology.cluster.metadata.site
    cables = topology.cables
    bom = bill_of_materials((s.model.name for f in topology.fabrics for s in f.switches), cables)
    racks_csv, devices_csv = _netbox_devices(topology)
    return [
        Artifact("cabling/cables.csv", csv_bytes(CABLE_COLUMNS, (cable_row(c, site) for c in cables))),
        Artifact("cabling/bom.csv", csv_bytes(("category", "part", "description", "count"),
                                         ((b.category, b.part, b.description, b.count) for b in bom))),
        Artifact("cabling/netbox-racks.csv", racks_csv),
        Artifact("cabling/netbox-devices.csv", devices_csv),
        Artifact("cabling/netbox-interfaces.csv", _netbox_interfaces(topology)),
        Artifact("cabling/netbox-cables.csv", _netbox_cables(cables)),
    ]
