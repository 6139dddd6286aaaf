"""What the per-leaf ASN tests share (tests/unit/features/addressing/test_asn.py and the SONiC YANG and pyavd checks
of the same spec in tests/external/ethernet): tests/data/asn/per-leaf.yaml, its expected ASNs, and its rendering
in every NOS dialect."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fabricgen.features.ethernet.nos import eos, nvue
from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.switch_view import SwitchView, switch_views
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.conftest import REPO

PER_LEAF_SPEC = REPO / "tests" / "data" / "asn" / "per-leaf.yaml"
SPINE = 4200000000
EXPECTED_ASNS = {"storage-l01": 4200000100, "storage-l02": 65102, "storage-l03": 4200000102,
                 "storage-l04": 4294967294, "storage-agg01": SPINE, "storage-agg02": SPINE}


# The switch model each NOS runs the storage fabric on (EOS runs on Arista switches only).
SWITCH = {"sonic": "SN4700", "nvue": "SN4700", "eos": "7060DX5-64S"}


def per_leaf_spec(tmp_path: Path, nos: str = "sonic", append: str = "") -> Path:
    """per-leaf.yaml with its storage fabric on ``nos`` (and ``append`` added at the end)."""
    text = PER_LEAF_SPEC.read_text()
    old = "    switch: SN4700\n    nos: sonic\n"
    assert text.count(old) == 1
    spec = tmp_path / f"per-leaf-{nos}.yaml"
    spec.write_text(text.replace(old, f"    switch: {SWITCH[nos]}\n    nos: {nos}\n") + append)
    return spec


def render_per_leaf(tmp_path: Path, nos: str) -> tuple[tuple[SwitchView, ...], dict[str, bytes]]:
    """The storage switch views and the ``nos`` renderer's files of per-leaf.yaml."""
    topology = compile_spec(per_leaf_spec(tmp_path, nos)).topology
    renderer = {"sonic": sonic, "eos": eos, "nvue": nvue}[nos]
    return storage_views(topology), {a.path: a.content for a in renderer.render(topology)}


def storage_views(topology: Topology) -> tuple[SwitchView, ...]:
    return switch_views(topology, topology.fabric("storage"))


def eos_per_leaf(tmp_path: Path) -> tuple[tuple[SwitchView, ...], dict[str, dict[str, Any]], dict[str, str]]:
    """per-leaf.yaml on EOS: the views, the structured config and the CLI per switch."""
    views, files = render_per_leaf(tmp_path, "eos")
    configs = {v.name: yaml.safe_load(files[f"switches/{v.name}/avd-structured-config.yaml"]) for v in views}
    cli = {v.name: files[f"switches/{v.name}/{v.name}.cfg"].decode() for v in views}
    return views, configs, cli


def eos_bgp_lines(view: SwitchView) -> list[str]:
    """The EOS lines that carry a switch's ASN and its neighbors'."""
    return [f"router bgp {EXPECTED_ASNS[view.name]}"] + [
        f"neighbor {p.peer_address} remote-as {EXPECTED_ASNS[p.peer]}" for p in view.routed_ports]
