"""The ordered tuple of features every stage iterates (build, compile, check, render, read-back).

Order matters where a feature reads what another built, and only there:
- build: infiniband, ethernet and addressing complete each fabric before sriov reads their types and MTUs;
  kubernetes reads the fabrics' sriov and addressing; lustre reads their address plans and lossless class; gds
  reads the lustre file systems; object_storage reads the Lustre claims' mount paths;
- compile: cabling, then addressing (independent plans; the first that fails stops compile, so the cable plan's
  problems are reported first), then lustre (its named storage servers' NIDs come from the address plan);
- render: the slowest targets (the XLSX workbook and the PDFs, which share the cable sheets) first, so a parallel
  render starts them first.
Checks and read-backs are order-free: their findings are sorted or kept per artifact.
"""

from __future__ import annotations

from fabricgen.features import (
    addressing,
    cabling,
    cloud,
    ethernet,
    gds,
    infiniband,
    kubernetes,
    lab,
    lustre,
    monitoring,
    nccl,
    netbox,
    object_storage,
    scheduler,
    sriov,
    topology,
)
from fabricgen.features.feature import Feature

FEATURES: tuple[Feature, ...] = (
    cabling.FEATURE,
    topology.FEATURE,
    infiniband.FEATURE,
    ethernet.FEATURE,
    addressing.FEATURE,
    netbox.FEATURE,
    sriov.FEATURE,
    kubernetes.FEATURE,
    lustre.FEATURE,
    gds.FEATURE,
    object_storage.FEATURE,
    nccl.FEATURE,
    scheduler.FEATURE,
    monitoring.FEATURE,
    cloud.FEATURE,
    lab.FEATURE,
)
