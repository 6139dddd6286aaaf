"""A generated host script run against a fake root: what the host-script tests (RoCE QoS, SR-IOV, Lustre) share.

The stub tools record each call as one line in ``calls`` under the root (``calls_file``); a snapshot of every
other file, with its modification time, shows whether a run changed anything.
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path


def write(path: Path, text: str) -> None:
    """One line of text in ``path``, creating its directories: how sysfs and the stubs' state read."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


@dataclasses.dataclass(frozen=True)
class ScriptHost:
    root: Path
    script: Path
    env: dict[str, str]
    calls_file: str = "state/calls"

    @property
    def calls(self) -> list[str]:
        path = self.root / self.calls_file
        return path.read_text().splitlines() if path.exists() else []

    def snapshot(self) -> dict[str, tuple[str, int]]:
        """Every file of the fake host except the call log and the script: content and modification time."""
        log = self.root / self.calls_file
        return {p.relative_to(self.root).as_posix(): (p.read_text(), p.stat().st_mtime_ns)
                for p in sorted(self.root.rglob("*")) if p.is_file() and p not in (log, self.script)}

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(self.script), *args], env={**self.env, **env}, capture_output=True,
                              text=True, timeout=120)
