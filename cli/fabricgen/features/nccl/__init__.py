"""NCCL: the ``nccl`` section (IB transport options), the environment of every node profile (or cloud instance type)
on the compute fabric, and its read-back against a RoCE fabric's lossless class."""

from __future__ import annotations

from fabricgen.features.feature import Feature, Target
from fabricgen.features.nccl import build, readback, render

FEATURE = Feature(
    "nccl",
    build=build.build,
    targets=(Target("nccl", render.render, cloud=True),),
    readback=readback.readback,
)
