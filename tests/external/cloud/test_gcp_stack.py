"""The emitted Google Cloud A3 project (stacks/gcp_a3), run from its own directory under Pulumi's unit-test mocks, and
its startup script (shellcheck, then run against a fake root with stub tools).

What Google would receive is checked per machine type: one VPC and subnet per gVNIC NIC at the cluster's MTU (A3
Ultra's MRDMA NICs in one RoCE VPC of the zone's network profile, with no firewall rule), each NIC of every instance
on its own subnet in NIC order, the firewall within the cluster, the compact placement policy, the reservation, the
managed instance group, Managed Lustre behind private service access and its mount in the startup script. Nothing
here reaches Google Cloud: no account is available to these tests.
"""

from __future__ import annotations

import os
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, require_tool
from tests.helpers.cloud import GCP_SPEC, emit
from tests.helpers.fake_host import ScriptHost, write
from tests.helpers.pulumi_mocks import DependencyMonitor, Recorder, run

STUBS = REPO / "tests" / "data" / "fake-cloud-host"
SUBNETS = ["10.60.0.0/20", *(f"10.60.{16 + i}.0/24" for i in range(8))]  # the example's, nic0 first
NETWORK = "gcp:compute/network:Network"
SUBNET = "gcp:compute/subnetwork:Subnetwork"
FIREWALL = "gcp:compute/firewall:Firewall"
INSTANCE = "gcp:compute/instance:Instance"
POLICY = "gcp:compute/resourcePolicy:ResourcePolicy"
RESERVATION = "    capacity: {kind: reservation, id: a3mega-reservation}\n"
HIGH = {"type: a3-megagpu-8g": "type: a3-highgpu-8g",
        "      - {cidr: 10.60.20.0/24}\n      - {cidr: 10.60.21.0/24}\n      - {cidr: 10.60.22.0/24}\n"
        "      - {cidr: 10.60.23.0/24}\n": ""}
ULTRA = {"type: a3-megagpu-8g": "type: a3-ultragpu-8g", "zone: us-central1-a": "zone: us-central1-b",
         "      - {cidr: 10.60.16.0/24}": "      - {cidr: 10.60.64.0/20}\n      - {cidr: 10.60.16.0/24}"}


# The SDK warns about its own deprecated resources when imported: noise, not about this program.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_gcp")


def subnets_in_nic_order(mocks: Recorder, networks: list[str] | None = None) -> list[Any]:
    """The subnets by NIC (the mocks see resources in no fixed order): the program names each after its network."""
    names = [f"gcp-a3-tcpxo-{n}" for n in networks or ["host-0-subnet", *(f"gpu-{i}-subnet" for i in range(8))]]
    return [mocks.named(SUBNET, name) for name in names]


ULTRA_SUBNETS = ["host-0-subnet", "host-1-subnet", *(f"roce-subnet-{i}" for i in range(8))]


def counts(mocks: Recorder) -> Counter[str]:
    return Counter(r.type.rsplit(":", 1)[-1] for r in mocks.resources)


def by_id(mocks: Recorder, typ: str) -> dict[str, dict[str, Any]]:
    return {r.id: r.inputs for r in mocks.of_type(typ)}


def test_a3_mega_resources(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path))
    assert counts(mocks) == {"Network": 9, "Subnetwork": 9, "Firewall": 11, "Instance": 17, "Router": 1,
                             "RouterNat": 1, "GlobalAddress": 1, "Connection": 1, "Service": 3}
    assert len(mocks.of_type(INSTANCE)) == 16 and len(mocks.of_type("gcp:lustre/instance:Instance")) == 1


def test_every_gvnic_vpc_at_8244_with_one_subnet(tmp_path: Path) -> None:
    """A3 Mega: the host VPC and eight GPU VPCs, each at 8244 (Google's A3 Mega MTU) with one subnet of the spec."""
    mocks = run(emit(GCP_SPEC, tmp_path))
    nets = by_id(mocks, NETWORK)
    assert {n["mtu"] for n in nets.values()} == {8244}
    assert all(n["autoCreateSubnetworks"] is False and "networkProfile" not in n for n in nets.values())
    subnets = subnets_in_nic_order(mocks)
    assert [s.inputs["ipCidrRange"] for s in subnets] == SUBNETS
    assert len({s.inputs["network"] for s in subnets}) == 9, "one VPC per NIC"
    assert [s.inputs["region"] for s in subnets] == ["us-central1"] * 9
    assert [s.inputs["privateIpGoogleAccess"] for s in subnets] == [True] + [False] * 8


def test_each_nic_on_its_subnet_in_nic_order(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path))
    subnet_ids = [s.id for s in subnets_in_nic_order(mocks)]
    for instance in mocks.of_type(INSTANCE):
        nics = instance.inputs["networkInterfaces"]
        assert [n["subnetwork"] for n in nics] == subnet_ids
        assert {n["nicType"] for n in nics} == {"GVNIC"}
        assert all("accessConfigs" not in n for n in nics), "no external address"
        assert instance.inputs["machineType"] == "a3-megagpu-8g" and instance.inputs["zone"] == "us-central1-a"
        assert instance.inputs["scheduling"] == {"onHostMaintenance": "TERMINATE", "automaticRestart": True}
        assert instance.inputs["bootDisk"]["initializeParams"]["type"] == "pd-ssd"
        assert instance.inputs["bootDisk"]["initializeParams"]["size"] == 300
        assert instance.inputs["serviceAccount"] == {"scopes": ["https://www.googleapis.com/auth/cloud-platform"]}


