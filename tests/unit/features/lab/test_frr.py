"""FRR configuration of lab switches, from the SONiC read-back of h100-4su's storage goldens: the sessions, the
prefixes and the ECMP width the switch would run, in bgpcfgd's form. FRR itself parses every file in
tests/external/lab/test_frr.py."""
from __future__ import annotations

import dataclasses

from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab.frr import FRR_MULTIPATH_LIMIT, bgpd_conf
from fabricgen.model.routing import SwitchRouting
from tests.conftest import REPO

GOLDEN = REPO / "tests/golden/h100-4su/switches"


def _read(switch: str) -> SwitchRouting:
    return routing(switch, (GOLDEN / switch / "config_db.json").read_bytes())


def _lines(conf: bytes) -> list[str]:
    return [line.strip() for line in conf.decode().splitlines()]


def test_leaf_config_is_what_bgpcfgd_writes() -> None:
    leaf = _read("storage-leaf001")
    lines = _lines(bgpd_conf(leaf))
    assert lines[:9] == ["hostname storage-leaf001", "!", "router bgp 65100", "bgp router-id 10.22.0.5",
                         "bgp log-neighbor-changes", "no bgp default ipv4-unicast", "no bgp ebgp-requires-policy",
                         "bgp bestpath as-path multipath-relax", "neighbor PEER_V4 peer-group"]
    family = lines[lines.index("address-family ipv4 unicast"):lines.index("exit-address-family")]
    assert family[1:6] == ["network 10.22.0.5/32", "network 10.20.0.0/25", "network 10.20.128.0/23",
                           f"maximum-paths {FRR_MULTIPATH_LIMIT}", "neighbor PEER_V4 allowas-in 1"]
    assert family[6:] == [f"neighbor {n.address} activate" for n in leaf.neighbors] and len(family[6:]) == 64
    for n in leaf.neighbors:
        for expected in (f"neighbor {n.address} remote-as 65000", f"neighbor {n.address} peer-group PEER_V4",
                         f"neighbor {n.address} description {n.description}", f"neighbor {n.address} timers 3 9",
                         f"neighbor {n.address} timers connect 10"):
            assert expected in lines
    assert not any("shutdown" in line for line in lines)


def test_spine_has_no_allowas_in_and_announces_its_loopback_only() -> None:
    lines = _lines(bgpd_conf(_read("storage-spine01")))
    assert "router bgp 65000" in lines and not any("allowas-in" in line for line in lines)
    assert [line for line in lines if line.startswith("network ")] == ["network 10.22.0.1/32"]


def test_shutdown_default_paths_and_limit() -> None:
    leaf = _read("storage-leaf001")
    first = dataclasses.replace(leaf.neighbors[0], shutdown=True, connect_s=0)
    edited = dataclasses.replace(leaf, neighbors=(first, *leaf.neighbors[1:]), maximum_paths=0,
                                 multipath_relax=False, allowas_in=0)
    lines = _lines(bgpd_conf(edited))
    assert f"neighbor {first.address} shutdown" in lines
    assert f"neighbor {first.address} timers connect 10" not in lines
    assert not any(line.startswith(("maximum-paths", "bgp bestpath", "neighbor PEER_V4 allowas")) for line in lines)
    assert "maximum-paths 48" in _lines(bgpd_conf(dataclasses.replace(leaf, maximum_paths=48)))
    assert "maximum-paths 16" in _lines(bgpd_conf(leaf, multipath_limit=16))


def test_deterministic() -> None:
    assert bgpd_conf(_read("storage-leaf003")) == bgpd_conf(_read("storage-leaf003"))
