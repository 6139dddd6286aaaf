"""Cloud clusters: the build's defaults and layout, the catalog's facts, the render targets, and
``fabricgen apply --cloud`` on both branches (no pulumi CLI: the exact commands and exit 2; a pulumi CLI: the
Automation API, faked here so no cloud is ever called)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import yaml
from typer.testing import CliRunner

from fabricgen.cli import app
from fabricgen.features.cloud import deploy
from fabricgen.features.cloud.build import catalog, instance_types
from fabricgen.features.cloud.gcp import lustre_capacity_hint
from fabricgen.features.cloud.render import SOURCE_ALLOWANCE, interfaces, user_data_limit, user_data_size
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO
from tests.helpers.cloud import emit

AWS_SPEC = INVENTORIES / "aws-p5-efa.yaml"
runner = CliRunner()


def edited(tmp_path: Path, edits: dict[str, str], spec: Path = AWS_SPEC) -> Path:
    text = spec.read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / spec.name
    path.write_text(text)
    return path


@pytest.mark.parametrize(("name", "count"), [("p4d.24xlarge", 4), ("p4de.24xlarge", 4), ("p5.48xlarge", 32),
                                             ("p5e.48xlarge", 32), ("p5en.48xlarge", 16), ("p6-b200.48xlarge", 8)])
def test_catalog_efa_counts(name: str, count: int) -> None:
    itype = instance_types("aws")[name]
    assert itype.interfaces == count and itype.network_cards == count and itype.gpus == 8
    assert itype.source.startswith("https://docs.aws.amazon.com/")


def test_catalog_eri_counts() -> None:
    types = instance_types("alicloud")
    counts = {name: t.interfaces for name, t in types.items()}
    assert counts == {"ecs.ebmgn7ex.32xlarge": 2, "ecs.ebmgn7v.32xlarge": 2, "ecs.ebmgn8v.48xlarge": 2,
                      "ecs.ebmgn8is.32xlarge": 2, "ecs.ebmgn8i.32xlarge": 4}
    assert all(t.interfaces <= t.network_cards for t in types.values())  # the layout puts one ERI on each card
    assert catalog()["aws"]["filesystems"]["fsx-lustre"]["throughputs"] == [125, 250, 500, 1000]


def test_aws_layout_one_efa_per_card() -> None:
    cloud = compile_spec(AWS_SPEC).cluster.cloud
    assert cloud is not None and cloud.interfaces == 32 and cloud.placement_group
    layout = interfaces(cloud)
    assert [n["network_card_index"] for n in layout] == list(range(32))
    assert layout[0] == {"network_card_index": 0, "device_index": 0, "interface_type": "efa"}
    assert {n["interface_type"] for n in layout[1:]} == {"efa-only"}


def test_capacity_block_defaults_to_no_placement_group(tmp_path: Path) -> None:
    spec = edited(tmp_path, {"    key_pair: ops\n": "    key_pair: ops\n    capacity: {kind: block, id: cr-0abc}\n"})
    cloud = compile_spec(spec).cluster.cloud
    assert cloud is not None and not cloud.placement_group and cloud.capacity_kind == "block"
    reservation = edited(tmp_path, {"    key_pair: ops\n": "    key_pair: ops\n    capacity: {kind: reservation, "
                                                            "id: cr-0abc}\n"})
    cloud = compile_spec(reservation).cluster.cloud
    assert cloud is not None and cloud.placement_group  # a reservation can be targeted inside a placement group


@pytest.mark.parametrize(("vpc", "subnets", "public"), [
    ("10.50.0.0/16", ["10.50.0.0/20"], "10.50.255.240/28"),
    ("10.50.0.0/16", ["10.50.0.0/20", "10.50.240.0/20"], "10.50.239.240/28"),  # the top is taken: the next free
    ("10.50.0.0/24", ["10.50.0.0/25", "10.50.0.128/26", "10.50.0.208/28"], "10.50.0.240/28"),  # gaps: the last
    ("10.50.0.0/24", ["10.50.0.0/25", "10.50.0.128/26", "10.50.0.192/27", "10.50.0.240/28"], "10.50.0.224/28"),
])
def test_public_subnet_carved_from_the_vpc_top(tmp_path: Path, vpc: str, subnets: list[str], public: str) -> None:
    listed = "".join(f"      - {{cidr: {cidr}}}\n" for cidr in subnets)
    spec = edited(tmp_path, {"vpc: {cidr: 10.50.0.0/16}": f"vpc: {{cidr: {vpc}}}",
                             "      - {cidr: 10.50.0.0/20}\n": listed})
    cloud = compile_spec(spec).cluster.cloud
    assert cloud is not None and cloud.public_subnet == public
    data = json.loads(next(a for a in render_spec(compile_spec(spec)) if a.path.endswith("cluster.json")).content)
    assert data["public_subnet"] == {"cidr": public, "zone": "us-east-1a"}


def test_no_public_subnet_for_an_existing_vpc(tmp_path: Path) -> None:
    spec = edited(tmp_path, {"vpc: {cidr: 10.50.0.0/16}": "vpc: {id: vpc-0abc, cidr: 10.50.0.0/16}"})
    cloud = compile_spec(spec).cluster.cloud
    assert cloud is not None and cloud.public_subnet == ""
    data = json.loads(next(a for a in render_spec(compile_spec(spec)) if a.path.endswith("cluster.json")).content)
    assert data["public_subnet"] is None


@pytest.mark.parametrize(("vpc", "egress"), [("{cidr: 172.16.0.0/12}", True),
                                             ("{id: vpc-0abc, cidr: 172.16.0.0/12}", False)])
def test_alibaba_egress_only_for_a_new_vpc(tmp_path: Path, vpc: str, egress: bool) -> None:
    spec = edited(tmp_path, {"vpc: {cidr: 172.16.0.0/12}": f"vpc: {vpc}"}, INVENTORIES / "alicloud-erdma.yaml")
    data = json.loads(next(a for a in render_spec(compile_spec(spec)) if a.path.endswith("cluster.json")).content)
    assert data["egress"] is egress and "public_subnet" not in data  # no subnet to carve: the NAT uses the vSwitch


def test_fsx_capacity_values(tmp_path: Path) -> None:
    for good in (1200, 2400, 9600):
        spec = edited(tmp_path, {"capacity_gib: 4800": f"capacity_gib: {good}"})
        assert compile_spec(spec).cluster.cloud is not None
    for bad in (1199, 1800, 3600):
        spec = edited(tmp_path, {"capacity_gib: 4800": f"capacity_gib: {bad}"})
        with pytest.raises(Exception, match=f"fsx-lustre does not accept {bad} GiB"):
            compile_spec(spec)


def test_cloud_renders_only_cloud_targets() -> None:
    paths = [a.path for a in render_spec(compile_spec(AWS_SPEC))]
    assert paths == ["hosts/p5.48xlarge/nccl.env", *(f"pulumi/aws-p5-efa/{name}" for name in (
        "Pulumi.aws-p5-efa.yaml", "Pulumi.yaml", "__main__.py", "cluster.json", "first_boot.py", "requirements.txt",
        "user-data.sh"))]


def test_nccl_efa_and_erdma() -> None:
    efa = render_spec(compile_spec(AWS_SPEC))[0].content.decode()
    assert [line for line in efa.splitlines() if line and not line.startswith("#")] == [
        "FI_PROVIDER=efa", "FI_EFA_USE_DEVICE_RDMA=1", "FI_EFA_USE_HUGE_PAGE=0"]
    erdma = render_spec(compile_spec(INVENTORIES / "alicloud-erdma.yaml"))[0].content.decode()
    assert [line for line in erdma.splitlines() if line and not line.startswith("#")] == [
        "NCCL_IB_HCA=erdma", "NCCL_IB_GID_INDEX=1", "NCCL_SOCKET_IFNAME=eth0", "NCCL_IB_QPS_PER_CONNECTION=8",
        "NCCL_MIN_NCHANNELS=16", "NCCL_NET_PLUGIN=none"]


def test_explain_counts_cloud_instances() -> None:
    result = runner.invoke(app, ["explain", "--json", str(AWS_SPEC)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["nodes"], summary["gpus"]) == (16, 128)
    assert summary["cloud"] == {"provider": "aws", "zone": "us-east-1a", "instance_type": "p5.48xlarge",
                                "interfaces": 32, "interface_kind": "EFA"}


# -- apply --cloud -----------------------------------------------------------------------------------------------
def test_apply_cloud_without_pulumi_prints_the_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy, "pulumi_cli", lambda: None)
    out = tmp_path / "out"
    result = runner.invoke(app, ["apply", str(AWS_SPEC), "-o", str(out), "--yes", "--cloud"])
    assert result.exit_code == 2, result.output
    project = out / "pulumi" / "aws-p5-efa"
    assert (project / "__main__.py").is_file() and (project / "cluster.json").is_file()
    lines = result.stdout.splitlines()
    start = lines.index("pulumi is not on PATH: the project is written but not deployed. Run:")
    assert lines[start + 1:] == [f"  cd {project}",
                                 "  python3 -m venv venv && venv/bin/pip install -r requirements.txt",
                                 "  pulumi stack select --create aws-p5-efa", "  pulumi up"]


class FakeStack:
    """Stands in for pulumi.automation's Stack: records what fabricgen asked, never calls a cloud."""

    calls: ClassVar[list[tuple[str, Any]]] = []

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.workspace = SimpleNamespace(install=lambda on_output: self.calls.append(("install", None)))

    def up(self, on_output: Any, show_secrets: bool) -> Any:
        self.calls.append(("up", show_secrets))
        if self.error:
            raise self.error
        on_output("Updating (aws-p5-efa)\n")
        return SimpleNamespace(outputs={"placement_group": SimpleNamespace(value="aws-p5-efa", secret=False),
                                        "token": SimpleNamespace(value="hunter2", secret=True)})


