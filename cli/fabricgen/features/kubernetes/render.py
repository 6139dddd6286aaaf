"""Target ``kubernetes``: RDMA pod networking, one secondary network per rail (or port) of the chosen fabrics.

Under ``kubernetes/network/``:
- ``namespace.yaml``: the workload namespace.
- ``<fabric>-node-policies.yaml`` (SR-IOV operator): a SriovNetworkNodePolicy per rail and node profile, marked
  ``externallyManaged`` because sriov-setup.sh creates the VFs (with the planned GUIDs) at boot; the operator
  only hands them to its device plugin.
- ``<fabric>-networks.yaml``: per rail a SriovIBNetwork (InfiniBand) or SriovNetwork (Ethernet, with the VF settings)
  carrying the rdma meta plugin, or without the operator a Multus NetworkAttachmentDefinition with the sriov /
  ib-sriov CNI and the rdma meta plugin, or the host-device CNI (no rdma plugin: it needs a VF's device ID; the PF's
  RDMA device stays shared); where one pod may hold several of the fabric's ports, the tuning meta plugin with the
  hosts' ARP settings (:func:`_meta_plugins`). IP addresses come from nv-ipam (:mod:`.ipam`). On a fabric with
  per-leaf pod ranges, one per rail and leaf (``<network>-<leaf>``, the same device plugin resource), each naming its
  leaf's pool, with the sbr meta plugin: it moves the interface's routes into a table of its own, looked up for its
  address, so two ports of one pod (storage port 0 and 1, on two leaves) each reach the fabric through their own leaf,
  as the hosts' per-port tables do.
- ``<fabric>-ip-pool.yaml``: the fabric's nv-ipam IPPools: its host pool in per-node blocks, without the blocks
  holding a host subnet's or a Lustre MGS's address, so pods never take a host's, gateway's or MGS's address; or,
  with per-leaf pod ranges, one per leaf (the range, its gateway, a route to the host pool).
- ``rdma-pool-config.yaml`` (SR-IOV operator): a SriovNetworkPoolConfig putting the nodes with VF pod networks in
  exclusive RDMA namespace mode, which the rdma meta plugin needs (without the operator sriov-setup.sh sets it).
- ``cni-binaries.yaml`` (no operator, VFs): a DaemonSet copying the sriov / ib-sriov and rdma CNI binaries into
  /opt/cni/bin, from the network operator release of images.yaml.
- ``rdma-shared-device-plugin.yaml`` (host-device only: shared RDMA namespace mode): the RDMA shared device plugin's
  ConfigMap (one resource per rail, by PF name).
- ``network-operator-values.yaml``: Helm values for the network operator chart of the same release: the SR-IOV
  network operator on (the chart's default is off, and nothing would reconcile the policies and networks) or off
  without it, NFD on (it labels the Mellanox NICs, and the operator's label on them is what the SR-IOV config
  daemon selects), the device plugin resource prefix of the pod networks.
- ``nic-cluster-policy.yaml``: the NVIDIA network operator's NicClusterPolicy (named nic-cluster-policy): the RDMA
  shared device plugin (shared mode), the SR-IOV device plugin (VFs without the SR-IOV operator), Multus and the
  reference CNI plugins, nv-ipam, the NIC Configuration Operator where a Spectrum-X fabric leaves its SuperNICs to
  it (its templates: ``nic-configuration.yaml``, :mod:`.nic_configuration`), every image from one network operator
  release.

The workloads that use these networks are target ``k8s-workloads`` (:mod:`.workloads`).

JSON embedded in strings (CNI configs, IPAM, device plugin configs) is built as data and serialised with sorted
keys, so each string parses and is byte-stable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from fabricgen.core.artifacts import Artifact
from fabricgen.core.naming import IDENTIFIER, NETDEV, checked
from fabricgen.core.yamldata import safe_load as safe_yaml
from fabricgen.features.kubernetes.build import pod_network_name, pod_ports, pod_profiles, pod_resource
from fabricgen.features.kubernetes.ipam import fabric_pools, ip_pool, ipam, pool_name
from fabricgen.features.kubernetes.nic_configuration import templates
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL, per_leaf, pod_leaves, profile_affinity
from fabricgen.model.cluster import Fabric, FabricType
from fabricgen.model.ethernet import RoceQos
from fabricgen.model.kubernetes import SHARED, Kubernetes
from fabricgen.model.sriov import Sriov
from fabricgen.model.topology import Topology

CNI_VERSION = "0.3.1"
MELLANOX_VENDOR = "15b3"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
RESOURCE_ANNOTATION = "k8s.v1.cni.cncf.io/resourceName"
RESOURCE_NAME = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,61}[a-zA-Z0-9])?$")  # device plugin resource names


@dataclass(frozen=True)
class PodNetwork:
    """One rail (or port) of a fabric as a pod network: its name, device plugin resource and PFs per profile, and the
    leaves its ports are cabled to where the fabric has per-leaf pod ranges (one attachment each)."""

    fabric: Fabric
    slot: int
    pfs: tuple[tuple[str, str, str], ...]  # (profile, PF netdev, PCI address or "")
    leaves: tuple[str, ...] = ()  # in leaf order; empty: one attachment over the fabric's pool
    siblings: bool = False  # the fabric has other pod networks: one pod may hold several of its ports

    @property
    def name(self) -> str:
        return pod_network_name(self.fabric, self.slot)

    def attachment(self, leaf: str = "") -> str:
        """The network attachment's name: the network's, or with per-leaf pools the network's and the leaf's."""
        return f"{self.name}-{leaf}" if leaf else self.name

    def attachments(self) -> tuple[tuple[str, str], ...]:
        """(attachment name, its nv-ipam pool) of every attachment of the network."""
        if not self.leaves:
            return ((self.name, pool_name(self.fabric)),)
        return tuple((self.attachment(leaf), pool_name(self.fabric, leaf)) for leaf in self.leaves)

    @property
    def resource(self) -> str:
        return checked(RESOURCE_NAME, pod_resource(self.fabric, self.slot), "resource name")


@cache
def _images_file() -> Mapping[str, Any]:
    with (Path(__file__).with_name("images.yaml")).open(encoding="utf-8") as f:
        data: dict[str, Any] = safe_yaml(f)
    return data


def images() -> Mapping[str, Mapping[str, str]]:
    """The images of the manifests (images.yaml beside this module: one network operator release, its source)."""
    found: Mapping[str, Mapping[str, str]] = _images_file()["images"]
    return found


def images_release() -> str:
    """The network operator release every image comes from."""
    return str(_images_file()["release"])


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class _Dumper(yaml.SafeDumper):
    """Manifests as people write them: no anchors and aliases for shared parts (a PyTorchJob's replicas share a
    template), multi-line strings (scripts) as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _text)


