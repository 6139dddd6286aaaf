"""Ethernet and RoCE: the fabric's NOS, MTUs, lossless class and Spectrum-X, the switch configurations of every NOS
in ``nos/`` (one target each), the hosts' RoCE QoS and NIC firmware settings (BlueField-3 mode, Spectrum-X SuperNIC
settings), and the read-back of the lossless chain through hosts and switches."""

from __future__ import annotations

from fabricgen.features.ethernet import build, checks, host_roce, nic_firmware, readback
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.feature import Feature, Target

FEATURE = Feature(
    "ethernet",
    build=build.build_sections,
    checks=(checks.unconfigured_switches, checks.mlag_image, checks.unrouted_management, checks.shared_headroom_pool,
            *(check for nos in systems().values() for check in nos.checks)),
    targets=(Target("host-roce", host_roce.render), Target("host-firmware", nic_firmware.render),
             *(Target(name, nos.render) for name, nos in systems().items())),
    readback=readback.readback,
)
