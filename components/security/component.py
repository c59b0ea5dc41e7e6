"""Security: KMS keys, the nodes' service account, workload identities, Secret Manager secrets, in
two ComponentResources because of ordering: :class:`Security` (before the cluster and the
buckets) and :class:`WorkloadAccess` (after them). No project-wide storage role is ever granted;
no service-account key is ever created. Sources: docs/sources.md#security-component
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config.cluster import ClusterConfig
from components.config.storage import KmsConfig, SecretConfig, WorkloadIdentityConfig
from components.plan import naming
from components.plan.context import Context
from components.plan.plan import Plan, namespace_accounts
from components.security import iam
from components.security.iam import (
    KEY_ROTATION_PERIOD,
    KMS_ROLE,
    artifact_registry_service_agent,
    compute_service_agent,
    gke_service_agent,
    secret_manager_service_agent,
)


@dataclass
class SecurityArgs:
    """Inputs of :class:`Security`.

    Attributes:
        context: the stack's context (project, region, cluster name, labels, the buckets block).
        cluster: the ``cluster`` block (its ``deletion_protection``).
        kms: the ``kms`` block.
        workload_identities: the ``workload_identities`` block.
        secrets: the ``secrets`` block.
    """

    context: Context
    cluster: ClusterConfig
    kms: KmsConfig
    workload_identities: Sequence[WorkloadIdentityConfig]
    secrets: Sequence[SecretConfig]


class Security(pulumi.ComponentResource):
    """``ray-gke:security:Security``: KMS, node SA, workload GSAs, secrets, before the cluster and
    the buckets: the KMS key rings and keys with rotation, the service agents'
    encrypter/decrypter grants on their key, the node service account with its one
    least-privilege project role, one GSA per workload identity, the Secret Manager secrets
    (replicated in the stack's region only, no versions).

    Attributes (for wiring): ``gke_key`` / ``bucket_key`` / ``registry_key`` / ``secrets_key`` /
    ``boot_disk_key`` (``gcp.kms.CryptoKey``), ``gcs_key_grant`` (the GCS agent's grant; buckets
    depend on it), ``gke_key_grant``, ``registry_key_grant`` (the Artifact Registry agent's; the
    repository depends on it), ``boot_disk_key_grant`` (the Compute Engine agent's; node pools and
    the cluster depend on it),
    ``node_sa`` (``gcp.serviceaccount.Account``), ``gsas`` (account name -> Account: each
    identity's workers' account and its ``-head`` account),
    ``secrets`` (secret name -> ``gcp.secretmanager.Secret``), ``project_number``.
    """

    def __init__(
        self, name: str, args: SecurityArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:security:Security", name, None, opts)
        ctx = args.context
        child = pulumi.ResourceOptions(parent=self)
        project = gcp.organizations.get_project_output(
            project_id=ctx.project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        self.project_number = project.number

        # Key rings live where the data does: the cluster's region, and the buckets' location.
        ring_locations = naming.key_ring_locations(ctx.region, ctx.buckets_config.location)
        rings: dict[str, gcp.kms.KeyRing] = {}
        for loc in dict.fromkeys(ring_locations.values()):
            rings[loc] = gcp.kms.KeyRing(
                f"{name}-keyring-{loc}",
                name=naming.key_ring_name(ctx.cluster, args.kms.key_ring_generation, loc),
                project=ctx.project,
                location=loc,
                opts=child,
            )
        protect = args.cluster.deletion_protection

        def key(suffix: str, key_name: str, ring: str) -> gcp.kms.CryptoKey:
            """A rotating CMEK key in the key ring of ``ring`` (a key of ``ring_locations``)."""
            return gcp.kms.CryptoKey(
                f"{name}-{suffix}",
                name=key_name,
                key_ring=rings[ring_locations[ring]].id,
                purpose="ENCRYPT_DECRYPT",
                rotation_period=KEY_ROTATION_PERIOD,
                labels=dict(ctx.labels),
                opts=pulumi.ResourceOptions(parent=self, protect=protect),
            )

        def grant(
            suffix: str, crypto_key: gcp.kms.CryptoKey, member: pulumi.Input[str], **opts: Any
        ) -> gcp.kms.CryptoKeyIAMMember:
            """``roles/cloudkms.cryptoKeyEncrypterDecrypter`` for a service agent on its key."""
            return gcp.kms.CryptoKeyIAMMember(
                f"{name}-{suffix}",
                crypto_key_id=crypto_key.id,
                role=KMS_ROLE,
                member=member,
                opts=pulumi.ResourceOptions(parent=self, **opts),
            )

        self.gke_key = key("gke-secrets", naming.GKE_KEY_NAME, "gke")
        self.bucket_key = key("buckets", naming.BUCKET_KEY_NAME, "buckets")
        self.gke_key_grant = grant(
            "gke-agent-kms", self.gke_key, project.number.apply(gke_service_agent)
        )
        # The image repository lives in the region, so its key is in the region's ring.
        self.registry_key = key("registry", naming.REGISTRY_KEY_NAME, "gke")
        self.registry_key_grant = grant(
            "registry-agent-kms",
            self.registry_key,
            project.number.apply(artifact_registry_service_agent),
        )
        self.secrets_key = key("secret-manager", naming.SECRETS_KEY_NAME, "secrets")
        self.boot_disk_key = key("boot-disks", naming.BOOT_DISK_KEY_NAME, "boot_disks")
        self.boot_disk_key_grant = grant(
            "compute-agent-kms", self.boot_disk_key, project.number.apply(compute_service_agent)
        )
        # The Secret Manager agent exists only once requested; the grant names it by its
        # documented address and waits for it.
        sm_identity = gcp.projects.ServiceIdentity(
            f"{name}-secretmanager-agent",
            project=ctx.project,
            service="secretmanager.googleapis.com",
            opts=child,
        )
        self.secrets_key_grant = grant(
            "secretmanager-agent-kms",
            self.secrets_key,
            project.number.apply(secret_manager_service_agent),
            depends_on=[sm_identity],
        )
        gcs_agent = gcp.storage.get_project_service_account_output(
            project=ctx.project, opts=pulumi.InvokeOutputOptions(parent=self)
        )
        self.gcs_key_grant = grant(
            "gcs-agent-kms",
            self.bucket_key,
            gcs_agent.email_address.apply(lambda e: f"serviceAccount:{e}"),
        )

        self.node_sa = gcp.serviceaccount.Account(
            f"{name}-node-sa",
            account_id=naming.node_service_account_id(ctx.cluster),
            display_name=f"GKE nodes of {ctx.cluster}",
            project=ctx.project,
            opts=child,
        )
        self.node_sa_roles = [
            gcp.projects.IAMMember(
                f"{name}-node-sa-{role.split('/')[1].replace('.', '-')}",
                project=ctx.project,
                role=role,
                member=self.node_sa.email.apply(lambda e: f"serviceAccount:{e}"),
                opts=child,
            )
            for role in iam.NODE_PROJECT_ROLES
        ]

        # Two GSAs per workload identity: its workers' / submitters' (the entry's name) and its
        # heads' (<name>-head), so the head's Kubernetes RBAC and identity are its own.
        self.gsas: dict[str, gcp.serviceaccount.Account] = {}
        for acct in naming.workload_accounts(args.workload_identities):
            self.gsas[acct.name] = gcp.serviceaccount.Account(
                f"{name}-gsa-{acct.name}",
                account_id=acct.name,
                display_name=f"Ray {acct.role} of {acct.identity.name} ({ctx.cluster})",
                project=ctx.project,
                opts=child,
            )

        self.secrets: dict[str, gcp.secretmanager.Secret] = {}
        after_key_grant = pulumi.ResourceOptions(parent=self, depends_on=[self.secrets_key_grant])
        for secret in args.secrets:
            self.secrets[secret.name] = gcp.secretmanager.Secret(
                f"{name}-secret-{secret.name}",
                secret_id=secret.name,
                project=ctx.project,
                labels=dict(ctx.labels),
                replication=gcp.secretmanager.SecretReplicationArgs(
                    user_managed=gcp.secretmanager.SecretReplicationUserManagedArgs(
                        replicas=[
                            gcp.secretmanager.SecretReplicationUserManagedReplicaArgs(
                                location=ctx.region,
                                customer_managed_encryption=gcp.secretmanager.SecretReplicationUserManagedReplicaCustomerManagedEncryptionArgs(
                                    kms_key_name=self.secrets_key.id
                                ),
                            )
                        ]
                    )
                ),
                opts=after_key_grant,
            )

        self.register_outputs(
            {
                "gke_key": self.gke_key.id,
                "bucket_key": self.bucket_key.id,
                "registry_key": self.registry_key.id,
                "secrets_key": self.secrets_key.id,
                "boot_disk_key": self.boot_disk_key.id,
                "node_service_account": self.node_sa.email,
                "service_accounts": {k: v.email for k, v in self.gsas.items()},
                "secrets": {k: v.id for k, v in self.secrets.items()},
            }
        )


@dataclass
class WorkloadAccessArgs:
    """Inputs of :class:`WorkloadAccess`.

    Attributes:
        plan: the stack's plan (its context, identities and the Ray objects' namespaces).
        declared_secrets: the ``secrets`` block.
        gsas: account name (:func:`components.plan.naming.workload_accounts`) -> its Google
            service account (from :class:`Security`).
        buckets: purpose (``datasets`` | ``checkpoints`` | ``artifacts``) -> ``gcp.storage.Bucket``.
        secrets: secret name -> ``gcp.secretmanager.Secret``.
    """

    plan: Plan
    declared_secrets: Sequence[SecretConfig]
    gsas: dict[str, gcp.serviceaccount.Account]
    buckets: dict[str, gcp.storage.Bucket]
    secrets: dict[str, gcp.secretmanager.Secret] = field(default_factory=dict)


class WorkloadAccess(pulumi.ComponentResource):
    """``ray-gke:security:WorkloadAccess``: WI bindings, bucket-level roles, secret accessors,
    after the cluster and the buckets.

    Create it with ``depends_on=[cluster]``: the ``<project>.svc.id.goog`` pool must exist.
    """

    def __init__(
        self, name: str, args: WorkloadAccessArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:security:WorkloadAccess", name, None, opts)
        ctx = args.plan.context
        child = pulumi.ResourceOptions(parent=self)
        # One binding per (namespace, KSA): the Ray namespace's keep their names; a gpudirect
        # namespace's KSAs (components/plan/plan.py namespace_accounts) get their own.
        self.wi_bindings = {
            (acct.name if ns == ctx.namespace else f"{ns}/{acct.name}"): (
                gcp.serviceaccount.IAMMember(
                    f"{name}-wi-{acct.name}"
                    if ns == ctx.namespace
                    else f"{name}-wi-gpudirect-{acct.name}",
                    service_account_id=args.gsas[acct.name].name,
                    role=iam.WORKLOAD_IDENTITY_ROLE,
                    member=naming.workload_identity_member(ctx.project, ns, acct.name),
                    opts=child,
                )
            )
            for ns, acct in namespace_accounts(args.plan)
        }
        # Exactly the pure plan that `raygke check` verifies (components/security/iam.py). Members are the
        # GSAs' deterministic emails, so the grants wait for the accounts explicitly.
        after_gsas = pulumi.ResourceOptions(parent=self, depends_on=list(args.gsas.values()))
        accounts = naming.workload_accounts(args.plan.identities.values())
        self.bucket_grants = [
            gcp.storage.BucketIAMMember(
                f"{name}-{member.split(':')[1].split('@')[0]}-{purpose}-{role.split('.')[-1]}",
                bucket=args.buckets[purpose].name,
                role=role,
                member=member,
                opts=after_gsas,
            )
            for purpose, role, member in iam.bucket_bindings(ctx.project, accounts)
        ]
        self.secret_grants = [
            gcp.secretmanager.SecretIamMember(
                f"{name}-secret-{secret}-{member.split(':')[1].split('@')[0]}",
                project=ctx.project,
                secret_id=args.secrets[secret].secret_id,
                role=role,
                member=member,
                opts=after_gsas,
            )
            for secret, role, member in iam.secret_bindings(
                ctx.project, args.declared_secrets, accounts
            )
        ]
        self.register_outputs(
            {"workload_identity_members": {k: v.member for k, v in self.wi_bindings.items()}}
        )