UCX_TRAFFIC_CLASS = "UCX_IB_TRAFFIC_CLASS"


def roce_class_note(qos: RoceQos, vfs: bool) -> str:
    """What a pod on a RoCE port sets to send in the lossless class. Moving a VF's RDMA device into the pod's
    namespace (exclusive mode) re-creates its rdma_cm device with default ToS 0 (lossy priority 0), whatever the host
    set; a host-device PF's RDMA device stays shared and is not re-created, so the host's default ToS (roce-qos.sh)
    holds."""
    tc = qos.nccl_tc
    lossless = f"traffic class {tc} (DSCP {qos.lossless.dscp} << 2 | ECT(0), priority {qos.lossless.priority})"
    settings = f"NCCL_IB_TC={tc} (NCCL), {UCX_TRAFFIC_CLASS}={tc} (UCX)"
    if not vfs:
        return (f"RoCE from these PFs is lossless with {lossless}: the nodes stay in shared RDMA namespace mode, so "
                f"the PF's rdma_cm\ndefault ToS is the one roce-qos.sh set on the host; {settings} set it "
                "explicitly.")
    return (f"RoCE from these VFs is lossless only with {lossless}: in the pod the VF's rdma_cm\ndefault ToS is 0. "
            f"Set {settings}, or ToS {tc} by rdma_set_option(RDMA_OPTION_ID_TOS) (rdma_cm).")


def dump(documents: Sequence[Mapping[str, Any]], header: str) -> bytes:
    """YAML documents under a comment header."""
    body = "---\n".join(yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)
                        for doc in documents)
    lines = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return (lines + "---\n" + body).encode("utf-8")


