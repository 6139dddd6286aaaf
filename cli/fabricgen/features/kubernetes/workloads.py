"""Target ``k8s-workloads``: the training workloads of the pod networks, as users run them.

- ``kubernetes/workloads/pytorchjob-<name>.yaml``: a Kubeflow training operator PyTorchJob (kubeflow.org/v1): a
  Master and ``nodes - 1`` Workers (torchrun, ``nprocPerNode`` = the GPUs), one pod per node (anti-affinity on the
  job), restarts on failure within ``runPolicy.backoffLimit``; each pod resumes from the job's latest complete
  checkpoint (an init container finds it, below).
- ``kubernetes/network/workload-<name>.yaml``: the same pod as a bare Pod, for clusters without the operator: one
  node (torchrun's ``PET_NPROC_PER_NODE`` = the GPUs, which the operator sets in the job; NCCL then runs over
  NVLink, the rails carry traffic only across nodes), the same resume container, no restarts.

Every pod gets the GPUs, one VF (or the PF's shared RDMA device) per rail of the *compute* fabric only: those are the
NICs PCIe-near the GPUs (NCCL_NET_GDR_LEVEL PXB holds; the storage ports sit behind other switches, and Lustre is
mounted by the CSI driver on the host, not over pod VFs), IPC_LOCK for pinned memory, a memory-backed /dev/shm, the
Lustre claims of its namespace and the NVMe cache (:func:`fabricgen.features.lustre.build.pod_storage`) and the NCCL
environment of :func:`fabricgen.features.nccl.render.nccl_settings`.

On a profile with GPUDirect Storage (the ``gds`` section) the pod also gets what cuFile needs in a container
(:func:`gds_access`): ``NVIDIA_GDS=enabled``, which makes the NVIDIA container toolkit mount the nvidia-fs devices
(its feature-gated modifier, as NVIDIA's GDS container wrapper sets it), the node's own /etc/cufile.json read-only
(its planned NIDs, hosts/<profile>/gds/cufile/<node>.json installed there), and /run/udev read-only (cuFile reads
the block devices' udev properties to decide whether a file's device takes GDS). The data path stays the host's:
nvidia-fs and the Lustre client move the bytes over the storage ports from the kernel, so no storage VF is needed.

On a compute fabric with per-leaf pod ranges (routed RoCE) each rail has one attachment per leaf, and a pod template
names attachments, not leaves: so the job runs on one leaf group, the nodes whose rails share the same leaves (a
rail-optimized scalable unit), selected by their leaf labels, and names that group's attachments; a job larger than
every group is refused (:func:`check_leaf_group`).

Resume: the job's checkpoints live in ``<checkpoint mount>/<job name>/``, one directory per checkpoint; a checkpoint
is complete once it holds ``.metadata``, the file PyTorch Distributed Checkpoint writes last. The init container
``resume`` creates the job's directory, picks the highest complete one in version order (``step-900`` before
``step-1000``) and writes its path (or nothing, for a first start) to ``RESUME_FROM_FILE``; the trainer reads it and
writes new checkpoints under ``CHECKPOINT_DIR``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from fabricgen.core.artifacts import Artifact
from fabricgen.core.errors import Finding, Severity
from fabricgen.features.kubernetes.nodes import PROFILE_LABEL, leaf_label, pod_leaves
from fabricgen.features.kubernetes.render import (
    NETWORKS_ANNOTATION,
    UCX_TRAFFIC_CLASS,
    PodNetwork,
    dump,
    metadata,
    pod_networks,
)
from fabricgen.features.lustre.build import claim_name, pod_storage
from fabricgen.features.nccl.render import POD_PFS, POD_VFS, compute_partitions, nccl_settings
from fabricgen.model.cluster import FabricRole, FabricType
from fabricgen.model.kubernetes import Kubernetes, Workload
from fabricgen.model.topology import Topology

# kubeflow/training-operator v1.9.0 standalone, the command of kubeflow.org/docs/components/training/installation
# at that release (the CRD copy in tests/data/kubernetes/crds/ is that release's).
TRAINING_OPERATOR_INSTALL = ("kubectl apply --server-side -k "
                             "'github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.9.0'")
JOB_LABEL = "training.kubeflow.org/job-name"  # the training operator labels each pod of a job with its name
# The port the training operator's Master service and torchrun's rendezvous use (training-operator v1.9.0
# pkg/apis/kubeflow.org/v1/pytorch_types.go PyTorchJobDefaultPort*); declared, so nothing depends on its defaulting
# webhook.
JOB_PORT = {"name": "pytorchjob-port", "containerPort": 23456}
RESUME_DIR = "/run/fabricgen"
RESUME_FILE = f"{RESUME_DIR}/resume-from"
COMPLETE_MARKER = ".metadata"  # torch.distributed.checkpoint writes it after every shard
# The init container's script: POSIX sh and GNU find/sort, as in the NGC PyTorch images it runs in.
RESUME_SCRIPT = f"""set -eu
mkdir -p "$CHECKPOINT_DIR"
latest="$(find "$CHECKPOINT_DIR" -mindepth 2 -maxdepth 2 -name {COMPLETE_MARKER} -printf '%h\\n' | sort -V | tail -n 1)"
printf '%s\\n' "$latest" >"$RESUME_FROM_FILE"
echo "resume from: ${{latest:-the start (no complete checkpoint in $CHECKPOINT_DIR)}}"
"""


def compute_networks(topology: Topology, k8s: Kubernetes, workload: Workload) -> list[PodNetwork]:
    """The workload's pod networks: the rails of the compute fabric that reach its profile."""
    nets = [n for n in pod_networks(topology, k8s) if n.fabric.role is FabricRole.COMPUTE
            and any(p == workload.profile for p, _, _ in n.pfs)]
    if not nets:
        raise ValueError(f"profile {workload.profile} has no compute rail among the pod networks")
    return nets


