"""Pod ranges for host-device pods (issue 16 item 4, field review B3): on a routed RoCE fabric without SR-IOV, where
Kubernetes moves the whole PF into a pod (``operator: none``, ``cni: host-device``), each leaf still gets a pod range
with a gateway, as for VFs: one pod address per host port of the leaf, past every host subnet, clear of every host
and switch address; and each leaf announces it, in SONiC, NVUE and EOS alike, as the lab reads the rendered
configuration back (the routing FRR would run from it)."""

from __future__ import annotations

import dataclasses
from ipaddress import IPv4Interface, IPv4Network
from pathlib import Path

import pytest
from netaddr import IPNetwork, IPSet

from fabricgen.features.addressing.plan import PodPorts, plan_addresses, pod_ports
from fabricgen.features.ethernet.nos import systems
from fabricgen.features.lab.run import planned_networks
from fabricgen.model.cluster import Tier
from fabricgen.pipeline import compile_spec, render_spec
from tests.conftest import INVENTORIES
from tests.helpers.kubernetes import MODES, ROCE, SRIOV_SECTION

SWITCHES = {"sonic": "SN5600", "nvue": "SN5600", "eos": "7060DX5-64S"}


def _spec(tmp_path: Path, mode: str = "multus-host-device", nos: str = "sonic") -> Path:
    """roce-compute.yaml without VFs, its pod networks in ``mode``, its switches on ``nos``."""
    text = SRIOV_SECTION.sub("", ROCE.read_text()).replace("kubernetes:\n", "kubernetes:\n" + MODES[mode], 1)
    text = text.replace("    switch: SN5600\n    nos: sonic\n", f"    switch: {SWITCHES[nos]}\n    nos: {nos}\n")
    spec = tmp_path / "roce-host-device.yaml"
    spec.write_text(text)
    return spec


def test_host_device_pods_get_a_range_per_leaf_clear_of_every_host_address(tmp_path: Path) -> None:
    topology = compile_spec(_spec(tmp_path)).topology
    plan, ft = topology.addresses["compute"], topology.fabric("compute")
    leaves = [sw for sw in ft.switches if sw.tier is Tier.LEAF]
    assert ft.fabric.sriov is None and [p.leaf for p in plan.pods] == [sw.name for sw in leaves]
    hosts = IPSet(IPNetwork(s.network) for s in plan.hosts)
    switch_ips = IPSet([*plan.loopbacks.values(), *(s.gateway for s in plan.hosts)])
    taken = IPSet()
    for pod, leaf in zip(plan.pods, leaves, strict=True):
        network = IPNetwork(pod.network)
        # one address per host port of the leaf (a PF holds one pod) plus network, gateway and broadcast
        assert network.size >= leaf.down_ports + 3 > network.size // 2
        assert int(IPNetwork(pod.gateway + "/32").ip) == network.first + 1
        assert network in IPNetwork("10.60.0.0/20") and not IPSet([network]) & (hosts | switch_ips | taken)
        taken.add(network)
        # the nodes whose pods take a PF on the leaf: the nodes cabled to it
        assert pod.nodes == tuple(dict.fromkeys(
            link.a.device for link in ft.links if link.tier == "node-leaf" and link.z.device == leaf.name))


def test_no_pod_range_without_pods_on_the_ports(tmp_path: Path) -> None:
    """The same fabric without the kubernetes section (no pod takes its PFs, and it has no VFs) plans no pod range:
    the host pool is not spent on pods nobody runs."""
    text = _spec(tmp_path).read_text().split("\nkubernetes:\n", 1)[0] + "\n"
    spec = tmp_path / "plain.yaml"
    spec.write_text(text)
    assert compile_spec(spec).topology.addresses["compute"].pods == ()


@pytest.mark.parametrize("nos", sorted(SWITCHES))
def test_every_leaf_announces_its_host_device_pod_range(tmp_path: Path, nos: str) -> None:
    """Read back from the rendered configuration as ``fabricgen lab`` does: each leaf originates exactly the
    prefixes the plan gives it (loopback, host subnet, pod range) and carries the pod gateway on its host VLAN's
    SVI, so a pod on a PF in the leaf's VLAN reaches it on-link and every other leaf routes to it."""
    compiled = compile_spec(_spec(tmp_path, nos=nos))
    topology = compiled.topology
    ft = topology.fabric("compute")
    artifacts = {a.path: a.content for a in render_spec(compiled, [nos])}
    system = systems()[nos]
    assert system.routing is not None
    planned = planned_networks(topology, ft)
    pods = topology.addresses["compute"].pods
    assert len(pods) == sum(1 for sw in ft.switches if sw.tier is Tier.LEAF) == 8
    for pod in pods:
        routing = system.routing(pod.leaf, artifacts[f"switches/{pod.leaf}/{system.data.config_file(pod.leaf)}"])
        assert IPv4Network(pod.network) in routing.networks
        assert set(routing.networks) == set(planned[pod.leaf])
        gateway = IPv4Interface(f"{pod.gateway}/{IPv4Network(pod.network).prefixlen}")
        assert [v.name for v in routing.vlans if gateway in v.addresses], f"{pod.leaf}: no SVI has {gateway}"


def test_host_device_ranges_only_where_pods_run() -> None:
    """h100-4su's storage fabric without VFs, its PFs moved into pods by host-device: each of the six leaves gets a
    range for its DGX nodes, one address per host port (64 + 3: a /25), none for the storage servers on the first
    pair's top ports: servers and management appliances run no pods."""
    topology = compile_spec(INVENTORIES / "h100-4su.yaml").topology
    storage = topology.fabric("storage")
    ft = dataclasses.replace(storage, fabric=dataclasses.replace(storage.fabric, sriov=None))
    k8s = topology.cluster.kubernetes
    assert k8s is not None
    host_device = dataclasses.replace(k8s, operator="none", cni="host-device", fabrics=("storage",))
    pods = pod_ports(ft, host_device, topology.cluster.nodes)
    assert pods == PodPorts(1, ("gpu{n:03d}",))
    assert pod_ports(ft, k8s, topology.cluster.nodes) is None, "VF pods, but the fabric has no VFs"
    order = {n.name: i for i, n in enumerate(topology.cluster.nodes)}
    plan = plan_addresses(ft, order, {n.name: n.group for n in topology.cluster.nodes}, pods)
    assert plan is not None
    assert [(p.leaf, IPNetwork(p.network).prefixlen) for p in plan.pods] == [
        (f"storage-leaf00{n}", 25) for n in range(1, 7)]
    assert all(n.startswith("gpu") for p in plan.pods for n in p.nodes)
