"""Kubernetes manifests: every custom resource validates against its CRD schema from ../shared/validators/k8s-crds
made strict (unknown fields rejected), core objects against Kubernetes' own schemas (kubernetes-validate), and
the JSON held in strings (CNI configs, IPAM, device plugin configs) parses and is checked on its own."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress
import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from fabricgen.features.kubernetes import nodes
from fabricgen.features.kubernetes import render as kubernetes
from fabricgen.model.topology import Topology
from fabricgen.pipeline import compile_spec, render_spec
from fabricgen.stages.render import render
from tests.conftest import INVENTORIES, REPO
from tests.helpers.kubernetes import HELM_VALUES, MODES, ROCE, documents, manifests

CRDS = REPO.parent / "shared" / "validators" / "k8s-crds"
# CRDs the shared validators lack, kept here with their sources (tests/data/kubernetes/crds/README.md)
MORE_CRDS = REPO / "tests" / "data" / "kubernetes" / "crds"
K8S_VERSION = "1.37.0"  # the newest schemas kubernetes-validate 1.37 ships
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
CORE_KINDS = {"Namespace", "ConfigMap", "Pod", "DaemonSet"}


def require_crds() -> Path:
    """The shared CRD schemas, or skip (locally) / fail (CI) when the checkout lacks them."""
    if (CRDS / "crds").is_dir() and (CRDS / "device-plugin-schemas").is_dir():
        return CRDS
    problem = f"the Kubernetes CRD schemas are not at {CRDS} (../shared next to the repository)"
    if os.environ.get("FABRICGEN_REQUIRE_EXTERNAL") == "1":
        pytest.fail(f"{problem}; required in CI (FABRICGEN_REQUIRE_EXTERNAL=1)")
    pytest.skip(problem)


def strict(schema: Any) -> Any:
    """A copy where every object schema listing properties (and not preserving unknown fields) rejects others."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out and not out.get(
            "x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@cache
def crd_validators() -> dict[tuple[str, str], Draft202012Validator]:
    """(apiVersion, kind) -> a validator of the strict openAPIV3Schema of every served CRD version."""
    out = {}
    for path in sorted([*(require_crds() / "crds").glob("*.yaml"), *MORE_CRDS.glob("*.yaml")]):
        for crd in yaml.safe_load_all(path.read_text()):
            group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
            for version in crd["spec"]["versions"]:
                schema = strict(version["schema"]["openAPIV3Schema"])
                out[(f"{group}/{version['name']}", kind)] = Draft202012Validator(schema)
    return out


def plugin_validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(strict(json.loads((require_crds() / "device-plugin-schemas" / name).read_text())))


def validate(doc: dict[str, Any]) -> list[str]:
    """Every problem of one manifest: CRD schema or Kubernetes' own, plus metadata names."""
    if doc["kind"] in CORE_KINDS:
        import kubernetes_validate

        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            return [str(exc)]
        return []
    validator = crd_validators()[(doc["apiVersion"], doc["kind"])]
    problems = [f"{'.'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]
    if doc["kind"] == "PyTorchJob":  # its pod templates are Pods as Kubernetes itself checks them
        problems += [f"{role}: {p}" for role, replica in doc["spec"]["pytorchReplicaSpecs"].items()
                     for p in validate({"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": "replica", **replica["template"]["metadata"]},
                                        "spec": replica["template"]["spec"]})]
    meta = doc["metadata"]
    problems += [f"metadata.{k}: {meta[k]!r}" for k in ("name", "namespace")
                 if k in meta and not re.match(DNS_SUBDOMAIN, meta[k])]
    return problems


CNI_NETWORK_NAME = r"^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$"  # containernetworking/cni pkg/utils ValidateNetworkName