def pod_networks(topology: Topology, k8s: Kubernetes) -> list[PodNetwork]:
    """The rails (compute) or ports (other roles) of the chosen fabrics, in fabric then slot order."""
    out = []
    for ft in topology.fabrics:
        fabric = ft.fabric
        if fabric.name not in k8s.fabrics:
            continue
        slots: dict[int, list[tuple[str, str, str]]] = {}
        for name, profile in pod_profiles(fabric, topology.cluster.nodes):
            for nic in pod_ports(fabric, profile):
                slots.setdefault(Sriov.slot(nic), []).append(
                    (checked(IDENTIFIER, name, "profile name"), checked(NETDEV, nic.netdev, f"profile {name}: netdev"),
                     nic.pci))
        leaves = pod_leaves(topology, fabric)
        order = {sw.name: i for i, sw in enumerate(ft.switches)}
        for slot, pfs in sorted(slots.items()):
            name = pod_network_name(fabric, slot)
            on = sorted({ports[name] for ports in leaves.values() if name in ports}, key=order.__getitem__)
            out.append(PodNetwork(fabric, slot, tuple(pfs), tuple(on), len(slots) > 1))
    return out


def metadata(name: str, namespace: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, **extra}


def _node_policies(net: PodNetwork, k8s: Kubernetes) -> list[dict[str, Any]]:
    sriov = net.fabric.sriov
    assert sriov is not None
    docs = []
    for profile, pf, pci in net.pfs:
        selector: dict[str, Any] = {"vendor": MELLANOX_VENDOR, "pfNames": [pf]}
        if pci:
            selector["rootDevices"] = [pci]
        docs.append({
            "apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkNodePolicy",
            "metadata": metadata(f"{net.name}-{profile}", k8s.operator_namespace),
            "spec": {"resourceName": net.resource, "nodeSelector": {PROFILE_LABEL: profile},
                     "numVfs": sriov.vfs_per_port, "nicSelector": selector, "deviceType": "netdevice",
                     "isRdma": True, "linkType": sriov.link_type, "mtu": sriov.mtu, "externallyManaged": True}})
    return docs


ARP_SYSCTLS = {"net.ipv4.conf.IFNAME.arp_ignore": "1", "net.ipv4.conf.IFNAME.arp_announce": "2"}


def _meta_plugins(net: PodNetwork, k8s: Kubernetes) -> list[dict[str, Any]]:
    """The meta plugins after the main CNI, all of containernetworking/plugins but rdma, each installed by the
    NicClusterPolicy (secondaryNetwork's reference plugins, or the rdma CNI with the VFs):
    - rdma for a VF (it needs exclusive RDMA netns mode and a VF's device ID);
    - tuning where one pod may hold several ports of the fabric (``plugins/meta/tuning``, ``IFNAME`` standing for
      the pod's interface): arp_ignore=1, arp_announce=2, as roce-qos.sh and sysctl-ipoib.conf set the hosts' ports.
      An interface moved into the pod's namespace takes that namespace's defaults (0, 0), so every port would answer
      ARP for its siblings' addresses and a peer's RoCE to one port's GID would land on another NIC;
    - sbr on per-leaf networks (``plugins/meta/sbr``): it moves the interface's routes, the one to the fabric through
      its leaf's gateway among them, into a table of its own with a rule ``from <address>``, so each port's traffic
      leaves through its own leaf."""
    return [*([{"type": "rdma"}] if k8s.uses_vfs else []),
            *([{"type": "tuning", "sysctl": ARP_SYSCTLS}] if net.siblings else []),
            *([{"type": "sbr"}] if net.leaves else [])]


def _operator_network(net: PodNetwork, k8s: Kubernetes, name: str, addresses: dict[str, Any]) -> dict[str, Any]:
    sriov = net.fabric.sriov
    assert sriov is not None
    # the operator's template inserts metaPlugins verbatim after the main plugin in the "plugins" list
    # (sriov-network-operator bindata/manifests/cni-config/sriov/sriov-cni-config.yaml): objects joined by commas
    spec: dict[str, Any] = {"resourceName": net.resource, "networkNamespace": k8s.namespace,
                            "linkState": sriov.link_state, "ipam": _json(addresses),
                            "metaPlugins": ",".join(_json(p) for p in _meta_plugins(net, k8s))}
    kind = "SriovIBNetwork"
    if sriov.link_type == "eth":
        kind = "SriovNetwork"
        spec |= {"vlan": sriov.vlan, "vlanQoS": sriov.qos, "spoofChk": "on" if sriov.spoofchk else "off",
                 "trust": "on" if sriov.trust else "off", "minTxRate": sriov.min_tx_rate_mbps,
                 "maxTxRate": sriov.max_tx_rate_mbps}
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": kind,
            "metadata": metadata(name, k8s.operator_namespace), "spec": spec}


