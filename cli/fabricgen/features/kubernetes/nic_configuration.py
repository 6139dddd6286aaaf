"""``kubernetes/network/nic-configuration.yaml``: the NicConfigurationTemplates of NVIDIA's NIC Configuration Operator
for the Spectrum-X fabrics that leave their SuperNICs to it (``spectrum_x.nic_configuration_operator``).

One template per node profile and SuperNIC type: the profile's nodes by the node-profile label, the fabric's cards by
their PCI device id (``nicType``) and, where the profile has more cards of that type than the fabric's, by their PCI
addresses; ``spectrumXOptimized`` with the fabric's RA release, single plane, no overlay, one VF on an Ethernet link
(the operator's CRD rules). The operator's built-in profile of that release (its ``bindata/spectrum-x/<RA>.yaml``,
the nvconfig that ``nic-firmware.sh`` otherwise writes) sets the firmware and, at every boot, the runtime settings
(adaptive retransmission, tx-window, congestion control) through DOCA Management Service; it resets and reboots a
node whose firmware it changes. Checked against the CRD and its CEL rules of the release the NicClusterPolicy's
images come from (Mellanox/nic-configuration-operator tag network-operator-v26.4.1).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fabricgen.core.naming import IDENTIFIER, checked
from fabricgen.features.kubernetes.build import pod_profiles
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL
from fabricgen.model.cluster import Fabric
from fabricgen.model.nodes import NodeProfile
from fabricgen.model.topology import Topology

API_VERSION = "configuration.net.nvidia.com/v1alpha1"


def operator_fabrics(topology: Topology) -> list[Fabric]:
    """The Spectrum-X fabrics whose SuperNICs NVIDIA's NIC Configuration Operator configures."""
    return [f.fabric for f in topology.fabrics
            if f.fabric.spectrum_x is not None and f.fabric.spectrum_x.nic_configuration_operator]


def _selectors(topology: Topology, fabric: Fabric, profile: NodeProfile) -> list[dict[str, Any]]:
    """The nicSelector of each SuperNIC type the profile attaches to ``fabric`` (PCI addresses where the profile
    holds cards of that type elsewhere, which the template must leave alone)."""
    models = topology.cluster.nic_models
    ports = profile.nics(fabric.role.nic_role)
    beside = profile.devices_beside(fabric.role.nic_role, models)
    out = []
    for device in sorted({models[n.model].pci_device_id for n in ports}):
        selector: dict[str, Any] = {"nicType": device}
        if device in beside:
            selector["pciAddresses"] = sorted({n.pci for n in ports if models[n.model].pci_device_id == device})
        out.append(selector)
    return out


def templates(topology: Topology, namespace: str) -> list[Mapping[str, Any]]:
    """Every NicConfigurationTemplate of the cluster, in fabric, profile and device order, in ``namespace`` (the
    network operator's, which the NIC Configuration Operator it deploys watches)."""
    docs: list[Mapping[str, Any]] = []
    for fabric in operator_fabrics(topology):
        spx = fabric.spectrum_x
        assert spx is not None
        for name, profile in pod_profiles(fabric, topology.cluster.nodes):
            for selector in _selectors(topology, fabric, profile):
                template = f"{checked(IDENTIFIER, fabric.name, 'fabric name')}-{name}-{selector['nicType']}"
                docs.append({"apiVersion": API_VERSION, "kind": "NicConfigurationTemplate",
                             "metadata": {"name": template, "namespace": namespace},
                             "spec": {"nodeSelector": {PROFILE_LABEL: name}, "nicSelector": selector,
                                      "resetToDefault": False,
                                      "template": {"numVfs": 1, "linkType": "Ethernet",
                                                   "spectrumXOptimized": {
                                                       "enabled": True, "version": spx.profile, "overlay": "none",
                                                       "multiplaneMode": "none", "numberOfPlanes": 1}}}})
    return docs
