"""SONiC target through SONiC's own YANG models: every config_db.json (traditional and dynamic buffer model, with
and without the shared headroom pool, per-leaf 4-byte ASNs) validated with the shared validator (libyang).

Without libyang those tests skip; with FABRICGEN_REQUIRE_EXTERNAL=1 (CI) they fail instead. The validator's
location: $FABRICGEN_SONIC_YANG, default ../shared/validators/sonic-yang next to the repository. What the YANG does
not check is in tests/unit/features/ethernet/test_sonic.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fabricgen.features.ethernet.nos.sonic import config_db as sonic
from fabricgen.features.ethernet.nos.sonic.layout import sonic_layout
from fabricgen.features.ethernet.switch_view import switch_views
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.addressing import render_per_leaf as _render
from tests.helpers.ethernet import STORAGE_SWITCHES, WATCHDOG
from tests.helpers.ethernet import storage_spec as _storage_spec


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(INVENTORIES / "h100-4su.yaml")


@pytest.fixture(scope="module")
def artifacts(compiled: Compiled) -> dict[str, bytes]:
    return {a.path: a.content for a in sonic.render(compiled.topology)}


@pytest.fixture(scope="module")
def dynamic_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    spec = _storage_spec(tmp_path_factory.mktemp("dynamic"), WATCHDOG, WATCHDOG + "      buffer_model: dynamic\n")
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


@pytest.fixture(scope="module")
def shp_artifacts() -> dict[str, bytes]:
    """lab-1su: Mellanox-SN4700-V64, whose traditional buffers carry a shared headroom pool (pool xoff)."""
    return {a.path: a.content for a in sonic.render(compile_spec(INVENTORIES / "lab-1su.yaml").topology)}


@pytest.fixture(scope="module")
def dynamic_shp_artifacts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The dynamic model with the pool at its default ratio (``{}``: 2)."""
    spec = _storage_spec(tmp_path_factory.mktemp("dynamic-shp"), WATCHDOG,
                         WATCHDOG + "      buffer_model: dynamic\n      shared_headroom_pool: {}\n")
    return {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}


# -- the shared YANG validator ----------------------------------------------------------------------------------
def require_sonic_yang() -> Path:
    """The validator directory, or skip (locally) / fail (CI) when it or libyang is missing."""
    where = Path(os.environ.get("FABRICGEN_SONIC_YANG", REPO.parent / "shared" / "validators" / "sonic-yang"))
    problem = ""
    if not (where / "validate_config_db.py").is_file() or not (where / "models").is_dir():
        problem = f"the SONiC YANG validator is not at {where} (set FABRICGEN_SONIC_YANG)"
    elif importlib.util.find_spec("libyang") is None:
        problem = "libyang is not importable (apt-get install libyang2-dev; pip install libyang==2.7.1)"
    if problem:
        if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
            pytest.fail(f"{problem}; required in CI (FABRICGEN_REQUIRE_EXTERNAL=1)")
        pytest.skip(problem)
    return where


