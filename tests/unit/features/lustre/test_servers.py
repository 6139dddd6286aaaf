"""Lustre servers: the example's targets and failover pairs in the model, the servers' lnet.conf against the
clients', the in-band warning, and format-targets.sh against stub mkfs.lustre/tunefs.lustre/blkid/lctl on a fake
root (formats once, then nothing; backs up without formatting; refuses another target or file system; rewrites
changed NIDs with tunefs.lustre unless mounted; refuses wrong LNet NIDs). The bad specs are tests/negative/lustre-*;
shellcheck runs in tests/external/lustre/test_lustre.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Severity, SpecError
from fabricgen.features.lustre import render as lustre
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES
from tests.helpers.fake_host import ScriptHost, write
from tests.helpers.lustre import LUSTRE_STUBS as STUBS

H100 = INVENTORIES / "h100-4su.yaml"
MDS01 = ("10.20.0.65@o2ib", "10.20.0.193@o2ib")
MDS02 = ("10.20.0.64@o2ib", "10.20.0.192@o2ib")
MGSNODE = f"{','.join(MDS01)}:{','.join(MDS02)}"


@pytest.fixture(scope="module")
def compiled() -> Compiled:
    return compile_spec(H100)


@pytest.fixture(scope="module")
def files(compiled: Compiled) -> dict[str, Artifact]:
    return {a.path: a for a in lustre.render(compiled.topology)}


def test_targets_and_pairs(compiled: Compiled) -> None:
    ckpt, data = compiled.cluster.lustre
    assert [(t.label(ckpt.fsname), t.device, t.servers) for t in ckpt.targets] == [
        ("MGS", "/dev/mapper/mgt", ("mds01", "mds02")),
        ("ckpt-MDT0000", "/dev/mapper/ckpt-mdt0", ("mds01", "mds02")),  # an even index: the first listed
        ("ckpt-OST0000", "/dev/mapper/ckpt-ost0", ("oss01", "oss02")),
        ("ckpt-OST0001", "/dev/mapper/ckpt-ost1", ("oss02", "oss01")),
        ("ckpt-OST0002", "/dev/mapper/ckpt-ost2", ("oss03", "oss04")),
        ("ckpt-OST0003", "/dev/mapper/ckpt-ost3", ("oss04", "oss03")),
    ]
    assert [t.label(data.fsname) for t in data.targets] == ["data-MDT0000", *(f"data-OST000{i}" for i in range(4))]
    assert data.targets[0].servers == ("mds02", "mds01"), "the spec lists mds02 first for the data MDT"
    assert ckpt.server_nids["mds01"] == MDS01 and ckpt.server_nids["mds02"] == MDS02
    assert ckpt.mgs == data.mgs == (MDS01, MDS02), "the mount's MGS is the MGT pair's planned NIDs"


def test_server_lnet_matches_the_clients(files: dict[str, Artifact]) -> None:
    server = yaml.safe_load(files["hosts/lustre-server/lustre/lnet.conf"].content)["net"]
    client = yaml.safe_load(files["hosts/dgx-h100/lustre/lnet.conf"].content)["net"]
    assert [n["net type"] for n in server] == [n["net type"] for n in client] == ["o2ib"]
    nis = server[0]["local NI(s)"]
    assert [ni["interfaces"][0] for ni in nis] == ["enp65s0f0np0", "enp65s0f1np1"], "both ports: multi-rail"
    for ni in nis:  # o2iblnd refuses a peer's larger queue depth before it takes the smaller: the same values
        assert ni["tunables"] == client[0]["local NI(s)"][0]["tunables"]
        assert ni["lnd tunables"] == client[0]["local NI(s)"][0]["lnd tunables"]
        assert ni["lnd tunables"]["tos"] == 106
    options, client_options = (files[f"hosts/{p}/lustre/fabricgen-ko2iblnd.conf"].content.decode()
                               for p in ("lustre-server", "dgx-h100"))
    assert options.split("options ko2iblnd ")[1] == client_options.split("options ko2iblnd ")[1]
    modprobe = files["hosts/lustre-server/lustre/lnet.modprobe.conf"].content
    assert b'networks="o2ib(enp65s0f0np0,enp65s0f1np1)"' in modprobe
    scripts = sorted(p for p in files if p.endswith("format-targets.sh"))
    assert scripts == [f"hosts/{n}/lustre/format-targets.sh" for n in
                       ("mds01", "mds02", "oss01", "oss02", "oss03", "oss04")]


INBAND_PORT = ("      inband:\n"
               "        - {dev: mlx5_2, netdev: enp129s0f0np0, port: Slot2P1, model: ConnectX-7-QSFP112-2P}\n")


def test_servers_without_inband_are_warned(compiled: Compiled, tmp_path: Path) -> None:
    """The example's servers have an in-band port (no warning); without it each server group is warned, at its
    node group."""
    assert not [f for f in compiled.findings if f.check == "lustre-server-unreachable"]
    text = H100.read_text()
    assert text.count(INBAND_PORT) == 1
    spec = tmp_path / "h100-4su.yaml"
    spec.write_text(text.replace(INBAND_PORT, ""))
    warned = [f for f in compile_spec(spec).findings if f.check == "lustre-server-unreachable"]
    assert [(f.severity, f.subject) for f in warned] == [(Severity.WARNING, "nodes[mds{n:02d}]"),
                                                         (Severity.WARNING, "nodes[oss{n:02d}]")]
    assert warned[0].position is not None and warned[0].position.line == spec.read_text().splitlines().index(
        "  - name: mds{n:02d}              # the MGS/MDS failover pair of both file systems") + 1


# --- format-targets.sh against stub tools on a fake root --------------------------------------------------------
DEVICES = ("mgt", "ckpt-mdt0", "data-mdt0")


def _host(tmp_path: Path, files: dict[str, Artifact], node: str, nids: tuple[str, ...]) -> ScriptHost:
    script = tmp_path / f"{node}.sh"
    script.write_bytes(files[f"hosts/{node}/lustre/format-targets.sh"].content)
    write(tmp_path / "nids", "\n".join(nids))
    write(tmp_path / "proc" / "mounts", "/dev/sda1 / ext4 rw 0 0")
    env = {**os.environ, "STUB_STATE": str(tmp_path), "LCTL": str(STUBS / "lctl"),
           "MKFS_LUSTRE": str(STUBS / "mkfs.lustre"), "TUNEFS_LUSTRE": str(STUBS / "tunefs.lustre"),
           "BLKID": str(STUBS / "blkid"), "PROCFS_ROOT": str(tmp_path), "DEVICE_ROOT": str(tmp_path), "NODE": node}
    return ScriptHost(tmp_path, script, env, calls_file="calls")


@pytest.fixture
def mds01(tmp_path: Path, files: dict[str, Artifact]) -> ScriptHost:
    for name in DEVICES:
        (tmp_path / "dev" / "mapper").mkdir(parents=True, exist_ok=True)
        (tmp_path / "dev" / "mapper" / name).write_bytes(b"")
    return _host(tmp_path, files, "mds01", MDS01)


def _changes(host: ScriptHost, since: int = 0) -> list[str]:
    return [c.replace(str(host.root), "") for c in host.calls[since:]
            if c.startswith("mkfs.lustre") or (c.startswith("tunefs.lustre") and "--dryrun" not in c)]


def test_formats_its_targets_once_then_nothing(mds01: ScriptHost, files: dict[str, Artifact]) -> None:
    dry = mds01.run("--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert _changes(mds01) == [] and "2 change(s) would be made" in dry.stdout
    # the command as one types it: a NID list is a plain word, its commas unescaped (review C2)
    assert (f"would format MGS on /dev/mapper/mgt: {STUBS}/mkfs.lustre --backfstype=ldiskfs --mgs "
            f"--servicenode={','.join(MDS01)} --servicenode={','.join(MDS02)} {mds01.root}/dev/mapper/mgt"
            ) in dry.stdout
    first = mds01.run()
    assert first.returncode == 0, first.stderr
    assert _changes(mds01) == [
        f"mkfs.lustre --backfstype=ldiskfs --mgs --servicenode={','.join(MDS01)} --servicenode={','.join(MDS02)} "
        "/dev/mapper/mgt",
        f"mkfs.lustre --backfstype=ldiskfs --mdt --fsname=ckpt --index=0 --mgsnode={','.join(MDS01)} "
        f"--mgsnode={','.join(MDS02)} --servicenode={','.join(MDS01)} --servicenode={','.join(MDS02)} "
        "/dev/mapper/ckpt-mdt0",
    ]
    assert "data-MDT0000 on /dev/mapper/data-mdt0: visible, not formatted yet (mds02 formats it)" in first.stdout
    before, snapshot = len(mds01.calls), mds01.snapshot()
    second = mds01.run()
    assert second.returncode == 0 and _changes(mds01, before) == [] and mds01.snapshot() == snapshot
    assert "nothing to change" in second.stdout
    # its partner formats the MDT it is first for, and finds the two mds01 formatted
    mds02 = _host(mds01.root, files, "mds02", MDS02)
    other = mds02.run()
    assert other.returncode == 0, other.stderr
    assert _changes(mds02, before) == [
        f"mkfs.lustre --backfstype=ldiskfs --mdt --fsname=data --index=0 --mgsnode={MGSNODE.split(':')[0]} "
        f"--mgsnode={MGSNODE.split(':')[1]} --servicenode={','.join(MDS02)} --servicenode={','.join(MDS01)} "
        "/dev/mapper/data-mdt0"]
    assert "MGS on /dev/mapper/mgt: visible, formatted by mds01" in other.stdout
    disk = (mds01.root / "dev/mapper/ckpt-mdt0").read_text()
    assert f"Parameters: mgsnode={MGSNODE} failover.node={MGSNODE}" in disk


def test_refuses_another_target_or_file_system(mds01: ScriptHost) -> None:
    (mds01.root / "dev/mapper/mgt").write_text("Target:     scratch-OST0007\nLustre FS:  scratch\nParameters:\n")
    (mds01.root / "dev/mapper/ckpt-mdt0").write_text("fstype: xfs\n")
    done = mds01.run()
    assert done.returncode == 1 and _changes(mds01) == []
    assert "MGS: /dev/mapper/mgt already holds Lustre target scratch-OST0007; refusing to reformat it" in done.stderr
    assert ("ckpt-MDT0000: /dev/mapper/ckpt-mdt0 holds a signature (xfs: a file system or partition table) and no "
            "Lustre target; if its data is not needed, wipefs -a clears it") in done.stderr
    assert "2 target(s) not set up" in done.stderr
    # a LUN holding only a partition table has no file system, and mke2fs -F would format over it (review D1)
    (mds01.root / "dev/mapper/ckpt-mdt0").write_text("pttype: gpt\n")
    partitioned = mds01.run()
    assert partitioned.returncode == 1 and _changes(mds01) == []
    assert "/dev/mapper/ckpt-mdt0 holds a signature (gpt: a file system or partition table)" in partitioned.stderr


def test_a_lustre_label_tunefs_cannot_read_is_never_called_wipeable(mds01: ScriptHost) -> None:
    """tunefs.lustre finds no target on a real one when its ldiskfs plugin is missing or e2fsprogs cannot open the
    file system (osd_is_lustre): blkid's label tells, and the refusal says to fix the tools, not to wipe (C4)."""
    (mds01.root / "dev/mapper/ckpt-mdt0").write_text("fstype: ext4\nlabel: ckpt:MDT0000\n")
    (mds01.root / "dev/mapper/data-mdt0").write_text("fstype: ext4\nlabel: data-MDT0000\n")
    done = mds01.run()
    assert done.returncode == 1 and _changes(mds01) == ["mkfs.lustre --backfstype=ldiskfs --mgs "
                                                        f"--servicenode={','.join(MDS01)} "
                                                        f"--servicenode={','.join(MDS02)} /dev/mapper/mgt"]
    assert ("ckpt-MDT0000: /dev/mapper/ckpt-mdt0 holds a file system (ext4) labelled ckpt:MDT0000, a Lustre target, "
            "which tunefs.lustre cannot read (tunefs.lustre FATAL: Device") in done.stderr
    assert "never wipe or reformat it; refusing to format it" in done.stderr
    assert "wipefs" not in done.stderr
    assert ("data-MDT0000: /dev/mapper/data-mdt0 holds a file system (ext4) labelled data-MDT0000, a Lustre target"
            in done.stderr and "mds02 will refuse to format it" in done.stderr), "the partner reports it too"


