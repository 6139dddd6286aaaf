"""``fabricgen apply --cloud``: run the emitted Pulumi project, or say exactly how to.

With a ``pulumi`` CLI on PATH, the project under OUT/pulumi/<stack>/ is driven through Pulumi's Automation API
(a LocalWorkspace on that directory: install its requirements, select or create the stack, ``up``). Without
one, nothing is run and the caller prints the commands. pulumi is imported only here and only on that path,
so fabricgen itself never needs the Pulumi SDK.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from fabricgen.core.errors import FabricgenError
from fabricgen.model.cluster import Cluster


class DeployError(FabricgenError):
    """The cloud deployment could not run (no cloud section) or failed after apply wrote the project."""

    stage = "deploy"

    def __init__(self, message: str, after_apply: bool = False) -> None:
        super().__init__(message)
        self.after_apply = after_apply

    @property
    def outcome(self) -> str:
        if self.after_apply:
            return "the artifacts were written; the cloud deployment did not finish"
        return super().outcome


@dataclass(frozen=True)
class Project:
    """An emitted Pulumi project: its directory and the stack it deploys (named after the cluster)."""

    directory: Path
    stack: str

    def commands(self) -> tuple[str, ...]:
        """What to run by hand: the same steps the Automation API takes."""
        return (
            f"cd {shlex.quote(str(self.directory))}",
            "python3 -m venv venv && venv/bin/pip install -r requirements.txt",
            f"pulumi stack select --create {shlex.quote(self.stack)}",
            "pulumi up",
        )


def project(cluster: Cluster, out_dir: Path) -> Project:
    """The Pulumi project apply wrote for a cloud cluster."""
    if cluster.cloud is None:
        raise DeployError("--cloud needs a cloud cluster: the spec has no cloud section")
    stack = cluster.metadata.name  # a DNS label (schema): safe as a path segment and a stack name
    return Project(out_dir / "pulumi" / stack, stack)


def pulumi_cli() -> str | None:
    """The pulumi CLI the Automation API would run, if installed."""
    return shutil.which("pulumi")


def up(target: Project, on_output: Callable[[str], Any]) -> Mapping[str, Any]:
    """``pulumi up`` through the Automation API; returns the stack outputs (secrets stay masked)."""
    from pulumi import automation  # only with --cloud and a pulumi CLI: fabricgen does not need the SDK otherwise

    try:
        stack = automation.create_or_select_stack(stack_name=target.stack, work_dir=str(target.directory))
        cast(automation.LocalWorkspace, stack.workspace).install(on_output=on_output)  # what it creates
        result = stack.up(on_output=on_output, show_secrets=False)
    except automation.errors.CommandError as exc:
        raise DeployError(f"pulumi up failed for stack {target.stack}: {exc}", after_apply=True) from exc
    return {name: value.value if not value.secret else "[secret]" for name, value in result.outputs.items()}
