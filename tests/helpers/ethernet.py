"""What the Ethernet tests share across tests/unit/features/ethernet, tests/unit/features/addressing and
tests/external/ethernet: the example's storage switches, spec variants of h100-4su, the EOS CLI reader and the
NVUE schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.conftest import INVENTORIES, REPO

# The RoCE storage fabric of h100-4su.
STORAGE_LEAVES = [f"storage-leaf{n:03d}" for n in range(1, 7)]  # three dual-homed pairs
STORAGE_SWITCHES = STORAGE_LEAVES + [f"storage-spine{n:02d}" for n in range(1, 5)]


def storage_spec(tmp: Path, old: str, new: str) -> Path:
    """h100-4su with one text replaced (it must occur once): the SONiC tests' spec variants."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count(old) == 1, old
    spec = tmp / "spec.yaml"
    spec.write_text(text.replace(old, new))
    return spec


# The storage fabric's PFC watchdog line: the SONiC tests add buffer options after it.
WATCHDOG = "pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}\n"
# The SONiC shared headroom pool, added after the watchdog line.
SHP = "      shared_headroom_pool: {over_subscribe_ratio: 2}\n"


# -- EOS --------------------------------------------------------------------------------------------------------
# The storage fabric on Arista switches: 7060DX5-64S leaves (QSFP-DD), 7060X6-64PE spines (OSFP, 2 x 400G a cage).
SONIC_STORAGE = "    switch: SN5600\n    nos: sonic\n"
EOS_STORAGE = "    switch: {leaf: 7060DX5-64S, spine: 7060X6-64PE}\n    nos: eos\n"


# 254 host ports at 400G on 64-port leaves: eight leaves, two spines.
EOS_SWITCHES = [f"storage-leaf{n:03d}" for n in range(1, 11)] + [f"storage-spine{n:02d}" for n in range(1, 5)]


def eos_spec(tmp: Path, *replacements: tuple[str, str], extra: str = "") -> Path:
    """h100-4su with the storage fabric on EOS on Arista switches (more texts replaced, ``extra`` appended)."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count(SONIC_STORAGE) == 1
    text = text.replace(SONIC_STORAGE, EOS_STORAGE)
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec = tmp / "h100-4su-eos.yaml"
    spec.write_text(text + extra)
    return spec


def eos_cli(artifacts: dict[str, bytes], name: str) -> str:
    """The EOS CLI artifact of one switch."""
    return artifacts[f"switches/{name}/{name}.cfg"].decode()


def eos_blocks(cli: str) -> Iterator[tuple[str, list[str]]]:
    """Top-level commands with their indented sub-commands (stripped), comments and '!' separators dropped."""
    head = ""
    body: list[str] = []
    for line in cli.splitlines():
        if not line.strip() or line.lstrip().startswith("!"):
            continue
        if line[0] != " ":
            if head:
                yield head, body
            head, body = line, []
        else:
            body.append(line.strip())
    if head:
        yield head, body


# The out-of-band fabric with EOS leaves and SONiC aggregation switches (and an address plan). EOS runs on Arista
# switches only, so the leaves are an Arista-like 48 x RJ45 + 4 x QSFP28 model that the spec adds to its catalog
# (TEST DATA, shaped like the SN2201 it replaces; no such entry ships in the catalog).
OOB_EOS = ("    switch: {leaf: SN2201, spine: SN4700}\n    nos: sonic\n",
           "    switch: {leaf: test-arista-rj45, spine: SN4700}\n    nos: {leaf: eos, spine: sonic}\n")
ARISTA_RJ45_CATALOG = """catalog:
  switches:
    test-arista-rj45:
      vendor: Arista
      fabric_type: ethernet
      height_u: 1
      description: test data, an Arista-like 48 x 1G RJ45 + 4 x 100G QSFP28 switch
      port_groups:
        - {name: access, cages: 48, form_factor: RJ45, ports_per_cage: {1G: 1}}
        - {name: uplink, cages: 4, form_factor: QSFP28, ports_per_cage: {100G: 1}}
      source: tests/helpers/ethernet.py (test data)
"""


# -- host RoCE --------------------------------------------------------------------------------------------------
# The stub mlnx_qos and ip that roce-qos.sh runs against, and the DGX H100 storage ports it configures.
ROCE_STUBS = REPO / "tests" / "data" / "fake-sys"
ROCE_PORTS = ("enp170s0f0np0", "enp41s0f0np0")  # DGX H100 storage ports: mlx5_7 (slot 1), mlx5_1 (slot 2)


# -- NVUE -------------------------------------------------------------------------------------------------------
# The strict schema of NVUE's startup.yaml (unknown keys rejected, "on" a string).
NVUE_SCHEMA = REPO / "schemas" / "nvue" / "startup.schema.json"


# -- MLAG -------------------------------------------------------------------------------------------------------
# h100-4su's in-band fabric as DGX BasePOD cables it: its leaves in MLAG pairs, bond0 (port 2 of both slots) in LACP.
INBAND_SINGLE = "    nos: sonic\n    topology: {kind: leaf-spine, oversubscription: 2}\n"


def mlag_spec(tmp: Path, nos: str = "sonic") -> Path:
    """h100-4su with its in-band fabric's leaves in MLAG pairs, on SONiC or NVUE."""
    return storage_spec(tmp, INBAND_SINGLE,
                        f"    nos: {nos}\n    topology: {{kind: leaf-spine, oversubscription: 2, attachment: mlag}}\n")


def mlag_eos_spec(tmp: Path) -> Path:
    """h100-4su with its in-band fabric's leaves in MLAG pairs on Arista 7060DX5-64S switches running EOS."""
    return storage_spec(tmp, "    switch: SN4700\n" + INBAND_SINGLE,
                        "    switch: 7060DX5-64S\n    nos: eos\n"
                        "    topology: {kind: leaf-spine, oversubscription: 2, attachment: mlag}\n")
