"""What the Lustre client tests share (tests/unit/features/lustre, tests/external/lustre, and the storage tiers in
tests/unit/features/kubernetes and tests/external/kubernetes): the stub lctl/lfs, where the host files go, the
mount points the systemd path escaping is checked on, and the YAML documents of a manifest."""

from __future__ import annotations

from typing import Any

import yaml

from fabricgen.core.artifacts import Artifact
from tests.conftest import REPO

LUSTRE_STUBS = REPO / "tests" / "data" / "fake-lustre"
MOUNT_DIR = "hosts/dgx-h100/lustre"
ESCAPE_PATHS = ["/lustre/ckpt", "/lustre/a-b", "//lustre//x/", "/", "/.hidden/x", "/data/ünï", "/a b/c:d", "/x_y.z"]


def manifest_docs(artifact: Artifact) -> list[dict[str, Any]]:
    """The YAML documents of a manifest artifact."""
    return [d for d in yaml.safe_load_all(artifact.content) if d is not None]
