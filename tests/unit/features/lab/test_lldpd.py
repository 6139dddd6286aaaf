"""lldpd's start-up file per lab namespace: the planned name as system name; a SONiC port's Port ID its PORT alias
with its description (as lldpmgrd configures lldpd), an EOS port's its EOS name, an NVUE port's its interface name
(lldpd's ifname form); a host keeps lldpd's defaults; a description lldpcli cannot take in quotes is refused."""
from __future__ import annotations

import pytest

from fabricgen.core.errors import LabError
from fabricgen.features.ethernet.nos.sonic.routing import routing
from fabricgen.features.lab.lldpd import lldpd_conf
from fabricgen.model.routing import RoutedPort
from tests.conftest import REPO

GOLDEN = REPO / "tests/golden/h100-4su/switches"


def test_a_sonic_leaf_sends_its_aliases_and_descriptions() -> None:
    leaf = routing("storage-leaf001", (GOLDEN / "storage-leaf001/config_db.json").read_bytes())
    ethernet0 = next(p for p in leaf.ports if p.name == "Ethernet0")
    lines = lldpd_conf(leaf.name, [ethernet0]).decode().splitlines()
    assert lines == ["configure system hostname storage-leaf001", "configure lldp portidsubtype ifname",
                     "configure ports Ethernet0 lldp portidsubtype local etp1a",
                     'configure ports Ethernet0 lldp portdescription "gpu001:Slot1P1"']


def test_eos_nvue_and_host_forms() -> None:
    eos = RoutedPort("et33_1", "33/1", 9214, True, "storage-spine01:1/1 (port 33, cable 3 m)", lldp_id="Ethernet33/1")
    nvue = RoutedPort("swp1", "1", 9216, True)
    assert lldpd_conf("leaf", [eos, nvue]).decode().splitlines()[2:] == [
        "configure ports et33_1 lldp portidsubtype local Ethernet33/1",
        'configure ports et33_1 lldp portdescription "storage-spine01:1/1 (port 33, cable 3 m)"']
    assert lldpd_conf("gpu001").decode() == "configure system hostname gpu001\n"


@pytest.mark.parametrize("description", ['say "hi"', "back\\slash", "new\nline"])
def test_a_description_lldpcli_cannot_quote_is_refused(description: str) -> None:
    with pytest.raises(LabError, match=r"port swp1: Port ID '' or description .* cannot be given to lldpcli"):
        lldpd_conf("leaf", [RoutedPort("swp1", "1", 9216, True, description)])
