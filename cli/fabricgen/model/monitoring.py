"""The ``monitoring`` section: the thresholds of the fabric's Prometheus alerts (the schema holds their defaults)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Thresholds:
    """Alert thresholds; percentages are 0-100, rates per second. Field names are the schema's keys."""

    rdma_loss_percent: float
    rdma_loss_healthy_percent: float
    utilisation_high_percent: float
    utilisation_low_percent: float
    utilisation_busy_percent: float
    lustre_client_min_gbytes_per_s: float
    data_wait_percent: float
    symbol_errors_per_hour: int
    xmit_wait_percent: float
    ecn_marked_percent: float
    pfc_paused_percent: float


@dataclass(frozen=True)
class Monitoring:
    thresholds: Thresholds