def leaf_groups(topology: Topology, workload: Workload, nets: Sequence[PodNetwork]) -> list[tuple[dict[str, str], int]]:
    """The workload profile's nodes grouped by the leaf of each per-leaf rail (network name -> leaf) with their
    count, largest group first (then cluster order); one empty group of every such node when no rail has per-leaf
    attachments."""
    per_leaf = [n for n in nets if n.leaves]
    profile_nodes = [n.name for n in topology.cluster.nodes if n.profile.name == workload.profile]
    if not per_leaf:
        return [({}, len(profile_nodes))]
    leaves = pod_leaves(topology, per_leaf[0].fabric)
    groups: dict[tuple[str, ...], int] = {}
    for node in profile_nodes:
        key = tuple(leaves.get(node, {}).get(n.name, "") for n in per_leaf)
        if "" not in key:
            groups[key] = groups.get(key, 0) + 1
    return [({n.name: leaf for n, leaf in zip(per_leaf, key, strict=True)}, count)
            for key, count in sorted(groups.items(), key=lambda g: -g[1])]


def leaf_group(topology: Topology, workload: Workload, nets: Sequence[PodNetwork]) -> dict[str, str]:
    """The leaf group the workload's pods run in (module docstring): the largest."""
    groups = leaf_groups(topology, workload, nets)
    if not groups:
        raise ValueError(f"no {workload.profile} node has every compute rail on a leaf")
    return groups[0][0]


def check_leaf_group(topology: Topology) -> Iterator[Finding]:
    """A job whose pods need more nodes than one leaf group holds cannot be written as one pod template."""
    k8s = topology.cluster.kubernetes
    if k8s is None or k8s.workload is None:
        return
    workload = k8s.workload
    nets = compute_networks(topology, k8s, workload)
    size = max((count for _, count in leaf_groups(topology, workload, nets)), default=0)
    if size < workload.nodes:
        yield Finding(Severity.ERROR, "kubernetes-leaf-group", "kubernetes.workload.nodes",
                      f"the job asks for {workload.nodes} nodes, but its pods name one network attachment per rail "
                      f"and leaf (per-leaf pod ranges on fabric {nets[0].fabric.name}), and at most {size} "
                      f"{workload.profile} nodes share the same leaves",
                      f"at most {size} nodes, or a job per leaf group", k8s.position)


def _checkpoints(topology: Topology, k8s: Kubernetes) -> tuple[str, str] | None:
    """(claim, mount path) of the checkpoint file system: the first ReadWriteMany Lustre claim of the namespace."""
    for fs in topology.cluster.lustre:
        if fs.volume is not None and fs.volume.namespace == k8s.namespace and fs.volume.access == "ReadWriteMany":
            return claim_name(fs), fs.volume.mount_path
    return None


