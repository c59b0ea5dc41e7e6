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

Other providers: ``random`` (``pulumi-random`` wraps ``hashicorp/terraform-provider-random``:
every argument of ``random_password`` has a ``RequiresReplace`` plan modifier, so any change is a
new password); ``docker-build`` (``pulumi-docker-build``'s ``Image`` has no replacing input: a
change rebuilds and pushes in place); the Kubernetes provider resource (``pulumi:providers:
kubernetes``) is replaced when its ``clusterIdentifier`` changes (the stack sets it from the
inputs that force a new GKE cluster, so a CA or endpoint change updates it in place; without it,
pulumi-kubernetes ``DiffConfig`` replaces it when the kubeconfig points at another cluster), and a
replaced provider replaces every object it manages.

Recreated dependents (:func:`recreated_by`): a replaced resource takes with it what lives inside
it, even when Pulumi's own preview cannot see it (the parent keeps its name, so the child's inputs
do not change): the objects a replaced Kubernetes provider manages (a replaced GKE cluster replaces
the provider: Namespace, CRDs, the Helm release, Secrets, NetworkPolicies, RayClusters, RayJobs...),
node pools of a replaced cluster, keys of a replaced key ring, IAM members on a replaced bucket,
repository, secret, key or service account, objects of a replaced bucket.

Component resources (``ray-gke:*``) have no provider state: :data:`COMPONENT_RULE`.

