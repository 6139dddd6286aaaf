"""Build the ``nccl`` section: NCCL options of the IB-verbs transport, each checked against the range NCCL accepts
(``ib_options.yaml``, with its sources), so a value NCCL would reject or misread fails the spec, not the job."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from fabricgen.core.errors import SpecError
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster
from fabricgen.model.nccl import NcclOption
from fabricgen.spec.load import load_file
from fabricgen.spec.validate import schema_issues


@cache
def ib_options() -> Mapping[str, Mapping[str, Any]]:
    """The shipped option table, validated against its schema (a broken file is a packaging bug)."""
    document = load_file(Path(__file__).with_name("ib_options.yaml"))
    issues = schema_issues(document, document.data, "sections/nccl.schema.json#/$defs/ib_options_file")
    if issues:
        raise SpecError(issues)
    options: Mapping[str, Mapping[str, Any]] = document.data["ib_options"]
    return options


def build(context: BuildContext, cluster: Cluster) -> Cluster:
    spec = context.data.get("nccl", {})
    issues = context.issues.at("nccl")
    options = []
    for key, option in ib_options().items():
        if key not in spec:
            continue
        value, low, high = spec[key], option["minimum"], option["maximum"]
        if not low <= value <= high:
            issues.error((key,), f"{option['env']} {value} is outside the {low}..{high} NCCL accepts "
                                 f"({option['meaning']})", f"a value from {low} to {high}, or leave it out for "
                                                           "NCCL's default")
            continue
        options.append(NcclOption(option["env"], value, f"{option['meaning']}: {option['why']}",
                                  issues.position((key,))))
    return replace(cluster, nccl=tuple(options))