def test_firewall_admits_the_cluster_subnets_and_iap_ssh(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path))
    nets = {r.id: r.name for r in mocks.of_type(NETWORK)}
    rules = {r.name: r.inputs for r in mocks.of_type(FIREWALL)}
    internal = {name: rule for name, rule in rules.items() if name.endswith("-internal")}
    assert sorted(set(rules) - set(internal)) == ["iap-ssh", "lustre"]
    assert len(internal) == 9
    for subnet in mocks.of_type(SUBNET):
        rule = internal[f"{nets[subnet.inputs['network']]}-internal"]
        assert rule["sourceRanges"] == [subnet.inputs["ipCidrRange"]] and rule["direction"] == "INGRESS"
        assert [a["protocol"] for a in rule["allows"]] == ["tcp", "udp", "icmp"]
    iap = rules["iap-ssh"]
    assert iap["sourceRanges"] == ["35.235.240.0/20"] and iap["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert nets[iap["network"]] == "gcp-a3-tcpxo-host-0"


def test_reserved_instances_get_no_placement_policy(tmp_path: Path) -> None:
    """The example consumes a specific reservation, which brings its own placement: its VMs carry no policy of
    fabricgen's (slurm-gcp resume.py gives reserved VMs the reservation's policies or none; Cluster Toolkit PR #3347:
    only dense reservations take an external one)."""
    mocks = run(emit(GCP_SPEC, tmp_path))
    assert not mocks.of_type(POLICY)
    for instance in mocks.of_type(INSTANCE):
        assert "resourcePolicies" not in instance.inputs
        assert instance.inputs["reservationAffinity"] == {"type": "SPECIFIC_RESERVATION", "specificReservation": {
            "key": "compute.googleapis.com/reservation-name", "values": ["a3mega-reservation"]}}


def test_compact_placement_without_reservation(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path, {RESERVATION: "    max_distance: 2\n"}))
    policy = mocks.one(POLICY)
    assert policy.inputs["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "maxDistance": 2}
    assert policy.inputs["region"] == "us-central1"
    for instance in mocks.of_type(INSTANCE):
        assert instance.inputs["resourcePolicies"] == "https://www.googleapis.com/compute/v1/placement"
        assert "reservationAffinity" not in instance.inputs


def test_without_placement_or_reservation(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path, {RESERVATION: "    placement_group: false\n"}))
    assert not mocks.of_type(POLICY)
    assert all("reservationAffinity" not in i.inputs and "resourcePolicies" not in i.inputs
               for i in mocks.of_type(INSTANCE))


def test_managed_instance_group(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path, {RESERVATION: RESERVATION + "    group: managed-instance-group\n"}))
    assert not mocks.of_type(INSTANCE) and not mocks.of_type(POLICY)
    template = mocks.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs
    assert [n["subnetwork"] for n in template["networkInterfaces"]] == [s.id for s in subnets_in_nic_order(mocks)]
    assert "resourcePolicies" not in template
    assert template["reservationAffinity"]["specificReservation"]["values"] == ["a3mega-reservation"]
    (disk,) = template["disks"]
    assert (disk["boot"], disk["diskType"], disk["diskSizeGb"]) == (True, "pd-ssd", 300)
    group = mocks.one("gcp:compute/instanceGroupManager:InstanceGroupManager").inputs
    assert group["targetSize"] == 16 and group["zone"] == "us-central1-a"
    assert group["versions"] == [{"instanceTemplate": "https://www.googleapis.com/compute/v1/a3?id=1"}]
    assert "resourcePolicies" not in group


def test_managed_instance_group_gets_a_workload_policy(tmp_path: Path) -> None:
    """A MIG of A3 VMs is placed by a HIGH_THROUGHPUT workload policy on the group (Compute Engine, "Placement
    policies overview": workload policies for MIGs of A3 High/Mega/Ultra), not a compact policy on its template."""
    mocks = run(emit(GCP_SPEC, tmp_path, {RESERVATION: "    group: managed-instance-group\n"}))
    policy = mocks.one(POLICY).inputs
    assert policy["workloadPolicy"] == {"type": "HIGH_THROUGHPUT"} and "groupPlacementPolicy" not in policy
    template = mocks.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs
    assert "resourcePolicies" not in template and "reservationAffinity" not in template
    group = mocks.one("gcp:compute/instanceGroupManager:InstanceGroupManager").inputs
    assert group["resourcePolicies"] == {"workloadPolicy": "https://www.googleapis.com/compute/v1/placement"}


