"""management-secrets.sh through shellcheck, in every dialect, and the stub NOS commands it runs against in
tests/unit/features/ethernet/test_management.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fabricgen.pipeline import compile_spec
from fabricgen.stages.render import render
from tests.conftest import INVENTORIES, REPO, require_tool
from tests.helpers.ethernet import eos_spec


@pytest.mark.external
def test_every_dialects_script_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    nvue = tmp_path / "nvue.yaml"
    nvue.write_text((INVENTORIES / "h100-4su.yaml").read_text().replace("    switch: SN5600\n    nos: sonic\n",
                                                                        "    switch: SN5600\n    nos: nvue\n"))
    scripts = {}
    for spec in (INVENTORIES / "h100-4su.yaml", eos_spec(tmp_path), nvue):
        for artifact in render(compile_spec(spec).topology):
            if artifact.path.endswith("/management-secrets.sh"):
                scripts.setdefault(artifact.content, artifact.path)
    assert len({path.split("/")[1].split("-")[0] for path in scripts.values()}) >= 2
    for number, (content, path) in enumerate(scripts.items()):
        script = tmp_path / f"{number}.sh"
        script.write_bytes(content)
        done = subprocess.run([shellcheck, "-S", "style", str(script)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, f"{path}: {done.stdout}"
    stubs = sorted(str(p) for p in (REPO / "tests" / "data" / "fake-nos").iterdir())
    done = subprocess.run([shellcheck, "-S", "style", *stubs], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout
