"""The cloud instances' first boot (user-data.sh as the Pulumi program fills it): on AWS the Lustre client, LNet
over EFA and FSx mounts; on Alibaba Cloud the CPFS-NFS client and CPFS mounts.

The script comes out of the emitted project run under Pulumi's mocks (the launch template's or the instances'
user data), then runs against a fake root with stub tools (tests/data/fake-cloud-host) that record each call.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, require_tool
from tests.helpers.cloud import ALI_SPEC, AWS_SPEC, emit
from tests.helpers.fake_host import ScriptHost, write
from tests.helpers.pulumi_mocks import run

STUBS = REPO / "tests" / "data" / "fake-cloud-host"
SOURCE = "fsx-scratch.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh"  # the mocks' FSx DNS name and mount name
UNIT = "fabricgen-fsx-efa-lnet.service"
# Real EFA device names: their name order is what AWS's selection (ls -1 /sys/class/infiniband) goes by.
P5_DEVICES = [f"rdmap{bus}s0" for bus in (*range(79, 100), *range(100, 111))]

pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_aws"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_alicloud")]
CPFS_SOURCE = "cpfs-datasets-id.cn-wulanchabu.cpfs.aliyuncs.com:/share"  # the mocks' export domain, root export
DRIVER = "580.65.06"  # the catalog's pinned NVIDIA driver (features/cloud/instances.yaml alicloud.gpu_driver)
CPFS_OPTIONS = "vers=3,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport"


def user_data(tmp_path: Path, edit: dict[str, str] | None = None) -> str:
    mocks = run(emit(AWS_SPEC, tmp_path, edit))
    return base64.b64decode(mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs["userData"]).decode()


def cpfs_user_data(tmp_path: Path) -> str:
    mocks = run(emit(ALI_SPEC, tmp_path))
    return base64.b64decode(mocks.of_type("alicloud:ecs/instance:Instance")[0].inputs["userData"]).decode()


def host(tmp_path: Path, script: str, os_id: str = "ubuntu", modules: tuple[str, ...] = ("kefalnd",),
         devices: list[str] = P5_DEVICES, efa_driver: str = "2.13.0") -> ScriptHost:
    root = tmp_path / "root"
    write(root / "etc" / "os-release", f"ID={os_id}\nVERSION_CODENAME=jammy")
    for device in devices:
        (root / "sys" / "class" / "infiniband" / device).mkdir(parents=True)
    (root / "state").mkdir()
    (root / "state" / "modules").write_text("".join(f"{m}\n" for m in modules))
    if efa_driver:
        (root / "state" / "efa-version").write_text(efa_driver + "\n")
    path = tmp_path / "user-data.sh"
    path.write_text(script)
    env = {**os.environ, "PATH": f"{root / 'state' / 'bin'}:{STUBS}:{os.environ['PATH']}",
           "USER_DATA_ROOT": str(root),
           "STUB_STATE": str(root / "state")}
    return ScriptHost(root, path, env)


def test_user_data_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    (tmp_path / "aws").mkdir()
    (tmp_path / "ali").mkdir()
    scripts = [tmp_path / "fsx.sh", tmp_path / "cpfs.sh"]
    scripts[0].write_text(user_data(tmp_path / "aws"))
    scripts[1].write_text(cpfs_user_data(tmp_path / "ali"))
    done = subprocess.run([shellcheck, "-S", "style", *map(str, scripts), str(STUBS / "tool")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout


def test_program_fills_the_file_systems(tmp_path: Path) -> None:
    script = user_data(tmp_path)
    assert f"\nFILESYSTEMS=({SOURCE} /fsx)\n" in script
    assert "EFA_LNET_INTERFACES=8\nEFA_LNET_STRIDE=4\n" in script  # p5: 8 of 32 EFA devices, one in 4


def test_first_boot_installs_the_client_the_lnet_service_and_mounts(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path), modules=("kefalnd",))
    done = machine.run()
    assert done.returncode == 0, done.stderr
    calls = machine.calls
    assert "apt-get install -y lustre-client-modules-6.8.0-1015-aws" in calls
    repo = (machine.root / "etc/apt/sources.list.d/fsxlustreclientrepo.list").read_text()
    assert repo == ("deb [signed-by=/usr/share/keyrings/fsx-ubuntu-public-key.gpg] "
                    "https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu jammy main\n")
    assert (machine.root / "usr/share/keyrings/fsx-ubuntu-public-key.gpg").exists()
    installed = machine.root / "usr/local/sbin/fabricgen-fsx-client"
    assert installed.read_text() == machine.script.read_text() and os.access(installed, os.X_OK)
    unit = (machine.root / "etc/systemd/system" / UNIT).read_text()
    assert "ExecStart=/usr/local/sbin/fabricgen-fsx-client lnet\n" in unit and "Before=remote-fs-pre.target" in unit
    reload = calls.index("systemctl daemon-reload")
    assert calls[reload + 1:reload + 3] == [f"systemctl enable {UNIT}", f"systemctl start {UNIT}"]
    assert (machine.root / "etc/fstab").read_text() == (
        f"{SOURCE} /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount,"
        f"x-systemd.requires={UNIT},x-systemd.after={UNIT} 0 0\n")
    assert calls[-1] == f"mount -t lustre -o relatime,flock {SOURCE} {machine.root}/fsx"
    assert not [c for c in calls if c.startswith("lnetctl")], "LNet is the service's job, not first boot's"


@pytest.mark.parametrize("driver", ["2.10.0g", ""])
def test_an_old_or_missing_efa_driver_is_updated_before_lnet(tmp_path: Path, driver: str) -> None:
    """FSx for Lustre EFA clients need the EFA driver 2.12.1 or later (AWS's EKS FSx EFA guide checks modinfo's
    version): an older one is replaced by AWS's EFA installer and reloaded before the LNet service starts."""
    machine = host(tmp_path, user_data(tmp_path), efa_driver=driver)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    calls = machine.calls
    assert "curl -fsSL -o" in next(c for c in calls if "aws-efa-installer-latest.tar.gz" in c)
    installer = calls.index("efa_installer.sh -y")
    assert calls[installer + 1:installer + 4] == ["modinfo -F version efa", "modprobe -r efa", "modprobe efa"]
    assert installer < calls.index(f"systemctl start {UNIT}")
    assert "is older than 2.12.1, which FSx for Lustre EFA clients need" in done.stderr