def test_managed_lustre_behind_private_service_access(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path))
    host = mocks.named(NETWORK, "gcp-a3-tcpxo-host-0").id
    psa = mocks.one("gcp:compute/globalAddress:GlobalAddress").inputs
    assert (psa["purpose"], psa["addressType"], psa["network"]) == ("VPC_PEERING", "INTERNAL", host)
    assert (psa["address"], psa["prefixLength"]) == ("10.60.240.0", 20)  # the top /20 of 10.60.0.0/16, clear of subnets
    rule = mocks.named(FIREWALL, "lustre").inputs
    assert rule["sourceRanges"] == ["10.60.240.0/20"] and rule["allows"] == [{"protocol": "tcp", "ports": ["988"]}]
    peering = mocks.one("gcp:servicenetworking/connection:Connection").inputs
    assert peering["service"] == "servicenetworking.googleapis.com" and peering["network"] == host
    lustre = mocks.one("gcp:lustre/instance:Instance").inputs
    assert lustre == {**lustre, "instanceId": "gcp-a3-tcpxo-scratch", "location": "us-central1-a",
                      "capacityGib": "36000", "perUnitStorageThroughput": "500", "filesystem": "lustrefs",
                      "network": host}


SERVICE = "gcp:projects/service:Service"
LUSTRE = "gcp:lustre/instance:Instance"


def test_the_apis_are_enabled_before_what_needs_them(tmp_path: Path) -> None:
    """compute, servicenetworking and lustre (Cluster Toolkit's module requirements), left on at destroy; each VPC
    and the placement policy wait for compute, the peering for servicenetworking, Managed Lustre for lustre."""
    monitor = DependencyMonitor(Recorder())
    mocks = run(emit(GCP_SPEC, tmp_path, {RESERVATION: ""}), monitor)
    services = {r.inputs["service"]: r for r in mocks.of_type(SERVICE)}
    assert sorted(services) == ["compute.googleapis.com", "lustre.googleapis.com", "servicenetworking.googleapis.com"]
    assert all(r.inputs["project"] == "ml-infra-prod" and r.inputs["disableOnDestroy"] is False
               for r in services.values())
    waits = monitor.waits_for
    for net in mocks.of_type(NETWORK):
        assert (SERVICE, "compute") in waits[(NETWORK, net.name)]
    assert (SERVICE, "compute") in waits[(POLICY, "placement")]
    assert (SERVICE, "servicenetworking") in waits[("gcp:servicenetworking/connection:Connection", "psa")]
    assert (SERVICE, "lustre") in waits[(LUSTRE, "lustre-scratch")]


def test_without_file_systems_only_compute_is_enabled(tmp_path: Path) -> None:
    text = GCP_SPEC.read_text()
    filesystems = text[text.index("  filesystems:"):text.index("  tags:")]
    mocks = run(emit(GCP_SPEC, tmp_path, {filesystems: ""}))
    assert [r.inputs["service"] for r in mocks.of_type(SERVICE)] == ["compute.googleapis.com"]


def test_managed_lustre_gets_an_hour_and_instances_are_replaced_delete_first(tmp_path: Path) -> None:
    """Managed Lustre takes up to an hour to create, change or delete (Cluster Toolkit's 1h timeouts); an instance's
    fixed name and its exact-size reservation cannot hold the old VM and its replacement at once."""
    monitor = DependencyMonitor(Recorder())
    mocks = run(emit(GCP_SPEC, tmp_path), monitor)
    assert monitor.options[(LUSTRE, "lustre-scratch")]["timeouts"] == ("60m", "60m", "60m")
    assert all(monitor.options[(INSTANCE, r.name)]["delete_before_replace"] for r in mocks.of_type(INSTANCE))
    assert not monitor.options[(NETWORK, "gcp-a3-tcpxo-host-0")]["delete_before_replace"]


def test_the_host_vpc_takes_its_own_mtu(tmp_path: Path) -> None:
    """network.host_mtu: the host VPC at 8896, Managed Lustre's preferred MTU; the GPU VPCs, not connected to it,
    stay at A3 Mega's 8244."""
    vpc = "    vpc: {cidr: 10.60.0.0/16}"
    mocks = run(emit(GCP_SPEC, tmp_path, {vpc: f"    host_mtu: 8896\n{vpc}"}))
    mtus = {r.name: r.inputs["mtu"] for r in mocks.of_type(NETWORK)}
    assert mtus.pop("gcp-a3-tcpxo-host-0") == 8896 and set(mtus.values()) == {8244}


def startup_script(mocks: Recorder) -> str:
    scripts = {r.inputs["metadata"]["startup-script"] for r in mocks.of_type(INSTANCE)}
    (script,) = scripts
    return str(script)


