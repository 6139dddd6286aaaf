"""How many addresses of the surviving devices a growth or shrink step changes: h100-4su's OOB with a rack
emptied or a node added to a rack, its storage pod ranges with a leaf pair gone, its IPoIB rails past 8 SUs, the
OOB switches' own values (loopback, management address, ASN, each p2p end) with a rack emptied, and the rack and U
of every switch that stays when a storage leaf pair goes.

Each case is one edit of the example (or of a larger copy of it); an address counts as changed when the same
device's interface (or leaf's pod range, or switch's value) has another address or prefix. Run: PYTHONPATH=cli python
bench/address_stability.py (the README's field-review paragraph quotes its figures).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from fabricgen.core.errors import FabricgenError
from fabricgen.model.addressing import FabricAddresses
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = (REPO / "inventories" / "h100-4su.yaml").read_text(encoding="utf-8")
GPUS = ("  - name: gpu{n:03d}\n    count: 127\n    profile: dgx-h100\n"
        "    placement: {rows: [A, B, C, D], per_rack: 4, start_u: 2}\n")
OTHER_RACKS = ", ".join([f"A{i:02d}" for i in range(3, 11)] + [f"{r}{i:02d}" for r in "BCD" for i in range(1, 11)])
Edit = Callable[[str], str]


def _replace(old: str, new: str) -> Edit:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new, 1)
    return edit


def _gpus(count: int) -> Edit:
    return _replace("    count: 127\n    profile: dgx-h100\n", f"    count: {count}\n    profile: dgx-h100\n")


def _bigger(gpus: int) -> Edit:
    """The example with ``gpus`` DGX, in rows of 20 racks (room for 320) and network racks of 48 switches."""
    def edit(text: str) -> str:
        for row in "ABCD":
            text = _replace(f"{{name: {row}, racks: 10}}", f"{{name: {row}, racks: 20}}")(text)
        text = _replace("  slack_m: 1.0\n", "  slack_m: 1.0\n  switches_per_network_rack: 48\n")(text)
        return _gpus(gpus)(text)
    return edit


def _plan_growth(text: str) -> str:
    return _replace("scalable_unit: 32", "scalable_unit: 32, max_scalable_units: 16")(text)


_SPLIT_A02 = _replace(GPUS, "  - name: gpu00{n}\n    count: 4\n    profile: dgx-h100\n"
                       "    placement: {racks: [A01], per_rack: 4, start_u: 2}\n"
                       "  - name: gpu{n:03d}\n    count: 119\n    start: 9\n    profile: dgx-h100\n"
                       f"    placement: {{racks: [{OTHER_RACKS}], per_rack: 4, start_u: 2}}\n")
TWO_MORE_IN_A02 = _replace("  - name: ufm01\n", "  - name: bmc-only{n:02d}\n    count: 2\n    profile: bmc-only\n"
                           "    placement: {racks: [A02], per_rack: 2, start_u: 40}\n  - name: ufm01\n")


def EMPTIED_A02(text: str) -> str:  # noqa: N802 (an edit, named as the other cases' edits)
    """gpu005-008 gone: gpu001-004 in A01, the rest from A03 on as before; groups named by both patterns."""
    return _SPLIT_A02(text).replace('["gpu{n:03d}"]', '["gpu00{n}", "gpu{n:03d}"]')


BMC_ONLY = _replace("node_profiles:\n", "node_profiles:\n  bmc-only:\n    role: management\n    height_u: 1\n"
                    "    nics:\n      bmc: {port: BMC, model: bmc-1g-rj45}\n")



def _network_row(racks: int, max_racks: int | None = None) -> Edit:
    """h100-4su's network row N (third of five rows) with ``racks`` racks, planned for ``max_racks``."""
    planned = "" if max_racks is None else f", max_racks: {max_racks}"
    return _replace("{name: N, racks: 6, kind: network}", f"{{name: N, racks: {racks}{planned}, kind: network}}")