def test_an_efa_driver_the_installer_cannot_update_mounts_over_tcp(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path).replace("EFA_MIN_DRIVER=2.12.1", "EFA_MIN_DRIVER=9.0.0"))
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "the EFA driver is still older than 9.0.0: the file systems mount over TCP" in done.stderr
    assert not [c for c in machine.calls if c.startswith("systemctl")]
    assert "x-systemd.requires" not in (machine.root / "etc/fstab").read_text()


def test_a_current_efa_driver_is_left_alone(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path), efa_driver="2.12.1")
    assert machine.run().returncode == 0
    assert not [c for c in machine.calls if "efa-installer" in c or c.startswith("modprobe -r")]


def test_first_boot_again_changes_nothing(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path))
    assert machine.run().returncode == 0
    before, calls = machine.snapshot(), len(machine.calls)
    assert machine.run().returncode == 0
    assert machine.snapshot() == before  # no file rewritten: the same content and modification time
    again = machine.calls[calls:]
    assert not [c for c in again if c.startswith(("apt-get", "dnf", "mount ", "systemctl daemon-reload",
                                                  "systemctl enable"))]


def test_lnet_takes_one_efa_device_in_four_then_is_idempotent(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path))
    done = machine.run("lnet")
    assert done.returncode == 0, done.stderr
    chosen = sorted(P5_DEVICES)[::4]  # AWS: ls -1 /sys/class/infiniband | awk 'NR % 4 == 1'
    assert [c for c in machine.calls if not c.startswith(("lnetctl net show", "lnetctl net del"))] == [
        "ip -o -4 route show to default",
        "modprobe lnet",
        "modprobe kefalnd ipif_name=ens32",
        "modprobe ksocklnd",
        "lnetctl lnet configure",
        "lnetctl net add --net tcp --if ens32",
        *[f"lnetctl net add --net efa --if {device} --peer-credits 32" for device in chosen],
        "lnetctl set discovery 1",
        "lnetctl udsp add --src efa --priority 0",
        "modprobe lustre",
    ]
    assert len(chosen) == 8
    calls = len(machine.calls)
    assert machine.run("lnet").returncode == 0
    assert machine.calls[calls:] == ["lnetctl net show --net efa"]


