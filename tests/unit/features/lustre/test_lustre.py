"""Lustre client: the model of the example's file systems, lnet.conf read back as lnetctl reads it, mount units and
fstab, the generated scripts against stub lctl/lfs (idempotent, --dry-run, NID check), and the helpers (NIDs,
systemd path escaping, sizes). systemd and shellcheck check the files in tests/external/lustre/test_lustre.py; the
Kubernetes storage tiers are in tests/unit/features/kubernetes/test_storage.py."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.features.kubernetes import storage as k8s_storage
from fabricgen.features.lustre import render as lustre
from fabricgen.features.lustre.build import (
    canonical_network,
    format_size,
    mount_unit_name,
    parse_nid,
    parse_size,
    pod_storage,
    systemd_escape_path,
    tuning_data,
)
from fabricgen.features.lustre.render import layout_options
from fabricgen.model.lustre import LustreFs
from fabricgen.pipeline import Compiled, compile_spec
from fabricgen.spec.validate import schema_document
from tests.conftest import INVENTORIES
from tests.helpers.fake_host import ScriptHost
from tests.helpers.lustre import ESCAPE_PATHS as PATHS
from tests.helpers.lustre import LUSTRE_STUBS as STUBS
from tests.helpers.lustre import MOUNT_DIR as BASE

H100 = INVENTORIES / "h100-4su.yaml"
# What lnetctl import reads (lnet/utils/lnetconfig/liblnetconfig_lnd.c, liblnetconfig.c).
NET_TUNABLES = {"peer_timeout", "peer_credits", "peer_buffer_credits", "credits"}
O2IB_LND_TUNABLES = {"map_on_demand", "concurrent_sends", "fmr_pool_size", "fmr_flush_trigger", "fmr_cache", "ntx",
                     "conns_per_peer", "tos"}
STORAGE_PORTS = ("enp170s0f0np0", "enp41s0f0np0")
SERVER_FILES = [f"hosts/lustre-server/lustre/{f}" for f in ("lnet.conf", "lnet.modprobe.conf",
                                                               "fabricgen-ko2iblnd.conf")]
SERVER_SCRIPTS = [f"hosts/{n}/lustre/format-targets.sh" for n in ("mds01", "mds02", "oss01", "oss02", "oss03", "oss04")]
WAIT_MGS = ("lustre-wait-mgs-ckpt.service", "lustre-wait-mgs.sh")  # both file systems mount the MGT ckpt declares
SERVER_MOUNTS = [  # each server: the units of its pair's targets (formatted here or by its partner), their fstab
    # and the wait for the MGS
    *(f"hosts/mds0{n}/lustre/targets/{u}" for n in (1, 2)
      for u in ("fstab", "srv-lustre-mgt.mount", "srv-lustre-ckpt_mdt0.mount", "srv-lustre-data_mdt0.mount",
                *WAIT_MGS)),
    *(f"hosts/oss0{n}/lustre/targets/{u}" for n in (1, 2, 3, 4) for u in (
        "fstab", *WAIT_MGS, *(f"srv-lustre-{fs}_ost{i + 2 * (n > 2)}.mount" for fs in ("ckpt", "data")
                              for i in (0, 1))))]


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(H100)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in [*lustre.render(compiled.topology), *k8s_storage.render(compiled.topology)]}


def _fs(compiled: Compiled, name: str) -> LustreFs:
    return next(fs for fs in compiled.cluster.lustre if fs.name == name)


# --- model -----------------------------------------------------------------------------------------------------

def test_example_file_systems(compiled: Compiled) -> None:
    ckpt, data = _fs(compiled, "checkpoints"), _fs(compiled, "datasets")
    plan = compiled.topology.addresses["storage"]
    server = {node: [] for node in ("mds01", "mds02")}
    for subnet in plan.hosts:
        for node, port, ip in subnet.hosts:
            if node in server:
                server[node].append((port, f"{ip}@o2ib"))
    expected = ":".join(",".join(nid for _, nid in sorted(nids)) for nids in server.values())
    assert ckpt.mgs_spec == f"{expected}:/ckpt", "the MGS pair's NIDs are its storage ports' planned addresses"
    assert ckpt.mgs_servers == ("mds01", "mds02") and all(len(nids) == 2 for nids in ckpt.mgs)
    assert ckpt.interfaces == {"dgx-h100": STORAGE_PORTS}, "multi-rail over both storage ports, the UFM has none"
    assert ckpt.groups == ("gpu{n:03d}",), "the storage servers serve the file system, they do not mount it"
    assert ckpt.mount_options == ("flock", "noatime", "_netdev")
    values = {t.name: t.value for t in data.client}
    assert values["statahead_max"] == 2048, "the spec's override wins over the dataset profile"
    assert values["max_read_ahead_per_file_mb"] == tuning_data()["profiles"]["dataset"]["values"][
        "max_read_ahead_per_file_mb"]
    assert {t.param for t in ckpt.client} >= {"osc.ckpt-OST*.max_dirty_mb", "llite.ckpt-*.max_read_ahead_mb"}
    lnd = dict(ckpt.lnet.lnd_tunables)
    assert lnd["tos"] == 26 << 2 | 0b10, "RDMA CM ToS carries the storage fabric's lossless DSCP and ECT(0)"
    assert dict(ckpt.lnet.tunables)["peer_credits"] == 64, "400G row of the tuning data"


def test_every_speed_has_lnet_credits() -> None:
    speeds = schema_document("sections/common.schema.json")["$defs"]["speed"]["enum"]
    listed = [s for row in tuning_data()["lnet"]["by_speed"] for s in row["speeds"]]
    assert sorted(listed) == sorted(speeds), "every speed in exactly one row"


def test_every_profile_value_is_within_its_limits() -> None:
    data = tuning_data()
    for profile in data["profiles"].values():
        values = profile["values"]
        assert set(values) == set(data["tunables"])
        for name, rule in data["tunables"].items():
            assert rule["min"] <= values[name] <= rule.get("max", values[name]), name


# --- helpers ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "canonical"), [
    ("10.20.255.1@o2ib", "10.20.255.1@o2ib"), ("10.20.255.1@o2ib0", "10.20.255.1@o2ib"),
    ("192.168.1.5@tcp1", "192.168.1.5@tcp1"), ("10.0.0.1@o2ib10", "10.0.0.1@o2ib10")])
def test_parse_nid(text: str, canonical: str) -> None:
    assert str(parse_nid(text)) == canonical


@pytest.mark.parametrize("text", ["10.20.255.256@o2ib", "10.20.255@o2ib", "mgs1@o2ib", "10.0.0.1@gni",
                                  "10.0.0.1", "10.00.0.1@tcp", "10.0.0.1@o2ib:10.0.0.2@o2ib", "10.0.0.1@o2ib "])
def test_parse_nid_refuses(text: str) -> None:
    assert parse_nid(text) is None


def test_canonical_network() -> None:
    assert [canonical_network(n) for n in ("o2ib", "o2ib0", "o2ib1", "tcp0", "tcp10")] == [
        "o2ib", "o2ib", "o2ib1", "tcp", "tcp10"]


def test_systemd_escape_known_values() -> None:
    """The same cases without the tool, so the escaping is tested everywhere."""
    assert [systemd_escape_path(p) for p in PATHS] == [
        "lustre-ckpt", "lustre-a\\x2db", "lustre-x", "-", "\\x2ehidden-x", "data-\\xc3\\xbcn\\xc3\\xaf",
        "a\\x20b-c:d", "x_y.z"]


def test_sizes() -> None:
    assert [parse_size(v) for v in ("4M", "64K", "1G", "2T", 65536, -1)] == [
        4 << 20, 64 << 10, 1 << 30, 2 << 40, 65536, -1]
    assert [format_size(v) for v in (4 << 20, 3 << 30, 65536, 100, 0, -1)] == ["4M", "3G", "64K", "100", "0", "-1"]


def test_layout_options(compiled: Compiled) -> None:
    assert layout_options(_fs(compiled, "checkpoints").layouts[0].components) == [
        "-E", "4M", "-c", "1", "-E", "64M", "-c", "4", "-E", "-1", "-c", "-1"]
    assert layout_options(_fs(compiled, "datasets").layouts[0].components) == [
        "-E", "1M", "-L", "mdt", "-E", "-1", "-c", "1"]


# --- host files ------------------------------------------------------------------------------------------------

def test_artifact_set(files: dict[str, Artifact]) -> None:
    assert sorted(files) == sorted([
        f"{BASE}/fstab", f"{BASE}/fabricgen-ko2iblnd.conf", f"{BASE}/lnet.conf", f"{BASE}/lnet.modprobe.conf",
        f"{BASE}/lustre-ckpt.mount", f"{BASE}/lustre-data.mount", f"{BASE}/lustre-client-tune.sh",
        f"{BASE}/mount.ckpt.params", f"{BASE}/mount.data.params",
        "storage/lustre/ckpt/mgs-set_param.sh", "storage/lustre/ckpt/setstripe.sh",
        "storage/lustre/data/mgs-set_param.sh", "storage/lustre/data/setstripe.sh",
        "kubernetes/storage/lustre-checkpoints.yaml", "kubernetes/storage/lustre-datasets.yaml",
        "kubernetes/storage/local-nvme.yaml", "hosts/dgx-h100/k8s-cache/fabricgen-k8s-cache.conf",
        "hosts/dgx-h100/k8s-cache/mnt-fabricgen-cache.mount", *SERVER_FILES, *SERVER_SCRIPTS, *SERVER_MOUNTS])
    assert {p for p, a in files.items() if a.mode == 0o755} == {
        f"{BASE}/lustre-client-tune.sh", "storage/lustre/ckpt/mgs-set_param.sh", "storage/lustre/ckpt/setstripe.sh",
        "storage/lustre/data/mgs-set_param.sh", "storage/lustre/data/setstripe.sh", *SERVER_SCRIPTS,
        *(p for p in SERVER_MOUNTS if p.endswith(".sh"))}


def test_lnet_conf_has_the_structure_lnetctl_imports(files: dict[str, Artifact], compiled: Compiled) -> None:
    doc = yaml.safe_load(files[f"{BASE}/lnet.conf"].content)
    assert set(doc) == {"net"}
    [net] = doc["net"]
    assert set(net) == {"net type", "local NI(s)"} and net["net type"] == "o2ib"
    lnet = _fs(compiled, "checkpoints").lnet
    assert [ni["interfaces"] for ni in net["local NI(s)"]] == [{0: port} for port in STORAGE_PORTS]
    for ni in net["local NI(s)"]:
        assert set(ni) == {"interfaces", "tunables", "lnd tunables"}
        assert set(ni["tunables"]) <= NET_TUNABLES and set(ni["lnd tunables"]) <= O2IB_LND_TUNABLES
        assert ni["tunables"] == dict(lnet.tunables) and ni["lnd tunables"] == dict(lnet.lnd_tunables)
        assert all(isinstance(v, int) for v in (*ni["tunables"].values(), *ni["lnd tunables"].values()))


def test_module_options_match_lnet_conf(files: dict[str, Artifact]) -> None:
    lines = [line for line in files[f"{BASE}/lnet.modprobe.conf"].content.decode().splitlines()
             if not line.startswith("#")]
    assert lines == [f'options lnet networks="o2ib({",".join(STORAGE_PORTS)})"']
    ko2iblnd = next(line for line in files[f"{BASE}/fabricgen-ko2iblnd.conf"].content.decode().splitlines()
                    if line.startswith("options "))
    options = dict(word.split("=") for word in ko2iblnd.split()[2:])
    ni = yaml.safe_load(files[f"{BASE}/lnet.conf"].content)["net"][0]["local NI(s)"][0]
    for key, value in {**ni["tunables"], **ni["lnd tunables"]}.items():
        if key != "peer_buffer_credits":
            assert options[key] == str(value), key
    peer_credits = int(options["peer_credits"])
    assert peer_credits // 2 <= int(options["concurrent_sends"]) <= 2 * peer_credits
    assert peer_credits // 2 <= int(options["peer_credits_hiw"]) < peer_credits
    # "size of fmr pool on each CPT (>= ntx / 4)" (o2iblnd_modparams.c): 4096 / 4, above the default 512
    assert (options["ntx"], options["fmr_pool_size"]) == ("4096", "1024")


def test_mount_unit_and_fstab_agree(files: dict[str, Artifact], compiled: Compiled) -> None:
    fstab = [line.split() for line in files[f"{BASE}/fstab"].content.decode().splitlines()
             if not line.startswith("#")]
    for fs, row in zip(compiled.cluster.lustre, fstab, strict=True):
        unit = files[f"{BASE}/{mount_unit_name(fs.mountpoint)}"].content.decode()
        keys = dict(line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#"))
        assert (keys["What"], keys["Where"], keys["Type"]) == (row[0], row[1], row[2]) == (
            fs.mgs_spec, fs.mountpoint, "lustre")
        assert keys["After"].split() == ["lnet.service", "network-online.target"]
        assert keys["Requires"] == "lnet.service" and keys["Wants"] == "network-online.target"
        assert "_netdev" in keys["Options"].split(",") and "x-systemd.requires=lnet.service" in row[3]


def test_mount_params_files(files: dict[str, Artifact], compiled: Compiled) -> None:
    for fs in compiled.cluster.lustre:
        lines = files[f"{BASE}/mount.{fs.fsname}.params"].content.decode().splitlines()
        assert lines == [f"{t.param}={t.value}" for t in fs.client]
        assert all(fs.fsname in line for line in lines), "lctl set_param -C FSNAME requires the fsname in each"


# --- scripts against stub tools --------------------------------------------------------------------------------

class Stub(ScriptHost):
    def changes(self, since: int = 0) -> list[str]:
        return [c for c in self.calls[since:] if c.startswith(("lctl set_param", "lfs setstripe"))]


def _stub(tmp_path: Path, script: bytes) -> Stub:
    (tmp_path / "params").mkdir()
    path = tmp_path / "script.sh"
    path.write_bytes(script)
    env = {**os.environ, "STUB_STATE": str(tmp_path), "LCTL": str(STUBS / "lctl"), "LFS": str(STUBS / "lfs")}
    return Stub(tmp_path, path, env, calls_file="calls")


@pytest.fixture
def client(tmp_path: Path, files: dict[str, Artifact], compiled: Compiled) -> Stub:
    """gpu001 with both file systems mounted on two OSTs and one MDT each, every parameter at another value."""
    stub = _stub(tmp_path, files[f"{BASE}/lustre-client-tune.sh"].content)
    (tmp_path / "nids").write_text("10.20.0.2@o2ib\n10.20.0.130@o2ib\n")  # dual-homed: leaf001, leaf002
    for fs in compiled.cluster.lustre:
        for t in fs.client:
            kind, _, name = t.param.partition(".")
            instances = ([f"{fs.fsname}-OST0000-osc-ffff", f"{fs.fsname}-OST0001-osc-ffff"] if kind == "osc" else
                         [f"{fs.fsname}-MDT0000-mdc-ffff"] if kind == "mdc" else [f"{fs.fsname}-ffff"])
            for instance in instances:
                (tmp_path / "params" / f"{kind}.{instance}.{name.split('.', 1)[1]}").write_text("7\n")
    return stub


def test_tune_sets_each_parameter_once_then_nothing(client: Stub, compiled: Compiled) -> None:
    first = client.run(NODE="gpu001")
    assert first.returncode == 0, first.stderr
    assert "LNet NIDs of gpu001 match the plan: 10.20.0.2@o2ib 10.20.0.130@o2ib" in first.stdout
    expected = [f"lctl set_param {t.param}={t.value}" for fs in compiled.cluster.lustre for t in fs.client]
    assert client.changes() == expected
    value = (client.root / "params" / "osc.ckpt-OST0001-osc-ffff.max_dirty_mb").read_text().strip()
    assert value == "1024", "the glob reached every OST of the file system"
    before = len(client.calls)
    second = client.run(NODE="gpu001")
    assert second.returncode == 0 and client.changes(before) == []
    assert "nothing to change" in second.stdout


def test_tune_sets_only_what_differs(client: Stub) -> None:
    assert client.run(NODE="gpu001").returncode == 0
    (client.root / "params" / "osc.data-OST0001-osc-ffff.max_rpcs_in_flight").write_text("8\n")
    before = len(client.calls)
    assert client.run(NODE="gpu001").returncode == 0
    assert client.changes(before) == ["lctl set_param osc.data-OST*.max_rpcs_in_flight=16"]


def test_tune_dry_run_changes_nothing(client: Stub) -> None:
    done = client.run("--dry-run", NODE="gpu001")
    assert done.returncode == 0 and client.changes() == []
    assert "would set osc.ckpt-OST*.max_dirty_mb=1024 (now 7)" in done.stdout
    assert "14 change(s) would be made" in done.stdout


def test_tune_refuses_wrong_nids_and_unknown_nodes(client: Stub) -> None:
    (client.root / "nids").write_text("10.20.0.2@o2ib\n")
    done = client.run(NODE="gpu001")
    assert done.returncode == 1 and "NID 10.20.0.130@o2ib of gpu001 is not configured" in done.stderr
    assert client.changes() == []
    other = client.run(NODE="gpu002")
    assert other.returncode == 1 and "NID 10.20.0.3@o2ib of gpu002 is not configured" in other.stderr
    unknown = client.run(NODE="ufm01")
    assert unknown.returncode == 1 and "not planned with profile dgx-h100" in unknown.stderr


def test_tune_fails_when_not_mounted(client: Stub) -> None:
    for path in (client.root / "params").glob("llite.data-*"):
        path.unlink()
    done = client.run(NODE="gpu001")
    assert done.returncode == 1 and "no parameter llite.data-*.max_read_ahead_mb: is the file system mounted?" in \
        done.stderr


def test_mgs_script_records_once(tmp_path: Path, files: dict[str, Artifact], compiled: Compiled) -> None:
    stub = _stub(tmp_path, files["storage/lustre/ckpt/mgs-set_param.sh"].content)
    dry = stub.run("--dry-run")
    assert dry.returncode == 0 and stub.changes() == [] and "7 parameter(s) would be recorded" in dry.stdout
    assert stub.run().returncode == 0
    assert stub.changes() == [f"lctl set_param -P {t.param}={t.value}" for t in _fs(compiled, "checkpoints").client]
    before = len(stub.calls)
    again = stub.run()
    assert again.returncode == 0 and stub.changes(before) == [] and "0 parameter(s) were recorded" in again.stdout


def test_mgs_script_goes_by_the_last_record_of_a_parameter(tmp_path: Path, files: dict[str, Artifact],
                                                             compiled: Compiled) -> None:
    """The params log keeps every set_param -P in order and the last record of a parameter is the one in force:
    a planned value recorded once but overridden since is recorded again; one recorded last is left alone."""
    stub = _stub(tmp_path, files["storage/lustre/ckpt/mgs-set_param.sh"].content)
    first, second, *_ = _fs(compiled, "checkpoints").client
    (tmp_path / "llog").write_text(
        f"- {{ index: 1, event: set_param, device: general, parameter: {first.param}, value: {first.value} }}\n"
        f"- {{ index: 2, event: set_param, device: general, parameter: {second.param}, value: 3 }}\n"
        f"- {{ index: 3, event: set_param, device: general, parameter: {first.param}, value: 5 }}\n"
        f"- {{ index: 4, event: set_param, device: general, parameter: {second.param}, value: {second.value} }}\n")
    done = stub.run()
    assert done.returncode == 0, done.stderr
    changes = stub.changes()
    assert f"lctl set_param -P {first.param}={first.value}" in changes
    assert not any(c.startswith(f"lctl set_param -P {second.param}=") for c in changes)
    before = len(stub.calls)
    assert stub.run().returncode == 0 and stub.changes(before) == []


def test_setstripe_script(tmp_path: Path, files: dict[str, Artifact]) -> None:
    stub = _stub(tmp_path, files["storage/lustre/ckpt/setstripe.sh"].content)
    root = tmp_path / "mnt"
    root.mkdir()
    assert stub.run("--dry-run", LUSTRE_ROOT=str(root)).returncode == 0
    assert stub.changes() == [] and not (root / "checkpoints").exists()
    done = stub.run(LUSTRE_ROOT=str(root))
    assert done.returncode == 0, done.stderr
    assert stub.changes() == [f"lfs setstripe -E 4M -c 1 -E 64M -c 4 -E -1 -c -1 {root}/checkpoints"]
    assert (root / "checkpoints").is_dir()
    assert stub.run(LUSTRE_ROOT=str(root)).returncode == 0, "a second run sets the same layout again"


# --- other file systems and networks ---------------------------------------------------------------------------

def test_no_lustre_no_lustre_artifacts(tmp_path: Path) -> None:
    spec = tmp_path / "lab.yaml"
    shutil.copy(INVENTORIES / "lab-1su.yaml", spec)
    topology = compile_spec(spec).topology
    assert lustre.render(topology) == [] and k8s_storage.render(topology) == []
    assert pod_storage(topology.cluster).volumes == ()


def test_second_network_over_tcp(tmp_path: Path) -> None:
    """datasets over socklnd (tcp) next to checkpoints over o2ib: two nets on the same ports, tcp without
    ko2iblnd values, and each node checked for both NIDs of each port (GDS only on checkpoints: tcp has no RDMA
    path)."""
    spec = tmp_path / "h100.yaml"
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    text = text.replace('    lustre_client: "2.15.5"\n',
                        '    lustre_client: "2.15.5"\n    filesystems: [checkpoints]\n')
    spec.write_text(text.replace("    mgs: [mds01, mds02]\n    mountpoint: /lustre/data\n",
                                 "    mgs: [mds01, mds02]\n    mountpoint: /lustre/data\n    network: tcp\n"))
    compiled = compile_spec(spec)
    mgs = ":".join(",".join(nid.replace("@o2ib", "@tcp") for nid in nids) for nids in _fs(compiled, "checkpoints").mgs)
    files = {a.path: a.content for a in lustre.render(compiled.topology)}
    nets = yaml.safe_load(files[f"{BASE}/lnet.conf"])["net"]
    assert [n["net type"] for n in nets] == ["o2ib", "tcp"]
    assert [set(ni["lnd tunables"]) for ni in nets[1]["local NI(s)"]] == [{"conns_per_peer", "tos"}] * 2
    assert b'networks="o2ib(enp170s0f0np0,enp41s0f0np0),tcp(enp170s0f0np0,enp41s0f0np0)"' in files[
        f"{BASE}/lnet.modprobe.conf"]
    assert f"{mgs}:/data /lustre/data lustre".encode() in files[f"{BASE}/fstab"], "the servers' NIDs on tcp"
    assert b'gpu001) echo "10.20.0.2@o2ib 10.20.0.130@o2ib 10.20.0.2@tcp 10.20.0.130@tcp" ;;' in files[
        f"{BASE}/lustre-client-tune.sh"]
    # one MGS serves both networks: its servicenodes carry each server's NIDs on both, the data MDT's mgsnode tcp
    mds01, mds02 = (",".join(f"{ip}@{net}" for net in ("o2ib", "tcp") for ip in ips)
                    for ips in (("10.20.0.65", "10.20.0.193"), ("10.20.0.64", "10.20.0.192")))
    script = files["hosts/mds01/lustre/format-targets.sh"]
    assert f"format MGS /dev/mapper/mgt '' {mds01}:{mds02} mds02 --mgs\n".encode() in script
    assert f"format data-MDT0000 /dev/mapper/data-mdt0 {mgs} ".encode() in files["hosts/mds02/lustre/format-targets.sh"]


def test_lustre_over_ipoib(tmp_path: Path) -> None:
    """An InfiniBand fabric with an IPoIB address plan carries LNet: one NI per rail, the node's NIDs from the
    plan, the MGS at free addresses of rail 0's subnet (10.24.0.0/24: on the link of every rail-0 port)."""
    text = re.sub(r"    targets:.*\n(      .*\n)+", "", H100.read_text())  # the servers serve the storage fabric
    text = text.replace(
        "    mgs: [mds01, mds02]           # the MGS failover pair: their NIDs are their storage addresses in the "
        "plan\n    mountpoint: /lustre/ckpt\n    fabric: storage\n",
        "    mgs: [10.24.0.250@o2ib1, 10.24.0.251@o2ib1]\n    mountpoint: /lustre/ckpt\n    fabric: compute\n"
        "    network: o2ib1\n    nodes: [\"gpu{n:03d}\"]\n")
    assert "fabric: compute\n    network: o2ib1" in text
    spec = tmp_path / "ipoib.yaml"
    spec.write_text(text)
    topology = compile_spec(spec).topology
    conf = {a.path: a.content for a in lustre.render(topology)}["hosts/dgx-h100/lustre/lnet.conf"]
    nets = {n["net type"]: n for n in yaml.safe_load(conf)["net"]}
    rails = [nic.netdev for nic in topology.cluster.profiles["dgx-h100"].compute]
    assert [ni["interfaces"][0] for ni in nets["o2ib1"]["local NI(s)"]] == rails
    plan = topology.addresses["compute"]
    assert {s.rail for s in plan.hosts} == set(range(8))
