"""Pure IAM bindings of the stack (no Pulumi): who gets which role on what (:func:`bucket_bindings`,
:func:`project_bindings`, :func:`secret_bindings`). ``components/security/component.py`` creates
exactly these, and ``raygke check`` verifies them (:func:`iam_problems`: no public bucket, no
project-wide storage role for a workload). Sources: docs/sources.md#security-iam
"""

from __future__ import annotations

from collections.abc import Sequence

from components.config.storage import SecretConfig
from components.kernel.problems import Problem
from components.plan.naming import (
    BucketPurpose,
    WorkloadAccount,
    gsa_email,
    node_service_account_id,
)

BUCKET_ROLES = {"read": "roles/storage.objectViewer", "write": "roles/storage.objectUser"}
WORKLOAD_IDENTITY_ROLE = "roles/iam.workloadIdentityUser"
SECRET_ACCESSOR_ROLE = "roles/secretmanager.secretAccessor"
NODE_PROJECT_ROLES = ("roles/container.defaultNodeServiceAccount",)
REGISTRY_READER_ROLE = "roles/artifactregistry.reader"
PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")


def service_account_member(project: str, account: str) -> str:
    """``serviceAccount:<gsa email>`` of a workload class's account in ``project``."""
    return f"serviceAccount:{gsa_email(project, account)}"


def node_service_account_email(project: str, cluster: str) -> str:
    """Email of the nodes' service account of ``cluster`` (``cluster.name``) in ``project``."""
    return gsa_email(project, node_service_account_id(cluster))


def bucket_bindings(
    project: str, accounts: Sequence[WorkloadAccount]
) -> list[tuple[BucketPurpose, str, str]]:
    """``(bucket purpose, role, member)`` for every bucket-level grant of ``accounts``
    (:func:`components.plan.naming.workload_accounts`), in their order."""
    out: list[tuple[BucketPurpose, str, str]] = []
    for acct in accounts:
        for purpose, access in acct.identity.buckets.items():
            out.append((purpose, BUCKET_ROLES[access], service_account_member(project, acct.name)))
    return out


def project_bindings(project: str, cluster: str) -> list[tuple[str, str]]:
    """``(role, member)`` for every project-level grant: only the node service account's roles."""
    member = f"serviceAccount:{node_service_account_email(project, cluster)}"
    return [(role, member) for role in NODE_PROJECT_ROLES]


def secret_bindings(
    project: str, secrets: Sequence[SecretConfig], accounts: Sequence[WorkloadAccount]
) -> list[tuple[str, str, str]]:
    """``(secret name, role, member)``: each of ``secrets`` readable only by the ``accounts``
    whose workload identity it names (``readers``)."""
    return [
        (s.name, SECRET_ACCESSOR_ROLE, service_account_member(project, a.name))
        for s in secrets
        for r in s.readers
        for a in accounts
        if a.identity.name == r
    ]


def iam_problems(
    project: str,
    accounts: Sequence[WorkloadAccount],
    buckets: list[tuple[str, str, str]],
    grants: list[tuple[str, str]],
) -> list[Problem]:
    """Problems with a set of bindings (``buckets`` as :func:`bucket_bindings`, the project's
    ``grants`` as :func:`project_bindings`) of ``accounts`` in ``project``, rule ``iam`` at
    ``workload_identities``, one each: a public member on a bucket or the project, or any
    project-level ``roles/storage.*`` / owner / editor grant to a workload identity."""
    problems: list[str] = []
    workload_members = {service_account_member(project, a.name) for a in accounts}
    for purpose, role, member in buckets:
        if member in PUBLIC_MEMBERS:
            problems.append(f"bucket {purpose}: {role} granted to {member}: the bucket is public")
    for role, member in grants:
        if member in PUBLIC_MEMBERS:
            problems.append(f"project: {role} granted to {member}: the project is public")
        if member in workload_members and (
            role.startswith("roles/storage.") or role in ("roles/owner", "roles/editor")
        ):
            problems.append(
                f"project: {role} granted to workload identity {member}: workloads get "
                "bucket-level roles only (no project-wide storage roles)"
            )
    return [Problem("workload_identities", line, "iam") for line in problems]


KMS_ROLE = "roles/cloudkms.cryptoKeyEncrypterDecrypter"
KEY_ROTATION_PERIOD = "7776000s"  # 90 days
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def artifact_registry_service_agent(project_number: str) -> str:
    """IAM member of the Artifact Registry service agent of a project number, which encrypts a
    CMEK repository's images (https://cloud.google.com/artifact-registry/docs/cmek)."""
    return (
        f"serviceAccount:service-{project_number}@gcp-sa-artifactregistry.iam.gserviceaccount.com"
    )


def gke_service_agent(project_number: str) -> str:
    """IAM member of the GKE service agent of a project number."""
    return f"serviceAccount:service-{project_number}@container-engine-robot.iam.gserviceaccount.com"


def secret_manager_service_agent(project_number: str) -> str:
    """IAM member of the Secret Manager service agent of a project number; it encrypts and
    decrypts secret versions with the CMEK (https://cloud.google.com/secret-manager/docs/cmek)."""
    return f"serviceAccount:service-{project_number}@gcp-sa-secretmanager.iam.gserviceaccount.com"


def compute_service_agent(project_number: str) -> str:
    """IAM member of the Compute Engine service agent of a project number; it uses the CMEK of
    node boot disks (https://cloud.google.com/kubernetes-engine/docs/how-to/using-cmek)."""
    return f"serviceAccount:service-{project_number}@compute-system.iam.gserviceaccount.com"
