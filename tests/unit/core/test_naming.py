"""The name checks that guard file names, shell words and configs: a whole value must match, no trailing newline
(Python's ``$`` matches before one; JSON Schema's does not, nor do these checks)."""

from __future__ import annotations

import re

import pytest

from fabricgen.core.artifacts import is_safe_relative_path
from fabricgen.core.naming import DEVICE_NAME, IDENTIFIER, NETDEV, checked, source_label


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


@pytest.mark.parametrize(("source", "label"), [
    ("inventories/lab-1su.yaml", "lab-1su.yaml"),
    ("/abs/dir/h100 4su (copy).yaml", "h100_4su__copy_.yaml"),
    ("x\n$(touch pwned)`id`;'\".yaml", "x___touch_pwned__id____.yaml"),
    ("..", "spec"),
    ("<spec>", "_spec_"),
    ("a" * 100 + ".yaml", "a" * 64),
])
def test_source_label_is_a_safe_base_name(source: str, label: str) -> None:
    assert source_label(source) == label
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,64}", source_label(source))
