"""lldpd's start-up configuration for one lab namespace (pure), so each sends what the device it stands for
would: the planned device name as its system name, and from a switch port the Port ID and description its NOS's
LLDP agent sends. A switch port goes out as its interface name with its description (lldpd's own form for a port
with an ifAlias, as Cumulus Linux sends ``swp1``), unless its NOS sends another Port ID (``RoutedPort.lldp_id``):
SONiC's lldpmgrd runs ``lldpcli configure ports <port> lldp portidsubtype local <alias> description
<PORT description>`` (sonic-buildimage dockers/docker-lldp/lldpmgrd), EOS sends its interface name
(``Ethernet1/1``, not the lab's kernel name ``et1_1``). A host keeps lldpd's defaults, as Debian's lldpd sends
from a server: a port without an ifAlias goes out with its MAC address as Port ID and its interface name as
description (lldpcli(8), ``portidsubtype``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from fabricgen.core.errors import LabError
from fabricgen.core.templating import render_template
from fabricgen.model.routing import RoutedPort

# lldpcli reads its start-up file with its own word splitting: a description goes in double quotes, so it must not
# hold one (or a backslash, its escape); printable ASCII only
_QUOTABLE = re.compile(r'[ !#-\[\]-~]*')
_WORD = re.compile(r'[!#-\[\]-~]*')


@dataclass(frozen=True)
class _LldpPort:
    name: str
    port_id: str
    description: str


def lldpd_conf(system: str, ports: Iterable[RoutedPort] | None = None) -> bytes:
    """lldpd.conf (``lldpd -O``) for the device ``system``: a switch with its cabled ``ports``, or a host (None);
    LabError naming a Port ID or description lldpcli cannot take."""
    configured = []
    for port in ports or ():
        port_id = port.lldp_id if port.lldp_id != port.name else ""
        if not (_QUOTABLE.fullmatch(port.description) and _WORD.fullmatch(port_id)):
            raise LabError(f"{system} port {port.name}: Port ID {port_id!r} or description {port.description!r} "
                           "cannot be given to lldpcli (printable ASCII without \" or \\; no space in the ID)")
        configured.append(_LldpPort(port.name, port_id, port.description))
    return render_template("lab/lldpd.conf.j2", system=system, switch=ports is not None, ports=configured)