def webhook_problems(pool: dict[str, Any]) -> list[str]:
    """nv-ipam's IPPool webhook (nvidia-k8s-ipam api/v1alpha1/ippool_validate.go, validate_exclusions.go), which
    fabricgen's NicClusterPolicy leaves off (it needs cert-manager): the same rules, so a pool it would refuse fails
    here."""
    spec, problems = pool["spec"], []
    if not re.match(CNI_NETWORK_NAME, pool["metadata"]["name"]):
        problems.append("metadata.name: not a CNI network name")
    subnet = ipaddress.ip_network(spec["subnet"])  # strict: host bits set is invalid, as net.ParseCIDR's network
    if not 1 <= spec["perNodeBlockSize"] <= subnet.num_addresses - 2:
        problems.append("spec.perNodeBlockSize: larger than the subnet's addresses")
    for i, e in enumerate(spec.get("exclusions", [])):
        start, end = ipaddress.ip_address(e["startIP"]), ipaddress.ip_address(e["endIP"])
        if start not in subnet or end not in subnet or end < start:
            problems.append(f"spec.exclusions[{i}]: outside the subnet or reversed")
    for term in spec.get("nodeSelector", {}).get("nodeSelectorTerms", []):
        for expr in term.get("matchExpressions", []):
            if expr["operator"] not in ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt") or (
                    expr["operator"] in ("In", "NotIn") and not expr.get("values")):
                problems.append(f"spec.nodeSelector: {expr}")
    if "gateway" not in spec and (spec.get("defaultGateway") or spec.get("routes")):
        problems.append("spec: defaultGateway or routes without a gateway")
    return problems


def nv_ipam_blocks(pool: dict[str, Any], nodes: int) -> list[list[ipaddress.IPv4Address]]:
    """The addresses nv-ipam hands out on each of ``nodes`` nodes, as upstream allocates them (nvidia-k8s-ipam
    pkg/ipam-controller/allocator/allocator.go AllocateFromPool: blocks of perNodeBlockSize from the subnet's second
    address on, a block skipped only when the exclusions cover all of it, none past the broadcast address; the node
    then skips its block's excluded addresses). A node left without a block gets an empty list."""
    spec = pool["spec"]
    subnet, size = ipaddress.ip_network(spec["subnet"]), spec["perNodeBlockSize"]
    excluded = [(ipaddress.ip_address(e["startIP"]), ipaddress.ip_address(e["endIP"]))
                for e in spec.get("exclusions", [])]

    def free(ip: ipaddress.IPv4Address) -> bool:
        return not any(lo <= ip <= hi for lo, hi in excluded)

    out, start = [], subnet.network_address + 1
    for _ in range(nodes):
        while start + size - 1 < subnet.broadcast_address and not any(free(start + i) for i in range(size)):
            start += size
        if start + size - 1 >= subnet.broadcast_address:
            out.append([])
            continue
        out.append([start + i for i in range(size) if free(start + i)])  # type: ignore[operator]
        start += size
    return out


def selected_nodes(pool: dict[str, Any], topology: Topology) -> list[str]:
    """The nodes a pool's nodeSelector picks (terms ORed, each one In expression) among the labels label-nodes.sh
    gives them, in cluster order: nv-ipam hands each one block."""
    labels = nodes.planned_labels(topology)
    return [name for name, own in labels.items()
            if any(all(own.get(e["key"]) in e["values"] for e in term["matchExpressions"])
                   for term in pool["spec"]["nodeSelector"]["nodeSelectorTerms"])]