def test_a_failing_mkfs_is_reported_and_the_other_targets_still_run(mds01: ScriptHost) -> None:
    """A tool that fails is one target not set up (review D3), not the end of the script."""
    done = mds01.run(MKFS_LUSTRE="false")
    assert done.returncode == 1
    assert "MGS: mkfs.lustre failed on /dev/mapper/mgt" in done.stderr
    assert "ckpt-MDT0000: mkfs.lustre failed on /dev/mapper/ckpt-mdt0" in done.stderr
    assert "2 target(s) not set up" in done.stderr


def test_rewrites_changed_nids_unless_mounted(mds01: ScriptHost) -> None:
    assert mds01.run().returncode == 0
    disk = mds01.root / "dev/mapper/ckpt-mdt0"
    disk.write_text(disk.read_text().replace("10.20.0.192@o2ib", "10.20.255.2@o2ib"))
    write(mds01.root / "proc/mounts", f"{disk} /lustre/ckpt-mdt0 lustre rw 0 0")
    before = len(mds01.calls)
    mounted = mds01.run()
    assert mounted.returncode == 1 and "is mounted with other NIDs" in mounted.stderr
    assert _changes(mds01, before) == []
    write(mds01.root / "proc/mounts", "/dev/sda1 / ext4 rw 0 0")
    before = len(mds01.calls)
    done = mds01.run()
    assert done.returncode == 0, done.stderr
    assert _changes(mds01, before) == [
        f"tunefs.lustre --erase-param failover.node --erase-param mgsnode --mgsnode={','.join(MDS01)} "
        f"--mgsnode={','.join(MDS02)} --servicenode={','.join(MDS01)} --servicenode={','.join(MDS02)} "
        "/dev/mapper/ckpt-mdt0"]
    assert "registers any new failover NIDs at its next mount" in done.stdout, "never registered: no replace_nids"
    assert "replace_nids" not in done.stdout
    assert f"Parameters: mgsnode={MGSNODE} failover.node={MGSNODE}" in disk.read_text()
    assert "nothing to change" in mds01.run().stdout