def _validate(validator: Path, path: Path) -> str:
    result = subprocess.run([sys.executable, str(validator / "validate_config_db.py"), str(validator / "models"),
                             str(path)], capture_output=True, text=True, timeout=120, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "VALID" in output and "INVALID" not in output, f"{path.name}: {output}"
    assert "tables without YANG" not in output, output
    return output


@pytest.mark.external
def test_every_config_db_validates_against_sonic_yang(artifacts: dict[str, bytes], tmp_path: Path) -> None:
    validator = require_sonic_yang()
    for switch in STORAGE_SWITCHES:
        path = tmp_path / f"{switch}.json"
        path.write_bytes(artifacts[f"switches/{switch}/config_db.json"])
        _validate(validator, path)


@pytest.mark.external
def test_in_band_and_out_of_band_config_dbs_validate(artifacts: dict[str, bytes], tmp_path: Path) -> None:
    """Every SKU and role the example's plain Ethernet fabrics use: SN2201 ToR (1G RJ45 ports, ACS-SN2201),
    SN4700 aggregation (Mellanox-SN4700-C128), SN4700 in-band leaf and spine (Mellanox-SN4700-V64)."""
    validator = require_sonic_yang()
    for switch in ("oob-a01", "oob-agg01", "inband-leaf001", "inband-spine01"):
        path = tmp_path / f"{switch}.json"
        path.write_bytes(artifacts[f"switches/{switch}/config_db.json"])
        _validate(validator, path)


# ref-256 on SN4600 (ACS-MSN4600): a compute leaf and spine, a full storage leaf, the last storage leaf (dark ports)
# and a storage spine (dark ports), in both buffer models
REF_256_SWITCHES = ("compute-su01-leaf0", "compute-spine001", "storage-leaf001", "storage-leaf024", "storage-spine01")
REF_256_WATCHDOG = "pfc_watchdog: {detect_ms: 200, restore_ms: 400, action: drop}\n"


@pytest.mark.external
@pytest.mark.parametrize("model", ["traditional", "dynamic"])
def test_sn4600_config_dbs_validate(model: str, tmp_path: Path) -> None:
    validator = require_sonic_yang()
    text = (INVENTORIES / "ref-256.yaml").read_text()
    assert text.count(REF_256_WATCHDOG) == 2
    spec = tmp_path / "ref-256.yaml"
    spec.write_text(text.replace(REF_256_WATCHDOG, f"{REF_256_WATCHDOG}      buffer_model: {model}\n"))
    rendered = {a.path: a.content for a in sonic.render(compile_spec(spec).topology)}
    for switch in REF_256_SWITCHES:
        db = json.loads(rendered[f"switches/{switch}/config_db.json"])
        assert (db["DEVICE_METADATA"]["localhost"]["hwsku"], db["DEVICE_METADATA"]["localhost"]["buffer_model"]) == (
            "ACS-MSN4600", model)
        path = tmp_path / f"{switch}.json"
        path.write_bytes(rendered[f"switches/{switch}/config_db.json"])
        _validate(validator, path)


@pytest.mark.external
@pytest.mark.parametrize("release", ["202311", "202405", "202411"])
def test_every_release_validates(release: str, tmp_path: Path) -> None:
    """The releases whose facts differ from the default's (no subport, the older lua's defaults)."""
    validator = require_sonic_yang()
    spec = _storage_spec(tmp_path, "    switch: SN5600\n    nos: sonic\n",
                         f'    switch: SN5600\n    nos: sonic\n    software: {{sonic: "{release}"}}\n')
    content = next(a.content for a in sonic.render(compile_spec(spec).topology)
                   if a.path == "switches/storage-leaf001/config_db.json")
    path = tmp_path / f"{release}.json"
    path.write_bytes(content)
    _validate(validator, path)


@pytest.mark.external
def test_management_interface_with_a_gateway_validates(compiled: Compiled, tmp_path: Path) -> None:
    validator = require_sonic_yang()
    view = switch_views(compiled.topology, compiled.topology.fabric("storage"))[0]
    db = sonic.config_db(sonic_layout(view), management_gateway="10.23.0.254")
    assert db["MGMT_INTERFACE"] == {f"eth0|{view.management}/24": {"gwaddr": "10.23.0.254"}}
    path = tmp_path / "mgmt.json"
    path.write_text(json.dumps(db, sort_keys=True, indent=2))
    _validate(validator, path)


@pytest.mark.external
def test_the_validator_catches_a_broken_reference(artifacts: dict[str, bytes], tmp_path: Path) -> None:
    """The validation above is not vacuous: a lossless PG pointing at a missing profile is INVALID."""
    validator = require_sonic_yang()
    db = json.loads(artifacts["switches/storage-leaf001/config_db.json"])
    db["BUFFER_PG"]["Ethernet0|3"]["profile"] = "pg_lossless_400000_999m_profile"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(db))
    result = subprocess.run([sys.executable, str(validator / "validate_config_db.py"), str(validator / "models"),
                             str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1 and "INVALID" in result.stdout


def test_the_chain_follows_the_spec_class(tmp_path: Path) -> None:
    """A non-default class (DSCP 24, priority 4) moves every link of the chain, not just the DSCP map."""
    spec = _storage_spec(tmp_path, "lossless: {dscp: 26, priority: 3}", "lossless: {dscp: 24, priority: 4}")
    content = next(a.content for a in sonic.render(compile_spec(spec).topology)
                   if a.path == "switches/storage-leaf001/config_db.json")
    db = json.loads(content)
    assert db["DSCP_TO_TC_MAP"]["ROCE"]["24"] == "4" and db["DSCP_TO_TC_MAP"]["ROCE"]["26"] == "0"
    assert db["TC_TO_PRIORITY_GROUP_MAP"]["ROCE"]["4"] == "4" and db["TC_TO_PRIORITY_GROUP_MAP"]["ROCE"]["3"] == "0"
    assert db["PORT_QOS_MAP"]["Ethernet0"]["pfc_enable"] == "4"
    assert db["QUEUE"]["Ethernet0|4"]["wred_profile"] == "ROCE_ECN" and "wred_profile" not in db["QUEUE"]["Ethernet0|3"]
    assert {k for k in db["BUFFER_PG"] if k.startswith("Ethernet0|")} == {"Ethernet0|0", "Ethernet0|4"}
    assert {k for k in db["BUFFER_QUEUE"] if k.startswith("Ethernet0|")} == {"Ethernet0|0-3", "Ethernet0|4",
                                                                            "Ethernet0|5-7"}
    if importlib.util.find_spec("libyang") is not None:
        path = tmp_path / "prio4.json"
        path.write_bytes(content)
        _validate(require_sonic_yang(), path)


@pytest.mark.external
def test_every_dynamic_config_db_validates_against_sonic_yang(dynamic_artifacts: dict[str, bytes],
                                                              tmp_path: Path) -> None:
    validator = require_sonic_yang()
    for switch in STORAGE_SWITCHES:
        path = tmp_path / f"{switch}.json"
        path.write_bytes(dynamic_artifacts[f"switches/{switch}/config_db.json"])
        _validate(validator, path)
    # not vacuous: a PG profile that is neither a BUFFER_PROFILE nor SONiC's "NULL" is refused
    db = json.loads(dynamic_artifacts["switches/storage-leaf001/config_db.json"])
    db["BUFFER_PG"]["Ethernet0|3"]["profile"] = "null"
    path.write_text(json.dumps(db))
    result = subprocess.run([sys.executable, str(validator / "validate_config_db.py"), str(validator / "models"),
                             str(path)], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 1 and "INVALID" in result.stdout


@pytest.mark.external
def test_every_shared_headroom_pool_config_db_validates(shp_artifacts: dict[str, bytes],
                                                        dynamic_shp_artifacts: dict[str, bytes],
                                                        tmp_path: Path) -> None:
    validator = require_sonic_yang()
    for name, rendered in (("traditional", shp_artifacts), ("dynamic", dynamic_shp_artifacts)):
        for path_in, content in rendered.items():
            if path_in.endswith("config_db.json") and "/storage-" in path_in:
                path = tmp_path / f"{name}-{path_in.split('/')[1]}.json"
                path.write_bytes(content)
                _validate(validator, path)


# -- per-leaf 4-byte ASNs (tests/data/asn/per-leaf.yaml) --------------------------------------------------------
@pytest.mark.external
def test_sonic_config_db_with_4_byte_asns_validates_against_yang(tmp_path: Path) -> None:
    validator = require_sonic_yang()
    views, files = _render(tmp_path, "sonic")
    for view in views:
        path = tmp_path / f"{view.name}.json"
        path.write_bytes(files[f"switches/{view.name}/config_db.json"])
        _validate(validator, path)
