"""Pure builders of the Ray namespace's guard rails: the Namespace with Pod Security Admission labels
(:func:`psa_labels`), its NetworkPolicies (:func:`network_policies`, ``Ingress`` only),
ResourceQuota and LimitRange, and the ``<namespace>-gpudirect`` namespace's. Config in, plain
``dict`` out; :class:`components.kuberay.component.KubeRay` creates exactly these.
Sources: docs/sources.md#kuberay-namespace
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from components.catalog.gpu import GPU_TYPES
from components.catalog.tpu import TPU_GENERATIONS
from components.config.kuberay import KubeRayConfig
from components.kernel.names import GPUDIRECT_LABEL, GPUDIRECT_LABEL_VALUE
from components.kernel.ray import (
    CLUSTER_LABEL,
    HEAD_PORTS,
    JOB_CLUSTER_LABEL,
    METRICS_PORT,
    PART_OF,
    SERVE_PORT,
    SERVICE_LABEL,
    SUBMITTER_LABEL,
)
from components.plan.context import Context

if TYPE_CHECKING:
    from components.plan.plan import Plan

PSA_LEVEL = "restricted"
PSA_VERSION = "latest"
# The namespace of the managed-collection collectors (a DaemonSet scraping the pods of its node,
# https://cloud.google.com/stackdriver/docs/managed-prometheus/setup-managed) on a GKE cluster:
# GKE deploys managed collection itself, operator, collector and rule-evaluator, in its managed
# namespace ``gke-gmp-system`` (GKE managed namespaces are ``gke-*``; ``kubectl get pods -n
# gke-gmp-system`` lists them). ``gmp-system`` is where the same components run when managed
# collection is installed into a non-GKE cluster (GKE attached clusters, GKE on AWS / Azure:
# "Authorize the gmp-system/collector ... service accounts",
# https://cloud.google.com/kubernetes-engine/multi-cloud/docs/attached/aks/how-to/managed-service-prometheus),
# so on GKE no collector runs there and a policy admitting it leaves the metrics unscraped.
GMP_NAMESPACE = "gke-gmp-system"
# Google Cloud load balancer health-check (and GFE proxy) source ranges
# (https://cloud.google.com/load-balancing/docs/firewall-rules).
LB_HEALTH_CHECK_RANGES = ("35.191.0.0/16", "130.211.0.0/22")
OPERATOR_POD_LABELS = {"app.kubernetes.io/name": "kuberay-operator"}
NS_NAME_LABEL = "kubernetes.io/metadata.name"  # set by the API server on every namespace
GPU_RESOURCE = "nvidia.com/gpu"
TPU_RESOURCE = "google.com/tpu"


def _meta(namespace: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/part-of": PART_OF, "app.kubernetes.io/managed-by": "pulumi"},
    }


def psa_labels(enforce: str = PSA_LEVEL) -> dict[str, str]:
    """Pod Security Admission labels of the Ray namespace (docs/sources.md#kuberay-namespace): ``enforce``
    (``kuberay.pod_security``, default ``restricted``), ``warn`` and ``audit`` ``restricted``."""
    out: dict[str, str] = {}
    for mode in ("enforce", "warn", "audit"):
        out[f"pod-security.kubernetes.io/{mode}"] = enforce if mode == "enforce" else PSA_LEVEL
        out[f"pod-security.kubernetes.io/{mode}-version"] = PSA_VERSION
    return out


def gpudirect_psa_labels() -> dict[str, str]:
    """Pod Security Admission labels of the ``gpudirect`` namespace, for the RxDM sidecar
    (:mod:`components.gpunet.gpudirect` narrows it):
    ``enforce: privileged``, the only level the RxDM sidecar passes; ``warn`` and ``audit``
    stay ``restricted``, so the API server records each pod that goes beyond it."""
    return {**psa_labels(), "pod-security.kubernetes.io/enforce": "privileged"}


def gpudirect_namespace_manifest(ctx: Context) -> dict[str, Any] | None:
    """The ``v1`` Namespace ``<kuberay.namespace>-gpudirect`` of the Ray clusters on
    ``gpu_networking: gpudirect`` pools (``ctx.gpudirect_namespace``), labelled with the
    exception it holds (:data:`components.kernel.names.GPUDIRECT_LABEL`: ``rxdm``) and
    :func:`gpudirect_psa_labels`; None without such a pool."""
    ns = ctx.gpudirect_namespace
    if ns is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": ns,
            "labels": {
                "app.kubernetes.io/part-of": PART_OF,
                GPUDIRECT_LABEL: GPUDIRECT_LABEL_VALUE,
                **gpudirect_psa_labels(),
            },
        },
    }


def namespace_manifests(ctx: Context, kuberay: KubeRayConfig) -> list[dict[str, Any]]:
    """The stack's Namespaces: ``kuberay.namespace`` (:func:`namespace_manifest`), then the
    ``gpudirect`` one when ``ctx`` has one (:func:`gpudirect_namespace_manifest`)."""
    gpudirect = gpudirect_namespace_manifest(ctx)
    return [namespace_manifest(kuberay), *([gpudirect] if gpudirect else [])]


def namespace_manifest(kuberay: KubeRayConfig) -> dict[str, Any]:
    """The ``v1`` Namespace ``kuberay.namespace`` with the PSA labels of
    ``kuberay.pod_security``."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": kuberay.namespace,
            "labels": {
                "app.kubernetes.io/part-of": PART_OF,
                **psa_labels(kuberay.pod_security),
            },
        },
    }