def _fake_automation(monkeypatch: pytest.MonkeyPatch, error: Exception | None = None) -> list[tuple[str, Any]]:
    from pulumi import automation

    calls: list[tuple[str, Any]] = []
    FakeStack.calls = calls

    def create_or_select_stack(stack_name: str, work_dir: str) -> FakeStack:
        calls.append(("select", (stack_name, work_dir)))
        return FakeStack(error)

    monkeypatch.setattr(deploy, "pulumi_cli", lambda: "/usr/local/bin/pulumi")
    monkeypatch.setattr(automation, "create_or_select_stack", create_or_select_stack)
    return calls


def test_apply_cloud_drives_the_automation_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _fake_automation(monkeypatch)
    out = tmp_path / "out"
    result = runner.invoke(app, ["apply", str(AWS_SPEC), "-o", str(out), "--yes", "--cloud"])
    assert result.exit_code == 0, result.output
    assert calls == [("select", ("aws-p5-efa", str(out / "pulumi" / "aws-p5-efa"))), ("install", None),
                     ("up", False)]
    assert "Updating (aws-p5-efa)" in result.stdout
    assert '  placement_group: "aws-p5-efa"' in result.stdout
    assert "hunter2" not in result.stdout and '  token: "[secret]"' in result.stdout
    again = runner.invoke(app, ["apply", str(AWS_SPEC), "-o", str(out), "--yes", "--cloud"])
    assert again.exit_code == 0 and "No changes" in again.stdout and calls[-1] == ("up", False)


