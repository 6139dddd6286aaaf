"""Per-leaf eBGP ASNs (addressing.asn.leaves) end to end: the plan, the switch views and every NOS dialect.

The spec is tests/data/asn/per-leaf.yaml: two leaves pinned (a 2-byte ASN and the largest 4-byte one), the
others numbered from a 4-byte leaf_base, a 4-byte spine ASN. It is rendered as SONiC, EOS and NVUE (checked
against the strict startup.yaml schema); SONiC's YANG models and pyavd check the same files in
tests/external/ethernet (test_sonic_yang.py, test_pyavd.py).
The errors are negative cases (tests/negative/asn-*.yaml); the cross-fabric warning is tested here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.core.errors import Severity
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.stages.check import run_checks
from tests.helpers.addressing import EXPECTED_ASNS as EXPECTED
from tests.helpers.addressing import PER_LEAF_SPEC as SPEC
from tests.helpers.addressing import eos_bgp_lines as _eos_bgp_lines
from tests.helpers.addressing import eos_per_leaf as _eos
from tests.helpers.addressing import per_leaf_spec as _spec
from tests.helpers.addressing import render_per_leaf as _render
from tests.helpers.addressing import storage_views as _views
from tests.helpers.ethernet import NVUE_SCHEMA


def test_pinned_leaves_keep_their_asn_and_the_others_count_from_leaf_base() -> None:
    assert compile_spec(SPEC).topology.addresses["storage"].asn == EXPECTED


def test_both_ends_of_every_session_see_the_pinned_asns() -> None:
    views = _views(compile_spec(SPEC).topology)
    assert {v.name: v.asn for v in views} == EXPECTED
    sessions = [(v.name, p.peer, p.peer_asn) for v in views for p in v.routed_ports]
    assert len(sessions) == 16  # 4 leaves x 2 uplinks, seen from both ends
    assert all(asn == EXPECTED[peer] for _, peer, asn in sessions)
    assert ("storage-agg02", "storage-l04", 4294967294) in sessions


def test_pinning_a_leaf_renumbers_no_other(tmp_path: Path) -> None:
    spec = tmp_path / "unpinned.yaml"
    spec.write_text(SPEC.read_text().split("        leaves:\n")[0])
    unpinned = compile_spec(spec).topology.addresses["storage"].asn
    assert {k: v for k, v in unpinned.items() if v != EXPECTED[k]} == {"storage-l02": 4200000101,
                                                                      "storage-l04": 4200000103}


# -- SONiC ----------------------------------------------------------------------------------------------------------
def test_sonic_device_metadata_and_bgp_neighbors(tmp_path: Path) -> None:
    views, files = _render(tmp_path, "sonic")
    for view in views:
        db = json.loads(files[f"switches/{view.name}/config_db.json"])
        assert db["DEVICE_METADATA"]["localhost"]["bgp_asn"] == str(EXPECTED[view.name])
        neighbors = {n["name"]: n["asn"] for n in db["BGP_NEIGHBOR"].values()}
        assert neighbors == {p.peer: str(EXPECTED[p.peer]) for p in view.routed_ports}


# -- EOS ------------------------------------------------------------------------------------------------------------
def test_eos_router_bgp_and_remote_as(tmp_path: Path) -> None:
    views, configs, cli = _eos(tmp_path)
    for view in views:
        bgp = configs[view.name]["router_bgp"]
        assert bgp["as"] == str(EXPECTED[view.name])
        assert {n["ip_address"]: n["remote_as"] for n in bgp["neighbors"]} == {
            p.peer_address: str(EXPECTED[p.peer]) for p in view.routed_ports}
        lines = [line.strip() for line in cli[view.name].splitlines()]
        assert all(line in lines for line in _eos_bgp_lines(view)), view.name


# -- NVUE -----------------------------------------------------------------------------------------------------------
def test_nvue_autonomous_system_and_remote_as_validate_against_the_schema(tmp_path: Path) -> None:
    validator = Draft202012Validator(json.loads(NVUE_SCHEMA.read_text()))
    views, files = _render(tmp_path, "nvue")
    for view in views:
        document = yaml.safe_load(files[f"switches/{view.name}/startup.yaml"])
        assert not [e.message for e in validator.iter_errors(document)], view.name
        tree = document[0]["set"]
        assert tree["router"]["bgp"]["autonomous-system"] == EXPECTED[view.name]
        neighbors = tree["vrf"]["default"]["router"]["bgp"]["neighbor"]
        assert {ip: n["remote-as"] for ip, n in neighbors.items()} == {
            p.peer_address: EXPECTED[p.peer] for p in view.routed_ports}
        commands = files[f"switches/{view.name}/nv-commands.txt"].decode().splitlines()
        assert f"nv set router bgp autonomous-system {EXPECTED[view.name]}" in commands


# -- across fabrics -------------------------------------------------------------------------------------------------
OOB = """  oob:
    type: ethernet
    speed: 1G
    uplink_speed: 100G
    switch: {leaf: SN2201, spine: SN4700}
    topology: {kind: top-of-rack, uplinks: 2}
    addressing: {hosts: 10.50.0.0/22, p2p: 10.51.0.0/24, loopbacks: 10.52.0.0/26, asn: %s}
"""


@pytest.mark.parametrize(("asn", "warning"), [
    ("{spine: 4200000000, leaf_base: 4200000101}", "shares 2 ASNs with fabric storage (4200000000, 4200000102)"),
    ("{spine: 4200000000, leaf_base: 4200000100, leaves: {oob-l02: 65102, oob-l04: 4294967294}}",
     "shares 5 ASNs with fabric storage (65102, 4200000000, 4200000100, ...)"),
    ("{spine: 64000, leaf_base: 65101, leaves: {oob-l01: 64100}}", "shares 1 ASN with fabric storage (65102)"),
    ("{spine: 64000, leaf_base: 64100}", ""),
], ids=["shared", "identical", "one", "disjoint"])
def test_asns_shared_across_fabrics_are_a_warning(tmp_path: Path, asn: str, warning: str) -> None:
    compiled = compile_spec(_spec(tmp_path, append=OOB % asn))
    findings = [f for f in run_checks(compiled.topology) if f.check == "asn"]
    assert [(f.severity, f.subject, f.message) for f in findings] == (
        [(Severity.WARNING, "oob", warning)] if warning else [])
    if findings:
        assert findings[0].position is not None and findings[0].position.line == SPEC.read_text().count("\n") + 7
    assert render_spec(compiled), "a warning does not stop rendering"
