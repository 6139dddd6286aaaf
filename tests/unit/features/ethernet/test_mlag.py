"""MLAG leaf pairs (``topology.attachment: mlag``) on h100-4su's in-band fabric, as DGX BasePOD cables it: the pairs
and their peer links, one subnet per pair, the SONiC MC-LAG and NVUE MLAG configurations of both leaves of a pair
checked against each other, the hosts' LACP bond and NCCL on it. SONiC's YANG models and netplan read the same
files in tests/external/ethernet/test_mlag_consumers.py."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator
from netaddr import IPAddress, IPNetwork

from fabricgen.core.errors import LabError
from fabricgen.features.ethernet import host_roce
from fabricgen.features.ethernet.nos import nvue
from fabricgen.features.ethernet.nos.nvue import settings_tree, switch_blocks
from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.switch_view import switch_views
from fabricgen.features.lab.run import routed_fabrics
from fabricgen.features.nccl import render as nccl
from fabricgen.model.cluster import Tier
from fabricgen.model.topology import LEAF_LEAF, NODE_LEAF, Topology
from fabricgen.pipeline import compile_spec
from tests.helpers.ethernet import NVUE_SCHEMA, mlag_spec


@pytest.fixture(scope="module")
def topology(tmp_path_factory: pytest.TempPathFactory) -> Topology:
    return compile_spec(mlag_spec(tmp_path_factory.mktemp("mlag"))).topology


@pytest.fixture(scope="module")
def nvue_topology(tmp_path_factory: pytest.TempPathFactory) -> Topology:
    return compile_spec(mlag_spec(tmp_path_factory.mktemp("mlag-nvue"), "nvue")).topology


def _pairs(topology: Topology) -> list[tuple[str, str]]:
    leaves = [sw.name for sw in topology.fabric("inband").switches_in(Tier.LEAF)]
    return list(zip(leaves[0::2], leaves[1::2], strict=True))


def test_pairs_peer_links_and_bond_members(topology: Topology) -> None:
    """Leaves pair up (12: 6 pairs), each pair joined by two cables on the cages after the uplinks, never an
    uplink's port; every DGX's two in-band ports land one on each leaf of one pair."""
    ft = topology.fabric("inband")
    pairs = _pairs(topology)
    assert len(pairs) == 6
    peer = [link for link in ft.links if link.tier == LEAF_LEAF]
    assert sorted((link.a.device, link.z.device) for link in peer) == sorted(p for p in pairs for _ in range(2))
    used = defaultdict(list)
    for link in ft.links:
        for end in (link.a, link.z):
            used[(end.device, end.number)].append(link.tier)
    assert all(len(tiers) == 1 for tiers in used.values()), "a port carries one link"
    pair_of = {leaf: pair for pair in pairs for leaf in pair}
    homes: dict[str, set[str]] = defaultdict(set)
    for link in ft.links:
        if link.tier == NODE_LEAF:
            homes[link.a.device].add(link.z.device)
    dgx = [n.name for n in topology.cluster.nodes if n.profile.name == "dgx-h100"]
    assert dgx and all(len(homes[n]) == 2 and len({pair_of[leaf] for leaf in homes[n]}) == 1 for n in dgx)
    cables = [c for c in topology.cables if c.fabric == "inband" and c.tier == LEAF_LEAF]
    assert len(cables) == len(peer), "the cable plan carries every peer link"


def test_one_subnet_per_pair_with_an_anycast_gateway(topology: Topology) -> None:
    plan = topology.addresses["inband"]
    assert [(s.leaf, s.peer) for s in plan.hosts] == _pairs(topology)
    for subnet in plan.hosts:
        network = IPNetwork(subnet.network)
        gateway, own = IPAddress(subnet.gateway), [IPAddress(a) for a in subnet.leaf_addresses]
        assert gateway == network[1] and own == [network[2], network[3]]
        hosts = [IPAddress(ip) for _, _, ip in subnet.hosts]
        assert len(set(hosts)) == len(hosts) and all(ip in network and ip > network[3] for ip in hosts)
        assert max(hosts) < network[-1], "the broadcast address stays free"


def test_sonic_pair_mirrors_mclag(topology: Topology) -> None:
    """Both leaves of a pair: one MCLAG domain, source and peer the two loopbacks crosswise, the peer link a tagged
    VLAN member over the peer-link ports, each node's bond the same PortChannel number on both, in the VLAN in the
    host port's place, and the same gateway on both VLAN interfaces (SONiC's same-IP MC-LAG)."""
    views = {v.name: v for v in switch_views(topology, topology.fabric("inband"))}
    dbs = {a.path.split("/")[1]: json.loads(a.content) for a in sonic.render(topology)
           if a.path.endswith("config_db.json") and a.path.startswith("switches/inband-leaf")}
    for domain, (a, z) in enumerate(_pairs(topology), start=1):
        da, dz = dbs[a], dbs[z]
        assert da["MCLAG_DOMAIN"] == {str(domain): {"source_ip": views[a].loopback, "peer_ip": views[z].loopback,
                                                    "peer_link": "PortChannel999"}}
        assert dz["MCLAG_DOMAIN"][str(domain)]["source_ip"] == views[z].loopback
        assert da["VLAN_INTERFACE"] == dz["VLAN_INTERFACE"]
        for db, view in ((da, views[a]), (dz, views[z])):
            peer_ports = {name for name, port in db["PORT"].items()
                          if port.get("description", "").startswith(view.mlag.peer + ":")}  # type: ignore[union-attr]
            assert len(peer_ports) == 2
            assert {k.split("|")[1] for k in db["PORTCHANNEL_MEMBER"] if k.startswith("PortChannel999|")} == peer_ports
            assert db["VLAN_MEMBER"]["Vlan100|PortChannel999"] == {"tagging_mode": "tagged"}
            # only a host with one in-band port (the Lustre servers') is a port of the VLAN itself, untagged, no bond
            orphans = [k.split("|")[1] for k in db["VLAN_MEMBER"] if k.split("|")[1].startswith("Ethernet")]
            assert all(db["PORT"][port]["description"].startswith(("mds", "oss")) for port in orphans)
            assert all(db["VLAN_MEMBER"][f"Vlan100|{port}"] == {"tagging_mode": "untagged"} for port in orphans)
            hosts = {name: pc for name, pc in db["PORTCHANNEL"].items() if name != "PortChannel999"}
            assert set(db["MCLAG_INTERFACE"]) == {f"{domain}|{name}" for name in hosts}
            assert all(pc["fast_rate"] == "true" for pc in hosts.values())

        def node_of(db: dict, channel: str) -> str:  # type: ignore[type-arg]
            port = next(k.split("|")[1] for k in db["PORTCHANNEL_MEMBER"] if k.split("|")[0] == channel)
            return str(db["PORT"][port]["description"].split(":")[0])

        channels = [pc for pc in da["PORTCHANNEL"] if pc != "PortChannel999"]
        assert channels and sorted(channels) == sorted(pc for pc in dz["PORTCHANNEL"] if pc != "PortChannel999")
        assert all(node_of(da, pc) == node_of(dz, pc) for pc in channels), "one MLAG id, one node, both leaves"


def test_nvue_pair_mirrors_mlag_and_vrr(nvue_topology: Topology) -> None:
    views = {v.name: v for v in switch_views(nvue_topology, nvue_topology.fabric("inband"))}
    trees = {name: settings_tree(s for b in switch_blocks(v) for s in b.settings) for name, v in views.items()
             if v.tier is Tier.LEAF}
    macs = set()
    for a, z in _pairs(nvue_topology):
        ta, tz = trees[a], trees[z]
        assert ta["mlag"]["mac-address"] == tz["mlag"]["mac-address"]
        macs.add(ta["mlag"]["mac-address"])
        assert set(ta["mlag"]["backup"]) == {views[z].loopback} and set(tz["mlag"]["backup"]) == {views[a].loopback}
        va, vz = ta["interface"]["vlan100"]["ip"], tz["interface"]["vlan100"]["ip"]
        gateway = f"{views[a].gateway}/{views[a].host_subnet.split('/')[1]}"
        assert va["vrr"]["address"] == vz["vrr"]["address"] == {gateway: {}}
        assert va["address"] != vz["address"], "each leaf its own SVI address beside the VRR one"

        def bonds(tree: dict) -> dict[int, str]:  # type: ignore[type-arg]
            return {int(i["bond"]["mlag"]["id"]): str(i["description"]).split(":")[0]
                    for n, i in tree["interface"].items() if n.startswith("bond")}

        assert bonds(ta) and bonds(ta) == bonds(tz)
        peerlink = ta["interface"]["peerlink"]
        assert peerlink["type"] == "peerlink" and len(peerlink["bond"]["member"]) == 2
        for name, iface in ta["interface"].items():
            if name.startswith("swp") and iface.get("description", "").startswith(z + ":"):
                assert "bridge" not in iface and "ip" not in iface, "peer-link members are neither routed nor access"
    assert len(macs) == 6, "one system MAC per pair"
    routed = [n for n, i in trees[_pairs(nvue_topology)[0][0]]["vrf"]["default"]["router"]["bgp"]["neighbor"].items()]
    assert len(routed) == len(views[_pairs(nvue_topology)[0][0]].routed_ports), "no BGP session over the peer link"


def test_nvue_startup_yaml_is_in_the_schema(nvue_topology: Topology) -> None:
    """Every in-band switch's startup.yaml against fabricgen's strict NVUE schema (the MLAG and VRR subset written
    from Cumulus Linux 5.9's MLAG and VRR pages' startup.yaml dumps); a misspelt MLAG key is refused."""
    validator = Draft202012Validator(json.loads(NVUE_SCHEMA.read_text()))
    files = {a.path: a.content for a in nvue.render(nvue_topology) if a.path.endswith("startup.yaml")}
    leaf = yaml.safe_load(files["switches/inband-leaf001/startup.yaml"])
    assert leaf[0]["set"]["mlag"]["enable"] == "on" and leaf[0]["set"]["router"]["vrr"] == {"enable": "on"}
    assert leaf[0]["set"]["interface"]["vlan100"]["ip"]["vrr"]["state"] == {"up": {}}
    for path, content in sorted(files.items()):
        if "/inband-" in path:
            assert not [e.message for e in validator.iter_errors(yaml.safe_load(content))], path
    leaf[0]["set"]["mlag"]["peerip"] = "linklocal"
    assert list(validator.iter_errors(leaf))


def test_host_bond_runs_lacp_and_nccl_uses_it(topology: Topology) -> None:
    netplan = yaml.safe_load(next(a.content for a in host_roce.render(topology)
                                  if a.path == "hosts/gpu001/netplan-inband.yaml"))
    bond = netplan["network"]["bonds"]["bond0"]
    assert bond["interfaces"] == ["enp170s0f1np1", "enp41s0f1np1"]
    assert bond["parameters"] == {"mode": "802.3ad", "lacp-rate": "fast", "transmit-hash-policy": "layer3+4",
                                  "mii-monitor-interval": 100}
    subnet = next(s for s in topology.addresses["inband"].hosts if any(h[0] == "gpu001" for h in s.hosts))
    assert bond["addresses"] == [f"{next(ip for n, p, ip in subnet.hosts if n == 'gpu001' and p == 1)}/"
                                 f"{IPNetwork(subnet.network).prefixlen}"]
    assert {r["via"] for r in bond["routes"] if "via" in r} == {subnet.gateway}
    env = next(a.content.decode() for a in nccl.render(topology) if a.path == "hosts/dgx-h100/nccl.env")
    assert "NCCL_SOCKET_IFNAME==bond0" in env


def test_sonic_pairs_warn_that_the_image_needs_iccpd(tmp_path: Path) -> None:
    """sonic-buildimage builds no iccpd (MC-LAG) by default: the plan says so, once per MLAG fabric."""
    found = [f for f in compile_spec(mlag_spec(tmp_path)).warnings if f.check == "mlag-nos"]
    assert len(found) == 1 and "INCLUDE_ICCPD=y" in found[0].message and found[0].subject == "inband"


def test_lab_refuses_an_mlag_fabric_by_name(topology: Topology) -> None:
    with pytest.raises(LabError, match="bonding driver"):
        routed_fabrics(topology, "inband")
    assert "inband" not in {ft.fabric.name for ft in routed_fabrics(topology, None)}


def test_mlag_output_is_deterministic(tmp_path: Path, topology: Topology) -> None:
    again = compile_spec(mlag_spec(tmp_path)).topology
    first = {a.path: a.content for a in sonic.render(topology) if "inband-leaf00" in a.path}
    assert first == {a.path: a.content for a in sonic.render(again) if "inband-leaf00" in a.path}


@pytest.mark.parametrize("nos", ["sonic", "nvue"])
def test_a_bond_of_four_is_one_port_channel_of_two_a_leaf(nos: str, tmp_path: Path) -> None:
    text = (Path(__file__).parents[3] / "data" / "mlag" / "four-port-bond.yaml").read_text()
    spec = tmp_path / "spec.yaml"
    spec.write_text(text.replace("nos: sonic", f"nos: {nos}"))
    topology = compile_spec(spec).topology
    for leaf in ("inband-leaf001", "inband-leaf002"):
        view = next(v for v in switch_views(topology, topology.fabric("inband")) if v.name == leaf)
        lags = sorted(p.lag for p in view.host_ports)
        assert lags == [1, 1, 2, 2], "each node's bond: one MLAG id, two members on this leaf"
        if nos == "sonic":
            path = f"switches/{leaf}/config_db.json"
            db = json.loads(next(a.content for a in sonic.render(topology) if a.path == path))
            assert set(db["MCLAG_INTERFACE"]) == {"1|PortChannel1", "1|PortChannel2"}
            assert sum(k.startswith("PortChannel1|") for k in db["PORTCHANNEL_MEMBER"]) == 2
        else:
            tree = settings_tree(s for b in switch_blocks(view) for s in b.settings)
            assert len(tree["interface"]["bond1"]["bond"]["member"]) == 2
