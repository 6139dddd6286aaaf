"""The emitted Pulumi projects, run from their own directory under Pulumi's unit-test mocks (no CLI, no cloud).

Each test renders a spec, writes the pulumi/<stack>/ artifacts to a fresh directory, runs its __main__.py there
with mocks that record every resource's inputs (camelCase, ints as floats), and checks what AWS or Alibaba Cloud
would receive. Resources are built per test: a resource error would otherwise surface in the next test. The mocks are
tests/helpers/pulumi_mocks.py; the project directory itself is checked in tests/unit/features/cloud/test_cloud.py.
"""

from __future__ import annotations

import importlib.metadata
import json
import runpy
from pathlib import Path
from typing import Any

import pytest

from fabricgen.features.cloud.render import PINS
from tests.helpers.cloud import ALI_SPEC, AWS_SPEC, emit
from tests.helpers.pulumi_mocks import DependencyMonitor, Recorder, run

# The SDKs warn about their own deprecated resources when imported: noise, not about these programs.
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_aws"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:pulumi_alicloud")]


def cluster_subnet(mocks: Recorder) -> str:
    """The id of the spec's (first) subnet, the one the instances live in."""
    return mocks.named("aws:ec2/subnet:Subnet", "subnet-0").id


def efa_interfaces(mocks: Recorder) -> list[dict[str, Any]]:
    return list(mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs["networkInterfaces"])


@pytest.mark.parametrize(("instance_type", "count"), [("p5.48xlarge", 32), ("p4d.24xlarge", 4),
                                                      ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8)])
def test_one_efa_interface_per_network_card(tmp_path: Path, instance_type: str, count: int) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"type: p5.48xlarge": f"type: {instance_type}"}))
    nics = efa_interfaces(mocks)
    assert [n["networkCardIndex"] for n in nics] == list(range(count))
    # AWS, efa-acc-inst-types "use case 1": the primary at card 0 / device 0, the others at device index 1
    assert [n["deviceIndex"] for n in nics] == [0.0] + [1.0] * (count - 1)
    assert nics[0]["interfaceType"] == "efa"  # the primary carries IP too: EFA-only cannot be primary
    assert {n["interfaceType"] for n in nics[1:]} <= {"efa-only"}
    group = mocks.one("aws:ec2/securityGroup:SecurityGroup").id
    subnet = cluster_subnet(mocks)
    assert all(n["securityGroups"] == [group] and n["subnetId"] == subnet for n in nics)
    assert all(n["deleteOnTermination"] == "true" for n in nics)


def test_fewer_interfaces_than_the_maximum(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"efa: {interfaces: max}": "efa: {interfaces: 4}"}))
    assert [n["networkCardIndex"] for n in efa_interfaces(mocks)] == [0, 1, 2, 3]


def test_security_group_rules_self_referencing_all_protocols_both_ways(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path))
    group = mocks.one("aws:ec2/securityGroup:SecurityGroup").id
    ingress = mocks.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
    egress = mocks.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
    for rules in (ingress, egress):
        own = [r.inputs for r in rules if r.inputs.get("referencedSecurityGroupId") == group]
        assert len(own) == 1
        assert own[0]["ipProtocol"] == "-1" and own[0]["securityGroupId"] == group
        assert "fromPort" not in own[0] and "cidrIpv4" not in own[0]
    assert [r.inputs for r in ingress if "cidrIpv4" in r.inputs] == [], "no public address: no SSH rule"
    assert [r.inputs["cidrIpv4"] for r in egress if "cidrIpv4" in r.inputs] == ["0.0.0.0/0"]