def _cni_plugin(net: PodNetwork, k8s: Kubernetes, addresses: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The main CNI plugin of a Multus attachment and the resource it draws from."""
    sriov = net.fabric.sriov
    if k8s.cni == "host-device":
        devices = {pf for _, pf, _ in net.pfs}
        if len(devices) != 1:
            raise ValueError(f"{net.name}: host-device needs one PF name on every node, profiles name "
                             f"{', '.join(sorted(devices))}")
        return {"type": "host-device", "device": devices.pop(), "ipam": addresses}, f"{net.resource}_shared"
    assert sriov is not None
    plugin: dict[str, Any] = {"type": "ib-sriov" if sriov.link_type == "ib" else "sriov",
                              "link_state": sriov.link_state, "ipam": addresses}
    if sriov.link_type == "eth":
        plugin |= {"vlan": sriov.vlan, "vlanQoS": sriov.qos, "spoofchk": "on" if sriov.spoofchk else "off",
                   "trust": "on" if sriov.trust else "off", "min_tx_rate": sriov.min_tx_rate_mbps,
                   "max_tx_rate": sriov.max_tx_rate_mbps}
    return plugin, net.resource


def _attachment(net: PodNetwork, k8s: Kubernetes, name: str, addresses: dict[str, Any]) -> dict[str, Any]:
    plugin, resource = _cni_plugin(net, k8s, addresses)
    config = {"cniVersion": CNI_VERSION, "name": name, "plugins": [plugin, *_meta_plugins(net, k8s)]}
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": metadata(name, k8s.namespace,
                                  annotations={RESOURCE_ANNOTATION: f"{k8s.resource_prefix}/{resource}"}),
            "spec": {"config": _json(config)}}


def rdma_shared_config(nets: Sequence[PodNetwork], k8s: Kubernetes) -> dict[str, Any]:
    """The RDMA shared device plugin's config: one resource per rail, selecting its PFs by name. With host-device
    the PF moves into the pod's namespace, so one pod per node can hold it: the resource admits one (rdmaHcaMax 1)
    instead of letting the scheduler place pods whose CNI then cannot find the PF."""
    share = 1 if k8s.cni == "host-device" else k8s.rdma_hca_max
    return {"configList": [
        {"resourceName": f"{net.resource}_shared", "resourcePrefix": k8s.resource_prefix,
         "rdmaHcaMax": share, "selectors": {"ifNames": sorted({pf for _, pf, _ in net.pfs})}}
        for net in nets]}


def sriov_device_plugin_config(nets: Sequence[PodNetwork], k8s: Kubernetes) -> dict[str, Any]:
    """The SR-IOV device plugin's config (used without the SR-IOV operator): one VF pool per rail."""
    return {"resourceList": [
        {"resourceName": net.resource, "resourcePrefix": k8s.resource_prefix, "deviceType": "netDevice",
         "selectors": {"vendors": [MELLANOX_VENDOR], "pfNames": sorted({pf for _, pf, _ in net.pfs}),
                       "isRdma": True}}
        for net in nets]}


def rdma_pool_config(nets: Sequence[PodNetwork], k8s: Kubernetes) -> dict[str, Any]:
    """The SR-IOV operator's SriovNetworkPoolConfig putting every node with VF pod networks in exclusive RDMA
    namespace mode (the operator writes ib_core netns_mode=0 and reboots the nodes, one at a time)."""
    profiles = sorted({profile for net in nets for profile, _, _ in net.pfs})
    return {"apiVersion": "sriovnetwork.openshift.io/v1", "kind": "SriovNetworkPoolConfig",
            "metadata": metadata("fabricgen-rdma-exclusive", k8s.operator_namespace),
            "spec": {"rdmaMode": k8s.rdma_mode, "maxUnavailable": 1, "nodeSelector": {"matchExpressions": [
                {"key": PROFILE_LABEL, "operator": "In", "values": profiles}]}}}


def _image(name: str) -> str:
    """A container image reference (repository/image:version) from images.yaml."""
    entry = images()[name]
    return f"{entry['repository']}/{entry['image']}:{entry['version']}"


def cni_binaries(nets: Sequence[PodNetwork], k8s: Kubernetes) -> dict[str, Any]:
    """Without the operator nothing installs the SR-IOV CNIs (the NicClusterPolicy's secondaryNetwork brings Multus,
    the reference plugins and ipoib only): a DaemonSet copies sriov / ib-sriov and rdma into the nodes' /opt/cni/bin,
    each from its image of the network operator release, in init containers (``--no-sleep``: copy and exit, as the
    SR-IOV operator's own daemon set runs them), then idles in the rdma-cni image (its entrypoint copies again and
    sleeps), so a node that joins later or loses /opt/cni/bin gets them back."""
    link_types = {n.fabric.sriov.link_type for n in nets if n.fabric.sriov is not None}
    plugins = [*(["sriov_cni"] if "eth" in link_types else []), *(["ib_sriov_cni"] if "ib" in link_types else []),
               "rdma_cni"]
    mount = [{"name": "cnibin", "mountPath": "/host/opt/cni/bin"}]
    resources = {"requests": {"cpu": "10m", "memory": "10Mi"}, "limits": {"cpu": "100m", "memory": "50Mi"}}

    def container(name: str, args: list[str]) -> dict[str, Any]:
        return {"name": name.replace("_", "-"), "image": _image(name), "args": args, "resources": resources,
                "securityContext": {"privileged": True}, "volumeMounts": mount}

    profiles = sorted({profile for net in nets for profile, _, _ in net.pfs})
    labels = {"app.kubernetes.io/name": "fabricgen-cni-binaries"}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": metadata("fabricgen-cni-binaries", k8s.operator_namespace, labels=labels),
            "spec": {"selector": {"matchLabels": labels}, "updateStrategy": {"type": "RollingUpdate"},
                     "template": {"metadata": {"labels": labels}, "spec": {
                         "affinity": profile_affinity(profiles),
                         "tolerations": [{"operator": "Exists", "effect": "NoSchedule"}],
                         "initContainers": [container(p, ["--no-sleep"]) for p in plugins],
                         "containers": [container("rdma_cni", [])],
                         "volumes": [{"name": "cnibin", "hostPath": {"path": "/opt/cni/bin", "type": "Directory"}}]}}}}


