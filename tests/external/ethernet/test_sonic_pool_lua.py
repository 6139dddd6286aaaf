"""The traditional pool sizes against sonic-swss's own cfgmgr/buffer_pool_mellanox.lua, run by a real Lua 5.4 over
a stand-in for redis holding each switch's config_db as fabricgen writes it (APPL_DB: its profiles, PGs, queues and
profile lists; CONFIG_DB: its PORT rows and the pools as the SKU's dynamic template leaves them to the lua;
STATE_DB: ASIC_TABLE from asics.yaml). The lua's result for every shared pool is the budget fabricgen computes, and
no pool fabricgen writes is larger. Needs lua5.4 and FABRICGEN_SONIC_SWSS, a checkout or bare mirror of
sonic-net/sonic-swss with the 202505 branch (skipped without it, as the buildimage comparisons are)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.nos.sonic.layout import sonic_layout
from fabricgen.features.ethernet.nos.sonic.pools import pool_budget
from fabricgen.features.ethernet.switch_view import switch_views
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool

SWSS = os.environ.get("FABRICGEN_SONIC_SWSS", "")
pytestmark = pytest.mark.skipif(not SWSS, reason="set FABRICGEN_SONIC_SWSS to a sonic-swss checkout")
RELEASE = "202505"

# redis.call over three in-memory databases: SELECT, KEYS <glob with *>, HGET
REDIS = """
local dbs, current = DATA, "0"
redis = {}
function redis.call(cmd, a, b)
  if cmd == "SELECT" then current = a; return "OK" end
  local db = dbs[current] or {}
  if cmd == "KEYS" then
    local pattern = "^" .. a:gsub("([%^%$%(%)%%%.%[%]%+%-%?])", "%%%1"):gsub("%*", ".*") .. "$"
    local keys = {}
    for key in pairs(db) do if key:match(pattern) then keys[#keys + 1] = key end end
    table.sort(keys)
    return keys
  end
  if cmd == "HGET" then local h = db[a]; if h == nil then return false end; return h[b] or false end
  error("unsupported " .. cmd)
end
"""


def _lua_table(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"[{json.dumps(k)}]={_lua_table(v)}" for k, v in value.items()) + "}"
    return json.dumps(str(value))


def _redis(db: dict[str, Any], layout: Any) -> dict[str, dict[str, dict[str, str]]]:
    appl: dict[str, dict[str, str]] = {}
    for name, profile in db["BUFFER_PROFILE"].items():
        appl[f"BUFFER_PROFILE_TABLE:{name}"] = profile
    for table in ("BUFFER_PG", "BUFFER_QUEUE", "BUFFER_PORT_INGRESS_PROFILE_LIST", "BUFFER_PORT_EGRESS_PROFILE_LIST"):
        for key, entry in db[table].items():
            appl[f"{table}_TABLE:{key.replace('|', ':')}"] = entry
    config: dict[str, dict[str, str]] = {f"PORT|{n}": p for n, p in db["PORT"].items()}
    config.update({f"BUFFER_POOL|{n}": dict(p) for n, p in layout.sku.dynamic_pools.items()})
    if "xoff" in db["BUFFER_POOL"].get("ingress_lossless_pool", {}):  # the SKU's shared headroom pool, as written
        config["BUFFER_POOL|ingress_lossless_pool"]["xoff"] = db["BUFFER_POOL"]["ingress_lossless_pool"]["xoff"]
    asic = layout.switch.asic
    state = {f"ASIC_TABLE|{asic.asic_table}": {"cell_size": str(asic.cell_size),
                                                "pipeline_latency": f"{asic.pipeline_latency_kb:g}"}}
    return {"0": appl, "4": config, "6": state}


# each example's SKUs: h100-4su's SN5600/SN4700/SN2201 ones, ref-256's SN4600 (64 x 4-lane ports)
EXAMPLE_SKUS = {"h100-4su": {"Mellanox-SN5600-O128", "Mellanox-SN4700-V64", "Mellanox-SN4700-C128", "ACS-SN2201"},
                "ref-256": {"ACS-MSN4600"}}


@pytest.mark.parametrize("example", sorted(EXAMPLE_SKUS))
def test_traditional_pools_are_what_the_lua_leaves(example: str) -> None:
    lua = require_tool("lua5.4")
    script = subprocess.run(["git", "-C", SWSS, "show", f"{RELEASE}:cfgmgr/buffer_pool_mellanox.lua"],
                            capture_output=True, text=True, check=True).stdout
    compiled = compile_spec(INVENTORIES / f"{example}.yaml")
    seen = set()
    for ft in compiled.topology.fabrics:
        if not ft.fabric.type.ethernet:
            continue
        for view in switch_views(compiled.topology, ft):
            layout = sonic_layout(view)
            if layout.sku.hwsku in seen and view.tier.value != "leaf":
                continue
            seen.add(layout.sku.hwsku)
            db = sonic.config_db(layout)
            program = (f"DATA = {_lua_table(_redis(db, layout))}\n{REDIS}\n"
                       f"local result = (function()\n{script}\nend)()\n"
                       "for _, line in ipairs(result) do print(line) end\n")
            out = subprocess.run([lua, "-"], input=program, capture_output=True, text=True, check=True).stdout
            result = {line.split(":")[0]: int(line.split(":")[1]) for line in out.splitlines()
                      if not line.startswith("debug:")}
            shared = [n for n, p in layout.sku.dynamic_pools.items() if "size" not in p]
            assert set(result) == set(shared), (view.name, out)
            ingress = sum(1 for n in shared if layout.sku.dynamic_pools[n]["type"] == "ingress")
            budget = pool_budget(db, layout.switch.asic.cell_size, layout.switch.asic.pipeline_latency_kb,
                                 ingress)
            assert set(result.values()) == {budget.pool_size}, (view.name, out)
            for name in shared:
                assert int(db["BUFFER_POOL"][name]["size"]) <= budget.pool_size, (view.name, name)
    assert EXAMPLE_SKUS[example] <= seen
