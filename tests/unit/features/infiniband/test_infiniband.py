"""OpenSM files for InfiniBand fabrics: complete opensm.conf, partitions, GUID files, keys kept out of artifacts."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Severity
from fabricgen.features.infiniband import render as infiniband_render
from fabricgen.features.infiniband.view import ib_fabric
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

LAB = INVENTORIES / "lab-1su.yaml"


def _artifacts(spec: Path) -> dict[str, Artifact]:
    return {a.path: a for a in render_spec(compile_spec(spec))}


@pytest.fixture(scope="module")
def lab() -> dict[str, Artifact]:
    return _artifacts(LAB)


def _text(artifacts: dict[str, Artifact], name: str) -> str:
    return artifacts[f"infiniband/compute/{name}"].content.decode()


def test_opensm_conf_is_complete_and_explains_overrides(lab: dict[str, Artifact]) -> None:
    conf = _text(lab, "opensm.conf")
    defaults = (Path(infiniband_render.__file__).with_name("opensm-3.3.23.conf")).read_text().splitlines()
    settings = {line.split(" ", 1)[0] for line in defaults if line and not line.startswith("#")}
    lines = conf.splitlines()
    present = {line.split(" ", 1)[0] for line in lines if line and not line.startswith("#")}
    assert present == settings, "every upstream setting appears exactly as a setting"
    for i, line in enumerate(lines):
        if line.startswith(("routing_engine ", "root_guid_file ", "cn_guid_file ", "qos ", "sm_key ", "lmc ")):
            assert lines[i - 1].startswith("# fabricgen: "), line
    assert "routing_engine ftree,updn,no_fallback" in lines
    assert "consolidate_ipv6_snm_req TRUE" in lines
    assert lines[lines.index("qos_sl2vl 0,1,2,3,4,5,6,7,0,1,2,3,4,5,6,7") - 1] == (
        "# fabricgen: fabricgen default (OpenSM's: 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,7)")
    assert lines[lines.index("qos_vlarb_low 0:0,1:4,2:4,3:4,4:4,5:4,6:4,7:4,8:4,9:4,10:4,11:4,12:4,13:4,14:4") - 1] == (
        "# fabricgen: fabricgen default (= OpenSM's)")
    assert "root_guid_file /etc/opensm/root-guids.conf" in lines
    assert "lmc 0" in lines and "qos TRUE" in lines


def test_guid_files(lab: dict[str, Artifact]) -> None:
    compiled = compile_spec(LAB)
    ib = ib_fabric(compiled.topology, compiled.topology.fabric("compute"))
    roots = [line for line in _text(lab, "root-guids.conf").splitlines() if not line.startswith("#")]
    assert roots == [f"0x{n.node_guid:016x}" for n in ib.roots] and len(roots) == 2
    cns = [line for line in _text(lab, "cn-guids.conf").splitlines() if not line.startswith("#")]
    assert len(cns) == 64 and len(set(cns)) == 64
    names = _text(lab, "node-name-map").splitlines()
    assert len(names) == len(ib.nodes) == 8 * 8 + 10
    assert '"hgx01 mlx5_0"' in names[10]
    guids = [n.node_guid for n in ib.nodes] + [n.port_guid for n in ib.hcas]
    assert len(set(guids)) == len(guids), "simulated GUIDs are unique"


def test_partitions(lab: dict[str, Artifact]) -> None:
    text = _text(lab, "partitions.conf")
    blocks = [b for b in text.split(";") if "=" in b]
    assert "Default=0x7fff, sl=0, defmember=limited" in text
    # training carries NCCL: at P_Key index 0 (indx0), its one SL (1) for paths and the broadcast group alike
    # (no group rate: OpenSM's default, 10 Gb/s, lets a rail that came up slower still join)
    training = next(b for b in blocks if "training=0x0001, indx0, ipoib, mtu=5, sl=1" in b)
    assert training.count("=full") == 1 + 64 + 1  # defmember, 64 HCA ports, the SM (its host's port is a member)
    # the switches in a second definition without indx0: their index 0 keeps Default
    assert "\ntraining=0x0001, ipoib, mtu=5, sl=1, defmember=full : ALL_SWITCHES=full ;\n" in text
    rails = next(b for b in blocks if "rails01=0x0002, sl=0, defmember=full" in b)
    assert rails.count("0x0002c903") == 16, "rails 0 and 1 of 8 nodes"
    assert "any, pkey 0x0001 : 1" in _text(lab, "qos-policy.conf")


def test_opensm_conf_qos_and_m_key(lab: dict[str, Artifact]) -> None:
    """QoS with a high limit of 0 (OpenSM's default: the high table cannot starve the low VLs); an M_Key protected
    at level 2 with a lease longer than the sweep."""
    conf = _text(lab, "opensm.conf").splitlines()
    for line in ("qos_high_limit 0", "m_key_protection_level 2", "m_key_lease_period 60", "sweep_interval 10"):
        assert line in conf


def test_ha_pair_units(lab: dict[str, Artifact]) -> None:
    """Each SM host of the pair gets its unit with its priority, bound to its first HCA port."""
    units = {p: a.content.decode() for p, a in lab.items() if "/hosts/" in p and p.startswith("infiniband/")}
    assert set(units) == {f"infiniband/compute/hosts/{h}/opensm-compute.service" for h in ("hgx01", "hgx08")}
    compiled = compile_spec(LAB)
    ib = ib_fabric(compiled.topology, compiled.topology.fabric("compute"))
    first = {h: next(n.port_guid for n in ib.hcas if n.description == f"{h} mlx5_0") for h in ("hgx01", "hgx08")}
    for host, priority in (("hgx01", 15), ("hgx08", 14)):
        text = units[f"infiniband/compute/hosts/{host}/opensm-compute.service"]
        assert f"--priority {priority} --guid 0x{first[host]:016x}" in text
        assert "High availability" in text


def test_topology_net_lists_each_link_from_both_ends(lab: dict[str, Artifact]) -> None:
    net = _text(lab, "topology.net")
    ports = [line for line in net.splitlines() if line.startswith("[")]
    assert len(ports) == 2 * 128
    assert 'Switch\t64 "S-compute-spine001"\t\t# "compute-spine001" base port 0 lid 0 lmc 0' in net
    assert 'Ca\t1 "H-hgx01-mlx5_0"\t\t# "hgx01 mlx5_0"' in net
    assert "switchguid=0x0002c90301000001" in net


def test_keys_never_reach_artifacts(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "0x5ec12e7000000042"
    monkeypatch.setenv("OPENSM_SM_KEY", secret)
    for artifact in render_spec(compile_spec(LAB)):
        assert secret.encode() not in artifact.content
        assert b"5ec12e7" not in artifact.content


def test_without_guids_files_say_they_are_incomplete(tmp_path: Path) -> None:
    spec = tmp_path / "noguid.yaml"
    spec.write_text(LAB.read_text().replace("routing_engine: ftree", "routing_engine: [ftree, updn]").replace(
        "guids: simulated", "lmc: 0"))
    compiled = compile_spec(spec)
    warnings = [f for f in compiled.findings if f.severity is Severity.WARNING and f.check == "guids"]
    assert len(warnings) == 1 and "GUIDs of 74 devices are unknown" in warnings[0].message
    artifacts = {a.path: a.content.decode() for a in render_spec(compiled) if a.path.startswith("infiniband/")}
    assert "INCOMPLETE" in artifacts["infiniband/compute/root-guids.conf"]
    assert "# incomplete: 64 member port GUIDs unknown" in artifacts["infiniband/compute/partitions.conf"]
    assert "\nswitchguid=" not in artifacts["infiniband/compute/topology.net"]
    assert "routing_engine ftree,updn,no_fallback" in artifacts["infiniband/compute/opensm.conf"]
    assert "root_guid_file (null)" in artifacts["infiniband/compute/opensm.conf"]


def test_guid_inventory_is_used(tmp_path: Path) -> None:
    compiled = compile_spec(LAB)
    ib = ib_fabric(compiled.topology, compiled.topology.fabric("compute"))
    rows = ["device,rdma_dev,node_guid,port_guid"]
    for i, node in enumerate(ib.nodes):
        device, _, dev = node.description.partition(" ")
        rows.append(f"{device},{dev},0x{0xE41D2D0300000000 + 16 * i:016x},0x{0xE41D2D0300000000 + 16 * i + 1:016x}")
    (tmp_path / "guids.csv").write_text("\n".join(rows) + "\n")
    spec = tmp_path / "site.yaml"
    spec.write_text(LAB.read_text().replace("guids: simulated", "guids: {file: guids.csv}"))
    artifacts = {a.path: a.content.decode() for a in render_spec(compile_spec(spec))
                 if a.path.startswith("infiniband/")}
    assert "caguid=0xe41d2d0300000000" not in artifacts["infiniband/compute/topology.net"]  # switches come first
    assert "switchguid=0xe41d2d0300000000" in artifacts["infiniband/compute/topology.net"]
    assert "0xe41d2d03000000a1" in artifacts["infiniband/compute/cn-guids.conf"]


def _keys_script(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    key_file = tmp_path / "m_key"
    key_file.write_text("0x00000000000000aa\n")
    spec = tmp_path / "keys.yaml"
    spec.write_text(LAB.read_text().replace("/etc/opensm/m_key", str(key_file)))
    artifacts = {a.path: a for a in render_spec(compile_spec(spec))}
    script = tmp_path / "opensm-keys.sh"
    script.write_bytes(artifacts["infiniband/compute/opensm-keys.sh"].content)
    script.chmod(0o755)
    conf = tmp_path / "opensm.conf"
    conf.write_bytes(artifacts["infiniband/compute/opensm.conf"].content)
    env = {**os.environ, "OPENSM_CONF_IN": str(conf), "OPENSM_CONF_OUT": str(tmp_path / "run" / "compute.conf"),
           "OPENSM_SM_KEY": "0x00000000000000bb"}
    return script, tmp_path / "run" / "compute.conf", env


def test_keys_script_substitutes_idempotently_and_never_prints_keys(tmp_path: Path) -> None:
    script, out, env = _keys_script(tmp_path)
    first = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert first.returncode == 0, first.stderr
    runtime = out.read_text()
    assert "sm_key 0x00000000000000bb" in runtime and "m_key 0x00000000000000aa" in runtime
    assert oct(out.stat().st_mode & 0o777) == oct(0o600)
    mtime = out.stat().st_mtime_ns
    again = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert again.returncode == 0 and out.stat().st_mtime_ns == mtime, "second run writes nothing"
    bad = subprocess.run([str(script)], env={**env, "OPENSM_SM_KEY": "secret-not-hex"}, capture_output=True,
                         text=True, timeout=30)
    assert bad.returncode == 1 and "sm_key is not a 64-bit hex key" in bad.stderr
    assert "secret-not-hex" not in bad.stderr + bad.stdout
    assert "0x00000000000000bb" not in first.stdout + first.stderr


def test_ib_fabric_is_computed_once_per_compiled_fabric() -> None:
    """The IB check and the IB renderer share one computation of the same compiled fabric, held by the
    topology; a recompiled topology (an equal but distinct object) or a replaced copy gets its own, and a
    fabric of another topology is refused."""
    topology = compile_spec(LAB).topology
    ft = next(f for f in topology.fabrics if f.fabric.type == "infiniband")
    assert ib_fabric(topology, ft) is ib_fabric(topology, ft)
    again = compile_spec(LAB).topology
    other = next(f for f in again.fabrics if f.fabric.type == "infiniband")
    assert ib_fabric(again, other) is not ib_fabric(topology, ft)
    assert ib_fabric(again, other) == ib_fabric(topology, ft)
    copy = dataclasses.replace(topology)
    assert copy == topology and ib_fabric(copy, ft) is not ib_fabric(topology, ft)
    with pytest.raises(ValueError, match="not one of this topology's fabrics"):
        ib_fabric(topology, other)


def test_ib_vfs_need_a_virtualizing_subnet_manager(tmp_path: Path) -> None:
    """With IB VFs, UFM's settings and NVIDIA's standalone OpenSM 5.x turn virtualization on (and a per-port M_Key,
    also NVIDIA-only), in the block after upstream's settings; upstream OpenSM (which has none) gets a warning."""
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    ufm = compile_spec(INVENTORIES / "h100-4su.yaml")
    files = {a.path: a.content for a in render_spec(ufm, ["infiniband"])}
    settings = files["infiniband/compute/opensm-settings.conf"].decode()
    assert settings.rstrip().endswith("virt_enabled 2") and not [w for w in ufm.warnings if w.check == "sr-iov"]
    spec = tmp_path / "upstream.yaml"
    nvidia_only = ("      adaptive_routing:", "        service_levels:", "      sharp:")  # refused upstream
    text = "".join(line for line in text.splitlines(keepends=True) if not line.startswith(nvidia_only))
    spec.write_text(text.replace("      flavor: ufm ", "      flavor: opensm ").replace("ar_ftree, ar_updn",
                                                                                       "ftree, updn"))
    upstream = compile_spec(spec)
    ib = {"opensm-version", "sr-iov"}  # each once (the others are Ethernet's)
    assert [w.check for w in upstream.warnings if w.check in ib] == ["opensm-version", "sr-iov"]
    conf = {a.path: a.content for a in render_spec(upstream, ["infiniband"])}["infiniband/compute/opensm.conf"]
    assert b"virt_enabled" not in conf and b"m_key_per_port" not in conf
    nvidia = tmp_path / "nvidia.yaml"
    nvidia.write_text(spec.read_text().replace("      flavor: opensm ", '      flavor: opensm\n      opensm_version: '
                                                                          '"5.18.0"\n      # '))
    standalone = compile_spec(nvidia)
    assert not [w for w in standalone.warnings if w.check in ib], standalone.warnings
    conf = {a.path: a.content for a in render_spec(standalone, ["infiniband"])}["infiniband/compute/opensm.conf"]
    block = conf.decode().split("# NVIDIA OpenSM 5.18.0 settings")[1]
    assert "\nvirt_enabled 2\n" in block and "\nm_key_per_port TRUE\n" in block
    assert conf.count(b"\nvirt_enabled ") == 1


def test_simulated_guids_are_unique_across_fabrics() -> None:
    """The fabric index was once OR'd into the base's 0x03 byte, so fabrics 0-3 shared GUIDs."""
    from fabricgen.features.infiniband.view import SIMULATED_BASE, _guid

    guids = [_guid(fabric, kind, serial) for fabric in range(16) for kind in (1, 2) for serial in (1, 2, 0xFFFFFF)]
    assert len(set(guids)) == len(guids)
    assert all(g >> 32 == SIMULATED_BASE >> 32 for g in guids), "the OUI and the 0x03 byte stay"
    assert _guid(0, 1, 5) == SIMULATED_BASE | 1 << 24 | 5, "a single fabric keeps its GUIDs"
    with pytest.raises(ValueError):
        _guid(16, 1, 1)
