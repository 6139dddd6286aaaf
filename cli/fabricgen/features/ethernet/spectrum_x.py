"""NVIDIA Spectrum-X on a RoCE fabric (``fabrics.<name>.spectrum_x``) and the BlueField-3 mode of a node profile
(``node_profiles.<p>.bluefield_mode``): the spec sections, checked against what the switches' NOS, the switch
ASICs, the hosts' NICs and NVIDIA's reference architecture need, each refusal at the spec line that asks for it.

Spectrum-X is adaptive routing on the switches (Cumulus Linux NVUE on Spectrum-4, routed 400G/200G links: the
NOS data's ``adaptive_routing``) plus the SuperNICs' firmware settings of one release of NVIDIA's reference
architecture on the hosts (``nic_firmware.yaml``); the packets a switch sprays over its uplinks arrive out of order,
which only a SuperNIC places in order (a plain ConnectX-7 or a DPU in the example's place would retransmit).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fabricgen.core.document import PathKey
from fabricgen.core.issues import Issues
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.feature import BuildContext
from fabricgen.model.cluster import Cluster, Fabric, FabricType, Tier
from fabricgen.model.ethernet import RoceQos, SpectrumX
from fabricgen.model.hardware import NicModel
from fabricgen.model.nodes import Nic, NodeProfile
from fabricgen.spec.load import load_file
from fabricgen.spec.validate import with_defaults

SCHEMA = "sections/ethernet.schema.json#/$defs/spectrum_x"


@cache
def firmware_data() -> Mapping[str, Any]:
    """nic_firmware.yaml: the Spectrum-X RA host profiles and the BlueField-3 mode settings (sources in the file)."""
    return MappingProxyType(load_file(Path(__file__).with_name("nic_firmware.yaml")).data)


def ra_profile(name: str) -> Mapping[str, Any]:
    """One Spectrum-X reference architecture release: its nvconfig per PCI device id and its lossless class."""
    profile: Mapping[str, Any] = firmware_data()["spectrum_x"][name]
    return profile


def bluefield_devices() -> tuple[str, ...]:
    """PCI device ids whose mode bluefield_mode selects (BlueField-3)."""
    return tuple(firmware_data()["bluefield"]["devices"])


def bluefield_mode_settings(mode: str) -> Mapping[str, int]:
    """The nvconfig values that select ``mode`` (nic or dpu) on a BlueField-3."""
    settings: Mapping[str, int] = firmware_data()["bluefield"]["modes"][mode]
    return settings


def attached_ports(cluster: Cluster, fabric: Fabric) -> Iterator[tuple[NodeProfile, Nic]]:
    """Each (profile, NIC port) of the profiles attached to ``fabric``, every profile once, in name order."""
    groups = set(fabric.node_groups)
    profiles = {n.profile.name: n.profile for n in cluster.nodes if n.group in groups}
    for name in sorted(profiles):
        for nic in profiles[name].nics(fabric.role.nic_role):
            yield profiles[name], nic


def build(context: BuildContext, cluster: Cluster, fabric: Fabric, spec: Mapping[str, Any], issues: Issues,
          by_tier: Mapping[Tier, str], qos: RoceQos | None) -> SpectrumX | None:
    """The fabric's ``spectrum_x`` section, refused where the NOS, a switch, a link, a host NIC or the lossless
    class cannot run NVIDIA's Spectrum-X."""
    if "spectrum_x" not in spec:
        return None
    s = with_defaults(spec["spectrum_x"], SCHEMA)
    at = issues.at("spectrum_x")
    if fabric.type is not FabricType.ROCE or qos is None:
        at.error((), "Spectrum-X runs RoCE over the lossless class", "use type: roce (with its qos)")
        return None
    if not by_tier:
        at.error((), "Spectrum-X needs the switches configured: adaptive routing is a switch setting",
                 "set nos: nvue (Cumulus Linux) and the fabric's addressing")
    tiers = [t for t in Tier if t in by_tier]
    for nos in sorted({by_tier[t] for t in tiers}):
        data = systems()[nos].data
        if not data.adaptive_routing:
            where = ("nos",) if isinstance(spec.get("nos"), str) else ("nos", next(
                k for k, v in spec["nos"].items() if v == nos))
            issues.error(where, f"{data.title} has no adaptive routing, which Spectrum-X needs on every switch",
                         "Cumulus Linux (nos: nvue) runs adaptive routing on Spectrum-4; SONiC's config_db has no "
                         "table for it and EOS does not run on Spectrum switches")
    checked_models = set()
    for tier in tiers:
        data, model = systems()[by_tier[tier]].data, fabric.switches[tier]
        asics = data.adaptive_routing.get("asics", ())
        if asics and model.name not in checked_models and model.asic not in asics:
            checked_models.add(model.name)
            switch = spec.get("switch")
            where = ("switch",) if not isinstance(switch, Mapping) else ("switch", next(
                k for k in (tier.value, "spine", "leaf") if k in switch))
            issues.error(where, f"the {tier.value} switch {model.name} ({model.asic or 'ASIC unknown'}) has no "
                                f"adaptive routing under {data.title}, which Spectrum-X needs",
                         f"{data.title} runs adaptive routing on {', '.join(asics)} switches only, e.g. SN5600")
    speeds = {s for t in tiers for s in systems()[by_tier[t]].data.adaptive_routing.get("link_speeds", ())}
    if speeds and fabric.uplink_speed.name not in speeds:
        issues.error(("uplink_speed",) if "uplink_speed" in spec else ("spectrum_x",),
                     f"switch-to-switch links run at {fabric.uplink_speed.name}, where Spectrum-4 has no adaptive "
                     "routing", f"set uplink_speed: {' or '.join(sorted(speeds, reverse=True))} (Cumulus Linux "
                                "runs adaptive routing at 400G and 200G only, never on 800G links)")
    profile = ra_profile(s["profile"])
    if qos.lossless.priority != profile["lossless_priority"]:
        issues.error(("qos", "lossless", "priority"), f"Spectrum-X {s['profile']} runs the lossless class on "
                     f"priority {profile['lossless_priority']}, not {qos.lossless.priority}",
                     f"use priority {profile['lossless_priority']} (the RA's PFC setting, which the SuperNICs get)")
    if qos.cnp.dscp != profile["cnp_dscp"]:
        issues.error(("qos", "cnp", "dscp"), f"Spectrum-X {s['profile']} sends CNPs with DSCP {profile['cnp_dscp']}, "
                     f"not {qos.cnp.dscp}", f"use dscp {profile['cnp_dscp']} (NVIDIA's NIC configuration operator "
                                            "checks exactly it)")
    if "sriov" in spec:
        issues.error(("sriov",), f"Spectrum-X {s['profile']} sets the SuperNICs' firmware to one VF "
                     "(SRIOV_EN=1 NUM_OF_VFS=1), which sriov's VF count would undo at every run",
                     "remove sriov from the Spectrum-X fabric")
    devices = profile["nvconfig"]
    refused: set[tuple[str, str]] = set()
    for node_profile, nic in attached_ports(cluster, fabric):
        card: NicModel | None = context.nic_models.get(nic.model)
        key = (node_profile.name, nic.model)
        if key in refused or card is None:
            continue
        if not card.supernic or card.pci_device_id not in devices:
            refused.add(key)
            kind = ("a SuperNIC whose device id has no settings in " + s["profile"] if card.supernic
                    else "not a SuperNIC")
            path: PathKey = _nic_path(context, node_profile, nic) or at.prefix
            context.issues.error(path, f"node profile {node_profile.name}: its {fabric.role.value} port {nic.port} "
                                        f"is a {nic.model}, {kind}, on Spectrum-X fabric {fabric.name}",
                                 "Spectrum-X needs a BlueField-3 or ConnectX-8 SuperNIC on every port (catalog "
                                 "supernic: true, e.g. BlueField-3-B3140H)")
        elif node_profile.bluefield_mode == "dpu" and card.pci_device_id in bluefield_devices():
            refused.add(key)
            at.error((), f"node profile {node_profile.name} runs its BlueField-3 cards in DPU mode",
                     "Spectrum-X's SuperNIC settings are NIC mode: bluefield_mode: nic, or leave it out")
    operator = bool(s["nic_configuration_operator"])
    if operator and "kubernetes" not in context.data:
        at.error(("nic_configuration_operator",), "NVIDIA's NIC Configuration Operator runs on Kubernetes nodes, and "
                 "the spec has no kubernetes section", "add the kubernetes section, or set "
                 "nic_configuration_operator: false (nic-firmware.sh then sets the firmware half)")
    if operator:
        _operator_selects_by_type_or_address(context, cluster, fabric, at)
    return SpectrumX(s["profile"], s.get("link_utilization_threshold"), issues.position(("spectrum_x",)), operator)