def test_startup_script_is_metadata_not_a_replacing_field(tmp_path: Path) -> None:
    """The script goes in the startup-script metadata key, as Cluster Toolkit's vm-instance module passes it:
    pulumi-gcp's metadata_startup_script forces the instance to be recreated when it changes (its own docstring),
    which on a reservation of exactly the cluster's size wedges `pulumi up` on any change of the script."""
    import pulumi_gcp  # the installed provider's own documentation is the evidence

    doc = " ".join((pulumi_gcp.compute.InstanceArgs.__init__.__doc__ or "").split())
    assert "forces the instance to be recreated" in doc
    (tmp_path / "mig").mkdir()
    mocks = run(emit(GCP_SPEC, tmp_path / "mig", {RESERVATION: RESERVATION + "    group: managed-instance-group\n"}))
    template = mocks.one("gcp:compute/instanceTemplate:InstanceTemplate").inputs
    assert "metadataStartupScript" not in template and template["metadata"]["startup-script"].startswith("#!/bin/bash")
    assert template["metadata"]["enable-oslogin"] == "TRUE"
    mocks = run(emit(GCP_SPEC, tmp_path))
    assert all("metadataStartupScript" not in i.inputs for i in mocks.of_type(INSTANCE))
    assert startup_script(mocks).startswith("#!/bin/bash")


def test_startup_script_mounts_managed_lustre(tmp_path: Path) -> None:
    script = startup_script(run(emit(GCP_SPEC, tmp_path)))
    assert "FILESYSTEMS=(10.90.0.2@tcp:/lustrefs /lustre)\n" in script
    assert "RXDM_IMAGE=us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.23" in script


def test_a3_high_tcpx_four_gpu_vpcs(tmp_path: Path) -> None:
    mocks = run(emit(GCP_SPEC, tmp_path, HIGH))
    assert counts(mocks)["Network"] == 5 and counts(mocks)["Subnetwork"] == 5
    assert {n["mtu"] for n in by_id(mocks, NETWORK).values()} == {8244}
    nics = mocks.of_type(INSTANCE)[0].inputs["networkInterfaces"]
    high = ["host-0-subnet", *(f"gpu-{i}-subnet" for i in range(4))]
    assert [n["subnetwork"] for n in nics] == [s.id for s in subnets_in_nic_order(mocks, high)]
    assert "--gpu_nic_preset manual --gpu_nic_topology ${TOPOLOGY} " in startup_script(mocks)


def test_a3_ultra_roce_vpc_without_firewall(tmp_path: Path) -> None:
    """A3 Ultra: two host VPCs at 8896 and one RoCE VPC (the zone's network profile) with eight subnets, the
    MRDMA NICs on them; no firewall rule on the RoCE VPC (Google refuses them there)."""
    mocks = run(emit(GCP_SPEC, tmp_path, ULTRA))
    nets = {r.name: r.inputs for r in mocks.of_type(NETWORK)}
    assert sorted(nets) == ["gcp-a3-tcpxo-host-0", "gcp-a3-tcpxo-host-1", "gcp-a3-tcpxo-roce"]
    roce = nets["gcp-a3-tcpxo-roce"]
    assert roce["networkProfile"] == "projects/ml-infra-prod/global/networkProfiles/us-central1-b-vpc-roce"
    assert {n["mtu"] for n in nets.values()} == {8896}
    roce_id = mocks.named(NETWORK, "gcp-a3-tcpxo-roce").id
    assert sum(s.inputs["network"] == roce_id for s in mocks.of_type(SUBNET)) == 8
    assert all(f.inputs["network"] != roce_id for f in mocks.of_type(FIREWALL))
    nics = mocks.of_type(INSTANCE)[0].inputs["networkInterfaces"]
    assert [n["nicType"] for n in nics] == ["GVNIC"] * 2 + ["MRDMA"] * 8
    assert [n["subnetwork"] for n in nics] == [s.id for s in subnets_in_nic_order(mocks, ULTRA_SUBNETS)]
    assert mocks.of_type(INSTANCE)[0].inputs["bootDisk"]["initializeParams"]["type"] == "hyperdisk-balanced"