def _set_params(disk: Path, params: str) -> None:
    disk.write_text("".join(f"Parameters: {params}\n" if line.startswith("Parameters:") else line
                            for line in disk.read_text().splitlines(keepends=True)))


def test_the_same_nids_in_another_order_are_no_change(mds01: ScriptHost) -> None:
    """mgsnode and failover.node are node sets as Lustre parses them (':' between nodes, ',' between one node's
    NIDs): a target formatted by hand or with the pair swapped needs no tunefs.lustre, which multi-mount protection
    would refuse while the partner serves it (review D2); a NID that moves to another node is a change."""
    assert mds01.run().returncode == 0
    disk = mds01.root / "dev/mapper/ckpt-mdt0"
    swapped = f"{MDS02[1]},{MDS02[0]}:{MDS01[1]},{MDS01[0]}"
    _set_params(disk, f"mgsnode={swapped} failover.node={swapped}")
    before = len(mds01.calls)
    same = mds01.run()
    assert same.returncode == 0 and _changes(mds01, before) == [], same.stderr
    assert "ckpt-MDT0000 on /dev/mapper/ckpt-mdt0: formatted, NIDs and parameters as planned" in same.stdout
    # the same four NIDs, one moved to the other node: not the planned nodes
    moved = f"{MDS01[0]}:{MDS01[1]},{','.join(MDS02)}"
    _set_params(disk, f"mgsnode={MGSNODE} failover.node={moved}")
    changed = mds01.run()
    assert changed.returncode == 0 and len(_changes(mds01, before)) == 1, changed.stderr
    assert "registers any new failover NIDs at its next mount; no writeconf is needed" in changed.stdout