def _operator_selects_by_type_or_address(context: BuildContext, cluster: Cluster, fabric: Fabric,
                                         at: Issues) -> None:
    """The operator's template selects cards by PCI device id, and by PCI address where a profile holds cards of
    that id off the fabric too (a storage DPU beside the SuperNICs): those profiles need every fabric port's
    address, or the template would reconfigure the other cards."""
    def device(nic: Nic) -> str:
        model = context.nic_models.get(nic.model)
        return model.pci_device_id if model is not None else ""

    seen = set()
    for profile, nic in attached_ports(cluster, fabric):
        beside = profile.devices_beside(fabric.role.nic_role, context.nic_models)
        if nic.pci or device(nic) not in beside or profile.name in seen:
            continue
        seen.add(profile.name)
        at.error(("nic_configuration_operator",), f"node profile {profile.name} has {device(nic)} cards beside "
                 f"fabric {fabric.name}'s, and its port {nic.port} has no pci address to select it by",
                 f"give node_profiles.{profile.name}'s ports on the fabric their pci addresses (the operator's "
                 "template would otherwise configure every card of that type as a Spectrum-X SuperNIC)")


def _nic_path(context: BuildContext, profile: NodeProfile, nic: Nic) -> PathKey | None:
    """The spec path of a NIC's model when the spec defines the profile (a catalog profile has no line)."""
    spec = context.data.get("node_profiles", {}).get(profile.name)
    if spec is None:
        return None
    role = nic.role.value
    entry = spec["nics"].get(role)
    if isinstance(entry, Mapping):
        return ("node_profiles", profile.name, "nics", role, "model")
    return ("node_profiles", profile.name, "nics", role, nic.index, "model")


