"""nic-firmware.sh through its real consumer here, shellcheck (the fake-root runs against the stub mlxconfig are in
tests/unit/features/ethernet/test_spectrum_x.py): the Spectrum-X example's script (BlueField-3 NIC mode and the
RA2.2 SuperNIC settings) and the stub itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricgen.features.ethernet import nic_firmware
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO, require_tool


def test_nic_firmware_script_is_shellcheck_clean(tmp_path: Path) -> None:
    shellcheck = require_tool("shellcheck")
    artifacts = nic_firmware.render(compile_spec(INVENTORIES / "spectrumx-1su.yaml").topology)
    assert [a.path for a in artifacts] == ["hosts/hgx-h100-spx/nic-firmware.sh"]
    script = tmp_path / "nic-firmware.sh"
    script.write_bytes(artifacts[0].content)
    stub = REPO / "tests" / "data" / "fake-mlxconfig" / "mlxconfig"
    done = subprocess.run([shellcheck, "-S", "style", str(script), str(stub)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