def check_leaf_pool(pool: dict[str, Any], topology: Topology, fabric: str) -> None:
    """A leaf's IPPool, as nv-ipam allocates it to the nodes its selector picks from label-nodes.sh's labels: the
    nodes are exactly those with a pod port cabled to the leaf; every address a node can get is in the leaf's pod
    range, the one its SONiC config announces (a second VLAN_INTERFACE address), is no host's, and never the network,
    broadcast or gateway address; the pool's gateway is the leaf's pod gateway and its route reaches every host
    subnet (storage servers) and every other leaf's pod range through it."""
    assert webhook_problems(pool) == []
    plan = topology.addresses[fabric]
    (pod_range,) = [r for r in plan.pods if pool["metadata"]["name"] == f"{fabric}-pods-{r.leaf}"]
    network = ipaddress.ip_network(pod_range.network)
    assert ipaddress.ip_network(pool["spec"]["subnet"]) == network
    assert pool["spec"]["gateway"] == pod_range.gateway and pool.get("defaultGateway") is None
    cabled = [n.name for n in topology.cluster.nodes
              if any(leaf == pod_range.leaf for leaf in nodes.pod_leaves(topology, topology.fabric(fabric).fabric)
                     .get(n.name, {}).values())]
    chosen = selected_nodes(pool, topology)
    assert chosen == cabled and chosen
    blocks = nv_ipam_blocks(pool, len(chosen))
    size = pool["spec"]["perNodeBlockSize"]
    assert all(len(block) == size for block in blocks), "a node with a short (or no) block"
    handed = [ip for block in blocks for ip in block]
    assert len(set(handed)) == len(handed) == size * len(chosen)
    gateway = ipaddress.ip_address(pod_range.gateway)
    assert all(ip in network and ip not in (network.network_address, network.broadcast_address, gateway)
               for ip in handed)
    hosts = {ipaddress.ip_address(ip) for s in plan.hosts for _, _, ip in s.hosts}
    assert not hosts & set(handed)
    routes = [ipaddress.ip_network(r["dst"]) for r in pool["spec"]["routes"]]
    others = [ipaddress.ip_network(s.network) for s in plan.hosts] + [
        ipaddress.ip_network(r.network) for r in plan.pods if r.leaf != pod_range.leaf]
    assert all(any(o.subnet_of(r) for r in routes) for o in others)
    config = json.loads(sonic_configs(topology)[f"switches/{pod_range.leaf}/config_db.json"])
    assert f"Vlan100|{pod_range.gateway}/{network.prefixlen}" in config["VLAN_INTERFACE"], "the leaf announces it"


_SONIC: list[tuple[Topology, dict[str, bytes]]] = []


def sonic_configs(topology: Topology) -> dict[str, bytes]:
    """The topology's SONiC switch configurations by path, rendered once per topology (the last one kept)."""
    if not _SONIC or _SONIC[0][0] is not topology:
        _SONIC[:] = [(topology, {a.path: a.content for a in render(topology, ["sonic"])})]
    return _SONIC[0][1]


def check_pool(pool: dict[str, Any], topology: Topology, fabric: str) -> None:
    """The fabric's IPPool: the webhook's rules hold, and every node with the pool's profiles gets a full block of
    addresses under upstream's allocation, none of them a planned host address, in a host subnet or a Lustre MGS's
    (a pod holding an MGS address would cut the clients off their MGS)."""
    assert webhook_problems(pool) == []
    if topology.addresses[fabric].pods:
        check_leaf_pool(pool, topology, fabric)
        return
    (term,) = pool["spec"]["nodeSelector"]["nodeSelectorTerms"]
    (expr,) = term["matchExpressions"]
    assert expr["key"] == "fabricgen.dev/node-profile" and expr["operator"] == "In"
    nodes = [n for n in topology.cluster.nodes if n.profile.name in expr["values"]]
    blocks = nv_ipam_blocks(pool, len(nodes))
    size = pool["spec"]["perNodeBlockSize"]
    assert all(len(block) == size for block in blocks), "a node with a short (or no) block"
    handed = {ip for block in blocks for ip in block}
    assert len(handed) == size * len(nodes)
    plan = topology.addresses[fabric]
    servers = {ipaddress.ip_address(nid.split("@")[0]) for fs in topology.cluster.lustre if fs.fabric == fabric
               for node in fs.mgs for nid in node}
    subnets = [ipaddress.ip_network(s.network) for s in plan.hosts]
    assert not servers & handed
    assert not any(ip in net for ip in handed for net in subnets)
    assert ipaddress.ip_network(pool["spec"]["subnet"]) == ipaddress.ip_network(
        next(f for f in topology.cluster.fabrics if f.name == fabric).addressing.hosts)  # type: ignore[union-attr]


def check_ipam(ipam: dict[str, Any], pools: dict[str, dict[str, Any]], name: str, topology: Topology) -> None:
    """A pod network's IPAM is nv-ipam from one pool the manifests carry: its fabric's, or on a fabric with per-leaf
    pod ranges the pool of the leaf in its name (``<fabric>-<kind><n>-<leaf>``)."""
    fabric = name.split("-")[0]
    leaf = name.split("-", 2)[2] if topology.addresses[fabric].pods else ""
    assert ipam == {"type": "nv-ipam", "poolName": f"{fabric}-pods-{leaf}" if leaf else f"{fabric}-pods",
                    "poolType": "ippool"}
    assert ipam["poolName"] in pools


