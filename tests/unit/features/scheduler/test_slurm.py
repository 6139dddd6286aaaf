"""The Slurm forms Debian's slurmctld 22.05 cannot read, against SchedMD's grammar: topology-block.conf (Slurm >= 24.05)
with BlockSizes as src/plugins/topology/block/block_record.c accepts and aggregates them, topology.yaml (Slurm >= 25.05)
against the data parser's fields (tests/data/scheduler/slurm-topology-yaml.schema.json, from v0.0.43/parsers.c).
The tree form is read by the real slurmctld in tests/external/scheduler/."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.features.scheduler.hostlist import hostlist
from fabricgen.features.scheduler.plan import scheduling_tree
from fabricgen.features.scheduler.slurm import render
from fabricgen.pipeline import Compiled, compile_spec
from tests.conftest import INVENTORIES, REPO

DATA = REPO / "tests" / "data" / "scheduler"
_RANGE = re.compile(r"^(?P<prefix>[^\[\],]*)\[(?P<ranges>[0-9,\-]+)\]$")


def expand(expression: str) -> list[str]:
    """Slurm's hostlist expansion for the forms fabricgen writes (``a[01-03,05]``, plain names, comma lists)."""
    names = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?", expression):
        m = _RANGE.match(part)
        if m is None:
            names.append(part)
            continue
        for span in m["ranges"].split(","):
            lo, _, hi = span.partition("-")
            width = len(lo)
            names += [f"{m['prefix']}{n:0{width}d}" for n in range(int(lo), int(hi or lo) + 1)]
    return names


@pytest.mark.parametrize(("names", "expression"), [
    (["gpu001", "gpu002", "gpu003", "gpu005"], "gpu[001-003,005]"),
    (["gpu099", "gpu100"], "gpu[099-100]"),
    (["n9", "n10", "n11"], "n9,n[10-11]"),
    (["solo"], "solo"),
    (["gpu001"], "gpu001"),
    (["compute-su01", "compute-su02", "spine"], "compute-su[01-02],spine"),
    (["leaf-a", "leaf-b"], "leaf-a,leaf-b"),
])
def test_hostlist(names: list[str], expression: str) -> None:
    assert hostlist(names) == expression
    assert sorted(expand(expression)) == sorted(names)


@pytest.fixture(scope="module", params=["lab-1su", "h100-4su", "three-tier"])
def compiled(request: pytest.FixtureRequest) -> Compiled:
    name = request.param
    return compile_spec(DATA / f"{name}.yaml" if name == "three-tier" else INVENTORIES / f"{name}.yaml")


def _files(compiled: Compiled) -> dict[str, str]:
    return {a.path.removeprefix("scheduler/slurm/"): a.content.decode() for a in render(compiled.topology)}


def _slurm_lines(text: str) -> list[dict[str, str]]:
    """topology.conf's lines as Slurm's parser sees them: comments to the end of the line dropped, key=value pairs
    with case-insensitive keys."""
    lines = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            lines.append({k.lower(): v for k, v in (item.split("=", 1) for item in line.split())})
    return lines


def _aggregated(block_count: int, sizes: list[int]) -> list[list[int]]:
    """The aggregated blocks block_record.c builds: for each level, runs of 2^level consecutive blocks from a
    multiple of it, dropped where fewer blocks remain than the level below holds."""
    out = []
    for size in sizes[1:]:
        for start in range(0, block_count, size):
            remaining = block_count - start
            below = sizes[sizes.index(size) - 1]
            if size > remaining and below >= remaining:
                continue
            out.append(list(range(start, min(start + size, block_count))))
    return out


