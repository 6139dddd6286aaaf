"""Arista EOS target through pyavd: the AVD structured config validates with zero violations and pyavd renders the
same CLI as fabricgen's own (section by section and byte for byte but for the header), on the RoCE storage fabric
(h100-4su with ``nos: eos``), a plain Ethernet fabric and per-leaf 4-byte ASNs.

Without pyavd these tests skip; with FABRICGEN_REQUIRE_EXTERNAL=1 (CI) they fail instead.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from fabricgen.core.templating import render_template
from fabricgen.features.ethernet.nos import eos
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec
from tests.helpers.addressing import eos_bgp_lines as _eos_bgp_lines
from tests.helpers.addressing import eos_per_leaf as _eos
from tests.helpers.ethernet import ARISTA_RJ45_CATALOG, EOS_SWITCHES, OOB_EOS
from tests.helpers.ethernet import eos_blocks as _blocks
from tests.helpers.ethernet import eos_cli as _cli
from tests.helpers.ethernet import eos_spec as _spec


@pytest.fixture(scope="module")
def spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _spec(tmp_path_factory.mktemp("eos"))


@pytest.fixture(scope="module")
def topology(spec: Path) -> Topology:
    return compile_spec(spec).topology


@pytest.fixture(scope="module")
def artifacts(topology: Topology) -> dict[str, bytes]:
    return {a.path: a.content for a in eos.render(topology)}


@pytest.fixture(scope="module")
def configs(artifacts: dict[str, bytes]) -> dict[str, dict[str, Any]]:
    """Structured config per switch, as a consumer reads the YAML artifact."""
    return {name: yaml.safe_load(artifacts[f"switches/{name}/avd-structured-config.yaml"])
            for name in EOS_SWITCHES}


@pytest.fixture(scope="module")
def oob(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The out-of-band fabric (plain Ethernet, RJ45 host ports) with EOS leaves and SONiC aggregation switches."""
    topology = compile_spec(_spec(tmp_path_factory.mktemp("oob"), OOB_EOS, extra=ARISTA_RJ45_CATALOG)).topology
    return {v.name: eos.structured_config(v) for v in eos.eos_views(topology) if v.fabric.name == "oob"}


# -- comparing CLI section by section -------------------------------------------------------------------------------
def _pairs(cli: str) -> list[tuple[str, str]]:
    """(context, command) for every configuration line; a top-level command is its own context."""
    out = []
    for head, body in _blocks(cli):
        out.append(("", head))
        context = head
        for line in body:
            out.append((context, line))
    return out


def _section(context_or_command: str) -> str:
    """Which part of the config a line belongs to, for a per-section comparison."""
    words = context_or_command.split()
    if words[0] == "interface":
        return "interface " + "".join(c for c in words[1] if not c.isdigit() and c not in "/.")
    if words[:2] in (["qos", "profile"], ["qos", "map"]):
        return " ".join(words[:2])
    return words[0]


def _by_section(cli: str) -> dict[str, list[tuple[str, str]]]:
    sections: dict[str, list[tuple[str, str]]] = {}
    for context, command in _pairs(cli):
        sections.setdefault(_section(context or command), []).append((context, command))
    return sections


# -- pyavd: the structured config is valid AVD and renders the same CLI ---------------------------------------------
def require_pyavd() -> ModuleType:
    """pyavd, or skip (locally) / fail (CI with FABRICGEN_REQUIRE_EXTERNAL=1) when it cannot be imported."""
    try:
        return importlib.import_module("pyavd")
    except ImportError:
        if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
            pytest.fail("pyavd is required in CI (FABRICGEN_REQUIRE_EXTERNAL=1) but is not importable")
        pytest.skip("pyavd not installed; install the test extra (pyavd==6.4.0)")


_AVD_CLI: dict[str, str] = {}  # pyavd's rendering per switch, computed once per session


def _avd_cli(configs: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Validate every structured config with pyavd (zero violations, no deprecations), then render its CLI."""
    pyavd = require_pyavd()
    for name, config in configs.items():
        if name in _AVD_CLI:
            continue
        result = pyavd.validate_structured_config(config)
        violations = [(".".join(map(str, v.path)), v.message) for v in result.validation_result.violations]
        assert violations == [], f"{name}: {violations}"
        assert list(result.validation_result.deprecations) == [], name
        assert result.validated_data is not None
        _AVD_CLI[name] = pyavd.get_device_config(result.validated_data)
    return _AVD_CLI


@pytest.mark.external
def test_pyavd_validates_with_zero_violations(configs: dict[str, dict[str, Any]]) -> None:
    assert sorted(_avd_cli(configs)) == sorted(EOS_SWITCHES)


@pytest.mark.external
def test_pyavd_renders_the_same_sections(configs: dict[str, dict[str, Any]], artifacts: dict[str, bytes]) -> None:
    """Section by section, in order, pyavd's get_device_config() equals fabricgen's own .cfg."""
    for name, theirs in _avd_cli(configs).items():
        ours = _by_section(_cli(artifacts, name))
        expected = _by_section(theirs)
        required = ["interface Ethernet", "interface Loopback", "interface Management", "vrf", "qos profile",
                    "qos map", "priority-flow-control", "router", "hostname", "ip"]
        required += ["interface Vlan", "vlan"] if "leaf" in name else []
        for section in required:
            assert section in ours, f"{name}: no {section} section"
        assert sorted(ours) == sorted(expected), name
        for section, lines in expected.items():
            assert ours[section] == lines, f"{name}: section {section} differs"


@pytest.mark.external
def test_pyavd_output_is_byte_identical_but_for_our_header(configs: dict[str, dict[str, Any]],
                                                           artifacts: dict[str, bytes]) -> None:
    """Stronger than the section check: the files differ only in fabricgen's two '! ' header comment lines."""
    for name, theirs in _avd_cli(configs).items():
        ours = _cli(artifacts, name).splitlines(keepends=True)
        assert all(line.startswith("! ") for line in ours[:2])
        assert "".join(ours[2:]) == theirs, name


@pytest.mark.external
def test_pyavd_agrees_on_a_plain_ethernet_fabric(oob: dict[str, dict[str, Any]]) -> None:
    pyavd = require_pyavd()
    for name in (min(oob), max(oob)):
        result = pyavd.validate_structured_config(oob[name])
        assert list(result.validation_result.violations) == [], name
        ours = render_template("eos/switch.cfg.j2", c=oob[name], fabric="oob", tier="leaf", source="x").decode()
        assert "".join(ours.splitlines(keepends=True)[2:]) == pyavd.get_device_config(result.validated_data)


# -- per-leaf 4-byte ASNs (tests/data/asn/per-leaf.yaml) ------------------------------------------------------------
@pytest.mark.external
def test_pyavd_validates_and_renders_the_4_byte_asns(tmp_path: Path) -> None:
    pyavd = require_pyavd()
    views, configs, _ = _eos(tmp_path)
    for view in views:
        result = pyavd.validate_structured_config(configs[view.name])
        assert [v.message for v in result.validation_result.violations] == [], view.name
        lines = [line.strip() for line in pyavd.get_device_config(result.validated_data).splitlines()]
        assert all(line in lines for line in _eos_bgp_lines(view)), view.name
