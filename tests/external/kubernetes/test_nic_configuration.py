"""Spectrum-X SuperNICs left to NVIDIA's NIC Configuration Operator (spectrumx-1su): the NicConfigurationTemplates
against the operator's own CRD of the release the NicClusterPolicy deploys (Mellanox/nic-configuration-operator tag
network-operator-v26.4.1), strict, and its CEL rules (x-kubernetes-validations) evaluated by cel-python, as the API
server would; the NicClusterPolicy with the operator; nic-firmware.sh leaving the RA's values to it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml

from fabricgen.core.errors import SpecError
from fabricgen.features.ethernet import nic_firmware
from fabricgen.pipeline import Compiled, compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO
from tests.external.kubernetes.test_kubernetes import validate
from tests.helpers.kubernetes import HELM_VALUES, documents
from tests.unit.features.ethernet.test_spectrum_x import OPERATOR

SPEC = INVENTORIES / "spectrumx-1su.yaml"
CRD = REPO / "tests" / "data" / "kubernetes" / "crds" / "configuration.net.nvidia.com_nicconfigurationtemplates.yaml"


def cel_problems(doc: dict[str, Any]) -> list[str]:
    """The message of every CEL rule of the CRD's schema that ``doc`` breaks (rules run where their field is set)."""
    schema = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    env, problems = celpy.Environment(), []

    def walk(node: dict[str, Any], value: Any) -> None:
        for rule in node.get("x-kubernetes-validations", []):
            program = env.program(env.compile(rule["rule"]))
            if not program.evaluate({"self": celpy.json_to_cel(value)}):
                problems.append(rule["message"])
        if isinstance(value, dict):
            for key, sub in node.get("properties", {}).items():
                if key in value:
                    walk(sub, value[key])

    walk(schema, doc)
    return problems


def _spec(tmp: Path, text: str) -> Path:
    """spectrumx-1su with its SuperNICs left to the operator (OPERATOR), written to ``tmp``."""
    spec = tmp / "spectrumx-operator.yaml"
    spec.write_text(text.replace(*OPERATOR))
    return spec


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return compile_spec(_spec(tmp_path_factory.mktemp("nco"), SPEC.read_text()))


@pytest.fixture(scope="module")
def docs(compiled: Compiled) -> list[dict[str, Any]]:
    return documents({a.path: a.content for a in render_spec(compiled, ["kubernetes"])})


def test_templates_pass_the_operators_crd_and_its_cel_rules(docs: list[dict[str, Any]]) -> None:
    [template] = [d for d in docs if d["kind"] == "NicConfigurationTemplate"]
    assert validate(template) == [] and cel_problems(template) == []
    assert template["metadata"]["namespace"] == "nvidia-network-operator"
    spec = template["spec"]
    assert spec["nodeSelector"] == {"fabricgen.dev/node-profile": "hgx-h100-spx"}
    assert spec["nicSelector"] == {"nicType": "a2dc"}  # every BlueField-3 of the profile is a Spectrum-X SuperNIC
    assert spec["template"]["spectrumXOptimized"] == {"enabled": True, "version": "RA2.2", "overlay": "none",
                                                      "multiplaneMode": "none", "numberOfPlanes": 1}
    two_vfs = copy.deepcopy(template)
    two_vfs["spec"]["template"]["numVfs"] = 2
    assert "spectrumXOptimized can be enabled only when linkType=='Ethernet' and numVfs==1" in cel_problems(two_vfs)
    connectx7 = copy.deepcopy(template)
    connectx7["spec"]["nicSelector"]["nicType"] = "1021"
    assert any("only for ConnectX-8, ConnectX-9 or BlueField-3" in p for p in cel_problems(connectx7))
    misspelt = copy.deepcopy(template)
    misspelt["spec"]["template"]["spectrumXOptimized"]["planes"] = 1
    assert validate(misspelt)


def test_nic_cluster_policy_deploys_the_operator(compiled: Compiled, docs: list[dict[str, Any]]) -> None:
    """The operator in the NicClusterPolicy, and the Maintenance Operator it drains and reboots nodes through turned
    on in the chart's values (keys of the release's values.yaml), its config deployed."""
    values = yaml.safe_load(next(a.content for a in render_spec(compiled, ["kubernetes"]) if a.path == HELM_VALUES))
    chart = yaml.safe_load((REPO / "tests/data/kubernetes/network-operator-v26.4.1-values.yaml").read_text())
    assert values["maintenanceOperator"] == {"enabled": True} and "enabled" in chart["maintenanceOperator"]
    assert values["maintenance-operator-chart"]["operatorConfig"] == {"deploy": True}
    assert "deploy" in chart["maintenance-operator-chart"]["operatorConfig"]
    [policy] = [d for d in docs if d["kind"] == "NicClusterPolicy"]
    assert validate(policy) == []
    operator = policy["spec"]["nicConfigurationOperator"]
    assert operator["operator"]["image"] == "nic-configuration-operator"
    assert operator["configurationDaemon"]["image"] == "nic-configuration-operator-daemon"


def test_firmware_script_leaves_the_ra_to_the_operator(compiled: Compiled) -> None:
    """nic-firmware.sh keeps the BlueField-3 NIC mode the profile asks for; the RA's values are the operator's."""
    [script] = [a.content.decode() for a in nic_firmware.render(compiled.topology)]
    assert "INTERNAL_CPU_OFFLOAD_ENGINE=1" in script and "ROCE_ADAPTIVE_ROUTING_EN" not in script


def test_other_cards_of_the_type_are_left_alone(tmp_path: Path) -> None:
    """A profile with a BlueField-3 beside the fabric's (a DPU on storage) selects the fabric's cards by PCI
    address, so the template does not turn the DPU into a SuperNIC."""
    text = SPEC.read_text().replace(*OPERATOR)
    for n in range(8):
        text = text.replace(f"port: SNIC{n}, model", f"port: SNIC{n}, pci: \"0000:{0x1a + n:02x}:00.0\", model")
    text = text.replace("      inband: {netdev: eno3", "      storage:\n        - {dev: mlx5_8, netdev: ens9np0, "
                        "port: DPU0, model: BlueField-3-B3220, pci: \"0000:c1:00.0\"}\n      inband: {netdev: eno3")
    spec = tmp_path / "spx.yaml"
    spec.write_text(text.replace('pci: "0000:1a:00.0", ', ""))
    with pytest.raises(SpecError, match="its port SNIC0 has no pci address to select it by"):
        compile_spec(spec)
    spec.write_text(text)
    found = documents({a.path: a.content for a in render_spec(compile_spec(spec), ["kubernetes"])})
    [template] = [d for d in found if d["kind"] == "NicConfigurationTemplate"]
    assert template["spec"]["nicSelector"] == {"nicType": "a2dc", "pciAddresses": [
        f"0000:{0x1a + n:02x}:00.0" for n in range(8)]}
    assert validate(template) == [] and cel_problems(template) == []
