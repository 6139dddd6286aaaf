"""Topology diagram target through Graphviz: dot renders every example's topology.dot without a warning, drawing
every edge, and keeps tricky identifiers and labels intact."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

import pytest

from fabricgen.features.cabling import diagram
from tests.conftest import require_tool
from tests.helpers.cabling import DIAGRAM_SPECS as SPECS
from tests.helpers.cabling import DOT_ARTIFACT as DOT
from tests.helpers.cabling import SVG_NS, TRICKY, dot_edges, tricky_diagram
from tests.helpers.cabling import diagram_artifacts as artifacts


@pytest.mark.external
def test_dot_escapes_identifiers() -> None:
    dot = require_tool("dot")
    result = subprocess.run([dot, "-Tsvg"], input=diagram.to_dot(tricky_diagram()), capture_output=True,
                            timeout=60, check=False)
    assert result.returncode == 0, result.stderr.decode()
    texts = [t.text for t in ET.fromstring(result.stdout).iter(f"{SVG_NS}text")]
    assert TRICKY in texts and "3 x N<D>R" in texts


@pytest.mark.external
@pytest.mark.parametrize("spec", SPECS)
def test_graphviz_accepts_dot(spec: str) -> None:
    dot = require_tool("dot")
    result = subprocess.run([dot, "-Tsvg"], input=artifacts(spec)[DOT], capture_output=True, timeout=300,
                            check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert not result.stderr, result.stderr.decode()  # no warnings either (syntax, unknown attributes)
    root = ET.fromstring(result.stdout)
    assert root.tag == f"{SVG_NS}svg"
    drawn = sum(1 for g in root.iter(f"{SVG_NS}g") if g.get("class") == "edge")
    assert drawn == len(dot_edges(artifacts(spec)[DOT]))
