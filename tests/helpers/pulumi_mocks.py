"""The emitted Pulumi programs run under Pulumi's unit-test mocks (no CLI, no cloud), for tests/external/cloud:
a recorder of every resource's inputs and a monitor of what each resource waits for."""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml


@dataclass(frozen=True)
class Resource:
    type: str
    name: str
    inputs: dict[str, Any]
    id: str


class Recorder(pulumi.runtime.Mocks):
    """Records resources; answers with the inputs plus the outputs the programs read back."""

    def __init__(self) -> None:
        self.resources: list[Resource] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == "aws:fsx/lustreFileSystem:LustreFileSystem":
            state.update(dnsName=f"{args.name}.fsx.us-east-1.amazonaws.com", mountName="abcdefgh")
        if args.typ in ("aws:ec2/instance:Instance", "alicloud:ecs/instance:Instance"):
            state["privateIp"] = f"10.0.0.{len(self.resources)}"
        if args.typ == "aws:iam/instanceProfile:InstanceProfile":
            state["arn"] = f"arn:aws:iam::123456789012:instance-profile/{args.inputs['name']}"
        if args.typ == "aws:ec2/launchTemplate:LaunchTemplate":
            state["latestVersion"] = 1.0
        if args.typ == "alicloud:ecs/eipAddress:EipAddress":
            state["ipAddress"] = "203.0.113.10"
        if args.typ == "alicloud:vpc/natGateway:NatGateway":
            state["snatTableIds"] = f"stb-{args.name}"
        if args.typ == "alicloud:nas/protocolService:ProtocolService":
            state["protocolServiceId"] = f"ptc-{args.name}"
        if args.typ == "alicloud:nas/protocolMountTarget:ProtocolMountTarget":
            state["exportId"] = f"exp-{args.name}"
        if args.typ == "gcp:lustre/instance:Instance":  # Managed Lustre's IP_ADDRESS@tcp:/FILESYSTEM
            state["mountPoint"] = f"10.90.0.2@tcp:/{args.inputs['filesystem']}"
        if args.typ in ("gcp:compute/network:Network", "gcp:compute/subnetwork:Subnetwork",
                        "gcp:compute/resourcePolicy:ResourcePolicy", "gcp:compute/instanceTemplate:InstanceTemplate"):
            state["selfLink"] = f"https://www.googleapis.com/compute/v1/{args.name}"
            state["selfLinkUnique"] = f"https://www.googleapis.com/compute/v1/{args.name}?id=1"
        if args.typ == "gcp:compute/instance:Instance":
            state["networkInterfaces"] = [{**nic, "networkIp": f"10.60.0.{len(self.resources)}"}
                                          for nic in args.inputs["networkInterfaces"]]
        if args.typ == "pulumi-python:dynamic:Resource":  # the CPFS export's mount domain, read from the NAS API
            state["domain"] = f"{args.inputs['file_system_id']}.cn-wulanchabu.cpfs.aliyuncs.com"
        resource_id = f"{args.name}-id"
        self.resources.append(Resource(args.typ, args.name, dict(args.inputs), resource_id))
        return resource_id, state

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        if args.token == "aws:ec2/getAmi:getAmi":  # the launch template maps the root disk on the AMI's root device
            self.calls.append((args.token, dict(args.args)))
            return {"id": "ami-0123456789abcdef0", "rootDeviceName": "/dev/sda1"}
        raise AssertionError(f"the program made an unexpected provider call {args.token}")

    def of_type(self, typ: str) -> list[Resource]:
        return [r for r in self.resources if r.type == typ]

    def one(self, typ: str) -> Resource:
        found = self.of_type(typ)
        assert len(found) == 1, f"expected one {typ}, got {len(found)}"
        return found[0]

    def named(self, typ: str, name: str) -> Resource:
        (found,) = [r for r in self.of_type(typ) if r.name == name]
        return found


class DependencyMonitor(pulumi.runtime.mocks.MockMonitor):
    """The mock monitor, also recording what each resource waits for: (type, name) of the resources it takes
    inputs from or names in depends_on, by its own (type, name); and the resource options the engine would act on
    (``delete_before_replace``, the ``create``/``update``/``delete`` custom timeouts)."""

    def __init__(self, mocks: Recorder) -> None:
        super().__init__(mocks)
        self.recorder = mocks
        self.waits_for: dict[tuple[str, str], set[tuple[str, str]]] = {}
        self.options: dict[tuple[str, str], dict[str, Any]] = {}

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 (the gRPC method's name)
        self.waits_for[(request.type, request.name)] = {
            (urn.split("::")[-2].rsplit("$", 1)[-1], urn.split("::")[-1]) for urn in request.dependencies}
        timeouts = request.customTimeouts
        self.options[(request.type, request.name)] = {
            "delete_before_replace": request.deleteBeforeReplace,
            "timeouts": (timeouts.create, timeouts.update, timeouts.delete)}
        return super().RegisterResource(request)  # type: ignore[no-untyped-call]


def run(project: Path, monitor: DependencyMonitor | None = None) -> Recorder:
    """Run the project's program from its own directory under mocks, waiting for every resource."""
    mocks = monitor.recorder if monitor else Recorder()
    stack = next(p.name for p in project.glob("Pulumi.*.yaml") if p.name != "Pulumi.yaml")
    pulumi.runtime.set_mocks(mocks, project=yaml.safe_load((project / "Pulumi.yaml").read_text())["name"],
                             stack=stack.removeprefix("Pulumi.").removesuffix(".yaml"), preview=False,
                             monitor=monitor)

    @pulumi.runtime.test
    def program() -> None:
        runpy.run_path(str(project), run_name="__main__")  # the directory, as Pulumi runs it (first_boot.py beside)

    program()
    return mocks