# the hosts' ARP settings for ports sharing a namespace (roce-qos.sh, sysctl-ipoib.conf), as the tuning plugin takes
# them (containernetworking/plugins plugins/meta/tuning: string values, IFNAME replaced by the pod's interface name)
ARP_TUNING = {"type": "tuning", "sysctl": {"net.ipv4.conf.IFNAME.arp_ignore": "1",
                                           "net.ipv4.conf.IFNAME.arp_announce": "2"}}
NETWORK_KINDS = ("SriovNetwork", "SriovIBNetwork", "NetworkAttachmentDefinition")


def check_tuning(plugin: dict[str, Any]) -> None:
    """The tuning plugin's sysctls as it writes them (plugins/meta/tuning getSysctlFilename: ``IFNAME`` replaced by
    the pod's interface, dots as path separators, under /proc/sys/net only): each names a file this kernel has for an
    interface (``lo`` standing in for the pod's), and the value is one that file takes."""
    for key, value in plugin["sysctl"].items():
        assert key.startswith("net.") and key.count("IFNAME") == 1 and isinstance(value, str)
        path = Path("/proc/sys") / key.replace("IFNAME", "lo").replace(".", "/")
        assert path.is_file(), f"{key}: no {path} in this kernel"
        assert value.isdigit() and int(value) <= {"arp_ignore": 8, "arp_announce": 2}[path.name]


