"""Cables as the cable plan gives them: one per link, both ends located, medium, part and length."""

from __future__ import annotations

from dataclasses import dataclass

from fabricgen.model.hardware import Medium, Optic


@dataclass(frozen=True, slots=True)
class CableEnd:
    """One end of a cable, enough to find the device and plug the right port."""

    row: str
    rack: str
    u: int
    device: str
    port: str
    port_number: int
    gpu: int | None = None
    rdma_dev: str = ""
    netdev: str = ""
    form_factor: str = ""  # the cage's form factor: the switch cage's, at a node end the NIC's
    vendor: str = ""  # the switch's vendor (empty at a node end): vendors take their own optics
    cage: str = ""  # a node end: the chassis cage of the port (a twin-port cage holds two); empty at a switch


@dataclass(frozen=True, slots=True)
class Cable:
    id: str
    fabric: str
    tier: str
    speed: str
    rail: int | None
    su: int | None
    a: CableEnd
    z: CableEnd
    run_m: float
    length_m: float
    part: str
    medium: Medium
    # the physical cable: this cable's id, or the id of the splitter or cage-pair cable it is a link of (its links'
    # ids are then ``<physical>/L<leg>``)
    physical: str = ""
    leg: int = 0  # 1..medium.legs for a leg of a splitter, 0 for an ordinary cable

    def __post_init__(self) -> None:
        if not self.physical:
            object.__setattr__(self, "physical", self.id)

    def renumbered(self, cable_id: str, physical: str) -> Cable:
        """This cable under its final id and physical cable's id (every cable of the plan is renumbered once it is
        whole): the fields passed as they are, since ``dataclasses.replace`` is generic (~9 us a call, 0.3 s of a
        16k-GPU compile)."""
        return Cable(cable_id, self.fabric, self.tier, self.speed, self.rail, self.su, self.a, self.z, self.run_m,
                     self.length_m, self.part, self.medium, physical, self.leg)

    @property
    def name(self) -> str:
        """What the cable is called on its labels: its id, a splitter leg ``<physical id>/L<leg>``."""
        return f"{self.physical}/L{self.leg}" if self.leg else self.id

    @property
    def leg_fibers(self) -> str:
        """A breakout leg's MPO fiber positions (Tx/Rx at the plug), from its medium; empty otherwise."""
        fibers = self.medium.leg_fibers
        return fibers[self.leg - 1] if self.leg and self.leg <= len(fibers) else ""

    @property
    def leg_order(self) -> str:
        """A breakout leg as the crew checks it: which leg of how many, its fibers and the harness polarity, so a
        leg fitted to the wrong port (which still links up, on another switch's /31) is caught at install."""
        if not self.leg_fibers:
            return ""
        return f"leg {self.leg} of {self.medium.legs}: MPO fibers {self.leg_fibers}, {self.medium.polarity}"

    @property
    def label(self) -> str:
        """Printed on both ends: the id (a splitter leg: ``<physical id>/L<leg>``) and both device:port pairs."""
        return f"{self.name} {self.a.device}:{self.a.port} {self.z.device}:{self.z.port}"

    @property
    def a_optic(self) -> Optic | None:
        if self.tier == "node-leaf":
            return self.medium.host_optic_for(self.a.form_factor)
        return self.medium.switch_optic_for(self.a.form_factor, self.a.vendor)

    @property
    def z_optic(self) -> Optic | None:
        return self.medium.switch_optic_for(self.z.form_factor, self.z.vendor)