def test_ssm_session_manager_is_the_default_access(tmp_path: Path) -> None:
    """The instances have no public address: they are reached through SSM Session Manager, by an instance profile
    whose role has AmazonSSMManagedInstanceCore, on the launch template."""
    mocks = run(emit(AWS_SPEC, tmp_path))
    role = mocks.one("aws:iam/role:Role").inputs
    assert json.loads(role["assumeRolePolicy"])["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
    attached = mocks.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment").inputs
    assert attached["policyArn"] == "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"
    assert mocks.one("aws:iam/instanceProfile:InstanceProfile").inputs["role"] == role["name"]
    template = mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["iamInstanceProfile"] == {"arn": "arn:aws:iam::123456789012:instance-profile/aws-p5-efa-ssm"}
    assert all(r.name != "bastion" for r in mocks.of_type("aws:ec2/instance:Instance"))


def test_bastion_access_is_the_only_ssh_path(tmp_path: Path) -> None:
    bastion = {"  access: {kind: ssm}": "  access: {kind: bastion, ingress: [198.51.100.0/24]}"}
    mocks = run(emit(AWS_SPEC, tmp_path, bastion))
    jump_host = mocks.named("aws:ec2/instance:Instance", "bastion").inputs
    public = mocks.named("aws:ec2/subnet:Subnet", "public")
    assert jump_host["associatePublicIpAddress"] is True and jump_host["subnetId"] == public.id
    assert (jump_host["instanceType"], jump_host["keyName"]) == ("t3.small", "ops")
    rules = {r.name: r.inputs for r in mocks.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    jump = mocks.named("aws:ec2/securityGroup:SecurityGroup", "bastion").id
    assert (rules["bastion-ssh-0"]["cidrIpv4"], rules["bastion-ssh-0"]["securityGroupId"]) == ("198.51.100.0/24", jump)
    assert (rules["ssh-from-bastion"]["referencedSecurityGroupId"], rules["ssh-from-bastion"]["fromPort"]) == (jump, 22)
    assert not mocks.of_type("aws:iam/instanceProfile:InstanceProfile")


def test_root_disk_on_the_images_root_device(tmp_path: Path) -> None:
    """The system disk gets the spec's size (gp3) on the root device the AMI names (looked up at deploy time)."""
    mocks = run(emit(AWS_SPEC, tmp_path))
    (mapping,) = mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs["blockDeviceMappings"]
    assert mapping == {"deviceName": "/dev/sda1", "ebs": {"volumeSize": 300, "volumeType": "gp3",
                                                          "deleteOnTermination": "true"}}
    assert mocks.calls == [("aws:ec2/getAmi:getAmi", {"filters": [{"name": "image-id",
                                                                    "values": ["ami-0123456789abcdef0"]}]})]


def test_cluster_placement_group_used_by_the_launch_template(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path))
    placement = mocks.one("aws:ec2/placementGroup:PlacementGroup")
    assert placement.inputs["strategy"] == "cluster"
    template = mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert placement.inputs["name"] == "aws-p5-efa"
    assert template["placement"] == {"groupName": "aws-p5-efa"}
    assert template["instanceType"] == "p5.48xlarge" and template["imageId"] == "ami-0123456789abcdef0"
    instances = mocks.of_type("aws:ec2/instance:Instance")
    assert sorted(i.name for i in instances) == [f"p5-{n:02d}" for n in range(1, 17)]  # registered in no fixed order
    assert all(i.inputs["launchTemplate"]["id"] == f"{'efa'}-id" for i in instances)


def test_capacity_block_without_placement_group(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"    key_pair: ops\n": "    key_pair: ops\n    capacity: {kind: block, "
                                                                  "id: cr-0123456789abcdef0}\n"}))
    assert not mocks.of_type("aws:ec2/placementGroup:PlacementGroup")
    template = mocks.one("aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert "placement" not in template
    assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert template["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}


def test_auto_scaling_group(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"    key_pair: ops\n": "    key_pair: ops\n    group: auto-scaling\n"}))
    assert not mocks.of_type("aws:ec2/instance:Instance")
    group = mocks.one("aws:autoscaling/group:Group").inputs
    assert group["minSize"] == group["maxSize"] == group["desiredCapacity"] == 16.0
    assert group["vpcZoneIdentifiers"] == [cluster_subnet(mocks)]
    assert all("subnetId" not in n for n in efa_interfaces(mocks))  # the group picks the subnet
    version = group["launchTemplate"]["version"]
    assert isinstance(version, str), "GroupLaunchTemplateArgs.version is a string in pulumi_aws 7"


