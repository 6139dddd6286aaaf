"""The fake DGX H100 that sriov-setup.sh runs against (tests/unit/features/sriov, tests/external/sriov): sysfs with
the PFs and their VF netdevs, firmware state behind stub mstconfig, VF state behind stub ip."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fabricgen.core.artifacts import Artifact
from fabricgen.model.topology import Topology
from tests.conftest import REPO
from tests.helpers.fake_host import ScriptHost, write

SRIOV_STUBS = REPO / "tests" / "data" / "fake-sriov"
NODE = "gpu002"  # the second node: its VF addresses carry node index 1
IB_PFS = ("ibp24s0", "ibp64s0", "ibp79s0", "ibp94s0", "ibp154s0", "ibp192s0", "ibp206s0", "ibp220s0")
ETH_PFS = ("enp170s0f0np0", "enp41s0f0np0")
READ_ONLY = ("ip link show dev ", "ip -o link show dev ", "mstconfig -d ", "rdma system show", "udevadm settle ")


class FakeHost(ScriptHost):
    """The fake host of sriov-setup.sh: its changing calls, a PF's device directory, a VF's stub state."""

    def changing_calls(self) -> list[str]:
        return [c for c in self.calls if not c.startswith(READ_ONLY) or " -y set " in c]

    def pf(self, netdev: str) -> Path:
        return (self.root / "sys" / "class" / "net" / netdev / "device").resolve()

    def vf(self, pf: str, vf: int) -> Path:
        return self.root / "state" / pf / f"vf{vf}"


def fake_host(tmp_path: Path, artifacts: dict[str, Artifact], topology: Topology) -> FakeHost:
    """A DGX H100 after boot: firmware ready (SR-IOV on, 8 VFs, link types as planned), no VFs except 4 on the
    first IB port, every VF netdev the kernel would create present, zero GUIDs, Ethernet VFs with spoof check off
    and trust on, MTU 1500."""
    profile = topology.cluster.profiles["dgx-h100"]
    ports = {n.netdev: n for n in (*profile.compute, *profile.storage)}
    sysfs = tmp_path / "sys"
    for pf, nic in ports.items():
        device = sysfs / "devices" / "pci0000:00" / nic.pci
        write(device / "sriov_totalvfs", "16")
        write(device / "sriov_numvfs", "4" if pf == IB_PFS[0] else "0")
        (sysfs / "class" / "net" / pf).mkdir(parents=True)
        (sysfs / "class" / "net" / pf / "device").symlink_to(device)
        fw = tmp_path / "state" / "fw" / nic.pci
        write(fw / "SRIOV_EN", "True(1)")
        write(fw / "NUM_OF_VFS", "8")
        write(fw / f"LINK_TYPE_P{int(nic.pci[-1]) + 1}", "IB(1)" if pf in IB_PFS else "ETH(2)")
        write(tmp_path / "state" / pf / "mtu", "4092" if pf in IB_PFS else "9000")
        for vf in range(8):
            bus = int(nic.pci[5:7], 16)
            vf_bdf = f"0000:{bus + 1:02x}:00.{vf}"
            vf_dir = sysfs / "devices" / "pci0000:00" / vf_bdf
            (vf_dir / "net" / f"{pf[:10]}v{vf}").mkdir(parents=True)
            (device / f"virtfn{vf}").symlink_to(vf_dir)
            state = tmp_path / "state" / pf / f"vf{vf}"
            if pf in IB_PFS:
                write(state / "NODE_GUID", "00:00:00:00:00:00:00:00")
                write(state / "PORT_GUID", "00:00:00:00:00:00:00:00")
                write(state / "link-state", "disable")
            else:
                write(state / "spoofchk", "off")
                write(state / "trust", "on")
            write(tmp_path / "state" / f"{pf[:10]}v{vf}" / "mtu", "1500")
    write(sysfs / "bus" / "pci" / "drivers" / "mlx5_core" / "bind", "")
    write(sysfs / "bus" / "pci" / "drivers" / "mlx5_core" / "unbind", "")
    (tmp_path / "modprobe.d").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write(tmp_path / "proc-cmdline", "BOOT_IMAGE=/vmlinuz root=UUID=1 ro ib_core.netns_mode=0")
    write(tmp_path / "grub.cfg", 'menuentry "Linux" {\n\tlinux /vmlinuz root=UUID=1 ro\n}')  # a local GRUB
    for tool in ("ip", "mstconfig", "rdma", "udevadm", "update-grub"):
        shutil.copy(SRIOV_STUBS / tool, bin_dir / tool)
    script = tmp_path / "etc" / "sriov-setup.sh"
    write(script, artifacts["hosts/dgx-h100/sriov-setup.sh"].content.decode().rstrip("\n"))
    (script.parent / "sriov-vfs.tsv").write_bytes(artifacts["hosts/dgx-h100/sriov-vfs.tsv"].content)
    env = {**os.environ, "SYSFS_ROOT": str(sysfs), "IP": str(bin_dir / "ip"), "MSTCONFIG": str(bin_dir / "mstconfig"),
           "RDMA": str(bin_dir / "rdma"), "UDEVADM": str(bin_dir / "udevadm"),
           "MODPROBE_DIR": str(tmp_path / "modprobe.d"), "GRUB_DIR": str(tmp_path / "grub.d"),
           "UPDATE_GRUB": str(bin_dir / "update-grub"), "GRUBBY": str(bin_dir / "grubby"),
           "GRUB_CFG": str(tmp_path / "grub.cfg"), "PROC_CMDLINE": str(tmp_path / "proc-cmdline"),
           "STUB_STATE": str(tmp_path / "state"), "NODE_NAME": NODE, "SRIOV_WAIT_SECONDS": "1"}
    return FakeHost(tmp_path, script, env)


@contextmanager
def rebinding_driver(host: FakeHost, delay: float, suffix: str = "r") -> Iterator[list[str]]:
    """mlx5_core's bind and unbind files as the driver acts on them: unbinding a VF removes its netdev, binding brings
    it back ``delay`` seconds later renamed (udev's name: the old one with ``suffix``), as a real rebind may. The files
    become FIFOs read by threads; yields the log of "bind|unbind <PCI address>" lines. A write to a FIFO returns once
    the line is in the pipe, not once it is handled, but the kernel's unbind returns only when the netdev is gone:
    the bind file is opened for reading only after an unbind has been handled, so the script's bind (and everything
    after it) waits for that, as on a real host."""
    drivers = host.root / "sys" / "bus" / "pci" / "drivers" / "mlx5_core"
    done = threading.Event()
    unbound = threading.Semaphore(0)
    log: list[str] = []
    names: dict[str, str] = {}
    timers: list[threading.Timer] = []

    def recreate(net: Path, name: str) -> None:
        shutil.copytree(host.root / "state" / name.removesuffix(suffix), host.root / "state" / name, dirs_exist_ok=True)
        (net / name).mkdir(parents=True)

    def handle(name: str, bdf: str) -> None:
        net = host.root / "sys" / "devices" / "pci0000:00" / bdf / "net"
        log.append(f"{name} {bdf}")
        if name == "unbind":
            names[bdf] = next(p.name for p in net.iterdir())
            shutil.rmtree(net)
            unbound.release()
        else:
            timers.append(threading.Timer(delay, recreate, (net, names[bdf].removesuffix(suffix) + suffix)))
            timers[-1].start()

    def serve(name: str) -> None:
        while not done.is_set():
            if name == "bind" and not unbound.acquire(timeout=0.05):
                continue
            with (drivers / name).open() as f:
                for line in f:
                    if bdf := line.strip():
                        handle(name, bdf)

    threads = []
    for name in ("unbind", "bind"):
        (drivers / name).unlink()
        os.mkfifo(drivers / name)
        threads.append(threading.Thread(target=serve, args=(name,), daemon=True))
        threads[-1].start()
    try:
        yield log
    finally:
        done.set()
        for name in ("unbind", "bind"):  # wake each reader, which then sees done
            try:  # without blocking: a reader that stopped (on an error) would leave open("w") waiting forever
                fd = os.open(drivers / name, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader holds it open; a daemon thread blocked in open() ends with the test
                continue
            with os.fdopen(fd, "w") as f:
                f.write("\n")
        for t in (*threads, *timers):
            t.join(timeout=5)
