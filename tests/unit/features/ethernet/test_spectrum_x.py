"""Spectrum-X and the BlueField-3 mode: NVUE adaptive routing on every routed port of the example (strict schema,
read back), each refusal at its spec line, and nic-firmware.sh against a fake /sys with a stub mlxconfig that
records its calls and keeps current and next-boot values apart, as the firmware does until a power cycle."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import SpecError
from fabricgen.features.ethernet import nic_firmware
from fabricgen.features.ethernet.nos import nvue
from fabricgen.features.ethernet.spectrum_x import ra_profile
from fabricgen.features.kubernetes import nic_configuration
from fabricgen.pipeline import Compiled, compile_spec, render_spec
from fabricgen.stages.readback import check_artifacts
from tests.conftest import INVENTORIES, REPO
from tests.helpers.ethernet import NVUE_SCHEMA

SPEC = INVENTORIES / "spectrumx-1su.yaml"
STUB = REPO / "tests" / "data" / "fake-mlxconfig" / "mlxconfig"
PROFILE = "hgx-h100-spx"
NETDEVS = [f"ens{n}np0" for n in range(1, 9)]


def _variant(tmp: Path, *replacements: tuple[str, str]) -> Path:
    text = SPEC.read_text()
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    spec = tmp / "spectrumx.yaml"
    spec.write_text(text)
    return spec


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(SPEC)


@pytest.fixture(scope="module")
def switches(compiled: Compiled) -> dict[str, bytes]:
    return {a.path: a.content for a in nvue.render(compiled.topology)}


def _tree(files: dict[str, bytes], switch: str) -> dict[str, Any]:
    tree: dict[str, Any] = yaml.safe_load(files[f"switches/{switch}/startup.yaml"])[0]["set"]
    return tree


# -- switches ---------------------------------------------------------------------------------------------------
def test_adaptive_routing_on_every_routed_port_and_no_host_port(switches: dict[str, bytes]) -> None:
    names = sorted({p.split("/")[1] for p in switches})
    assert len(names) == 10  # 8 rail leaves (32 uplinks each), 2 spines (16 links to each leaf)
    validator = Draft202012Validator(json.loads(NVUE_SCHEMA.read_text()))
    for name in names:
        tree = _tree(switches, name)
        assert not list(validator.iter_errors(yaml.safe_load(switches[f"switches/{name}/startup.yaml"])))
        assert tree["router"]["adaptive-routing"] == {"enable": "on"}
        assert tree["qos"]["roce"]["mode"] == "lossless"
        routed = {i: v for i, v in tree["interface"].items() if i.startswith("swp") and "ip" in v}
        hosts = {i: v for i, v in tree["interface"].items() if i.startswith("swp") and "bridge" in v}
        assert len(routed) == (128 if "spine" in name else 32)
        assert all(v["router"] == {"adaptive-routing": {"enable": "on"}} for v in routed.values())
        assert all("router" not in v for v in hosts.values()), "no adaptive routing on access ports (SVI)"
        assert all(v["link"]["speed"] == "400G" for v in routed.values())
        commands = switches[f"switches/{name}/nv-commands.txt"].decode().splitlines()
        assert "nv set router adaptive-routing enable on" in commands
        assert sum(c.endswith("router adaptive-routing enable on") for c in commands) == len(routed) + 1


def test_nccl_posts_adaptive_routing_safe_writes_on_spectrum_x(compiled: Compiled) -> None:
    """NCCL turns its adaptive-routing write mode on for InfiniBand only (net_ib/init.cc); a Spectrum-X fabric
    sprays packets too, so its profiles' nccl.env turns it on, and an ordinary RoCE fabric's does not."""
    files = {a.path: a.content.decode() for a in render_spec(compiled, ["nccl"])}
    assert "NCCL_IB_ADAPTIVE_ROUTING=1" in files[f"hosts/{PROFILE}/nccl.env"].splitlines()
    lab = {a.path: a.content.decode() for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"), ["nccl"])}
    assert not any("NCCL_IB_ADAPTIVE_ROUTING" in text for text in lab.values())


def test_link_utilization_threshold(tmp_path: Path) -> None:
    spec = _variant(tmp_path, ("spectrum_x: {profile: RA2.2}",
                               "spectrum_x: {profile: RA2.2, link_utilization_threshold: 85}"))
    files = {a.path: a.content for a in nvue.render(compile_spec(spec).topology)}
    tree = _tree(files, "compute-spine001")
    assert tree["router"]["adaptive-routing"] == {"enable": "on", "link-utilization-threshold": "on"}
    assert tree["interface"]["swp1s0"]["router"]["adaptive-routing"] == {"enable": "on",
                                                                         "link-utilization-threshold": 85}
    validator = Draft202012Validator(json.loads(NVUE_SCHEMA.read_text()))
    assert not list(validator.iter_errors(yaml.safe_load(files["switches/compute-spine001/startup.yaml"])))


def test_readback_finds_a_port_without_adaptive_routing(compiled: Compiled) -> None:
    artifacts = {a.path: a for a in render_spec(compiled)}
    assert not [f for f in check_artifacts(compiled.topology, artifacts.values()) if "adaptive" in f.message]
    path = "switches/compute-spine001/startup.yaml"
    doc = yaml.safe_load(artifacts[path].content)
    del doc[0]["set"]["interface"]["swp2s1"]["router"]
    doc[0]["set"]["router"]["adaptive-routing"]["enable"] = "off"
    broken = {**artifacts, path: Artifact(path, yaml.safe_dump(doc).encode())}
    messages = [f.message for f in check_artifacts(compiled.topology, broken.values())]
    assert any("routed port swp2s1 has no adaptive routing" in m for m in messages)
    assert any("adaptive routing is not enabled" in m for m in messages)


# -- refusals ---------------------------------------------------------------------------------------------------
REFUSALS = {
    "sonic": (("    nos: nvue\n", "    nos: sonic\n"), "SONiC has no adaptive routing"),
    "eos-on-arista": (("    switch: SN5600\n    nos: nvue\n", "    switch: 7060X6-64PE\n    nos: eos\n"),
                      "EOS has no adaptive routing"),
    "spectrum-3": (("    switch: SN5600\n", "    switch: {leaf: SN5600, spine: SN4700}\n"),
                   "spine switch SN4700 (Spectrum-3) has no adaptive routing under NVUE"),
    "800g-links": (("    uplink_speed: 400G\n", "    uplink_speed: 800G\n"),
                   "switch-to-switch links run at 800G"),
    "not-a-supernic": (("model: BlueField-3-B3140H}\n        - {gpu: 1", "model: ConnectX-7-OSFP}\n        - {gpu: 1"),
                       "port SNIC0 is a ConnectX-7-OSFP, not a SuperNIC"),
    "cnp-dscp": (("cnp: {dscp: 48, priority: 6}", "cnp: {dscp: 46, priority: 6}"),
                 "sends CNPs with DSCP 48, not 46"),
    "lossless-priority": (("lossless: {dscp: 26, priority: 3}", "lossless: {dscp: 26, priority: 4}"),
                          "runs the lossless class on priority 3, not 4"),
    "dpu-mode": (("bluefield_mode: nic ", "bluefield_mode: dpu "), "runs its BlueField-3 cards in DPU mode"),
    "operator-without-kubernetes": (("spectrum_x: {profile: RA2.2}",
                                     "spectrum_x: {profile: RA2.2, nic_configuration_operator: true}"),
                                    "NIC Configuration Operator runs on Kubernetes nodes"),
    "sriov": (("    spectrum_x: {profile: RA2.2}\n",
               "    spectrum_x: {profile: RA2.2}\n    sriov: {vfs_per_port: 4}\n"),
              "sets the SuperNICs' firmware to one VF"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_at_its_line(case: str, tmp_path: Path) -> None:
    replacement, message = REFUSALS[case]
    with pytest.raises(SpecError) as caught:
        compile_spec(_variant(tmp_path, replacement))
    found = [i for i in caught.value.issues if message in str(i)]
    assert found, str(caught.value)
    assert all(i.position is not None and i.position.line > 0 for i in found)


def _lab_with_hgx(tmp: Path, mode: str, model: str = "BlueField-3-B3220") -> Path:
    """lab-1su with its generic HGX profile given a bluefield_mode (its storage and in-band ports a ``model``)."""
    profiles = yaml.safe_load((REPO / "cli/fabricgen/data/catalog/node_profiles.yaml").read_text())["node_profiles"]
    hgx = {k: v for k, v in profiles["hgx-8gpu-generic"].items() if k not in ("source", "notes")}
    hgx["bluefield_mode"] = mode
    hgx["nics"]["storage"][0]["model"] = hgx["nics"]["inband"]["model"] = model
    spec = tmp / "lab.yaml"
    extra = yaml.safe_dump({"node_profiles": {"hgx-8gpu-generic": hgx}})
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text() + extra)
    return spec


def test_bluefield_mode_needs_bluefield_ports(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="node profile hgx-8gpu-generic has no BlueField-3 port") as caught:
        compile_spec(_lab_with_hgx(tmp_path, "nic", "ConnectX-7-QSFP112-2P"))
    assert "node_profiles.hgx-8gpu-generic.bluefield_mode" in str(caught.value)


def test_dpu_mode_refused_on_a_lossless_roce_port(tmp_path: Path) -> None:
    """lab-1su's generic HGX runs its storage RoCE on a BlueField-3 B3220: DPU mode there is refused, NIC mode gets
    the mode alone in nic-firmware.sh (no Spectrum-X fabric)."""
    with pytest.raises(SpecError, match="carry the lossless RoCE class of fabric storage"):
        compile_spec(_lab_with_hgx(tmp_path, "dpu"))
    topology = compile_spec(_lab_with_hgx(tmp_path, "nic")).topology
    files = {a.path: a.content.decode() for a in nic_firmware.render(topology)}
    script = files["hosts/hgx-8gpu-generic/nic-firmware.sh"]
    assert "add_port 'DPU0P1' 'ens1f0np0' '' 'INTERNAL_CPU_MODEL=1' 'INTERNAL_CPU_OFFLOAD_ENGINE=1'\n" in script
    assert "ROCE_ADAPTIVE_ROUTING_EN" not in script, "no Spectrum-X fabric: the mode only"


# -- nic-firmware.sh on a fake host -----------------------------------------------------------------------------
@dataclass
class Host:
    root: Path
    state: Path
    script: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "SYSFS_ROOT": str(self.root / "sys"), "MLXCONFIG": str(STUB),
               "STUB_STATE": str(self.state)}
        return subprocess.run(["bash", str(self.script), *args], capture_output=True, text=True, env=env)

    def calls(self) -> list[str]:
        path = self.state / "calls"
        lines = path.read_text().splitlines() if path.exists() else []
        path.unlink(missing_ok=True)
        return lines

    def value(self, card: str, name: str) -> list[str]:
        return (self.state / "fw" / card / name).read_text().split()

    def power_cycle(self) -> None:
        for file in (self.state / "fw").rglob("*"):
            if file.is_file():
                _, next_boot = file.read_text().split()
                file.write_text(f"{next_boot} {next_boot}\n")


def _cards() -> Iterator[tuple[str, str]]:
    for n, netdev in enumerate(NETDEVS):
        yield netdev, f"0000:{0x1a + n:02x}:00.0"


@pytest.fixture
def host(tmp_path: Path, compiled: Compiled) -> Host:
    script = tmp_path / "nic-firmware.sh"
    files = {a.path: a for a in nic_firmware.render(compiled.topology)}
    path = f"hosts/{PROFILE}/nic-firmware.sh"
    assert set(files) == {path} and files[path].mode == 0o755
    script.write_bytes(files[path].content)
    root, state = tmp_path / "root", tmp_path / "state"
    settings = ra_profile("RA2.2")["nvconfig"]["a2dc"]
    for netdev, card in _cards():
        device = root / "sys" / "devices" / "pci0000:00" / card
        device.mkdir(parents=True)
        net = root / "sys" / "class" / "net" / netdev
        net.mkdir(parents=True)
        (net / "device").symlink_to(device)
        fw = state / "fw" / card
        fw.mkdir(parents=True)
        for name in settings:  # a BlueField-3 DPU fresh from the factory: DPU mode, the RA's values at 0
            value = "ENABLED(0)" if name == "INTERNAL_CPU_OFFLOAD_ENGINE" else "EMBEDDED_CPU(1)" if (
                name == "INTERNAL_CPU_MODEL") else "0"
            (fw / name).write_text(f"{value} {value}\n")
    return Host(root, state, script)


def test_dry_run_changes_nothing(host: Host) -> None:
    done = host.run("--dry-run")
    assert done.returncode == 3, done.stderr
    assert not [c for c in host.calls() if " set " in c]
    assert done.stdout.count("would ") == 8 and "INTERNAL_CPU_OFFLOAD_ENGINE=1" in done.stdout
    assert host.value("0000:1a:00.0", "INTERNAL_CPU_OFFLOAD_ENGINE") == ["ENABLED(0)", "ENABLED(0)"]


def test_sets_what_differs_then_waits_for_a_power_cycle(host: Host) -> None:
    card = "0000:1a:00.0"
    (host.state / "fw" / card / "ROCE_RTT_RESP_DSCP_P1").write_text("48 48\n")  # already as the RA wants
    done = host.run()
    assert done.returncode == 3, done.stderr
    sets = [c for c in host.calls() if " -y set " in c]
    assert len(sets) == 8, "one mlxconfig set per card"
    first = sets[0].split()
    assert first[:5] == ["mlxconfig", "-d", card, "-y", "set"]
    assert "ROCE_RTT_RESP_DSCP_P1=48" not in first and "INTERNAL_CPU_MODEL=1" not in first, "only what differs"
    assert "INTERNAL_CPU_OFFLOAD_ENGINE=1" in first and "ROCE_ADAPTIVE_ROUTING_EN=1" in first
    assert host.value(card, "INTERNAL_CPU_OFFLOAD_ENGINE") == ["ENABLED(0)", "DISABLED(1)"]
    assert "power cycle required" in done.stdout
    again = host.run()  # before the power cycle: nothing set again, the wait reported
    assert again.returncode == 3 and not [c for c in host.calls() if " set " in c]
    assert "waits for a power cycle" in again.stdout
    host.power_cycle()
    final = host.run()
    assert final.returncode == 0, final.stdout + final.stderr
    assert not [c for c in host.calls() if " set " in c] and "nothing to change" in final.stdout


def test_missing_port_or_parameter_changes_nothing(host: Host) -> None:
    (host.root / "sys" / "class" / "net" / "ens3np0" / "device").unlink()
    done = host.run()
    assert done.returncode == 1 and "port SNIC2: interface ens3np0 not found" in done.stderr
    assert not host.calls(), "no card queried or set before every port is found"
    (host.root / "sys" / "class" / "net" / "ens3np0" / "device").symlink_to(
        host.root / "sys" / "devices" / "pci0000:00" / "0000:1c:00.0")
    (host.state / "fw" / "0000:1a:00.0" / "MULTIPATH_DSCP").unlink()  # firmware too old for a parameter
    done = host.run()
    assert done.returncode == 1 and "MULTIPATH_DSCP" in done.stderr
    assert not [c for c in host.calls() if " set " in c]


def test_a_connectx8_supernic_from_the_spec_catalog_gets_its_own_settings(tmp_path: Path) -> None:
    """A SuperNIC the shipped catalog lacks (ConnectX-8, device 1023) enters through catalog.nics and gets the RA's
    settings for its device id: no BlueField mode keys."""
    cx8 = {"vendor": "NVIDIA", "ports": 1, "form_factor": "OSFP", "speeds": ["400G"], "link_types": ["eth", "ib"],
           "lanes": 4, "lane_gbps": [100], "supernic": True, "pci_device_id": "1023"}
    catalog = yaml.safe_dump({"catalog": {"nics": {"ConnectX-8-SuperNIC": cx8}}})
    mode = next(line for line in SPEC.read_text().splitlines(keepends=True) if "bluefield_mode:" in line)
    spec = _variant(tmp_path, (mode, ""), ("nodes:\n", catalog + "nodes:\n"))
    spec.write_text(spec.read_text().replace("model: BlueField-3-B3140H}", "model: ConnectX-8-SuperNIC}"))
    files = {a.path: a.content.decode() for a in nic_firmware.render(compile_spec(spec).topology)}
    script = files[f"hosts/{PROFILE}/nic-firmware.sh"]
    settings = ra_profile("RA2.2")["nvconfig"]["1023"]
    assert f"add_port 'SNIC0' 'ens1np0' '' {' '.join(repr(f'{k}={v}') for k, v in settings.items())}\n" in script
    assert "INTERNAL_CPU" not in script


# The example's fabric with its SuperNICs left to NVIDIA's NIC Configuration Operator on Kubernetes (pods on the
# rails through host-device), as tests/external/kubernetes/test_nic_configuration.py renders it.
OPERATOR = ("    spectrum_x: {profile: RA2.2}\n",
            "    spectrum_x: {profile: RA2.2, nic_configuration_operator: true}\n"
            "kubernetes: {namespace: ai-training, operator: none, cni: host-device, fabrics: [compute]}\n")


def test_the_shipped_connectx8_supernic_runs_spectrum_x(tmp_path: Path) -> None:
    """The catalog's ConnectX-8 C8240 is a SuperNIC of device 1023: on the example in place of the BlueField-3s it
    passes every Spectrum-X check, its hosts get the RA's 1023 settings, and the operator's template selects 1023."""
    mode = next(line for line in SPEC.read_text().splitlines(keepends=True) if "bluefield_mode:" in line)
    spec = _variant(tmp_path, (mode, ""))
    spec.write_text(spec.read_text().replace("model: BlueField-3-B3140H}", "model: ConnectX-8-C8240}"))
    script = next(a.content.decode() for a in nic_firmware.render(compile_spec(spec).topology))
    assert all(f"'{k}={v}'" in script for k, v in ra_profile("RA2.2")["nvconfig"]["1023"].items())
    spec.write_text(spec.read_text().replace(*OPERATOR))
    [template] = nic_configuration.templates(compile_spec(spec).topology, "nvidia-network-operator")
    assert template["spec"]["nicSelector"] == {"nicType": "1023"}
