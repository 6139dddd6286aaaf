"""nccl-topo.xml against what NCCL reads and against recorded topologies: it parses as XML and within the limits of
NCCL's own parser (src/graph/xml.cc: no <?xml?> declaration, spaces only, no space before '/>', at most 16
attributes and 255 characters per name or value); reduced to the form NCCL's maintainers ask for (the dump's <cpu>
and <pci> tags), IBM Cloud's recorded dump of an 8 x H100 VSI has the same tree: the same GPU and NIC under one PCIe
switch per rail, the same NUMA node per pair; its virtual switches carry exactly the attributes of Azure's ND H100 v5
file. Never run on a GPU here: NCCL loading it is shown by its source, not observed."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from fabricgen.features.nccl.topo import INSTALLED
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES, REPO

DATA = REPO / "tests" / "data" / "nccl"


@pytest.fixture(scope="module")
def files() -> dict[str, str]:
    compiled = compile_spec(DATA / "h100-vsi.yaml")
    return {a.path: a.content.decode() for a in render_spec(compiled, ["nccl"])}


def _tree(root: ET.Element) -> dict[str, set[frozenset[tuple[str, str]]]]:
    """NUMA node -> the (busid, class family) pairs under each of its PCIe switches, <gpu>/<nic> dropped."""
    out: dict[str, set[frozenset[tuple[str, str]]]] = {}
    for cpu in root.findall("cpu"):
        switches = [p for p in cpu.findall("pci") if p.get("class") == "0x060400"]
        out[cpu.get("numaid", "")] = {frozenset((d.get("busid", ""), d.get("class", "")[:4]) for d in s.findall("pci"))
                                      for s in switches}
    return out


def test_nccl_reads_it(files: dict[str, str]) -> None:
    text = files["hosts/h100-vsi/nccl-topo.xml"]
    assert not text.startswith("<?") and "\t" not in text and " />" not in text
    root = ET.fromstring(text)
    assert root.tag == "system" and root.get("version") == "1"  # NCCL_TOPO_XML_VERSION
    for element in root.iter():
        assert len(element.attrib) <= 16
        assert all(len(k) <= 255 and len(v) <= 255 for k, v in element.attrib.items())
    assert not root.findall(".//gpu") and not root.findall(".//nic"), "a process's dev and rank are NCCL's to fill"


def test_same_tree_as_the_recorded_h100_dump(files: dict[str, str]) -> None:
    generated = _tree(ET.fromstring(files["hosts/h100-vsi/nccl-topo.xml"]))
    recorded = _tree(ET.parse(DATA / "ibm-gx3d-h100-topo.xml").getroot())
    assert generated == recorded
    assert len(generated["0"]) == len(generated["1"]) == 4


def test_virtual_switches_as_azure_writes_them(files: dict[str, str]) -> None:
    generated = ET.fromstring(files["hosts/h100-vsi/nccl-topo.xml"])
    azure = ET.parse(DATA / "azure-ndv5-topo.xml").getroot()
    theirs = [{k: v for k, v in p.attrib.items() if k != "busid"} for p in azure.iter("pci")
              if p.get("class") == "0x060400"]
    ours = [{k: v for k, v in p.attrib.items() if k != "busid"} for p in generated.iter("pci")
            if p.get("class") == "0x060400"]
    assert ours == theirs
    assert all(re.fullmatch(r"ffff:ff:[0-9a-f]{2}\.0", p.get("busid", "")) for p in generated.iter("pci")
               if p.get("class") == "0x060400")
    assert [c.get("numaid") for c in generated.findall("cpu")] == [c.get("numaid") for c in azure.findall("cpu")]


def test_nccl_env_points_at_it(files: dict[str, str]) -> None:
    assert f"\nNCCL_TOPO_FILE={INSTALLED}\n" in files["hosts/h100-vsi/nccl.env"]


def test_no_file_without_every_address() -> None:
    """DGX H100's catalog profile has its NICs' PCI addresses but not its GPUs': no file, no reference."""
    rendered = {a.path: a.content.decode() for a in render_spec(compile_spec(INVENTORIES / "h100-4su.yaml"), ["nccl"])}
    assert "hosts/dgx-h100/nccl-topo.xml" not in rendered and "NCCL_TOPO_FILE" not in rendered[
        "hosts/dgx-h100/nccl.env"]
