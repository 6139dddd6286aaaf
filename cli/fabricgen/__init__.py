"""fabricgen: one declarative AI-cluster spec in; every fabric artifact out, deterministically.

The public API is one function per pipeline stage; everything else is internal.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.spec.load import load_file as load_spec
from fabricgen.stages.build import build_cluster
from fabricgen.stages.check import run_checks
from fabricgen.stages.compile import compile_topology
from fabricgen.stages.render import render

try:
    __version__ = version("fabricgen")
except PackageNotFoundError:  # running from a source checkout without installing
    __version__ = "0.0.0+source"

__all__ = [
    "__version__",
    "build_cluster",
    "compile_spec",
    "compile_topology",
    "load_spec",
    "render",
    "render_spec",
    "run_checks",
]
