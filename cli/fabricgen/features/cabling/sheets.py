"""Target ``cabling``: the cable run list and bill of materials as CSV (NetBox's files: the ``netbox`` feature).

cables.csv has one row per cable (A = lower tier); the legs of a 1:N splitter are one row each, sharing
``physical_cable`` (the physical cable's id) and numbered in ``leg`` (empty for an ordinary cable, whose
``physical_cable`` is its own id), as are the links of a cage-pair cable; such a row's ``cable_id`` is
``<physical_cable>/L<leg>``: count physical cables by distinct ``physical_cable``, as bom.csv does. A
breakout leg also gives ``leg_fibers`` (its MPO positions, Tx/Rx) and the harness ``polarity``.
``a_label`` and ``z_label`` are the labels printed for each end: the label of the plug it is in (the legs of one
splitter share their trunk's ``z_label``, the two links of a cage-pair cable both labels; ``handoff.end_labels``).
free-ports.csv lists every switch connector no cable plugs into and every leg of a plugged splitter no device takes,
in faceplate order, with its faceplate port and the NOS's name of it, whether the cage's optic is in already, the
cable id a cable plugged there takes, the speed, breakout and admin state the switch's rendered configuration gives
it (empty where fabricgen writes no configuration for the switch) and what it is reserved for (``free.free_ports``):
where growth and replacements go.
"""

from __future__ import annotations

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import csv_bytes
from fabricgen.features.cabling import handoff
from fabricgen.features.cabling.free import FreePort, free_ports
from fabricgen.features.cabling.plan import cluster_bom
from fabricgen.model.cabling import Cable
from fabricgen.model.topology import Topology

CABLE_COLUMNS = (
    "cable_id", "physical_cable", "leg", "leg_fibers", "polarity", "label", "fabric", "tier", "rail", "su", "speed",
    "medium", "kind", "fiber", "length_m", "run_m", "cable_part", "a_optic", "z_optic",
    "a_site", "a_row", "a_rack", "a_u", "a_device", "a_port", "a_port_number", "a_gpu", "a_rdma_dev", "a_netdev",
    "z_site", "z_row", "z_rack", "z_u", "z_device", "z_port", "z_port_number", "a_label", "z_label",
)


FREE_COLUMNS = ("fabric", "device", "model", "rack", "u", "connector", "cage", "cage_connector", "port", "interface",
                "alias", "form_factor", "free", "optic", "cable_id", "speed", "breakout", "admin", "role",
                "reserved")

Cell = handoff.Cell | None


def _blank(value: int | None) -> Cell:
    return "" if value is None else value


def cable_row(cable: Cable, site: str, labels: dict[tuple[str, bool], str]) -> tuple[Cell, ...]:
    """The cables.csv row of one cable (also the XLSX row), in CABLE_COLUMNS order; ``labels``: the end labels
    (``handoff.end_labels``)."""
    a, z, m = cable.a, cable.z, cable.medium
    return (cable.id, cable.physical, cable.leg or "", cable.leg_fibers, m.polarity if cable.leg_fibers else "",
            cable.label, cable.fabric, cable.tier, _blank(cable.rail),
            _blank(cable.su), cable.speed, m.name, m.kind, m.fiber, cable.length_m, cable.run_m, cable.part,
            cable.a_optic.part if cable.a_optic else "", cable.z_optic.part if cable.z_optic else "",
            site, a.row, a.rack, a.u, a.device, a.port, a.port_number, _blank(a.gpu), a.rdma_dev, a.netdev,
            site, z.row, z.rack, z.u, z.device, z.port, z.port_number, labels[cable.id, True], labels[cable.id, False])


def free_row(f: FreePort) -> tuple[Cell, ...]:
    """The free-ports.csv row of one free port, in FREE_COLUMNS order."""
    setting = f.setting
    return (f.fabric, f.device, f.model, f.rack, f.u, f.number, f.cage, f.cage_connector or "", f.port, f.interface,
            f.alias, f.form_factor, f.kind, f.optic, f.cable_id,
            setting.speed if setting else "", setting.breakout if setting else "", _admin(f), f.role, f.reserved)


# a port the configuration leaves without buffers, QoS map or address: a manual startup links it without PFC
UNPROVISIONED = " (unprovisioned: add it to the spec and apply)"


def _admin(f: FreePort) -> str:
    """The admin column: the configured state, and for an unprovisioned port (SONiC's dark ports) how to bring it
    up losslessly, since ``config interface startup`` alone gives a link without PFC."""
    setting = f.setting
    if setting is None:
        return ""
    return setting.admin + (UNPROVISIONED if setting.unprovisioned else "")


def render(topology: Topology) -> list[Artifact]:
    site = topology.cluster.metadata.site
    cables = topology.cables
    labels = handoff.end_labels(cables)
    bom = topology.shared(cluster_bom)
    return [
        Artifact("cabling/cables.csv", csv_bytes(CABLE_COLUMNS, (cable_row(c, site, labels) for c in cables))),
        Artifact("cabling/bom.csv", csv_bytes(("category", "part", "description", "count"),
                                         ((b.category, b.part, b.description, b.count) for b in bom))),
        Artifact("cabling/free-ports.csv", csv_bytes(FREE_COLUMNS, map(free_row, free_ports(topology)))),
    ]
