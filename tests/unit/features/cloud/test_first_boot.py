"""The cloud instances' first boot script as stacks/first_boot.py fills it: every filled word reaches bash as one
word, as written, and a filled script above the provider's user data limit is refused (the filled script's runs are
in tests/external/cloud/test_cloud_user_data.py)."""

from __future__ import annotations

import base64
import importlib.util
import subprocess
from typing import Any

import pytest

from tests.conftest import REPO

STACKS = REPO / "stacks"


def load_first_boot() -> Any:
    spec = importlib.util.spec_from_file_location("first_boot", STACKS / "first_boot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_filled_words_reach_bash_unchanged() -> None:
    """Mount sources and points come from cloud outputs and the spec: each must arrive as one word, as written."""
    first_boot = load_first_boot()
    mounts = [("fs-1.example@tcp:/a b", "/mnt/it's $HOME"), ("x;rm -rf /tmp/y", "/mnt/`id`\nnext")]
    script = first_boot.filled('FILESYSTEMS=()\nprintf "%s|" "${FILESYSTEMS[@]}"\n', mounts)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split("|")[:-1] == [word for mount in mounts for word in mount]
    with pytest.raises(ValueError, match="exactly one"):
        first_boot.filled("#!/bin/bash\n", mounts)


def test_user_data_above_the_limit_is_refused_at_deploy() -> None:
    """The mount sources are known only at deploy: the program refuses a filled script the cloud would reject."""
    script = "#!/bin/bash\n" + "#" * 100 + "\n"
    first_boot = load_first_boot()
    assert base64.b64decode(first_boot.encoded(script, len(script))).decode() == script
    with pytest.raises(ValueError, match=f"{len(script)} bytes, above the provider's user data limit of "
                                         f"{len(script) - 1} bytes"):
        first_boot.encoded(script, len(script) - 1)
    assert first_boot.checked(script, len(script)) == script  # Compute Engine's startup-script: plain text
    with pytest.raises(ValueError, match=f"{len(script)} bytes"):
        first_boot.checked(script, len(script) - 1)
