"""What the cloud tests share: the three cloud example specs and their emitted Pulumi project on disk
(tests/unit/features/cloud, tests/external/cloud)."""

from __future__ import annotations

from pathlib import Path

from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES

AWS_SPEC = INVENTORIES / "aws-p5-efa.yaml"
ALI_SPEC = INVENTORIES / "alicloud-erdma.yaml"
GCP_SPEC = INVENTORIES / "gcp-a3-tcpxo.yaml"


def emit(spec: Path, tmp_path: Path, edit: dict[str, str] | None = None) -> Path:
    """Render the spec (with text replacements) and write its Pulumi project; return the project directory."""
    text = spec.read_text()
    for old, new in (edit or {}).items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / spec.name
    path.write_text(text)
    artifacts = [a for a in render_spec(compile_spec(path)) if a.path.startswith("pulumi/")]
    for artifact in artifacts:
        target = tmp_path / "out" / artifact.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(artifact.content)
    (project,) = {(tmp_path / "out" / a.path).parent for a in artifacts}
    return project
