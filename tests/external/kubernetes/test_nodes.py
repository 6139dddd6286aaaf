"""label-nodes.sh and its kubectl stub pass shellcheck."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricgen.features.kubernetes import nodes
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool


def test_label_script_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    (artifact,) = nodes.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)
    script = tmp_path / "label-nodes.sh"
    script.write_bytes(artifact.content)
    stub = REPO / "tests" / "data" / "fake-kubectl" / "kubectl"
    done = subprocess.run([shellcheck, "-S", "style", str(script), str(stub)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