@pytest.fixture(name="scripts", scope="module")
def fixture_scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The startup script of each A3 type as its program fills it."""
    tmp_path = tmp_path_factory.mktemp("scripts")
    out = {}
    for kind, edit in (("tcpxo", {}), ("tcpx", HIGH), ("rdma", ULTRA)):
        (tmp_path / kind).mkdir()
        out[kind] = startup_script(run(emit(GCP_SPEC, tmp_path / kind, edit)))
    return out


def test_startup_scripts_are_shellcheck_clean(tmp_path: Path, scripts: dict[str, str]) -> None:
    shellcheck = require_tool("shellcheck")
    paths = []
    for kind, text in scripts.items():
        paths.append(tmp_path / f"{kind}.sh")
        paths[-1].write_text(text)
    done = subprocess.run([shellcheck, "-S", "style", *map(str, paths)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


def host(tmp_path: Path, script: str, kernel: str = "6.8.0-1015-gcp", os_id: str = "ubuntu") -> ScriptHost:
    root = tmp_path / "root"
    write(root / "etc" / "os-release", f"ID={os_id}\nUBUNTU_CODENAME=jammy")
    write(root / "state" / "uname-r", kernel)
    write(root / "state" / "driver-version", "570.172.08")
    path = tmp_path / "startup-script.sh"
    path.write_text(script)
    installed = root / "state" / "bin"  # where stub installs put their tools (dkms)
    env = {**os.environ, "PATH": f"{installed}:{STUBS}:{os.environ['PATH']}", "USER_DATA_ROOT": str(root),
           "STUB_STATE": str(root / "state")}
    return ScriptHost(root, path, env)


WAIT = "fabricgen-gpu-network.service"
WAITS = ["systemctl daemon-reload", f"systemctl enable {WAIT}", f"systemctl start {WAIT}"]


def test_tcpxo_startup_sets_up_rxdm_nccl_and_lustre(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["tcpxo"])
    (machine.root / "state" / "no-import-helper").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    calls = machine.calls
    # the helper was missing: built by DKMS for the running kernel from Google's source package, headers first
    helper = [c for c in calls if c.startswith(("apt-get install -y -q linux-headers", "apt-get download", "dkms"))]
    assert helper == ["apt-get install -y -q linux-headers-6.8.0-1015-gcp", "apt-get download dmabuf-import-helper",
                      "dkms status -m dmabuf-import-helper -v 1.1", "dkms add -m dmabuf-import-helper -v 1.1",
                      "dkms build -m dmabuf-import-helper -v 1.1 -k 6.8.0-1015-gcp",
                      "dkms install -m dmabuf-import-helper -v 1.1 -k 6.8.0-1015-gcp"]
    source = machine.root / "usr/src/dmabuf-import-helper-1.1/import-helper.c"
    assert source.read_text() == "MODULE_IMPORT_NS(DMA_BUF);\n"  # 6.8 takes the bare namespace: not patched
    assert (machine.root / "etc/modules-load.d/fabricgen-tcpxo.conf").read_text() == "import-helper\n"
    # only the aperture devices are replayed, not every PCI device
    assert [c for c in calls if c.startswith("udevadm trigger")] == [
        "udevadm trigger --action=add --subsystem-match=pci --attr-match=vendor=0x1ae0 --attr-match=device=0x0084"]
    assert ("docker run --rm --name fabricgen-nccl-installer --network=host -v /var/lib:/var/lib "
            "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17 install "
            "--install-nccl") in calls
    assert [c for c in calls if c.startswith("systemctl")] == [
        *WAITS, "systemctl enable fabricgen-rxdm.service", "systemctl daemon-reload",
        "systemctl restart fabricgen-rxdm.service"]
    assert calls.index(f"systemctl start {WAIT}") < calls.index("apt-get download dmabuf-import-helper")
    unit = (machine.root / "etc/systemd/system/fabricgen-rxdm.service").read_text()
    assert "--num_hops=2 --num_nics=8 --uid= --alsologtostderr" in unit and "tcpgpudmarxd-dev:v1.0.23" in unit
    assert "\nExecStartPre=/sbin/modprobe import-helper\n" in unit  # at reboot, before RxDM, as slurm-gcp's prolog
    assert f"\nAfter=docker.service network-online.target {WAIT}\n" in unit
    assert f"\nWants=network-online.target {WAIT}\n" in unit
    wait = (machine.root / f"etc/systemd/system/{WAIT}").read_text()
    assert ("\nBefore=google-startup-scripts.service\n" in wait and "\nType=oneshot\n" in wait
            and "\nExecStart=/usr/lib/systemd/systemd-networkd-wait-online -o routable --timeout=180\n" in wait
            and "\nExecStartPost=/bin/sleep 30\n" in wait)
    env = (machine.root / "etc/fabricgen/nccl.env").read_text()
    assert "NCCL_FASTRAK_IFNAME=enp6s0,enp7s0,enp13s0,enp14s0,enp134s0,enp135s0,enp141s0,enp142s0\n" in env
    profile = (machine.root / "etc/profile.d/fabricgen-nccl.sh").read_text()
    assert 'NCCL_LIB_DIR="/var/lib/tcpxo/lib64" . "/var/lib/tcpxo/lib64/nccl-env-profile.sh"' in profile
    assert "lustre-client-modules-6.8.0-1015-gcp" in " ".join(calls)
    assert (machine.root / "etc/fstab").read_text() == "10.90.0.2@tcp:/lustrefs /lustre lustre defaults,_netdev 0 0\n"


def test_tcpxo_startup_again_leaves_rxdm_running(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["tcpxo"])
    assert machine.run().returncode == 0
    before = machine.snapshot()
    calls = len(machine.calls)
    assert machine.run().returncode == 0
    again = machine.calls[calls:]
    assert not any(c.startswith("docker run") for c in again), "the plugin is installed once per image"
    assert [c for c in again if c.startswith("systemctl")] == [
        f"systemctl enable {WAIT}", f"systemctl start {WAIT}", "systemctl enable fabricgen-rxdm.service",
        "systemctl start fabricgen-rxdm.service"]
    assert machine.snapshot() == before


def test_the_nccl_environment_reaches_pam_systemd_and_containers(tmp_path: Path, scripts: dict[str, str]) -> None:
    """Google's profile (here a stand-in the installer image would write) and nccl.env resolved into plain lines for
    systemd's EnvironmentFile= and docker's --env-file, and into /etc/environment (pam_env: `ssh host cmd`), whose
    own lines are kept; the next boot rewrites nothing."""
    machine = host(tmp_path, scripts["tcpxo"])
    library = machine.root / "var/lib/tcpxo/lib64"  # as the installer image left it
    write(library / ".fabricgen-plugin-image",
          "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpxo/nccl-plugin-gpudirecttcpx-dev:v1.0.17")
    write(library / "nccl-env-profile.sh",
          'export NCCL_FASTRAK_CTRL_DEV=eth0\nexport NCCL_NET_PLUGIN_DIR="${NCCL_LIB_DIR}"\n')
    write(machine.root / "etc/environment", 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"\n')
    assert machine.run().returncode == 0
    resolved = (machine.root / "etc/fabricgen/nccl-resolved.env").read_text().splitlines()
    assert resolved == sorted(resolved) and "LD_LIBRARY_PATH=/var/lib/tcpxo/lib64" in resolved
    assert "NCCL_NET_PLUGIN_DIR=/var/lib/tcpxo/lib64" in resolved  # the profile ran with the plugin directory
    assert "NCCL_FASTRAK_CTRL_DEV=enp0s12" in resolved  # nccl.env overrides the profile's eth0, as at login
    assert not any(line.startswith(("PATH=", "PWD=", "SHLVL=", "_=", "NCCL_LIB_DIR=")) for line in resolved)
    environment = (machine.root / "etc/environment").read_text()
    assert environment.startswith('PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"\n# fabricgen NCCL begin')
    assert '\nNCCL_FASTRAK_CTRL_DEV="enp0s12"\n' in environment and environment.endswith("# fabricgen NCCL end\n")
    before = machine.snapshot()
    assert machine.run().returncode == 0
    assert machine.snapshot() == before


def test_tcpx_bindings_reach_the_resolved_environment_unquoted(tmp_path: Path, scripts: dict[str, str]) -> None:
    """nccl.env single-quotes TCPX's bindings (a shell reads them); docker's --env-file would keep the quotes."""
    machine = a3_high(tmp_path, scripts["tcpx"])
    assert machine.run().returncode == 0
    resolved = (machine.root / "etc/fabricgen/nccl-resolved.env").read_text()
    assert ("\nNCCL_GPUDIRECTTCPX_TX_BINDINGS=enp6s0:8-21,112-125;enp12s0:8-21,112-125;enp134s0:60-73,164-177;"
            "enp140s0:60-73,164-177\n") in resolved


def test_tcpxo_startup_fails_when_rxdm_does_not_come_up(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["tcpxo"])
    (machine.root / "state" / "rxdm-hangs").touch()
    done = machine.run()
    assert done.returncode == 1 and "RxDM did not finish its initialization" in done.stderr


def test_a3_mega_dmabuf_helper_is_patched_from_linux_6_13(tmp_path: Path, scripts: dict[str, str]) -> None:
    """MODULE_IMPORT_NS takes a string from 6.13 (torvalds/linux cdd30ebb1b9f): Cluster Toolkit patches the helper's
    source for 6.17, fabricgen from 6.13 on; the kernel's headers were already there, so none are installed."""
    machine = host(tmp_path, scripts["tcpxo"], kernel="6.17.0-1003-gcp")
    (machine.root / "state" / "no-import-helper").touch()
    (machine.root / "lib/modules/6.17.0-1003-gcp/build").mkdir(parents=True)
    done = machine.run()
    assert done.returncode == 0, done.stderr
    source = machine.root / "usr/src/dmabuf-import-helper-1.1/import-helper.c"
    assert source.read_text() == 'MODULE_IMPORT_NS("DMA_BUF");\n'
    assert not any(c.startswith("apt-get install -y -q linux-headers") for c in machine.calls)


