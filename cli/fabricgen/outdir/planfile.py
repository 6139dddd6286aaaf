"""Saved plans (``plan -out PLANFILE``): what ``apply PLANFILE`` may apply, and only while nothing has changed.

The file records the spec it was made from (its path and the digest of its bytes), the digest of every rendered
output and the digest of what the plan found in OUT. Apply re-renders, re-plans and writes only when all three
still match (the OUT digest is checked again under apply's lock); the tool version must match too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricgen.core.errors import OutputError
from fabricgen.core.files import TooLargeError, read_bounded
from fabricgen.outdir.plan import Plan

FORMAT = "fabricgen-plan/1"
MAX_PLANFILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class SavedPlan:
    spec: Path
    out_dir: Path
    force: bool
    spec_digest: str
    outputs_digest: str
    state_digest: str
    tool_version: str
    renamed_from: str = ""  # the cluster OUT held, adopted by this plan (plan --renamed-from); "" none

    def stale(self, plan: Plan, spec_digest: str, tool_version: str) -> list[str]:
        """Why ``plan`` (made now from the same spec) is not the saved one; empty when it is."""
        reasons = []
        if tool_version != self.tool_version:
            reasons.append(f"fabricgen is {tool_version}, the plan was made by {self.tool_version}")
        if spec_digest != self.spec_digest:
            reasons.append(f"the spec {self.spec} changed")
        elif plan.outputs_digest != self.outputs_digest:
            reasons.append("the rendered outputs differ (a template, catalog or inventory file, or fabricgen's own "
                           "code changed)")
        if plan.state_digest != self.state_digest:
            reasons.append(f"the files in {self.out_dir} changed")
        return reasons


def save(path: Path, plan: Plan, spec: Path, *, force: bool, renamed_from: str, tool_version: str) -> None:
    """Write the saved plan of ``plan`` (made from ``spec``) to ``path``; ``force`` and ``renamed_from`` are the
    options it was made with, which apply keeps."""
    data = {
        "format": FORMAT,
        "tool_version": tool_version,
        "spec": str(spec.resolve()),
        "out_dir": str(plan.out_dir.resolve()),
        "force": force,
        "renamed_from": renamed_from,
        "spec_digest": plan.lock.spec_digest,
        "outputs_digest": plan.outputs_digest,
        "state_digest": plan.state_digest,
        "summary": plan.counts,
    }
    try:
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    except OSError as exc:
        raise OutputError(f"cannot write the plan file {path}: {exc.strerror or exc}") from exc


def is_planfile(path: Path) -> bool:
    """True when ``path`` holds a saved plan rather than a spec (a JSON object naming this format)."""
    try:
        head = read_bounded(path, MAX_PLANFILE_BYTES)
    except (OSError, TooLargeError):
        return False
    return head.lstrip().startswith(b"{") and FORMAT.encode() in head


def load(path: Path) -> SavedPlan:
    """Read a saved plan; raise OutputError when it is not one."""
    try:
        data: Any = json.loads(read_bounded(path, MAX_PLANFILE_BYTES))
    except (OSError, TooLargeError, ValueError) as exc:
        raise OutputError(f"{path} is not a readable plan file: {exc}") from exc
    fields = ("spec", "out_dir", "force", "spec_digest", "outputs_digest", "state_digest", "tool_version")
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise OutputError(f"{path} is not a fabricgen plan file ({FORMAT})")
    if missing := [k for k in fields if k not in data]:
        raise OutputError(f"the plan file {path} is incomplete: it lacks {', '.join(missing)}; run plan -out again")
    return SavedPlan(Path(data["spec"]), Path(data["out_dir"]), bool(data["force"]), str(data["spec_digest"]),
                     str(data["outputs_digest"]), str(data["state_digest"]), str(data["tool_version"]),
                     str(data.get("renamed_from", "")))  # absent from a plan saved before the option