def test_lnet_reads_a_long_listing_whole(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path))
    assert machine.run("lnet").returncode == 0
    (machine.root / "state" / "verbose-lnetctl").touch()
    calls = len(machine.calls)
    done = machine.run("lnet")
    assert done.returncode == 0, done.stderr
    assert machine.calls[calls:] == ["lnetctl net show --net efa"]


def test_a_failing_lnet_service_leaves_tcp_mounts(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path))
    (machine.root / "state" / "unit-fails").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert f"{UNIT} failed (see journalctl -u {UNIT}): the file systems mount over TCP" in done.stderr
    assert (machine.root / "etc/fstab").read_text() == (
        f"{SOURCE} /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0\n")
    assert machine.calls[-1] == f"mount -t lustre -o relatime,flock {SOURCE} {machine.root}/fsx"


def test_fewer_efa_devices_than_lnet_wants(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path, {"efa: {interfaces: max}": "efa: {interfaces: 4}"}),
                   devices=P5_DEVICES[:4])
    assert "EFA_LNET_INTERFACES=4\nEFA_LNET_STRIDE=1\n" in machine.script.read_text()
    assert machine.run("lnet").returncode == 0
    assert [c.split()[-3] for c in machine.calls if c.startswith("lnetctl net add --net efa")] == P5_DEVICES[:4]


def test_without_the_efa_lnd_mounts_over_tcp(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path), os_id="amzn", modules=())
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "dnf install -y lustre-client" in machine.calls
    assert "no EFA LND (kefalnd) or no EFA device: the file systems mount over TCP" in done.stderr
    assert not (machine.root / "etc/systemd/system" / UNIT).exists()
    assert (machine.root / "etc/fstab").read_text() == (
        f"{SOURCE} /fsx lustre defaults,relatime,flock,_netdev,x-systemd.automount 0 0\n")


def test_nitro_v3_instances_reach_fsx_over_tcp(tmp_path: Path) -> None:
    script = user_data(tmp_path, {"type: p5.48xlarge": "type: p4d.24xlarge"})
    assert "EFA_LNET_INTERFACES=0\n" in script and "gives LNet" not in script
    machine = host(tmp_path, script, modules=("lustre", "kefalnd"))
    assert machine.run().returncode == 0
    assert not [c for c in machine.calls if c.startswith(("systemctl", "apt-get"))]
    assert "x-systemd.requires" not in (machine.root / "etc/fstab").read_text()


def test_unknown_os_fails_with_a_reason(tmp_path: Path) -> None:
    machine = host(tmp_path, user_data(tmp_path), os_id="rocky", modules=())
    done = machine.run()
    assert done.returncode == 1
    assert "no Lustre client install is known for rocky" in done.stderr
    assert not (machine.root / "etc/fstab").exists()


# --- Alibaba Cloud: CPFS over NFS ------------------------------------------------------------------------------

