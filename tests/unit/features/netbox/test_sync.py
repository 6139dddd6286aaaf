"""The parts of `fabricgen netbox sync` that need no NetBox: how cables are grouped into NetBox cables (and their
profiles, against NetBox's own choice set), the port speeds, the token and the field comparison that makes a second
sync write nothing. The sync itself runs against a real NetBox in tests/external/netbox/test_sync.py."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from fabricgen.features.netbox.sync import SyncError, _differs, cable_groups, port_speeds, token_value
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES

RELEASES = {path.stem: yaml.safe_load(path.read_text())
            for path in sorted((Path(__file__).parents[3] / "data" / "netbox").glob("netbox-*.yaml"))}


@pytest.mark.parametrize("spec", ["lab-1su", "h100-4su"])
def test_every_link_is_in_one_netbox_cable_and_splitters_are_one(spec: str) -> None:
    topology = compile_spec(INVENTORIES / f"{spec}.yaml").topology
    groups = cable_groups(topology.cables)
    labels = [label for label, *_ in groups]
    assert len(labels) == len(set(labels))
    assert Counter(c.id for _, legs, _ in groups for c in legs) == Counter(c.id for c in topology.cables)
    for label, legs, profile in groups:
        if profile is None:
            assert len(legs) == 1 and label == legs[0].name
            continue
        assert profile in RELEASES["netbox-4.7.3"]["choices"]["CableProfileChoices"]
        assert profile == f"trunk-{len(legs)}c1p" and label == legs[0].physical
        assert [c.leg for c in legs] == list(range(1, len(legs) + 1))  # connector k is leg k
        assert len({c.medium.name for c in legs}) == 1


def test_lab_splitters_become_one_cable_each() -> None:
    topology = compile_spec(INVENTORIES / "lab-1su.yaml").topology
    profiles = Counter(profile for _, _, profile in cable_groups(topology.cables))
    # 40 storage links on 20 twin-lane DACs, 8 OOB uplinks on two 4-leg breakouts, the rest one link a cable
    assert profiles == Counter({None: 144, "trunk-2c1p": 20, "trunk-4c1p": 2})


def test_port_speeds_are_the_links_in_kbit() -> None:
    speeds = port_speeds(compile_spec(INVENTORIES / "lab-1su.yaml").topology)
    assert set(speeds.values()) == {400_000_000, 200_000_000, 100_000_000, 1_000_000}
    assert max(speeds.values()) < 2**31  # NetBox's interface speed field is a 32-bit integer


def test_token_is_taken_bare_or_as_a_header_value() -> None:
    assert token_value("nbt_abc.def\n") == "nbt_abc.def"
    assert token_value("Bearer nbt_abc.def") == "nbt_abc.def"
    assert token_value("Token 0123456789abcdef") == "0123456789abcdef"
    for bad in ("", "  \n", "two\nlines"):
        with pytest.raises(SyncError):
            token_value(bad)


def test_a_field_differs_only_when_netbox_would_change() -> None:
    assert not _differs("planned", {"value": "planned", "label": "Planned"})
    assert _differs("active", {"value": "planned", "label": "Planned"})
    assert not _differs(7, {"id": 7, "url": "...", "display": "L01"})
    assert not _differs(10, 10.0) and not _differs(2.5, 2.5) and _differs(2.5, 3.0)
    assert not _differs(None, None) and not _differs(None, "") and _differs(None, 1)
    assert not _differs(False, False) and _differs(True, False)
    assert not _differs({"fabricgen_device": "lab/a"}, {"fabricgen_device": "lab/a", "other": 1})
    ends = [{"object_type": "dcim.interface", "object_id": 1}, {"object_type": "dcim.interface", "object_id": 2}]
    assert not _differs(ends, [dict(e, object={}) for e in ends])
    assert _differs(ends, list(reversed(ends)))  # connector order is the leg order
