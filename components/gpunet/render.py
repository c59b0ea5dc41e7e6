"""GPU-to-GPU networking, pure: the extra VPCs and subnets a stack's GPU pools need, each node
pool's additional node networks, GKE's multi-networking objects, the NCCL plugin installer
DaemonSets and what a Ray worker pod on such a pool gets (:func:`worker_pod_extras`). Facts:
:mod:`components.catalog.gpu_network`. The layout per GPUDirect kind:
docs/sources.md#gpunet-render
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from components.catalog.gpu_network import (
    GPU_VPC_MTU,
    INSTALLER_NAMESPACE,
    INSTALLERS,
    PAUSE_IMAGE,
    GpuNetFamily,
    ray_nccl_env,
)
from components.gpunet.gpudirect import (
    WorkerParts,
    admission_policy,
    device_injector,
    gpudirect_accelerators,
    rxdm_of,
    worker_parts,
)
from components.kernel.names import gpudirect_namespace
from components.kernel.problems import Problem

if TYPE_CHECKING:
    from components.config.network import NetworkConfig

SUBNET_PREFIX = 22
PARAMSET_API = "networking.gke.io/v1"
DEFAULT_INTERFACE_ANNOTATION = "networking.gke.io/default-interface"
INTERFACES_ANNOTATION = "networking.gke.io/interfaces"
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"


@dataclass(frozen=True)
class GpuSubnet:
    """One extra subnet and the GKE network that names it.

    Attributes:
        k8s_name: the ``Network`` / ``GKENetworkParamSet`` name pods refer to (``tcpx-1``).
        name: the Compute Engine subnetwork name.
        cidr: its primary range (a /22 of ``network.gpu_cidr``).
        device_mode: ``NetDevice`` (gVNIC) or ``RDMA`` (CX-7).
    """

    k8s_name: str
    name: str
    cidr: str
    device_mode: str


@dataclass(frozen=True)
class GpuVpc:
    """One extra VPC: ``name``, ``profile_zone`` (the zone of its RDMA network profile, None for
    a regular VPC), ``mtu`` and its ``subnets``."""

    name: str
    subnets: tuple[GpuSubnet, ...]
    profile_zone: str | None = None
    mtu: int = GPU_VPC_MTU

    @property
    def firewall(self) -> str | None:
        """Name of the VPC's internal-traffic firewall rule (``<vpc>-internal``); None for the
        RDMA VPC, which takes no firewall rules (:mod:`components.gpunet.component`)."""
        return None if self.profile_zone else f"{self.name}-internal"

    def network_profile(self, project: str) -> str | None:
        """``network_profile`` of the VPC: ``projects/<project>/global/networkProfiles/
        <zone>-vpc-roce`` for the RDMA VPC [CT] ``examples/gke-a4/gke-a4.yaml``, else None."""
        if self.profile_zone is None:
            return None
        return f"projects/{project}/global/networkProfiles/{self.profile_zone}-vpc-roce"


def subnet_flow_logs(network: NetworkConfig, vpc: GpuVpc) -> dict[str, Any] | None:
    """The ``log_config`` of ``vpc``'s subnets (Pulumi input names): VPC Flow Logs with
    ``network.flow_logs``' (``network``: the ``network`` block) aggregation interval and metadata and its ``gpu_flow_sampling``;
    None when the stack's flow logs are off, and for the RDMA VPC: its traffic is RoCE v2
    between the CX-7 NICs, and an RDMA network profile takes only the features it lists (Google
    Cloud returns an error for any other: https://cloud.google.com/vpc/docs/create-vpc-network-rdma),
    which the stack does not assume flow logs to be, as it sets no firewall rule and no Private
    Google Access there. ``log_config`` is not ForceNew in the provider, so adding it to an
    existing subnet updates the subnet in place (:mod:`raygke.diff.replacement`)."""
    logs = network.flow_logs
    if not logs.enabled or vpc.profile_zone is not None:
        return None
    return {
        "aggregation_interval": logs.aggregation_interval,
        "flow_sampling": logs.gpu_flow_sampling,
        "metadata": logs.metadata,
    }


def networked_pools(node_pools: Iterable[Any]) -> list[tuple[Any, GpuNetFamily]]:
    """``(pool, family)`` of every GPU pool of ``node_pools`` with GPU networking, in their
    order."""
    return [
        (p, fam)
        for p in node_pools
        if getattr(p, "kind", "cpu") == "gpu" and (fam := p.gpu_net) is not None
    ]


def _kinds(node_pools: Iterable[Any]) -> dict[str, int]:
    """GPUDirect kind -> the most GPU NICs a pool of it has."""
    out: dict[str, int] = {}
    for _, fam in networked_pools(node_pools):
        out[fam.kind] = max(out.get(fam.kind, 0), fam.nics)
    return out


def rdma_zone(node_pools: Iterable[Any], zones: list[str]) -> str | None:
    """The zone of the stack's RDMA network profile: the first zone of its first RDMA pool
    (``node_pools``; a pool without zones of its own is in the stack's ``zones``)."""
    for pool, fam in networked_pools(node_pools):
        if fam.kind == "rdma":
            return (pool.zones or zones)[0]
    return None


def gpu_vpcs(node_pools: list[Any], zones: list[str], network: NetworkConfig) -> list[GpuVpc]:
    """The extra VPCs of the stack's ``node_pools`` (module docstring), TCPX, TCPXO, then RDMA;
    [] without a networked GPU pool. Subnet ranges are consecutive /22s of
    ``network.gpu_cidr``; the RDMA profile's zone is :func:`rdma_zone`'s (``zones``: the
    stack's).

    Raises:
        ValueError: ``network.gpu_cidr`` holds fewer /22s than the subnets need.
    """
    kinds = _kinds(node_pools)
    net = network.name
    base = ipaddress.IPv4Network(network.gpu_cidr)
    blocks = base.subnets(new_prefix=SUBNET_PREFIX) if base.prefixlen <= SUBNET_PREFIX else iter(())
    needed = sum(n for k, n in kinds.items() if k != "rdma") + (
        kinds["rdma"] + 1 if "rdma" in kinds else 0
    )
    cidrs = [str(b) for _, b in zip(range(needed), blocks, strict=False)]
    if len(cidrs) < needed:
        raise ValueError(
            f"network.gpu_cidr {network.gpu_cidr} holds {len(cidrs)} /{SUBNET_PREFIX} subnets; "
            f"the GPU networks need {needed}: use a /{SUBNET_PREFIX - (needed - 1).bit_length()} "
            "or larger"
        )
    take = iter(cidrs)
    vpcs: list[GpuVpc] = []
    for kind in ("tcpx", "tcpxo"):
        for i in range(1, kinds.get(kind, 0) + 1):
            name = f"{net}-{kind}-{i}"
            sub = GpuSubnet(f"{kind}-{i}", f"{name}-sub", next(take), "NetDevice")
            vpcs.append(GpuVpc(name, (sub,)))
    if "rdma" in kinds:
        gvnic = GpuSubnet("gvnic-1", f"{net}-gvnic-sub", next(take), "NetDevice")
        vpcs.append(GpuVpc(f"{net}-gvnic", (gvnic,)))
        rdma = tuple(
            GpuSubnet(f"rdma-{j}", f"{net}-rdma-sub-{j}", next(take), "RDMA")
            for j in range(kinds["rdma"])
        )
        vpcs.append(GpuVpc(f"{net}-rdma", rdma, profile_zone=rdma_zone(node_pools, zones)))
    return vpcs


def pool_networks(vpcs: list[GpuVpc], pool: Any) -> list[tuple[str, str]]:
    """``(VPC name, subnet name)`` per additional node NIC of ``pool``, in NIC order (the node
    pool's ``network_config.additional_node_network_configs`` [CT] ``gke-node-pool``), from the
    stack's ``vpcs`` (:func:`gpu_vpcs`): the family's GPU NICs, after the second gVNIC for RDMA;
    [] without GPU networking."""
    fam = pool.gpu_net if getattr(pool, "kind", "cpu") == "gpu" else None
    if fam is None:
        return []
    out = []
    for vpc in vpcs:
        for s in vpc.subnets:
            if _k8s_kind(s.k8s_name) == fam.kind or (fam.gvnic_extra and s.k8s_name == "gvnic-1"):
                out.append((vpc.name, s.name))
    if fam.kind == "rdma":  # gvnic first, then only as many RDMA subnets as the family has NICs
        out = out[: 1 + fam.nics]
    return out


def _k8s_kind(k8s_name: str) -> str:
    return k8s_name.rsplit("-", 1)[0]


def pod_networks(fam: GpuNetFamily) -> list[str]:
    """The GKE network names a pod on a ``fam`` node attaches, one per GPU NIC, as
    :func:`gpu_vpcs` names them: ``tcpx-1`` .. ``tcpx-4``, ``tcpxo-1`` .. ``tcpxo-8``, ``rdma-0``
    .. ``rdma-7`` (``rdma-3`` for A4X) [CEA], [CT]."""
    if fam.kind == "rdma":
        return [f"rdma-{j}" for j in range(fam.nics)]
    return [f"{fam.kind}-{i}" for i in range(1, fam.nics + 1)]


def multi_network_objects(vpcs: list[GpuVpc]) -> list[dict[str, Any]]:
    """One ``GKENetworkParamSet`` and one ``Network`` per subnet of ``vpcs`` (:func:`gpu_vpcs`)
    [CT] (cluster-scoped)."""
    out: list[dict[str, Any]] = []
    for vpc in vpcs:
        for s in vpc.subnets:
            out.append(
                {
                    "apiVersion": PARAMSET_API,
                    "kind": "GKENetworkParamSet",
                    "metadata": {"name": s.k8s_name},
                    "spec": {"vpc": vpc.name, "vpcSubnet": s.name, "deviceMode": s.device_mode},
                }
            )
            out.append(
                {
                    "apiVersion": PARAMSET_API,
                    "kind": "Network",
                    "metadata": {"name": s.k8s_name},
                    "spec": {
                        "parametersRef": {
                            "group": "networking.gke.io",
                            "kind": "GKENetworkParamSet",
                            "name": s.k8s_name,
                        },
                        "type": "Device",
                    },
                }
            )
    return out


def installer_daemonsets(node_pools: list[Any]) -> list[dict[str, Any]]:
    """The NCCL plugin installer DaemonSets the RDMA pools and ``gpudirect`` pools of
    ``node_pools`` (the stack's) need, as Google ships them (``kube-system``, privileged init
    container, ``hostNetwork``/``hostPID``, hostPath, ``system-node-critical``; TCPXO's
    ``pre-installation`` step first) [CEA]; the node affinity lists the accelerators of the
    stack's pools of that kind and architecture. TCPX /
    TCPXO pools without ``gpudirect`` get none (module docstring); with it, the NRI device
    injector comes last (:func:`components.gpunet.gpudirect.device_injector`)."""
    by_key: dict[tuple[str, str], set[str]] = {}
    for pool, fam in networked_pools(node_pools):
        if fam.kind == "rdma" or rxdm_of(pool) is not None:
            by_key.setdefault((fam.kind, fam.arch), set()).add(pool.gpu.type)
    out = []
    for key, accels in sorted(by_key.items(), key=lambda kv: (kv[0][0] != "rdma", kv[0])):
        inst = INSTALLERS[key]
        match = [{"key": ACCELERATOR_LABEL, "operator": "In", "values": sorted(accels)}]
        if inst.arch:
            match.append({"key": "kubernetes.io/arch", "operator": "In", "values": [inst.arch]})
        labels = {"k8s-app": inst.name}
        out.append(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {
                    "name": inst.name,
                    "namespace": INSTALLER_NAMESPACE,
                    "labels": {**labels, "app.kubernetes.io/part-of": "ray-gke"},
                },
                "spec": {
                    "selector": {"matchLabels": labels},
                    "updateStrategy": {"type": "RollingUpdate"},
                    "template": {
                        "metadata": {"labels": {"name": inst.name, **labels}},
                        "spec": {
                            "priorityClassName": "system-node-critical",
                            "affinity": {
                                "nodeAffinity": {
                                    "requiredDuringSchedulingIgnoredDuringExecution": {
                                        "nodeSelectorTerms": [{"matchExpressions": match}]
                                    }
                                }
                            },
                            "tolerations": [{"operator": "Exists"}],
                            "hostNetwork": True,
                            "hostPID": True,
                            "volumes": [
                                {"name": n, "hostPath": {"path": host}}
                                for n, (host, _) in inst.host_dirs.items()
                            ],
                            "initContainers": [
                                *_pre_install(inst),
                                {
                                    "name": inst.name,
                                    "image": inst.image,
                                    "resources": {"requests": {"cpu": "150m"}},
                                    "securityContext": {"privileged": True},
                                    "volumeMounts": [
                                        {"name": n, "mountPath": mount}
                                        for n, (_, mount) in inst.host_dirs.items()
                                    ],
                                    "command": ["/bin/sh", "-c"],
                                    "args": [inst.script],
                                },
                            ],
                            "containers": [{"name": "pause", "image": PAUSE_IMAGE}],
                        },
                    },
                },
            }
        )
    accels = gpudirect_accelerators(node_pools)
    if accels:
        out.append(device_injector(accels))
    return out


def _pre_install(inst: Any) -> list[dict[str, Any]]:
    """The installer's ``pre-installation`` init container (TCPXO's), as Google ships it:
    privileged, its command run in the host's namespaces; [] for the others."""
    if inst.pre_install is None:
        return []
    image, command = inst.pre_install
    return [
        {
            "name": "pre-installation",
            "image": image,
            "securityContext": {"privileged": True},
            "command": list(command),
        }
    ]


def gpudirect_objects(node_pools: list[Any], namespace: str) -> list[dict[str, Any]]:
    """The admission policy of the ``gpudirect`` namespace of the Ray ``namespace``
    (``kuberay.namespace``) and its binding
    (:func:`components.gpunet.gpudirect.admission_policy`); [] without a ``gpudirect`` pool in
    ``node_pools``."""
    kinds = [r.kind for pool in node_pools if (r := rxdm_of(pool)) is not None]
    if not kinds:
        return []
    return admission_policy(gpudirect_namespace(namespace), kinds)


def gpunet_objects(
    vpcs: list[GpuVpc], node_pools: list[Any], namespace: str
) -> list[dict[str, Any]]:
    """Every Kubernetes object of the stack's GPU networking: the multi-networking objects of
    ``vpcs`` (:func:`gpu_vpcs`), the installers of ``node_pools``, then the ``gpudirect``
    namespace's admission policy (``namespace``: ``kuberay.namespace``)."""
    return [
        *multi_network_objects(vpcs),
        *installer_daemonsets(node_pools),
        *gpudirect_objects(node_pools, namespace),
    ]


class WorkerExtras(NamedTuple):
    """:func:`worker_pod_extras`' answer: the pod's ``annotations``, the Ray container's NCCL
    ``env``, and a ``gpudirect`` pool's RxDM ``parts`` (None otherwise)."""

    annotations: dict[str, str]
    env: dict[str, str]
    parts: WorkerParts | None


def worker_pod_extras(pool: Any, fam: GpuNetFamily | None) -> WorkerExtras:
    """What GPU networking gives a Ray worker pod on ``pool``, whose GPU networking family is
    ``fam`` (``pool.gpu_net``; None: without GPU networking, all empty): the interface
    annotations (``networking.gke.io/default-interface: eth0`` and
    ``networking.gke.io/interfaces``, the JSON list of
    :meth:`~components.catalog.gpu_network.GpuNetFamily.pod_interfaces`) [CEA] and the NCCL
    environment (:func:`components.catalog.gpu_network.ray_nccl_env`). A ``gpudirect`` pool's
    workers get the RxDM sidecar, its volumes and the Ray container's mounts
    (:func:`components.gpunet.gpudirect.worker_parts`), the sidecar's device annotation and
    Google's NCCL environment for the plugin (:func:`components.catalog.gpu_network.nccl_env`)
    instead."""
    if fam is None:
        return WorkerExtras({}, {}, None)
    interfaces = fam.pod_interfaces(pod_networks(fam))
    annotations = {
        DEFAULT_INTERFACE_ANNOTATION: "eth0",
        INTERFACES_ANNOTATION: json.dumps(interfaces, separators=(",", ":")),
    }
    parts = worker_parts(fam) if getattr(pool, "gpudirect", False) else None
    if parts is not None:
        return WorkerExtras({**annotations, **parts.annotations}, parts.env, parts)
    return WorkerExtras(annotations, ray_nccl_env(fam), None)


def gpunet_problems(
    node_pools: list[Any], zones: list[str], network: NetworkConfig
) -> list[Problem]:
    """Refusals of the stack's GPU networking: an RDMA pool in more than one zone or in another
    zone than the stack's RDMA network profile (it is zonal [RDMA-PROFILE]), an RDMA pool in a
    zone the catalog does not list for its GPU (the profile is offered where the machine type is,
    [RDMA-PROFILE]; ``allow_unlisted_zone`` accepts it), and too small a ``network.gpu_cidr``."""
    out: list[Problem] = []
    zone = rdma_zone(node_pools, zones)
    for pool, fam in networked_pools(node_pools):
        if fam.kind != "rdma":
            continue
        pool_zones = list(pool.zones or zones)
        field = f"node_pools[{pool.name}].zones"
        if len(pool_zones) != 1 or pool_zones[0] != zone:
            out.append(
                Problem(
                    field,
                    f"{field} {pool_zones} for GPUDirect RDMA: the RDMA network profile is zonal, so every "
                    f"RDMA pool must be in the one zone {zone}; set zones: [{zone}] or "
                    "gpu_networking: off",
                    "gpu-networking",
                )
            )
        elif pool_zones[0] not in pool.gpu.gpu.zones and not pool.allow_unlisted_zone:
            out.append(
                Problem(
                    field,
                    f"{field} {pool_zones}: {pool_zones[0]} has no {fam.family} ({pool.gpu.type}) in the catalog, so no "
                    f"{pool_zones[0]}-vpc-roce RDMA network profile; allowed: "
                    f"{', '.join(pool.gpu.gpu.zones)} (or allow_unlisted_zone: true)",
                    "gpu-networking",
                )
            )
    try:
        gpu_vpcs(node_pools, zones, network)
    except ValueError as e:
        out.append(Problem("network.gpu_cidr", str(e), "gpu-networking"))
    return out
