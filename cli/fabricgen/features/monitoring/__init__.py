"""Monitoring as code: the ``monitoring`` section (alert thresholds) and the ``monitoring`` target: Prometheus
recording and alerting rules per RDMA fabric, labelled with the plan's cables, the exporters' scrape configuration
and a Grafana dashboard per fabric."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.monitoring import build, render

FEATURE = Feature("monitoring", build=build.build, targets=(Target("monitoring", render.render),))
