"""`pip install .` (not only editable) must work from any directory: the wheel carries schemas, templates,
inventories and the catalog, and the installed package finds them without the source tree."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist), str(REPO)],
                   check=True, capture_output=True)
    wheel = next(dist.glob("fabricgen-*.whl"))
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def test_wheel_ships_data_files(unpacked_wheel: Path) -> None:
    pkg = unpacked_wheel / "fabricgen"
    for rel in ("_shipped/schemas/fabricgen.schema.json", "_shipped/schemas/sections/fabrics.schema.json",
                "_shipped/templates/topology/fabric.json.j2", "_shipped/inventories/h100-4su.yaml",
                "data/catalog/switches.yaml", "data/catalog/node_profiles.yaml", "features/cloud/instances.yaml",
                "features/ethernet/nos/sonic.yaml", "features/ethernet/nos/sonic/asics.yaml",
                "_shipped/schemas/sections/cloud.schema.json", "_shipped/stacks/aws_efa/__main__.py",
                "_shipped/stacks/alicloud_erdma/__main__.py", "_shipped/templates/pulumi/Pulumi.yaml.j2"):
        assert (pkg / rel).is_file(), rel


def test_installed_package_runs_outside_the_checkout(unpacked_wheel: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    spec = tmp_path / "lab.yaml"
    init = subprocess.run([sys.executable, "-m", "fabricgen", "init", "--preset", "lab-1su", "-o", str(spec)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)
    assert init.returncode == 0, init.stderr
    code = ("import fabricgen.core.resources as r, sys; "
            "assert '_shipped' in str(r.shipped_dir('schemas')), r.shipped_dir('schemas'); "
            "assert str(r.data_dir()).startswith(sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(unpacked_wheel)], cwd=tmp_path, env=env, check=True)
    applied = subprocess.run([sys.executable, "-m", "fabricgen", "apply", str(spec), "--yes"], cwd=tmp_path,
                             env=env, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (tmp_path / "out" / "lab-1su" / "topology" / "compute.json").is_file()


def test_installed_package_emits_the_pulumi_project(unpacked_wheel: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    spec = tmp_path / "aws.yaml"
    for command in (["init", "--preset", "aws-p5-efa", "-o", str(spec)], ["apply", str(spec), "--yes"]):
        done = subprocess.run([sys.executable, "-m", "fabricgen", *command], cwd=tmp_path, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    program = tmp_path / "out" / "aws-p5-efa" / "pulumi" / "aws-p5-efa" / "__main__.py"
    assert program.read_bytes() == (REPO / "stacks" / "aws_efa" / "__main__.py").read_bytes()