Resource options recorded by the render (``replace_on_changes``) add to this table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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
        in_place: the source says no input replaces (``fields`` is empty on purpose).
    """

    fields: tuple[ForceNew, ...]
    source: str
    name_input: str | None = "name"
    deletion_guard: str | None = None
    global_name: bool = False
    in_place: bool = False


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
            # GPU networking's extra NICs (components/gpunet): ForceNew in
            # resource_container_node_pool.go ("additional_node_network_configs" ... ForceNew).
            "networkConfig.additionalNodeNetworkConfigs=network_config.additional_node_network_configs",
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
        # networkProfile: the RDMA VPC of GPU networking (components/gpunet); a network's profile
        # is set at creation only.
        _f(
            "name",
            "project",
            "autoCreateSubnetworks=auto_create_subnetworks",
            "description",
            "networkProfile=network_profile",
        ),
        TF + "compute/resource_compute_network.go",
    ),
    "gcp:compute/subnetwork:Subnetwork": TypeRule(
        _f("name", "project", "network", "region", "description"),
        TF + "compute/resource_compute_subnetwork.go",
    ),
    "gcp:compute/firewall:Firewall": TypeRule(
        # not network: the provider PATCHes it in place (resourceComputeFirewallUpdate sends
        # "network"; the schema's network has no ForceNew, read 2026-12-04 on main)
        _f("name", "project", "direction"),
        TF + "compute/resource_compute_firewall.go",
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
    "gcp:secretmanager/secretVersion:SecretVersion": TypeRule(
        _f("secret", "secretData=secret_data", "isSecretDataBase64=is_secret_data_base64"),
        TF + "secretmanager/resource_secret_manager_secret_version.go",
        name_input=None,
    ),
    "gcp:compute/globalAddress:GlobalAddress": TypeRule(
        _f(
            "name",
            "project",
            "address",
            "addressType=address_type",
            "description",
            "ipVersion=ip_version",
            "network",
            "prefixLength=prefix_length",
            "purpose",
        ),
        TF + "compute/resource_compute_global_address.go",
    ),
    "gcp:servicenetworking/connection:Connection": TypeRule(
        _f("network", "service"),
        TF + "servicenetworking/resource_service_networking_connection.go",
        name_input=None,
    ),
    "gcp:redis/instance:Instance": TypeRule(
        _f(
            "name",
            "project",
            "region",
            "locationId=location_id",
            "alternativeLocationId=alternative_location_id",
            "authorizedNetwork=authorized_network",
            "connectMode=connect_mode",
            "tier",
            "reservedIpRange=reserved_ip_range",
            "secondaryIpRange=secondary_ip_range",
            "transitEncryptionMode=transit_encryption_mode",
            "customerManagedKey=customer_managed_key",
        ),
        TF + "redis/resource_redis_instance.go",
        deletion_guard="deletionProtection",
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
    "gcp:monitoring/dashboard:Dashboard": TypeRule(
        _f("project"),
        "https://github.com/hashicorp/terraform-provider-google/blob/main/google/services/"
        "monitoring/resource_monitoring_dashboard.go (project ForceNew; dashboard_json updates "
        "in place)",
        None,
    ),
    "gcp:artifactregistry/repository:Repository": TypeRule(
        _f(
            "repositoryId=repository_id",
            "location",
            "project",
            "format",
            "kmsKeyName=kms_key_name",
            "mode",
            "mavenConfig=maven_config (allow_snapshot_overwrites, version_policy)",
            "remoteRepositoryConfig=remote_repository_config",
        ),
        "https://github.com/GoogleCloudPlatform/magic-modules/blob/main/mmv1/products/"
        "artifactregistry/Repository.yaml (immutable: true; generates "
        "google/services/artifactregistry/resource_artifact_registry_repository.go)",
        name_input="repositoryId",
    ),
    "gcp:artifactregistry/repositoryIamMember:RepositoryIamMember": TypeRule(
        _IAM_MEMBER, IAM_SOURCE, None
    ),
    "gcp:projects/service:Service": TypeRule(
        _f("service", "project"),
        TF + "resourcemanager/resource_google_project_service.go (disable_on_destroy and "
        "disable_dependent_services update in place)",
        name_input=None,
    ),
    "gcp:projects/serviceIdentity:ServiceIdentity": TypeRule(
        _f("service", "project"),
        TF + "resourcemanager/resource_google_project_service_identity.go (every argument "
        "ForceNew)",
        name_input=None,
    ),
    "random:index/randomPassword:RandomPassword": TypeRule(
        _f(
            "*=every argument (length, special, upper, lower, numeric, min_*, override_special, "
            "keepers)"
        ),
        "https://github.com/hashicorp/terraform-provider-random/blob/v3.7.2/internal/provider/"
        "resource_password.go (RequiresReplace on every attribute; wrapped by pulumi-random)",
        name_input=None,
    ),
    "docker-build:index:Image": TypeRule(
        (),
        "https://github.com/pulumi/pulumi-docker-build/blob/v0.0.15/provider/internal/image.go"
        " (no replacing input: a changed input rebuilds and pushes the image in place;"
        " read from the provider's schema docs, "
        "https://www.pulumi.com/registry/packages/docker-build/api-docs/image/)",
        name_input=None,
        in_place=True,
    ),
    "pulumi:providers:kubernetes": TypeRule(
        _f("clusterIdentifier=clusterIdentifier", "context=context", "cluster=cluster"),
        "https://github.com/pulumi/pulumi-kubernetes/blob/v4.34.2/provider/pkg/provider/"
        "provider.go (DiffConfig: without clusterIdentifier, a kubeconfig for another cluster "
        "replaces the provider and every object it manages; "
        "https://www.pulumi.com/registry/packages/kubernetes/api-docs/provider/#clusteridentifier)",
        name_input=None,
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


# The project's own component resources: no provider state, nothing to replace.
COMPONENT_PREFIX = "ray-gke:"
COMPONENT_RULE = TypeRule(
    (),
    "https://www.pulumi.com/docs/iac/concepts/resources/components/ (a component resource has "
    "no provider state; its children carry the changes)",
    name_input=None,
    in_place=True,
)


def rule_for(type_token: str) -> TypeRule | None:
    """The :class:`TypeRule` of a Pulumi type token, or None for a type with no entry (a test
    walks the dev and prod renders and fails on any such type)."""
    if type_token in RULES:
        return RULES[type_token]
    if type_token.startswith(COMPONENT_PREFIX):
        return COMPONENT_RULE
    if type_token.startswith("kubernetes:") and not type_token.startswith("kubernetes:helm.sh"):
        return KUBERNETES_RULE
    return None


def path_matches(changed: str, prefix: str) -> bool:
    """Whether the dotted ``changed`` path is ``prefix`` or below it (``"*"`` matches all).
    ``prefix`` may use Pulumi's property-path quoting for a key with dots or slashes,
    ``metadata.labels["kueue.x-k8s.io/queue-name"]``
    (https://www.pulumi.com/docs/iac/concepts/resources/options/replaceonchanges/), read as the
    dotted ``metadata.labels.kueue.x-k8s.io/queue-name``."""
    prefix = re.sub(r'\["([^"]+)"\]', r".\1", prefix)
    return prefix == "*" or changed == prefix or changed.startswith(prefix + ".")


def forcing_fields(type_token: str, changed: list[str]) -> list[ForceNew]:
    """The :class:`ForceNew` entries hit by the ``changed`` input paths (table order, no
    duplicates); empty for an in-place update or a type without an entry."""
    rule = rule_for(type_token)
    if rule is None:
        return []
    return [f for f in rule.fields if any(path_matches(c, f.path) for c in changed)]


# ---------------------------------------------------------------------------------------------
# Ray cluster specs: which changes KubeRay applies by recreating pods

RAYJOB = "kubernetes:ray.io/v1:RayJob"
RAYCLUSTER = "kubernetes:ray.io/v1:RayCluster"
RAYSERVICE = "kubernetes:ray.io/v1:RayService"

KUBERAY_SOURCE = "https://github.com/ray-project/kuberay/blob/v1.7.0/ray-operator/controllers/ray/"
# Paths below a Ray cluster spec (a RayCluster's ``spec``, a RayService's
# ``spec.rayClusterConfig``) that KubeRay mutes before hashing the spec, so a change of them alone
# neither recreates a RayCluster's pods under ``upgradeStrategy: Recreate``
# (raycluster_controller.go ``shouldRecreatePodsForUpgrade``) nor brings up a RayService's new
# cluster (rayservice_controller.go ``isClusterSpecHashEqual``): utils/util.go
# ``GenerateHashWithoutReplicasAndWorkersToDelete`` clears the worker groups' ``replicas``,
# ``minReplicas``, ``maxReplicas``, ``scaleStrategy.workersToDelete`` (the autoscaler's) and every
# pod template's ``tolerations`` and ``schedulingGates`` (Kueue injects those), and
# ``upgradeStrategy`` itself.
RAY_SPEC_HASH_MUTED = (
    "workerGroupSpecs.replicas",
    "workerGroupSpecs.minReplicas",
    "workerGroupSpecs.maxReplicas",
    "workerGroupSpecs.scaleStrategy",  # ScaleStrategy holds workersToDelete only (raycluster_types.go)
    "workerGroupSpecs.template.spec.tolerations",
    "workerGroupSpecs.template.spec.schedulingGates",
    "headGroupSpec.template.spec.tolerations",
    "headGroupSpec.template.spec.schedulingGates",
    "upgradeStrategy",
)
# A RayService's hash also leaves out ``suspend`` (rayservice_controller.go
# ``rayClusterSpecForHashing``).
RAY_SERVICE_HASH_MUTED = (*RAY_SPEC_HASH_MUTED, "suspend")
# Paths below a Ray cluster spec that running pods carry (their pod template, and the Ray
# version KubeRay puts in it): a running pod gets a change of them only when it is recreated.
RAY_POD_FIELDS = ("rayVersion", "headGroupSpec.template", "workerGroupSpecs.template")


def bare_path(path: str) -> str:
    """``path`` without list indexes: ``spec.workerGroupSpecs[0].replicas`` ->
    ``spec.workerGroupSpecs.replicas``."""
    return re.sub(r"\[[^\]]*\]", "", path)


def _below(paths: list[str], base: str, fields: tuple[str, ...]) -> list[str]:
    return [
        p
        for p in paths
        if path_matches(bare_path(p), base)
        and any(path_matches(bare_path(p), f"{base}.{f}") for f in fields)
    ]


def ray_spec_hashed(
    paths: list[str], base: str = "spec", muted: tuple[str, ...] = RAY_SPEC_HASH_MUTED
) -> list[str]:
    """The changed input paths (``spec.workerGroupSpecs[0].template...``, indexes kept, in the
    given order) below the Ray cluster spec at ``base`` that change KubeRay's spec hash
    (:data:`RAY_SPEC_HASH_MUTED`; pass :data:`RAY_SERVICE_HASH_MUTED` for a RayService's
    ``spec.rayClusterConfig``): what ``upgradeStrategy: Recreate`` recreates every pod for and
    what a RayService upgrades to a new cluster for. Empty when none."""
    muted_paths = set(_below(paths, base, muted))
    return [p for p in paths if path_matches(bare_path(p), base) and p not in muted_paths]


def ray_pod_changes(paths: list[str], base: str = "spec") -> list[str]:
    """The changed input paths below the Ray cluster spec at ``base`` that only a recreated pod
    gets (:data:`RAY_POD_FIELDS`): without ``upgradeStrategy: Recreate`` running pods keep them."""
    return _below(paths, base, RAY_POD_FIELDS)


# ---------------------------------------------------------------------------------------------
# dependents a replacement recreates

CLUSTER = "gcp:container/cluster:Cluster"
K8S_PROVIDER = "pulumi:providers:kubernetes"


def ref(record: dict[str, Any]) -> str:
    """``"<type>::<name>"``: how a render's ``depends_on`` / ``provider`` name a resource."""
    return f"{record['type']}::{record['name']}"


def _leaves(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [x for v in value.values() for x in _leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in _leaves(v)]
    return [value] if isinstance(value, str) else []


def dig(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, None where a level is missing or not a mapping (render records:
    ``dig(record, "inputs", "spec", "upgradeStrategy", "type")``)."""
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def identity(record: dict[str, Any]) -> str | None:
    """The cloud name of a resource (its rule's ``name_input`` value), None when it has none."""
    rule = rule_for(record["type"])
    if rule is None or rule.name_input is None:
        return None
    value = dig(record.get("inputs") or {}, *rule.name_input.split("."))
    return value if isinstance(value, str) and value else None


def _names(value: str, name: str) -> bool:
    """Whether ``value`` names ``name`` as a whole path segment: ``name`` itself,
    ``projects/p/.../clusters/<name>``, ``serviceAccount:<name>@...``."""
    return re.search(rf"(^|[/:]){re.escape(name)}($|[/@])", value) is not None


def recreated_by(parent: dict[str, Any], child: dict[str, Any]) -> str | None:
    """Why replacing ``parent`` recreates ``child`` (both render records, the child from the
    new side), or None when it does not.

    * the child's ``provider`` is the parent (a replaced provider replaces what it manages);
    * the child is a Kubernetes provider that depends on the parent GKE cluster (its kubeconfig
      names the cluster's endpoint, which the new cluster does not keep);
    * the child depends on the parent and one of its replacing (ForceNew) inputs names the
      parent's cloud name (:func:`identity`): it lives inside the parent (a node pool's
      ``cluster``, a key's ``keyRing``, an IAM member's ``bucket``/``repository``/``secretId``,
      a bucket object's ``bucket``), and is gone with it.
    """
    pref = ref(parent)
    opts = child.get("options") or {}
    if opts.get("provider") == pref:
        return f"its provider {parent['name']} is replaced"
    if pref not in (opts.get("depends_on") or []):
        return None
    if child["type"] == K8S_PROVIDER and parent["type"] == CLUSTER:
        return (
            f"its kubeconfig targets cluster {identity(parent) or parent['name']}, which is "
            "replaced (a new endpoint and CA)"
        )
    name = identity(parent)
    rule = rule_for(child["type"])
    if name is None or rule is None:
        return None
    inputs = child.get("inputs") or {}
    for f in rule.fields:
        values = _leaves(inputs) if f.path == "*" else _leaves(dig(inputs, *f.path.split(".")))
        if any(_names(v, name) for v in values):
            return f"{f.path} names {name}, which is replaced"
    return None