def test_a3_mega_without_kernel_headers_says_so_before_rxdm(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["tcpxo"])
    for flag in ("no-import-helper", "no-headers"):
        (machine.root / "state" / flag).touch()
    done = machine.run()
    assert done.returncode == 1
    assert ("built by DKMS against the running kernel's headers: linux-headers-6.8.0-1015-gcp does not "
            "install") in done.stderr
    assert not any(c.startswith(("dkms", "docker run")) for c in machine.calls)


def gpu_info(gpu: str, queues: list[int]) -> str:
    ids = "".join(f"    queue_ids: {q}\n" for q in queues)
    return f'  gpu_infos {{\n    gpu_pci_addr: "0000:{gpu}:00.0"\n{ids}  }}\n'


# Cluster Toolkit's A3 High image's GPU-NIC topology (a3high-slurm-blueprint.yaml, gpu_rxq_configuration.textproto),
# byte for byte
A3_HIGH_TOPOLOGY = "".join(
    "gpu_rxq_configs {\n" + gpu_info(gpus[0], [8, 9, 10, 11]) + gpu_info(gpus[1], [12, 13, 14, 15])
    + f'  nic_pci_addr: "0000:{nic}:00.0"\n  ifname: "{ifname}"\n}}\n'
    for ifname, nic, gpus in (("enp6s0", "06", ("04", "05")), ("enp12s0", "0c", ("0a", "0b")),
                              ("enp134s0", "86", ("84", "85")), ("enp140s0", "8c", ("8a", "8b")))
) + "rss_set_size: 8\ntcpd_queue_size: 8\nmax_rx_rules: 100000\n"
A3_HIGH_PCI = ["0000:04:00.0", "0000:05:00.0", "0000:06:00.0", "0000:0a:00.0", "0000:0b:00.0", "0000:0c:00.0",
               "0000:84:00.0", "0000:85:00.0", "0000:86:00.0", "0000:8a:00.0", "0000:8b:00.0", "0000:8c:00.0"]


