"""Shared fixtures: repository paths, the golden-file switch, and the external-tool gate."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
INVENTORIES = REPO / "inventories"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite golden files and expected messages instead of comparing (review the diff)")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


def require_tool(name: str) -> str:
    """Path of a system tool; skip when missing locally, fail when CI requires external tools."""
    path = shutil.which(name)
    if path:
        return path
    if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"{name} is required in CI (FABRICGEN_REQUIRE_EXTERNAL=1) but is not installed")
    pytest.skip(f"{name} not installed; CI installs it via .ci/run")
