"""The README's recipes, followed for real on a copy of the package: a new NOS is its module, its data file, its
template and one schema enum value (no edit to build, the render registry or the cross-layer check); a new
target with a spec section is its feature package, its schema section, its template and one line each in the
registry and the root schema."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.conftest import INVENTORIES, REPO

NOS_MODULE = '''
"""A toy NOS for the recipe test: one JSON file per switch with its ports and lossless class."""

from __future__ import annotations

import json
from collections.abc import Iterator

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding
from fabricgen.core.templating import render_template
from fabricgen.features.ethernet.nos import Nos, nos_data
from fabricgen.features.ethernet.switch_view import switch_views
from fabricgen.features.feature import mismatch
from fabricgen.model.cluster import Fabric
from fabricgen.model.topology import Topology

DATA = nos_data("toynos")


def render(topology: Topology) -> list[Artifact]:
    out = []
    for ft in topology.fabrics:
        for view in switch_views(topology, ft):
            if view.nos == DATA.name:
                ports = [DATA.interface("whole", cage=p.name.split("/")[0]) for p in view.ports]
                dscp = view.qos.lossless.dscp if view.qos else -1
                out.append(Artifact(f"switches/{view.name}/{DATA.config_file(view.name)}",
                                    render_template("toynos/switch.json.j2", ports=json.dumps(ports), dscp=dscp)))
    return out


def readback(switch: str, content: bytes, fabric: Fabric) -> Iterator[Finding]:
    if fabric.qos is not None and json.loads(content)["lossless_dscp"] != fabric.qos.lossless.dscp:
        yield mismatch(f"switch {switch}", "lossless DSCP differs", fabric)


NOS = Nos(DATA, render, readback)
'''

NOS_DATA = '''
title: ToyNOS
config: "{switch}.toy.json"
pfc_watchdog:
  actions: {drop: drop}
buffer_models: [traditional]
shared_headroom_pool: []
switches:
  vendors: [NVIDIA]
interfaces:
  whole: "port{cage}"
  loopback: lo0
  vlan: "vlan{vlan}"
management:
  interface: mgmt0
  vrf: mgmt
'''


def _copy(tmp: Path) -> Path:
    """The package, its shipped directories and the bundled inventories, as a source checkout in ``tmp``."""
    for name in ("schemas", "templates", "stacks", "inventories"):
        shutil.copytree(REPO / name, tmp / name)
    shutil.copytree(REPO / "cli" / "fabricgen", tmp / "cli" / "fabricgen",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root / "cli")}
    return subprocess.run([sys.executable, "-m", "fabricgen", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300)


def _changed_files(root: Path) -> list[str]:
    """Files of the copy that differ from the checkout or are new (what the recipe touched)."""
    changed = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(root)
        original = REPO / rel
        if not original.exists() or original.read_bytes() != path.read_bytes():
            changed.append(rel.as_posix())
    return changed


def test_a_new_nos_is_its_module_data_template_and_one_enum_value(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    nos_dir = root / "cli" / "fabricgen" / "features" / "ethernet" / "nos"
    (nos_dir / "toynos.py").write_text(textwrap.dedent(NOS_MODULE).lstrip())
    (nos_dir / "toynos.yaml").write_text(textwrap.dedent(NOS_DATA).lstrip())
    (root / "templates" / "toynos").mkdir()
    (root / "templates" / "toynos" / "switch.json.j2").write_text(
        '{"ports": {{ ports }}, "lossless_dscp": {{ dscp }}}\n')
    schema = root / "schemas" / "sections" / "ethernet.schema.json"
    doc = json.loads(schema.read_text())
    doc["$defs"]["nos_name"]["enum"].append("toynos")
    schema.write_text(json.dumps(doc, indent=2) + "\n")
    spec = root / "toy.yaml"
    text = (INVENTORIES / "h100-4su.yaml").read_text()
    assert text.count("    switch: SN5600\n    nos: sonic\n") == 1
    spec.write_text(text.replace("    switch: SN5600\n    nos: sonic\n", "    switch: SN5600\n    nos: toynos\n"))

    assert _changed_files(root) == ["cli/fabricgen/features/ethernet/nos/toynos.py",
                                    "cli/fabricgen/features/ethernet/nos/toynos.yaml",
                                    "schemas/sections/ethernet.schema.json", "templates/toynos/switch.json.j2",
                                    "toy.yaml"]
    applied = _run(root, "apply", str(spec), "-o", str(root / "out"), "--yes")
    assert applied.returncode == 0, applied.stderr
    config = json.loads((root / "out" / "switches" / "storage-leaf001" / "storage-leaf001.toy.json").read_text())
    assert config["lossless_dscp"] == 26 and config["ports"][0] == "port1"
    assert not (root / "out" / "switches" / "storage-leaf001" / "config_db.json").exists()

    # build reads its capabilities: a watchdog action ToyNOS lacks is a spec error at its line
    spec.write_text(spec.read_text().replace("action: drop}", "action: forward}"))
    refused = _run(root, "validate", str(spec))
    assert refused.returncode == 1
    report = refused.stdout + refused.stderr
    assert "toynos has no PFC watchdog action 'forward' (hint: toynos supports: drop)" in report

    # the cross-layer check reads its files back through its read-back
    (root / "templates" / "toynos" / "switch.json.j2").write_text('{"ports": {{ ports }}, "lossless_dscp": 0}\n')
    spec.write_text(spec.read_text().replace("action: forward}", "action: drop}"))
    broken = _run(root, "plan", str(spec), "-o", str(root / "out"))
    assert broken.returncode == 1
    assert "[lossless-chain] switch storage-leaf001: lossless DSCP differs" in broken.stdout + broken.stderr


TARGET_RENDER = '''
"""A toy target for the recipe test: the message of the day of every node profile."""

from __future__ import annotations

from fabricgen.core.artifacts import Artifact
from fabricgen.core.templating import render_template
from fabricgen.model.topology import Topology


def render(topology: Topology) -> list[Artifact]:
    motd = topology.cluster.motd
    if motd is None:
        return []
    return [Artifact(f"hosts/{name}/motd", render_template("motd/motd.j2", text=motd.text, profile=name))
            for name in sorted(topology.cluster.profiles)]
'''

TARGET_FEATURE = '''
"""A toy feature for the recipe test: the ``motd`` section and its target."""

from __future__ import annotations

from dataclasses import replace

from fabricgen.features.feature import BuildContext, Feature, Target
from fabricgen.features.motd import render
from fabricgen.model.cluster import Cluster
from fabricgen.model.motd import Motd


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    if "motd" not in context.data:
        return cluster
    text = context.data["motd"]["text"]
    if "\\n" in text:
        context.issues.error(("motd", "text"), "one line only", "drop the line break")
    return replace(cluster, motd=Motd(text))


FEATURE = Feature("motd", build=build, targets=(Target("motd", render.render),))
'''

TARGET_MODEL = '''
"""The toy ``motd`` section."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Motd:
    text: str