def a3_high(tmp_path: Path, script: str, pci: list[str] = A3_HIGH_PCI) -> ScriptHost:
    machine = host(tmp_path, script, kernel="6.5.0-1014-gcp-tcpx")
    for address in pci:
        (machine.root / "sys/bus/pci/devices" / address).mkdir(parents=True)
    return machine


def test_tcpx_needs_the_tcpx_kernel(tmp_path: Path, scripts: dict[str, str]) -> None:
    done = host(tmp_path, scripts["tcpx"]).run()
    assert done.returncode == 1 and "GPUDirect-TCPX needs Google's TCPX kernel" in done.stderr
    (tmp_path / "tcpx").mkdir()
    machine = a3_high(tmp_path / "tcpx", scripts["tcpx"])
    done = machine.run()
    assert done.returncode == 0, done.stderr
    unit = (machine.root / "etc/systemd/system/fabricgen-rxdm.service").read_text()
    # slurm-gcp's prolog: the manual topology file, mounted into the container, and its loader path
    assert ("--volume /opt/tcpdirect_benchmark:/opt/tcpdirect_benchmark --volume /run/tcpx:/run/tcpx --env "
            "LD_LIBRARY_PATH=/usr/local/nvidia/lib64:/run/tcpx:/usr/lib/lib32:/usr/lib/x86_64-linux-gnu/ ") in unit
    assert ("--gpu_nic_preset manual --gpu_nic_topology /opt/tcpdirect_benchmark/gpu_rxq_configuration.textproto "
            "--gpu_shmem_type fd --uds_path /run/tcpx\n") in unit
    topology = machine.root / "opt/tcpdirect_benchmark/gpu_rxq_configuration.textproto"
    assert topology.read_text() == A3_HIGH_TOPOLOGY
    wait = (machine.root / f"etc/systemd/system/{WAIT}").read_text()
    assert ("\nExecStart=/usr/lib/systemd/systemd-networkd-wait-online -i enp6s0 -i enp12s0 -i enp134s0 -i enp140s0 "
            "-o routable --timeout=120\nExecStartPost=/bin/sleep 10\n") in wait  # Cluster Toolkit's delay-a3.service
    env = (machine.root / "etc/fabricgen/nccl.env").read_text()
    assert ("NCCL_GPUDIRECTTCPX_TX_BINDINGS='enp6s0:8-21,112-125;enp12s0:8-21,112-125;enp134s0:60-73,164-177;"
            "enp140s0:60-73,164-177'\n") in env


