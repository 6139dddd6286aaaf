"""What the Ethernet tests share across tests/unit/features/ethernet, tests/unit/features/addressing and
tests/external/ethernet: the example's storage switches, spec variants of h100-4su, the EOS CLI reader and the
NVUE schema."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from tests.conftest import INVENTORIES, REPO

# The RoCE storage fabric of h100-4su.
STORAGE_SWITCHES = [f"storage-leaf{n:03d}" for n in range(1, 5)] + ["storage-spine01", "storage-spine02"]


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
def eos_spec(tmp: Path, replace: tuple[str, str] = ("", "")) -> Path:
    """h100-4su with the storage fabric on EOS (and one more text replaced)."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count("    nos: sonic\n") == 1
    text = text.replace("    nos: sonic\n", "    nos: eos\n").replace(*replace)
    spec = tmp / "h100-4su-eos.yaml"
    spec.write_text(text)
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


# The out-of-band fabric with EOS leaves and SONiC aggregation switches (and an address plan).
OOB_EOS = ("    topology: {kind: top-of-rack, uplinks: 2}\n",
           "    topology: {kind: top-of-rack, uplinks: 2}\n    nos: {leaf: eos, spine: sonic}\n"
           "    addressing: {hosts: 10.40.0.0/16, p2p: 10.41.0.0/20, loopbacks: 10.42.0.0/24}\n")


# -- host RoCE --------------------------------------------------------------------------------------------------
# The stub mlnx_qos and ip that roce-qos.sh runs against, and the DGX H100 storage ports it configures.
ROCE_STUBS = REPO / "tests" / "data" / "fake-sys"
ROCE_PORTS = ("enp170s0f0np0", "enp41s0f0np0")  # DGX H100 storage ports: mlx5_7 (slot 1), mlx5_1 (slot 2)


# -- NVUE -------------------------------------------------------------------------------------------------------
# The strict schema of NVUE's startup.yaml (unknown keys rejected, "on" a string).
NVUE_SCHEMA = REPO / "schemas" / "nvue" / "startup.schema.json"