CUFILE_JSON = "/etc/cufile.json"  # where libcufile reads its configuration (no CUFILE_ENV_PATH_JSON needed)


def gds_access(topology: Topology, workload: Workload) -> tuple[list[dict[str, Any]], list[dict[str, Any]],
                                                                list[dict[str, Any]]]:
    """(env, volume mounts, volumes) a pod of ``workload`` needs for GPUDirect Storage: nothing unless its profile
    has GDS."""
    if not any(g.profile == workload.profile for g in topology.cluster.gds):
        return [], [], []
    env = [{"name": "NVIDIA_GDS", "value": "enabled"}]
    mounts = [{"name": "cufile", "mountPath": CUFILE_JSON, "readOnly": True},
              {"name": "udev", "mountPath": "/run/udev", "readOnly": True}]
    volumes = [{"name": "cufile", "hostPath": {"path": CUFILE_JSON, "type": "File"}},
               {"name": "udev", "hostPath": {"path": "/run/udev", "type": "Directory"}}]
    return env, mounts, volumes


def pod_spec(topology: Topology, k8s: Kubernetes, workload: Workload, nets: Sequence[PodNetwork],
             leaves: Mapping[str, str], container: str, job: str | None) -> dict[str, Any]:
    """The training pod's spec on the nodes of the leaf group ``leaves`` (:func:`leaf_group`); with ``job``, a
    PyTorchJob replica's (the resume init container, one pod a node)."""
    profile = topology.cluster.profiles[workload.profile]
    fabric = nets[0].fabric
    vfs = k8s.uses_vfs
    partitions = compute_partitions(fabric, topology.cluster.nodes, profile)
    env = [{"name": s.name, "value": s.value}
           for s in nccl_settings(profile, fabric, POD_VFS if vfs else POD_PFS, partitions,
                                 topology.cluster.nccl)]
    if fabric.type is FabricType.ROCE and fabric.qos is not None:  # UCX on the VFs: rdma_cm's ToS is 0 in the pod
        env.append({"name": UCX_TRAFFIC_CLASS, "value": str(fabric.qos.nccl_tc)})
    resources = {f"{k8s.resource_prefix}/{n.resource if vfs else n.resource + '_shared'}": 1 for n in nets}
    storage = pod_storage(topology.cluster, k8s.namespace)  # the Lustre claims and the NVMe cache tier
    limits = {"nvidia.com/gpu": workload.gpus, **resources}
    gds_env, gds_mounts, gds_volumes = gds_access(topology, workload)
    env += gds_env
    mounts = [{"name": "dshm", "mountPath": "/dev/shm"}, *storage.volume_mounts, *gds_mounts]
    volumes = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": workload.shm_size}}, *storage.volumes,
               *gds_volumes]
    spec: dict[str, Any] = {"nodeSelector": {PROFILE_LABEL: workload.profile,
                                             **{leaf_label(net): leaf for net, leaf in leaves.items()}}}
    checkpoints = _checkpoints(topology, k8s)
    if job is None:  # torchrun alone: one node, a process per GPU (in the job the operator sets PET_*)
        env.append({"name": "PET_NPROC_PER_NODE", "value": str(workload.gpus)})
    else:
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {JOB_LABEL: job}}, "topologyKey": "kubernetes.io/hostname"}]}}
    if checkpoints is not None:
        claim, path = checkpoints
        resume_env = [{"name": "CHECKPOINT_DIR", "value": f"{path}/{workload.name}"},
                      {"name": "RESUME_FROM_FILE", "value": RESUME_FILE}]
        env += resume_env
        mounts.append({"name": "resume", "mountPath": RESUME_DIR})
        volumes.append({"name": "resume", "emptyDir": {}})
        spec["initContainers"] = [{
            "name": "resume", "image": workload.image, "command": ["sh", "-c", RESUME_SCRIPT], "env": resume_env,
            "volumeMounts": [{"name": claim, "mountPath": path}, {"name": "resume", "mountPath": RESUME_DIR}]}]
    spec["containers"] = [{
        "name": container, "image": workload.image, "command": list(workload.command), "env": env,
        **({"ports": [dict(JOB_PORT)]} if job is not None else {}),
        "resources": {"limits": limits, "requests": dict(limits)},
        "securityContext": {"capabilities": {"add": ["IPC_LOCK"]}}, "volumeMounts": mounts}]
    spec["volumes"] = volumes
    return spec