def test_apply_cloud_pulumi_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pulumi.automation.errors import CommandError

    _fake_automation(monkeypatch, CommandError(SimpleNamespace(stdout="", stderr="quota exceeded", code=255)))
    result = runner.invoke(app, ["apply", str(AWS_SPEC), "-o", str(tmp_path / "out"), "--yes", "--cloud"])
    assert result.exit_code == 1, result.output
    assert "pulumi up failed for stack aws-p5-efa" in result.stderr and "quota exceeded" in result.stderr
    assert "the artifacts were written; the cloud deployment did not finish" in result.stderr


def test_apply_cloud_on_an_on_prem_spec_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(app, ["apply", str(INVENTORIES / "lab-1su.yaml"), "-o", str(out), "--yes", "--cloud"])
    assert result.exit_code == 1
    assert "--cloud needs a cloud cluster" in result.stderr and "nothing was written" in result.stderr
    assert not out.exists()


def test_fabricgen_does_not_import_pulumi_without_cloud(tmp_path: Path) -> None:
    code = ("import sys; from fabricgen.cli import main; sys.argv = ['fabricgen', 'apply', sys.argv[1], '-o', "
            "sys.argv[2], '--yes']\ntry:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e\n"
            "assert not [m for m in sys.modules if m.split('.')[0] == 'pulumi'], 'pulumi was imported'")
    subprocess.run([sys.executable, "-c", code, str(AWS_SPEC), str(tmp_path / "out")], check=True, cwd=REPO,
                   env={"PYTHONPATH": str(REPO / "cli"), "PATH": "/usr/bin:/bin"})