def test_fsx_arguments_aws_accepts(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path))
    fsx = mocks.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    group = mocks.one("aws:ec2/securityGroup:SecurityGroup").id
    assert fsx["deploymentType"] == "PERSISTENT_2" and fsx["storageType"] == "SSD"
    assert fsx["storageCapacity"] == 4800.0 and fsx["perUnitStorageThroughput"] == 1000.0
    assert all(type(fsx[key]) is float for key in ("storageCapacity", "perUnitStorageThroughput"))  # ints, not text
    assert fsx["subnetIds"] == cluster_subnet(mocks)  # ONE subnet, a string
    assert isinstance(fsx["subnetIds"], str)
    assert fsx["securityGroupIds"] == [group]  # EFA needs the EFA security group
    assert fsx["efaEnabled"] is True and fsx["metadataConfiguration"] == {"mode": "AUTOMATIC"}
    assert fsx["fileSystemTypeVersion"] == "2.15"


def test_fsx_user_provisioned_metadata(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"mountpoint: /fsx}": "mountpoint: /fsx, metadata_iops: 24000}"}))
    fsx = mocks.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs
    assert fsx["metadataConfiguration"] == {"mode": "USER_PROVISIONED", "iops": 24000.0}


def test_existing_vpc_and_subnet_are_reused(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"vpc: {cidr: 10.50.0.0/16}": "vpc: {id: vpc-0abc, cidr: 10.50.0.0/16}",
                                          "- {cidr: 10.50.0.0/20}": "- {id: subnet-0def}"}))
    assert not mocks.of_type("aws:ec2/vpc:Vpc") and not mocks.of_type("aws:ec2/subnet:Subnet")
    assert mocks.one("aws:ec2/securityGroup:SecurityGroup").inputs["vpcId"] == "vpc-0abc"
    assert {n["subnetId"] for n in efa_interfaces(mocks)} == {"subnet-0def"}
    assert not [r for r in mocks.resources if r.type in EGRESS]


EGRESS = ("aws:ec2/internetGateway:InternetGateway", "aws:ec2/eip:Eip", "aws:ec2/natGateway:NatGateway",
          "aws:ec2/routeTable:RouteTable", "aws:ec2/routeTableAssociation:RouteTableAssociation")


def test_existing_vpc_keeps_its_routing_even_for_new_subnets(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path, {"vpc: {cidr: 10.50.0.0/16}": "vpc: {id: vpc-0abc, cidr: 10.50.0.0/16}"}))
    assert mocks.one("aws:ec2/subnet:Subnet").inputs["vpcId"] == "vpc-0abc"
    assert not [r for r in mocks.resources if r.type in EGRESS]


