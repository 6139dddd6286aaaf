"""GPUDirect Storage through its real consumers here: shellcheck passes every gds-preflight.sh of the example, and
Python's strict JSON parser reads every cufile.json (cuFile itself, libcufile, does not run here). The preflight's
runs against a fake root and recorded gdscheck outputs are in tests/unit/features/gds/test_preflight.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fabricgen.features.gds import render
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, require_tool


def test_preflight_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    artifacts = render.render(compile_spec(INVENTORIES / "h100-4su.yaml").topology)
    scripts = [a for a in artifacts if a.path.endswith("gds-preflight.sh")]
    assert [a.path for a in scripts] == ["hosts/dgx-h100/gds/gds-preflight.sh"]
    for artifact in scripts:
        script = tmp_path / "gds-preflight.sh"
        script.write_bytes(artifact.content)
        done = subprocess.run([shellcheck, "-x", str(script)], capture_output=True, text=True)
        assert done.returncode == 0, done.stdout
    for artifact in artifacts:
        if artifact.path.endswith(".json"):
            json.loads(artifact.content, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