def meta_plugins(name: str, topology: Topology, vfs: bool, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The meta plugins after the main CNI: rdma on a VF, tuning where the fabric has several pod networks (a pod
    holding several of its ports answers ARP on each for its own address only), sbr on a per-leaf attachment (its
    routes in a table of its own)."""
    fabric = name.split("-")[0]
    ports = {"-".join(d["metadata"]["name"].split("-")[:2]) for d in docs if d["kind"] in NETWORK_KINDS
             and d["metadata"]["name"].split("-")[0] == fabric}
    return [*([{"type": "rdma"}] if vfs else []), *([ARP_TUNING] if len(ports) > 1 else []),
            *([{"type": "sbr"}] if topology.addresses[fabric].pods else [])]


def check_embedded_json(doc: dict[str, Any], topology: Topology, docs: list[dict[str, Any]]) -> None:
    """Strings holding JSON parse, and hold what their consumer expects; IPPools as nv-ipam allocates them."""
    kind, spec = doc["kind"], doc.get("spec", {})
    pools = {d["metadata"]["name"]: d for d in docs if d["kind"] == "IPPool"}
    if kind == "IPPool":
        check_pool(doc, topology, doc["metadata"]["name"].split("-pods")[0])
    elif kind in ("SriovNetwork", "SriovIBNetwork"):
        check_ipam(json.loads(spec["ipam"]), pools, doc["metadata"]["name"], topology)
        # the operator's template puts metaPlugins verbatim after the main plugin in a JSON list
        assert json.loads(f"[{spec['metaPlugins']}]") == meta_plugins(doc["metadata"]["name"], topology, True, docs)
        for plugin in json.loads(f"[{spec['metaPlugins']}]"):
            if plugin["type"] == "tuning":
                check_tuning(plugin)
    elif kind == "NetworkAttachmentDefinition":
        config = json.loads(spec["config"])
        assert config["cniVersion"] == "0.3.1" and config["name"] == doc["metadata"]["name"]
        main, *meta = config["plugins"]
        assert main["type"] in ("sriov", "ib-sriov", "host-device")
        # the rdma meta plugin moves a VF's RDMA device into the pod (exclusive netns mode, a device ID from the
        # SR-IOV device plugin); a PF moved in by host-device keeps its shared RDMA device and takes no rdma plugin
        assert meta == meta_plugins(config["name"], topology, main["type"] != "host-device", docs)
        for plugin in meta:
            if plugin["type"] == "tuning":
                check_tuning(plugin)
        check_ipam(main["ipam"], pools, config["name"], topology)
        resource = doc["metadata"]["annotations"]["k8s.v1.cni.cncf.io/resourceName"]
        assert resource.startswith("nvidia.com/")
    elif kind == "NicClusterPolicy":
        assert doc["metadata"]["name"] == "nic-cluster-policy"
        assert spec["nvIpam"]["image"] == "nvidia-k8s-ipam" and spec["nvIpam"]["enableWebhook"] is False
        if "rdmaSharedDevicePlugin" in spec:
            rdma = json.loads(spec["rdmaSharedDevicePlugin"]["config"])
            assert not list(plugin_validator("rdma_shared_device_plugin.json").iter_errors(rdma))
        if "sriovDevicePlugin" in spec:
            sriov = json.loads(spec["sriovDevicePlugin"]["config"])
            assert not list(plugin_validator("sriov_network_device_plugin.json").iter_errors(sriov))
    elif kind == "ConfigMap":
        config = json.loads(doc["data"]["config.json"])
        assert not list(plugin_validator("rdma_shared_device_plugin.json").iter_errors(config))


@pytest.mark.parametrize("mode", sorted(MODES))
def test_roce_compute_manifests_validate(mode: str, tmp_path: Path) -> None:
    topology, artifacts = manifests(ROCE, mode, tmp_path)
    docs = documents(artifacts)
    kinds = sorted({d["kind"] for d in docs})
    expected = {
        "operator": ["IPPool", "Namespace", "NicClusterPolicy", "Pod", "PyTorchJob", "SriovNetwork",
                     "SriovNetworkNodePolicy", "SriovNetworkPoolConfig"],
        "multus-sriov": ["DaemonSet", "IPPool", "Namespace", "NetworkAttachmentDefinition", "NicClusterPolicy", "Pod",
                         "PyTorchJob"],
        "multus-host-device": ["ConfigMap", "IPPool", "Namespace", "NetworkAttachmentDefinition", "NicClusterPolicy",
                               "Pod", "PyTorchJob"],
    }[mode]
    assert kinds == expected
    for doc in docs:
        assert validate(doc) == [], (doc["kind"], doc["metadata"].get("name"))
        check_embedded_json(doc, topology, docs)
    pod = next(d for d in docs if d["kind"] == "Pod")  # no gds section: no GPUDirect Storage wiring
    assert "NVIDIA_GDS" not in {e["name"] for e in pod["spec"]["containers"][0]["env"]}
    assert not [v for v in pod["spec"]["volumes"] if "hostPath" in v]
    networks = [d for d in docs if d["kind"] in ("SriovNetwork", "NetworkAttachmentDefinition")]
    # routed RoCE: one attachment per rail and leaf; the one scalable unit puts rail r of every node on its leaf r
    leaves = [r.leaf for r in topology.addresses["compute"].pods]
    assert len(leaves) == 8
    assert [d["metadata"]["name"] for d in networks] == [f"compute-rail{r}-{leaves[r]}" for r in range(8)]
    policy = next(d for d in docs if d["kind"] == "NicClusterPolicy")
    assert ("sriovDevicePlugin" in policy["spec"]) == (mode == "multus-sriov")
    # one RDMA namespace mode per node: the shared device plugin only where no VF takes the rdma meta plugin
    assert ("rdmaSharedDevicePlugin" in policy["spec"]) == (mode == "multus-host-device")
    if mode == "multus-host-device":  # host-device moves the PF into one pod: one pod per node may hold it
        shared = json.loads(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["config.json"])
        assert {c["rdmaHcaMax"] for c in shared["configList"]} == {1}
        assert shared == json.loads(policy["spec"]["rdmaSharedDevicePlugin"]["config"])
    plugins = {p["type"] for d in networks if d["kind"] == "NetworkAttachmentDefinition"
               for p in json.loads(d["spec"]["config"])["plugins"]}
    # sbr, tuning and host-device are reference plugins (containernetworking/plugins), which the NicClusterPolicy's
    # cniPlugins install
    assert not plugins & {"sbr", "tuning", "host-device"} or "cniPlugins" in policy["spec"]["secondaryNetwork"]
    if mode == "multus-host-device":  # whole PFs, no VFs: the pods still get their leaf's range and gateway
        assert topology.fabric("compute").fabric.sriov is None
        assert plugins == {"host-device", "tuning", "sbr"}
        assert {d["spec"]["perNodeBlockSize"] for d in docs if d["kind"] == "IPPool"} == {1}
    if mode == "multus-sriov":  # every other CNI binary the attachments name is installed by the daemon set
        daemon = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
        copied = [c["image"].split("/")[-1].split(":")[0] for c in daemon["initContainers"]]
        assert plugins == {"sriov", "rdma", "tuning", "sbr"} and copied == ["sriov-cni", "rdma-cni"]
        assert all(c["args"] == ["--no-sleep"] for c in daemon["initContainers"])
        assert daemon["volumes"] == [{"name": "cnibin", "hostPath": {"path": "/opt/cni/bin", "type": "Directory"}}]
    if mode == "operator":
        pool = next(d for d in docs if d["kind"] == "SriovNetworkPoolConfig")
        assert pool["spec"]["rdmaMode"] == "exclusive"
        assert pool["spec"]["nodeSelector"] == {"matchExpressions": [
            {"key": "fabricgen.dev/node-profile", "operator": "In", "values": ["hgx-8gpu-generic"]}]}
        assert {p["spec"]["nodeSelector"]["fabricgen.dev/node-profile"] for p in docs
                if p["kind"] == "SriovNetworkNodePolicy"} == {"hgx-8gpu-generic"}


def test_h100_example_manifests_validate(tmp_path: Path) -> None:
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    docs = documents({a.path: a.content for a in render_spec(compiled, ["kubernetes", "k8s-workloads"])})
    # networks and policies of 8 rails, 2 storage ports x 3 leaves each (the DGX nodes on all three pairs: the
    # servers' ports count down from the first pair's last) and their 2 policies, the compute pool and 6 storage leaf
    # pools; namespace, pool config, NicClusterPolicy, Pod, PyTorchJob
    assert len(docs) == 2 * 8 + 6 + 2 + 1 + 6 + 5
    for doc in docs:
        assert validate(doc) == [], (doc["kind"], doc["metadata"].get("name"))
        check_embedded_json(doc, compiled.topology, docs)


def test_pool_blocks_holding_a_host_subnet_are_excluded_whole() -> None:
    """nv-ipam hands a node a block that exclusions cover only in part: with the host subnets excluded as they are,
    the DGX compute pool's 32nd block (10.24.7.193-10.24.8.0) would give its node one address for 64 interfaces.
    The generated pool excludes that block whole, so every node's block is full."""
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    docs = documents({a.path: a.content for a in render_spec(compiled, ["kubernetes"])})
    pool = next(d for d in docs if d["kind"] == "IPPool" and d["metadata"]["name"] == "compute-pods")
    assert pool["spec"]["perNodeBlockSize"] == 64  # 8 rails x 8 VFs
    assert pool["spec"]["exclusions"] == [{"startIP": "10.24.0.1", "endIP": "10.24.8.0"}]
    check_pool(pool, compiled.topology, "compute")
    naive = copy.deepcopy(pool)
    naive["spec"]["exclusions"] = [{"startIP": str(n.network_address), "endIP": str(n.broadcast_address)}
                                   for n in (ipaddress.ip_network(s.network)
                                             for s in compiled.topology.addresses["compute"].hosts)]
    assert webhook_problems(naive) == []
    assert [len(b) for b in nv_ipam_blocks(naive, 3)] == [1, 64, 64]
    with pytest.raises(AssertionError, match="short"):
        check_pool(naive, compiled.topology, "compute")


def test_strict_schemas_reject_misspelt_fields(tmp_path: Path) -> None:
    """The upstream docs' misspellings (pfName, metaPluginsConfig) and a stray key must fail validation."""
    _, artifacts = manifests(ROCE, "operator", tmp_path)
    docs = documents(artifacts)
    policy = copy.deepcopy(next(d for d in docs if d["kind"] == "SriovNetworkNodePolicy"))
    policy["spec"]["nicSelector"]["pfName"] = policy["spec"]["nicSelector"].pop("pfNames")
    assert any("pfName" in p for p in validate(policy))
    network = copy.deepcopy(next(d for d in docs if d["kind"] == "SriovNetwork"))
    network["spec"]["metaPluginsConfig"] = network["spec"].pop("metaPlugins")
    assert any("metaPluginsConfig" in p for p in validate(network))
    pool = copy.deepcopy(next(d for d in docs if d["kind"] == "IPPool"))
    pool["spec"]["blockSize"] = pool["spec"].pop("perNodeBlockSize")
    assert any("blockSize" in p for p in validate(pool))
    pod = copy.deepcopy(next(d for d in docs if d["kind"] == "Pod"))
    pod["spec"]["containers"][0]["securityContexts"] = {}
    assert validate(pod) != []


def test_infiniband_pod_networks_over_the_ipoib_plan(tmp_path: Path) -> None:
    """IB rails become SriovIBNetworks / ib-sriov attachments over the fabric's IPoIB address plan."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    k8s = topology.cluster.kubernetes
    assert k8s is not None and k8s.fabrics == ("compute", "storage") and "compute" in topology.addresses
    for operator, cni in (("sriov-network-operator", "sriov"), ("none", "sriov")):
        changed = dataclasses.replace(topology, cluster=dataclasses.replace(
            topology.cluster, kubernetes=dataclasses.replace(k8s, operator=operator, cni=cni)))
        docs = documents({a.path: a.content for a in kubernetes.render(changed)})
        networks = [d for d in docs if d["kind"] in ("SriovIBNetwork", "NetworkAttachmentDefinition")
                    and d["metadata"]["name"].startswith("compute-")]
        assert len(networks) == 8
        for doc in docs:
            assert validate(doc) == [], (doc["kind"], doc["metadata"].get("name"))
            check_embedded_json(doc, changed, docs)
        if operator == "none":
            assert all(json.loads(d["spec"]["config"])["plugins"][0]["type"] == "ib-sriov" for d in networks)
            daemon = next(d for d in docs if d["kind"] == "DaemonSet")["spec"]["template"]["spec"]
            assert [c["name"] for c in daemon["initContainers"]] == ["sriov-cni", "ib-sriov-cni", "rdma-cni"]
        else:
            policies = [d for d in docs if d["kind"] == "SriovNetworkNodePolicy" and d["spec"]["linkType"] == "ib"]
            assert len(policies) == 8, "DGX nodes only"


def test_pytorchjob_runs_nccl_on_the_gpu_near_vfs() -> None:
    """The job's pods attach only the compute rails' VFs (the storage ports are not PCIe-near the GPUs), one pod a
    node, Master plus Workers, the resume init container on the checkpoint claim; the strict CRD accepts it and
    rejects a misspelt field."""
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    (job,) = documents({a.path: a.content for a in render_spec(compiled, ["k8s-workloads"])
                        if a.path.startswith("kubernetes/workloads/")})
    assert validate(job) == []
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert (replicas["Master"]["replicas"], replicas["Worker"]["replicas"], job["spec"]["nprocPerNode"]) == (1, 3, "8")
    # a finished pod would keep its ephemeral cache claim and the node's one cache volume: the operator deletes them
    assert job["spec"]["runPolicy"]["cleanPodPolicy"] == "All"
    template = replicas["Worker"]["template"]
    assert template["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] == ",".join(
        f"compute-rail{r}" for r in range(8))
    pod = template["spec"]
    (trainer,) = pod["containers"]
    assert trainer["name"] == "pytorch" and not any("storage" in r for r in trainer["resources"]["limits"])
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["NCCL_NET_GDR_LEVEL"] == "PXB" and env["NCCL_IB_HCA"] == "mlx5" and env["NCCL_IB_PKEY"] == "0"
    assert env["CHECKPOINT_DIR"] == "/lustre/ckpt/nccl-allreduce"
    (resume,) = pod["initContainers"]
    assert {m["name"] for m in resume["volumeMounts"]} == {"lustre-checkpoints", "resume"}
    assert {m["mountPath"] for m in trainer["volumeMounts"]} >= {"/dev/shm", "/cache", "/lustre/ckpt", "/data"}
    term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert trainer["ports"] == [{"name": "pytorchjob-port", "containerPort": 23456}]  # v1.9.0's defaults, declared
    assert "PET_NPROC_PER_NODE" not in env, "the operator sets it from nprocPerNode"
    bad = copy.deepcopy(job)
    bad["spec"]["pytorchReplicaSpecs"]["Worker"]["restartpolicy"] = "OnFailure"
    assert any("restartpolicy" in p for p in validate(bad))


def test_example_workload_mounts_the_storage_tiers() -> None:
    """/dev/shm in memory, the Lustre claims of the pod's namespace (datasets read-only), the object tier's claims
    (Mountpoint's PVC, and the one Fluid makes for its Dataset), the node's NVMe cache, and the resume container's
    hand-off."""
    compiled = compile_spec(INVENTORIES / "h100-4su.yaml")
    docs = documents({a.path: a.content for a in render_spec(compiled, ["k8s-workloads", "k8s-storage",
                                                                        "object-storage"])})
    pod = next(d for d in docs if d["kind"] == "Pod")
    mounts = {m["mountPath"]: m for m in pod["spec"]["containers"][0]["volumeMounts"]}
    assert set(mounts) == {"/dev/shm", "/lustre/ckpt", "/data", "/datasets/corpus", "/datasets/text", "/archive",
                           "/cache", "/run/fabricgen", "/etc/cufile.json", "/run/udev"}
    # GPUDirect Storage (the dgx-h100 profile has it): the toolkit mounts nvidia-fs, cuFile reads the node's file
    assert {"name": "NVIDIA_GDS", "value": "enabled"} in pod["spec"]["containers"][0]["env"]
    assert mounts["/etc/cufile.json"]["readOnly"] is True and mounts["/run/udev"]["readOnly"] is True
    host_paths = {v["name"]: v["hostPath"] for v in pod["spec"]["volumes"] if "hostPath" in v}
    assert host_paths == {"cufile": {"path": "/etc/cufile.json", "type": "File"},
                          "udev": {"path": "/run/udev", "type": "Directory"}}
    assert mounts["/data"]["readOnly"] is True and mounts["/lustre/ckpt"]["readOnly"] is False
    assert mounts["/datasets/corpus"]["readOnly"] is True and mounts["/archive"]["readOnly"] is False
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"] if "persistentVolumeClaim" in v}
    namespace = pod["metadata"]["namespace"]
    pvcs = {d["metadata"]["name"] for d in docs if d["kind"] in ("PersistentVolumeClaim", "Dataset")
            and d["metadata"]["namespace"] == namespace}
    assert claims == pvcs and len(claims) == 5
    assert validate(pod) == []
    # torchrun alone starts one process unless told: the bare Pod would train on 1 of its 8 GPUs
    (trainer,) = pod["spec"]["containers"]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["PET_NPROC_PER_NODE"] == "8" and env["CHECKPOINT_DIR"] == "/lustre/ckpt/nccl-allreduce"
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["resume"]


def _keys(values: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """Every key path of a values tree down to its leaves."""
    if not isinstance(values, dict):
        return {prefix}
    return {path for k, v in values.items() for path in _keys(v, (*prefix, k))} | {prefix}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_helm_values_match_the_chart_and_the_pod_networks(mode: str, tmp_path: Path) -> None:
    """The network operator chart's values: every key one the release's values.yaml has (a misspelt key is silently
    ignored by Helm); the SR-IOV operator on exactly when its objects are generated (the chart leaves it off, and
    then nothing reconciles them); the device plugin prefix the pod networks' resources carry."""
    _, artifacts = manifests(ROCE, mode, tmp_path)
    values = yaml.safe_load(artifacts[HELM_VALUES])
    chart = yaml.safe_load((REPO / "tests" / "data" / "kubernetes" /
                            f"{kubernetes.images_release()}-values.yaml").read_text())
    assert _keys(values) <= _keys(chart)
    assert chart["sriovNetworkOperator"]["enabled"] is False, "the chart's default: the values must turn it on"
    docs = documents(artifacts)
    sriov_objects = [d for d in docs if d["apiVersion"].startswith("sriovnetwork.openshift.io/")]
    assert values["sriovNetworkOperator"]["enabled"] is bool(sriov_objects) is (mode == "operator")
    assert values["nfd"]["enabled"] is True
    prefix = values["sriov-network-operator"]["operator"]["resourcePrefix"]
    requested = {r.split("/")[0] for d in docs if d["kind"] == "Pod"
                 for r in d["spec"]["containers"][0]["resources"]["limits"] if "rail" in r}
    assert requested == {prefix}
    misspelt = {**values, "sriovNetworkOperators": {"enabled": True}}
    assert not _keys(misspelt) <= _keys(chart)