def test_new_vpc_egress_through_a_nat_gateway_in_a_public_subnet(tmp_path: Path) -> None:
    mocks = run(emit(AWS_SPEC, tmp_path))
    vpc = mocks.one("aws:ec2/vpc:Vpc").id
    gateway = mocks.one("aws:ec2/internetGateway:InternetGateway")
    assert gateway.inputs["vpcId"] == vpc
    public = mocks.named("aws:ec2/subnet:Subnet", "public")
    assert public.inputs["cidrBlock"] == "10.50.255.240/28"  # the VPC's top /28, clear of 10.50.0.0/20
    assert public.inputs["availabilityZone"] == "us-east-1a" and public.inputs["vpcId"] == vpc
    address = mocks.one("aws:ec2/eip:Eip")
    assert address.inputs["domain"] == "vpc"
    nat = mocks.one("aws:ec2/natGateway:NatGateway")
    assert nat.inputs["allocationId"] == address.id and nat.inputs["subnetId"] == public.id
    tables = {t.id: t.inputs for t in mocks.of_type("aws:ec2/routeTable:RouteTable")}
    assert all(t["vpcId"] == vpc for t in tables.values())
    routes = {s.inputs["subnetId"]: tables[s.inputs["routeTableId"]]["routes"]
              for s in mocks.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")}
    assert routes == {public.id: [{"cidrBlock": "0.0.0.0/0", "gatewayId": gateway.id}],
                      cluster_subnet(mocks): [{"cidrBlock": "0.0.0.0/0", "natGatewayId": nat.id}]}
    # the instances, FSx and the launch template stay in the private subnet
    assert {n["subnetId"] for n in efa_interfaces(mocks)} == {cluster_subnet(mocks)}
    assert mocks.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs["subnetIds"] == cluster_subnet(mocks)


def test_every_new_subnet_routes_through_the_nat_gateway(tmp_path: Path) -> None:
    second = "- {cidr: 10.50.0.0/20}\n      - {cidr: 10.50.16.0/20}"
    mocks = run(emit(AWS_SPEC, tmp_path, {"- {cidr: 10.50.0.0/20}": second}))
    private = {t.id for t in mocks.of_type("aws:ec2/routeTable:RouteTable") if t.name == "private"}
    associated = {a.inputs["subnetId"] for a in mocks.of_type("aws:ec2/routeTableAssociation:RouteTableAssociation")
                  if a.inputs["routeTableId"] in private}
    assert associated == {mocks.named("aws:ec2/subnet:Subnet", f"subnet-{i}").id for i in (0, 1)}


@pytest.mark.parametrize("group", ["instances", "auto-scaling"])
def test_instances_boot_after_the_nat_route(tmp_path: Path, group: str) -> None:
    monitor = DependencyMonitor(Recorder())
    run(emit(AWS_SPEC, tmp_path, {"    key_pair: ops\n": f"    key_pair: ops\n    group: {group}\n"}), monitor)
    # neither takes an input from what it waits for here: only depends_on puts it there
    assert ("aws:ec2/internetGateway:InternetGateway", "igw") in monitor.waits_for[("aws:ec2/natGateway:NatGateway",
                                                                                    "nat")]
    booted = ([("aws:ec2/instance:Instance", f"p5-{n:02d}") for n in range(1, 17)] if group == "instances" else
              [("aws:autoscaling/group:Group", "efa")])
    route = ("aws:ec2/routeTableAssociation:RouteTableAssociation", "private-0")
    assert all(route in monitor.waits_for[resource] for resource in booted)


def test_erdma_interfaces_high_performance_on_their_cards(tmp_path: Path) -> None:
    mocks = run(emit(ALI_SPEC, tmp_path))
    instances = mocks.of_type("alicloud:ecs/instance:Instance")
    assert sorted(i.name for i in instances) == [f"gn8v-{n:02d}" for n in range(1, 9)]  # registered in no fixed order
    deployment = mocks.one("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet")
    assert deployment.inputs["strategy"] == "LowLatency"
    assert all(i.inputs["deploymentSetId"] == deployment.id for i in instances)
    # card 0: the primary ENI is the ERI; card 1: one secondary ERI, so 2 ERIs (EriQuantity) per instance
    assert all(i.inputs["networkInterfaceTrafficMode"] == "HighPerformance" for i in instances)
    eris = {r.id: r.inputs for r in mocks.of_type("alicloud:ecs/ecsNetworkInterface:EcsNetworkInterface")}
    assert len(eris) == 8 and all(e["networkInterfaceTrafficMode"] == "HighPerformance" for e in eris.values())
    attachments = mocks.of_type("alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment")
    assert sorted(a.inputs["networkInterfaceId"] for a in attachments) == sorted(eris)
    assert sorted((a.inputs["instanceId"], a.inputs["networkCardIndex"]) for a in attachments) == sorted(
        (i.id, 1.0) for i in instances)


@pytest.mark.parametrize(("edit", "secondary_cards"), [
    ({"type: ecs.ebmgn8v.48xlarge": "type: ecs.ebmgn8i.32xlarge"}, [1.0, 2.0, 3.0]),  # 4 ERIs: cards 1..3 attached
    ({"eri: {interfaces: max}": "eri: {interfaces: 1}"}, []),  # one ERI: the primary alone
])
def test_erdma_secondary_eris_one_per_further_card(tmp_path: Path, edit: dict[str, str],
                                                   secondary_cards: list[float]) -> None:
    mocks = run(emit(ALI_SPEC, tmp_path, edit))
    instances = mocks.of_type("alicloud:ecs/instance:Instance")
    assert all(i.inputs["networkInterfaceTrafficMode"] == "HighPerformance" for i in instances)
    attachments = mocks.of_type("alicloud:ecs/ecsNetworkInterfaceAttachment:EcsNetworkInterfaceAttachment")
    by_instance: dict[str, list[float]] = {i.id: [] for i in instances}
    for attachment in attachments:
        by_instance[attachment.inputs["instanceId"]].append(attachment.inputs["networkCardIndex"])
    assert {i: sorted(cards) for i, cards in by_instance.items()} == {i.id: secondary_cards for i in instances}


ALI_EGRESS = ("alicloud:vpc/natGateway:NatGateway", "alicloud:ecs/eipAddress:EipAddress",
              "alicloud:ecs/eipAssociation:EipAssociation", "alicloud:vpc/snatEntry:SnatEntry")


def test_new_alibaba_vpc_egress_through_an_enhanced_nat_gateway(tmp_path: Path) -> None:
    second = "- {cidr: 172.16.0.0/20}\n      - {cidr: 172.16.16.0/20}"
    mocks = run(emit(ALI_SPEC, tmp_path, {"- {cidr: 172.16.0.0/20}": second}))
    vpc = mocks.one("alicloud:vpc/network:Network").id
    switches = [mocks.named("alicloud:vpc/switch:Switch", f"vswitch-{i}").id for i in (0, 1)]
    nat = mocks.one("alicloud:vpc/natGateway:NatGateway")
    assert nat.inputs["vpcId"] == vpc and nat.inputs["vswitchId"] == switches[0]  # the cluster's first vSwitch
    assert (nat.inputs["natType"], nat.inputs["networkType"], nat.inputs["paymentType"],
            nat.inputs["internetChargeType"]) == ("Enhanced", "internet", "PayAsYouGo", "PayByLcu")
    address = mocks.one("alicloud:ecs/eipAddress:EipAddress")
    assert (address.inputs["internetChargeType"], address.inputs["paymentType"]) == ("PayByTraffic", "PayAsYouGo")
    assert address.inputs["bandwidth"] == "200"  # a string in the SDK; PayByTraffic takes 1 to 200 Mbit/s
    association = mocks.one("alicloud:ecs/eipAssociation:EipAssociation").inputs
    assert association == {"allocationId": address.id, "instanceId": nat.id, "instanceType": "Nat"}
    entries = [e.inputs for e in mocks.of_type("alicloud:vpc/snatEntry:SnatEntry")]
    assert sorted(e["sourceVswitchId"] for e in entries) == sorted(switches)  # one per vSwitch
    assert all(e["snatTableId"] == "stb-nat" and e["snatIp"] == "203.0.113.10" for e in entries)
    assert not mocks.of_type("alicloud:vpc/routeEntry:RouteEntry")  # Alibaba adds 0.0.0.0/0 to the gateway itself


def test_instances_boot_after_the_snat_entries(tmp_path: Path) -> None:
    monitor = DependencyMonitor(Recorder())
    run(emit(ALI_SPEC, tmp_path), monitor)
    # the entries take no input from the association: only depends_on puts it there
    snat = ("alicloud:vpc/snatEntry:SnatEntry", "snat-0")
    assert ("alicloud:ecs/eipAssociation:EipAssociation", "nat") in monitor.waits_for[snat]
    assert all(snat in monitor.waits_for[("alicloud:ecs/instance:Instance", f"gn8v-{n:02d}")] for n in range(1, 9))


def test_existing_alibaba_vpc_is_left_alone(tmp_path: Path) -> None:
    mocks = run(emit(ALI_SPEC, tmp_path, {"vpc: {cidr: 172.16.0.0/12}": "vpc: {id: vpc-0abc, cidr: 172.16.0.0/12}"}))
    assert mocks.one("alicloud:vpc/switch:Switch").inputs["vpcId"] == "vpc-0abc"
    assert not mocks.of_type("alicloud:vpc/network:Network")
    assert not [r for r in mocks.resources if r.type in ALI_EGRESS]


def test_erdma_security_group_and_cpfs(tmp_path: Path) -> None:
    mocks = run(emit(ALI_SPEC, tmp_path))
    group = mocks.one("alicloud:ecs/securityGroup:SecurityGroup").id
    rules = [r.inputs for r in mocks.of_type("alicloud:ecs/securityGroupRule:SecurityGroupRule")]
    own = [r for r in rules if r.get("sourceSecurityGroupId") == group]
    assert own == [{"securityGroupId": group, "type": "ingress", "ipProtocol": "all", "portRange": "-1/-1",
                    "sourceSecurityGroupId": group, "policy": "accept", "nicType": "intranet"}]
    cpfs = mocks.one("alicloud:nas/fileSystem:FileSystem").inputs
    switch = mocks.one("alicloud:vpc/switch:Switch")
    assert switch.inputs["zoneId"] == "cn-wulanchabu-c" and switch.inputs["cidrBlock"] == "172.16.0.0/20"
    assert cpfs["fileSystemType"] == "cpfs" and cpfs["protocolType"] == "cpfs"
    assert cpfs["storageType"] == "advance_200" and cpfs["capacity"] == 3600.0
    assert cpfs["vswitchId"] == switch.id and cpfs["zoneId"] == "cn-wulanchabu-c"


def test_cpfs_served_over_nfs_from_an_export_of_its_root(tmp_path: Path) -> None:
    mocks = run(emit(ALI_SPEC, tmp_path))
    cpfs = mocks.one("alicloud:nas/fileSystem:FileSystem")
    vpc, switch = mocks.one("alicloud:vpc/network:Network").id, mocks.one("alicloud:vpc/switch:Switch").id
    service = mocks.one("alicloud:nas/protocolService:ProtocolService").inputs
    assert service == {"fileSystemId": cpfs.id, "protocolType": "NFS", "protocolSpec": "General", "vpcId": vpc,
                       "vswitchId": switch, "description": "datasets NFS"}
    export = mocks.one("alicloud:nas/protocolMountTarget:ProtocolMountTarget")
    assert export.inputs == {"fileSystemId": cpfs.id, "protocolServiceId": "ptc-cpfs-datasets-nfs", "path": "/",
                             "vpcId": vpc, "vswitchId": switch, "accessGroupName": "DEFAULT_VPC_GROUP_NAME",
                             "description": "datasets root"}
    lookup = {k: v for k, v in mocks.one("pulumi-python:dynamic:Resource").inputs.items() if k != "__provider"}
    assert lookup == {"region": "cn-wulanchabu", "file_system_id": cpfs.id,
                      "protocol_service_id": "ptc-cpfs-datasets-nfs", "export_id": "exp-cpfs-datasets-export"}


def test_erdma_instances_mount_cpfs_by_user_data(tmp_path: Path) -> None:
    import base64

    mocks = run(emit(ALI_SPEC, tmp_path))
    scripts = {base64.b64decode(i.inputs["userData"]).decode() for i in mocks.of_type("alicloud:ecs/instance:Instance")}
    (script,) = scripts
    assert "\nFILESYSTEMS=(cpfs-datasets-id.cn-wulanchabu.cpfs.aliyuncs.com:/share /cpfs)\n" in script


def _stack_parts(project: Path) -> dict[str, Any]:
    """The program's definitions, loaded without running it (it runs only as __main__, as Pulumi runs it)."""
    return runpy.run_path(str(project), run_name="stack")


def test_export_domain_reads_the_nas_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alibabacloud_nas20170626 import models
    from alibabacloud_nas20170626.client import Client

    asked = []

    def get_protocol_mount_target(self: Client, request: models.GetProtocolMountTargetRequest) -> Any:
        asked.append((self._region_id, request.to_map()))
        target = {"ExportId": request.export_id, "Path": "/",
                  "ProtocolMountTargetDomain": "cpfs-0123-4567.cn-wulanchabu.cpfs.aliyuncs.com"}
        return models.GetProtocolMountTargetResponse().from_map({"statusCode": 200,
                                                                 "body": {"ProtocolMountTarget": target}})

    monkeypatch.setattr(Client, "get_protocol_mount_target", get_protocol_mount_target)
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "AKIDEXAMPLE")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "not-a-secret")
    monkeypatch.delenv("ALICLOUD_SECURITY_TOKEN", raising=False)
    parts = _stack_parts(emit(ALI_SPEC, tmp_path))
    props = {"region": "cn-wulanchabu", "file_system_id": "cpfs-0123", "protocol_service_id": "ptc-1",
             "export_id": "exp-4567"}
    created = parts["ExportDomainProvider"]().create(props)
    assert created.id == "exp-4567" and created.outs["domain"] == "cpfs-0123-4567.cn-wulanchabu.cpfs.aliyuncs.com"
    assert asked == [("cn-wulanchabu", {"FileSystemId": "cpfs-0123", "ProtocolServiceId": "ptc-1",
                                        "ExportId": "exp-4567"})]
    credential = parts["credentials"]().get_credential()
    assert (credential.access_key_id, credential.type) == ("AKIDEXAMPLE", "access_key")


