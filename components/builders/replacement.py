"""Which input changes the pinned providers cannot apply in place (they replace the resource).

Pure data, read by ``raygke diff``: for every resource type the program creates, the input paths
(Pulumi's camelCase property names, dotted, list indexes dropped) whose change forces a
replacement, each with the provider source that says so.

Provider versions: ``pulumi-gcp==10.2.0`` wraps the Terraform Google provider 7.x (a bridged
provider: replacements follow the Terraform schema's ``ForceNew`` markers). Each GCP entry was
read from ``hashicorp/terraform-provider-google`` at tag ``v7.30.0``, file named in ``source``
(``ForceNew: true`` on the attribute). Terraform SDKv2 semantics: ``ForceNew`` on a nested block
(e.g. ``node_config``) applies only when the block is added or removed; inside it each attribute's
own marker decides, so ``node_config.machine_type``, ``disk_size_gb``, ``disk_type``, ``labels``,
``resource_labels``, ``taint``, ``tags``, ``gvnic`` and ``workload_metadata_config`` update in place
(several were made updatable by GoogleCloudPlatform/magic-modules PR #9575), while ``spot``,
``guest_accelerator`` (with ``gpu_driver_installation_config``), ``reservation_affinity``,
``service_account``, ``oauth_scopes`` and ``shielded_instance_config`` replace the pool.

Kubernetes (``pulumi-kubernetes==4.34.2``): a change of ``metadata.name`` or
``metadata.namespace`` replaces the object (the provider's ``Diff``: an object is identified by
kind, namespace and name); everything else is a server-side update. Helm releases (``helm.sh/v3
Release``): a release cannot be renamed or moved to another namespace (``helm upgrade`` keeps both),
so ``name`` and ``namespace`` replace.

Resource options recorded by the render (``replace_on_changes``) add to this table.
"""

from __future__ import annotations

from dataclasses import dataclass

TF = "https://github.com/hashicorp/terraform-provider-google/blob/v7.30.0/google/services/"


@dataclass(frozen=True)
class ForceNew:
    """One input path that forces replacement.

    Attributes:
        path: dotted Pulumi input path (camelCase, no list indexes); a change at or below it
            replaces the resource. ``"*"``: every input.
        attribute: the provider's attribute name (Terraform snake_case, or the Kubernetes field).
    """

    path: str
    attribute: str


@dataclass(frozen=True)
class TypeRule:
    """The replacing inputs of one resource type.

    Attributes:
        fields: the :class:`ForceNew` paths.
        source: URL of the provider file whose schema marks them.
        name_input: the input that fixes the resource's cloud name (None when the provider names
            it): a replacement with create-before-delete fails with "already exists" unless the
            name also changes or the resource has ``delete_before_replace``.
        deletion_guard: input that, when true in the current state, makes the provider refuse to
            delete the resource (so a replacement or deletion fails until it is turned off).
        global_name: the name is unique across projects and locations (Cloud Storage buckets:
            https://cloud.google.com/storage/docs/buckets#naming), so a replacement in another
            project or location still clashes.
    """

    fields: tuple[ForceNew, ...]
    source: str
    name_input: str | None = "name"
    deletion_guard: str | None = None
    global_name: bool = False


# Inputs that scope a name (the same name under another parent is another resource): a
# replacement that changes one of them does not clash with the old resource's name.
SCOPE_INPUTS = frozenset(
    {
        "project",
        "location",
        "region",
        "keyRing",
        "cluster",
        "bucket",
        "router",
        "namespace",
        "metadata.namespace",
    }
)


def _f(*pairs: str) -> tuple[ForceNew, ...]:
    """``"camelPath=snake_attr"`` strings -> ForceNew entries (attribute defaults to the path)."""
    out = []
    for p in pairs:
        path, _, attr = p.partition("=")
        out.append(ForceNew(path, attr or path))
    return tuple(out)


