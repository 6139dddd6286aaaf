"""Kueue's Topology and ResourceFlavor against Kueue's own CRDs (tests/data/scheduler/kueue/, kubernetes-sigs/kueue
config/components/crd/bases at ff69552e, v1beta2, made strict: unknown fields fail) and their CEL rules, evaluated
here as the API server would (jsonschema ignores x-kubernetes-validations); the node labels against the plan.
node-labels.sh runs against the real kubectl in tests/external/scheduler/."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.features.scheduler import kubernetes
from fabricgen.features.scheduler.plan import scheduling_tree
from fabricgen.pipeline import compile_spec
from tests.conftest import INVENTORIES, REPO
from tests.external.kubernetes.test_kubernetes import strict

KUEUE = REPO / "tests" / "data" / "scheduler" / "kueue"
SPECS = [INVENTORIES / "lab-1su.yaml", INVENTORIES / "h100-4su.yaml", REPO / "tests/data/scheduler/three-tier.yaml"]


@cache
def validators() -> dict[str, Draft202012Validator]:
    out = {}
    for path in sorted(KUEUE.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta2")
        out[crd["spec"]["names"]["kind"]] = Draft202012Validator(strict(version["schema"]["openAPIV3Schema"]))
    return out


def cel_problems(doc: dict[str, Any]) -> list[str]:
    """The CEL rules of the two CRDs that a new object can break (the others compare with oldSelf)."""
    spec = doc["spec"]
    if doc["kind"] == "Topology":
        labels = [level["nodeLabel"] for level in spec["levels"]]
        problems = ["must be unique"] if len(set(labels)) != len(labels) else []
        if "kubernetes.io/hostname" in labels and labels[-1] != "kubernetes.io/hostname":
            problems.append("the kubernetes.io/hostname label can only be used at the lowest level of topology")
        return problems
    if "topologyName" in spec and len(spec.get("nodeLabels", {})) < 1:
        return ["at least one nodeLabel is required when topology is set"]
    return []


def _documents(spec: Path) -> tuple[Any, list[dict[str, Any]]]:
    compiled = compile_spec(spec)
    files = {a.path: a.content for a in kubernetes.render(compiled.topology)}
    return compiled, list(yaml.safe_load_all(files["scheduler/kubernetes/kueue.yaml"]))


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_kueue_objects_pass_the_strict_crds(spec: Path) -> None:
    _, docs = _documents(spec)
    assert [d["kind"] for d in docs] == ["Topology", "ResourceFlavor"]
    for doc in docs:
        errors = [e.message for e in validators()[doc["kind"]].iter_errors(doc)]
        assert errors + cel_problems(doc) == []
    topology, flavor = docs
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]


def test_the_strict_crds_refuse_a_misspelt_field() -> None:
    bad = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Topology", "metadata": {"name": "x"},
           "spec": {"levels": [{"nodeLabels": "kubernetes.io/hostname"}]}}
    assert not validators()["Topology"].is_valid(bad)
    swapped = {"kind": "Topology", "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"}, {"nodeLabel": "a"}]}}
    assert cel_problems(swapped)


@pytest.mark.parametrize(("spec", "levels"), [
    (SPECS[0], ["fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0", "fabricgen.dev/rack",
                "kubernetes.io/hostname"]),
    (SPECS[1], ["fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0", "fabricgen.dev/rack",
                "kubernetes.io/hostname"]),
    (SPECS[2], ["fabric.topograph.run/tier-2", "fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0",
                "fabricgen.dev/rack", "kubernetes.io/hostname"]),
], ids=lambda v: v.stem if isinstance(v, Path) else "")
def test_levels_follow_the_fabric(spec: Path, levels: list[str]) -> None:
    _, (topology, _) = _documents(spec)
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == levels


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_node_labels_name_the_planned_switches(spec: Path) -> None:
    """Each node's tier-0 is the group of leaves its own links reach, tier-1 the spines above them: from links."""
    compiled = compile_spec(spec)
    ft = compiled.topology.fabric("compute")
    tree = scheduling_tree(compiled.topology, ft)
    labels = {n.name: dict(zip(kubernetes.label_keys(tree), n.values, strict=True))
              for n in kubernetes.node_labels(compiled.topology, tree)}
    compute = {n.name: n for n in compiled.cluster.nodes if n.profile.role == "compute"}
    assert set(labels) == set(compute)
    leaves_of: dict[str, set[str]] = {}
    for link in ft.links:
        leaves_of.setdefault(link.a.device, set()).add(link.z.device)
    groups = {g.name: set(g.leaves) for g in tree.groups}
    for name, values in labels.items():
        assert groups[values["fabric.topograph.run/tier-0"]] == leaves_of[name]
        assert values["fabricgen.dev/rack"] == compute[name].rack.name
        assert values["fabricgen.dev/topology"] == "compute"


def test_a_rack_across_leaf_groups_is_no_level(tmp_path: Path) -> None:
    """The fat-tree storage fabric of three-tier.yaml: n07's ports straddle two leaves, its rack mate n08 sits on
    one, so the rack holds two leaf groups and cannot nest below them."""
    spec = tmp_path / "storage.yaml"
    spec.write_text(SPECS[2].read_text() + "scheduler: {fabric: storage}\n")
    compiled, (topology, _) = _documents(spec)
    assert [level["nodeLabel"] for level in topology["spec"]["levels"]] == [
        "fabric.topograph.run/tier-1", "fabric.topograph.run/tier-0", "kubernetes.io/hostname"]
    racks = {n.name: n.rack.name for n in compiled.cluster.nodes}
    assert racks["n07"] == racks["n08"]
