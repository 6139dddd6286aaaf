"""SONiC routing read-back (what ``fabricgen lab`` configures FRR from), over h100-4su's storage fabric as rendered
in the golden config_db.json files: each file alone, the ten files against each other (every session has its
mirror on the planned peer), and against the compiled plan; bad files give one report of every problem."""
from __future__ import annotations

import json
from collections import Counter
from ipaddress import IPv4Address, IPv4Interface, IPv4Network
from typing import Any

import pytest

from fabricgen.core.errors import ConfigReadError
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.model.routing import SwitchRouting
from fabricgen.model.topology import LEAF_SPINE
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import STORAGE_LEAVES, STORAGE_SWITCHES

GOLDEN = REPO / "tests/golden/h100-4su/switches"
SPINES = [s for s in STORAGE_SWITCHES if s not in STORAGE_LEAVES]


def _file(switch: str) -> bytes:
    return (GOLDEN / switch / "config_db.json").read_bytes()


def _db(switch: str) -> dict[str, Any]:
    db: dict[str, Any] = json.loads(_file(switch))
    return db


@pytest.fixture(scope="module")
def fabric() -> dict[str, SwitchRouting]:
    return {switch: routing(switch, _file(switch)) for switch in STORAGE_SWITCHES}


def test_sonic_nos_offers_the_routing_read_back() -> None:
    assert systems()["sonic"].routing is routing


def test_leaf_reads_back_as_bgpcfgd_would_render_it(fabric: dict[str, SwitchRouting]) -> None:
    leaf = fabric["storage-leaf001"]
    assert (leaf.asn, leaf.loopback, leaf.router_id) == (65100, IPv4Interface("10.22.0.5/32"), IPv4Address("10.22.0.5"))
    # bgpd.main.conf.j2: network Loopback0/32 and the host VLAN's prefixes (the SVI's, as FRR stores them): the
    # host subnet and the pods' range
    assert leaf.networks == (IPv4Network("10.22.0.5/32"), IPv4Network("10.20.0.0/25"), IPv4Network("10.20.128.0/23"))
    assert (leaf.allowas_in, leaf.maximum_paths, leaf.multipath_relax) == (1, 514, True)  # ToRRouter, constants.yml
    [vlan] = leaf.vlans
    assert (vlan.name, vlan.vid, vlan.mtu, vlan.addresses) == ("Vlan100", 100, 9100, (IPv4Interface("10.20.0.1/25"),
                                                                                      IPv4Interface("10.20.128.1/23")))
    hosts = [p.name for p in leaf.ports if p.description and not p.description.startswith("storage-spine")]
    assert list(vlan.members) == hosts and len(hosts) == 64
    assert all(not p.addresses for p in leaf.ports if p.name in vlan.members)
    assert all(n.remote_asn == 65000 and (n.keepalive_s, n.hold_s) == (3, 9) and not n.shutdown
               for n in leaf.neighbors)


def test_every_value_comes_from_the_file(fabric: dict[str, SwitchRouting]) -> None:
    """Edit the artifact, and the read-back follows: it reads the file, not the model."""
    db = _db("storage-leaf001")
    db["DEVICE_METADATA"]["localhost"].update(bgp_asn="4200000001", bgp_router_id="192.0.2.9", type="LeafRouter")
    first = min(db["BGP_NEIGHBOR"])
    db["BGP_NEIGHBOR"][first].update(asn="65009", admin_status="down")
    del db["BGP_NEIGHBOR"][first]["keepalive"], db["BGP_NEIGHBOR"][first]["holdtime"]
    db["VLAN"]["Vlan100"]["mtu"] = "1500"
    edited = routing("storage-leaf001", json.dumps(db).encode())
    assert (edited.asn, edited.router_id, edited.allowas_in) == (4200000001, IPv4Address("192.0.2.9"), 0)
    [changed] = [n for n in edited.neighbors if n.address == IPv4Address(first)]
    assert (changed.remote_asn, changed.shutdown, changed.keepalive_s, changed.hold_s, changed.connect_s) == (
        65009, True, 60, 180, 10)
    assert edited.vlans[0].mtu == 1500
    assert edited.neighbors != fabric["storage-leaf001"].neighbors


def test_spines_take_no_allowas_in(fabric: dict[str, SwitchRouting]) -> None:
    assert {(fabric[s].asn, fabric[s].allowas_in) for s in SPINES} == {(65000, 0)}
    assert all(not fabric[s].vlans and len(fabric[s].networks) == 1 for s in SPINES)


