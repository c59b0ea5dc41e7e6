"""Deterministic names shared by the Pulumi components and the pure manifest builders, computed
from the stack config alone: a name is known at preview time, so the rendered Kubernetes objects
refer to buckets and service accounts as plain strings.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from components.config.storage import WorkloadIdentityConfig

# One definition, in the kernel (the spec's rules name buckets too, the plan's ComputeClasses the
# nodes' service account); re-exported here.
from components.kernel.names import BucketPurpose as BucketPurpose
from components.kernel.names import bucket_name as bucket_name
from components.kernel.names import node_service_account_id as node_service_account_id

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
class RunAs:
    """The Kubernetes service accounts a Ray object's pods run as, all of one workload identity:
    ``workers`` (its worker and submitter pods, :func:`ksa_name`) and ``head`` (its head pod,
    :func:`head_account_id`)."""

    workers: str
    head: str


def run_as(identity: str) -> RunAs:
    """The :class:`RunAs` accounts of the workload identity named ``identity``."""
    return RunAs(ksa_name(identity), head_account_id(identity))


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


def workload_accounts(identities: Iterable[WorkloadIdentityConfig]) -> list[WorkloadAccount]:
    """Two accounts per workload identity of ``identities`` (``workload_identities``), in their
    order: its workers' account (the entry's name, unchanged from earlier versions) then its
    head's (:func:`head_account_id`). Both get the identity's bucket roles and secret grants (a
    job's driver runs on the head)."""
    out = []
    for wi in identities:
        out.append(WorkloadAccount(wi, "workers", ksa_name(wi)))
        out.append(WorkloadAccount(wi, "head", head_account_id(wi)))
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


def bucket_location(location: str | None, region: str) -> str:
    """Bucket location: ``location`` (``buckets.location``) or the stack's ``region``, upper case
    (``US-EAST5``)."""
    return (location or region).upper()


def key_ring_locations(region: str, buckets_location: str | None) -> dict[str, str]:
    """Key purpose -> KMS location: GKE secrets, Secret Manager secrets (replicated only in the
    region) and node boot disks in the cluster's ``region``, bucket keys where the buckets are
    (``buckets_location``: ``buckets.location``, or the region; lower case). A CMEK must be in the location of what it
    encrypts (https://cloud.google.com/secret-manager/docs/cmek,
    https://cloud.google.com/kubernetes-engine/docs/how-to/using-cmek)."""
    return {
        "gke": region,
        "secrets": region,
        "boot_disks": region,
        "buckets": bucket_location(buckets_location, region).lower(),
    }