def test_another_export_is_another_lookup(tmp_path: Path) -> None:
    provider = _stack_parts(emit(ALI_SPEC, tmp_path))["ExportDomainProvider"]()
    old = {"region": "cn-wulanchabu", "file_system_id": "cpfs-0", "protocol_service_id": "p", "export_id": "exp-1",
           "domain": "cpfs-0-1.cn-wulanchabu.cpfs.aliyuncs.com"}
    same = provider.diff("exp-1", old, {**old, "domain": None})
    assert not same.changes and not same.replaces
    moved = provider.diff("exp-1", old, {**old, "export_id": "exp-2"})
    assert moved.changes and moved.replaces == ["export_id"]  # a new id: replaced, never updated in place


def test_export_without_a_domain_fails_the_deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from alibabacloud_nas20170626 import models
    from alibabacloud_nas20170626.client import Client

    monkeypatch.setattr(Client, "get_protocol_mount_target",
                        lambda self, request: models.GetProtocolMountTargetResponse().from_map({"body": {}}))
    monkeypatch.setenv("ALICLOUD_ACCESS_KEY", "AKIDEXAMPLE")
    monkeypatch.setenv("ALICLOUD_SECRET_KEY", "not-a-secret")
    parts = _stack_parts(emit(ALI_SPEC, tmp_path))
    with pytest.raises(RuntimeError, match="CPFS export exp-1 of cpfs-0 has no mount domain"):
        parts["export_domain"]({"region": "cn-wulanchabu", "file_system_id": "cpfs-0", "protocol_service_id": "p",
                                "export_id": "exp-1"})


@pytest.mark.parametrize("provider", sorted(PINS))
def test_pins_are_the_tested_versions(provider: str) -> None:
    for package, version in PINS[provider]:
        assert importlib.metadata.version(package) == version, f"requirements.txt pins {package}=={version}"
