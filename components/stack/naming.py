"""Deterministic names shared by the Pulumi components and the pure manifest builders.

Everything here is computed from the stack config alone, so a name is known at preview time and
the rendered Kubernetes objects can refer to buckets and service accounts as plain strings.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from components.gcsft.names import auth_secret_id, ft_enabled

# One definition, in the kernel (the spec's rules name buckets too, the plan's ComputeClasses the
# nodes' service account); re-exported here.
from components.kernel.names import BucketPurpose as BucketPurpose
from components.kernel.names import bucket_name as bucket_name
from components.kernel.names import node_service_account_id as node_service_account_id
from components.stack.model import StackConfig
from components.storage.model import WorkloadIdentityConfig

BUCKET_PURPOSES: tuple[BucketPurpose, ...] = ("datasets", "checkpoints", "artifacts")


def gsa_account_id(identity: WorkloadIdentityConfig | str) -> str:
    """Google service account id of a workload class (the workload identity's name)."""
    return identity if isinstance(identity, str) else identity.name


def gsa_email(project: str, identity: WorkloadIdentityConfig | str) -> str:
    """``<id>@<project>.iam.gserviceaccount.com``."""
    return f"{gsa_account_id(identity)}@{project}.iam.gserviceaccount.com"


def ksa_name(identity: WorkloadIdentityConfig | str) -> str:
    """Kubernetes service account of a workload class (same name as the workload identity)."""
    return identity if isinstance(identity, str) else identity.name


HEAD_SUFFIX = "-head"


def head_account_id(identity: WorkloadIdentityConfig | str) -> str:
    """The head pods' own account of a workload class: ``<identity>-head``, used as both the
    Kubernetes service account name and the Google service account id.

    Separate from the workers' account because KubeRay binds the autoscaler's RBAC (patch pods
    and RayClusters) to the head pod's service account
    (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html);
    workers and submitters must not hold it. GSA ids are 6-30 characters
    (https://cloud.google.com/iam/docs/service-accounts-create#creating): a name too long for the
    suffix is shortened with a stable hash, never cut mid-way.
    """
    name = ksa_name(identity)
    if len(name) + len(HEAD_SUFFIX) <= 30:
        return name + HEAD_SUFFIX
    digest = hashlib.sha256(name.encode()).hexdigest()[:4]
    head = name[: 30 - len(HEAD_SUFFIX) - len(digest) - 1].rstrip("-")
    return f"{head}-{digest}{HEAD_SUFFIX}"


@dataclass(frozen=True)
class WorkloadAccount:
    """One Kubernetes service account and the Google service account it is bound to.

    Attributes:
        identity: the ``workload_identities`` entry whose bucket and secret grants it holds.
        role: ``workers`` (worker pods and job submitters; the entry's own name) or ``head``
            (head pods: the autoscaler's RBAC is bound to it; :func:`head_account_id`).
        name: the KSA name, which is also the GSA account id.
    """

    identity: WorkloadIdentityConfig
    role: Literal["workers", "head"]
    name: str


def workload_accounts(cfg: StackConfig) -> list[WorkloadAccount]:
    """Two accounts per workload identity, in config order: its workers' account (the entry's
    name, unchanged from earlier versions) then its head's (:func:`head_account_id`). Both get
    the identity's bucket roles and secret grants (a job's driver runs on the head)."""
    out = []
    for wi in cfg.workload_identities:
        out.append(WorkloadAccount(wi, "workers", ksa_name(wi)))
        out.append(WorkloadAccount(wi, "head", head_account_id(wi)))
    return out


def namespace_accounts(cfg: StackConfig) -> list[tuple[str, WorkloadAccount]]:
    """``(namespace, account)`` of every Kubernetes service account the stack creates: every
    :func:`workload_accounts` entry in ``kuberay.namespace``, then, when there is a ``gpudirect``
    namespace (:attr:`components.stack.context.Context.gpudirect_namespace`), the accounts of
    the identities its Ray objects run as (a RayCluster's, a job's, a service's
    ``service_account``), each bound to the same Google service account."""
    accounts = workload_accounts(cfg)
    out = [(cfg.kuberay.namespace, a) for a in accounts]
    from components.stack.plan import plan

    ctx = plan(cfg).context
    if ctx.gpudirect_namespace is None:
        return out
    moved = set(ctx.ray_namespaces)
    used = {
        x.service_account for x in [*cfg.ray_clusters, *cfg.jobs, *cfg.services] if x.name in moved
    }
    out += [(ctx.gpudirect_namespace, a) for a in accounts if a.identity.name in used]
    return out


def workload_pool(project: str) -> str:
    """The Workload Identity pool ``<project>.svc.id.goog``."""
    return f"{project}.svc.id.goog"


def workload_identity_member(
    project: str, namespace: str, identity: WorkloadIdentityConfig | str
) -> str:
    """IAM member that lets the KSA of ``identity`` in ``namespace`` impersonate the GSA through
    Workload Identity: ``serviceAccount:<project>.svc.id.goog[<namespace>/<ksa>]``
    (https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity)."""
    return f"serviceAccount:{workload_pool(project)}[{namespace}/{ksa_name(identity)}]"


# ------------------------------------------------------------------ names the resources declare

GKE_KEY_NAME = "gke-secrets"
BUCKET_KEY_NAME = "buckets"
REGISTRY_KEY_NAME = "artifact-registry"
SECRETS_KEY_NAME = "secret-manager"
BOOT_DISK_KEY_NAME = "boot-disks"


def subnet_name(network: str, region: str) -> str:
    """The subnetwork: ``<network>-<region>`` (``network.name``, the stack's region)."""
    return f"{network}-{region}"


def router_name(network: str) -> str:
    """The Cloud Router: ``<network>-router`` (``network.name``)."""
    return f"{network}-router"


def nat_name(network: str) -> str:
    """The Cloud NAT: ``<network>-nat`` (``network.name``)."""
    return f"{network}-nat"


def key_ring_name(cluster: str, generation: int, location: str) -> str:
    """The KMS key ring of one location: ``<cluster>-<location>``, or
    ``<cluster>-<location>-g<N>`` for ``generation`` (``kms.key_ring_generation``) N > 1;
    ``cluster`` is ``cluster.name``. Key rings and keys
    cannot be deleted (terraform-provider-google ``website/docs/r/kms_key_ring.html.markdown``:
    destroying one only removes it from state; https://cloud.google.com/kms/docs/delete-kms-resources:
    deleted key names cannot be reused), so a destroyed stack is recreated with the next
    generation: new names that do not clash with the rings left behind."""
    suffix = f"-g{generation}" if generation > 1 else ""
    return f"{cluster}-{location}{suffix}"


def key_ring_locations(region: str, buckets_location: str | None) -> dict[str, str]:
    """Key purpose -> KMS location: GKE secrets, Secret Manager secrets (replicated only in the
    region) and node boot disks in the cluster's ``region``, bucket keys where the buckets are
    (``buckets_location``: ``buckets.location``, or the region; lower case). A CMEK must be in the location of what it
    encrypts (https://cloud.google.com/secret-manager/docs/cmek,
    https://cloud.google.com/kubernetes-engine/docs/how-to/using-cmek)."""
    from components.storage.render import bucket_location

    return {
        "gke": region,
        "secrets": region,
        "boot_disks": region,
        "buckets": bucket_location(buckets_location, region).lower(),
    }


@dataclass(frozen=True)
class DerivedName:
    """One name the stack declares in GCP or Kubernetes.

    Attributes:
        kind: the naming rule that applies (keys of ``components.stack.name_checks.NAME_RULES``).
        what: the object, for messages (``node pool``, ``bucket``, ...).
        name: the name as it will be sent to the API.
        field: the stack-file field whose value it comes from (what to edit).
        scope: names must be unique within ``(kind, scope)``.
    """

    kind: str
    what: str
    name: str
    field: str
    scope: str = ""


def derived_names(cfg: StackConfig) -> list[DerivedName]:
    """Every GCP and Kubernetes object name the Pulumi program and the manifests declare, each
    with the stack-file field it derives from. Node pool names come from
    :func:`components.nodepools.render.node_pool_specs` (``<pool>-<i>`` per multi-host slice)."""
    from components.nodepools.render import node_pool_specs

    out = [
        DerivedName("gke-cluster", "GKE cluster", cfg.cluster.name, "cluster.name"),
        DerivedName("compute", "VPC network", cfg.network.name, "network.name", "network"),
        DerivedName(
            "compute",
            "subnetwork",
            subnet_name(cfg.network.name, cfg.region),
            "network.name",
            "subnet",
        ),
        DerivedName(
            "compute", "Cloud Router", router_name(cfg.network.name), "network.name", "router"
        ),
        DerivedName("compute", "Cloud NAT", nat_name(cfg.network.name), "network.name", "nat"),
        DerivedName(
            "service-account",
            "node service account",
            node_service_account_id(cfg.cluster.name),
            "cluster.name",
        ),
        DerivedName(
            "k8s-label", "namespace", cfg.kuberay.namespace, "kuberay.namespace", "namespace"
        ),
    ]
    if any(getattr(p, "gpu_networking", None) == "gpudirect" for p in cfg.node_pools):
        from components.kernel.names import gpudirect_namespace

        out.append(
            DerivedName(
                "k8s-label",
                "GPUDirect namespace",
                gpudirect_namespace(cfg.kuberay.namespace),
                "kuberay.namespace",
                "namespace gpudirect",
            )
        )
    generation = cfg.kms.key_ring_generation
    for loc in dict.fromkeys(key_ring_locations(cfg.region, cfg.buckets.location).values()):
        ring = key_ring_name(cfg.cluster.name, generation, loc)
        out.append(DerivedName("kms", "KMS key ring", ring, "cluster.name", f"keyring {loc}"))
    for spec in node_pool_specs(cfg):
        field = "cluster.system_pool" if spec.kind == "system" else f"node_pools[{spec.pool}].name"
        out.append(DerivedName("gke-node-pool", "node pool", spec.name, field))
    from components.gpunet.render import gpu_vpcs, networked_pools

    try:
        vpcs = gpu_vpcs(cfg)
    except ValueError:  # too small a network.gpu_cidr: the gpu-networking rule says so
        vpcs = []
    for vpc in vpcs:  # GPU networking's VPCs, subnets, firewalls, GKE Network objects
        out.append(DerivedName("compute", "GPU VPC network", vpc.name, "network.name", "network"))
        if vpc.firewall:
            out.append(
                DerivedName("compute", "firewall rule", vpc.firewall, "network.name", "firewall")
            )
        for sub in vpc.subnets:
            out.append(DerivedName("compute", "GPU subnetwork", sub.name, "network.name", "subnet"))
            field = f"node_pools[{networked_pools(cfg)[0][0].name}].gpu_networking"
            out.append(DerivedName("k8s-label", "GKE Network", sub.k8s_name, field, "gke-network"))
    for purpose in BUCKET_PURPOSES:
        field = "buckets.prefix" if cfg.buckets.prefix else "project / cluster.name"
        out.append(
            DerivedName(
                "bucket",
                "bucket",
                bucket_name(cfg.project, cfg.cluster.name, cfg.buckets.prefix, purpose),
                field,
            )
        )
    for acct in workload_accounts(cfg):
        field = f"workload_identities[{acct.identity.name}].name"
        out.append(DerivedName("service-account", "service account", acct.name, field))
        out.append(DerivedName("k8s-label", "Kubernetes service account", acct.name, field, "ksa"))
    for secret in cfg.secrets:
        out.append(DerivedName("secret", "secret", secret.name, f"secrets[{secret.name}].name"))
    if ft_enabled(cfg):  # the GCS fault tolerance Redis's AUTH string (components/gcsft)
        out.append(DerivedName("secret", "secret", auth_secret_id(cfg), "cluster.name"))
    for rc in cfg.ray_clusters:
        out.append(
            DerivedName("k8s-label", "RayCluster", rc.name, f"ray_clusters[{rc.name}].name", "ray")
        )
    for job in cfg.jobs:
        out.append(DerivedName("k8s-label", "RayJob", job.name, f"jobs[{job.name}].name", "job"))
    return out
