"""OpenSM and UFM files through their real consumers: shellcheck passes opensm-keys.sh and ufm-install.sh (OpenSM
itself boots the fabric in test_opensm_ibsim.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, require_tool


@pytest.mark.parametrize(("spec", "script"), [("lab-1su", "opensm-keys.sh"), ("h100-4su", "ufm-install.sh")])
def test_sm_scripts_are_shellcheck_clean(spec: str, script: str, tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    artifact = {a.path: a for a in render_spec(compile_spec(INVENTORIES / f"{spec}.yaml"), ["infiniband"])}[
        f"infiniband/compute/{script}"]
    assert artifact.mode == 0o755
    path = tmp_path / script
    path.write_bytes(artifact.content)
    done = subprocess.run([shellcheck, "-S", "style", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
