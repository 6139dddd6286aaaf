"""netplan as the consumer of the generated host netplan files: ``netplan generate`` into a scratch root, as the
host would run it at boot, and the systemd-networkd files it writes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import require_tool


def netplan_generate(content: bytes, name: str, root: Path) -> Path:
    """Install ``content`` as /etc/netplan/``name`` under ``root`` (0600, as netplan wants), run ``netplan
    generate`` there and return the directory of the networkd files it wrote; a refusal fails the test."""
    netplan = require_tool("netplan")
    target = root / "etc" / "netplan" / name
    target.parent.mkdir(parents=True)
    target.write_bytes(content)
    target.chmod(0o600)
    done = subprocess.run([netplan, "generate", "--root-dir", str(root)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return root / "run" / "systemd" / "network"