IAM_SOURCE = TF.replace("services/", "tpgiamresource/resource_iam_member.go")
_IAM_MEMBER = _f("*=role, member and the parent resource (every argument is ForceNew)")

RULES: dict[str, TypeRule] = {
    "gcp:container/nodePool:NodePool": TypeRule(
        _f(
            "name=name",
            "project=project",
            "cluster=cluster",
            "location=location",
            "placementPolicy=placement_policy",
            "initialNodeCount=initial_node_count",
            "nodeConfig.spot=node_config.spot",
            "nodeConfig.guestAccelerators=node_config.guest_accelerator",
            "nodeConfig.reservationAffinity=node_config.reservation_affinity",
            "nodeConfig.serviceAccount=node_config.service_account",
            "nodeConfig.oauthScopes=node_config.oauth_scopes",
            "nodeConfig.shieldedInstanceConfig=node_config.shielded_instance_config",
            "nodeConfig.preemptible=node_config.preemptible",
            "nodeConfig.localSsdCount=node_config.local_ssd_count",
            "nodeConfig.metadata=node_config.metadata",
            "nodeConfig.minCpuPlatform=node_config.min_cpu_platform",
            "nodeConfig.bootDiskKmsKey=node_config.boot_disk_kms_key",
        ),
        TF
        + "container/resource_container_node_pool.go and container/node_config.go (schemaNodeConfig)",
    ),
    "gcp:container/cluster:Cluster": TypeRule(
        _f(
            "name=name",
            "location=location",
            "project=project",
            "network=network",
            "subnetwork=subnetwork",
            "initialNodeCount=initial_node_count",
            "ipAllocationPolicy.clusterSecondaryRangeName=ip_allocation_policy.cluster_secondary_range_name",
            "ipAllocationPolicy.servicesSecondaryRangeName=ip_allocation_policy.services_secondary_range_name",
            "ipAllocationPolicy.clusterIpv4CidrBlock=ip_allocation_policy.cluster_ipv4_cidr_block",
            "ipAllocationPolicy.servicesIpv4CidrBlock=ip_allocation_policy.services_ipv4_cidr_block",
            "networkingMode=networking_mode",
            "datapathProvider=datapath_provider",
            "privateClusterConfig.masterIpv4CidrBlock=private_cluster_config.master_ipv4_cidr_block",
            "privateClusterConfig.privateEndpointSubnetwork=private_cluster_config.private_endpoint_subnetwork",
            "enableTpu=enable_tpu",
            "enableAutopilot=enable_autopilot",
            "defaultMaxPodsPerNode=default_max_pods_per_node",
            "confidentialNodes=confidential_nodes",
            "description=description",
        ),
        TF + "container/resource_container_cluster.go",
        deletion_guard="deletionProtection",
    ),
    "gcp:compute/network:Network": TypeRule(
        _f("name", "project", "autoCreateSubnetworks=auto_create_subnetworks", "description"),
        TF + "compute/resource_compute_network.go",
    ),
    "gcp:compute/subnetwork:Subnetwork": TypeRule(
        _f("name", "project", "network", "region", "description"),
        TF + "compute/resource_compute_subnetwork.go",
    ),
    "gcp:compute/router:Router": TypeRule(
        _f("name", "project", "network", "region"), TF + "compute/resource_compute_router.go"
    ),
    "gcp:compute/routerNat:RouterNat": TypeRule(
        _f("name", "project", "router", "region", "type", "endpointTypes=endpoint_types"),
        TF + "compute/resource_compute_router_nat.go",
    ),
    "gcp:kms/keyRing:KeyRing": TypeRule(
        _f("name", "project", "location"), TF + "kms/resource_kms_key_ring.go"
    ),
    "gcp:kms/cryptoKey:CryptoKey": TypeRule(
        _f(
            "name",
            "keyRing=key_ring",
            "purpose",
            "importOnly=import_only",
            "destroyScheduledDuration=destroy_scheduled_duration",
            "versionTemplate.protectionLevel=version_template.protection_level",
        ),
        TF + "kms/resource_kms_crypto_key.go",
    ),
    "gcp:serviceaccount/account:Account": TypeRule(
        _f("accountId=account_id", "project"),
        TF + "resourcemanager/resource_google_service_account.go",
        name_input="accountId",
    ),
    "gcp:secretmanager/secret:Secret": TypeRule(
        _f("secretId=secret_id", "project", "replication", "tags"),
        TF + "secretmanager/resource_secret_manager_secret.go",
        name_input="secretId",
    ),
    "gcp:storage/bucket:Bucket": TypeRule(
        _f(
            "name",
            "location",
            "project",
            "enableObjectRetention=enable_object_retention",
            "customPlacementConfig=custom_placement_config.data_locations",
            "hierarchicalNamespace=hierarchical_namespace",
        ),
        TF + "storage/resource_storage_bucket.go",
        global_name=True,
    ),
    "gcp:storage/bucketObject:BucketObject": TypeRule(
        _f(
            "bucket",
            "name",
            "source",
            "content",
            "contentType=content_type",
            "cacheControl=cache_control",
            "contentEncoding=content_encoding",
            "metadata",
            "storageClass=storage_class",
            "kmsKeyName=kms_key_name",
        ),
        TF + "storage/resource_storage_bucket_object.go",
    ),
    "gcp:kms/cryptoKeyIAMMember:CryptoKeyIAMMember": TypeRule(_IAM_MEMBER, IAM_SOURCE, None),
    "gcp:projects/iAMMember:IAMMember": TypeRule(_IAM_MEMBER, IAM_SOURCE, None),
    "gcp:serviceaccount/iAMMember:IAMMember": TypeRule(
        _IAM_MEMBER,
        IAM_SOURCE,
        None,
    ),
    "gcp:storage/bucketIAMMember:BucketIAMMember": TypeRule(_IAM_MEMBER, IAM_SOURCE, None),
    "gcp:secretmanager/secretIamMember:SecretIamMember": TypeRule(
        _IAM_MEMBER,
        IAM_SOURCE,
        None,
    ),
    "kubernetes:helm.sh/v3:Release": TypeRule(
        _f("name", "namespace"),
        "https://helm.sh/docs/helm/helm_upgrade/ (a release keeps its name and namespace)",
    ),
}

