"""The cloud instances' first boot script as stacks/first_boot.py fills it: every filled word reaches bash as one
word, as written (the filled script's runs are in tests/external/cloud/test_cloud_user_data.py)."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

from tests.conftest import REPO

STACKS = REPO / "stacks"


def test_filled_words_reach_bash_unchanged() -> None:
    """Mount sources and points come from cloud outputs and the spec: each must arrive as one word, as written."""
    spec = importlib.util.spec_from_file_location("first_boot", STACKS / "first_boot.py")
    assert spec is not None and spec.loader is not None
    first_boot = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(first_boot)
    mounts = [("fs-1.example@tcp:/a b", "/mnt/it's $HOME"), ("x;rm -rf /tmp/y", "/mnt/`id`\nnext")]
    script = first_boot.filled('FILESYSTEMS=()\nprintf "%s|" "${FILESYSTEMS[@]}"\n', mounts)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("|")[:-1] == [word for mount in mounts for word in mount]
    with pytest.raises(ValueError, match="exactly one"):
        first_boot.filled("#!/bin/bash\n", mounts)
