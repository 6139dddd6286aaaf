"""The buffer left to the shared pools once a switch's PGs, queues and reserves are taken: sonic-swss's
cfgmgr/buffer_pool_mellanox.lua (202505, e9dcd50be4; the same accounting on every release fabricgen writes for),
run here over the config_db tables fabricgen writes.

The lua is the dynamic model's pool plugin; in the traditional model SONiC takes the pool sizes as written. NVIDIA's
traditional templates size them for their default cable on every port (buffers_defaults_t0.j2), so a switch whose
lossless PGs reserve more (longer cables: the 40m rows) gets pools larger than what is left: the lua's arithmetic
gives the most each pool can have.

The lua's accounting, step by step (mmu_size = egress_lossless_pool size, as without BUFFER_MAX_PARAM_TABLE):
- the ingress pools are the dynamic model's (the lua reads CONFIG_DB's pools there), so a profile of the static zero
  pool the traditional templates give dark ports counts as no ingress profile;
- every BUFFER_PG and BUFFER_QUEUE entry references its profile once per PG or queue in its range ("0-2" is 3); a
  profile-list entry references its profiles once, except lossy ingress ones, which reserve nothing there;
- each referenced profile reserves its size per reference, a lossy ingress profile (one without xoff) on a PG its
  size plus the pipeline latency (ASIC_TABLE pipeline_latency KiB; 2 x latency - 1 KiB on an 8-lane port);
- with a shared headroom pool (the ingress lossless pool's xoff) each port with a lossless PG also reserves 10 KiB
  private headroom, and the pool's xoff is reserved;
- every admin-up port reserves a management PG (the pipeline latency, 8-lane ports the doubled one) and 10 KiB
  egress mirror headroom; the management pool takes 256 KiB;
- what is left is shared by the ingress pools the dynamic model sizes (half each when there are two), at most the
  MMU rounded down to whole cells.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

PRIVATE_HEADROOM = 10 * 1024
EGRESS_MIRROR_HEADROOM = 10 * 1024
MGMT_POOL_SIZE = 256 * 1024
FORCED_SHP_SIZE = 655360  # the lua's shared headroom pool when profiles pool xoff but no pool gives one


@dataclass(frozen=True)
class PoolBudget:
    mmu_size: int
    occupied: int      # the lua's accumulative_occupied_buffer
    pool_size: int     # each ingress pool's share of what is left (ceil), as the lua writes it

    @property
    def available(self) -> int:
        return self.mmu_size - self.occupied


def _count(key: str) -> int:
    """PGs or queues in a BUFFER_PG/BUFFER_QUEUE key's range: "Ethernet0|3" is 1, "Ethernet0|0-2" is 3 (the lua
    reads the first and last character of the range)."""
    ids = key.split("|", 1)[1]
    return 1 if len(ids) == 1 else 1 + int(ids[-1]) - int(ids[0])


def pool_budget(db: Mapping[str, Any], cell_size: int, pipeline_latency_kb: float, ingress_pools: int) -> PoolBudget:
    """What buffer_pool_mellanox.lua leaves each of ``ingress_pools`` shared ingress pools on this config_db."""
    pools, profiles = db.get("BUFFER_POOL", {}), db.get("BUFFER_PROFILE", {})
    # the lua sees the dynamic model's pools: not the traditional templates' static zero pool of dark ports, which
    # holds nothing
    ingress = {name for name, pool in pools.items() if pool.get("type") == "ingress" and pool.get("mode") != "static"}
    lossless = {name: "xoff" in p for name, p in profiles.items() if p.get("pool") in ingress}
    lanes8 = {name for name, port in db.get("PORT", {}).items() if len(port.get("lanes", "").split(",")) == 8}
    lossy_reserved = int(pipeline_latency_kb * 1024)
    lossy_reserved_8 = int((2 * pipeline_latency_kb - 1) * 1024)
    refs: dict[str, int] = dict.fromkeys(profiles, 0)
    lossy_8lane_pgs = 0
    lossless_ports: set[str] = set()
    for table in ("BUFFER_PG", "BUFFER_QUEUE"):
        for key, entry in db.get(table, {}).items():
            port, profile, n = key.split("|", 1)[0], entry["profile"], _count(key)
            if profile not in refs:  # NULL: the dynamic model's, which this accounting does not cover
                continue
            refs[profile] += n
            if port in lanes8 and lossless.get(profile) is False:
                lossy_8lane_pgs += n
            if table == "BUFFER_PG" and lossless.get(profile):
                lossless_ports.add(port)
    for table in ("BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST"):
        for entry in db.get(table, {}).values():
            for profile in entry["profile_list"].split(","):
                if lossless.get(profile) is not False and profile in refs:
                    refs[profile] += 1
    shp_size = int(pools.get("ingress_lossless_pool", {}).get("xoff", "0"))
    occupied = accumulative_xoff = 0
    for name, count in refs.items():
        if "size" not in profiles[name]:
            continue
        size = int(profiles[name]["size"]) + (lossy_reserved if lossless.get(name) is False else 0)
        if size and count:
            xon, xoff = profiles[name].get("xon"), profiles[name].get("xoff")
            if not shp_size and xon is not None and xoff is not None and int(xon) + int(xoff) > size:
                accumulative_xoff += (int(xon) + int(xoff) - size) * count
            occupied += size * count
    occupied += (lossy_reserved_8 - lossy_reserved) * lossy_8lane_pgs
    if accumulative_xoff and not shp_size:
        shp_size = FORCED_SHP_SIZE
    if shp_size:
        occupied += len(lossless_ports) * PRIVATE_HEADROOM + shp_size
    up = [name for name, port in db.get("PORT", {}).items() if port.get("admin_status") == "up"]
    up8 = sum(1 for name in up if name in lanes8)
    occupied += (len(up) - up8) * lossy_reserved + up8 * lossy_reserved_8
    occupied += len(up) * EGRESS_MIRROR_HEADROOM + MGMT_POOL_SIZE
    mmu_size = int(pools["egress_lossless_pool"]["size"])
    share = (mmu_size - occupied) / (1 if ingress_pools == 1 else 2)
    return PoolBudget(mmu_size, occupied, math.ceil(min(share, mmu_size // cell_size * cell_size)))