def ali_host(tmp_path: Path, script: str, os_id: str = "alinux", erdma: bool = True, driver: str = DRIVER,
             fabric_manager: str = DRIVER) -> ScriptHost:
    """An ECS instance with two ERIs (eth0, eth1) at MTU 1500; with ``erdma`` the eRDMA stack is installed, with
    ``driver`` (a version) the NVIDIA driver, with ``fabric_manager`` NVIDIA Fabric Manager."""
    machine = host(tmp_path, script, os_id=os_id, modules=("erdma",) if erdma else (), devices=[])
    if os_id == "alinux":
        write(machine.root / "etc" / "os-release", "ID=alinux\nVERSION_ID=3")  # Alibaba Cloud Linux 3
    for name, version in (("driver-version", driver), ("fm-version", fabric_manager)):
        if version:
            write(machine.root / "state" / name, version)
    for eth in ("eth0", "eth1"):
        write(machine.root / "sys" / "class" / "net" / eth / "mtu", "1500")
        (machine.root / "sys" / "class" / "net" / eth / "device").mkdir()
    write(machine.root / "sys" / "class" / "net" / "lo" / "mtu", "65536")  # virtual: no device, left alone
    if erdma:
        write(machine.root / "state" / "bin" / "ibv_devinfo", "#!/bin/sh")
        (machine.root / "state" / "bin" / "ibv_devinfo").chmod(0o755)
        write(machine.root / "var" / "lib" / "fabricgen" / "erdma-installed", "env_setup.sh --egs")
    return machine


def cpfs_calls(machine: ScriptHost) -> list[str]:
    return [c for c in machine.calls if c.split()[0] in ("curl", "yum", "apt-get", "mountpoint", "mount")]


