"""``lab check``'s findings over a running lab, each naming what does not hold. Built so far: BGP sessions, every
one the read-back configures (not shut down) against its state in FRR, with FRR's last NOTIFICATION as the why."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from fabricgen.features.lab import netns
from fabricgen.features.lab.plan import LabFabric
from fabricgen.model.routing import SwitchRouting


def _why(peer: Mapping[str, object]) -> str:
    """FRR's ``lastNotificationReason`` ("OPEN Message Error/Bad Peer AS") and ``lastResetDueTo``, where it has them."""
    reasons = [str(peer[key]) for key in ("lastNotificationReason", "lastResetDueTo") if peer.get(key)]
    return f" (last NOTIFICATION: {', '.join(reasons)})" if reasons else ""


def session_failures(lab: LabFabric, switches: Mapping[str, SwitchRouting], state_dir: Path) -> Iterator[str]:
    """Every configured session that is not Established, by switch, peer, the peer's address and AS, and why."""
    for name, namespace in lab.namespaces.items():
        answer = netns.vtysh(state_dir, namespace, "show bgp neighbors json")
        peers = answer if isinstance(answer, dict) else {}
        for n in switches[name].neighbors:
            peer = peers.get(str(n.address))
            state = str(peer.get("bgpState", "")) if isinstance(peer, dict) else "not configured in FRR"
            if not n.shutdown and state != "Established":
                why = _why(peer) if isinstance(peer, dict) else ""
                yield (f"fabric {lab.fabric}: {name}: BGP session to {n.description or n.address} ({n.address}, "
                       f"AS {n.remote_asn}) is {state}{why}")