def test_every_session_has_its_mirror_on_the_planned_peer(fabric: dict[str, SwitchRouting]) -> None:
    """Each neighbor address is a /31 address of exactly the switch the session names, which peers back at our
    local address with our ASN, over a port whose /31 holds both ends, at one MTU on both ends."""
    owner = {a.ip: (s.name, p) for s in fabric.values() for p in s.ports for a in p.addresses}
    for switch in fabric.values():
        for n in switch.neighbors:
            peer_name, peer_port = owner[n.address]
            assert peer_name == n.description
            peer = fabric[peer_name]
            assert peer.asn == n.remote_asn
            [back] = [m for m in peer.neighbors if m.address == n.local_address]
            assert (back.remote_asn, back.local_address, back.description) == (switch.asn, n.address, switch.name)
            local_name, local_port = owner[n.local_address]  # type: ignore[index]
            assert local_name == switch.name
            [a], [z] = local_port.addresses, peer_port.addresses
            assert a.network == z.network and a.network.prefixlen == 31
            assert local_port.mtu == peer_port.mtu == 9100 and local_port.up and peer_port.up


def test_sessions_match_the_plan(fabric: dict[str, SwitchRouting]) -> None:
    """One session per planned leaf-spine link, on both ends; leaf ASNs as distinct as the plan makes them."""
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    [storage] = [ft for ft in compiled.topology.fabrics if ft.fabric.name == "storage"]
    planned = Counter(frozenset((link.a.device, link.z.device)) for link in storage.links if link.tier == LEAF_SPINE)
    read = Counter(frozenset((s.name, n.description)) for s in fabric.values() for n in s.neighbors)
    assert read == Counter({pair: 2 * count for pair, count in planned.items()})
    assert len({fabric[leaf].asn for leaf in STORAGE_LEAVES}) == len(STORAGE_LEAVES)


def test_bad_file_reports_every_problem_at_once() -> None:
    db = _db("storage-leaf001")
    del db["DEVICE_METADATA"]["localhost"]["bgp_asn"]
    db["LOOPBACK_INTERFACE"] = {"Loopback0": {}}
    db["INTERFACE"]["Ethernet999|10.9.9.9/31"] = {}
    db["BGP_NEIGHBOR"]["10.21.0.0"]["asn"] = "sixty-five"
    db["VLAN_MEMBER"]["Vlan200|Ethernet0"] = {"tagging_mode": "untagged"}
    db["PORT"]["Ethernet0"] = "up"
    db["BGP_NEIGHBOR"]["10.21.0.2"]["name"] = "spine\n neighbor 192.0.2.1 remote-as 1"  # would be an FRR command
    db["PORT"]["Ethernet4\nlink del Ethernet8"] = db["PORT"].pop("Ethernet4")  # would be an ip -batch command
    db["VLAN"]["Vlan100 type dummy"] = {"vlanid": "100"}
    with pytest.raises(ConfigReadError) as caught:
        routing("storage-leaf001", json.dumps(db).encode())
    lines = str(caught.value).splitlines()
    assert all(line.startswith("switches/storage-leaf001/config_db.json: ") for line in lines)
    text = str(caught.value)
    for expected in ("bgp_asn is None", "0 IPv4 addresses on Loopback0", "INTERFACE|Ethernet999 has no PORT entry",
                     "BGP_NEIGHBOR|10.21.0.0 asn is 'sixty-five'", "Vlan200 has members",
                     "PORT|Ethernet0 is not a row", "BGP_NEIGHBOR|10.21.0.2 name is 'spine\\n neighbor",
                     "PORT 'Ethernet4\\nlink del Ethernet8' is not a SONiC port name",
                     "VLAN 'Vlan100 type dummy' is not a SONiC VLAN name",
                     "VLAN_MEMBER|Vlan100|Ethernet4 names no PORT"):
        assert expected in text
    assert len(lines) == 12  # these, and VLAN_MEMBER rows of Ethernet0 and Vlan200's member, each once


@pytest.mark.parametrize("content", [b"{", b"[]", b"\xff"])
def test_not_a_config_db(content: bytes) -> None:
    with pytest.raises(ConfigReadError, match=r"^switches/x/config_db.json: not "):
        routing("x", content)


def test_read_back_is_deterministic() -> None:
    """Key order in the file does not change the result (sorted as SONiC lists ports and peers)."""
    db = _db("storage-spine01")
    shuffled = {table: dict(reversed(list(rows.items()))) for table, rows in reversed(list(db.items()))}
    assert routing("storage-spine01", json.dumps(shuffled).encode()) == routing("storage-spine01",
                                                                                _file("storage-spine01"))
