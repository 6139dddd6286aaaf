"""Catalog hardware as the model sees it: speeds, switch and NIC models with their cages and lanes, cable media
and optics."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate

HOST_SWITCH, SWITCH_SWITCH = "host-switch", "switch-switch"  # the end kinds of a medium (media.yaml `ends`)


@dataclass(frozen=True)
class Speed:
    name: str
    gbps: float
    type: str
    lanes: int
    ibsim: str = ""
    netbox_interface_type: str = "other"


def lane_options(gbps: float, lanes: int, lane_gbps: tuple[int, ...]) -> frozenset[tuple[int, int]]:
    """The (lanes, Gb/s per lane) a port with ``lanes`` electrical lanes and SerDes rates ``lane_gbps`` can run
    ``gbps`` on; empty when the catalog gives no lane data or no listed rate adds up to the speed."""
    return frozenset((int(gbps // rate), rate) for rate in lane_gbps if gbps % rate == 0 and gbps // rate <= lanes)


def port_name(cage: int, lane: int, per_cage: int) -> str:
    """A switch port's physical name: ``<cage>/<lane>`` in a cage split into several logical ports, else
    ``<cage>`` (NVIDIA's and Arista's front-panel naming; 1-based cage counted across port groups)."""
    return f"{cage}/{lane}" if per_cage > 1 else str(cage)


def cage_of(port: str) -> int:
    """The cage of a physical port name (:func:`port_name`'s ``<cage>/<lane>`` or ``<cage>``)."""
    return int(port.partition("/")[0])


@dataclass(frozen=True)
class PortGroup:
    """Cages of one form factor; ``ports_per_cage`` gives the logical ports per cage at each speed, ``lanes`` the
    electrical lanes of one cage and ``lane_gbps`` the SerDes lane rates it runs (both optional: 0 and ())."""

    name: str
    cages: int
    form_factor: str
    ports_per_cage: tuple[tuple[str, int], ...]
    lanes: int = 0
    lane_gbps: tuple[int, ...] = ()

    def per_cage(self, speed: str) -> int:
        """Logical ports one cage gives at ``speed`` (0 when the cage cannot run at it)."""
        return next((n for s, n in self.ports_per_cage if s == speed), 0)

    @property
    def speeds(self) -> tuple[str, ...]:
        return tuple(speed for speed, _ in self.ports_per_cage)

    @property
    def native_split(self) -> int:
        """Logical ports of one cage unsplit: the fewest any speed gives (a twin-port OSFP cage is two ports)."""
        return min(n for _, n in self.ports_per_cage)

    def lane_options(self, speed: Speed) -> frozenset[tuple[int, int]]:
        """(lanes, Gb/s per lane) one logical port of a cage split for ``speed`` can run it on."""
        per_cage = self.per_cage(speed.name)
        return lane_options(speed.gbps, self.lanes // per_cage, self.lane_gbps) if per_cage else frozenset()


@dataclass(frozen=True)
class SwitchModel:
    name: str
    vendor: str
    fabric_type: str
    height_u: int
    port_groups: tuple[PortGroup, ...]
    asic: str = ""  # NVIDIA's ASIC name (Spectrum-4, Quantum-2); "" unknown: ASIC-bound features are refused

    def capacity(self, speeds: tuple[str, ...]) -> int:
        """Logical ports when each cage runs at whichever of ``speeds`` gives it the most ports."""
        return sum(g.cages * max(g.per_cage(s) for s in speeds) for g in self.port_groups)

    @cached_property
    def _last_cages(self) -> tuple[int, ...]:
        """The 1-based number of each port group's last cage."""
        return tuple(accumulate(g.cages for g in self.port_groups))

    def cages(self) -> Iterator[tuple[int, PortGroup]]:
        """Every cage in faceplate order, its 1-based number counted across port groups, with its port group: the
        one numbering of the faceplate that compile's port layout, the free ports and EOS's unused interfaces
        walk."""
        return enumerate((g for g in self.port_groups for _ in range(g.cages)), start=1)

    def cage_group(self, cage: int) -> PortGroup:
        """The port group of a 1-based cage number counted across port groups (by bisection: called per link)."""
        index = bisect_left(self._last_cages, cage)
        if cage < 1 or index == len(self.port_groups):
            raise ValueError(f"{self.name} has no cage {cage}")
        return self.port_groups[index]

    def cage_form_factor(self, cage: int) -> str:
        """Form factor of a 1-based cage number counted across port groups."""
        return self.cage_group(cage).form_factor

    def port_group(self, port_name: str) -> PortGroup:
        """The port group of the cage of a physical port name (``17/2``: cage 17's). Asked per switch end while the
        cables are planned (~270,000 times at 16k GPUs) of a model's few hundred names, so each answer is kept
        beside the (frozen) fields, as :meth:`Medium.switch_optic_for` keeps its."""
        answers: dict[str, PortGroup] = self.__dict__.setdefault("_port_groups", {})
        found = answers.get(port_name)
        if found is None:
            found = answers[port_name] = self.cage_group(cage_of(port_name))
        return found

    def logical_ports(self, speed: str) -> int:
        """Ports this model offers when every cage that supports ``speed`` runs at it."""
        return sum(g.cages * g.per_cage(speed) for g in self.port_groups)


@dataclass(frozen=True)
class NicModel:
    name: str
    vendor: str
    ports: int
    speeds: tuple[str, ...]
    link_types: tuple[str, ...]
    max_vfs: int | None = None
    form_factor: str = ""
    lanes: int = 0  # electrical lanes of one port (0: not in the catalog)
    lane_gbps: tuple[int, ...] = ()  # SerDes lane rates a port runs
    gpudirect: bool = False  # reads and writes GPU memory directly (GPUDirect RDMA), as GDS over RDMA needs
    supernic: bool = False  # an NVIDIA SuperNIC: the host end of Spectrum-X (RoCE adaptive routing, programmable CC)
    pci_device_id: str = ""  # lspci -n's device ID (a2dc BlueField-3, 1023 ConnectX-8): keys per-device firmware data

    def lane_options(self, speed: Speed) -> frozenset[tuple[int, int]]:
        """(lanes, Gb/s per lane) one port can run ``speed`` on."""
        return lane_options(speed.gbps, self.lanes, self.lane_gbps)


@dataclass(frozen=True)
class Optic:
    part: str
    connections: int
    port_fec: str = ""  # the FEC its port must run when the module decides it ("none": it terminates FEC itself)


@dataclass(frozen=True)
class Medium:
    """One way to cable a link: copper, AOC, or transceivers plus fiber; cables come in standard lengths."""

    name: str
    speeds: tuple[str, ...]
    ends: tuple[str, ...]
    kind: str
    fiber: str
    reach_m: float
    cables: tuple[tuple[float, str], ...]
    host_optic: Optic | None
    switch_optic: Optic | None
    netbox_type: str
    color: str
    switch_form_factors: tuple[str, ...] = ()
    host_form_factors: tuple[str, ...] = ()
    legs: int = 1  # a splitter: one switch-side connector serving ``legs`` logical switch ports and host ports
    # a cable between cages of two form factors (QSFP-DD to OSFP): the switch transceiver of each, by cage form
    # factor; a cage not listed takes switch_optic
    switch_optics: tuple[tuple[str, Optic], ...] = ()
    # a switch-to-switch cable that, between two cages split alike at one of these speeds, carries every logical
    # port of one cage to the port on the same lanes of the other (one cable per lane-aligned cage pair)
    cage_pair: tuple[str, ...] = ()
    # (vendor, cage form factor, transceiver): a switch of that vendor takes its own part in such a cage (Arista
    # optics in Arista switches, NVIDIA's in NVIDIA's); before switch_optics and switch_optic
    vendor_optics: tuple[tuple[str, str, Optic], ...] = ()
    # a breakout: the longest stagger between its legs (longest minus shortest run along the row) its fan-out is
    # built with, so its legs lie in adjacent racks of one row (0: not a breakout)
    fanout_m: float = 0.0
    leg_fibers: tuple[str, ...] = ()  # a breakout: the MPO fiber positions of leg n (Tx/Rx), n = the cage's port
    polarity: str = ""  # a breakout: the MPO end's gender, fibers and polarity type (TIA-568.3)
    # (NIC form factor, transceiver): a node cage of that form factor takes its own part instead of host_optic
    # (a DGX twin-port-OSFP cage: one twin-port flat-top transceiver for its two ports)
    host_optics: tuple[tuple[str, Optic], ...] = ()

    def host_optic_for(self, form_factor: str) -> Optic | None:
        """The transceiver a node cage of ``form_factor`` takes for this medium."""
        return next((optic for ff, optic in self.host_optics if ff == form_factor), self.host_optic)

    def switch_optic_for(self, form_factor: str, vendor: str = "") -> Optic | None:
        """The transceiver a switch cage of ``form_factor`` on a switch of ``vendor`` takes for this medium."""
        # Asked once per cable end and per bill-of-materials line (800,000 times at 16k GPUs), of a handful of
        # (form factor, vendor) pairs: each answer is searched for once and kept beside the (frozen) fields
        answers: dict[tuple[str, str], Optic | None] = self.__dict__.setdefault("_switch_optic_answers", {})
        key = (form_factor, vendor)
        if key not in answers:
            answers[key] = next(
                (optic for v, ff, optic in self.vendor_optics if v == vendor and ff == form_factor),
                next((optic for ff, optic in self.switch_optics if ff == form_factor), self.switch_optic))
        return answers[key]

    def fits(self, switch_form_factors: tuple[str, ...], host_form_factor: str | None) -> bool:
        """Whether the parts plug into these cages (an empty constraint accepts any cage)."""
        if self.switch_form_factors and any(f not in self.switch_form_factors for f in switch_form_factors):
            return False
        return not (host_form_factor and self.host_form_factors and host_form_factor not in self.host_form_factors)

    def standard_length(self, run_m: float) -> tuple[float, str] | None:
        """The shortest orderable cable (length, part) at least ``run_m`` long, within reach."""
        if run_m > self.reach_m:
            return None
        return next(((length, part) for length, part in self.cables if length >= run_m), None)


def serves_split_cage(medium: Medium, form_factor: str, speed: str, ends: str, cage_ports: int) -> bool:
    """Whether ``medium`` gives every logical port of a cage split ``cage_ports`` ways its own link with one plug
    in the cage: a splitter's legs times its plug's connectors (a twin-port transceiver's ``connections``, 1 for a
    cable plug) are the cage's ports. A straight QSFP56/QSFP28 plug in a QSFP-DD cage split 2 x 200G or 4 x 100G
    drives its first port only."""
    if speed not in medium.speeds or ends not in medium.ends:
        return False
    if medium.switch_form_factors and form_factor not in medium.switch_form_factors:
        return False
    optic = medium.switch_optic_for(form_factor)
    return medium.legs * (optic.connections if optic else 1) == cage_ports


def breakout(lower: SwitchModel, upper: SwitchModel, speed: str, media: tuple[Medium, ...]) -> Medium | None:
    """The first breakout in the catalog that serves a cage of ``upper`` split for ``speed`` from unsplit cages of
    ``lower``: its plug fills the upper cage, its legs plug into the lower ones (``host_form_factors``)."""
    lower_cages = {g.form_factor for g in lower.port_groups if g.per_cage(speed) == 1}
    for medium in media:
        if medium.legs < 2 or SWITCH_SWITCH not in medium.ends or not lower_cages & set(medium.host_form_factors):
            continue
        if any(split > 1 and serves_split_cage(medium, g.form_factor, speed, SWITCH_SWITCH, split)
               for g in upper.port_groups if (split := g.per_cage(speed))):
            return medium
    return None


def unserved_groups(model: SwitchModel, speed: str, ends: str, media: tuple[Medium, ...]) -> tuple[PortGroup, ...]:
    """The port groups of ``model`` whose cages, split for ``speed``, no catalog medium serves link by link for
    ``ends``: such a cage takes one straight plug, which drives its first port only. Between switches only
    straight media count: a breakout's legs plug into unsplit cages, so it never joins two split ones."""
    options = media if ends == HOST_SWITCH else tuple(m for m in media if m.legs == 1)
    return tuple(g for g in model.port_groups if g.per_cage(speed) > 1 and not any(
        serves_split_cage(m, g.form_factor, speed, ends, g.per_cage(speed)) for m in options))


def single_port_groups(model: SwitchModel, speed: str, media: tuple[Medium, ...]) -> frozenset[str]:
    """The leaf port groups whose split cages take one host each, on the first port."""
    return frozenset(g.name for g in unserved_groups(model, speed, HOST_SWITCH, media))


def pair_unit(model: SwitchModel, speed: str, media: tuple[Medium, ...]) -> int:
    """The logical ports one cage-pair cable carries between switches of this model at ``speed``: the split of
    the cages no medium serves link by link (1 when every cage is served)."""
    return max((g.per_cage(speed) for g in unserved_groups(model, speed, SWITCH_SWITCH, media)), default=1)