KUBERNETES_RULE = TypeRule(
    _f("metadata.name=metadata.name", "metadata.namespace=metadata.namespace"),
    "https://github.com/pulumi/pulumi-kubernetes/blob/v4.34.2/provider/pkg/provider/provider.go"
    " (Diff: an object is identified by kind, namespace and name)",
    name_input="metadata.name",
)

# The kinds whose replacement is a new run of a job (KubeRay does not re-run a RayJob whose spec
# is updated in place: https://github.com/ray-project/kuberay/issues/1776).
RERUN_TYPES = frozenset({"kubernetes:ray.io/v1:RayJob"})


def rule_for(type_token: str) -> TypeRule | None:
    """The :class:`TypeRule` of a Pulumi type token, or None for a type with no entry (component
    resources, providers: they have no cloud inputs of their own)."""
    if type_token in RULES:
        return RULES[type_token]
    if type_token.startswith("kubernetes:") and not type_token.startswith(
        ("kubernetes:helm.sh", "pulumi:providers")
    ):
        return KUBERNETES_RULE
    return None


def path_matches(changed: str, prefix: str) -> bool:
    """Whether the dotted ``changed`` path is ``prefix`` or below it (``"*"`` matches all)."""
    return prefix == "*" or changed == prefix or changed.startswith(prefix + ".")


def forcing_fields(type_token: str, changed: list[str]) -> list[ForceNew]:
    """The :class:`ForceNew` entries hit by the ``changed`` input paths (table order, no
    duplicates); empty for an in-place update or a type without an entry."""
    rule = rule_for(type_token)
    if rule is None:
        return []
    return [f for f in rule.fields if any(path_matches(c, f.path) for c in changed)]