CASES: tuple[tuple[str, str, Edit, Edit, str], ...] = (
    # (what, fabric, before, after, kind of address)
    ("rack A02 emptied (gpu005-008 gone)", "oob", lambda t: t, EMPTIED_A02, "host"),
    ("two more nodes' BMCs in rack A02 (4 -> 6)", "oob", BMC_ONLY, lambda t: TWO_MORE_IN_A02(BMC_ONLY(t)), "host"),
    ("127 -> 122 DGX (storage leaf pair 3 gone)", "storage", lambda t: t, _gpus(122), "pods"),
    ("223 -> 255 DGX (7 -> 8 SUs)", "compute", _bigger(223), _bigger(255), "host"),
    ("223 -> 255 DGX, max_scalable_units: 16", "compute", lambda t: _plan_growth(_bigger(223)(t)),
     lambda t: _plan_growth(_bigger(255)(t)), "host"),
    ("rack A02 emptied (gpu005-008 gone)", "oob", lambda t: t, EMPTIED_A02, "switch"),
    ("127 -> 122 DGX (storage leaf pair 3 gone)", "", lambda t: t, _gpus(122), "placement"),
    ("network row N 6 -> 8 racks", "oob", lambda t: t, _network_row(8), "host"),
    ("network row N 6 -> 8 racks", "oob", lambda t: t, _network_row(8), "switch"),
    ("network row N 6 -> 8 racks, max_racks: 8", "oob", _network_row(6, 8), _network_row(8, 8), "host"),
    ("network row N 6 -> 8 racks, max_racks: 8", "oob", _network_row(6, 8), _network_row(8, 8), "switch"),
)


def addresses(plan: FabricAddresses, kind: str) -> dict[tuple[str, str], str]:
    """Host addresses by (device, NIC port), pod ranges by leaf, or the switches' own values by (switch, what)."""
    if kind == "switch":
        return switch_values(plan)
    if kind == "pods":
        return {(pod.leaf, "pods"): pod.network for pod in plan.pods}
    return {(node, str(port)): f"{ip}/{subnet.network.split('/')[1]}" for subnet in plan.hosts
            for node, port, ip in subnet.hosts}


def switch_values(plan: FabricAddresses) -> dict[tuple[str, str], str]:
    """Every value a switch is configured with that a neighbour or the NOC knows it by: its loopback, management
    address and ASN, and each end of its p2p links (by switch and port)."""
    values = {(name, "loopback"): ip for name, ip in plan.loopbacks.items()}
    values |= {(name, "management"): ip for name, ip in plan.management.items()}
    values |= {(name, "asn"): str(asn) for name, asn in plan.asn.items()}
    for link in plan.p2p:
        values[(link.lower, f"p2p {link.lower_port}")] = link.lower_ip
        values[(link.upper, f"p2p {link.upper_port}")] = link.upper_ip
    return values


def placements(topology: Topology) -> dict[tuple[str, str], str]:
    """Every switch's rack and U."""
    return {(sw.name, "rack/U"): f"{sw.rack} U{sw.u}" for ft in topology.fabrics for sw in ft.switches}


def _compiled(text: str, fabric: str, kind: str) -> dict[tuple[str, str], str]:
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "spec.yaml"
        spec.write_text(text, encoding="utf-8")
        topology = compile_spec(spec).topology
        return placements(topology) if kind == "placement" else addresses(topology.addresses[fabric], kind)


def main() -> int:
    for what, fabric, before, after, kind in CASES:
        try:
            old, new = _compiled(before(EXAMPLE), fabric, kind), _compiled(after(EXAMPLE), fabric, kind)
        except FabricgenError as error:  # a spec this version refuses (max_scalable_units before it existed)
            print(f"{what}: refused: {str(error).splitlines()[0]}")
            continue
        kept = old.keys() & new.keys()
        changed = sorted(key for key in kept if old[key] != new[key])
        print(f"{what}: {fabric or 'all fabrics'} {kind}: {len(changed)} of {len(kept)} surviving changed"
              + (f" (e.g. {changed[0][0]} {old[changed[0]]} -> {new[changed[0]]})" if changed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
