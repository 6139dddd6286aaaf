"""EOS MLAG pairs through pyavd: h100-4su's in-band fabric on Arista 7060DX5-64S leaves in MLAG pairs. Every
switch's AVD structured config validates with no violation or deprecation, pyavd renders byte for byte the CLI
fabricgen writes (but for the header), and both leaves of each pair mirror each other: one domain id, the VLAN 4094
/31 crosswise, the same Port-Channel mlag id for the same node, the same VARP gateway and MAC, distinct own SVI
addresses. Without pyavd these tests skip; with FABRICGEN_REQUIRE_EXTERNAL=1 (CI) they fail instead."""

from __future__ import annotations

from typing import Any

import pytest

from fabricgen.features.ethernet.nos import eos
from fabricgen.model.cluster import Tier
from fabricgen.pipeline import compile_spec
from tests.external.ethernet.test_pyavd import require_pyavd
from tests.helpers.ethernet import mlag_eos_spec


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, dict[str, Any]], dict[str, bytes], list[str]]:
    topology = compile_spec(mlag_eos_spec(tmp_path_factory.mktemp("eos-mlag"))).topology
    views = [v for v in eos.eos_views(topology) if v.fabric.name == "inband"]
    leaves = [v.name for v in views if v.tier is Tier.LEAF]
    return ({v.name: eos.structured_config(v) for v in views},
            {a.path: a.content for a in eos.render(topology)}, leaves)


@pytest.mark.external
def test_pyavd_validates_and_renders_the_same_cli(
        rendered: tuple[dict[str, dict[str, Any]], dict[str, bytes], list[str]]) -> None:
    pyavd = require_pyavd()
    configs, artifacts, leaves = rendered
    assert len(leaves) == 6  # 64-port 7060DX5s: three pairs
    for name, config in configs.items():
        result = pyavd.validate_structured_config(config)
        violations = [(".".join(map(str, v.path)), v.message) for v in result.validation_result.violations]
        assert violations == [] and list(result.validation_result.deprecations) == [], f"{name}: {violations}"
        ours = artifacts[f"switches/{name}/{name}.cfg"].decode()
        assert "".join(ours.splitlines(keepends=True)[2:]) == pyavd.get_device_config(result.validated_data), name


@pytest.mark.external
def test_pairs_mirror_each_other(rendered: tuple[dict[str, dict[str, Any]], dict[str, bytes], list[str]]) -> None:
    require_pyavd()
    configs, _, leaves = rendered
    for a, z in zip(leaves[0::2], leaves[1::2], strict=True):
        ca, cz = configs[a], configs[z]
        ma, mz = ca["mlag_configuration"], cz["mlag_configuration"]
        assert ma["domain_id"] == mz["domain_id"] and ma["peer_link"] == mz["peer_link"] == "Port-Channel999"
        peer_svi = {c["name"]: c for c in ca["vlan_interfaces"]}["Vlan4094"], \
            {c["name"]: c for c in cz["vlan_interfaces"]}["Vlan4094"]
        assert peer_svi[0]["ip_address"].split("/")[0] == mz["peer_address"]
        assert peer_svi[1]["ip_address"].split("/")[0] == ma["peer_address"]
        hosts_a, hosts_z = ({c["name"]: c for c in x["vlan_interfaces"]}["Vlan100"] for x in (ca, cz))
        assert hosts_a["ip_virtual_router_addresses"] == hosts_z["ip_virtual_router_addresses"]
        assert hosts_a["ip_address"] != hosts_z["ip_address"]
        assert ca["ip_virtual_router_mac_address"] == cz["ip_virtual_router_mac_address"]

        def bonds(config: dict[str, Any]) -> dict[int, str]:
            members = {e["channel_group"]["id"]: e["description"].split(":")[0]
                       for e in config["ethernet_interfaces"] if "channel_group" in e}
            return {pc["mlag"]: members[pc["mlag"]] for pc in config["port_channel_interfaces"] if "mlag" in pc}

        assert bonds(ca) and bonds(ca) == bonds(cz), "one mlag id, one node, on both leaves"
        peer_members = [e for e in ca["ethernet_interfaces"] if e.get("channel_group", {}).get("id") == 999]
        assert len(peer_members) == 2 and all(e["description"].startswith(z + ":") for e in peer_members)
        neighbors = {n["description"].split(":")[0] for n in ca["router_bgp"]["neighbors"]}
        assert z not in neighbors, "no BGP session over the peer link"
