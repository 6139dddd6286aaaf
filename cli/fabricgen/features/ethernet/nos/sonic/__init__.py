"""SONiC: config_db.json (:mod:`.config_db`) for the SKU that runs the switch's ports (:mod:`.layout`, SKU data
in ``skus/``), the PFC headroom sheet (:mod:`.sheet`), sonic-swss's Mellanox headroom method (:mod:`.headroom`)
and the read-back of config_db.json (:mod:`.readback`); capabilities and releases in ``../sonic.yaml``."""

from __future__ import annotations

from fabricgen.features.ethernet.nos import Nos
from fabricgen.features.ethernet.nos.sonic.config_db import render
from fabricgen.features.ethernet.nos.sonic.layout import DATA, check
from fabricgen.features.ethernet.nos.sonic.readback import readback

NOS = Nos(DATA, render, readback, checks=(check,))
