"""The instances' first-boot script (user-data.sh, written by fabricgen beside the program) with the file systems
filled in once the cloud has created them. Shared by fabricgen's Pulumi programs and shipped into every project
beside them; do not edit."""

from __future__ import annotations

import base64
import shlex
from collections.abc import Sequence
from pathlib import Path

import pulumi

FILESYSTEMS = "FILESYSTEMS=()\n"  # the line of user-data.sh that receives (mount source, mount point) pairs


def filled(template: str, mounts: Sequence[tuple[str, str]]) -> str:
    """The script with its FILESYSTEMS line holding each mount source and mount point, shell-quoted."""
    if template.count(FILESYSTEMS) != 1:
        raise ValueError(f"user-data.sh must hold exactly one {FILESYSTEMS.strip()!r} line")
    words = " ".join(shlex.quote(word) for mount in mounts for word in mount)
    return template.replace(FILESYSTEMS, f"FILESYSTEMS=({words})\n")


def encoded(script: str, limit: int) -> str:
    """The script base64-encoded, refused when it is above the provider's user data limit (bytes before base64),
    which the cloud would reject for every instance."""
    raw = script.encode()
    if len(raw) > limit:
        raise ValueError(f"user-data.sh filled in is {len(raw)} bytes, above the provider's user data limit of "
                         f"{limit} bytes before base64")
    return base64.b64encode(raw).decode()


def user_data(project: Path, sources: Sequence[pulumi.Input[str]], mountpoints: Sequence[str], limit: int
              ) -> pulumi.Output[str] | None:
    """The project's user-data.sh, filled once every mount source is known, base64 (None when the project has no
    first-boot script)."""
    script = project / "user-data.sh"
    if not script.exists():
        return None
    template = script.read_text(encoding="utf-8")
    return pulumi.Output.all(*sources).apply(lambda resolved: encoded(
        filled(template, list(zip(resolved, mountpoints, strict=True))), limit))
