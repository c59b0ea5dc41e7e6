"""``ray-gke:gcsft:GcsFaultTolerance``: the Memorystore for Redis of the RayServices' GCS fault
tolerance, and what it needs (:mod:`components.config.gcsft`; created only when
:func:`components.gcsft.render.ft_enabled`). Outputs ``address`` and ``ca_cert``, which
:class:`components.raycrs.component.RayResources` renders. Its children, with sources:
docs/sources.md#gcsft-component
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.config.cluster import ClusterConfig
from components.config.gcsft import GcsFaultToleranceConfig
from components.config.network import NetworkConfig
from components.gcsft.render import (
    auth_secret_id,
    instance_name,
    psa_range_name,
    redis_address,
    redis_head_readers,
)
from components.plan.naming import gsa_email
from components.plan.plan import Plan
from components.security.iam import KEY_ROTATION_PERIOD, KMS_ROLE, SECRET_ACCESSOR_ROLE

REDIS_KEY_NAME = "memorystore"


def redis_service_agent(project_number: str) -> str:
    """IAM member of the Memorystore for Redis service agent of a project number
    (https://cloud.google.com/memorystore/docs/redis/cmek)."""
    return f"serviceAccount:service-{project_number}@cloud-redis.iam.gserviceaccount.com"


@dataclass
class GcsFaultToleranceArgs:
    """Inputs of :class:`GcsFaultTolerance`.

    Attributes:
        plan: the stack's plan (its context and services).
        gcs_fault_tolerance: the ``gcs_fault_tolerance`` block.
        cluster: the ``cluster`` block (its ``deletion_protection``).
        network: the ``network`` block (its name and ``psa_cidr``).
        vpc: the VPC's id (``projects/<p>/global/networks/<name>``).
        key_ring: the region's KMS key ring id (the ring of the stack's GKE and Secret Manager
            keys).
        secrets_key: the Secret Manager CMEK key id.
        project_number: the project's number (an Output).
        depends_on: what the secret waits for (the Secret Manager agent's key grant).
        gsas: the workload Google service accounts (:attr:`components.security.component.
            Security.gsas`): the readers' grants wait for them.
    """

    plan: Plan
    gcs_fault_tolerance: GcsFaultToleranceConfig
    cluster: ClusterConfig
    network: NetworkConfig
    vpc: pulumi.Input[str]
    key_ring: pulumi.Input[str]
    secrets_key: pulumi.Input[str]
    project_number: pulumi.Input[str]
    depends_on: list[pulumi.Resource]
    gsas: list[pulumi.Resource]


class GcsFaultTolerance(pulumi.ComponentResource):
    """The Memorystore instance, its network, key and AUTH secret (module docstring).

    Attributes: ``instance`` (``gcp.redis.Instance``), ``secret``, ``address`` and ``ca_cert``
    (Outputs)."""

    def __init__(
        self, name: str, args: GcsFaultToleranceArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("ray-gke:gcsft:GcsFaultTolerance", name, None, opts)
        ctx = args.plan.context
        child = pulumi.ResourceOptions(parent=self)
        protect = args.cluster.deletion_protection
        psa = ipaddress.ip_network(args.network.psa_cidr)
        self.psa_range = gcp.compute.GlobalAddress(
            f"{name}-psa",
            name=psa_range_name(args.network.name),
            project=ctx.project,
            purpose="VPC_PEERING",
            address_type="INTERNAL",
            address=str(psa.network_address),
            prefix_length=psa.prefixlen,
            network=args.vpc,
            opts=child,
        )
        self.psa_connection = gcp.servicenetworking.Connection(
            f"{name}-psa-connection",
            network=args.vpc,
            service="servicenetworking.googleapis.com",
            reserved_peering_ranges=[self.psa_range.name],
            opts=child,
        )
        self.key = gcp.kms.CryptoKey(
            f"{name}-key",
            name=REDIS_KEY_NAME,
            key_ring=args.key_ring,
            purpose="ENCRYPT_DECRYPT",
            rotation_period=KEY_ROTATION_PERIOD,
            labels=dict(ctx.labels),
            opts=pulumi.ResourceOptions(parent=self, protect=protect),
        )
        agent = gcp.projects.ServiceIdentity(
            f"{name}-redis-agent", project=ctx.project, service="redis.googleapis.com", opts=child
        )
        self.key_grant = gcp.kms.CryptoKeyIAMMember(
            f"{name}-redis-agent-kms",
            crypto_key_id=self.key.id,
            role=KMS_ROLE,
            member=pulumi.Output.from_input(args.project_number).apply(redis_service_agent),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[agent]),
        )
        ft = args.gcs_fault_tolerance
        self.instance = gcp.redis.Instance(
            f"{name}-redis",
            name=instance_name(ctx.cluster),
            project=ctx.project,
            region=ctx.region,
            tier=ft.tier,
            memory_size_gb=ft.memory_size_gb,
            redis_version=ft.redis_version,
            authorized_network=args.vpc,
            connect_mode="PRIVATE_SERVICE_ACCESS",
            reserved_ip_range=self.psa_range.name,
            auth_enabled=True,
            transit_encryption_mode="SERVER_AUTHENTICATION",
            customer_managed_key=self.key.id,
            deletion_protection=protect,
            labels=dict(ctx.labels),
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[self.psa_connection, self.key_grant]
            ),
        )
        self.secret = gcp.secretmanager.Secret(
            f"{name}-auth",
            secret_id=auth_secret_id(ctx.cluster),
            project=ctx.project,
            labels=dict(ctx.labels),
            replication=gcp.secretmanager.SecretReplicationArgs(
                user_managed=gcp.secretmanager.SecretReplicationUserManagedArgs(
                    replicas=[
                        gcp.secretmanager.SecretReplicationUserManagedReplicaArgs(
                            location=ctx.region,
                            customer_managed_encryption=gcp.secretmanager.SecretReplicationUserManagedReplicaCustomerManagedEncryptionArgs(
                                kms_key_name=args.secrets_key
                            ),
                        )
                    ]
                )
            ),
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.depends_on)),
        )
        self.secret_version = gcp.secretmanager.SecretVersion(
            f"{name}-auth-version",
            secret=self.secret.id,
            secret_data=self.instance.auth_string,
            opts=child,
        )
        self.readers = [
            gcp.secretmanager.SecretIamMember(
                f"{name}-auth-{account}",
                project=ctx.project,
                secret_id=self.secret.secret_id,
                role=SECRET_ACCESSOR_ROLE,
                member=f"serviceAccount:{gsa_email(ctx.project, account)}",
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.gsas)),
            )
            for account in redis_head_readers(s for s, _ in args.plan.services)
        ]
        self.address: pulumi.Output[str] = pulumi.Output.all(
            self.instance.host, self.instance.port
        ).apply(lambda hp: redis_address(str(hp[0]), int(hp[1])))
        self.ca_cert: pulumi.Output[Any] = self.instance.server_ca_certs.apply(ca_bundle)
        self.register_outputs({"address": self.address, "instance": self.instance.name})


def ca_bundle(certs: Any) -> str | None:
    """The PEMs of every one of an instance's ``server_ca_certs`` (output objects or, under mocks,
    plain mappings), one after another; the single PEM as it is when there is one. While
    Memorystore rotates an instance's server CA it lists the old and the new one, and a client
    must trust both
    (https://cloud.google.com/memorystore/docs/redis/manage-in-transit-encryption, "Certificate
    authority rotation"); None when there is none."""
    pems = []
    for c in certs or ():
        pem = getattr(c, "cert", None) or (c.get("cert") if hasattr(c, "get") else None)
        if pem:
            pems.append(pem)
    if len(pems) <= 1:
        return pems[0] if pems else None
    return "".join(p if p.endswith("\n") else p + "\n" for p in pems)