def ray_cluster_selectors(p: Plan) -> dict[str, dict[str, str]]:
    """Ray cluster name -> the pod labels selecting all of its pods: ``ray.io/cluster: <name>``
    for each long-lived RayCluster, ``ray-gke.io/job-cluster: <job>`` for each RayJob bringing its
    own cluster (named after the job), ``ray-gke/service: <name>`` for each RayService
    (:data:`components.kernel.ray.SERVICE_LABEL`); read from the stack's plan ``p``."""
    out = {name: {CLUSTER_LABEL: name} for name in p.clusters}
    for t in p.jobs:
        if not t.job.cluster:
            out[t.job.name] = {JOB_CLUSTER_LABEL: t.job.name}
    for svc, _ in p.services:  # a RayService's cluster name is generated and changes on upgrade
        out[svc.name] = {SERVICE_LABEL: svc.name}
    return out


def _ports(*ports: int) -> list[dict[str, Any]]:
    return [{"protocol": "TCP", "port": p} for p in ports]


def _operator_peers(
    kuberay: KubeRayConfig, master_ipv4_cidr: str, namespace: str
) -> list[dict[str, Any]]:
    """The KubeRay operator as a NetworkPolicy peer of a policy in ``namespace``: with ``helm``
    its pods in ``kuberay.namespace`` (a ``namespaceSelector`` beside the ``podSelector`` from
    another namespace), with ``gke-addon`` the control plane's range (``network.master_ipv4_cidr``)."""
    if kuberay.mode == "helm":
        peer: dict[str, Any] = {"podSelector": {"matchLabels": dict(OPERATOR_POD_LABELS)}}
        if namespace != kuberay.namespace:
            peer["namespaceSelector"] = {"matchLabels": {NS_NAME_LABEL: kuberay.namespace}}
        return [peer]
    return [{"ipBlock": {"cidr": master_ipv4_cidr}}]


def _policy(namespace: str, name: str, selector: dict[str, Any], ingress: list[dict[str, Any]]):
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(namespace, name),
        "spec": {"podSelector": selector, "policyTypes": ["Ingress"], "ingress": ingress},
    }


def network_policies(
    p: Plan, kuberay: KubeRayConfig, master_ipv4_cidr: str, namespace: str | None = None
) -> list[dict[str, Any]]:
    """The NetworkPolicies of ``namespace`` (default ``kuberay.namespace``; the ``gpudirect``
    namespace has its own, with the same guard rails): ``default-deny-ingress``, then per Ray
    cluster of the plan ``p`` in it (sorted by name) ``<name>-ray`` (its pods to each other on
    every port, ``gke-gmp-system`` to the metrics port 8080, Serve's 8000 from
    ``kuberay.serve_from`` and, for a service with a ``gateway``, the load balancers' ranges) and
    ``<name>-ray-head`` (6379, 8265, 10001 from the operator and the cluster's submitters; 8000
    from the operator for a RayService) (``master_ipv4_cidr``: ``network.master_ipv4_cidr``, the
    operator's peer with ``gke-addon``). Plain ``networking.k8s.io/v1`` objects, not KubeRay's
    ``spec.networkPolicy``; ``raygke check`` checks them (:mod:`components.security.rules`).
    Sources: docs/sources.md#kuberay-namespace."""
    ns = namespace or kuberay.namespace
    ctx = p.context
    out = [_policy(ns, "default-deny-ingress", {}, [])]
    out[0]["spec"].pop("ingress")
    serve = kuberay.serve_from
    services = {svc.name for svc, _ in p.services}
    gateways = {svc.name: svc.gateway for svc, _ in p.services if svc.gateway is not None}
    serve_peers = [
        {"namespaceSelector": {"matchLabels": {NS_NAME_LABEL: ns}}} for ns in serve.namespaces
    ] + [{"ipBlock": {"cidr": c}} for c in serve.cidrs]
    for name, labels in sorted(ray_cluster_selectors(p).items()):
        if ctx.namespace_of(name) != ns:
            continue
        own = {"podSelector": {"matchLabels": dict(labels)}}
        ingress: list[dict[str, Any]] = [
            {"from": [own]},
            {
                "from": [{"namespaceSelector": {"matchLabels": {NS_NAME_LABEL: GMP_NAMESPACE}}}],
                "ports": _ports(METRICS_PORT),
            },
        ]
        if serve_peers:
            ingress.append({"from": serve_peers, "ports": _ports(SERVE_PORT)})
        gw = gateways.get(name)
        if (
            gw is not None
        ):  # the load balancer's health checks and proxies (docs/sources.md#kuberay-namespace)
            cidrs = [*LB_HEALTH_CHECK_RANGES]
            if gw.proxy_subnet_cidr is not None:
                cidrs.append(gw.proxy_subnet_cidr)
            ingress.append(
                {"from": [{"ipBlock": {"cidr": c}} for c in cidrs], "ports": _ports(SERVE_PORT)}
            )
        out.append(_policy(ns, f"{name}-ray", {"matchLabels": dict(labels)}, ingress))
        head = {"matchLabels": {**labels, "ray.io/node-type": "head"}}
        submitters = {"podSelector": {"matchLabels": {SUBMITTER_LABEL: name}}}
        head_ingress: list[dict[str, Any]] = [
            {
                "from": [
                    *_operator_peers(kuberay, master_ipv4_cidr, ns),
                    submitters,
                ],
                "ports": _ports(
                    HEAD_PORTS["gcs-server"], HEAD_PORTS["dashboard"], HEAD_PORTS["client"]
                ),
            }
        ]
        if (
            name in services
        ):  # the operator's Serve proxy health probe (docs/sources.md#kuberay-namespace)
            head_ingress.append(
                {
                    "from": _operator_peers(kuberay, master_ipv4_cidr, ns),
                    "ports": _ports(SERVE_PORT),
                }
            )
        out.append(_policy(ns, f"{name}-ray-head", head, head_ingress))
    return out