def test_a3_high_topology_must_match_the_vm(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = a3_high(tmp_path, scripts["tcpx"], A3_HIGH_PCI[1:])
    done = machine.run()
    assert done.returncode == 1 and "no PCI device 0000:04:00.0 here" in done.stderr
    assert not (machine.root / "etc/systemd/system/fabricgen-rxdm.service").exists()


def test_rdma_installs_gib_and_its_nccl_once_without_rxdm(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["rdma"])
    write(machine.root / "etc" / "os-release", 'ID=ubuntu\nVERSION_ID="22.04"\nUBUNTU_CODENAME=jammy')
    assert machine.run().returncode == 0
    calls = machine.calls
    for package in ("libnccl2=2.27.5-1+cuda12.9", "nccl-gib=1.1.0"):  # a3ultra-slurm-blueprint.yaml's versions
        assert f"apt-get install -y -q --allow-downgrades --allow-change-held-packages {package}" in calls
        assert f"apt-mark hold {package.split('=')[0]}" in calls
    keyring = next(c for c in calls if c.endswith("cuda-keyring_1.1-1_all.deb"))
    assert calls.index(keyring) < calls.index(
        "apt-get install -y -q --allow-downgrades --allow-change-held-packages libnccl2=2.27.5-1+cuda12.9")
    assert not any(c.startswith("docker") for c in calls)
    assert [c for c in calls if c.startswith("systemctl")] == WAITS
    again = len(calls)
    assert machine.run().returncode == 0
    assert not any("nccl-gib=" in c or "libnccl2=" in c or "cuda-keyring" in c for c in machine.calls[again:])
    assert "NCCL_NET=gIB\n" in (machine.root / "etc/fabricgen/nccl.env").read_text()


def test_nics_not_routable_in_time_are_logged_and_boot_goes_on(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["rdma"])
    (machine.root / "state" / "unit-fails").touch()
    done = machine.run()
    assert done.returncode == 0, done.stderr
    assert f"the NICs are not all routable after 180 s (journalctl -u {WAIT}); going on" in done.stderr
    assert "ready" in done.stderr


def without(machine: ScriptHost, *tools: str) -> str:
    """A PATH without ``tools`` (neither the stubs nor this machine's own, e.g. a real docker), led by the stubs'
    state/bin, where stub installs put theirs: one directory of links to the first of every other command."""
    bare = machine.root.parent / "bin"
    bare.mkdir()
    for directory in machine.env["PATH"].split(":"):
        for tool in sorted(Path(directory).iterdir()) if Path(directory).is_dir() else ():
            link = bare / tool.name
            if tool.name not in tools and not link.is_symlink() and os.access(tool, os.X_OK):
                link.symlink_to(tool)
    return f"{machine.root / 'state' / 'bin'}:{bare}"


def test_an_image_without_the_nvidia_driver_is_refused(tmp_path: Path, scripts: dict[str, str]) -> None:
    machine = host(tmp_path, scripts["rdma"])
    done = machine.run(PATH=without(machine, "nvidia-smi"))
    assert done.returncode == 1 and "the image has no NVIDIA driver" in done.stderr


def test_tcpxo_installs_docker_and_the_container_toolkit(tmp_path: Path, scripts: dict[str, str]) -> None:
    """The example's accelerator image has neither (Cluster Toolkit's A3 Mega blueprint installs both): the script
    installs them as the blueprint does, then goes on to RxDM, NCCL and Lustre; the next boot installs nothing."""
    machine = host(tmp_path, scripts["tcpxo"])
    write(machine.root / "etc" / "os-release", 'ID=ubuntu\nVERSION_ID="22.04"\nUBUNTU_CODENAME=jammy')
    path = without(machine, "docker", "nvidia-container-cli")
    done = machine.run(PATH=path)
    assert done.returncode == 0, done.stderr
    calls = machine.calls
    get_docker = next(c for c in calls if c.endswith(" https://get.docker.com"))
    assert get_docker.startswith("curl -fsSL -o ") and "get-docker.sh " in calls  # the stub installer ran
    keyring = next(c for c in calls if c.endswith("cuda-keyring_1.1-1_all.deb"))
    assert keyring.endswith(" https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64/"
                            "cuda-keyring_1.1-1_all.deb")
    toolkit = calls.index("apt-get install -y -q nvidia-container-toolkit")
    assert calls[toolkit - 2].startswith("apt-get install -y -q /") and calls[toolkit - 1] == "apt-get update -q"
    assert calls.index("systemctl restart docker.service") < calls.index("systemctl enable fabricgen-rxdm.service")
    assert (machine.root / "etc/apt/preferences.d/block-broken-nvidia-container").read_text() == (
        "Package: nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools "
        "libnvidia-container1\nPin: version 1.17.7-1\nPin-Priority: 100\n")
    assert (machine.root / "etc/fstab").exists() and "ready" in done.stderr
    again = len(calls)
    assert machine.run(PATH=path).returncode == 0
    assert not any("docker.com" in c or "nvidia-container-toolkit" in c or "restart docker" in c
                   for c in machine.calls[again:])


def test_apt_sources_are_signed_by_googles_keys(tmp_path: Path, scripts: dict[str, str]) -> None:
    """packages.cloud.google.com is signed by its own key (apt/doc/apt-key.gpg), Artifact Registry's repositories by
    theirs (doc/repo-signing-key.gpg): Cluster Toolkit's install_nccl_gib.yml adds both. Every source names its
    keyring, but gpudirect-tcpxo, which Cluster Toolkit adds trusted=yes."""
    keys = {"/etc/apt/keyrings/cloud-google.gpg": "https://packages.cloud.google.com/apt/doc/apt-key.gpg",
            "/etc/apt/keyrings/gcp-ar-repo.gpg": "https://us-apt.pkg.dev/doc/repo-signing-key.gpg"}
    for kind in ("tcpxo", "rdma"):
        (tmp_path / kind).mkdir()
        machine = host(tmp_path / kind, scripts[kind])
        (machine.root / "state" / "no-import-helper").touch()
        assert machine.run().returncode == 0
        sources = {p.stem: p.read_text().strip() for p in (machine.root / "etc/apt/sources.list.d").iterdir()}
        assert sources["artifact-registry-transport"].startswith(
            "deb [signed-by=/etc/apt/keyrings/cloud-google.gpg] https://packages.cloud.google.com/apt ")
        assert sources["lustre-client"].startswith("deb [signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] https://us-apt")
        gib, tcpxo = sources.get("gpudirect-gib", ""), sources.get("gpudirect-tcpxo", "")
        assert (gib or tcpxo) and (not gib or gib.startswith(
            "deb [signed-by=/etc/apt/keyrings/gcp-ar-repo.gpg] ar+https://us-apt.pkg.dev/"))
        assert not tcpxo or tcpxo.startswith("deb [arch=all trusted=yes] ar+https://us-apt.pkg.dev/")
        for name, line in sources.items():
            if name != "gpudirect-tcpxo":
                keyring = line.split("signed-by=", 1)[1].split("]", 1)[0]
                assert (machine.root / keyring.lstrip("/")).read_text(), f"{name}: {keyring} not written"
                assert f"curl -fsSL {keys[keyring]}" in machine.calls