def test_erdma_stack_and_eri_mtu_at_first_boot(tmp_path: Path) -> None:
    """Without the eRDMA stack, Alibaba's installer (env_setup.sh --egs) runs; every ERI gets Alibaba's MTU (1400
    without jumbo frames) now and, through the installed service, at every boot; a second run changes nothing."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), erdma=False)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "curl -fsSL -o" in next(c for c in machine.calls if c.endswith("/erdma/env_setup.sh"))
    assert "env_setup.sh --egs" in machine.calls
    net = machine.root / "sys" / "class" / "net"
    assert [(net / e / "mtu").read_text() for e in ("eth0", "eth1", "lo")] == ["1400\n", "1400\n", "65536\n"]
    unit = (machine.root / "etc/systemd/system/fabricgen-eri-mtu.service").read_text()
    assert "ExecStart=/usr/local/sbin/fabricgen-erdma-node mtu\n" in unit
    assert "systemctl enable fabricgen-eri-mtu.service" in machine.calls
    rule = (machine.root / "etc/udev/rules.d/70-fabricgen-eri-mtu.rules").read_text()
    assert 'ACTION=="add", SUBSYSTEM=="net", KERNEL!="lo", TEST=="device", ATTR{mtu}="1400"\n' in rule
    calls = len(machine.calls)
    assert machine.run().returncode == 0
    assert not [c for c in machine.calls[calls:] if c.startswith(("ip link", "env_setup", "curl"))]


def test_jumbo_frames_take_mtu_8500(tmp_path: Path) -> None:
    jumbo = {"  eri: {interfaces: max}\n": "  eri: {interfaces: max, jumbo_frames: true}\n"}
    mocks = run(emit(ALI_SPEC, tmp_path, jumbo))
    instance = mocks.of_type("alicloud:ecs/instance:Instance")[0].inputs
    assert instance["enableJumboFrame"] is True
    assert (instance["systemDiskSize"], instance["systemDiskCategory"]) == (200, "cloud_essd")
    script = base64.b64decode(instance["userData"]).decode()
    machine = ali_host(tmp_path / "host", script)
    assert machine.run().returncode == 0
    assert (machine.root / "sys/class/net/eth0/mtu").read_text() == "8500\n"


def test_cpfs_first_boot_installs_the_client_and_mounts_once(tmp_path: Path) -> None:
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path))
    assert f"\nFILESYSTEMS=({CPFS_SOURCE} /cpfs)\n" in machine.script.read_text()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    package = "aliyun-alinas-utils-latest.al.noarch.rpm"
    assert cpfs_calls(machine) == [
        f"curl -fsSL -o /tmp/{package} https://cpfs-hangzhou-nfs-client.oss-cn-hangzhou.aliyuncs.com/{package}",
        f"yum install -y /tmp/{package}",
        f"mountpoint -q {machine.root}/cpfs",
        f"mount -t cpfs-nfs -o {CPFS_OPTIONS} {CPFS_SOURCE} {machine.root}/cpfs",
    ]
    assert (machine.root / "etc/fstab").read_text() == f"{CPFS_SOURCE} /cpfs cpfs-nfs {CPFS_OPTIONS},_netdev 0 0\n"
    calls = len(machine.calls)
    assert machine.run().returncode == 0
    again = [c for c in machine.calls[calls:] if c.split()[0] in ("curl", "yum", "apt-get", "mountpoint", "mount")]
    assert again == [f"mountpoint -q {machine.root}/cpfs"]  # installed and mounted: nothing to do
    assert (machine.root / "etc/fstab").read_text().count(CPFS_SOURCE) == 1


def test_cpfs_client_on_ubuntu(tmp_path: Path) -> None:
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), os_id="ubuntu")
    assert machine.run().returncode == 0
    assert cpfs_calls(machine)[:3] == [
        "curl -fsSL -o /tmp/aliyun-alinas-utils-latest.deb "
        "https://cpfs-hangzhou-nfs-client.oss-cn-hangzhou.aliyuncs.com/aliyun-alinas-utils-latest.deb",
        "apt-get update", "apt-get install -y /tmp/aliyun-alinas-utils-latest.deb"]


def test_cpfs_unknown_os_fails_with_a_reason(tmp_path: Path) -> None:
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), os_id="arch")
    done = machine.run()
    assert done.returncode == 1 and "no CPFS-NFS client install is known for arch" in done.stderr
    assert not [c for c in machine.calls if c.startswith("mount")]


def gpu_calls(machine: ScriptHost) -> list[str]:
    return [c for c in machine.calls if c.split()[0] in ("curl", "yum", "apt-get", "driver.run")
            or (c.startswith("systemctl") and "fabricmanager" in c)]


def test_first_boot_installs_the_pinned_driver_and_its_fabric_manager(tmp_path: Path) -> None:
    """ebmgn8v (HGX H20, NVSwitch) on a plain Alibaba Cloud Linux image: the pinned driver by NVIDIA's runfile (open
    kernel modules), then Fabric Manager of exactly that version, enabled and started; a second boot changes
    nothing."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), driver="", fabric_manager="")
    done = machine.run()
    assert done.returncode == 0, done.stderr
    run_file = f"NVIDIA-Linux-x86_64-{DRIVER}.run"
    assert gpu_calls(machine)[:6] == [
        "yum install -y kernel-devel-6.8.0-1015-aws gcc make",
        "yum install -y dkms",  # the runfile registers the modules with DKMS: rebuilt for every later kernel
        next(c for c in machine.calls if c.endswith(f"https://us.download.nvidia.com/tesla/{DRIVER}/{run_file}")),
        "driver.run --silent -m=kernel-open --dkms",
        # the RPM by its URL: NVIDIA's RHEL 8 repository holds it in a dnf module stream, which dnf filters out of
        # "yum install nvidia-fabric-manager-<version>" unless that stream is enabled
        "yum install -y https://developer.download.nvidia.com/compute/cuda/repos/rhel8/x86_64/"
        f"nvidia-fabric-manager-{DRIVER}-1.x86_64.rpm",
        "systemctl enable nvidia-fabricmanager.service",
    ]
    assert "systemctl start nvidia-fabricmanager.service" in machine.calls
    calls = len(machine.calls)
    assert machine.run().returncode == 0
    assert [c for c in gpu_calls(machine)[calls:] if "systemctl" not in c and "alinas" not in c] == []


def test_fabric_manager_follows_the_image_driver(tmp_path: Path) -> None:
    """An image with its own driver keeps it; Fabric Manager must be that driver's version, not the pinned one
    (it refuses to start on any other); on Ubuntu from NVIDIA's CUDA apt repository."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), os_id="ubuntu", driver="570.172.08", fabric_manager="")
    write(machine.root / "etc" / "os-release", "ID=ubuntu\nVERSION_ID=22.04")
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert not [c for c in machine.calls if "driver.run" in c or "NVIDIA-Linux" in c]
    assert "apt-get install -y nvidia-fabricmanager-570=570.172.08-1" in machine.calls
    assert any(c.endswith("/cuda/repos/ubuntu2204/x86_64/cuda-keyring_1.1-1_all.deb") for c in machine.calls)


def test_first_boot_fails_when_fabric_manager_does_not_start(tmp_path: Path) -> None:
    """Without Fabric Manager CUDA cannot start on an NVSwitch board: first boot exits non-zero and says why,
    instead of leaving a node that fails every NCCL job."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path))
    (machine.root / "state" / "unit-fails").touch()
    done = machine.run()
    assert done.returncode == 1
    assert "nvidia-fabricmanager did not start" in done.stderr