def _registered(disk: Path) -> None:
    """The target as its first mount leaves it: the MGS registered it (tunefs.lustre shows no first_time)."""
    disk.write_text(disk.read_text().replace("Flags:      0x61\n              (MDT first_time update )",
                                             "Flags:      0x1\n              (MDT )"))
    assert "first_time" not in disk.read_text()


def test_a_removed_failover_nid_of_a_registered_target_names_replace_nids(mds01: ScriptHost,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The MGS cannot erase the failover NIDs of a registered target (mgs_write_log_add_failnid): the script prints
    the per-target lctl replace_nids (lctl-replace_nids(8)) with the planned NIDs and its preconditions, not a
    writeconf of the whole file system (review S-D1). A glob in a parameter is never expanded against the files of
    the working directory (C3: word splitting with pathname expansion turned 10.20.9.* into the file's name)."""
    assert mds01.run().returncode == 0
    disk = mds01.root / "dev/mapper/ckpt-mdt0"
    _registered(disk)
    monkeypatch.chdir(mds01.root)
    (mds01.root / f"failover.node={MGSNODE}:10.20.9.9@o2ib").write_text("")
    _set_params(disk, f"mgsnode={MGSNODE} failover.node={MGSNODE}:10.20.9.*")
    before = len(mds01.calls)
    done = mds01.run()
    assert done.returncode == 0, done.stderr
    assert _changes(mds01, before)[0].startswith("tunefs.lustre --erase-param failover.node")
    assert "ckpt-MDT0000: the MGS logs keep its removed failover NIDs (10.20.9.*)" in done.stdout
    assert ("unmount every client and every other target of the file systems this MGS serves, keep only the MGS "
            f"mounted, and run on the MGS: lctl replace_nids ckpt-MDT0000 {MGSNODE} (") in done.stdout
    assert "registers any new failover NIDs" not in done.stdout


def test_a_target_that_never_registered_gets_no_replace_nids(mds01: ScriptHost) -> None:
    """tunefs.lustre shows a target the MGS never registered as first_time (print_ldd; its label holds ':' until
    then): the MGS has no record of it, so a removed failover NID needs nothing (review S-D1). Nor is replace_nids
    offered for the MGT: it takes fsname-MDT/OST names only (mgs_parse_devname in lustre/mgs/mgs_llog.c)."""
    assert mds01.run().returncode == 0
    for name in ("ckpt-mdt0", "mgt"):
        disk = mds01.root / "dev/mapper" / name
        disk.write_text(disk.read_text().replace(f"failover.node={MGSNODE}", f"failover.node={MGSNODE}:10.20.9.9@o2ib"))
    assert "first_time" in (mds01.root / "dev/mapper/ckpt-mdt0").read_text()
    done = mds01.run()
    assert done.returncode == 0, done.stderr
    assert len(_changes(mds01)) == 4, "two formats, then the NIDs of both rewritten"
    assert "replace_nids" not in done.stdout and "removed failover NIDs" not in done.stdout
    assert "ckpt-MDT0000: the target uses its new MGS NIDs and registers any new failover NIDs" in done.stdout


def test_refuses_wrong_lnet_nids_missing_devices_and_other_nodes(mds01: ScriptHost) -> None:
    write(mds01.root / "nids", MDS01[0])
    done = mds01.run()
    assert done.returncode == 1 and f"NID {MDS01[1]} of mds01 is not configured" in done.stderr
    write(mds01.root / "nids", "\n".join((*MDS01, "10.99.0.7@tcp")))
    assert "LNet has NID 10.99.0.7@tcp, which the plan does not give mds01" in mds01.run().stderr
    write(mds01.root / "nids", "\n".join(MDS01))
    (mds01.root / "dev/mapper/data-mdt0").unlink()
    gone = mds01.run()
    assert gone.returncode == 1 and "mds01 cannot take over data-MDT0000 from mds02" in gone.stderr
    assert [c.split()[2] for c in _changes(mds01)] == ["--mgs", "--mdt"], "the other targets are still set up"
    assert "this script is for mds01, not mds02" in mds01.run(NODE="mds02").stderr


def test_an_added_device_never_moves_a_target(tmp_path: Path) -> None:
    """A formatted target's index and its first server are its own (review B1: positional indices renumbered every
    later group when a device joined an earlier one): a device added to the last group takes the next index and
    moves nothing; one added to an earlier group collides with the next group's range and is refused; several
    groups of a kind must each state first_index."""
    text = H100.read_text()
    last = "first_index: 2, devices: [/dev/mapper/ckpt-ost2, /dev/mapper/ckpt-ost3]"
    first = "first_index: 0, devices: [/dev/mapper/ckpt-ost0, /dev/mapper/ckpt-ost1]"
    assert text.count(last) == text.count(first) == 1
    before = compile_spec(H100).cluster.lustre[0].targets
    grown = tmp_path / "grown.yaml"
    grown.write_text(text.replace(last, last.replace("ckpt-ost3]", "ckpt-ost3, /dev/mapper/ckpt-ost4]")))
    after = compile_spec(grown).cluster.lustre[0].targets
    assert after[:len(before)] == before
    assert (after[-1].kind, after[-1].index, after[-1].servers) == ("ost", 4, ("oss03", "oss04"))
    clash = tmp_path / "clash.yaml"
    clash.write_text(text.replace(first, first.replace("ckpt-ost1]", "ckpt-ost1, /dev/mapper/ckpt-ost4]")))
    with pytest.raises(SpecError, match="OST0002 is already a target of ost group 0"):
        compile_spec(clash)
    unstated = tmp_path / "unstated.yaml"
    unstated.write_text(text.replace(last, last.replace("first_index: 2, ", "")))
    with pytest.raises(SpecError, match="ost group 1 of 2 states no first_index"):
        compile_spec(unstated)


def _tuned(tmp_path: Path, ckpt: str, data: str) -> Path:
    text = H100.read_text()
    for old, new in (("tuning: {profile: checkpoint}", ckpt),
                     ("tuning: {profile: dataset, statahead_max: 2048}", data)):
        assert text.count(old) == 1
        text = text.replace(old, new)
    spec = tmp_path / "h100.yaml"
    spec.write_text(text)
    return spec


def test_servers_may_set_their_own_ni_credits(tmp_path: Path) -> None:
    """tuning.servers sets the NI-wide credits and ntx of the servers only (review C5): a server's NI sends to every
    client; peer_credits and the per-connection values stay the clients', as o2iblnd negotiates them."""
    servers = "servers: {credits: 4096, ntx: 8192}"
    spec = _tuned(tmp_path, f"tuning: {{profile: checkpoint, {servers}}}",
                  f"tuning: {{profile: dataset, statahead_max: 2048, {servers}}}")
    files = {a.path: a for a in lustre.render(compile_spec(spec).topology)}
    server = yaml.safe_load(files["hosts/lustre-server/lustre/lnet.conf"].content)["net"][0]["local NI(s)"][0]
    client = yaml.safe_load(files["hosts/dgx-h100/lustre/lnet.conf"].content)["net"][0]["local NI(s)"][0]
    assert (server["tunables"]["credits"], server["lnd tunables"]["ntx"]) == (4096, 8192)
    assert (client["tunables"]["credits"], client["lnd tunables"]["ntx"]) == (1024, 4096), "clients unchanged"
    assert {k: v for k, v in server["tunables"].items() if k != "credits"} == {
        k: v for k, v in client["tunables"].items() if k != "credits"}
    options = files["hosts/lustre-server/lustre/fabricgen-ko2iblnd.conf"].content.decode()
    assert " credits=4096 " in options and " ntx=8192 " in options and " peer_credits=64 " in options
    assert " fmr_pool_size=2048 " in options, "ntx/4 of the servers' own ntx"
    assert "# credits, ntx, fmr_pool_size: the servers' own (tuning.servers)" in options
    assert "the servers' own" not in files["hosts/dgx-h100/lustre/fabricgen-ko2iblnd.conf"].content.decode()


def test_server_credits_are_checked(tmp_path: Path) -> None:
    """Below peer_credits o2iblnd would lower the servers' queue depth under the clients'; one MGS/OSS serving two
    file systems on one network runs one setting; ntx is o2iblnd's."""
    low = _tuned(tmp_path, "tuning: {profile: checkpoint, servers: {credits: 32, ntx: 0}}",
                 "tuning: {profile: dataset, statahead_max: 2048}")
    with pytest.raises(SpecError) as raised:
        compile_spec(low)
    report = str(raised.value)
    assert "lustre.checkpoints.tuning.servers.credits: server credits 32 are below peer_credits (64)" in report
    assert "lustre.checkpoints.tuning.servers.ntx: ntx 0 is out of range" in report
    assert "server mds01 would configure LNet network o2ib differently for checkpoints and datasets" in report


def test_target_mount_units_of_an_ha_less_site(files: dict[str, Artifact]) -> None:
    """Each server mounts the targets it formats at boot, MGT before MDTs before OSTs, each MDT and OST after
    lustre-wait-mgs (wanted, not required), with a start timeout of 3 obd_timeouts; its partner's targets have
    units without [Install] and noauto fstab lines (mounted only on failover). Mount points are flat under
    /srv/lustre, beneath no client mount."""
    base = "hosts/mds01/lustre/targets"
    units = sorted(p for p in files if p.startswith(base) and p.endswith(".mount"))
    assert units == [f"{base}/srv-lustre-ckpt_mdt0.mount", f"{base}/srv-lustre-data_mdt0.mount",
                     f"{base}/srv-lustre-mgt.mount"]
    mgt, mdt, partner = (files[f"{base}/{u}"].content.decode() for u in
                         ("srv-lustre-mgt.mount", "srv-lustre-ckpt_mdt0.mount", "srv-lustre-data_mdt0.mount"))
    assert "What=/dev/mapper/mgt\nWhere=/srv/lustre/mgt\nType=lustre\n" in mgt and "WantedBy=remote-fs.target" in mgt
    assert "TimeoutSec=300\n" in mgt and "lustre-wait-mgs" not in mgt.split("[Unit]")[1], "the MGT waits for nothing"
    assert "Requires=lnet.service\nWants=network-online.target lustre-wait-mgs-ckpt.service\n" in mdt, (
        "a registered target starts without the MGS: the wait is wanted, not required")
    assert ("After=lnet.service network-online.target srv-lustre-mgt.mount lustre-wait-mgs-ckpt.service\n" in mdt
            and "[Install]" in mdt and "TimeoutSec=300\n" in mdt)
    assert "\n[Install]\n" not in partner and "systemctl start srv-lustre-data_mdt0.mount" in partner
    assert "systemd does not retry a\n# mount unit that failed" in mdt
    wants = "x-systemd.requires=lnet.service,x-systemd.after=lustre-wait-mgs-ckpt.service"
    assert files[f"{base}/fstab"].content.decode().splitlines()[3:] == [
        "/dev/mapper/mgt /srv/lustre/mgt lustre _netdev,x-systemd.requires=lnet.service,"
        "x-systemd.mount-timeout=300 0 0",
        f"/dev/mapper/ckpt-mdt0 /srv/lustre/ckpt_mdt0 lustre _netdev,{wants},x-systemd.mount-timeout=300 0 0",
        f"/dev/mapper/data-mdt0 /srv/lustre/data_mdt0 lustre noauto,_netdev,{wants},x-systemd.mount-timeout=300 0 0"]
    oss02 = files["hosts/oss02/lustre/targets/fstab"].content.decode()
    assert "/dev/mapper/ckpt-ost1 /srv/lustre/ckpt_ost1 lustre _netdev," in oss02, "an odd index: its second server's"
    assert "/dev/mapper/ckpt-ost0 /srv/lustre/ckpt_ost0 lustre noauto," in oss02


def test_the_wait_for_the_mgs_pings_the_other_servers(files: dict[str, Artifact]) -> None:
    """An OSS waits for either MGS node; an MDS of the MGT pair for its partner's NIDs (its own answer as soon as
    its LNet runs) or its own MGT mounted, after that mount."""
    def exec_start(node: str) -> str:
        unit = files[f"hosts/{node}/lustre/targets/lustre-wait-mgs-ckpt.service"].content.decode()
        assert "Type=oneshot\nRemainAfterExit=yes\n" in unit and "TimeoutStartSec=" in unit
        assert unit.endswith("[Install]\nWantedBy=remote-fs.target\n"), "enabled itself: fstab only orders after it"
        return next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    assert exec_start("oss03") == ("ExecStart=/usr/local/sbin/lustre-wait-mgs --wait 600 --interval 5 "
                                   f"{' '.join(MDS01)} {' '.join(MDS02)}")
    assert exec_start("mds02") == ("ExecStart=/usr/local/sbin/lustre-wait-mgs --mounted /srv/lustre/mgt --wait 600 "
                                   f"--interval 5 {' '.join(MDS01)}")
    assert exec_start("mds01").endswith(f"--mounted /srv/lustre/mgt --wait 600 --interval 5 {' '.join(MDS02)}")
    mds01 = files["hosts/mds01/lustre/targets/lustre-wait-mgs-ckpt.service"].content.decode()
    assert "After=lnet.service network-online.target srv-lustre-mgt.mount\n" in mds01


def _wait(tmp_path: Path, files: dict[str, Artifact], *args: str, answering: str = "", mounts: str = ""
          ) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "lustre-wait-mgs"
    script.write_bytes(files["hosts/oss01/lustre/targets/lustre-wait-mgs.sh"].content)
    write(tmp_path / "ping", answering)
    write(tmp_path / "proc" / "mounts", mounts or "/dev/sda1 / ext4 rw 0 0")
    env = {**os.environ, "STUB_STATE": str(tmp_path), "LCTL": str(STUBS / "lctl"), "PROCFS_ROOT": str(tmp_path)}
    return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env=env, timeout=60)


def test_lustre_wait_mgs_against_stub_lctl(tmp_path: Path, files: dict[str, Artifact]) -> None:
    """The wait ends when a NID answers lctl ping or the MGT is mounted here, and fails after --wait otherwise."""
    nids = ("--wait", "1", "--interval", "1", MDS01[0], MDS02[0])
    found = _wait(tmp_path, files, *nids, answering=MDS02[0])
    assert found.returncode == 0 and f"MGS NID {MDS02[0]} answers lctl ping" in found.stdout, found.stderr
    assert (tmp_path / "calls").read_text().splitlines() == [f"lctl ping {MDS01[0]} 1", f"lctl ping {MDS02[0]} 1"]
    none = _wait(tmp_path, files, *nids)
    assert none.returncode == 1
    assert f"no MGS NID answered lctl ping within 1 s ({MDS01[0]} {MDS02[0]})" in none.stderr
    here = _wait(tmp_path, files, "--mounted", "/srv/lustre/mgt", *nids,
                 mounts="/dev/mapper/mgt /srv/lustre/mgt lustre ro,svname=MGS 0 0")
    assert here.returncode == 0 and "the MGT is mounted here at /srv/lustre/mgt" in here.stdout
    assert _wait(tmp_path, files, "--wait", "soon", MDS01[0]).returncode == 2
    assert _wait(tmp_path, files).returncode == 2, "nothing to wait for"


def test_a_client_mount_over_the_target_root_is_refused(tmp_path: Path) -> None:
    """A client mount point at or above /srv/lustre would put every target mount beneath it (the bad spec with its
    message is tests/negative/lustre-client-over-targets.yaml)."""
    text = H100.read_text()
    assert text.count("mountpoint: /lustre/ckpt") == 1
    spec = tmp_path / "h100.yaml"
    spec.write_text(text.replace("mountpoint: /lustre/ckpt", "mountpoint: /srv"))
    with pytest.raises(SpecError, match="mount point /srv overlaps /srv/lustre, where the servers mount their"):
        compile_spec(spec)


def test_target_params_and_mkfsoptions(tmp_path: Path) -> None:
    """A group's params go to mkfs.lustre --param and its mkfsoptions to --mkfsoptions; on a formatted target a
    value that differs is set with tunefs.lustre --param alone (its NIDs as planned: no NID rewrite)."""
    text = H100.read_text()
    group = "- {servers: [mds01, mds02], devices: [/dev/mapper/ckpt-mdt0]}"
    assert text.count(group) == 1
    spec = tmp_path / "h100.yaml"
    spec.write_text(text.replace(group, group[:-1] + ", params: [sys.timeout=40, failover.mode=failout], "
                                                      "mkfsoptions: '-E stride=32,stripe_width=256'}"))
    tuned = {a.path: a for a in lustre.render(compile_spec(spec).topology)}
    script = tuned["hosts/mds01/lustre/format-targets.sh"].content.decode()
    assert ("format ckpt-MDT0000 /dev/mapper/ckpt-mdt0 " in script and " --mdt --fsname=ckpt --index=0 "
            "--param=sys.timeout=40 --param=failover.mode=failout '--mkfsoptions=-E stride=32,stripe_width=256'\n"
            in script)
    host = _host(tmp_path, tuned, "mds01", MDS01)
    for name in DEVICES:
        write(tmp_path / "dev" / "mapper" / name, "")
    first = host.run()
    assert first.returncode == 0, first.stderr
    assert (" --param=sys.timeout=40 --param=failover.mode=failout --mkfsoptions=-E stride=32,stripe_width=256 "
            in _changes(host)[1])
    disk = tmp_path / "dev/mapper/ckpt-mdt0"
    assert "failover.node=" in disk.read_text() and " sys.timeout=40 failover.mode=failout" in disk.read_text()
    disk.write_text(disk.read_text().replace("sys.timeout=40", "sys.timeout=100"))
    before = len(host.calls)
    changed = host.run()
    assert changed.returncode == 0, changed.stderr
    assert _changes(host, before) == ["tunefs.lustre --param=sys.timeout=40 /dev/mapper/ckpt-mdt0"]
    assert "registers its new parameters with the MGS at its next mount" in changed.stdout
    assert "nothing to change" in host.run().stdout
