"""SONiC: config_db.json and the PFC headroom sheet (:mod:`.config_db`), sonic-swss's Mellanox headroom method
(:mod:`.headroom`) and the read-back of config_db.json (:mod:`.readback`); capabilities in ``../sonic.yaml``."""

from __future__ import annotations

from fabricgen.features.ethernet.nos import Nos
from fabricgen.features.ethernet.nos.sonic.config_db import DATA, render
from fabricgen.features.ethernet.nos.sonic.readback import readback

NOS = Nos(DATA, render, readback)