def test_block_form_follows_slurms_grammar(compiled: Compiled) -> None:
    lines = _slurm_lines(_files(compiled)["topology-block.conf"])
    *block_lines, sizes_line = lines
    assert all(set(line) == {"blockname", "nodes"} for line in block_lines)
    assert set(sizes_line) == {"blocksizes"}
    sizes = [int(s) for s in sizes_line["blocksizes"].split(",")]
    base = sizes[0]
    levels = [math.log2(s // base) for s in sizes]
    assert all(s % base == 0 for s in sizes) and all(lv == int(lv) and lv <= 15 for lv in levels)
    assert sizes == sorted(set(sizes))
    blocks = [expand(line["nodes"]) for line in block_lines]
    assert min(len(b) for b in blocks) >= base  # "each block must have at least the planning base block size"
    scheduled = [n for b in blocks for n in b]
    compute = [n.name for n in compiled.cluster.nodes if n.profile.role == "compute"]
    assert sorted(scheduled) == sorted(compute)  # every compute node in exactly one block, no management node

    # Slurm's aggregated blocks (in block units) stay under one spine group: their nodes share the spines above.
    ft = compiled.topology.fabric("compute")
    tree = scheduling_tree(compiled.topology, ft)
    pod_of = {g.name: p.name for p in tree.pods for g in p.groups}
    names = [line["blockname"] for line in block_lines]
    for run in _aggregated(len(names), [s // base for s in sizes]):
        assert len({pod_of[names[i]] for i in run}) == 1, run


def test_block_form_says_when_a_full_block_spans_two_base_blocks(compiled: Compiled) -> None:
    """Slurm counts a job in whole base blocks (``ROUNDUP(nodes, base)``): with a short block the file says that a
    job of a full block asks for two, and names the short block; with equal blocks it says nothing."""
    text = _files(compiled)["topology-block.conf"]
    blocks = [expand(line["nodes"]) for line in _slurm_lines(text)[:-1]]
    base, largest = min(map(len, blocks)), max(map(len, blocks))
    if base == largest:
        assert "whole base blocks" not in text
        return
    spans = -(-largest // base)
    assert f"a job of {largest} nodes\n# (a full block) asks for {spans} of them" in text
    assert f"within a {spans * base}-node aggregated block" in text


def test_topology_yaml_follows_the_data_parser(compiled: Compiled) -> None:
    files = _files(compiled)
    document = yaml.safe_load(files["topology.yaml"])
    schema = json.loads((DATA / "slurm-topology-yaml.schema.json").read_text())
    errors = sorted(str(e.message) for e in Draft202012Validator(schema).iter_errors(document))
    assert errors == []
    tree, block = document
    assert tree["cluster_default"] is True and block["cluster_default"] is False
    # the YAML says what the two .conf forms say
    conf = _slurm_lines(files["topology.conf"])
    assert [(s["switch"], s.get("nodes"), s.get("children")) for s in tree["tree"]["switches"]] == [
        (c["switchname"], c.get("nodes"), c.get("switches")) for c in conf]
    blocks = _slurm_lines(files["topology-block.conf"])
    assert [(b["block"], b["nodes"]) for b in block["block"]["blocks"]] == [
        (b["blockname"], b["nodes"]) for b in blocks[:-1]]
    assert ",".join(map(str, block["block"]["block_sizes"])) == blocks[-1]["blocksizes"]


def test_the_schema_refuses_what_slurm_refuses() -> None:
    """The derived schema is not a rubber stamp: a misspelt key, a switch with neither children nor nodes, and a
    topology with two plugins all fail."""
    validator = Draft202012Validator(json.loads((DATA / "slurm-topology-yaml.schema.json").read_text()))
    bad = [
        [{"topology": "t", "tree": {"switches": [{"switch": "s", "node": "a"}]}}],
        [{"topology": "t", "tree": {"switches": [{"switch": "s"}]}}],
        [{"topology": "t", "tree": {"switches": []}, "block": {"blocks": []}}],
        [{"topology": "t", "block": {"blocks": [{"block": "b"}]}}],
    ]
    assert all(not validator.is_valid(doc) for doc in bad)


def test_three_tier_pods_and_block_sizes() -> None:
    compiled = compile_spec(DATA / "three-tier.yaml")
    tree = scheduling_tree(compiled.topology, compiled.topology.fabric("compute"))
    assert [len(p.groups) for p in tree.pods] == [12, 12]
    assert tree.root == "compute-core" and len(tree.core) == 4
    files = _files(compiled)
    # 12 SUs per pod: aggregation stops at 4 blocks (8 would cross from pod01 into pod02 at SU 9-16)
    assert _slurm_lines(files["topology-block.conf"])[-1] == {"blocksizes": "2,4,8"}


def test_no_scheduler_output_without_a_compute_fabric(tmp_path: Path) -> None:
    spec = yaml.safe_load((DATA / "three-tier.yaml").read_text())
    del spec["fabrics"]["compute"]
    path = tmp_path / "no-compute.yaml"
    path.write_text(yaml.safe_dump(spec))
    compiled = compile_spec(path)
    assert compiled.cluster.scheduler is None
    assert render(compiled.topology) == []