def _nic_cluster_policy(nets: Sequence[PodNetwork], k8s: Kubernetes, nic_configuration: bool) -> dict[str, Any]:
    image = images()
    spec: dict[str, Any] = {}
    if k8s.rdma_mode == SHARED:
        spec["rdmaSharedDevicePlugin"] = {**image["rdma_shared_device_plugin"],
                                          "config": _json(rdma_shared_config(nets, k8s))}
    if k8s.operator == "none" and k8s.cni == "sriov":
        spec["sriovDevicePlugin"] = {**image["sriov_device_plugin"],
                                     "config": _json(sriov_device_plugin_config(nets, k8s))}
    spec["secondaryNetwork"] = {"cniPlugins": dict(image["cni_plugins"]), "multus": dict(image["multus"])}
    # nv-ipam's node daemon installs the nv-ipam CNI of every pod network; without its webhook (which needs
    # cert-manager) the IPPools are checked by fabricgen (check_pod_blocks, the tests port the webhook's rules)
    spec["nvIpam"] = {**image["nv_ipam"], "enableWebhook": False}
    if nic_configuration:
        spec["nicConfigurationOperator"] = {"operator": dict(image["nic_configuration_operator"]),
                                            "configurationDaemon": dict(image["nic_configuration_daemon"])}
    return {"apiVersion": "mellanox.com/v1alpha1", "kind": "NicClusterPolicy",
            "metadata": {"name": "nic-cluster-policy"}, "spec": spec}


