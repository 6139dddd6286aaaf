"""OpenSM files through their real consumer: shellcheck passes opensm-keys.sh (OpenSM itself boots the fabric in
test_opensm_ibsim.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.core.artifacts import Artifact
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, require_tool

LAB = INVENTORIES / "lab-1su.yaml"


@pytest.fixture(scope="module")
def lab() -> dict[str, Artifact]:
    return {a.path: a for a in render_spec(compile_spec(LAB))}


def test_keys_script_is_shellcheck_clean(lab: dict[str, Artifact], tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    script = tmp_path / "opensm-keys.sh"
    script.write_bytes(lab["infiniband/compute/opensm-keys.sh"].content)
    assert lab["infiniband/compute/opensm-keys.sh"].mode == 0o755
    done = subprocess.run([shellcheck, "-S", "style", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