'''

TARGET_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://fabricgen.dev/schemas/sections/motd.schema.json",
    "title": "motd", "description": "A message of the day for every node.", "type": "object",
    "additionalProperties": False, "required": ["text"],
    "properties": {"text": {"type": "string", "description": "The message."}},
}


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))


def test_a_new_target_with_a_spec_section(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    package = root / "cli" / "fabricgen"
    (package / "features" / "motd").mkdir()
    (package / "features" / "motd" / "__init__.py").write_text(textwrap.dedent(TARGET_FEATURE).lstrip())
    (package / "features" / "motd" / "render.py").write_text(textwrap.dedent(TARGET_RENDER).lstrip())
    (package / "model" / "motd.py").write_text(textwrap.dedent(TARGET_MODEL).lstrip())
    _edit(package / "model" / "cluster.py", "    kubernetes: Kubernetes | None = None\n",
          "    kubernetes: Kubernetes | None = None\n    motd: Motd | None = None\n")
    _edit(package / "model" / "cluster.py", "from fabricgen.model.lustre import LustreFs\n",
          "from fabricgen.model.lustre import LustreFs\nfrom fabricgen.model.motd import Motd\n")
    _edit(package / "features" / "registry.py", "    nccl.FEATURE,\n", "    nccl.FEATURE,\n    motd.FEATURE,\n")
    _edit(package / "features" / "registry.py", "    lustre,\n", "    lustre,\n    motd,\n")
    (root / "schemas" / "sections" / "motd.schema.json").write_text(json.dumps(TARGET_SCHEMA, indent=2) + "\n")
    kubernetes = '"kubernetes": {"$ref": "sections/kubernetes.schema.json"}'
    _edit(root / "schemas" / "fabricgen.schema.json", kubernetes,
          kubernetes + ',\n    "motd": {"$ref": "sections/motd.schema.json"}')
    (root / "templates" / "motd").mkdir()
    (root / "templates" / "motd" / "motd.j2").write_text("{{ text }} ({{ profile }})\n")
    bundle = _run(root, "schema")
    assert bundle.returncode == 0 and '"motd"' in bundle.stdout, bundle.stderr
    (root / "schemas" / "fabricgen.editor.json").write_text(bundle.stdout)
    spec = root / "motd.yaml"
    spec.write_text((INVENTORIES / "lab-1su.yaml").read_text() + "motd:\n  text: Welcome to the lab\n")

    assert _changed_files(root) == [
        "cli/fabricgen/features/motd/__init__.py", "cli/fabricgen/features/motd/render.py",
        "cli/fabricgen/features/registry.py", "cli/fabricgen/model/cluster.py", "cli/fabricgen/model/motd.py",
        "motd.yaml", "schemas/fabricgen.editor.json", "schemas/fabricgen.schema.json",
        "schemas/sections/motd.schema.json", "templates/motd/motd.j2"]
    applied = _run(root, "apply", str(spec), "-o", str(root / "out"), "--yes")
    assert applied.returncode == 0, applied.stderr
    motd = sorted((root / "out" / "hosts").glob("*/motd"))
    assert motd and all(p.read_text() == f"Welcome to the lab ({p.parent.name})\n" for p in motd)

    spec.write_text(spec.read_text().replace("  text: Welcome", "  txet: Welcome"))
    refused = _run(root, "validate", str(spec))
    assert refused.returncode == 1 and "motd.txet: unknown key 'txet' (hint: did you mean 'text'? it is required)" \
        in refused.stdout
