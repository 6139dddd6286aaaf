"""fabricgen: one declarative AI-cluster spec in; every fabric artifact out, deterministically.

The public API is one function per pipeline stage; everything else is internal.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from fabricgen.build import build_cluster
from fabricgen.checks import run_checks
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.render import render
from fabricgen.spec.load import load_file as load_spec
from fabricgen.topology import compile_topology

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