def bluefield_modes(context: BuildContext, cluster: Cluster) -> None:
    """Each ``bluefield_mode`` a profile sets: the profile has BlueField-3 ports, and DPU mode is refused on RoCE
    fabrics with a lossless class, whose host settings (roce-qos.sh) NVIDIA calls undefined while the Arm owns the
    port; fabricgen writes no Arm-side configuration."""
    issues = context.issues.at("node_profiles")
    roce = [f for f in cluster.fabrics if f.type is FabricType.ROCE and f.qos is not None]
    for name, profile in sorted(cluster.profiles.items()):
        if not profile.bluefield_mode:
            continue
        ports = [n for n in (*profile.compute, *profile.storage, *profile.inband)
                 if (m := context.nic_models.get(n.model)) is not None and m.pci_device_id in bluefield_devices()]
        if not ports:
            issues.error((name, "bluefield_mode"), f"node profile {name} has no BlueField-3 port",
                         "remove bluefield_mode, or give the profile its BlueField-3 NICs "
                         "(catalog pci_device_id a2dc)")
            continue
        if profile.bluefield_mode != "dpu":
            continue
        for fabric in roce:
            if any(nic in ports for p, nic in attached_ports(cluster, fabric) if p.name == name):
                issues.error((name, "bluefield_mode"), f"node profile {name}'s BlueField-3 ports carry the "
                             f"lossless RoCE class of fabric {fabric.name}, which the host cannot set in DPU mode",
                             "use bluefield_mode: nic (NVIDIA: host-side mlnx_qos is undefined while the Arm owns "
                             "the port; fabricgen writes no Arm-side configuration)")
                break