def helm_values(k8s: Kubernetes, nic_configuration: bool) -> dict[str, Any]:
    """The network operator chart's values (keys of its values.yaml at the release of images.yaml); with the NIC
    Configuration Operator also the Maintenance Operator it drains and reboots nodes through (its configuration
    daemon lists NodeMaintenance objects on every pass, and fails without their CRD) and its MaintenanceOperatorConfig
    (one node at a time: the CRD's default maxParallelOperations)."""
    values: dict[str, Any] = {"nfd": {"enabled": True},
                              "sriovNetworkOperator": {"enabled": k8s.operator != "none"},
                              "sriov-network-operator": {"operator": {"resourcePrefix": k8s.resource_prefix}}}
    if nic_configuration:
        values |= {"maintenanceOperator": {"enabled": True},
                   "maintenance-operator-chart": {"operatorConfig": {"deploy": True}}}
    return values


def chart_version() -> str:
    """The network operator chart's version of the release (network-operator-v26.4.1 -> 26.4.1)."""
    return images_release().removeprefix("network-operator-v")


def render(topology: Topology) -> list[Artifact]:
    """The Kubernetes manifests: see the module docstring."""
    k8s = topology.cluster.kubernetes
    if k8s is None:
        return []
    source = PurePosixPath(topology.cluster.source).name
    generated = f"Generated by fabricgen from {source}; do not edit."
    nets = pod_networks(topology, k8s)
    out = [Artifact("kubernetes/network/namespace.yaml", dump(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": k8s.namespace}}],
        f"Namespace of the RDMA workloads and their network attachments. {generated}"))]
    for fabric in [f.fabric for f in topology.fabrics if f.fabric.name in k8s.fabrics]:
        mine = [n for n in nets if n.fabric is fabric]
        name = checked(IDENTIFIER, fabric.name, "fabric name")
        pools = fabric_pools(topology, fabric)
        if per_leaf(topology, fabric):
            about = (f"nv-ipam pools of fabric {name}'s pod networks, one per leaf: the leaf's pod range "
                     f"(addressing/{name}-pod-ranges.csv) and its pod gateway,\na second address of the leaf's SVI "
                     "that the leaf announces, a route to the fabric's host pool through it, the nodes whose pod "
                     "ports are cabled to the leaf\n(their leaf labels, set by kubernetes/label-nodes.sh); "
                     f"{pools[0].block} addresses per node and leaf (its pod ports there x pods per port: "
                     f"{pools[0].ports} x {pools[0].pods_per_port}); the block holding the gateway is excluded whole.")
        else:
            about = (f"nv-ipam pool of fabric {name}'s pod networks: its host pool, {pools[0].block} addresses per "
                     f"node ({pools[0].ports} ports x {pools[0].pods_per_port} pods); the\nblocks holding the hosts' "
                     "subnets or Lustre MGS addresses are excluded whole (nv-ipam hands out a block unless all of it "
                     "is excluded).")
        out.append(Artifact(f"kubernetes/network/{name}-ip-pool.yaml", dump(
            [ip_pool(pool, k8s) for pool in pools],
            f"{about}\nnvIpam's webhook is off (it needs cert-manager): an edited pool is not validated when "
            f"applied. {generated}")))
        if k8s.operator != "none":
            out.append(Artifact(f"kubernetes/network/{name}-node-policies.yaml", dump(
                [d for n in mine for d in _node_policies(n, k8s)],
                f"SR-IOV node policies of fabric {name}: one per rail (or port) and node profile; nodes carry the "
                f"label {PROFILE_LABEL}=<profile>.\nexternallyManaged: sriov-setup.sh creates the VFs at boot with the "
                f"planned GUIDs or MACs; the operator hands them out. {generated}")))
            networks = [_operator_network(n, k8s, attachment, ipam(pool)) for n in mine
                        for attachment, pool in n.attachments()]
        else:
            networks = [_attachment(n, k8s, attachment, ipam(pool)) for n in mine
                        for attachment, pool in n.attachments()]
        if per_leaf(topology, fabric):
            about = (f"Pod networks of fabric {name}, one per rail (or port) and leaf, each from its leaf's nv-ipam "
                     f"pool ({name}-ip-pool.yaml): a pod names,\nfor each port, the attachment of the leaf its node's "
                     "port is cabled to (the node's label fabricgen.dev/<network>-leaf); sbr gives each port its\n"
                     "own routing table, so traffic bound to a port's address reaches the fabric through its own "
                     "leaf; traffic not bound to it\n(a socket or rdma_cm id without a source address) leaves via "
                     "eth0: bind the port's address (rdma_bind_addr, perftest -R with --bind_source_ip).")
        else:
            about = (f"Pod networks of fabric {name}, one per rail (or port), addresses from nv-ipam pool "
                     f"{pools[0].name} ({name}-ip-pool.yaml).")
        if fabric.type is FabricType.ROCE and fabric.qos is not None:
            about += f"\n{roce_class_note(fabric.qos, k8s.uses_vfs)}"
        out.append(Artifact(f"kubernetes/network/{name}-networks.yaml", dump(
            networks, f"{about} nv-ipam is the NicClusterPolicy's nvIpam. {generated}")))
    if k8s.rdma_mode == SHARED:
        out.append(Artifact("kubernetes/network/rdma-shared-device-plugin.yaml", dump(
            [{"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": metadata("rdma-devices", k8s.operator_namespace),
              "data": {"config.json": _json(rdma_shared_config(nets, k8s))}}],
            f"RDMA shared device plugin config: one resource per rail, by PF name (shared RDMA namespace mode: "
            f"host-device pods reach their PF's RDMA device through it). {generated}")))
    if k8s.operator == "none" and k8s.uses_vfs:
        out.append(Artifact("kubernetes/network/cni-binaries.yaml", dump(
            [cni_binaries(nets, k8s)],
            f"The CNI binaries the pod networks' NetworkAttachmentDefinitions name (sriov or ib-sriov, and rdma), "
            f"copied into /opt/cni/bin of every node\nwith pod networks, from the images of {images_release()}. "
            f"{generated}")))
    elif k8s.rdma_mode != SHARED:
        out.append(Artifact("kubernetes/network/rdma-pool-config.yaml", dump(
            [rdma_pool_config(nets, k8s)],
            f"Exclusive RDMA namespace mode on the nodes with VF pod networks: the rdma meta plugin moves each VF's "
            f"RDMA device into its pod and\nrefuses to run in shared mode. The operator sets ib_core netns_mode=0 and "
            f"reboots the nodes one at a time. {generated}")))
    nic_configuration = templates(topology, k8s.operator_namespace)
    sriov_operator = ("on: the chart leaves it off, and nothing would reconcile the node policies and networks"
                      if k8s.operator != "none" else
                      "off: the NetworkAttachmentDefinitions and the NicClusterPolicy carry the pod networks")
    out.append(Artifact("kubernetes/network/network-operator-values.yaml", dump(
        [helm_values(k8s, bool(nic_configuration))],
        f"Helm values of the NVIDIA network operator chart {chart_version()} (the release of every image here):\n"
        f"  helm install network-operator nvidia/network-operator --version {chart_version()} -n "
        f"{k8s.operator_namespace} --create-namespace -f network-operator-values.yaml\n"
        f"then apply the other files here. The SR-IOV operator is {sriov_operator}; "
        f"NFD labels the Mellanox NICs, which the\noperator marks network.nvidia.com/operator.mofed.wait=false, the "
        f"label the SR-IOV config daemon selects on. {generated}")))
    if nic_configuration:
        out.append(Artifact("kubernetes/network/nic-configuration.yaml", dump(
            nic_configuration,
            "NVIDIA NIC Configuration Operator templates: the Spectrum-X SuperNICs of each node profile get the RA "
            "release's firmware configuration (nvconfig)\nand, at every boot, its runtime settings (the operator's "
            "built-in profile of that release). The runtime settings need NVIDIA's SPC-X\ncongestion-control "
            "package, which the operator's daemon installs from a NicFirmwareSource named by a NicFirmwareTemplate: "
            "both are the\nsite's (NVIDIA hands the package out; fabricgen renders neither), and without them the "
            "runtime settings fail. A node whose firmware\nconfiguration changes is cordoned, drained and rebooted "
            "through the Maintenance Operator, one node at a time (network-operator-values.yaml\nturns it on): "
            f"labelling the nodes {PROFILE_LABEL}=<profile> (kubernetes/label-nodes.sh) starts that. The operator "
            "comes with the\nNicClusterPolicy (nicConfigurationOperator); hosts/<profile>/nic-firmware.sh leaves "
            f"these settings to it. {generated}")))
    out.append(Artifact("kubernetes/network/nic-cluster-policy.yaml", dump(
        [_nic_cluster_policy(nets, k8s, bool(nic_configuration))],
        f"NVIDIA network operator components, images of {images_release()} (fabricgen "
        f"features/kubernetes/images.yaml). {generated}")))
    return out