def _limits_total(limits: Mapping[str, object], resource_types: Collection[str]) -> int:
    """The sum of the NAP ``limits`` (resource type -> maximum) of ``resource_types`` (GKE's
    resource-limit types: the catalog's GPU types and TPU accelerator names, ``tpu7x``
    included)."""
    return sum(int(n) for t, n in limits.items() if t in resource_types)  # type: ignore[call-overload]


_TPU_LIMIT_TYPES = frozenset(g.gke_accelerator for g in TPU_GENERATIONS.values())


def resource_quota(
    kuberay: KubeRayConfig,
    nap_limits: Sequence[Mapping[str, Any]],
    namespace: str | None = None,
) -> dict[str, Any]:
    """The ``v1`` ResourceQuota ``ray-quota`` of the Ray namespace: ``requests.cpu``,
    ``requests.memory`` / ``limits.memory``, ``requests.nvidia.com/gpu``,
    ``requests.google.com/tpu`` (extended resources are quota'd by request,
    https://kubernetes.io/docs/concepts/policy/resource-quotas/#resource-quota-for-extended-resources)
    and ``pods`` when set. Unset ``kuberay.quota`` keys take the NAP limits ``nap_limits``
    (the cluster's, :func:`components.cluster.render.nap_resource_limits`: cpu in vCPUs, memory
    in GB read as GiB, the sums of the catalog's GPU and TPU chip limits), which bound the whole
    cluster anyway."""
    q = kuberay.quota
    limits = {str(x["resource_type"]): x["maximum"] for x in nap_limits}
    memory = q.memory or f"{limits['memory']}Gi"
    hard: dict[str, str] = {
        "requests.cpu": q.cpu or str(limits["cpu"]),
        "requests.memory": memory,
        "limits.memory": memory,
        f"requests.{GPU_RESOURCE}": str(
            q.gpus if q.gpus is not None else _limits_total(limits, GPU_TYPES)
        ),
        f"requests.{TPU_RESOURCE}": str(
            q.tpus if q.tpus is not None else _limits_total(limits, _TPU_LIMIT_TYPES)
        ),
    }
    if q.pods is not None:
        hard["pods"] = str(q.pods)
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": _meta(namespace or kuberay.namespace, "ray-quota"),
        "spec": {"hard": hard},
    }


def limit_range(kuberay: KubeRayConfig, namespace: str | None = None) -> dict[str, Any]:
    """The ``v1`` LimitRange ``ray-defaults`` of ``namespace`` (default ``kuberay.namespace``):
    ``kuberay.limit_range``'s default requests and limits for a container that sets none (the
    quota refuses such a pod otherwise)."""
    lr = kuberay.limit_range
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": _meta(namespace or kuberay.namespace, "ray-defaults"),
        "spec": {
            "limits": [
                {
                    "type": "Container",
                    "default": {"cpu": lr.default_cpu, "memory": lr.default_memory},
                    "defaultRequest": {
                        "cpu": lr.default_request_cpu,
                        "memory": lr.default_request_memory,
                    },
                }
            ]
        },
    }


def namespace_objects(
    p: Plan, kuberay: KubeRayConfig, master_ipv4_cidr: str, nap_limits: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Everything of this module inside the namespaces: the Ray namespace's NetworkPolicies,
    ResourceQuota and LimitRange, then the ``gpudirect`` namespace's (its own policies, the same
    quota and defaults) when there is one (the Namespaces themselves are
    :func:`namespace_manifests`); the arguments as for :func:`network_policies` and
    :func:`resource_quota`."""
    out = [
        *network_policies(p, kuberay, master_ipv4_cidr),
        resource_quota(kuberay, nap_limits),
        limit_range(kuberay),
    ]
    ns = p.context.gpudirect_namespace
    if ns is not None:
        out += [
            *network_policies(p, kuberay, master_ipv4_cidr, ns),
            resource_quota(kuberay, nap_limits, ns),
            limit_range(kuberay, ns),
        ]
    return out