def test_pcie_gpu_types_get_the_driver_without_fabric_manager(tmp_path: Path) -> None:
    """ebmgn8is (L20, PCIe, no NVSwitch): the driver only."""
    mocks = run(emit(ALI_SPEC, tmp_path, {"ecs.ebmgn8v.48xlarge": "ecs.ebmgn8is.32xlarge"}))
    script = base64.b64decode(mocks.of_type("alicloud:ecs/instance:Instance")[0].inputs["userData"]).decode()
    machine = ali_host(tmp_path / "host", script, driver="", fabric_manager="")
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "driver.run --silent -m=kernel-open --dkms" in machine.calls
    assert not [c for c in machine.calls if "fabric-manager" in c or "fabricmanager" in c]


def test_in_tree_erdma_driver_still_gets_alibabas_stack(tmp_path: Path) -> None:
    """Alibaba Cloud Linux ships the in-tree erdma module, and rdma-core's ibv_devinfo may be there too: neither is
    Alibaba's eRDMA stack for GPU instances, so the installer runs once (recorded) and not again."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path))
    (machine.root / "var/lib/fabricgen/erdma-installed").unlink()  # in-tree module and ibv_devinfo, no installer run
    assert machine.run().returncode == 0
    assert machine.calls.count("env_setup.sh --egs") == 1
    assert (machine.root / "var/lib/fabricgen/erdma-installed").exists()
    assert machine.run().returncode == 0
    assert machine.calls.count("env_setup.sh --egs") == 1


@pytest.mark.parametrize(("release", "repo"), [("ID=rhel\nVERSION_ID=9.4", "rhel9"), ("ID=alinux\nVERSION_ID=4", "")])
def test_fabric_manager_comes_from_the_os_releases_cuda_repository(tmp_path: Path, release: str, repo: str) -> None:
    """The CUDA repository follows the RHEL major (rhel8 was used for every RHEL-family OS); a release with none
    known fails first boot with the reason instead of installing an el8 package."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), fabric_manager="")
    write(machine.root / "etc" / "os-release", release)
    done = machine.run()
    installs = [c for c in machine.calls if "nvidia-fabric-manager" in c]
    if repo:
        assert done.returncode == 0, done.stderr
        assert installs == ["yum install -y https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/"
                            f"nvidia-fabric-manager-{DRIVER}-1.x86_64.rpm"]
    else:
        assert done.returncode == 1 and installs == []
        assert "no NVIDIA CUDA repository is known for alinux 4" in done.stderr


