"""FRR's bgpd configuration for one lab switch, from the routing its NOS's read-back found in the rendered
artifact (:class:`~fabricgen.model.routing.SwitchRouting`, from SONiC, NVUE or EOS alike), in the form bgpcfgd
writes SONiC's: every eBGP session in one peer group, no default IPv4 activation, no policy required on eBGP, the
NOS's ECMP width and multipath-relax, its own prefixes as ``network`` statements. The form carries no NOS's policy:
what differs between the NOSes is in the read-back's values (timers, ECMP width, multipath-relax, allowas-in).
Pure; addresses and links are the namespaces' part."""

from __future__ import annotations

from fabricgen.core.templating import render_template
from fabricgen.model.routing import SwitchRouting

# Debian 12's frr 8.4.4 is built with MULTIPATH_NUM 256: `vtysh -C` accepts `maximum-paths 256` and refuses 257
# (measured here). SONiC's own FRR build takes 514 (constants.yml); no planned fabric has that many uplinks.
FRR_MULTIPATH_LIMIT = 256


def bgpd_conf(switch: SwitchRouting, multipath_limit: int = FRR_MULTIPATH_LIMIT) -> bytes:
    """bgpd.conf for ``switch``; the ECMP width is the NOS's, capped at what the installed FRR can install."""
    return render_template("lab/bgpd.conf.j2", s=switch,
                           maximum_paths=min(switch.maximum_paths, multipath_limit) if switch.maximum_paths else 0)