def _networks(nets: Sequence[PodNetwork], leaves: Mapping[str, str]) -> str:
    """The pod's networks annotation: each rail's attachment (its leaf's, with per-leaf pod ranges)."""
    return ",".join(n.attachment(leaves.get(n.name, "")) for n in nets)


def pytorch_job(topology: Topology, k8s: Kubernetes, workload: Workload) -> dict[str, Any]:
    """The PyTorchJob: a Master and nodes - 1 Workers, each replica's pod as :func:`pod_spec` builds it."""
    nets = compute_networks(topology, k8s, workload)
    leaves = leaf_group(topology, workload, nets)
    template = {"metadata": {"labels": {"app.kubernetes.io/name": workload.name},
                             "annotations": {NETWORKS_ANNOTATION: _networks(nets, leaves)}},
                "spec": pod_spec(topology, k8s, workload, nets, leaves, "pytorch", workload.name)}
    replicas = {"Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": template}}
    if workload.nodes > 1:
        replicas["Worker"] = {"replicas": workload.nodes - 1, "restartPolicy": "OnFailure", "template": template}
    # cleanPodPolicy All: a finished pod keeps its ephemeral cache claim, and a node has one cache volume, so the
    # next job on that node would stay Pending until the old job is deleted (training-operator DeletePodsAndServices)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": metadata(workload.name, k8s.namespace, labels={"app.kubernetes.io/name": workload.name}),
            "spec": {"nprocPerNode": str(workload.gpus), "runPolicy": {"backoffLimit": workload.restarts,
                                                                       "cleanPodPolicy": "All"},
                     "pytorchReplicaSpecs": replicas}}


def example_pod(topology: Topology, k8s: Kubernetes, workload: Workload) -> dict[str, Any]:
    """The same training pod as a bare Pod on one node (clusters without the training operator; no restarts)."""
    nets = compute_networks(topology, k8s, workload)
    leaves = leaf_group(topology, workload, nets)
    spec = {"restartPolicy": "Never", **pod_spec(topology, k8s, workload, nets, leaves, "trainer", None)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": metadata(workload.name, k8s.namespace, labels={"app.kubernetes.io/name": workload.name},
                                 annotations={NETWORKS_ANNOTATION: _networks(nets, leaves)}),
            "spec": spec}


def render(topology: Topology) -> list[Artifact]:
    """The workloads: see the module docstring."""
    k8s = topology.cluster.kubernetes
    if k8s is None or k8s.workload is None:
        return []
    workload = k8s.workload
    partial = ("" if workload.gpus >= topology.cluster.profiles[workload.profile].gpus else
               f"{workload.gpus} of the node's GPUs: the GPU device plugin picks them without regard to the rails' "
               "NICs (no GPU-NIC pairing). ")
    generated = f"Generated by fabricgen from {PurePosixPath(topology.cluster.source).name}; do not edit."
    return [
        Artifact(f"kubernetes/workloads/pytorchjob-{workload.name}.yaml", dump(
            [pytorch_job(topology, k8s, workload)],
            f"Training job on {workload.nodes} {workload.profile} nodes (Kubeflow training operator v1): one pod per "
            f"node with the GPUs, one RDMA network per\ncompute rail, the checkpoint and dataset claims, the NVMe "
            f"cache, /dev/shm and the NCCL environment; each pod resumes from the job's latest complete checkpoint.\n"
            f"Needs the Kubeflow training operator v1.9.0 (the PyTorchJob schema tested here; v1 is in maintenance, "
            f"Kubeflow Trainer v2's TrainJob replaces it):\n{TRAINING_OPERATOR_INSTALL}\n{generated}")),
        Artifact(f"kubernetes/network/workload-{workload.name}.yaml", dump(
            [example_pod(topology, k8s, workload)],
            f"Example training pod on one {workload.profile} node, for clusters without the training operator: "
            f"{workload.gpus} GPUs (torchrun, a process per GPU),\none RDMA network per compute rail, IPC_LOCK for "
            f"pinned memory, a memory-backed /dev/shm, the NCCL environment and the resume container.\nOne node: "
            f"NCCL runs over NVLink and the rails carry no traffic (for several nodes set torchrun's PET_NNODES and "
            f"rendezvous, or use the PyTorchJob).\n{partial}Delete the pod when it is done: it holds its node's "
            f"NVMe cache volume until then. {generated}"))]