def test_nouveau_is_blacklisted_and_unloaded_before_the_runfile(tmp_path: Path) -> None:
    """NVIDIA's runfile refuses to install while nouveau is loaded: the blacklist goes to modprobe.d and the
    initramfs, nouveau is unloaded, then the runfile runs; a second boot changes nothing."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), driver="", fabric_manager="")
    (machine.root / "sys" / "module" / "nouveau").mkdir(parents=True)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    conf = machine.root / "etc" / "modprobe.d" / "blacklist-nouveau.conf"
    assert conf.read_text() == "blacklist nouveau\noptions nouveau modeset=0\n"
    order = ["dracut -f", "modprobe -r nouveau", "driver.run --silent -m=kernel-open --dkms"]
    assert [c for c in machine.calls if c in order] == order
    calls = len(machine.calls)
    assert machine.run().returncode == 0
    assert "dracut -f" not in machine.calls[calls:]


def test_a_busy_nouveau_reboots_and_first_boot_runs_again(tmp_path: Path) -> None:
    """nouveau in use cannot be unloaded: first boot installs itself as a one-shot unit, reboots (no runfile run to
    fail), and after the reboot (nouveau blacklisted, not loaded) installs the driver and removes the unit."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), driver="", fabric_manager="")
    (machine.root / "sys" / "module" / "nouveau").mkdir(parents=True)
    (machine.root / "state" / "nouveau-busy").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "nouveau is loaded and in use: rebooting" in done.stderr
    assert "driver.run --silent -m=kernel-open --dkms" not in machine.calls
    assert machine.calls[-2:] == ["systemctl enable fabricgen-first-boot.service", "systemctl reboot"]
    unit = machine.root / "etc" / "systemd" / "system" / "fabricgen-first-boot.service"
    assert "ExecStart=/usr/local/sbin/fabricgen-erdma-node first-boot\n" in unit.read_text()
    installed = machine.root / "usr" / "local" / "sbin" / "fabricgen-erdma-node"
    assert installed.read_text() == machine.script.read_text()
    (machine.root / "sys" / "module" / "nouveau").rmdir()  # the reboot, with nouveau blacklisted
    (machine.root / "state" / "nouveau-busy").unlink()
    again = subprocess.run([str(installed), "first-boot"], env=machine.env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "driver.run --silent -m=kernel-open --dkms" in machine.calls
    assert not unit.exists() and "systemctl disable fabricgen-first-boot.service" in machine.calls


@pytest.mark.parametrize(("kernel", "open_module", "loaded"), [
    ("5.10.134-16.3.al8.x86_64", True, True),  # Alibaba Cloud Linux 3: no DMA-BUF before 5.12
    ("6.8.0-1015-aws", False, True),  # the proprietary module has no DMA-BUF export
    ("6.8.0-1015-aws", True, False)])
def test_nvidia_peermem_where_gpudirect_has_no_dma_buf(tmp_path: Path, kernel: str, open_module: bool,
                                                       loaded: bool) -> None:
    """GPUDirect RDMA: nvidia_peermem now and at every boot (modules-load.d) unless the driver's open module on
    Linux 5.12+ gives NCCL DMA-BUF; without either NCCL silently stages through host memory."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path))
    write(machine.root / "state" / "uname-r", kernel)
    if open_module:
        write(machine.root / "proc" / "driver" / "nvidia" / "version",
              f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {DRIVER}  Release Build")
    assert machine.run().returncode == 0
    conf = machine.root / "etc" / "modules-load.d" / "nvidia-peermem.conf"
    assert conf.exists() is loaded and ("modprobe nvidia_peermem" in machine.calls) is loaded
    if loaded:
        assert conf.read_text() == "nvidia_peermem\n"


def test_nvidia_peermem_that_cannot_load_gets_no_modules_load_entry(tmp_path: Path) -> None:
    """A kernel without the peer-memory API (upstream ib_core, not MOFED): nvidia_peermem's init returns EINVAL.
    First boot goes on, and writes no modules-load.d entry, which would fail systemd-modules-load at every boot."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path))
    write(machine.root / "state" / "uname-r", "5.10.134-16.3.al8.x86_64")
    (machine.root / "state" / "no-peer-memory").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "modprobe nvidia_peermem" in machine.calls
    assert "nvidia_peermem did not load: no GPUDirect RDMA on Linux 5.10.134-16.3.al8.x86_64" in done.stderr
    assert not (machine.root / "etc" / "modules-load.d" / "nvidia-peermem.conf").exists()


def test_without_dkms_the_driver_is_built_once_and_first_boot_says_so(tmp_path: Path) -> None:
    """A RHEL-family image whose repositories have no dkms: the runfile builds for the running kernel only, and the
    log says a kernel update leaves the node without a driver (the driver is still installed: first boot goes on)."""
    machine = ali_host(tmp_path, cpfs_user_data(tmp_path), driver="", fabric_manager="")
    (machine.root / "state" / "no-dkms").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert "driver.run --silent -m=kernel-open" in machine.calls
    assert "no dkms package: the driver is built for kernel 6.8.0-1015-aws only" in done.stderr
