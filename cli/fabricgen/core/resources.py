"""Where shipped files live: inside the wheel (fabricgen/_shipped) or, in a source checkout, at the repo root."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # the fabricgen package


@cache
def shipped_dir(name: str) -> Path:
    """Directory of shipped files (schemas, templates, inventories) for an installed wheel or a checkout."""
    for candidate in (_PACKAGE_DIR / "_shipped" / name, _PACKAGE_DIR.parent.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"fabricgen installation is missing its {name}/ directory")


def data_dir() -> Path:
    """Package data (hardware catalog) that lives inside the Python package itself."""
    return _PACKAGE_DIR / "data"


def package_dir() -> Path:
    """The fabricgen package itself (its code and the data beside it)."""
    return _PACKAGE_DIR