# -- the Pulumi project ------------------------------------------------------------------------------------------
def test_project_directory_is_complete(tmp_path: Path) -> None:
    project = emit(AWS_SPEC, tmp_path)
    assert sorted(p.name for p in project.iterdir()) == [
        "Pulumi.aws-p5-efa.yaml", "Pulumi.yaml", "__main__.py", "cluster.json", "first_boot.py", "requirements.txt",
        "user-data.sh"]
    meta = yaml.safe_load((project / "Pulumi.yaml").read_text())
    assert meta["name"] == "aws-p5-efa" and meta["runtime"]["name"] == "python"
    assert yaml.safe_load((project / "Pulumi.aws-p5-efa.yaml").read_text()) == {
        "config": {"aws:region": "us-east-1"}}
    requirements = [line for line in (project / "requirements.txt").read_text().splitlines()
                    if not line.startswith("#")]
    assert requirements == ["pulumi==3.272.0", "pulumi-aws==7.51.1"]


@pytest.mark.parametrize("spec", ["aws-p5-efa.yaml", "alicloud-erdma.yaml"])
def test_example_user_data_fits_the_providers_limit(spec: str) -> None:
    """Each example's first-boot script, with its file systems' sources filled in at the allowance, stays under the
    provider's documented limit (16 KB before base64 on both), which the README reports with the margin."""
    compiled = compile_spec(INVENTORIES / spec)
    cloud = compiled.topology.cluster.cloud
    assert cloud is not None
    assert list(user_data_size(compiled.topology)) == []
    [boot] = [a for a in render_spec(compiled, ["pulumi"]) if a.path.endswith("/user-data.sh")]
    filled = len(boot.content) + sum(SOURCE_ALLOWANCE + len(fs.mountpoint) + 2 for fs in cloud.filesystems)
    assert user_data_limit(cloud) == 16384 and filled < 16384
    data = json.loads(next(a.content for a in render_spec(compiled, ["pulumi"]) if a.path.endswith("cluster.json")))
    assert data["user_data_limit"] == 16384, "the program refuses a filled script above it at deploy"


@pytest.mark.parametrize(("capacity", "throughput", "takes"), [
    (18000, 500, True), (36000, 500, True), (40000, 500, False), (3060000, 500, True), (3078000, 500, False),
    (3168000, 500, True), (3204000, 500, False), (20016000, 500, True), (20160000, 500, False), (9000, 1000, True),
    (4500, 1000, False),
    (72000, 125, True), (36000, 125, False), (36000, 300, False)])
def test_managed_lustre_capacity_steps(capacity: int, throughput: int, takes: bool) -> None:
    """Google's performance tiers: a minimum and step per tier, a larger step above a threshold, a maximum."""
    tiers = catalog()["gcp"]["filesystems"]["managed-lustre"]["tiers"]
    assert (lustre_capacity_hint(capacity, throughput, tiers) == "") is takes
