"""SONiC: config_db.json (:mod:`.config_db`) for the SKU that runs the switch's ports (:mod:`.layout`, SKU data
in ``skus/``), the PFC headroom sheet (:mod:`.sheet`), sonic-swss's Mellanox headroom method (:mod:`.headroom`),
the read-back of config_db.json's lossless chain (:mod:`.readback`) and of the routing it makes the switch run
(:mod:`.routing`); capabilities, releases and routing defaults in ``../sonic.yaml``."""

from __future__ import annotations

from fabricgen.features.ethernet.nos import Nos
from fabricgen.features.ethernet.nos.sonic.config_db import render
from fabricgen.features.ethernet.nos.sonic.layout import DATA, check, port_name, port_setting
from fabricgen.features.ethernet.nos.sonic.readback import readback
from fabricgen.features.ethernet.nos.sonic.routing import routing

NOS = Nos(DATA, render, readback, checks=(check,), routing=routing, port_name=port_name,
          port_setting=port_setting)
