"""fabricgen: one declarative AI-cluster spec in; every fabric artifact out, deterministically.

The public API is one function per pipeline stage; everything else is internal. The stages are imported on first
use (PEP 562): a no-change plan, which compiles nothing, would otherwise import every feature (~0.3 s of CPU).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("fabricgen")
except PackageNotFoundError:  # running from a source checkout without installing
    __version__ = "0.0.0+source"

_API = {
    "build_cluster": ("fabricgen.stages.build", "build_cluster"),
    "compile_spec": ("fabricgen.pipeline", "compile_spec"),
    "compile_topology": ("fabricgen.stages.compile", "compile_topology"),
    "load_spec": ("fabricgen.spec.load", "load_file"),
    "render": ("fabricgen.stages.render", "render"),
    "render_spec": ("fabricgen.pipeline", "render_spec"),
    "run_checks": ("fabricgen.stages.check", "run_checks"),
}

__all__ = ["__version__", *sorted(_API)]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'fabricgen' has no attribute {name!r}")
    module, attribute = _API[name]
    return getattr(importlib.import_module(module), attribute)
