"""The name checks that guard file names, shell words and configs: a whole value must match, no trailing newline
(Python's ``$`` matches before one; JSON Schema's does not, nor do these checks)."""

from __future__ import annotations

import re

import pytest

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, NETDEV, checked, cluster_label


@pytest.mark.parametrize(("pattern", "value"), [(NETDEV, "eth0"), (IDENTIFIER, "storage-a"), (DEVICE_NAME, "gpu001")])
def test_checked_passes_a_whole_name(pattern: re.Pattern[str], value: str) -> None:
    assert checked(pattern, value, "name") == value


@pytest.mark.parametrize("value", ["eth0\n", "eth0\nrm -rf /", " eth0", "eth0 "])
def test_checked_refuses_newlines_and_blanks(value: str) -> None:
    with pytest.raises(ValueError, match="netdev"):
        checked(NETDEV, value, "netdev")


def test_artifact_paths_refuse_a_trailing_newline() -> None:
    assert is_safe_relative_path("hosts/gpu001/nccl.env")
    assert not is_safe_relative_path("hosts/gpu001\n/nccl.env")
    assert not is_safe_relative_path("hosts/gpu001/nccl.env\n")


def test_cluster_label_names_the_cluster_and_only_a_safe_name() -> None:
    assert cluster_label("sp-h100-a") == "cluster sp-h100-a"
    for hostile in ("x\n$(touch pwned)", "a" * 64, "-lead", "UPPER", ""):
        with pytest.raises(ValueError, match="cluster name"):
            cluster_label(hostile)
