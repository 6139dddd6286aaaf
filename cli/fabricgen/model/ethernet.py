"""The lossless RoCE class of an Ethernet fabric (traffic classes, ECN, PFC watchdog, SONiC buffer choices) and the
management baseline of the switches fabricgen configures."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricgen.core.errors import SourcePosition
from fabricgen.model.infiniband import Secret


@dataclass(frozen=True)
class TrafficClass:
    dscp: int
    priority: int


@dataclass(frozen=True)
class RoceQos:
    """The lossless RoCE class end to end: DSCP and priority, CNP, ECN marking, PFC watchdog, scheduling."""

    lossless: TrafficClass
    cnp: TrafficClass
    ecn_min_kb: int
    ecn_max_kb: int
    ecn_max_probability: int
    pfcwd_detect_ms: int
    pfcwd_restore_ms: int
    pfcwd_action: str
    lossless_weight: int
    buffer_model: str = "traditional"  # SONiC: "dynamic" leaves lossless headroom and pool sizes to buffermgrd
    # SONiC shared headroom pool: 0 = none (each lossless PG reserves its own xoff), else the PGs' xoff is pooled
    # and the pool is their sum over this ratio (SONiC's own convention: over_subscribe_ratio 0 disables it)
    over_subscribe_ratio: int = 0
    shared_headroom_pool_position: SourcePosition | None = field(default=None, compare=False)

    @property
    def nccl_tc(self) -> int:
        """NCCL_IB_TC: the traffic class byte, DSCP in the top six bits and ECT(0) in the ECN bits."""
        return self.lossless.dscp << 2 | 0b10


@dataclass(frozen=True)
class SpectrumX:
    """NVIDIA Spectrum-X on a RoCE fabric: adaptive routing on the switches and the SuperNIC firmware settings of
    one release of NVIDIA's reference architecture (``profile``, e.g. RA2.2) on the hosts."""

    profile: str
    link_utilization_threshold: int | None = None  # percent; None: adaptive routing ignores link utilization
    position: SourcePosition | None = field(default=None, compare=False)
    nic_configuration_operator: bool = False  # Kubernetes: NVIDIA's operator applies the SuperNIC settings


@dataclass(frozen=True)
class SwitchManagement:
    """NTP, DNS, syslog, SNMP and TACACS+ of every configured switch; secrets only as where to read them."""

    ntp: tuple[str, ...] = ()
    dns_servers: tuple[str, ...] = ()
    dns_domain: str = ""
    syslog: tuple[tuple[str, int], ...] = ()  # (server, UDP port)
    snmp_community: Secret | None = None
    snmp_location: str = ""
    snmp_contact: str = ""
    tacacs_servers: tuple[str, ...] = ()      # in priority order
    tacacs_key: Secret | None = None
    tacacs_timeout: int = 5

    @property
    def secrets(self) -> tuple[tuple[str, Secret], ...]:
        """The secrets a switch applies at deploy time, by what they are."""
        found = (("tacacs_key", self.tacacs_key), ("snmp_community", self.snmp_community))
        return tuple((name, secret) for name, secret in found if secret is not None)
