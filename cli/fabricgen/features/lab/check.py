"""``lab check``'s findings over a running lab, each naming what does not hold. Built so far: BGP sessions, every
one the read-back configures (not shut down) against its state in FRR."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from fabricgen.features.lab import netns
from fabricgen.features.lab.plan import LabFabric
from fabricgen.model.routing import SwitchRouting


def session_failures(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path) -> Iterator[str]:
    """Every configured session that is not Established, by switch, peer and the peer's address and AS."""
    for name, namespace in lab.namespaces.items():
        states = netns.sessions(state_dir, namespace)
        for n in switches[name].neighbors:
            state = states.get(str(n.address), "not configured in FRR")
            if not n.shutdown and state != "Established":
                yield (f"fabric {lab.fabric}: {name}: BGP session to {n.description or n.address} ({n.address}, "
                       f"AS {n.remote_asn}) is {state}")
